/* collect_fds.c — the provider `fds` (provider.h): the target's open file descriptors counted
 * FDS_POLLS times over the window (a leak rises in every part of it, a burst in one), and at
 * its end what the descriptors not open at its start are; emitted as ev.fds by
 * bridge/fds.c. Depends on probes/proc.h (sop__proc_fd_scan), provider.h, clock.h. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge.h"
#include "clock.h"
#include "provider.h"

#define FDS_POLLS 17        /* counts over the window: 16 intervals */
#define FDS_MIN_EVERY_MS 50 /* never more often than this */

typedef struct {
    double every_ms, t_ms[FDS_POLLS];
    int64_t n[FDS_POLLS];
    int polls;
    sop_fd_set start; /* the numbers open at the first count */
    sop_fd_scan end;  /* the last scan: what is not in start */
    bool have_end;
    sop_fds_figs figs;
} fds_state;

static void *fds_start(sop_collect_ctx *cx)
{
    if (!(cx->o->duration_s > 0))
        return NULL;
    fds_state *st = calloc(1, sizeof *st);
    if (st)
        st->every_ms = fmax(cx->o->duration_s * 1e3 / (FDS_POLLS - 1), FDS_MIN_EVERY_MS);
    return st;
}

static void count(sop_collect_ctx *cx, fds_state *st, bool final)
{
    sop_fd_scan s;
    if (sop__proc_fd_scan(cx->pid_fd, st->polls == 0 ? &st->start : NULL, final ? &st->start : NULL,
                          &s) != 0)
        return;
    int at = st->polls < FDS_POLLS ? st->polls++ : FDS_POLLS - 1; /* the last slot: the end */
    st->t_ms[at] = sop__now_ms();
    st->n[at] = s.count;
    if (final) {
        st->end = s;
        st->have_end = true;
    }
}

static double fds_poll(sop_collect_ctx *cx, void *p, double now_ms)
{
    fds_state *st = p;
    if (st->polls >= FDS_POLLS - 1) /* the last count is the end's */
        return INFINITY;
    count(cx, st, false);
    return now_ms + st->every_ms;
}

static void fds_finish(sop_collect_ctx *cx, void *p)
{
    fds_state *st = p;
    if (!cx->window_ok || st->polls == 0)
        return;
    count(cx, st, true);
    if (st->polls < 2 || !st->have_end)
        return;
    sop_fds_figs *f = &st->figs;
    memset(f, 0, sizeof *f);
    int n = st->polls;
    f->polls = n;
    f->window_s = (st->t_ms[n - 1] - st->t_ms[0]) / 1e3;
    f->first = st->n[0];
    f->last = st->n[n - 1];
    f->max = st->n[0];
    double mid = (st->t_ms[0] + st->t_ms[n - 1]) / 2;
    for (int i = 1; i < n; i++) {
        int64_t d = st->n[i] - st->n[i - 1];
        if (st->n[i] > f->max)
            f->max = st->n[i];
        if (d > 0) {
            f->rises++;
            f->risen += d;
            if ((st->t_ms[i - 1] + st->t_ms[i]) / 2 < mid)
                f->rises_first_half++;
            else
                f->rises_second_half++;
        } else if (d < 0) {
            f->falls++;
        }
    }
    f->growth_per_s = f->window_s > 0 ? (double)(f->last - f->first) / f->window_s : NAN;
    const sop_fd_scan *e = &st->end;
    f->new_fds = e->fresh;
    f->new_sockets = e->sockets;
    f->new_pipes = e->pipes;
    f->new_files = e->files;
    f->new_other = e->other;
    size_t best = 0;
    for (size_t i = 1; i < e->npaths; i++)
        if (e->paths[i].count > e->paths[best].count)
            best = i;
    if (e->npaths) {
        memcpy(f->new_path, e->paths[best].path, sizeof f->new_path);
        f->new_path_count = e->paths[best].count;
    }
}

static void fds_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    (void)cx;
    sop__bridge_fds(ev, &((fds_state *)p)->figs);
}

static void fds_free(void *p)
{
    free(p);
}

static const sop_evk_group fds_groups[] = {
    {"fds",
     "engine/bridge/fds.c (engine/collect/collect_fds.c): open file descriptors over the window; "
     "absent with --duration 0, or when /proc/PID/fd was not readable",
     sop__evk_fds, &sop__evk_fds_n},
    {0},
};

const sop_provider sop__provider_fds = {
    .name = "fds",
    .probes = 0, /* the process itself: always */
    .groups = fds_groups,
    .start = fds_start,
    .poll = fds_poll,
    .finish = fds_finish,
    .emit = fds_emit,
    .free = fds_free,
};
