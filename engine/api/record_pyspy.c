/* record_pyspy.c — sop_record_pyspy: py-spy's `record` for the tools that call py-spy (sopctl run
 * as `py-spy`, docs/py-spy.md). A sampling loop of its own over the python probe's sampler, one
 * sample per thread per tick, because py-spy's formats need what sop's window aggregation
 * (engine/sample) folds away: each frame's line, and each sample's time for the chrome trace.
 * Stacks are named and counted by pyspy_fold.c and drawn by sop's flame graph and speedscope
 * writers; the chrome trace is pyspy_trace.c. Never stops the target. Depends on the python
 * probe, pyspy_formats.h, clock.h, engine.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api_int.h"
#include "clock.h"
#include "engine.h"
#include "escape.h"
#include "proc.h"
#include "procfs.h"
#include "pyspy_formats.h"

#define PROCS_MAX SOP_SAMPLER_MAX_PROCS /* the target and its CPython descendants */
#define RESCAN_MS 1000.0                /* how often descendants are looked for again */
#define TRIED_MAX 256                   /* processes not CPython (yet): how often each was tried */
#define OPEN_TRIES 5 /* tries (one per rescan) of a process not CPython yet (just forked) */

typedef struct {
    int pid;
    int parent; /* index of the sampled process it descends from; -1 for the target */
    char cmdline[256];
    char comm[32];
    sop_pysampler *ps; /* NULL: the target itself when it is not CPython (SUBPROCESSES) */
    bool gone;
} rproc;

typedef struct {
    int pid, tries;
} tried_ent;

typedef struct {
    const char *proc_root;
    sop_pyspy_format fmt;
    unsigned flags;
    rproc procs[PROCS_MAX];
    int nprocs, cur;
    tried_ent tried[TRIED_MAX];
    int ntried;
    sop_pyspy_fold *fold;
    sop_pyspy_trace *trace;
    double t0_ms, now_ms, rate_hz;
    long thread_samples, partial;
    sop_sb line; /* scratch: one stack's text */
} rec;

/* What the thread was doing, as sop's record tells it (engine/sample/sample_agg.c's states
 * without the frame-based ones): idle is asleep without the GIL and not waiting for it. */
static sop_sample_state state_of(const sop_pysample *p)
{
    return p->gil            ? SOP_ST_GIL
           : p->gil_wait     ? SOP_ST_GIL_WAIT
           : p->state == 'D' ? SOP_ST_DISK
           : p->state == 'R' ? SOP_ST_NATIVE
                             : SOP_ST_IDLE;
}

/* The root frames py-spy gives a sample: with SUBPROCESSES, one per process from the target
 * down (process PID:"CMDLINE"); with THREADS, the thread's (thread (TID): NAME). Speedscope's
 * writer makes a profile of each thread from the first two frames (pid N (comm);tid M (name)). */
static void put_roots(rec *r, int proc, const sop_pysample *p)
{
    sop_sb *b = &r->line;
    const char *name = p->name && p->name[0] ? p->name : NULL;
    if (r->fmt == SOP_PYSPY_SPEEDSCOPE) {
        sop__sb_printf(b, "pid %d (", r->procs[proc].pid);
        sop__pyspy_put_text(b, r->procs[proc].comm);
        sop__sb_printf(b, ");tid %d (", p->tid);
        sop__pyspy_put_text(b, name ? name : "?");
        sop__sb_puts(b, ")");
        return;
    }
    if (r->flags & SOP_PYSPY_SUBPROCESSES) {
        int chain[PROCS_MAX], n = 0;
        for (int k = proc; k >= 0 && n < PROCS_MAX; k = r->procs[k].parent)
            chain[n++] = k;
        while (n-- > 0) {
            sop__sb_printf(b, "%sprocess %d:\"", b->len ? ";" : "", r->procs[chain[n]].pid);
            sop__pyspy_put_text(b, r->procs[chain[n]].cmdline);
            sop__sb_puts(b, "\"");
        }
    }
    if (r->flags & SOP_PYSPY_THREADS) {
        sop__sb_printf(b, "%sthread (%d)", b->len ? ";" : "", p->tid);
        if (name) {
            sop__sb_puts(b, ": ");
            sop__pyspy_put_text(b, name);
        }
    }
}

