/* cgroup_collect.c — reads the target's cgroup: finds its paths in /proc/PID/cgroup, decides
 * v1 (controller hierarchies, e.g. /sys/fs/cgroup/memory) or v2 (the unified mount that
 * actually holds the controllers), and reads cpu quota/stat, cpuset, memory limit (tightest on
 * the way to the root), usage and events, pids. Depends on cgroup.h, procfs.h, missing.h. */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WALK_MAX 64 /* levels from a cgroup up to its mount root */

/* A cgroup directory: the mount it lives in, and its path below that mount. */
typedef struct {
    char mount[512];
    char rel[512]; /* "" or "/a/b" */
    int ok;
} cg_dir;

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* out = a + sep + b; -ENAMETOOLONG (and an empty out) rather than a cut path. */
static int pcat(char *out, size_t cap, const char *a, const char *sep, const char *b)
{
    int n = snprintf(out, cap, "%s%s%s", a, sep, b);
    if (n < 0 || (size_t)n >= cap) {
        out[0] = '\0';
        return -ENAMETOOLONG;
    }
    return 0;
}

static int has_file(const char *dir, const char *name)
{
    char p[1100];
    return pcat(p, sizeof p, dir, "/", name) == 0 && access(p, F_OK) == 0;
}

static int read_in(const char *dir, const char *name, char *buf, size_t cap)
{
    char p[1100];
    if (pcat(p, sizeof p, dir, "/", name) < 0)
        return -ENAMETOOLONG;
    long n = sop__read_small_at(AT_FDCWD, p, buf, cap);
    return n < 0 ? (int)n : 0;
}

static void join(char *out, size_t cap, const char *mount, const char *rel)
{
    pcat(out, cap, mount, "", strcmp(rel, "/") == 0 ? "" : rel);
}

/* The mount of v1 controller `ctrl` under root (e.g. root/memory, root/cpu,cpuacct); in life
 * (use_mountinfo) mountinfo names it when it sits elsewhere. `probe_file` proves it. */
static int find_v1_mount(const char *root, const char *ctrl, const char *probe_file,
                         int use_mountinfo, char *out, size_t cap)
{
    const char *cands[3] = {ctrl, NULL, NULL};
    if (strcmp(ctrl, "cpu") == 0)
        cands[1] = "cpu,cpuacct", cands[2] = "cpuacct,cpu";
    for (int i = 0; i < 3 && cands[i]; i++) {
        if (pcat(out, cap, root, "/", cands[i]) == 0 && has_file(out, probe_file))
            return 0;
    }
    if (use_mountinfo) {
        char *mi = NULL;
        if (sop__read_file_at(AT_FDCWD, "/proc/self/mountinfo", 1 << 20, &mi, NULL) == 0) {
            int rc = sop__parse_mountinfo_cgroup(mi, ctrl, out, cap);
            free(mi);
            if (rc == 0 && has_file(out, probe_file))
                return 0;
        }
    }
    out[0] = '\0';
    return -ENOENT;
}

/* The cgroup2 mount: root itself or root/unified (hybrid layouts), preferring one whose
 * cgroup.controllers is not empty (a hybrid's unified mount holds no controllers). */
static int find_v2_mount(const char *root, int use_mountinfo, char *out, size_t cap)
{
    char cands[3][512];
    int n = 0;
    if (pcat(cands[n], sizeof cands[0], root, "", "") == 0)
        n++;
    if (pcat(cands[n], sizeof cands[0], root, "/", "unified") == 0)
        n++;
    if (use_mountinfo) {
        char *mi = NULL;
        if (sop__read_file_at(AT_FDCWD, "/proc/self/mountinfo", 1 << 20, &mi, NULL) == 0) {
            if (sop__parse_mountinfo_cgroup(mi, NULL, cands[n], sizeof cands[0]) == 0)
                n++;
            free(mi);
        }
    }
    int first = -1;
    for (int i = 0; i < n; i++) {
        char buf[512];
        if (read_in(cands[i], "cgroup.controllers", buf, sizeof buf) < 0)
            continue;
        if (first < 0)
            first = i;
        if (strstr(buf, "memory") || strstr(buf, "cpu")) {
            pcat(out, cap, cands[i], "", "");
            return 0;
        }
    }
    if (first < 0)
        return -ENOENT;
    pcat(out, cap, cands[first], "", "");
    return 0;
}

