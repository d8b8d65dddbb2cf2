/* collect_sched.c — the provider `sched` (provider.h): the whole tree's scheduling over the
 * window, polled at its start, every TREE_POLL_MS during it and at its end, so threads and
 * workers that come and go keep their time (probes/proc_tree.c); emitted as ev.sched by
 * bridge/sched.c. Depends on probes/proc_tree.h, provider.h, clock.h. */
#include <math.h>
#include <stdlib.h>

#include "bridge/bridge.h"
#include "clock.h"
#include "provider.h"

#define TREE_POLL_MS 250.0

typedef struct {
    sop_tree_sched t;
    bool valid; /* at least two polls and a schedstat: ev.sched is written */
} sched_state;

static double poll_tree(sop_collect_ctx *cx, sched_state *st, bool final, sop_missing *missing)
{
    double now = sop__now_ms();
    if (sop__tree_poll(cx->root_fd, cx->pid, &st->t, final, final ? cx->maps : NULL, missing) ==
        0) {
        if (st->t.polls == 1)
            st->t.first_poll_ms = now;
        st->t.last_poll_ms = now;
    }
    return now;
}

static void *sched_start(sop_collect_ctx *cx)
{
    if (!(cx->o->duration_s > 0))
        return NULL;
    return calloc(1, sizeof(sched_state));
}

static double sched_poll(sop_collect_ctx *cx, void *p, double now_ms)
{
    (void)now_ms;
    sop_missing scratch = {0}; /* a poll's failures: only the last one's count */
    double now = poll_tree(cx, p, false, &scratch);
    sop__missing_free(&scratch);
    return now + TREE_POLL_MS;
}

static void sched_finish(sop_collect_ctx *cx, void *p)
{
    sched_state *st = p;
    if (!cx->window_ok)
        return;
    poll_tree(cx, st, true, &cx->c->missing);
    if (st->t.polls >= 2 && !st->t.no_schedstat)
        st->valid = true;
    else if (st->t.no_schedstat)
        sop__missing_add(&cx->c->missing, "sched",
                         "no task schedstat readable (kernel without schedstats?)");
}

static void sched_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    const sched_state *st = p;
    if (st->valid)
        sop__bridge_sched(ev, &st->t, cx->c->effective_cpus, cx->c->capacity_cpus);
}

static void sched_free(void *p)
{
    sched_state *st = p;
    sop__tree_free(&st->t);
    free(st);
}

static const sop_evk_group sched_groups[] = {
    {"sched",
     "engine/bridge/sched.c (probes/proc_tree.c): whole-tree scheduling over the window; absent "
     "with --duration 0, or when no task/TID/schedstat was readable",
     sop__evk_sched, &sop__evk_sched_n},
    {0},
};

const sop_provider sop__provider_sched = {
    .name = "sched",
    .probes = SOP_PROBE_THREADS,
    .groups = sched_groups,
    .start = sched_start,
    .poll = sched_poll,
    .finish = sched_finish,
    .emit = sched_emit,
    .free = sched_free,
};
