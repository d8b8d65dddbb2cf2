/* collect_fds.c — the evidence group `fds`, in one file: the target's open file descriptors
 * counted FDS_POLLS times over the window (a leak rises in every part of it, a burst in one),
 * how often the count rose and fell, and at its end what the descriptors not open at its start
 * are (sockets, pipes, files: the commonest path). The figures, the rows (docs/evidence.md is
 * generated from them) and the provider. Depends on probes/proc.h (sop__proc_fd_scan),
 * bridge/schema.h, provider.h, clock.h. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge.h"
#include "bridge/schema.h"
#include "clock.h"
#include "provider.h"

#define FDS_POLLS 17        /* counts over the window: 16 intervals */
#define FDS_MIN_EVERY_MS 50 /* never more often than this */

/* ev.fds: the figures over the window, one field a row. */
typedef struct {
    double window_s, growth_per_s;
    int64_t polls, first, last, max, rises, falls, rises_first_half, rises_second_half, risen;
    int64_t new_fds, new_sockets, new_pipes, new_files, new_other, new_path_count;
    char new_path[128];
} fds_figs;

typedef struct {
    double every_ms, t_ms[FDS_POLLS];
    int64_t n[FDS_POLLS];
    int polls;
    sop_fd_set start; /* the numbers open at the first count */
    sop_fd_scan end;  /* the last scan: what is not in start */
    bool have_end;
    fds_figs figs;
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
    fds_figs *f = &st->figs;
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

/* ---- the evidence group ---- */

static const sop_evk sop__evk_fds[] = {
    SOP_EVK_D("window_s", fds_figs, window_s, "s", "time between the first and the last count"),
    SOP_EVK_I("polls", fds_figs, polls, "", "counts taken (17 over the window at most)"),
    SOP_EVK_I("first", fds_figs, first, "", "open descriptors at the first count"),
    SOP_EVK_I("last", fds_figs, last, "", "... at the last"),
    SOP_EVK_I("max", fds_figs, max, "", "... the most at any count"),
    SOP_EVK_I("rises", fds_figs, rises, "", "intervals between counts in which it rose"),
    SOP_EVK_I("falls", fds_figs, falls, "", "... in which it fell"),
    SOP_EVK_I("rises_first_half", fds_figs, rises_first_half, "",
              "rises in the window's first half (a burst rises in one interval, a leak in both "
              "halves)"),
    SOP_EVK_I("rises_second_half", fds_figs, rises_second_half, "", "... in its second half"),
    SOP_EVK_I("risen", fds_figs, risen, "",
              "descriptors added over the rises (last - first is what stayed)"),
    SOP_EVK_D("growth_per_s", fds_figs, growth_per_s, "1/s", "(last - first) / window_s"),
    SOP_EVK_I("new", fds_figs, new_fds, "",
              "descriptors at the end whose number was not open at the start (new ones; a number "
              "closed and reused in the window looks old)"),
    SOP_EVK_I("new_sockets", fds_figs, new_sockets, "", "of the new ones read: sockets"),
    SOP_EVK_I("new_pipes", fds_figs, new_pipes, "", "... pipes"),
    SOP_EVK_I("new_files", fds_figs, new_files, "", "... files (a path)"),
    SOP_EVK_I("new_other", fds_figs, new_other, "", "... anything else (anon inodes, ...)"),
    SOP_EVK_T("new_path", fds_figs, new_path, "the path most of the new files have"),
    SOP_EVK_I("new_path_count", fds_figs, new_path_count, "", "how many of them have it"),
};
static const size_t sop__evk_fds_n = sizeof sop__evk_fds / sizeof sop__evk_fds[0];

static void fds_attach(sop_value *ev, const fds_figs *f)
{
    if (!f || f->polls < 2)
        return;
    sop_value *o = sop__v_obj();
    if (!o)
        return;
    sop__bridge_keys(o, f, sop__evk_fds, sop__evk_fds_n, "", NULL, NULL);
    sop__bridge_attach(ev, "fds", o);
}

static void fds_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    (void)cx;
    fds_attach(ev, &((fds_state *)p)->figs);
}

static void fds_free(void *p)
{
    free(p);
}

static const sop_evk_group fds_groups[] = {
    {"fds",
     "engine/collect/collect_fds.c: open file descriptors over the window; absent with --duration "
     "0, or when /proc/PID/fd was not readable",
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
