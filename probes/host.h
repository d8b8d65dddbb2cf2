/* host.h — what the host probes read: meminfo, vmstat, loadavg, /proc/stat, PSI, diskstats
 * (one reader per file, probes/host_*.c), online CPUs.
 * Integers are SOP_NA and doubles NaN when not measured. Depends on libc only. */
#ifndef SOP_HOST_H
#define SOP_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "missing.h"
#include "procfs.h"

typedef struct {
    double avg10, avg60, avg300;
    int64_t total_us;
    bool present;
} sop_psi_line;

typedef struct {
    sop_psi_line some, full;
    bool present;
} sop_psi;

typedef struct {
    char name[32];
    int64_t reads, writes, read_sectors, write_sectors, read_ms, write_ms, io_ms;
    /* window */
    double util_pct, r_await_ms, w_await_ms, read_kb_per_s, write_kb_per_s, reads_per_s,
        writes_per_s;
} sop_disk;

#define SOP_DISKS_MAX 32
typedef struct {
    int64_t ncpu;
    int64_t mem_total_kb, mem_free_kb, mem_available_kb, cached_kb, dirty_kb, writeback_kb;
    int64_t swap_total_kb, swap_free_kb, shmem_kb, mlocked_kb, hugepages_total, hugepages_free;
    double load1, load5, load15;
    int64_t procs_running, procs_blocked;
    int64_t processes;  /* /proc/stat "processes": forks since boot */
    double forks_per_s; /* window */
    int64_t threads_max,
        pid_max; /* /proc/sys/kernel/threads-max, pid_max: the host's task limits */
    /* /proc/stat aggregate cpu jiffies */
    int64_t cpu_user, cpu_nice, cpu_system, cpu_idle, cpu_iowait, cpu_irq, cpu_softirq, cpu_steal;
    double cpu_user_pct, cpu_system_pct, cpu_iowait_pct, cpu_idle_pct, cpu_steal_pct; /* window */
    /* /proc/vmstat counters */
    int64_t pswpin, pswpout, pgfault, pgmajfault;
    int64_t oom_kill; /* OOM kills since boot (memory-cgroup ones included; Linux 4.13+), SOP_NA */
    double swap_in_per_s, swap_out_per_s, pgmajfault_per_s; /* window, pages/s */
    sop_psi psi_cpu, psi_memory, psi_io;
    sop_disk disks[SOP_DISKS_MAX];
    size_t ndisks;
    double btime; /* boot time, epoch seconds */
} sop_host;

/* Pure parsers (fixture-testable). */
int sop__parse_psi(const char *text, sop_psi *out);
int sop__parse_loadavg(const char *text, sop_host *out);
/* Each fills what it finds and leaves the rest as it was; -EINVAL when the text is not that
 * file (meminfo: no MemTotal; stat: no cpu line; vmstat: none of its counters). */
int sop__parse_meminfo(const char *text, sop_host *out);
int sop__parse_vmstat(const char *text, sop_host *out);
int sop__parse_host_stat(const char *text, sop_host *out);
/* Whether a /proc/diskstats name is a whole disk (not a partition); NULL: every name is. */
typedef bool (*sop_disk_filter)(void *ctx, const char *name);
/* Whole disks with any IO since boot, at most SOP_DISKS_MAX, into out->disks. */
int sop__parse_diskstats(const char *text, sop_disk_filter whole, void *ctx, sop_host *out);

/* Set every field to "not measured" (SOP_NA / NaN / absent). */
void sop__host_init(sop_host *out);

/* The readers behind sop__host_collect; each adds {probe, reason} to `missing` on failure
 * and returns 0 or -errno. proc_dirfd is an open /proc (or a fixture dir). */
int sop__host_read_meminfo(int proc_dirfd, sop_host *out, sop_missing *missing);
int sop__host_read_vmstat(int proc_dirfd, sop_host *out, sop_missing *missing);
/* /proc/stat: cpu jiffies, procs_running/blocked, processes, btime. */
int sop__host_read_stat(int proc_dirfd, sop_host *out, sop_missing *missing);
/* Whole disks only (listed in /sys/block), loop and ram devices left out. */
int sop__host_read_diskstats(int proc_dirfd, sop_host *out, sop_missing *missing);
int sop__host_read_loadavg(int proc_dirfd, sop_host *out, sop_missing *missing);
/* pressure/{cpu,memory,io}: a kernel without PSI leaves present=false and says so once. */
int sop__host_read_psi(int proc_dirfd, sop_host *out, sop_missing *missing);
/* Whole disks worth reporting: not a loop/ram device (the partition test is /sys/block's). */
bool sop__disk_name_wanted(const char *name);

/* Read the whole host picture; failures go to `missing`. Returns 0. */
int sop__host_collect(sop_host *out, sop_missing *missing);
void sop__host_rates(sop_host *now, const sop_host *before, double secs);

#endif
