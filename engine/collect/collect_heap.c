/* collect_heap.c — the heap census inside a collection (ev.python.heap): when forced
 * (SOP_PROBE_HEAP, `run --heap`) a census at the start of the window and one at its end (growth per
 * type); without it, one census at the end only when a memory rule will need it — the RSS grew by
 * at least HEAP_AUTO_MIB_PER_S over a window of HEAP_AUTO_MIN_S, or the cgroup is above
 * HEAP_AUTO_LIMIT_PCT of its limit — so a plain run stays as fast as before. Depends on the
 * heap probe (probes/python/heap_census.h) and bridge/heap_rows.c (bridge_heap.h). */
#include "collect_heap.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge_heap.h"
#include "procfs.h"
#include "provider.h"

#define HEAP_AUTO_MIB_PER_S 1.0
#define HEAP_AUTO_MIN_S 2.0
#define HEAP_AUTO_LIMIT_PCT 80.0
#define HEAP_TOP 25

int64_t sop__heap_anon_kb(const char *proc_root, int pid)
{
    char path[300], buf[8192];
    snprintf(path, sizeof path, "%s/%d/status", proc_root ? proc_root : "/proc", pid);
    long n = sop__read_small_at(AT_FDCWD, path, buf, sizeof buf);
    if (n <= 0)
        return SOP_NA;
    buf[n < (long)sizeof buf ? n : (long)sizeof buf - 1] = '\0';
    const char *p = strstr(buf, "\nRssAnon:");
    long long kb;
    if (!p || sscanf(p + 9, "%lld", &kb) != 1 || kb < 0)
        return SOP_NA;
    return kb;
}

void sop__heap_window_start(sop_heap_window *w, const struct sop_pyruntime *rt, int pid,
                            const char *proc_root, bool forced)
{
    w->a = NULL;
    w->anon0 = sop__heap_anon_kb(proc_root, pid);
    if (!forced)
        return;
    sop_missing scratch = {0}; /* the end census reports what is missing */
    if (sop__heap_census_with(rt, pid, proc_root, 0, &w->a, &scratch) < 0)
        w->a = NULL;
    sop__missing_free(&scratch);
}

/* Will a memory rule want the census? */
static bool needed(const sop_proc *p, const sop_cgroup *cg, double duration_s)
{
    if (duration_s >= HEAP_AUTO_MIN_S && p->rate.rss_growth_kb_per_s >= HEAP_AUTO_MIB_PER_S * 1024)
        return true;
    return cg && cg->mem_limit_kb > 0 && cg->mem_limit_kb < ((int64_t)1 << 50) &&
           cg->mem_usage_kb > 0 &&
           100.0 * (double)cg->mem_usage_kb >= HEAP_AUTO_LIMIT_PCT * (double)cg->mem_limit_kb;
}

struct sop_value *sop__heap_window_end(sop_heap_window *w, const struct sop_pyruntime *rt, int pid,
                                       const char *proc_root, bool forced, const sop_proc *p,
                                       const sop_cgroup *cg, double duration_s,
                                       sop_missing *missing)
{
    struct sop_value *v = NULL;
    if (w->a || forced || needed(p, cg, duration_s)) {
        sop_pyheap *b = NULL;
        int64_t anon1 = sop__heap_anon_kb(proc_root, pid);
        if (sop__heap_census_with(rt, pid, proc_root, 0, &b, missing) == 0)
            v = w->a ? sop__bridge_heap(w->a, b, duration_s, w->anon0, anon1, HEAP_TOP)
                     : sop__bridge_heap(b, NULL, 0, anon1, anon1, HEAP_TOP);
        sop__heap_free(b);
    }
    sop__heap_free(w->a);
    w->a = NULL;
    return v;
}

void sop__heap_window_free(sop_heap_window *w)
{
    sop__heap_free(w->a);
    w->a = NULL;
}

/* The provider `heap` (provider.h): ev.python.heap, when the python provider read the target. */
typedef struct {
    sop_heap_window w;
    struct sop_value *heap; /* ev.python.heap, or NULL */
} heap_state;

static bool heap_forced(const sop_collect_ctx *cx)
{
    return (cx->o->probes & SOP_PROBE_HEAP) != 0;
}

static void *heap_start(sop_collect_ctx *cx)
{
    if (!cx->o->python)
        return NULL;
    heap_state *st = calloc(1, sizeof *st);
    if (st)
        sop__heap_window_start(&st->w, cx->rt, cx->pid, cx->proc_root, heap_forced(cx));
    return st;
}

static void heap_finish(sop_collect_ctx *cx, void *p)
{
    heap_state *st = p;
    const sop_collection *c = cx->c;
    if (c->python)
        st->heap = sop__heap_window_end(
            &st->w, cx->rt, cx->pid, cx->proc_root, heap_forced(cx), &c->proc,
            (cx->o->probes & SOP_PROBE_CGROUP) ? &c->cgroup : NULL, c->duration_s, &cx->c->missing);
    sop__heap_window_free(&st->w);
}

static void heap_emit(const sop_collect_ctx *cx, void *p, struct sop_value *ev)
{
    (void)cx;
    heap_state *st = p;
    if (st->heap) { /* the tree takes it over */
        sop__v_set(sop__v_obj_at(ev, "python"), "heap", st->heap);
        st->heap = NULL;
    }
}

static void heap_free(void *p)
{
    heap_state *st = p;
    sop__heap_window_free(&st->w);
    sop__v_free(st->heap);
    free(st);
}

static const sop_evk_group heap_groups[] = {
    {"python.heap",
     "engine/bridge/heap_rows.c (probes/python/heap_walk.c; issue 14; docs/heap.md): with `run "
     "--heap` "
     "/ `evidence --heap` a census at the window's start and end; else one at the end only when "
     "the RSS grew >= 1 MiB/s over >= 2 s or the cgroup is >= 80% full",
     sop__evk_heap, &sop__evk_heap_n},
    {0},
};

const sop_provider sop__provider_heap = {
    .name = "heap",
    .probes = SOP_PROBE_PYTHON,
    .groups = heap_groups,
    .start = heap_start,
    .finish = heap_finish,
    .emit = heap_emit,
    .free = heap_free,
};
