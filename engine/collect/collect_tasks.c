/* collect_tasks.c — ev.python.tasks inside a collection: the target's asyncio tasks read when the
 * window's sampler first sees a thread of the target run asyncio (a frame of asyncio's or
 * uvloop's package on its stack) and at the end of the window (probes/python/asyncio_read.c; a
 * GC-list walk each, 40-110 ms for 10,000 tasks, ~45 ms for a torch process with none), only
 * when the process has mapped asyncio's C module (_asyncio) and a loop runs: torch and many
 * libraries import asyncio without running a loop, and a program without asyncio costs one
 * read of its maps. Each read looks at no more than
 * EVIDENCE_MAX_OBJECTS GC objects. Depends on the tasks probe and
 * bridge/tasks_rows.c. */
#include "collect_tasks.h"

#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../probes/python/asyncio_tasks.h"
#include "bridge/bridge.h"
#include "procfs.h"
#include "provider.h"
#include "sampler.h"

#define MAPS_MAX (16u << 20)
/* GC objects one read looks at: ~0.5-1 s on a big heap (10,000 tasks among 105,000 objects
 * read in 40-110 ms); beyond it the tasks found so far, marked partial. */
#define EVIDENCE_MAX_OBJECTS 2000000ull

/* _asyncio.cpython-3XX-....so (or _asyncio_d...) among the mapped files: in `maps` when the
 * caller has the text, else read. */
static bool asyncio_loaded(int pid, const char *proc_root, const char *maps)
{
    char *own = NULL;
    if (!maps || !*maps) {
        char path[300];
        snprintf(path, sizeof path, "%s/%d/maps", proc_root, pid);
        size_t len = 0;
        if (sop__read_file_at(AT_FDCWD, path, MAPS_MAX, &own, &len) < 0)
            return false;
        maps = own;
    }
    bool found = strstr(maps, "/_asyncio.") != NULL || strstr(maps, "/_asyncio_") != NULL;
    free(own);
    return found;
}

void sop__tasks_window_start(sop_tasks_window *w, int pid, const char *proc_root, const char *maps)
{
    w->a = NULL;
    w->begun = false;
    w->wanted = asyncio_loaded(pid, proc_root, maps);
}

void sop__tasks_window_begin(sop_tasks_window *w, int pid, const char *proc_root)
{
    if (!w->wanted || w->begun)
        return;
    w->begun = true;
    sop_missing scratch = {0}; /* the end read reports what is missing */
    if (sop__tasks_read_bounded(pid, proc_root, EVIDENCE_MAX_OBJECTS, &w->a, &scratch) < 0)
        w->a = NULL;
    sop__missing_free(&scratch);
}

struct sop_value *sop__tasks_window_end(sop_tasks_window *w, int pid, const char *proc_root,
                                        double duration_s, sop_missing *missing)
{
    struct sop_value *v = NULL;
    if (w->begun) {
        sop_pytasks *b = NULL;
        if (sop__tasks_read_bounded(pid, proc_root, EVIDENCE_MAX_OBJECTS, &b, missing) == 0)
            v = sop__bridge_tasks(w->a, b, duration_s);
        sop__tasks_free(b);
    }
    sop__tasks_free(w->a);
    w->a = NULL;
    return v;
}

void sop__tasks_window_free(sop_tasks_window *w)
{
    sop__tasks_free(w->a);
    w->a = NULL;
}

/* The provider `tasks` (provider.h): ev.python.tasks; the first read on the sampler's tick that
 * first sees asyncio run, the second at the window's end. */
typedef struct {
    sop_tasks_window w;
    struct sop_value *tasks; /* ev.python.tasks, or NULL */
} tasks_state;

static void *tasks_start(sop_collect_ctx *cx)
{
    if (!cx->o->python || !(cx->o->duration_s > 0))
        return NULL;
    tasks_state *st = calloc(1, sizeof *st);
    if (st)
        sop__tasks_window_start(&st->w, cx->pid, cx->proc_root, cx->maps);
    return st;
}

static double tasks_poll(sop_collect_ctx *cx, void *p, double now_ms)
{
    (void)now_ms;
    tasks_state *st = p;
    if (!st->w.wanted || st->w.begun)
        return INFINITY;
    if (cx->sampler && sop__sampler_saw_asyncio(cx->sampler))
        sop__tasks_window_begin(&st->w, cx->pid, cx->proc_root);
    return st->w.begun ? INFINITY : SOP_POLL_EVERY_TICK;
}

static void tasks_finish(sop_collect_ctx *cx, void *p)
{
    tasks_state *st = p;
    if (cx->c->python)
        st->tasks = sop__tasks_window_end(&st->w, cx->pid, cx->proc_root, cx->c->duration_s,
                                          &cx->c->missing);
    sop__tasks_window_free(&st->w);
}

static void tasks_emit(const sop_collect_ctx *cx, void *p, struct sop_value *ev)
{
    (void)cx;
    tasks_state *st = p;
    if (st->tasks) { /* the tree takes it over */
        sop__v_set(sop__v_obj_at(ev, "python"), "tasks", st->tasks);
        st->tasks = NULL;
    }
}

static void tasks_free(void *p)
{
    tasks_state *st = p;
    sop__tasks_window_free(&st->w);
    sop__v_free(st->tasks);
    free(st);
}

static const sop_evk_group tasks_groups[] = {
    {"python.tasks",
     "engine/bridge/tasks_rows.c (probes/python/asyncio_read.c; issue 29; docs/asyncio.md): the "
     "asyncio tasks read at the window's start and end, when the target has loaded _asyncio",
     sop__evk_tasks, &sop__evk_tasks_n},
    {0},
};

const sop_provider sop__provider_tasks = {
    .name = "tasks",
    .probes = SOP_PROBE_PYTHON,
    .groups = tasks_groups,
    .start = tasks_start,
    .poll = tasks_poll,
    .finish = tasks_finish,
    .emit = tasks_emit,
    .free = tasks_free,
};
