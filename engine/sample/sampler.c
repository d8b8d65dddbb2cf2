/* sampler.c — the sampling loop over a window: attach to the target and its CPython
 * descendants, tick at a rate (sampling every thread's Python stack and the target's GC with the
 * python probe's sampler), read /proc/PID/io and the open files at the window's edges, and hand
 * every sample to the aggregation (engine/sample/sample_agg.c); the evidence is built by
 * engine/bridge/window.c. Depends on probes/python/cpython.h, sample_agg.h, clock.h. */
#include "sampler.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "proc.h"
#include "procfs.h"
#include "python/cpython.h"
#include "sample_agg.h"
#include "sample_window.h"
#include "sampler_files.h"
#include "source_line.h"

#define FILES_MAX 256 /* open regular files tracked over the window, all processes */
#define GPU_FDS_MAX 64
#define LINE_READS_MAX 512       /* source lines read per window to tell GPU waits */
#define LINE_MAX_BYTES (2 << 20) /* a .py file larger than this is not read for that */
#define TRACE_MAX 256 /* readings of the target's anonymous memory kept over the window */
#define TRACE_MS 50.0 /* first interval between them; doubled each time the buffer fills */

typedef struct {
    int pid;
    char comm[32];
    char cmdline[256];
    sop_pysampler *ps;
    bool gone;
    double start_time_s; /* epoch seconds, from its stat starttime; NaN if unread */
    double found_at_s;   /* wall clock when the sampler attached to it (the window's start) */
    sop_io io0, io1;     /* /proc/PID/io at the window's start and end */
    bool have_io0, have_io1;
} proc_ent;

struct sop_sampler {
    proc_ent procs[SOP_SAMPLER_MAX_PROCS];
    int nprocs;
    const char *proc_root;
    sop_agg *agg;
    long ticks, missed;
    double rate_hz, self_cpu_ms, window_s;
    double now_ms; /* time of the current tick */
    int cur_proc;
    sop_open_file *files0, *files; /* at the window's start and end */
    size_t nfiles0, nfiles;
    int line_reads;
    /* the target's anonymous memory over the window (/proc/PID/statm resident - shared) */
    int statm_fd;
    double trace_ms[TRACE_MAX], trace_every_ms, trace_next_ms;
    int64_t trace_kb[TRACE_MAX];
    size_t ntrace;
};

/* The comm of a process or task as a frame of the collapsed stacks (';' is their separator);
 * "?" when unread. */
static void read_comm(const char *proc_root, int pid, int tid, char *out, size_t cap)
{
    if (sop__comm_read(proc_root, pid, tid, out, cap) != 0) {
        snprintf(out, cap, "?");
        return;
    }
    for (char *c = out; *c; c++)
        if (*c == ';')
            *c = ':';
}

/* One thread sample of the process being sampled: a thread seen for the first time is named
 * by its threading name, else its comm. */
static void on_thread(void *ctx, const sop_pysample *p)
{
    sop_sampler *s = ctx;
    int ti = sop__agg_find_thread(s->agg, s->cur_proc, p->tid);
    if (ti < 0) {
        if (s->agg->nthrs >= SOP_AGG_MAX_THREADS)
            return;
        char name[64];
        if (p->name && p->name[0])
            snprintf(name, sizeof name, "%s", p->name);
        else if (p->tid > 0)
            read_comm(s->proc_root, s->procs[s->cur_proc].pid, p->tid, name, sizeof name);
        else
            snprintf(name, sizeof name, "?");
        ti = sop__agg_add_thread(s->agg, s->cur_proc, p->tid, name);
        if (ti < 0)
            return;
    }
    sop__agg_sample(s->agg, ti, p, s->now_ms);
}

/* ---- open / run / close -------------------------------------------------------------- */

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void add_workers(sop_sampler *s, int pid, int depth)
{
    int kids[64];
    long got = sop__proc_child_pids(s->proc_root, pid, kids, 64);
    int nk = got > 0 ? (int)got : 0;
    for (int k = 0; k < nk && s->nprocs < SOP_SAMPLER_MAX_PROCS; k++) {
        sop_missing scratch = {0};
        sop_pysampler *ps = NULL;
        if (sop__python_open(kids[k], s->proc_root, &ps, &scratch) == 0) {
            proc_ent *pe = &s->procs[s->nprocs++];
            memset(pe, 0, sizeof *pe);
            pe->pid = kids[k];
            pe->ps = ps;
            sop__python_share_cache(ps, s->procs[0].ps); /* sampled one after the other */
            read_comm(s->proc_root, kids[k], 0, pe->comm, sizeof pe->comm);
            sop__cmdline_read(s->proc_root, kids[k], pe->cmdline, sizeof pe->cmdline);
            pe->start_time_s = sop__start_time_read(s->proc_root, kids[k]);
            pe->found_at_s = wall_s();
        }
        sop__missing_free(&scratch);
        if (depth < 2)
            add_workers(s, kids[k], depth + 1);
    }
}

