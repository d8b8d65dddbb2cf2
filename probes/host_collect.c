/* host_collect.c — the whole host picture in one call: online CPUs (sysconf), meminfo,
 * vmstat, /proc/stat, diskstats, loadavg and PSI. Every part that fails goes to `missing`;
 * the rest is kept.
 * Depends on probes/host.h and the host_*.c readers. */
#include "host.h"

#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sop__host_init(sop_host *out)
{
    memset(out, 0, sizeof *out);
    out->ncpu = SOP_NA;
    out->mem_total_kb = out->mem_free_kb = out->mem_available_kb = out->cached_kb = SOP_NA;
    out->dirty_kb = out->writeback_kb = out->swap_total_kb = out->swap_free_kb = SOP_NA;
    out->shmem_kb = out->mlocked_kb = out->hugepages_total = out->hugepages_free = SOP_NA;
    out->load1 = out->load5 = out->load15 = NAN;
    out->procs_running = out->procs_blocked = out->processes = SOP_NA;
    out->forks_per_s = NAN;
    out->threads_max = out->pid_max = SOP_NA;
    out->cpu_user = out->cpu_nice = out->cpu_system = out->cpu_idle = SOP_NA;
    out->cpu_iowait = out->cpu_irq = out->cpu_softirq = out->cpu_steal = SOP_NA;
    out->cpu_user_pct = out->cpu_system_pct = out->cpu_iowait_pct = NAN;
    out->cpu_idle_pct = out->cpu_steal_pct = NAN;
    out->pswpin = out->pswpout = out->pgfault = out->pgmajfault = out->oom_kill = SOP_NA;
    out->swap_in_per_s = out->swap_out_per_s = out->pgmajfault_per_s = NAN;
    sop_psi none = {{NAN, NAN, NAN, SOP_NA, false}, {NAN, NAN, NAN, SOP_NA, false}, false};
    out->psi_cpu = out->psi_memory = out->psi_io = none;
    out->ndisks = 0;
    out->btime = NAN;
}

/* A file of one integer under /proc; SOP_NA when unreadable. */
static int64_t read_int(int proc, const char *path)
{
    char buf[64];
    long n = sop__read_small_at(proc, path, buf, sizeof buf);
    char *end = NULL;
    long long v = n > 0 ? strtoll(buf, &end, 10) : 0;
    return n > 0 && end != buf && v > 0 ? (int64_t)v : SOP_NA;
}

int sop__host_collect(sop_host *out, sop_missing *missing)
{
    sop__host_init(out);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n > 0)
        out->ncpu = n;
    else
        sop__missing_add(missing, "host.ncpu", "sysconf(_SC_NPROCESSORS_ONLN) failed");
    int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (proc < 0) {
        sop__missing_add(missing, "host", "cannot open /proc");
        return 0;
    }
    sop__host_read_meminfo(proc, out, missing);
    sop__host_read_vmstat(proc, out, missing);
    sop__host_read_stat(proc, out, missing);
    sop__host_read_diskstats(proc, out, missing);
    sop__host_read_loadavg(proc, out, missing);
    sop__host_read_psi(proc, out, missing);
    out->threads_max = read_int(proc, "sys/kernel/threads-max");
    out->pid_max = read_int(proc, "sys/kernel/pid_max");
    close(proc);
    return 0;
}
