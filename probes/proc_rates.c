/* proc_rates.c — rates over an observation window from two snapshots: CPU %, fault and RSS
 * growth rates, IO rates and mean bytes per read/write syscall, run-queue wait. A rate is NaN
 * when either side is not measured, the window is not positive, the counter went backwards,
 * or the pid was reused (start time differs). Threads and children match by tid/pid.
 * Depends on proc.h only. */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "proc.h"

/* Delta of a counter, or NaN. */
static double delta(int64_t now, int64_t before)
{
    if (now == SOP_NA || before == SOP_NA || now < before)
        return NAN;
    return (double)(now - before);
}

static double per_s(int64_t now, int64_t before, double secs)
{
    return secs > 0 ? delta(now, before) / secs : NAN;
}

/* A gauge's change per second (may be negative), or NaN. */
static double signed_per_s(int64_t now, int64_t before, double secs)
{
    if (now == SOP_NA || before == SOP_NA || !(secs > 0))
        return NAN;
    return (double)(now - before) / secs;
}

static double ticks_sum_delta(const sop_stat *now, const sop_stat *before)
{
    double u = delta(now->utime_ticks, before->utime_ticks);
    double s = delta(now->stime_ticks, before->stime_ticks);
    return u + s; /* NaN propagates */
}

static bool same_task(const sop_stat *now, const sop_stat *before)
{
    return now->starttime_ticks != SOP_NA && now->starttime_ticks == before->starttime_ticks;
}

static double cpu_pct(const sop_stat *now, const sop_stat *before, double secs, double ticks_per_s)
{
    if (!(secs > 0) || !(ticks_per_s > 0) || !same_task(now, before))
        return NAN;
    return ticks_sum_delta(now, before) / ticks_per_s / secs * 100.0;
}

/* Mean bytes per call: delta bytes / delta calls; NaN when no call was made in the window. */
static double mean_per_call(int64_t bytes_now, int64_t bytes_before, int64_t calls_now,
                            int64_t calls_before)
{
    double calls = delta(calls_now, calls_before);
    if (!(calls > 0))
        return NAN;
    return delta(bytes_now, bytes_before) / calls;
}

static int64_t rss_kb(const sop_proc *p)
{
    if (p->status.vm_rss_kb != SOP_NA)
        return p->status.vm_rss_kb;
    if (p->stat.rss_pages != SOP_NA) {
        long page = sysconf(_SC_PAGESIZE);
        return p->stat.rss_pages * (page > 0 ? page : 4096) / 1024;
    }
    return SOP_NA;
}

void sop__proc_rates(sop_proc *now, const sop_proc *before, double secs, double ticks_per_s)
{
    sop_proc_rates *r = &now->rate;
    r->cpu_pct = r->majflt_per_s = r->rss_growth_kb_per_s = r->minflt_per_s = NAN;
    r->rchar_per_s = r->wchar_per_s = r->syscr_per_s = r->syscw_per_s = NAN;
    r->read_bytes_per_s = r->write_bytes_per_s = NAN;
    r->mean_read_bytes = r->mean_write_bytes = r->sched_wait_ms_per_s = NAN;
    r->reaped_cpu_pct = NAN;
    r->anon_growth_kb_per_s = r->file_growth_kb_per_s = r->shmem_growth_kb_per_s = NAN;
    r->threads_growth_per_s = r->fds_growth_per_s = NAN;
    r->threads_start = r->fds_start = SOP_NA;
    if (now->have_mapped) { /* the same process at both ends (a reused pid has other files) */
        bool same = before && before->have_mapped && secs > 0 &&
                    (!now->have_stat || !before->have_stat || same_task(&now->stat, &before->stat));
        sop__mapped_growth(&now->mapped, same ? &before->mapped : NULL);
    }
    if (!before || !(secs > 0) || !now->have_stat || !before->have_stat ||
        !same_task(&now->stat, &before->stat))
        return;
    r->cpu_pct = cpu_pct(&now->stat, &before->stat, secs, ticks_per_s);
    r->majflt_per_s = per_s(now->stat.majflt, before->stat.majflt, secs);
    r->minflt_per_s = per_s(now->stat.minflt, before->stat.minflt, secs);
    if (ticks_per_s > 0)
        r->reaped_cpu_pct = (delta(now->stat.cutime_ticks, before->stat.cutime_ticks) +
                             delta(now->stat.cstime_ticks, before->stat.cstime_ticks)) /
                            ticks_per_s / secs * 100.0;
    int64_t tn = now->have_status ? now->status.threads : now->stat.num_threads;
    int64_t tb = before->have_status ? before->status.threads : before->stat.num_threads;
    r->threads_start = tb;
    r->threads_growth_per_s = signed_per_s(tn, tb, secs);
    r->fds_start = before->fds;
    r->fds_growth_per_s = signed_per_s(now->fds, before->fds, secs);
    int64_t rn = rss_kb(now), rb = rss_kb(before);
    if (rn != SOP_NA && rb != SOP_NA) /* may shrink: a signed rate */
        r->rss_growth_kb_per_s = (double)(rn - rb) / secs;
    if (now->have_status && before->have_status) {
        const sop_status *a = &now->status, *b = &before->status;
        r->anon_growth_kb_per_s = signed_per_s(a->rss_anon_kb, b->rss_anon_kb, secs);
        r->file_growth_kb_per_s = signed_per_s(a->rss_file_kb, b->rss_file_kb, secs);
        r->shmem_growth_kb_per_s = signed_per_s(a->rss_shmem_kb, b->rss_shmem_kb, secs);
    }
    if (now->have_io && before->have_io) {
        const sop_io *a = &now->io, *b = &before->io;
        r->rchar_per_s = per_s(a->rchar, b->rchar, secs);
        r->wchar_per_s = per_s(a->wchar, b->wchar, secs);
        r->syscr_per_s = per_s(a->syscr, b->syscr, secs);
        r->syscw_per_s = per_s(a->syscw, b->syscw, secs);
        r->read_bytes_per_s = per_s(a->read_bytes, b->read_bytes, secs);
        r->write_bytes_per_s = per_s(a->write_bytes, b->write_bytes, secs);
        r->mean_read_bytes = mean_per_call(a->rchar, b->rchar, a->syscr, b->syscr);
        r->mean_write_bytes = mean_per_call(a->wchar, b->wchar, a->syscw, b->syscw);
    }
    if (now->have_sched && before->have_sched)
        r->sched_wait_ms_per_s = per_s(now->sched.wait_ns, before->sched.wait_ns, secs) / 1e6;
}