/* Resolve mount + path; a path that does not exist below the mount (a cgroup namespace, a
 * container seeing the host's path) falls back to the mount root, and says so. */
static cg_dir resolve(const char *mount, const char *path, const char *what, sop_missing *m)
{
    cg_dir d;
    memset(&d, 0, sizeof d);
    if (!mount[0] || !path[0])
        return d;
    snprintf(d.mount, sizeof d.mount, "%s", mount);
    snprintf(d.rel, sizeof d.rel, "%s", strcmp(path, "/") == 0 ? "" : path);
    char full[1100];
    join(full, sizeof full, d.mount, d.rel);
    /* a target in another cgroup namespace shows paths like "/../../x": never walk out of
     * the mount with them */
    if (strstr(d.rel, "/..") || !is_dir(full)) {
        sop__missing_add(m, "cgroup",
                         "%s path %.120s not under %.60s (cgroup namespace?): "
                         "read the mount root instead",
                         what, path, mount);
        d.rel[0] = '\0';
    }
    d.ok = 1;
    return d;
}

static void full_path(const cg_dir *d, char *out, size_t cap)
{
    join(out, cap, d->mount, d->rel);
}

/* Read an integer file in dir; SOP_NA when absent or malformed (reported). */
static int64_t read_i64(const char *dir, const char *name, const char *probe, sop_missing *m,
                        int report_absent)
{
    char buf[128];
    int rc = read_in(dir, name, buf, sizeof buf);
    if (rc < 0) {
        if (report_absent || rc != -ENOENT)
            sop__missing_add(m, probe, "%s: %s", name, sop__strerror(-rc));
        return SOP_NA;
    }
    const char *p = buf;
    int64_t v = sop__parse_i64(&p);
    if (v == SOP_NA || (*p && *p != '\n')) {
        if (strncmp(buf, "max", 3) == 0 && (buf[3] == '\n' || buf[3] == '\0'))
            return -1;
        sop__missing_add(m, probe, "%s: unparsable", name);
        return SOP_NA;
    }
    return v;
}

/* Walk from d up to its mount root, reading the limit file at each level; keep the tightest.
 * Returns 1 when a level had a limit, 0 when all levels said unlimited, -1 when none read. */
static int tightest_mem_limit(const cg_dir *d, const char *file, sop_cgroup *out, sop_missing *m)
{
    char rel[512];
    snprintf(rel, sizeof rel, "%s", d->rel);
    int64_t best = -1;
    int read_any = 0, bad = 0;
    for (int i = 0; i < WALK_MAX; i++) {
        char dir[1100], buf[128];
        join(dir, sizeof dir, d->mount, rel);
        if (read_in(dir, file, buf, sizeof buf) == 0) {
            int64_t v;
            if (sop__parse_mem_limit(buf, &v) == 0) {
                read_any = 1;
                if (v >= 0 && (best < 0 || v < best)) {
                    best = v;
                    snprintf(out->mem_limit_path, sizeof out->mem_limit_path, "%s",
                             rel[0] ? rel : "/");
                }
            } else {
                bad = 1;
            }
        }
        char *slash = strrchr(rel, '/');
        if (!slash || rel[0] == '\0')
            break;
        *slash = '\0';
    }
    if (bad)
        sop__missing_add(m, "cgroup.memory", "%s: unparsable on the way to the root", file);
    if (!read_any)
        return -1;
    if (best < 0)
        return 0;
    out->mem_limit_kb = best / 1024;
    return 1;
}