static void on_thread(void *ctx, const sop_pysample *p)
{
    rec *r = ctx;
    if ((r->flags & SOP_PYSPY_GIL) && !p->gil)
        return;
    sop_sample_state st = state_of(p);
    bool keep = st != SOP_ST_IDLE || (r->flags & SOP_PYSPY_IDLE);
    if (keep) {
        r->thread_samples++;
        r->partial += p->torn;
    }
    int pid = r->procs[r->cur].pid;
    if (r->trace) {
        if (keep)
            sop__pyspy_trace_sample(r->trace, pid, p, (r->now_ms - r->t0_ms) * 1e3);
        return;
    }
    /* idle samples are counted too: the writers leave them out unless asked (and say so) */
    sop_sb *b = &r->line;
    b->len = 0;
    b->oom = false;
    if (b->s)
        b->s[0] = '\0';
    put_roots(r, r->cur, p);
    sop__pyspy_frames(r->fold, b, pid, p);
    if (!b->oom && b->s)
        sop__pyspy_fold_add(r->fold, b->s, st);
}

static bool was_tried(rec *r, int pid)
{
    for (int i = 0; i < r->ntried; i++)
        if (r->tried[i].pid == pid)
            return ++r->tried[i].tries > OPEN_TRIES;
    if (r->ntried < TRIED_MAX)
        r->tried[r->ntried++] = (tried_ent){pid, 1};
    return false;
}

static void name_proc(rec *r, rproc *pr)
{
    if (sop__comm_read(r->proc_root, pr->pid, 0, pr->comm, sizeof pr->comm) != 0)
        snprintf(pr->comm, sizeof pr->comm, "?");
    sop__cmdline_read(r->proc_root, pr->pid, pr->cmdline, sizeof pr->cmdline);
}

/* The children of pid (every task's /proc/PID/task/TID/children): attach to each CPython one
 * not sampled yet, as descending from index `under`; then their children, 4 levels down. */
static void scan_children(rec *r, int pid, int under, int depth)
{
    int kids[64];
    long got = sop__proc_child_pids(r->proc_root, pid, kids, 64);
    int nk = got > 0 ? (int)got : 0;
    for (int k = 0; k < nk; k++) {
        int at = -1;
        for (int i = 0; i < r->nprocs && at < 0; i++)
            if (r->procs[i].pid == kids[k])
                at = i;
        if (at < 0 && r->nprocs < PROCS_MAX && !was_tried(r, kids[k])) {
            sop_missing scratch = {0};
            sop_pysampler *ps = NULL;
            if (sop__python_open(kids[k], r->proc_root, &ps, &scratch) == 0) {
                rproc *pr = &r->procs[at = r->nprocs++];
                memset(pr, 0, sizeof *pr);
                pr->pid = kids[k];
                pr->parent = under;
                pr->ps = ps;
                if (r->procs[0].ps)
                    sop__python_share_cache(ps, r->procs[0].ps); /* sampled one by one */
                name_proc(r, pr);
            }
            sop__missing_free(&scratch);
        }
        if (depth < 4)
            scan_children(r, kids[k], at >= 0 ? at : under, depth + 1);
    }
}

/* Attach to the target (and, with SUBPROCESSES, its CPython descendants; the target itself may
 * then be any process). SOP_OK or the error, set on e. */
