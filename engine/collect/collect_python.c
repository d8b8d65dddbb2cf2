/* collect_python.c — the providers `python` and `sampling` (provider.h): the CPython runtime,
 * found once at the window's start for the census, the sampler and the stacks (py_runtime.h);
 * the stacks, GIL and GC read at its end (ev.python, bridge/python.c); the window's samples
 * (ev.sampling and the window's rows of ev.python, bridge/window.c). The sampler itself runs
 * the window (engine/collect/collect.c). Depends on probes/python/cpython.h, sampler.h, provider.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "bridge/bridge.h"
#include "bridge/window.h"
#include "provider.h"
#include "python/cpython.h"
#include "sampler.h"

typedef struct {
    sop_pyruntime rt;
} python_state;

static void *python_start(sop_collect_ctx *cx)
{
    if (!cx->o->python)
        return NULL;
    python_state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    /* each user adds the reasons finding it gave where it would have found it itself */
    sop_missing scratch = {0};
    sop__pyruntime_find_maps(cx->pid, cx->proc_root, cx->maps, &st->rt, &scratch);
    sop__missing_free(&scratch);
    cx->rt = &st->rt;
    return st;
}

/* A Python thread is active when the OS has it running or runnable, or it holds the GIL. */
static void mark_active_threads(sop_python *py, const sop_thread_list *threads)
{
    for (size_t i = 0; i < py->nthreads; i++) {
        sop_pythread *t = &py->threads[i];
        for (size_t j = 0; j < threads->n; j++)
            if (threads->items[j].tid == t->tid) {
                t->active = t->gil || threads->items[j].stat.state == 'R';
                break;
            }
    }
}

static void python_finish(sop_collect_ctx *cx, void *p)
{
    python_state *st = p;
    sop_collection *c = cx->c;
    if (!sop__collect_target_alive(cx)) {
        sop__missing_add(&c->missing, "python", "the target exited; Python stacks not read");
        return;
    }
    /* Right after the thread snapshot, whose OS states stand in for the probe's own reads. */
    unsigned flags = c->threads.n ? SOP_PY_SKIP_OS_STATE : 0;
    int prc = sop__python_collect_with(&st->rt, cx->pid, cx->proc_root, cx->maps, flags, &c->python,
                                       &c->missing);
    if (prc == -ENOEXEC)
        sop__missing_add(&c->missing, "python", "not a CPython process");
    /* The walker finds the target by number: if ours is gone now, the number may belong to
     * another process already (pid reuse). Keep nothing it read. */
    if (!sop__collect_target_alive(cx) && c->python) {
        sop__python_free(c->python);
        c->python = NULL;
        sop__missing_add(&c->missing, "python",
                         "the target exited during the read; stacks discarded (pid reuse)");
    }
    if (c->python && flags)
        mark_active_threads(c->python, &c->threads);
    if (c->python && cx->sampler) { /* the samples are kept with the stacks they explain */
        c->sampling = cx->sampler;
        cx->sampler = NULL;
    }
}

static void python_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    (void)p;
    if (cx->c->python)
        sop__bridge_python(ev, cx->c->python);
}

static const sop_evk_group python_groups[] = {
    {"python",
     "engine/bridge/python.c (probes/python/), when the target is CPython (issue 3; "
     "docs/python-stacks.md); rows marked (window): engine/bridge/window.c",
     sop__evk_python, &sop__evk_python_n},
    {0},
};

const sop_provider sop__provider_python = {
    .name = "python",
    .probes = SOP_PROBE_PYTHON,
    .groups = python_groups,
    .start = python_start,
    .finish = python_finish,
    .emit = python_emit,
    .free = free,
};

static void sampling_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    (void)p;
    if (!cx->c->sampling)
        return;
    sop_window_proc procs[SOP_SAMPLER_MAX_PROCS];
    sop_window w;
    sop__sampler_window(cx->c->sampling, procs, &cx->c->missing, &w);
    sop__bridge_window(ev, &w); /* before ev.missing */
}

static const sop_evk_group sampling_groups[] = {
    {"sampling",
     "engine/bridge/window.c: the sampling loop's counts (engine/sample/sampler.c), when a window "
     "was sampled (see Sampling below)",
     sop__evk_sampling, &sop__evk_sampling_n},
    {"io_files[]",
     "engine/bridge/window.c (engine/sample/sampler_files.c), sampled windows: regular files open "
     "at the window's end in the target and its workers, at most 64 per process",
     sop__evk_io_files, &sop__evk_io_files_n},
    {0},
};

const sop_provider sop__provider_sampling = {
    .name = "sampling",
    .probes = SOP_PROBE_PYTHON,
    .groups = sampling_groups,
    .emit = sampling_emit,
};
