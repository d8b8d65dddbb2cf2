/* proc_collect.c — everything about one process from its /proc/PID directory fd: stat, status,
 * smaps_rollup, io, limits, schedstat, environ, cmdline, maps, fd count, exe. Each file is
 * read once (small ones into stack buffers); a failed read goes to `missing` and collection
 * goes on. Depends on the proc_*.c parsers and procfs.c. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "proc.h"

/* smaps is read (for resident kB per mapped file) only when data/shared file mappings span at
 * least this much address space; and at most SMAPS_MAX_BYTES of it (cut: the parser copes). */
#define SMAPS_TRIGGER_KB (64 * 1024)
#define SMAPS_MAX_BYTES (16u << 20)

static bool gone(int rc)
{
    return rc == -ENOENT || rc == -ESRCH;
}

double sop__proc_ticks_per_s(void)
{
    long t = sysconf(_SC_CLK_TCK);
    return t > 0 ? (double)t : 100.0;
}

double sop__proc_btime_s(void)
{
    /* btime never changes while the system runs; cached in milliseconds */
    static _Atomic long long cached_ms = -1;
    long long b = atomic_load(&cached_ms);
    if (b >= 0)
        return (double)b / 1000.0;
    char *text = NULL;
    if (sop__read_file_at(AT_FDCWD, "/proc/stat", 4u << 20, &text, NULL) != 0)
        return NAN;
    const char *at = strstr(text, "\nbtime ");
    int64_t v = SOP_NA;
    if (at) {
        const char *p = at + 7;
        v = sop__parse_i64(&p);
    }
    free(text);
    if (v == SOP_NA || v < 0)
        return NAN;
    /* btime is whole seconds: a young process's start could seem up to 1 s in the future.
     * The wall clock minus the boot clock gives the fraction; trust it only next to btime. */
    double bt = (double)v;
    struct timespec wall, up;
    if (clock_gettime(CLOCK_REALTIME, &wall) == 0 && clock_gettime(CLOCK_BOOTTIME, &up) == 0) {
        double precise =
            (double)(wall.tv_sec - up.tv_sec) + (double)(wall.tv_nsec - up.tv_nsec) / 1e9;
        if (fabs(precise - bt) < 2.0)
            bt = precise;
    }
    atomic_store(&cached_ms, (long long)(bt * 1000.0));
    return bt;
}

static void proc_init(sop_proc *p, int pid)
{
    memset(p, 0, sizeof *p);
    p->pid = pid;
    /* the parsers set every field to "not measured" before looking at their text */
    sop__parse_stat(NULL, &p->stat);
    sop__parse_status(NULL, &p->status);
    sop__parse_smaps_rollup(NULL, &p->smaps);
    sop__parse_io(NULL, &p->io);
    sop__parse_limits(NULL, &p->limits);
    sop__parse_schedstat(NULL, &p->sched);
    p->fds = SOP_NA;
    p->heaps.heaps = p->heaps.rw_kb = p->heaps.reserved_kb = SOP_NA;
    sop__mapped_init(&p->mapped);
    p->start_time_s = NAN;
    sop_proc_rates *r = &p->rate;
    r->cpu_pct = r->majflt_per_s = r->rss_growth_kb_per_s = r->minflt_per_s = NAN;
    r->rchar_per_s = r->wchar_per_s = r->syscr_per_s = r->syscw_per_s = NAN;
    r->read_bytes_per_s = r->write_bytes_per_s = NAN;
    r->mean_read_bytes = r->mean_write_bytes = r->sched_wait_ms_per_s = NAN;
    r->anon_growth_kb_per_s = r->file_growth_kb_per_s = r->shmem_growth_kb_per_s = NAN;
}

static void miss(sop_missing *m, const char *file, int rc)
{
    if (rc == -ENODATA)
        sop__missing_add(m, "proc", "%s: empty or unparsable", file);
    else
        sop__missing_add(m, "proc", "%s: %s", file, sop__strerror(-rc));
}

/* Read a small file shown in one piece into the stack buffer buf; *len gets its length.
 * Returns 0 or -errno. */
static int small(int dirfd, const char *file, char *buf, size_t cap, long *len)
{
    long n = sop__read_seq_at(dirfd, file, buf, cap);
    *len = n;
    return n < 0 ? (int)n : 0;
}

/* maps: the libraries, malloc's heaps, the mapped files (their resident kB from smaps when the
 * data mappings are big); the text handed to *maps when asked. 0, or -errno when unread. */
static int read_maps(int proc_dirfd, sop_proc *out, char **maps, sop_missing *missing)
{
    char *big = NULL;
    size_t blen = 0;
    int rc = sop__read_file_at(proc_dirfd, "maps", SOP_MAPS_MAX_BYTES, &big, &blen);
    if (rc == 0)
        rc = sop__parse_maps(big, &out->libs);
    if (rc == 0)
        sop__parse_malloc_heaps(big, &out->heaps);
    if (rc == 0 && sop__parse_mapped(big, &out->mapped) == 0)
        out->have_mapped = true;
    if (maps && rc == 0)
        *maps = big; /* handed over */
    else
        free(big);
    big = NULL;
    if (out->have_mapped && sop__mapped_big_kb(&out->mapped) >= SMAPS_TRIGGER_KB) {
        int rs = sop__read_file_at(proc_dirfd, "smaps", SMAPS_MAX_BYTES, &big, &blen);
        sop_mapped *res = rs == 0 ? malloc(sizeof *res) : NULL;
        if (res && sop__parse_mapped(big, res) == 0 && res->resident) {
            res->truncated = res->truncated || blen + 1 >= SMAPS_MAX_BYTES;
            out->mapped = *res;
        } else if (rs != 0) {
            miss(missing, "smaps", rs);
        }
        free(res);
        free(big);
    }
    if (rc == 0)
        out->have_maps = true;
    else
        miss(missing, "maps", rc);
    return rc;
}