/* The tightest cpu quota on the way up (as cpus = quota/period). */
static void tightest_quota(const cg_dir *d, int version, sop_cgroup *out, sop_missing *m)
{
    char rel[512];
    snprintf(rel, sizeof rel, "%s", d->rel);
    int read_any = 0;
    for (int i = 0; i < WALK_MAX; i++) {
        char dir[1100], buf[128];
        join(dir, sizeof dir, d->mount, rel);
        int64_t q = SOP_NA, per = SOP_NA;
        if (version == 2) {
            if (read_in(dir, "cpu.max", buf, sizeof buf) == 0) {
                if (sop__parse_cpu_max(buf, &q, &per) < 0) {
                    sop__missing_add(m, "cgroup.cpu", "cpu.max at %.200s: unparsable",
                                     rel[0] ? rel : "/");
                    q = SOP_NA;
                }
            }
        } else {
            q = read_i64(dir, "cpu.cfs_quota_us", "cgroup.cpu", m, 0);
            per = read_i64(dir, "cpu.cfs_period_us", "cgroup.cpu", m, 0);
        }
        if (q != SOP_NA) {
            if (!read_any) { /* the target's own level, as it is */
                out->quota_us = q;
                out->period_us = per;
            }
            read_any = 1;
            if (q > 0 && per > 0) {
                double cpus = (double)q / (double)per;
                if (isnan(out->quota_cpus) || cpus < out->quota_cpus) {
                    out->quota_cpus = cpus;
                    out->quota_us = q;
                    out->period_us = per;
                }
            }
        }
        char *slash = strrchr(rel, '/');
        if (!slash || rel[0] == '\0')
            break;
        *slash = '\0';
    }
    if (!read_any) {
        if (version == 2 && d->rel[0] == '\0') /* the v2 root has no cpu.max: no quota */
            out->quota_us = -1;
        else
            sop__missing_add(m, "cgroup.cpu", "no cpu quota file readable");
    }
}

static void read_cpu_stat(const char *dir, sop_cgroup *out, sop_missing *m)
{
    char buf[1024];
    int rc = read_in(dir, "cpu.stat", buf, sizeof buf);
    if (rc < 0)
        sop__missing_add(m, "cgroup.cpu", "cpu.stat: %s", sop__strerror(-rc));
    else if (sop__parse_cpu_stat(buf, out) < 0)
        sop__missing_add(m, "cgroup.cpu", "cpu.stat: unparsable");
}

static void read_cpuset(const cg_dir *d, const char *const *files, sop_cgroup *out, sop_missing *m)
{
    char dir[1100];
    full_path(d, dir, sizeof dir);
    const char *dirs[2] = {dir, d->mount}; /* the root's cpuset when the level has none */
    for (int j = 0; j < 2; j++)
        for (int i = 0; files[i]; i++) {
            char buf[256];
            if (read_in(dirs[j], files[i], buf, sizeof buf) < 0)
                continue;
            buf[strcspn(buf, "\n")] = '\0';
            int c = sop__cpulist_count(buf);
            if (c <= 0) {
                sop__missing_add(m, "cgroup.cpuset", "%s: unparsable or empty", files[i]);
                continue;
            }
            snprintf(out->cpuset, sizeof out->cpuset, "%s", buf);
            out->cpuset_count = c;
            return;
        }
    sop__missing_add(m, "cgroup.cpuset", "no cpuset file readable");
}

static void read_pids(const cg_dir *d, sop_cgroup *out, sop_missing *m)
{
    char dir[1100];
    full_path(d, dir, sizeof dir);
    out->pids_current = read_i64(dir, "pids.current", "cgroup.pids", m, d->rel[0] != '\0');
    out->pids_max = read_i64(dir, "pids.max", "cgroup.pids", m, d->rel[0] != '\0');
}