/* The regular files open in every sampled process, up to FILES_MAX in all. */
static size_t scan_files(sop_sampler *s, sop_open_file *into)
{
    size_t n = 0;
    for (int p = 0; into && p < s->nprocs && n < FILES_MAX; p++) {
        if (s->procs[p].gone)
            continue;
        size_t room = FILES_MAX - n;
        if (room > 64)
            room = 64; /* no one process crowds out the workers */
        int k = sop__open_files_scan(s->proc_root, s->procs[p].pid, into + n, room);
        if (k > 0)
            n += (size_t)k;
    }
    return n;
}

/* The source line reader of the aggregation (GPU waits), bounded per window. */
static int read_line(void *ctx, int proc, const char *file, int line, char *out, size_t cap)
{
    sop_sampler *s = ctx;
    if (proc < 0 || proc >= s->nprocs || s->line_reads >= LINE_READS_MAX)
        return -ENOSPC;
    s->line_reads++;
    return sop__source_line(s->proc_root, s->procs[proc].pid, file, line, LINE_MAX_BYTES, out, cap);
}

/* Which sampled processes have GPU device files open: only their threads' syscalls and lines
 * are looked at for GPU waits (a CPU-only target pays nothing). Read once, at the start. */
static void scan_gpu(sop_sampler *s)
{
    bool any = false;
    for (int p = 0; p < s->nprocs; p++) {
        int fds[GPU_FDS_MAX];
        int n = sop__gpu_fds_scan(s->proc_root, s->procs[p].pid, fds, GPU_FDS_MAX);
        if (n > 0) {
            sop__python_sample_gpu_fds(s->procs[p].ps, fds, (size_t)n);
            sop__agg_gpu_proc(s->agg, p, true);
            any = true;
        }
    }
    if (any)
        sop__agg_line_reader(s->agg, read_line, s);
}