int sop__proc_collect(int proc_dirfd, int pid, sop_proc *out, sop_missing *missing)
{
    return sop__proc_collect_maps(proc_dirfd, pid, out, NULL, missing);
}

int sop__proc_collect_maps(int proc_dirfd, int pid, sop_proc *out, char **maps,
                           sop_missing *missing)
{
    if (maps)
        *maps = NULL;
    proc_init(out, pid);
    char buf[8192];
    long len = 0;
    int ok = 0; /* files read */

    /* stat first: it tells whether the process is still there */
    int rc = small(proc_dirfd, "stat", buf, sizeof buf, &len);
    if (gone(rc))
        return rc;
    if (rc == 0 && len == 0)
        return -ESRCH; /* an exited task's files read empty */
    if (rc == 0)
        rc = sop__parse_stat(buf, &out->stat);
    if (rc == 0) {
        out->have_stat = true;
        ok++;
        if (out->pid <= 0)
            out->pid = out->stat.pid;
        double btime = sop__proc_btime_s();
        if (out->stat.starttime_ticks != SOP_NA && !isnan(btime))
            out->start_time_s = btime + (double)out->stat.starttime_ticks / sop__proc_ticks_per_s();
    } else {
        miss(missing, "stat", rc);
    }

    rc = small(proc_dirfd, "status", buf, sizeof buf, &len);
    if (rc == 0)
        rc = sop__parse_status(buf, &out->status);
    if (rc == 0) {
        out->have_status = true;
        ok++;
    } else {
        miss(missing, "status", rc);
    }

    rc = small(proc_dirfd, "smaps_rollup", buf, sizeof buf, &len);
    if (rc == 0)
        rc = sop__parse_smaps_rollup(buf, &out->smaps);
    if (rc == 0) {
        out->have_smaps = true;
        ok++;
    } else {
        miss(missing, "smaps_rollup", rc);
    }

    rc = small(proc_dirfd, "io", buf, sizeof buf, &len);
    if (rc == 0)
        rc = sop__parse_io(buf, &out->io);
    if (rc == 0) {
        out->have_io = true;
        ok++;
    } else {
        miss(missing, "io", rc);
    }

    rc = small(proc_dirfd, "limits", buf, sizeof buf, &len);
    if (rc == 0)
        rc = sop__parse_limits(buf, &out->limits);
    if (rc == 0) {
        out->have_limits = true;
        ok++;
    } else {
        miss(missing, "limits", rc);
    }

    rc = sop__read_schedstat_at(proc_dirfd, "schedstat", &out->sched);
    if (rc == -ENODATA)
        rc = -EINVAL; /* an empty file is an unparsable one here */
    if (rc == 0) {
        out->have_sched = true;
        ok++;
    } else {
        miss(missing, "schedstat", rc);
    }

    len = sop__read_small_at(proc_dirfd, "cmdline", buf, sizeof buf); /* not a seq_file */
    rc = len < 0 ? (int)len : 0;
    if (rc == 0) {
        ok++;
        sop__parse_cmdline(buf, (size_t)len, out->cmdline, sizeof out->cmdline); /* "" allowed */
    } else {
        miss(missing, "cmdline", rc);
    }

    char *big = NULL;
    size_t blen = 0;
    rc = sop__read_file_at(proc_dirfd, "environ", SOP_ENVIRON_MAX_BYTES, &big, &blen);
    if (rc == 0)
        rc = sop__parse_environ(big, blen, &out->env);
    free(big);
    if (rc == 0) {
        out->have_env = true;
        ok++;
    } else {
        miss(missing, "environ", rc);
    }

    if (read_maps(proc_dirfd, out, maps, missing) == 0)
        ok++;

    int64_t fds = sop__proc_count_fds(proc_dirfd);
    if (fds >= 0) {
        out->fds = fds;
        ok++;
    } else {
        miss(missing, "fd", (int)fds);
    }

    ssize_t nc = readlinkat(proc_dirfd, "cwd", out->cwd, sizeof out->cwd - 1);
    out->cwd[nc > 0 ? nc : 0] = '\0'; /* unreadable: no own-code root from it, nothing missing */
    ssize_t n = readlinkat(proc_dirfd, "exe", out->exe, sizeof out->exe - 1);
    if (n >= 0) {
        out->exe[n] = '\0';
        ok++;
    } else {
        out->exe[0] = '\0';
        if (errno != ENOENT || out->cmdline[0]) /* kernel threads have no exe */
            miss(missing, "exe", -errno);
    }

    return ok ? 0 : -EACCES;
}
