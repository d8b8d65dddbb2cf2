/* host_rates.c — host rates over the observation window from two snapshots: CPU time split
 * (% of all CPUs), swap in/out and major faults per second, per-disk utilisation and await.
 * A side that was not measured leaves the rate NaN. Depends on probes/host.h. */
#include "host.h"

#include <math.h>
#include <string.h>

/* a - b when both measured and the counter did not go backwards; else -1. */
static int64_t delta(int64_t a, int64_t b)
{
    if (a == SOP_NA || b == SOP_NA || a < b)
        return -1;
    return a - b;
}

static double per_s(int64_t a, int64_t b, double secs)
{
    int64_t d = delta(a, b);
    return d < 0 ? NAN : (double)d / secs;
}

static void cpu_split(sop_host *now, const sop_host *before)
{
    int64_t du = delta(now->cpu_user, before->cpu_user),
            dn = delta(now->cpu_nice, before->cpu_nice);
    int64_t ds = delta(now->cpu_system, before->cpu_system);
    int64_t di = delta(now->cpu_idle, before->cpu_idle);
    int64_t dw = delta(now->cpu_iowait, before->cpu_iowait);
    int64_t dq = delta(now->cpu_irq, before->cpu_irq);
    int64_t dsq = delta(now->cpu_softirq, before->cpu_softirq);
    int64_t dst = delta(now->cpu_steal, before->cpu_steal);
    if (du < 0 || dn < 0 || ds < 0 || di < 0 || dw < 0 || dq < 0 || dsq < 0 || dst < 0)
        return;
    int64_t total = du + dn + ds + di + dw + dq + dsq + dst;
    if (total <= 0)
        return;
    double t = (double)total;
    now->cpu_user_pct = 100.0 * (double)(du + dn) / t;
    now->cpu_system_pct = 100.0 * (double)(ds + dq + dsq) / t;
    now->cpu_iowait_pct = 100.0 * (double)dw / t;
    now->cpu_idle_pct = 100.0 * (double)di / t;
    now->cpu_steal_pct = 100.0 * (double)dst / t;
}

static void disk_rates(sop_disk *d, const sop_disk *b, double secs)
{
    int64_t dr = delta(d->reads, b->reads), dw = delta(d->writes, b->writes);
    int64_t dio = delta(d->io_ms, b->io_ms);
    int64_t drms = delta(d->read_ms, b->read_ms), dwms = delta(d->write_ms, b->write_ms);
    if (dio >= 0) {
        double u = 100.0 * (double)dio / (secs * 1000.0);
        d->util_pct = u > 100.0 ? 100.0 : u; /* io_ms ticks can run a little ahead */
    }
    if (dr > 0 && drms >= 0)
        d->r_await_ms = (double)drms / (double)dr;
    else if (dr == 0)
        d->r_await_ms = 0.0; /* no reads in the window: no wait either (measured) */
    if (dw > 0 && dwms >= 0)
        d->w_await_ms = (double)dwms / (double)dw;
    else if (dw == 0)
        d->w_await_ms = 0.0;
    /* sectors are always 512 bytes in /proc/diskstats */
    int64_t drs = delta(d->read_sectors, b->read_sectors);
    int64_t dws = delta(d->write_sectors, b->write_sectors);
    if (drs >= 0)
        d->read_kb_per_s = (double)drs / 2.0 / secs;
    if (dws >= 0)
        d->write_kb_per_s = (double)dws / 2.0 / secs;
    if (dr >= 0)
        d->reads_per_s = (double)dr / secs;
    if (dw >= 0)
        d->writes_per_s = (double)dw / secs;
}

void sop__host_rates(sop_host *now, const sop_host *before, double secs)
{
    if (!(secs > 0) || !isfinite(secs))
        return;
    cpu_split(now, before);
    now->swap_in_per_s = per_s(now->pswpin, before->pswpin, secs);
    now->swap_out_per_s = per_s(now->pswpout, before->pswpout, secs);
    now->pgmajfault_per_s = per_s(now->pgmajfault, before->pgmajfault, secs);
    now->forks_per_s = per_s(now->processes, before->processes, secs);
    for (size_t i = 0; i < now->ndisks; i++)
        for (size_t j = 0; j < before->ndisks; j++)
            if (strcmp(now->disks[i].name, before->disks[j].name) == 0) {
                disk_rates(&now->disks[i], &before->disks[j], secs);
                break;
            }
}