int sop__sampler_open(int pid, const char *proc_root, const struct sop_pyruntime *rt, bool workers,
                      sop_sampler **out, sop_missing *missing)
{
    *out = NULL;
    sop_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->proc_root = proc_root ? proc_root : "/proc";
    s->statm_fd = -1;
    s->agg = sop__agg_new();
    if (!s->agg) {
        sop__sampler_close(s);
        return -ENOMEM;
    }
    sop_pysampler *ps = NULL;
    int rc = sop__python_open_with(rt, pid, s->proc_root, &ps, missing);
    if (rc < 0) {
        sop__sampler_close(s);
        return rc;
    }
    s->procs[0].pid = pid;
    s->procs[0].ps = ps;
    read_comm(s->proc_root, pid, 0, s->procs[0].comm, sizeof s->procs[0].comm);
    sop__cmdline_read(s->proc_root, pid, s->procs[0].cmdline, sizeof s->procs[0].cmdline);
    s->nprocs = 1;
    char path[320];
    snprintf(path, sizeof path, "%s/%d/statm", s->proc_root, pid);
    s->statm_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (workers)
        add_workers(s, pid, 1);
    scan_gpu(s);
    s->files0 = calloc(FILES_MAX, sizeof *s->files0);
    s->files = calloc(FILES_MAX, sizeof *s->files);
    s->nfiles0 = scan_files(s, s->files0);
    for (int p = 0; p < s->nprocs; p++)
        s->procs[p].have_io0 = sop__io_read(s->proc_root, s->procs[p].pid, &s->procs[p].io0) == 0;
    *out = s;
    return 0;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Sleep to deadline_ms, looking at *stop (when not NULL) every 50 ms. */
static void sleep_until(double deadline_ms, const volatile int *stop)
{
    for (int guard = 0; guard < 100000; guard++) {
        double left = sop__now_ms() - deadline_ms;
        if (left >= 0 || (stop && __atomic_load_n(stop, __ATOMIC_RELAXED)))
            return;
        left = -left;
        if (stop && left > 50)
            left = 50;
        struct timespec ts = {(time_t)(left / 1e3), (long)(fmod(left, 1e3) * 1e6)};
        nanosleep(&ts, NULL);
    }
}

/* The target's anonymous memory now (statm: resident - shared pages, shared being file-backed
 * and shmem pages), every trace_every_ms at most; when the buffer is full every other reading is
 * dropped and the interval doubled, so the readings always span the whole window. */
static void trace_tick(sop_sampler *s, bool last)
{
    if (s->statm_fd < 0 || (!last && s->now_ms < s->trace_next_ms))
        return;
    char buf[256];
    ssize_t n = pread(s->statm_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return;
    buf[n] = '\0';
    const char *p = buf;
    int64_t v[3];
    for (int k = 0; k < 3; k++) {
        while (*p == ' ')
            p++;
        if (*p < '0' || *p > '9')
            return;
        v[k] = sop__parse_i64(&p);
    }
    if (v[1] < v[2])
        return;
    if (s->ntrace == TRACE_MAX) {
        for (size_t i = 0; i < TRACE_MAX / 2; i++) {
            s->trace_ms[i] = s->trace_ms[2 * i];
            s->trace_kb[i] = s->trace_kb[2 * i];
        }
        s->ntrace = TRACE_MAX / 2;
        s->trace_every_ms *= 2;
    }
    long page = sysconf(_SC_PAGESIZE);
    s->trace_ms[s->ntrace] = s->now_ms;
    s->trace_kb[s->ntrace++] = (v[1] - v[2]) * (page > 0 ? page / 1024 : 4);
    s->trace_next_ms = s->now_ms + s->trace_every_ms;
}

/* One tick of the target's GC (main interpreter). */
static void gc_tick(sop_sampler *s)
{
    sop_pygc g;
    if (s->nprocs < 1 || s->procs[0].gone || !s->procs[0].ps ||
        sop__python_sample_gc(s->procs[0].ps, &g) < 0)
        return;
    sop__agg_gc(s->agg, &g, s->now_ms);
}

/* A recheck a moment after the tick (sop__python_recheck): RECHECK_MS is longer than a tiny
 * native call or a loop's Python between two (a few µs each), far shorter than a native kernel
 * (ms). One made later than RECHECK_LATE_MS after its process's sample is not counted (a slow
 * tick: many threads). The window is sampled with this thread's timer slack at 1 µs (50 µs by
 * default would double the pause), restored at its end (sop__sampler_run). */
#define RECHECK_MS 0.05
#define RECHECK_LATE_MS 0.3

static void on_recheck(void *ctx, int tid, bool held_gil, bool holds_gil)
{
    sop_sampler *s = ctx;
    int ti = sop__agg_find_thread(s->agg, s->cur_proc, tid);
    if (ti >= 0)
        sop__agg_recheck(s->agg, ti, held_gil, holds_gil);
}

static void recheck_tick(sop_sampler *s, const double *sampled_ms)
{
    for (int p = 0; p < s->nprocs; p++) {
        proc_ent *pe = &s->procs[p];
        if (pe->gone || !pe->ps || !sop__python_recheck_pending(pe->ps))
            continue;
        sleep_until(sampled_ms[p] + RECHECK_MS, NULL);
        s->cur_proc = p;
        if (sop__now_ms() - sampled_ms[p] <= RECHECK_LATE_MS)
            sop__python_recheck(pe->ps, on_recheck, s);
        else
            sop__python_recheck(pe->ps, NULL, NULL); /* too late to tell: forgotten */
    }
}

int sop__sampler_run(sop_sampler *s, double deadline_ms, double rate_hz,
                     sop_sampler_progress progress, void *ctx, const volatile int *stop)
{
    if (!(rate_hz > 0))
        rate_hz = 100;
    s->rate_hz = rate_hz;
    double interval = 1e3 / rate_hz, c0 = cpu_ms(), t0 = sop__now_ms();
    sop__agg_start(s->agg, t0);
    double next = t0, last_progress = t0;
    int rc = 0;
    s->trace_every_ms = TRACE_MS;
    s->trace_next_ms = t0;
    int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0); /* for the rechecks' pause */
    bool slacked = slack > 1000 && prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) == 0;
    s->ntrace = 0;
    /* Bounded: one tick per interval until the deadline (plus skipped ones). */
    while (next < deadline_ms && !(stop && __atomic_load_n(stop, __ATOMIC_RELAXED))) {
        s->now_ms = sop__now_ms();
        bool failed = false;
        double sampled_ms[SOP_SAMPLER_MAX_PROCS];
        for (int p = 0; p < s->nprocs; p++) {
            proc_ent *pe = &s->procs[p];
            if (pe->gone || !pe->ps)
                continue;
            s->cur_proc = p;
            sampled_ms[p] = sop__now_ms();
            int r = sop__python_sample(pe->ps, on_thread, s);
            if (r == -ESRCH) {
                pe->gone = true;
                if (p == 0)
                    rc = -ESRCH;
            } else if (r < 0 && p == 0) {
                failed = true;
            }
        }
        recheck_tick(s, sampled_ms);
        sop__agg_tick(s->agg);
        gc_tick(s);
        trace_tick(s, false);
        if (failed)
            s->missed++;
        else
            s->ticks++;
        if (rc == -ESRCH)
            break;
        next += interval;
        double now = sop__now_ms();
        if (now >= next + interval) { /* overran: skip the ticks that are already late */
            long skip = (long)((now - next) / interval);
            s->missed += skip;
            next += (double)skip * interval;
        }
        if (progress && now - last_progress >= 250) {
            last_progress = now;
            progress(ctx, (now - t0) / (deadline_ms - t0), s->ticks);
        }
        if (next < deadline_ms)
            sleep_until(next, stop);
    }
    if (slacked)
        prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
    /* The window is the duration asked for, whatever the rate: the last tick may fall well
     * before the deadline (0.5 Hz over 2 s ticks once, at the start). */
    if (rc != -ESRCH) {
        sleep_until(deadline_ms, stop);
        s->now_ms = sop__now_ms();
        trace_tick(s, true);
    }
    for (int p = 0; p < s->nprocs; p++)
        s->procs[p].have_io1 = sop__io_read(s->proc_root, s->procs[p].pid, &s->procs[p].io1) == 0;
    s->nfiles = scan_files(s, s->files);
    for (size_t i = 0; i < s->nfiles; i++) {
        sop_open_file *f = &s->files[i];
        for (size_t k = 0; k < s->nfiles0; k++)
            if (s->files0[k].pid == f->pid && s->files0[k].fd == f->fd &&
                strcmp(s->files0[k].path, f->path) == 0)
                f->pos0 = s->files0[k].pos;
    }
    for (size_t i = 0; i < s->nfiles;) { /* resolve each process's files with its mountinfo */
        size_t j = i;
        while (j < s->nfiles && s->files[j].pid == s->files[i].pid)
            j++;
        sop__open_files_resolve(s->proc_root, s->files[i].pid, s->files + i, j - i);
        i = j;
    }
    double end = sop__now_ms();
    sop__agg_finish(s->agg, end);
    /* The window is over: its readers (page cache, walk tables) are freed now, not when the
     * aggregation is (the evidence is bridged and the rules run after this). */
    for (int p = 0; p < s->nprocs; p++) {
        sop__python_close(s->procs[p].ps);
        s->procs[p].ps = NULL;
    }
    s->window_s = (end - t0) / 1e3;
    s->self_cpu_ms = cpu_ms() - c0;
    if (progress)
        progress(ctx, 1.0, s->ticks);
    return rc;
}