static int attach(sop_engine *e, rec *r, int pid)
{
    sop_missing missing = {0};
    sop_pysampler *ps = NULL;
    int rc = sop__python_open(pid, r->proc_root, &ps, &missing);
    char why[300] = "";
    if (missing.n)
        snprintf(why, sizeof why, ": %s", missing.items[missing.n - 1].reason);
    sop__missing_free(&missing);
    /* with --subprocesses a parent that is not CPython is fine: its children are looked at */
    if (rc < 0 && (!(r->flags & SOP_PYSPY_SUBPROCESSES) || rc == -ESRCH || rc == -ENOENT ||
                   rc == -EPERM || rc == -EACCES))
        return sop__fail_python_open(e, pid, rc, why);
    rproc *pr = &r->procs[0];
    pr->pid = pid;
    pr->parent = -1;
    pr->ps = rc == 0 ? ps : NULL;
    name_proc(r, pr);
    r->nprocs = 1;
    if (r->flags & SOP_PYSPY_SUBPROCESSES)
        scan_children(r, pid, 0, 1);
    if (r->nprocs == 1 && !pr->ps)
        return sop__fail(e, rc == -ENOTSUP ? SOP_EPYVERSION : SOP_ENOTPYTHON,
                         "pid %d: not a supported CPython process, nor any of its children%s", pid,
                         why);
    return SOP_OK;
}