static void read_memory_v1(const cg_dir *d, sop_cgroup *out, sop_missing *m)
{
    char dir[1100], buf[256];
    full_path(d, dir, sizeof dir);
    int lim = tightest_mem_limit(d, "memory.limit_in_bytes", out, m);
    if (lim == 0)
        out->mem_unlimited = true;
    else if (lim < 0)
        sop__missing_add(m, "cgroup.memory", "memory.limit_in_bytes unreadable");
    int64_t v = read_i64(dir, "memory.usage_in_bytes", "cgroup.memory", m, 1);
    out->mem_usage_kb = v >= 0 ? v / 1024 : SOP_NA;
    v = read_i64(dir, "memory.max_usage_in_bytes", "cgroup.memory", m, 1);
    out->mem_max_usage_kb = v >= 0 ? v / 1024 : SOP_NA;
    out->mem_failcnt = read_i64(dir, "memory.failcnt", "cgroup.memory", m, 1);
    /* memsw = memory + swap; absent without swap accounting (swapaccount=0) */
    int64_t memsw, own;
    if (read_in(dir, "memory.memsw.limit_in_bytes", buf, sizeof buf) == 0 &&
        sop__parse_mem_limit(buf, &memsw) == 0 && memsw >= 0 &&
        read_in(dir, "memory.limit_in_bytes", buf, sizeof buf) == 0 &&
        sop__parse_mem_limit(buf, &own) == 0 && own >= 0 && memsw >= own)
        out->swap_limit_kb = (memsw - own) / 1024;
    int rc = read_in(dir, "memory.oom_control", buf, sizeof buf);
    if (rc < 0)
        sop__missing_add(m, "cgroup.memory", "memory.oom_control: %s", sop__strerror(-rc));
    else if (sop__parse_memory_events(buf, out) < 0)
        sop__missing_add(m, "cgroup.memory", "memory.oom_control: unparsable");
}

static void read_memory_v2(const cg_dir *d, sop_cgroup *out, sop_missing *m)
{
    char dir[1100], buf[512];
    full_path(d, dir, sizeof dir);
    int lim = tightest_mem_limit(d, "memory.max", out, m);
    if (lim == 0 || (lim < 0 && d->rel[0] == '\0'))
        out->mem_unlimited = true; /* the v2 root has no memory.max: nothing limits it */
    else if (lim < 0)
        sop__missing_add(m, "cgroup.memory", "memory.max unreadable");
    int root = d->rel[0] == '\0';
    int64_t v = read_i64(dir, "memory.current", "cgroup.memory", m, !root);
    out->mem_usage_kb = v >= 0 ? v / 1024 : SOP_NA;
    v = read_i64(dir, "memory.peak", "cgroup.memory", m, 0); /* kernel 5.19+ */
    out->mem_max_usage_kb = v >= 0 ? v / 1024 : SOP_NA;
    if (read_in(dir, "memory.swap.max", buf, sizeof buf) == 0 &&
        sop__parse_mem_limit(buf, &v) == 0 && v >= 0)
        out->swap_limit_kb = v / 1024;
    int rc = read_in(dir, "memory.events", buf, sizeof buf);
    if (rc < 0) {
        if (!root)
            sop__missing_add(m, "cgroup.memory", "memory.events: %s", sop__strerror(-rc));
    } else if (sop__parse_memory_events(buf, out) < 0) {
        sop__missing_add(m, "cgroup.memory", "memory.events: unparsable");
    }
    /* kernel 5.2+; its absence (older kernels, the root) is not an error: rules fall back to
     * the hierarchical counter and say so */
    if (read_in(dir, "memory.events.local", buf, sizeof buf) == 0 &&
        sop__parse_memory_events_local(buf, out) < 0)
        sop__missing_add(m, "cgroup.memory", "memory.events.local: unparsable");
}