void sop__sampler_close(sop_sampler *s)
{
    if (!s)
        return;
    for (int p = 0; p < s->nprocs; p++)
        sop__python_close(s->procs[p].ps);
    if (s->statm_fd >= 0)
        close(s->statm_fd);
    sop__agg_free(s->agg);
    free(s->files0);
    free(s->files);
    free(s);
}

void sop__sampler_stats(const sop_sampler *s, sop_sampler_stats *out)
{
    out->ticks = s->ticks;
    out->missed = s->missed;
    out->thread_samples = s->agg->thread_samples;
    out->samples_partial = s->agg->samples_partial;
    out->walk_retries = s->agg->walk_retries;
    out->rate_hz = s->rate_hz;
    out->self_cpu_ms = s->self_cpu_ms;
    out->window_s = s->window_s;
}

/* ---- output ------------------------------------------------------------------------- */

static int cmp_count_desc(const void *a, const void *b)
{
    const sop_stack_count *x = a, *y = b;
    return (x->count < y->count) - (x->count > y->count);
}

size_t sop__sampler_stacks(const sop_sampler *s, sop_stack_count **out)
{
    *out = NULL;
    size_t n = 0;
    const sop_agg *a = s->agg;
    sop_stack_count *v = calloc(a->nstacks + 1, sizeof *v);
    if (!v)
        return 0;
    /* Each text (process and thread as roots) is malloc'd; the caller frees each and v. */
    const uint32_t *slots;
    size_t ns = sop__agg_all_stacks(a, &slots);
    for (size_t j = 0; j < ns; j++) {
        const sop_agg_stack *e = &a->stacks[slots[j]];
        const sop_agg_thread *t = &a->thrs[e->thr];
        const proc_ent *pe = &s->procs[t->proc];
        size_t len = strlen(e->stack) + 160;
        char *txt = malloc(len);
        if (!txt)
            break;
        snprintf(txt, len, "pid %d (%s);tid %d (%s);%s", pe->pid, pe->comm, t->tid, t->name,
                 e->stack);
        v[n].stack = txt;
        v[n].count = e->count;
        memcpy(v[n].by_state, e->by_state, sizeof v[n].by_state);
        n++;
    }
    if (a->other > 0) {
        char *txt = strdup("(stack table full)");
        if (txt) {
            v[n].stack = txt;
            v[n].count = a->other;
            v[n].by_state[SOP_ST_NATIVE] = a->other; /* state unknown: never left out as idle */
            n++;
        }
    }
    qsort(v, n, sizeof *v, cmp_count_desc);
    *out = v;
    return n;
}