typedef struct {
    int id;
    size_t idx;
} id_idx;

static int id_cmp(const void *a, const void *b)
{
    int x = ((const id_idx *)a)->id, y = ((const id_idx *)b)->id;
    return (x > y) - (x < y);
}

void sop__threads_rates(sop_thread_list *now, const sop_thread_list *before, double secs,
                        double ticks_per_s)
{
    for (size_t i = 0; i < now->n; i++) {
        sop_thread *t = &now->items[i];
        t->cpu_pct = t->sys_pct = t->wait_pct = t->majflt_per_s = NAN;
        t->read_bytes_per_s = t->rchar_per_s = t->syscr_per_s = NAN;
    }
    if (!before || before->n == 0 || !(secs > 0))
        return;
    /* sort the earlier tids once, then look each current one up: O(n log n) for many threads */
    id_idx *ix = malloc(before->n * sizeof *ix);
    if (!ix)
        return;
    for (size_t i = 0; i < before->n; i++)
        ix[i] = (id_idx){before->items[i].tid, i};
    qsort(ix, before->n, sizeof *ix, id_cmp);
    for (size_t i = 0; i < now->n; i++) {
        sop_thread *t = &now->items[i];
        id_idx key = {t->tid, 0};
        const id_idx *hit = bsearch(&key, ix, before->n, sizeof *ix, id_cmp);
        if (!hit)
            continue;
        const sop_thread *b = &before->items[hit->idx];
        if (!same_task(&t->stat, &b->stat))
            continue; /* tid reused by a new thread */
        t->cpu_pct = cpu_pct(&t->stat, &b->stat, secs, ticks_per_s);
        t->sys_pct = ticks_per_s > 0 ? 100.0 * delta(t->stat.stime_ticks, b->stat.stime_ticks) /
                                           ticks_per_s / secs
                                     : NAN;
        t->wait_pct = per_s(t->sched.wait_ns, b->sched.wait_ns, secs) / 1e7; /* ns/s -> % */
        t->majflt_per_s = per_s(t->stat.majflt, b->stat.majflt, secs);
        if (t->have_io && b->have_io) {
            t->read_bytes_per_s = per_s(t->io.read_bytes, b->io.read_bytes, secs);
            t->rchar_per_s = per_s(t->io.rchar, b->io.rchar, secs);
            t->syscr_per_s = per_s(t->io.syscr, b->io.syscr, secs);
        }
    }
    free(ix);
}

void sop__children_rates(sop_child_list *now, const sop_child_list *before, double secs,
                         double ticks_per_s)
{
    now->zombies_start = before ? before->zombies : SOP_NA;
    now->zombies_growth_per_s = signed_per_s(now->zombies, now->zombies_start, secs);
    for (size_t i = 0; i < now->n; i++) {
        sop_child *c = &now->items[i];
        c->cpu_pct = c->read_bytes_per_s = c->rchar_per_s = NAN;
        if (!before || !(secs > 0))
            continue;
        for (size_t j = 0; j < before->n; j++) { /* at most SOP_CHILDREN_MAX each */
            const sop_child *b = &before->items[j];
            if (b->pid != c->pid || !same_task(&c->stat, &b->stat))
                continue;
            c->cpu_pct = cpu_pct(&c->stat, &b->stat, secs, ticks_per_s);
            c->read_bytes_per_s = per_s(c->io.read_bytes, b->io.read_bytes, secs);
            c->rchar_per_s = per_s(c->io.rchar, b->io.rchar, secs);
            break;
        }
    }
}
