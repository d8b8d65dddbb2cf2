/* cgroup.h — the target's cgroup(s), v1 or v2: CPU quota/period, cpuset, throttling,
 * memory limit/usage/events, pids. Parsers are pure; readers take directory fds so tests
 * point them at fixture trees. Integers SOP_NA when not measured. Depends on libc only. */
#ifndef SOP_CGROUP_H
#define SOP_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "missing.h"
#include "procfs.h"

typedef struct {
    int version;        /* 1 or 2; 0 unknown */
    char path[512];     /* the cgroup path as /proc/PID/cgroup names it (memory or unified) */
    char cpu_path[512]; /* v1: the cpu controller path */
    /* cpu */
    int64_t quota_us, period_us; /* quota -1 = unlimited */
    double quota_cpus;           /* quota/period, NaN when unlimited */
    char cpuset[256];
    int64_t cpuset_count;
    int64_t nr_periods, nr_throttled, throttled_us, usage_us;
    double throttled_pct, throttled_ms_per_s; /* window */
    /* memory (the tightest limit on the path to the root) */
    int64_t mem_limit_kb, mem_usage_kb, mem_max_usage_kb, swap_limit_kb, mem_failcnt;
    char mem_limit_path[512];
    int64_t ev_low, ev_high, ev_max, ev_oom, ev_oom_kill; /* v2: this group and those below it */
    int64_t ev_local_oom_kill; /* v2 memory.events.local (5.2+): kills in this group only */
    /* pids */
    int64_t pids_current, pids_max; /* max -1 = unlimited */
    /* added by the host/cgroup probes */
    char cpuset_path[512], pids_path[512]; /* v1: those controllers' paths */
    char v2_path[512];                     /* the "0::" path, also seen on v1 hybrids */
    bool mem_unlimited;                    /* no limit anywhere up to the root */
    int64_t under_oom;                     /* v1 memory.oom_control */
} sop_cgroup;

/* Set everything to "not measured". */
void sop__cgroup_init(sop_cgroup *out);

/* Pure parsers. */
/* /proc/PID/cgroup: fills version, path (memory controller on v1, "0::" on v2), cpu_path. */
int sop__parse_proc_cgroup(const char *text, sop_cgroup *out);
/* v2 "cpu.max" ("max 100000" / "200000 100000"). */
int sop__parse_cpu_max(const char *text, int64_t *quota_us, int64_t *period_us);
/* cpu.stat, v1 (nr_periods nr_throttled throttled_time ns) or v2 (… throttled_usec). */
int sop__parse_cpu_stat(const char *text, sop_cgroup *out);
/* memory.events (v2) or memory.oom_control (v1: oom_kill N, under_oom). */
int sop__parse_memory_events(const char *text, sop_cgroup *out);
/* v2 memory.events.local: its oom_kill into out->ev_local_oom_kill (the rest is not kept). */
int sop__parse_memory_events_local(const char *text, sop_cgroup *out);
/* A memory limit file: v1 memory.limit_in_bytes (>= 2^62 is "unlimited") or v2 memory.max
 * ("max"). Sets *bytes to the limit or -1 for unlimited. 0 or -EINVAL. */
int sop__parse_mem_limit(const char *text, int64_t *bytes);
/* /proc/PID/mountinfo: the mount point of the v1 hierarchy holding `controller`, or of the
 * cgroup2 mount when controller is NULL. 0, or -ENOENT when there is none. */
int sop__parse_mountinfo_cgroup(const char *text, const char *controller, char *mnt, size_t cap);

/* Read the cgroup of `pid`: proc_dirfd is /proc/PID, cgroup_root is the path of the cgroup
 * mount root ("/sys/fs/cgroup" in life, a fixture dir in tests). Returns 0 or -errno; failures
 * of single files go to `missing`. */
int sop__cgroup_collect(int proc_dirfd, const char *cgroup_root, sop_cgroup *out,
                        sop_missing *missing);
void sop__cgroup_rates(sop_cgroup *now, const sop_cgroup *before, double secs);

#endif