int sop__sampler_write_collapsed(const sop_sampler *s, FILE *f)
{
    sop_stack_count *v = NULL;
    size_t n = sop__sampler_stacks(s, &v);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s %ld\n", v[i].stack, v[i].count);
        free((char *)v[i].stack);
    }
    free(v);
    return ferror(f) ? -EIO : 0;
}

void sop__sampler_window(const sop_sampler *s, sop_window_proc procs[SOP_SAMPLER_MAX_PROCS],
                         sop_missing *missing, sop_window *w)
{
    for (int p = 0; p < s->nprocs; p++) {
        const proc_ent *pe = &s->procs[p];
        procs[p] = (sop_window_proc){pe->pid,
                                     pe->comm,
                                     pe->cmdline,
                                     pe->gone,
                                     pe->start_time_s,
                                     pe->found_at_s,
                                     pe->have_io0 ? &pe->io0 : NULL,
                                     pe->have_io1 ? &pe->io1 : NULL};
    }
    *w = (sop_window){s->agg,       procs,       s->nprocs,   s->files,  s->nfiles, {0},
                      s->proc_root, s->trace_ms, s->trace_kb, s->ntrace, missing};
    sop__sampler_stats(s, &w->stats);
}

/* ---- timeline ------------------------------------------------------------------------ */

void sop__sampler_keep_timeline(sop_sampler *s)
{
    sop__agg_keep_timeline(s->agg);
}

size_t sop__sampler_timeline(const sop_sampler *s, const sop_timeline_ev **out)
{
    *out = s->agg->timeline;
    return s->agg->ntimeline;
}

size_t sop__sampler_task_names(const sop_sampler *s, const char *const **out)
{
    *out = (const char *const *)s->agg->task_names;
    return s->agg->ntask_names;
}

bool sop__sampler_saw_asyncio(const sop_sampler *s)
{
    for (size_t i = 0; s && i < s->agg->nthrs; i++)
        if (s->agg->thrs[i].proc == 0 && s->agg->thrs[i].runs_asyncio)
            return true;
    return false;
}

size_t sop__sampler_threads(const sop_sampler *s, sop_thread_info **out)
{
    const sop_agg *a = s->agg;
    *out = calloc(a->nthrs + 1, sizeof **out);
    if (!*out)
        return 0;
    for (size_t i = 0; i < a->nthrs; i++) {
        const sop_agg_thread *t = &a->thrs[i];
        const proc_ent *pe = &s->procs[t->proc];
        (*out)[i] = (sop_thread_info){pe->pid, t->tid, t->proc, pe->comm, t->name};
    }
    return a->nthrs;
}