static void sleep_until(double deadline_ms)
{
    double left = deadline_ms - sop__now_ms();
    if (left <= 0)
        return;
    struct timespec ts = {(time_t)(left / 1e3), (long)(fmod(left, 1e3) * 1e6)};
    nanosleep(&ts, NULL); /* a signal ends it early: the loop asks `stop` again */
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Tick until the window ends, stop says so or the target is gone. */
static void run(rec *r, double duration_s, double rate_hz, int (*stop)(void *), void *ctx,
                sop_record_stats *st)
{
    double interval = 1e3 / rate_hz, c0 = cpu_ms();
    double t0 = sop__now_ms(), next = t0, last_scan = t0;
    double deadline = duration_s >= 0 ? t0 + duration_s * 1e3 : INFINITY;
    r->t0_ms = t0;
    for (;;) {
        if ((stop && stop(ctx)) || next >= deadline)
            break;
        r->now_ms = sop__now_ms();
        bool failed = false;
        for (int p = 0; p < r->nprocs; p++) {
            rproc *pr = &r->procs[p];
            if (pr->gone || !pr->ps)
                continue;
            r->cur = p;
            int rc = sop__python_sample(pr->ps, on_thread, r);
            if (rc == -ESRCH)
                pr->gone = true;
            else if (rc < 0 && p == 0)
                failed = true;
        }
        if (failed)
            st->missed++;
        else
            st->samples++;
        if ((r->flags & SOP_PYSPY_SUBPROCESSES) && r->now_ms - last_scan >= RESCAN_MS) {
            last_scan = r->now_ms;
            sop_process pr; /* a target that is no CPython is not sampled: is it still there? */
            if (!r->procs[0].ps && (sop_process_read(r->procs[0].pid, &pr) != 0 || !pr.alive))
                r->procs[0].gone = true;
            else
                scan_children(r, r->procs[0].pid, 0, 1);
        }
        if (r->procs[0].gone)
            break; /* py-spy: "Stopped sampling because process exited" */
        next += interval;
        double now = sop__now_ms();
        if (now >= next + interval) { /* overran: the late ticks are skipped */
            long skip = (long)((now - next) / interval);
            st->missed += skip;
            next += (double)skip * interval;
        }
        sleep_until(next < deadline ? next : deadline);
    }
    r->now_ms = sop__now_ms();
    st->window_s = (r->now_ms - t0) / 1e3;
    st->self_cpu_ms = cpu_ms() - c0;
}

/* The counted stacks in the asked format (raw: "frames COUNT" lines, idle left out unless
 * asked, every line escaped as collapsed text). 0 or -errno. */
static int write_stacks(rec *r, int pid, const sop_record_stats *st, FILE *f, long *nstacks)
{
    sop_stack_count *v = NULL;
    size_t n = sop__pyspy_fold_stacks(r->fold, &v);
    *nstacks = (long)n;
    bool idle = r->flags & SOP_PYSPY_IDLE;
    unsigned fg = idle ? SOP_FG_IDLE : 0;
    char title[200];
    int rc = 0;
    if (r->fmt == SOP_PYSPY_FLAMEGRAPH) {
        snprintf(title, sizeof title,
                 "py-spy record --pid %d (sop %s): %ld samples at %g Hz over %.1f s%s", pid,
                 sop_version(), st->samples, r->rate_hz, st->window_s,
                 idle ? "" : ", idle left out");
        rc = sop__flamegraph_write(v, n, title, fg, f);
    } else if (r->fmt == SOP_PYSPY_SPEEDSCOPE) {
        snprintf(title, sizeof title, "py-spy record --pid %d (sop %s, %.1f s)", pid, sop_version(),
                 st->window_s);
        rc = sop__speedscope_write(v, n, title, fg, f);
    } else {
        sop_sb line = {0};
        for (size_t i = 0; i < n; i++) {
            long c = v[i].count - (idle ? 0 : v[i].by_state[SOP_ST_IDLE]);
            if (c <= 0)
                continue;
            sop__esc_collapsed(&line, v[i].stack);
            char *esc = sop__sb_take(&line);
            fprintf(f, "%s %ld\n", esc ? esc : "?", c);
            free(esc);
        }
    }
    free(v);
    return rc;
}

int sop_record_pyspy(sop_engine *e, int pid, double duration_s, double rate_hz, const char *path,
                     sop_pyspy_format fmt, unsigned flags, int (*stop)(void *ctx), void *ctx,
                     sop_record_stats *stats)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (rate_hz == 0)
        rate_hz = 100;
    if (pid <= 0 || !path || isnan(duration_s) || duration_s > 30 * 86400.0 ||
        !(rate_hz > 0 && rate_hz <= SOP_RATE_MAX_HZ) || fmt < SOP_PYSPY_FLAMEGRAPH ||
        fmt > SOP_PYSPY_CHROMETRACE || (duration_s < 0 && !stop))
        return sop__fail(e, SOP_EINVAL,
                         "record needs a pid, a path, a known format, 0 < rate <= 10000 Hz and "
                         "a duration (or a stop function)");
    rec *r = calloc(1, sizeof *r);
    if (!r)
        return sop__fail(e, SOP_ENOMEM, "out of memory");
    r->proc_root = "/proc";
    r->fmt = fmt;
    r->flags = flags;
    r->rate_hz = rate_hz;
    int rc = attach(e, r, pid);
    FILE *f = NULL;
    if (rc == SOP_OK) {
        /* 0666 less the umask, as py-spy creates it: a caller that ran it through sudo reads it */
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0666);
        f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f) {
            rc = sop__fail(e, SOP_EIO, "%s: %s", path, sop__strerror(errno));
            if (fd >= 0)
                close(fd);
        }
    }
    if (rc == SOP_OK) {
        r->fold = fmt == SOP_PYSPY_CHROMETRACE ? NULL : sop__pyspy_fold_new(r->proc_root, flags);
        r->trace = fmt == SOP_PYSPY_CHROMETRACE ? sop__pyspy_trace_new(f, flags) : NULL;
        if (!r->fold && !r->trace)
            rc = sop__fail(e, SOP_ENOMEM, "out of memory");
    }
    sop_record_stats st = {0};
    if (rc == SOP_OK) {
        run(r, duration_s, rate_hz, stop, ctx, &st);
        int w = r->trace ? sop__pyspy_trace_end(r->trace, st.window_s * 1e6)
                         : write_stacks(r, pid, &st, f, &st.stacks);
        if (ferror(f))
            w = -EIO;
        if (fclose(f) != 0 || w < 0)
            rc = sop__fail(e, SOP_EIO, "%s: write failed", path);
        f = NULL;
        st.thread_samples = r->thread_samples;
        st.samples_partial = r->partial;
        if (stats)
            *stats = st;
    }
    if (f)
        fclose(f);
    for (int p = 0; p < r->nprocs; p++)
        if (r->procs[p].ps)
            sop__python_close(r->procs[p].ps);
    sop__pyspy_fold_free(r->fold);
    sop__pyspy_trace_free(r->trace);
    free(r->line.s);
    free(r);
    return rc;
}