static void collect_v1(const char *root, int life, sop_cgroup *out, sop_missing *m)
{
    char mnt[512];
    if (out->path[0]) {
        if (find_v1_mount(root, "memory", "memory.limit_in_bytes", life, mnt, sizeof mnt) == 0) {
            cg_dir d = resolve(mnt, out->path, "memory", m);
            read_memory_v1(&d, out, m);
        } else {
            sop__missing_add(m, "cgroup.memory", "no v1 memory hierarchy under %.200s", root);
        }
    }
    if (out->cpu_path[0]) {
        if (find_v1_mount(root, "cpu", "cpu.cfs_period_us", life, mnt, sizeof mnt) == 0) {
            cg_dir d = resolve(mnt, out->cpu_path, "cpu", m);
            char dir[1100];
            full_path(&d, dir, sizeof dir);
            tightest_quota(&d, 1, out, m);
            read_cpu_stat(dir, out, m);
            int64_t ns = read_i64(dir, "cpuacct.usage", "cgroup.cpu", m, 0);
            if (ns >= 0)
                out->usage_us = ns / 1000;
        } else {
            sop__missing_add(m, "cgroup.cpu", "no v1 cpu hierarchy under %.200s", root);
        }
    }
    if (out->cpuset_path[0] &&
        find_v1_mount(root, "cpuset", "cpuset.cpus", life, mnt, sizeof mnt) == 0) {
        static const char *const files[] = {"cpuset.effective_cpus", "cpuset.cpus", NULL};
        cg_dir d = resolve(mnt, out->cpuset_path, "cpuset", m);
        read_cpuset(&d, files, out, m);
    }
    if (out->pids_path[0] &&
        find_v1_mount(root, "pids", "cgroup.procs", life, mnt, sizeof mnt) == 0) {
        cg_dir d = resolve(mnt, out->pids_path, "pids", m);
        read_pids(&d, out, m);
    }
}

static int collect_v2(const char *root, int life, sop_cgroup *out, sop_missing *m)
{
    char mnt[512];
    if (find_v2_mount(root, life, mnt, sizeof mnt) < 0) {
        sop__missing_add(m, "cgroup", "no cgroup2 mount under %.200s", root);
        return -ENOENT;
    }
    cg_dir d = resolve(mnt, out->v2_path, "unified", m);
    char dir[1100];
    full_path(&d, dir, sizeof dir);
    tightest_quota(&d, 2, out, m);
    read_cpu_stat(dir, out, m);
    static const char *const files[] = {"cpuset.cpus.effective", "cpuset.cpus", NULL};
    read_cpuset(&d, files, out, m);
    read_memory_v2(&d, out, m);
    read_pids(&d, out, m);
    return 0;
}

int sop__cgroup_collect(int proc_dirfd, const char *cgroup_root, sop_cgroup *out,
                        sop_missing *missing)
{
    sop__cgroup_init(out);
    char buf[8192];
    long n = sop__read_small_at(proc_dirfd, "cgroup", buf, sizeof buf);
    if (n < 0) {
        sop__missing_add(missing, "cgroup", "/proc/PID/cgroup: %s", sop__strerror((int)-n));
        return (int)n;
    }
    if (sop__parse_proc_cgroup(buf, out) < 0) {
        sop__missing_add(missing, "cgroup", "/proc/PID/cgroup: unparsable");
        return -EINVAL;
    }
    const char *root = cgroup_root ? cgroup_root : "/sys/fs/cgroup";
    int life = strcmp(root, "/sys/fs/cgroup") == 0; /* mountinfo describes only real mounts */
    if (out->version == 1) {
        collect_v1(root, life, out, missing);
        return 0;
    }
    return collect_v2(root, life, out, missing);
}

void sop__cgroup_rates(sop_cgroup *now, const sop_cgroup *before, double secs)
{
    if (!(secs > 0) || !isfinite(secs))
        return;
    if (now->nr_periods != SOP_NA && before->nr_periods != SOP_NA && now->nr_throttled != SOP_NA &&
        before->nr_throttled != SOP_NA && now->nr_periods >= before->nr_periods &&
        now->nr_throttled >= before->nr_throttled) {
        int64_t dp = now->nr_periods - before->nr_periods;
        int64_t dt = now->nr_throttled - before->nr_throttled;
        /* no period elapsed: the group never ran against its quota, so nothing throttled */
        now->throttled_pct = dp > 0 ? 100.0 * (double)dt / (double)dp : 0.0;
    }
    if (now->throttled_us != SOP_NA && before->throttled_us != SOP_NA &&
        now->throttled_us >= before->throttled_us)
        now->throttled_ms_per_s =
            (double)(now->throttled_us - before->throttled_us) / 1000.0 / secs;
}
