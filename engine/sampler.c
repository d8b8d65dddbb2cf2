/* sampler.c — the sampling loop over a window and its per-thread aggregation: activity, GIL
 * held, runnable without the GIL, stacks with counts, asyncio loop stretches, DataLoader-style
 * workers. Depends on probes/python/python.h (sop__python_open/sample) and value.h. */
#include "sampler.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bridge/bridge.h"
#include "clock.h"
#include "proc.h"
#include "procfs.h"
#include "python/python.h"
#include "sampler_files.h"
#include "sampler_runtime.h"
#include "source_line.h"

#define MAX_THREADS_AGG 4096
#define STACK_SLOTS (1u << 16)  /* power of two; at most half filled */
#define STACK_MAX_BYTES 16384   /* one stack's text; longer ones are cut at the root side */
#define TIMELINE_MAX (4u << 20) /* thread samples kept for a timeline (8 bytes each) */
#define LOOP_CAND 16            /* candidate frames tracked in one loop stretch */
#define TOP_STACKS 5
#define LOOP_STACK_BYTES 1536      /* frames of the longest loop stretch kept for the evidence */
#define SITES_MAX 1024             /* (thread, kind, frame) counters for import / logging sites */
#define FILES_MAX 256              /* open regular files tracked over the window, all processes */
#define LEAF_SLOTS (1u << 14)      /* (leaf, entry, caller) sites over all threads; half filled */
#define TOP_LEAVES 8               /* per thread in the evidence */
#define SOURCE_READS_MAX 256       /* source lines read per window (hot leaves and callers) */
#define SOURCE_MAX_BYTES (8 << 20) /* a .py file larger than this is not read */

typedef struct {
    char frame[384];
    long count;
} cand;

typedef struct {
    int proc; /* index into procs */
    int tid;
    char name[64]; /* threading name, else comm of the task */
    long n, active, gil, runnable_nogil, gil_wait, state_r, state_d, state_s, no_frames, torn;
    long data_wait;      /* in a DataLoader / multiprocessing queue wait */
    long ckpt;           /* in torch.save / torch.load / pickle */
    long majflt_smp;     /* samples after which the thread's major faults had risen */
    long fault_wait;     /* ... or in D state: waiting on storage (mapped file pages or reads) */
    int64_t last_majflt; /* SOP_NA until the first sample read it */
    long import, logging, log_format, log_write, subprocess, spawn; /* sampler_runtime.h */
    bool is_loop;
    /* the current stretch away from the selector */
    bool in_stretch;
    double stretch_t0_ms, stretch_last_ms;
    cand cur[LOOP_CAND];
    int ncur;
    /* the longest one */
    double longest_ms;
    char longest_frame[384];
    char stretch_cb[256]; /* the callback the current stretch is in (its outermost own frame) */
    /* the callback's frames (innermost first, "func\tfile\tline\n" each) of a sample at the
     * stretch's most seen frame, and of the longest stretch: rules pick the user's own frame */
    char stretch_stack[LOOP_STACK_BYTES], longest_stack[LOOP_STACK_BYTES];
} thr;

typedef struct {
    uint64_t hash;
    uint32_t thr;
    char *stack;
    long count;
    long by_state[SOP_ST_N]; /* the count split by sop_sample_state */
} stack_ent;

/* How often one thread was seen importing one module / logging from one call site. */
enum { SITE_IMPORT, SITE_LOG, SITE_FAULT };
typedef struct {
    uint32_t thr;
    int kind;
    char frame[384];
    long count;
} site_ent;
/* One Python frame, owned copy. */
typedef struct {
    char *func, *file;
    int line;
} site;

/* Where a thread's samples were: the innermost frame (leaf), the innermost frame of the
 * program's own code (caller) and the library frame it called (entry: the API it entered). */
typedef struct {
    uint64_t hash;
    uint32_t thr;
    site leaf, entry, caller; /* entry / caller: func NULL when none */
    long count, active;
} leaf_ent;

typedef struct {
    int pid;
    char comm[32];
    char cmdline[256];
    sop_pysampler *ps;
    bool gone;
    long samples;
    double start_time_s; /* epoch seconds, from its stat starttime; NaN if unread */
    double found_at_s;   /* wall clock when the sampler attached to it (the window's start) */
    sop_io io0, io1;     /* /proc/PID/io at the window's start and end */
    bool have_io0, have_io1;
} proc_ent;

struct sop_sampler {
    proc_ent procs[SOP_SAMPLER_MAX_PROCS];
    int nprocs;
    const char *proc_root;
    thr *thrs;
    size_t nthrs;
    stack_ent *stacks; /* STACK_SLOTS */
    size_t nstacks;
    leaf_ent *leaves; /* LEAF_SLOTS */
    size_t nleaves;
    long other;      /* samples not stored because the table was full */
    site_ent *sites; /* SITES_MAX */
    size_t nsites;
    long ticks, missed, thread_samples;
    long samples_partial, walk_retries; /* thread samples whose stack was not verified whole */
    double rate_hz, self_cpu_ms, window_s;
    double now_ms; /* time of the current tick */
    int cur_proc;
    /* the target's GC over the window (main interpreter) */
    long gc_samples, gc_collecting;
    bool gc_in_stretch;
    double gc_stretch_t0_ms, gc_longest_ms;
    int64_t gc_first[3], gc_last[3]; /* generation_stats collections at the first/last tick */
    double gc_first_ms, gc_last_ms;
    sop_open_file *files0, *files; /* at the window's start and end */
    sop_timeline_ev *timeline;     /* with sop__sampler_keep_timeline: one per thread sample */
    size_t ntimeline, timeline_cap;
    bool keep_timeline;
    double t0_ms;
    size_t nfiles0, nfiles;
    char buf[STACK_MAX_BYTES];
};

static uint64_t fnv(const char *s, uint32_t seed)
{
    uint64_t h = 1469598103934665603ull ^ seed;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

static void read_comm(const char *proc_root, int pid, int tid, char *out, size_t cap)
{
    char path[256];
    if (tid)
        snprintf(path, sizeof path, "%s/%d/task/%d/comm", proc_root, pid, tid);
    else
        snprintf(path, sizeof path, "%s/%d/comm", proc_root, pid);
    out[0] = '\0';
    long n = sop__read_small_at(AT_FDCWD, path, out, cap);
    if (n <= 0) {
        snprintf(out, cap, "?");
        return;
    }
    out[strcspn(out, "\n")] = '\0';
    for (char *c = out; *c; c++)
        if (*c == ';')
            *c = ':';
}

static void read_cmdline(const char *proc_root, int pid, char *out, size_t cap)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%d/cmdline", proc_root, pid);
    long n = sop__read_small_at(AT_FDCWD, path, out, cap);
    if (n <= 0) {
        out[0] = '\0';
        return;
    }
    for (long i = 0; i < n - 1 && i < (long)cap - 1; i++)
        if (out[i] == '\0')
            out[i] = ' ';
    out[cap - 1] = '\0';
}

/* ---- classification of one stack --------------------------------------------------- */

static bool asyncio_file(const char *f, const char *name)
{
    char suffix[64];
    snprintf(suffix, sizeof suffix, "asyncio/%s", name);
    return ends_with(f, suffix);
}

static bool loop_machinery(const sop_pyframe *f)
{
    return ends_with(f->file, "selectors.py") || strstr(f->file, "/asyncio/") != NULL ||
           strstr(f->file, "/uvloop/") != NULL || strncmp(f->file, "uvloop/", 7) == 0;
}

/* A frame of DataLoader's consumer side waiting for a batch, or any multiprocessing queue get. */
static bool data_wait_frame(const sop_pyframe *f)
{
    return strstr(f->func, "_try_get_data") || strstr(f->func, "_get_data") ||
           (ends_with(f->file, "multiprocessing/queues.py") && strstr(f->func, "get"));
}

/* Checkpoint-style IO: torch.save / torch.load, pickle's Python implementation, joblib dumps. */
static bool ckpt_frame(const sop_pyframe *f)
{
    return ends_with(f->file, "torch/serialization.py") || ends_with(f->file, "/pickle.py") ||
           ends_with(f->file, "joblib/numpy_pickle.py") ||
           (ends_with(f->file, "safetensors/torch.py") &&
            (strstr(f->func, "save") || strstr(f->func, "load")));
}

static int find_thr(sop_sampler *s, int proc, int tid, const char *pyname)
{
    for (size_t i = 0; i < s->nthrs; i++)
        if (s->thrs[i].proc == proc && s->thrs[i].tid == tid)
            return (int)i;
    if (s->nthrs >= MAX_THREADS_AGG)
        return -1;
    thr *t = &s->thrs[s->nthrs];
    memset(t, 0, sizeof *t);
    t->proc = proc;
    t->tid = tid;
    t->last_majflt = SOP_NA;
    if (pyname && pyname[0])
        snprintf(t->name, sizeof t->name, "%s", pyname);
    else if (tid > 0)
        read_comm(s->proc_root, s->procs[proc].pid, tid, t->name, sizeof t->name);
    else
        snprintf(t->name, sizeof t->name, "?");
    for (char *c = t->name; *c; c++) /* the name is a frame of the collapsed stacks */
        if (*c == ';' || *c == '\n')
            *c = ':';
    return (int)s->nthrs++;
}

static void end_stretch(thr *t, double end_ms)
{
    if (!t->in_stretch)
        return;
    double ms = end_ms - t->stretch_t0_ms;
    if (ms > t->longest_ms) {
        t->longest_ms = ms;
        int best = -1;
        for (int i = 0; i < t->ncur; i++)
            if (best < 0 || t->cur[i].count > t->cur[best].count)
                best = i;
        snprintf(t->longest_frame, sizeof t->longest_frame, "%s",
                 best >= 0 ? t->cur[best].frame : "?");
        memcpy(t->longest_stack, t->stretch_stack, sizeof t->longest_stack);
    }
    t->in_stretch = false;
    t->ncur = 0;
}

/* The asyncio part: a stretch is consecutive samples where the loop thread is inside one
 * callback (not back in the selector, not between callbacks, not in another callback); its
 * frame is the innermost non-loop frame most seen in it. */
static void loop_sample(sop_sampler *s, thr *t, const sop_pysample *p)
{
    int dispatch = -1;
    bool loop = false, selector = false;
    for (size_t i = 0; i < p->nframes; i++) {
        const sop_pyframe *f = &p->frames[i];
        if (dispatch < 0 && asyncio_file(f->file, "events.py") &&
            (strcmp(f->func, "Handle._run") == 0 || strcmp(f->func, "_run") == 0))
            dispatch = (int)i;
        if (asyncio_file(f->file, "base_events.py") &&
            (strstr(f->func, "run_forever") || strstr(f->func, "_run_once")))
            loop = true;
        if (ends_with(f->file, "selectors.py"))
            selector = true;
    }
    if (!loop) {
        end_stretch(t, s->now_ms);
        return;
    }
    t->is_loop = true;
    if (selector) {
        end_stretch(t, s->now_ms);
        return;
    }
    /* Between callbacks (in _run_once, not inside Handle._run): the loop came back. */
    if (dispatch < 0) {
        end_stretch(t, s->now_ms);
        return;
    }
    /* Which callback: its outermost frame outside the loop machinery (a coroutine of a Task,
     * a protocol method); "" when it is all asyncio's own. Another callback than the one the
     * stretch started in means the loop went round in between (a busy loop running many short
     * callbacks is not blocked): the stretch ends there and a new one starts. */
    char cb[256] = "";
    for (int i = dispatch - 1; i >= 0; i--)
        if (!loop_machinery(&p->frames[i])) {
            snprintf(cb, sizeof cb, "%s (%s)", p->frames[i].func, p->frames[i].file);
            break;
        }
    if (t->in_stretch && strcmp(cb, t->stretch_cb) != 0)
        end_stretch(t, s->now_ms);
    if (!t->in_stretch) {
        t->in_stretch = true;
        t->stretch_t0_ms = s->now_ms;
        t->ncur = 0;
        snprintf(t->stretch_cb, sizeof t->stretch_cb, "%s", cb);
    }
    t->stretch_last_ms = s->now_ms;
    const sop_pyframe *user = NULL;
    for (int i = 0; i < dispatch && !user; i++)
        if (!loop_machinery(&p->frames[i]))
            user = &p->frames[i];
    if (!user)
        user = &p->frames[0];
    char key[384];
    snprintf(key, sizeof key, "%s (%s:%d)", user->func, user->file, user->line);
    int at = -1, best = 0;
    for (int i = 0; i < t->ncur; i++) {
        if (strcmp(t->cur[i].frame, key) == 0)
            at = i;
        if (t->cur[i].count > best)
            best = (int)t->cur[i].count;
    }
    if (at >= 0) {
        t->cur[at].count++;
    } else if (t->ncur < LOOP_CAND) {
        at = t->ncur++;
        snprintf(t->cur[at].frame, sizeof t->cur[at].frame, "%s", key);
        t->cur[at].count = 1;
    }
    if (at >= 0 && t->cur[at].count >= best) { /* keep a stack of the most seen frame */
        size_t n = 0;
        t->stretch_stack[0] = '\0';
        for (int i = 0; i < dispatch; i++) {
            const sop_pyframe *f = &p->frames[i];
            int w = snprintf(t->stretch_stack + n, sizeof t->stretch_stack - n, "%s\t%s\t%d\n",
                             f->func, f->file, f->line);
            if (w < 0 || (size_t)w >= sizeof t->stretch_stack - n) {
                t->stretch_stack[n] = '\0'; /* no cut frame: the outer ones are left out */
                break;
            }
            n += (size_t)w;
        }
    }
}

/* Append src to the stack text, ';' kept as the separator only. */
static size_t put_name(char *dst, size_t at, size_t cap, const char *src)
{
    for (; *src && at + 1 < cap; src++)
        dst[at++] = *src == ';' ? ':' : (*src == '\n' ? ' ' : *src);
    dst[at] = '\0';
    return at;
}

static void count_stack(sop_sampler *s, int ti, const sop_pysample *p, sop_sample_state st)
{
    char *b = s->buf;
    size_t cap = sizeof s->buf, at = 0;
    b[0] = '\0';
    if (p->nframes == 0)
        at = put_name(b, at, cap, "(no Python frame)");
    for (size_t k = p->nframes; k-- > 0;) { /* root (outermost) first */
        const sop_pyframe *f = &p->frames[k];
        if (at && at + 1 < cap) {
            b[at++] = ';';
            b[at] = '\0';
        }
        at = put_name(b, at, cap, f->func);
        at = put_name(b, at, cap, " (");
        at = put_name(b, at, cap, base_name(f->file));
        at = put_name(b, at, cap, ")");
    }
    uint64_t h = fnv(b, (uint32_t)ti);
    size_t i = h & (STACK_SLOTS - 1);
    for (size_t n = 0; n < STACK_SLOTS; n++, i = (i + 1) & (STACK_SLOTS - 1)) {
        stack_ent *e = &s->stacks[i];
        if (!e->stack) {
            if (s->nstacks >= STACK_SLOTS / 2)
                break;
            e->stack = strdup(b);
            if (!e->stack)
                break;
            e->hash = h;
            e->thr = (uint32_t)ti;
            e->count = 1;
            e->by_state[st] = 1;
            s->nstacks++;
            return;
        }
        if (e->hash == h && e->thr == (uint32_t)ti && strcmp(e->stack, b) == 0) {
            e->count++;
            e->by_state[st]++;
            return;
        }
    }
    s->other++;
}

static void count_site(sop_sampler *s, int ti, int kind, const char *frame)
{
    for (size_t i = 0; i < s->nsites; i++) {
        site_ent *e = &s->sites[i];
        if (e->thr == (uint32_t)ti && e->kind == kind && strcmp(e->frame, frame) == 0) {
            e->count++;
            return;
        }
    }
    if (!s->sites || s->nsites >= SITES_MAX)
        return;
    site_ent *e = &s->sites[s->nsites++];
    e->thr = (uint32_t)ti;
    e->kind = kind;
    snprintf(e->frame, sizeof e->frame, "%s", frame);
    e->count = 1;
}

/* §8: imports, logging, subprocess launching (engine/sampler_runtime.c). */
static void runtime_sample(sop_sampler *s, int ti, const sop_pysample *p)
{
    thr *t = &s->thrs[ti];
    sop_runtime_marks m;
    sop__runtime_marks(p->frames, p->nframes, &m);
    t->import += m.import;
    t->logging += m.logging;
    t->log_format += m.log_format;
    t->log_write += m.log_write;
    t->subprocess += m.subprocess;
    t->spawn += m.spawn;
    if (m.import_top)
        count_site(s, ti, SITE_IMPORT, m.import_top);
    if (m.log_site) {
        char key[384];
        snprintf(key, sizeof key, "%s (%s:%d)", m.log_site->func, m.log_site->file,
                 m.log_site->line);
        count_site(s, ti, SITE_LOG, key);
    }
}

/* Library code: the standard library, installed packages, and code with a pseudo file name
 * ("<frozen ...>", numpy's "<__array_function__ internals>"). The rest is the program's own. */
static bool library_file(const char *f)
{
    return f[0] == '<' || strstr(f, "/site-packages/") || strstr(f, "/dist-packages/") ||
           strstr(f, "/lib/python3") || strstr(f, "/lib64/python3");
}

/* §7 mapped files: a sample whose thread is in D state, or took major faults since its
 * previous sample, waits on storage; it is charged to the innermost frame of the program's
 * own code (the line that touched the mapping), else the innermost frame. */
static void fault_sample(sop_sampler *s, int ti, const sop_pysample *p)
{
    thr *t = &s->thrs[ti];
    bool faulted = false;
    if (p->majflt != SOP_NA) {
        faulted = t->last_majflt != SOP_NA && p->majflt > t->last_majflt;
        t->last_majflt = p->majflt;
    }
    if (faulted)
        t->majflt_smp++;
    if (!faulted && p->state != 'D')
        return;
    t->fault_wait++;
    const sop_pyframe *f = NULL;
    for (size_t i = 0; i < p->nframes && i < 256 && !f; i++)
        if (p->frames[i].file && !library_file(p->frames[i].file))
            f = &p->frames[i];
    if (!f && p->nframes > 0)
        f = &p->frames[0];
    if (!f || !f->func || !f->file)
        return;
    char key[384];
    snprintf(key, sizeof key, "%s (%s:%d)", f->func, f->file, f->line);
    count_site(s, ti, SITE_FAULT, key);
}

static bool site_eq(const site *a, const sop_pyframe *f)
{
    if (!f)
        return a->func == NULL;
    return a->func && a->line == f->line && strcmp(a->func, f->func) == 0 &&
           strcmp(a->file, f->file) == 0;
}

static bool site_set(site *a, const sop_pyframe *f)
{
    if (!f)
        return true;
    a->func = strdup(f->func);
    a->file = strdup(f->file);
    a->line = f->line;
    return a->func && a->file;
}

static void site_free(site *a)
{
    free(a->func);
    free(a->file);
}

static uint64_t hash_frame(uint64_t h, const sop_pyframe *f)
{
    if (!f)
        return h * 31u + 7u;
    h = fnv(f->func, (uint32_t)h) ^ (fnv(f->file, (uint32_t)(h >> 32)) * 3u);
    return h * 1099511628211ull + (uint64_t)(unsigned)f->line;
}

static void count_leaf(sop_sampler *s, int ti, const sop_pysample *p, bool active)
{
    if (p->nframes == 0)
        return;
    const sop_pyframe *leaf = &p->frames[0], *caller = NULL, *entry = NULL;
    for (size_t i = 0; i < p->nframes; i++)
        if (!library_file(p->frames[i].file)) {
            caller = &p->frames[i];
            entry = i > 0 ? &p->frames[i - 1] : NULL;
            break;
        }
    uint64_t h = hash_frame(hash_frame(hash_frame((uint64_t)ti + 1, leaf), entry), caller);
    h = h ? h : 1;
    size_t i = h & (LEAF_SLOTS - 1);
    for (size_t n = 0; n < LEAF_SLOTS; n++, i = (i + 1) & (LEAF_SLOTS - 1)) {
        leaf_ent *e = &s->leaves[i];
        if (!e->hash) {
            if (s->nleaves >= LEAF_SLOTS / 2)
                return;
            if (!site_set(&e->leaf, leaf) || !site_set(&e->entry, entry) ||
                !site_set(&e->caller, caller)) {
                site_free(&e->leaf), site_free(&e->entry), site_free(&e->caller);
                memset(e, 0, sizeof *e);
                return;
            }
            e->hash = h;
            e->thr = (uint32_t)ti;
            e->count = 1;
            e->active = active;
            s->nleaves++;
            return;
        }
        if (e->hash == h && e->thr == (uint32_t)ti && site_eq(&e->leaf, leaf) &&
            site_eq(&e->entry, entry) && site_eq(&e->caller, caller)) {
            e->count++;
            e->active += active;
            return;
        }
    }
}

static void on_thread(void *ctx, const sop_pysample *p)
{
    sop_sampler *s = ctx;
    int ti = find_thr(s, s->cur_proc, p->tid, p->name);
    if (ti < 0)
        return;
    thr *t = &s->thrs[ti];
    t->n++;
    s->thread_samples++;
    s->procs[s->cur_proc].samples++;
    bool run = p->state == 'R';
    if (run || p->gil)
        t->active++;
    if (p->gil)
        t->gil++;
    if ((run && !p->gil) || p->gil_wait)
        t->runnable_nogil++;
    if (p->gil_wait)
        t->gil_wait++;
    if (run)
        t->state_r++;
    else if (p->state == 'D')
        t->state_d++;
    else if (p->state == 'S')
        t->state_s++;
    if (p->nframes == 0)
        t->no_frames++;
    if (p->torn) {
        t->torn++;
        s->samples_partial++;
    }
    s->walk_retries += p->retries;
    bool data_wait = false;
    for (size_t i = 0; i < p->nframes && i < 64; i++)
        if (data_wait_frame(&p->frames[i])) {
            t->data_wait++;
            data_wait = true;
            break;
        }
    sop_sample_state st = p->gil            ? SOP_ST_GIL
                          : p->gil_wait     ? SOP_ST_GIL_WAIT
                          : p->state == 'D' ? SOP_ST_DISK
                          : data_wait       ? SOP_ST_BATCH
                          : run             ? SOP_ST_NATIVE
                                            : SOP_ST_IDLE;
    if (s->keep_timeline) {
        if (s->ntimeline == s->timeline_cap && s->timeline_cap < TIMELINE_MAX) {
            size_t cap = s->timeline_cap ? s->timeline_cap * 2 : 4096;
            sop_timeline_ev *g = realloc(s->timeline, cap * sizeof *g);
            if (g) {
                s->timeline = g;
                s->timeline_cap = cap;
            }
        }
        if (s->ntimeline < s->timeline_cap)
            s->timeline[s->ntimeline++] =
                (sop_timeline_ev){(float)(s->now_ms - s->t0_ms), (uint16_t)ti, (uint8_t)st};
    }
    for (size_t i = 0; i < p->nframes && i < 256; i++)
        if (ckpt_frame(&p->frames[i])) {
            t->ckpt++;
            break;
        }
    runtime_sample(s, ti, p);
    fault_sample(s, ti, p);
    loop_sample(s, t, p);
    count_stack(s, ti, p, st);
    count_leaf(s, ti, p, run || p->gil);
}

/* ---- open / run / close -------------------------------------------------------------- */

/* When a process started (epoch seconds), from its stat starttime; NaN if unread. */
static double read_start_time(const char *proc_root, int pid)
{
    char path[256], buf[1024];
    snprintf(path, sizeof path, "%s/%d/stat", proc_root, pid);
    sop_stat st;
    if (sop__read_small_at(AT_FDCWD, path, buf, sizeof buf) <= 0 ||
        sop__parse_stat(buf, &st) != 0 || st.starttime_ticks == SOP_NA)
        return NAN;
    double btime = sop__proc_btime_s();
    return isnan(btime) ? NAN : btime + (double)st.starttime_ticks / sop__proc_ticks_per_s();
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void add_workers(sop_sampler *s, int pid, int depth)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%d/task", s->proc_root, pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *de;
    int kids[64], nk = 0;
    for (int guard = 0; guard < 4096 && (de = readdir(d)) != NULL; guard++) {
        int tid = atoi(de->d_name);
        if (tid <= 0)
            continue;
        char cp[320], buf[1024];
        snprintf(cp, sizeof cp, "%s/%d/children", path, tid);
        if (sop__read_small_at(AT_FDCWD, cp, buf, sizeof buf) <= 0)
            continue;
        const char *q = buf;
        int64_t v;
        while (nk < 64 && (v = sop__parse_i64(&q)) != SOP_NA)
            if (v > 0)
                kids[nk++] = (int)v;
    }
    closedir(d);
    for (int k = 0; k < nk && s->nprocs < SOP_SAMPLER_MAX_PROCS; k++) {
        sop_missing scratch = {0};
        sop_pysampler *ps = NULL;
        if (sop__python_open(kids[k], s->proc_root, &ps, &scratch) == 0) {
            proc_ent *pe = &s->procs[s->nprocs++];
            memset(pe, 0, sizeof *pe);
            pe->pid = kids[k];
            pe->ps = ps;
            read_comm(s->proc_root, kids[k], 0, pe->comm, sizeof pe->comm);
            read_cmdline(s->proc_root, kids[k], pe->cmdline, sizeof pe->cmdline);
            pe->start_time_s = read_start_time(s->proc_root, kids[k]);
            pe->found_at_s = wall_s();
        }
        sop__missing_free(&scratch);
        if (depth < 2)
            add_workers(s, kids[k], depth + 1);
    }
}

static bool read_io(const char *proc_root, int pid, sop_io *out)
{
    char path[256], buf[1024];
    snprintf(path, sizeof path, "%s/%d/io", proc_root, pid);
    if (sop__read_small_at(AT_FDCWD, path, buf, sizeof buf) <= 0)
        return false;
    return sop__parse_io(buf, out) == 0;
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

int sop__sampler_open(int pid, const char *proc_root, const struct sop_pyruntime *rt, bool workers,
                      sop_sampler **out, sop_missing *missing)
{
    *out = NULL;
    sop_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->proc_root = proc_root ? proc_root : "/proc";
    s->thrs = calloc(MAX_THREADS_AGG, sizeof *s->thrs);
    s->stacks = calloc(STACK_SLOTS, sizeof *s->stacks);
    s->sites = calloc(SITES_MAX, sizeof *s->sites);
    s->leaves = calloc(LEAF_SLOTS, sizeof *s->leaves);
    if (!s->thrs || !s->stacks || !s->sites || !s->leaves) {
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
    read_cmdline(s->proc_root, pid, s->procs[0].cmdline, sizeof s->procs[0].cmdline);
    s->nprocs = 1;
    if (workers)
        add_workers(s, pid, 1);
    s->files0 = calloc(FILES_MAX, sizeof *s->files0);
    s->files = calloc(FILES_MAX, sizeof *s->files);
    s->nfiles0 = scan_files(s, s->files0);
    for (int p = 0; p < s->nprocs; p++)
        s->procs[p].have_io0 = read_io(s->proc_root, s->procs[p].pid, &s->procs[p].io0);
    *out = s;
    return 0;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_until(double deadline_ms)
{
    for (int guard = 0; guard < 1000; guard++) {
        double left = sop__now_ms() - deadline_ms;
        if (left >= 0)
            return;
        left = -left;
        struct timespec ts = {(time_t)(left / 1e3), (long)(fmod(left, 1e3) * 1e6)};
        nanosleep(&ts, NULL);
    }
}

/* One tick of the target's GC: the collecting stretch (from its first collecting tick to the
 * first tick it is not collecting, as loop stretches) and the collection counters. */
static void gc_tick(sop_sampler *s)
{
    sop_pygc g;
    if (s->nprocs < 1 || s->procs[0].gone || sop__python_sample_gc(s->procs[0].ps, &g) < 0)
        return;
    double now = s->now_ms;
    s->gc_samples++;
    if (g.collecting == 1) {
        s->gc_collecting++;
        if (!s->gc_in_stretch) {
            s->gc_in_stretch = true;
            s->gc_stretch_t0_ms = now;
        }
    } else if (s->gc_in_stretch) {
        s->gc_in_stretch = false;
        if (now - s->gc_stretch_t0_ms > s->gc_longest_ms)
            s->gc_longest_ms = now - s->gc_stretch_t0_ms;
    }
    if (g.collections[0] != SOP_NA) {
        if (s->gc_first[0] == SOP_NA) {
            memcpy(s->gc_first, g.collections, sizeof s->gc_first);
            s->gc_first_ms = now;
        }
        memcpy(s->gc_last, g.collections, sizeof s->gc_last);
        s->gc_last_ms = now;
    }
}

int sop__sampler_run(sop_sampler *s, double deadline_ms, double rate_hz,
                     sop_sampler_progress progress, void *ctx)
{
    for (int g = 0; g < 3; g++)
        s->gc_first[g] = s->gc_last[g] = SOP_NA;
    if (!(rate_hz > 0))
        rate_hz = 100;
    s->rate_hz = rate_hz;
    double interval = 1e3 / rate_hz, c0 = cpu_ms(), t0 = sop__now_ms();
    s->t0_ms = t0;
    double next = t0, last_progress = t0;
    int rc = 0;
    /* Bounded: one tick per interval until the deadline (plus skipped ones). */
    while (next < deadline_ms) {
        s->now_ms = sop__now_ms();
        bool failed = false;
        for (int p = 0; p < s->nprocs; p++) {
            proc_ent *pe = &s->procs[p];
            if (pe->gone)
                continue;
            s->cur_proc = p;
            int r = sop__python_sample(pe->ps, on_thread, s);
            if (r == -ESRCH) {
                pe->gone = true;
                if (p == 0)
                    rc = -ESRCH;
            } else if (r < 0 && p == 0) {
                failed = true;
            }
        }
        gc_tick(s);
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
            sleep_until(next);
    }
    /* The window is the duration asked for, whatever the rate: the last tick may fall well
     * before the deadline (0.5 Hz over 2 s ticks once, at the start). */
    if (rc != -ESRCH)
        sleep_until(deadline_ms);
    for (int p = 0; p < s->nprocs; p++)
        s->procs[p].have_io1 = read_io(s->proc_root, s->procs[p].pid, &s->procs[p].io1);
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
    for (size_t i = 0; i < s->nthrs; i++)
        end_stretch(&s->thrs[i], end);
    if (s->gc_in_stretch && end - s->gc_stretch_t0_ms > s->gc_longest_ms)
        s->gc_longest_ms = end - s->gc_stretch_t0_ms; /* still collecting at the window's end */
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
    if (s->stacks)
        for (size_t i = 0; i < STACK_SLOTS; i++)
            free(s->stacks[i].stack);
    free(s->stacks);
    free(s->sites);
    if (s->leaves)
        for (size_t i = 0; i < LEAF_SLOTS; i++)
            if (s->leaves[i].hash) {
                site_free(&s->leaves[i].leaf);
                site_free(&s->leaves[i].entry);
                site_free(&s->leaves[i].caller);
            }
    free(s->leaves);
    free(s->thrs);
    free(s->files0);
    free(s->files);
    free(s->timeline);
    free(s);
}

void sop__sampler_stats(const sop_sampler *s, sop_sampler_stats *out)
{
    out->ticks = s->ticks;
    out->missed = s->missed;
    out->thread_samples = s->thread_samples;
    out->samples_partial = s->samples_partial;
    out->walk_retries = s->walk_retries;
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
    sop_stack_count *v = calloc(s->nstacks + 1, sizeof *v);
    if (!v)
        return 0;
    /* Each text (process and thread as roots) is malloc'd; the caller frees each and v. */
    for (size_t i = 0; i < STACK_SLOTS && n < s->nstacks; i++) {
        const stack_ent *e = &s->stacks[i];
        if (!e->stack)
            continue;
        const thr *t = &s->thrs[e->thr];
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
    if (s->other > 0) {
        char *txt = strdup("(stack table full)");
        if (txt) {
            v[n].stack = txt;
            v[n].count = s->other;
            v[n].by_state[SOP_ST_NATIVE] = s->other; /* state unknown: never left out as idle */
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

/* ---- evidence ----------------------------------------------------------------------- */

static double frac(long a, long n)
{
    return n > 0 ? (double)a / (double)n : NAN;
}

/* The most counted site of one kind for a thread, as KEY (text) and KEY_frac (of its samples). */
static void top_site(const sop_sampler *s, size_t ti, int kind, sop_value *w, const char *key,
                     const char *frac_key)
{
    const site_ent *best = NULL;
    for (size_t i = 0; i < s->nsites; i++) {
        const site_ent *e = &s->sites[i];
        if (e->thr == ti && e->kind == kind && (!best || e->count > best->count))
            best = e;
    }
    if (!best)
        return;
    sop__v_set(w, key, sop__bridge_text(best->frame));
    sop__v_set_dbl(w, frac_key, frac(best->count, s->thrs[ti].n));
}

static sop_value *site_value(const sop_sampler *s, const thr *t, const site *a, bool code,
                             int *reads)
{
    sop_value *o = sop__v_obj();
    if (!o)
        return NULL;
    sop__v_set(o, "func", sop__bridge_text(a->func));
    sop__v_set(o, "file", sop__bridge_text(a->file));
    if (a->line >= 0)
        sop__v_set_int(o, "line", a->line);
    char text[192];
    if (code && *reads < SOURCE_READS_MAX) {
        (*reads)++;
        if (sop__source_line(s->proc_root, s->procs[t->proc].pid, a->file, a->line,
                             SOURCE_MAX_BYTES, text, sizeof text) == 0 &&
            text[0])
            sop__v_set(o, "code", sop__bridge_text(text));
    }
    return o;
}

/* The thread's most sampled (leaf, entry, caller) sites, with the source lines of leaf and
 * caller. */
static void thr_leaves(const sop_sampler *s, size_t ti, sop_value *w, int *reads)
{
    const thr *t = &s->thrs[ti];
    const leaf_ent *top[TOP_LEAVES] = {0};
    for (size_t i = 0; i < LEAF_SLOTS; i++) {
        const leaf_ent *e = &s->leaves[i];
        if (!e->hash || e->thr != ti)
            continue;
        for (int k = 0; k < TOP_LEAVES; k++)
            if (!top[k] || e->count > top[k]->count) {
                memmove(&top[k + 1], &top[k], (TOP_LEAVES - 1 - k) * sizeof top[0]);
                top[k] = e;
                break;
            }
    }
    sop_value *arr = top[0] ? sop__v_arr_at(w, "leaves") : NULL;
    for (int k = 0; arr && k < TOP_LEAVES && top[k]; k++) {
        const leaf_ent *e = top[k];
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        sop__v_set_int(o, "count", e->count);
        sop__v_set_int(o, "active", e->active);
        sop__v_set(o, "leaf", site_value(s, t, &e->leaf, true, reads));
        if (e->entry.func)
            sop__v_set(o, "entry", site_value(s, t, &e->entry, false, reads));
        if (e->caller.func)
            sop__v_set(o, "caller", site_value(s, t, &e->caller, e->entry.func != NULL, reads));
        sop__v_push(arr, o);
    }
}

/* Per library entry point (the API the program called): its samples, and how many of them sat
 * at its most sampled innermost site. A heavy kernel concentrates on one line; per-call overhead
 * spreads over the wrapper's lines. */
typedef struct {
    const site *entry;
    long count, active, top_active, sites;
} entry_sum;

static void thr_entries(const sop_sampler *s, size_t ti, sop_value *w)
{
    entry_sum v[64];
    int n = 0;
    for (size_t i = 0; i < LEAF_SLOTS; i++) {
        const leaf_ent *e = &s->leaves[i];
        if (!e->hash || e->thr != ti || !e->entry.func)
            continue;
        int k = 0;
        while (k < n && !(strcmp(v[k].entry->func, e->entry.func) == 0 &&
                          strcmp(v[k].entry->file, e->entry.file) == 0))
            k++;
        if (k == n) {
            if (n == (int)(sizeof v / sizeof v[0]))
                continue;
            memset(&v[n], 0, sizeof v[n]);
            v[n++].entry = &e->entry;
        }
        v[k].count += e->count;
        v[k].active += e->active;
        v[k].sites++;
        if (e->active > v[k].top_active)
            v[k].top_active = e->active;
    }
    sop_value *arr = n ? sop__v_arr_at(w, "entries") : NULL;
    for (int m = 0; arr && m < TOP_LEAVES; m++) { /* the most sampled first */
        int best = -1;
        for (int k = 0; k < n; k++)
            if (v[k].count > 0 && (best < 0 || v[k].count > v[best].count))
                best = k;
        if (best < 0)
            break;
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        sop__v_set(o, "func", sop__bridge_text(v[best].entry->func));
        sop__v_set(o, "file", sop__bridge_text(v[best].entry->file));
        sop__v_set_int(o, "count", v[best].count);
        sop__v_set_int(o, "active", v[best].active);
        sop__v_set_int(o, "top_site_active", v[best].top_active);
        sop__v_set_int(o, "sites", v[best].sites);
        sop__v_push(arr, o);
        v[best].count = 0;
    }
}

/* The thread's whole distribution of samples, for exact shares (plugins/common.lua share()):
 * every distinct stack it was seen in (not only the top ones), its frames interned once:
 * dist = {samples, stored, frames = ["func (file)", ...], stacks = [{count, ids = [root..leaf]}]}
 * (ids are 1-based into frames). `stored` < samples when the stack table was full. */
#define DIST_FRAMES_MAX 4096
#define DIST_FRAME_SLOTS (2 * DIST_FRAMES_MAX)
typedef struct {
    const char *p;
    size_t len;
    int id;
} dist_slot;

static int dist_intern(dist_slot *slots, sop_value *frames, int *nframes, const char *p, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    size_t i = h & (DIST_FRAME_SLOTS - 1);
    for (size_t n = 0; n < DIST_FRAME_SLOTS; n++, i = (i + 1) & (DIST_FRAME_SLOTS - 1)) {
        dist_slot *d = &slots[i];
        if (!d->p) {
            if (*nframes >= DIST_FRAMES_MAX)
                return -1;
            d->p = p;
            d->len = len;
            d->id = ++*nframes;
            sop__v_push(frames, sop__v_strn(p, len));
            return d->id;
        }
        if (d->len == len && memcmp(d->p, p, len) == 0)
            return d->id;
    }
    return -1;
}

static void thr_dist(const sop_sampler *s, size_t ti, sop_value *w)
{
    dist_slot *slots = calloc(DIST_FRAME_SLOTS, sizeof *slots);
    sop_value *d = sop__v_obj();
    if (!slots || !d) {
        free(slots);
        sop__v_free(d);
        return;
    }
    sop_value *frames = sop__v_arr_at(d, "frames"), *stacks = sop__v_arr_at(d, "stacks");
    int nframes = 0;
    long stored = 0;
    bool cut = false;
    for (size_t i = 0; frames && stacks && i < STACK_SLOTS; i++) {
        const stack_ent *e = &s->stacks[i];
        if (!e->stack || e->thr != ti)
            continue;
        sop_value *st = sop__v_obj(), *ids = st ? sop__v_arr_at(st, "ids") : NULL;
        if (!ids) {
            sop__v_free(st);
            break;
        }
        sop__v_set_int(st, "count", e->count);
        for (const char *p = e->stack; *p;) {
            const char *end = strchr(p, ';');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            int id = dist_intern(slots, frames, &nframes, p, len);
            if (id < 0)
                cut = true;
            else
                sop__v_push(ids, sop__v_num(id));
            p += len + (end ? 1 : 0);
        }
        stored += e->count;
        sop__v_push(stacks, st);
    }
    sop__v_set_int(d, "samples", s->thrs[ti].n);
    sop__v_set_int(d, "stored", stored);
    if (cut)
        sop__v_set_bool(d, "frames_cut", true);
    sop__v_set(w, "dist", d);
    free(slots);
}

static sop_value *thr_window(const sop_sampler *s, size_t ti, int *reads)
{
    const thr *t = &s->thrs[ti];
    sop_value *w = sop__v_obj();
    if (!w)
        return NULL;
    sop__v_set_int(w, "samples", t->n);
    sop__v_set_dbl(w, "active_frac", frac(t->active, t->n));
    sop__v_set_dbl(w, "gil_frac", frac(t->gil, t->n));
    sop__v_set_dbl(w, "runnable_nogil_frac", frac(t->runnable_nogil, t->n));
    sop__v_set_dbl(w, "gil_wait_frac", frac(t->gil_wait, t->n));
    sop__v_set_dbl(w, "running_frac", frac(t->state_r, t->n));
    sop__v_set_dbl(w, "io_wait_frac", frac(t->state_d, t->n));
    sop__v_set_dbl(w, "data_wait_frac", frac(t->data_wait, t->n));
    sop__v_set_dbl(w, "checkpoint_frac", frac(t->ckpt, t->n));
    if (t->is_loop)
        sop__v_set_dbl(w, "loop_longest_block_ms", t->longest_ms);
    sop__v_set_dbl(w, "import_frac", frac(t->import, t->n));
    sop__v_set_dbl(w, "logging_frac", frac(t->logging, t->n));
    sop__v_set_dbl(w, "logging_format_frac", frac(t->log_format, t->n));
    sop__v_set_dbl(w, "logging_write_frac", frac(t->log_write, t->n));
    sop__v_set_dbl(w, "subprocess_frac", frac(t->subprocess, t->n));
    sop__v_set_dbl(w, "subprocess_spawn_frac", frac(t->spawn, t->n));
    top_site(s, ti, SITE_IMPORT, w, "import_module", "import_module_frac");
    top_site(s, ti, SITE_LOG, w, "logging_site", "logging_site_frac");
    sop__v_set_dbl(w, "majflt_frac", frac(t->majflt_smp, t->n));
    sop__v_set_dbl(w, "fault_wait_frac", frac(t->fault_wait, t->n));
    top_site(s, ti, SITE_FAULT, w, "fault_site", "fault_site_frac");
    /* top stacks of this thread */
    const stack_ent *top[TOP_STACKS] = {0};
    for (size_t i = 0; i < STACK_SLOTS; i++) {
        const stack_ent *e = &s->stacks[i];
        if (!e->stack || e->thr != ti)
            continue;
        for (int k = 0; k < TOP_STACKS; k++)
            if (!top[k] || e->count > top[k]->count) {
                memmove(&top[k + 1], &top[k], (TOP_STACKS - 1 - k) * sizeof top[0]);
                top[k] = e;
                break;
            }
    }
    sop_value *arr = sop__v_arr_at(w, "top_stacks");
    for (int k = 0; arr && k < TOP_STACKS && top[k]; k++) {
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        sop__v_set_str(o, "stack", top[k]->stack);
        sop__v_set_int(o, "count", top[k]->count);
        sop__v_push(arr, o);
    }
    thr_dist(s, ti, w);
    thr_leaves(s, ti, w, reads);
    thr_entries(s, ti, w);
    return w;
}

static sop_value *find_member(sop_value *obj, const char *key)
{
    for (sop_value *v = obj ? obj->child : NULL; v; v = v->next)
        if (v->key && strcmp(v->key, key) == 0)
            return v;
    return NULL;
}

/* A worker's IO over the window: rates and mean request sizes from /proc/PID/io. */
static void bridge_io(sop_value *o, const proc_ent *pe, double secs)
{
    if (!pe->have_io0 || !pe->have_io1 || !(secs > 0))
        return;
    const sop_io *a = &pe->io0, *b = &pe->io1;
    sop_value *io = sop__v_obj_at(o, "io");
    if (!io)
        return;
    if (b->read_bytes != SOP_NA && a->read_bytes != SOP_NA)
        sop__v_set_dbl(io, "read_bytes_per_s", (double)(b->read_bytes - a->read_bytes) / secs);
    if (b->write_bytes != SOP_NA && a->write_bytes != SOP_NA)
        sop__v_set_dbl(io, "write_bytes_per_s", (double)(b->write_bytes - a->write_bytes) / secs);
    if (b->rchar != SOP_NA && a->rchar != SOP_NA && b->syscr != SOP_NA && a->syscr != SOP_NA) {
        int64_t calls = b->syscr - a->syscr;
        sop__v_set_dbl(io, "rchar_per_s", (double)(b->rchar - a->rchar) / secs);
        sop__v_set_dbl(io, "syscr_per_s", (double)calls / secs);
        if (calls > 0)
            sop__v_set_dbl(io, "mean_read_bytes", (double)(b->rchar - a->rchar) / (double)calls);
    }
    if (b->wchar != SOP_NA && a->wchar != SOP_NA && b->syscw != SOP_NA && a->syscw != SOP_NA) {
        int64_t calls = b->syscw - a->syscw;
        sop__v_set_dbl(io, "wchar_per_s", (double)(b->wchar - a->wchar) / secs);
        sop__v_set_dbl(io, "syscw_per_s", (double)calls / secs);
        if (calls > 0)
            sop__v_set_dbl(io, "mean_write_bytes", (double)(b->wchar - a->wchar) / (double)calls);
    }
}

/* ev.io_files: the files open at the window's end, what they sit on, and the disk behind. */
static void bridge_files(const sop_sampler *s, sop_value *ev)
{
    if (!s->nfiles)
        return;
    sop_value *arr = sop__v_arr_at(ev, "io_files");
    const sop_value *host = find_member(ev, "host");
    const sop_value *disks = host ? sop__v_get(host, "disks") : NULL;
    for (size_t i = 0; arr && i < s->nfiles; i++) {
        const sop_open_file *f = &s->files[i];
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        sop__v_set_int(o, "pid", f->pid);
        sop__v_set_int(o, "fd", f->fd);
        sop__v_set(o, "path", sop__bridge_text(f->path));
        sop__v_set_int(o, "size_bytes", f->size);
        if (f->pos != SOP_NA)
            sop__v_set_int(o, "pos_bytes", f->pos);
        if (f->pos != SOP_NA && f->pos0 != SOP_NA && s->window_s > 0)
            sop__v_set_dbl(o, "advance_bytes_per_s", (double)(f->pos - f->pos0) / s->window_s);
        sop__v_set(o, "mount", sop__bridge_text(f->mountpoint));
        sop__v_set_str(o, "fstype", f->fstype);
        if (f->fstype[0])
            sop__v_set_str(o, "fs_kind", sop__fs_kind(f->fstype));
        sop__v_set(o, "source", sop__bridge_text(f->source));
        sop__v_set_str(o, "disk", f->disk);
        for (const sop_value *d = disks ? disks->child : NULL; d && f->disk[0]; d = d->next) {
            const char *name = sop__v_get_str(d, "name");
            double v;
            if (!name || strcmp(name, f->disk) != 0)
                continue;
            if (sop__v_get_num(d, "util_pct", &v))
                sop__v_set_dbl(o, "disk_util_pct", v);
            if (sop__v_get_num(d, "r_await_ms", &v))
                sop__v_set_dbl(o, "disk_r_await_ms", v);
            if (sop__v_get_num(d, "read_kb_per_s", &v))
                sop__v_set_dbl(o, "disk_read_kb_per_s", v);
        }
        sop__v_push(arr, o);
    }
}

/* ev.python.gc.window: the target's GC over the sampled window. */
/* loop.frames[] {func file line}: the callback's frames of the longest stretch, innermost
 * first (from "func\tfile\tline\n" lines). */
static void loop_frames(sop_value *lp, const char *text)
{
    sop_value *arr = NULL;
    for (const char *p = text; p && *p;) {
        const char *t1 = strchr(p, '\t'), *nl = strchr(p, '\n');
        const char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (!t1 || !t2 || !nl || t2 > nl)
            break;
        if (!arr && !(arr = sop__v_arr_at(lp, "frames")))
            return;
        sop_value *f = sop__v_obj();
        if (!f)
            return;
        sop__v_set(f, "func", sop__v_strn(p, (size_t)(t1 - p)));
        sop__v_set(f, "file", sop__v_strn(t1 + 1, (size_t)(t2 - t1 - 1)));
        sop__v_set_int(f, "line", strtol(t2 + 1, NULL, 10));
        sop__v_push(arr, f);
        p = nl + 1;
    }
}

static void bridge_gc(const sop_sampler *s, sop_value *py)
{
    if (s->gc_samples == 0)
        return;
    sop_value *gc = sop__v_obj_at(py, "gc");
    sop_value *w = gc ? sop__v_obj_at(gc, "window") : NULL;
    if (!w)
        return;
    sop__v_set_int(w, "samples", s->gc_samples);
    sop__v_set_dbl(w, "collecting_frac", frac(s->gc_collecting, s->gc_samples));
    sop__v_set_dbl(w, "longest_collecting_ms", s->gc_longest_ms);
    double secs = (s->gc_last_ms - s->gc_first_ms) / 1e3;
    if (s->gc_first[0] == SOP_NA || !(secs > 0))
        return;
    sop_value *n = sop__v_arr_at(w, "collections");
    sop_value *r = sop__v_arr_at(w, "collections_per_s");
    for (int g = 0; g < 3; g++) {
        int64_t d = s->gc_last[g] - s->gc_first[g];
        sop__v_push(n, sop__v_num((double)d));
        sop__v_push(r, sop__v_num((double)d / secs));
    }
}

void sop__sampler_bridge(const sop_sampler *s, sop_value *ev)
{
    sop_value *smp = sop__v_obj_at(ev, "sampling");
    if (smp) {
        sop__v_set_dbl(smp, "rate_hz", s->rate_hz);
        sop__v_set_int(smp, "samples", s->ticks);
        sop__v_set_int(smp, "missed", s->missed);
        sop__v_set_int(smp, "thread_samples", s->thread_samples);
        sop__v_set_int(smp, "samples_partial", s->samples_partial);
        sop__v_set_int(smp, "walk_retries", s->walk_retries);
        sop__v_set_dbl(smp, "self_cpu_ms", s->self_cpu_ms);
        sop__v_set_dbl(smp, "window_s", s->window_s);
        sop__v_set_int(smp, "processes", s->nprocs);
    }
    bridge_files(s, ev);
    int reads = 0; /* source lines read for this window */
    sop_value *py = find_member(ev, "python");
    if (!py)
        return;
    /* per-thread windows of the target */
    sop_value *threads = find_member(py, "threads");
    for (sop_value *t = threads ? threads->child : NULL; t; t = t->next) {
        double tid;
        if (!sop__v_get_num(t, "tid", &tid))
            continue;
        for (size_t i = 0; i < s->nthrs; i++)
            if (s->thrs[i].proc == 0 && s->thrs[i].tid == (int)tid)
                sop__v_set(t, "window", thr_window(s, i, &reads));
    }
    bridge_gc(s, py);
    /* the event loop that went longest without its selector */
    int best = -1;
    for (size_t i = 0; i < s->nthrs; i++)
        if (s->thrs[i].proc == 0 && s->thrs[i].is_loop &&
            (best < 0 || s->thrs[i].longest_ms > s->thrs[best].longest_ms))
            best = (int)i;
    if (best >= 0) {
        sop_value *lp = sop__v_obj_at(py, "loop");
        if (lp) {
            sop__v_set_int(lp, "tid", s->thrs[best].tid);
            sop__v_set_dbl(lp, "longest_block_ms", s->thrs[best].longest_ms);
            if (s->thrs[best].longest_frame[0])
                sop__v_set_str(lp, "frame", s->thrs[best].longest_frame);
            loop_frames(lp, s->thrs[best].longest_stack);
        }
    }
    if (s->nprocs < 2)
        return;
    /* workers: CPython descendants sampled with the target */
    sop_value *wk = sop__v_arr_at(py, "workers");
    long wn = 0, wr = 0, wd = 0, ws = 0;
    for (int p = 1; wk && p < s->nprocs; p++) {
        const proc_ent *pe = &s->procs[p];
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        sop__v_set_int(o, "pid", pe->pid);
        sop__v_set(o, "comm", sop__bridge_text(pe->comm));
        sop__v_set(o, "cmdline", sop__bridge_text(pe->cmdline));
        sop_value *ta = sop__v_arr_at(o, "threads");
        for (size_t i = 0; i < s->nthrs; i++) {
            const thr *t = &s->thrs[i];
            if (t->proc != p)
                continue;
            sop_value *to = sop__v_obj();
            if (!to)
                break;
            sop__v_set_int(to, "tid", t->tid);
            sop__v_set_str(to, "name", t->name);
            sop__v_set(to, "window", thr_window(s, i, &reads));
            sop__v_push(ta, to);
        }
        /* the process's main thread (tid == pid) says what the worker does */
        for (size_t i = 0; i < s->nthrs; i++) {
            const thr *t = &s->thrs[i];
            if (t->proc == p && t->tid == pe->pid) {
                sop__v_set_dbl(o, "cpu_frac", frac(t->state_r, t->n));
                sop__v_set_dbl(o, "io_frac", frac(t->state_d, t->n));
                sop__v_set_dbl(o, "idle_frac", frac(t->n - t->state_r - t->state_d, t->n));
                wn += t->n, wr += t->state_r, wd += t->state_d,
                    ws += t->n - t->state_r - t->state_d;
            }
        }
        sop__v_set_int(o, "samples", pe->samples);
        /* its age when the window started (a worker re-created later is another process) */
        sop__v_set_dbl(o, "start_time_s", pe->start_time_s);
        if (!isnan(pe->start_time_s) && pe->found_at_s >= pe->start_time_s)
            sop__v_set_dbl(o, "age_s", pe->found_at_s - pe->start_time_s);
        if (pe->gone)
            sop__v_set_bool(o, "exited", true);
        /* how it was started: fork children keep the parent's command line */
        const char *how = strstr(pe->cmdline, "multiprocessing.spawn")        ? "spawn"
                          : strstr(pe->cmdline, "multiprocessing.forkserver") ? "forkserver"
                          : strcmp(pe->cmdline, s->procs[0].cmdline) == 0     ? "fork"
                                                                              : NULL;
        sop__v_set_str(o, "start_method", how);
        bridge_io(o, pe, s->window_s);
        /* IO over the window, from ev.children (the process probe's rates) */
        const sop_value *kids = find_member(ev, "children");
        for (const sop_value *k = kids ? kids->child : NULL; k; k = k->next) {
            double kp, v;
            if (!sop__v_get_num(k, "pid", &kp) || (int)kp != pe->pid)
                continue;
            if (sop__v_get_num(k, "read_bytes_per_s", &v))
                sop__v_set_dbl(o, "read_bytes_per_s", v);
            if (sop__v_get_num(k, "rchar_per_s", &v))
                sop__v_set_dbl(o, "rchar_per_s", v);
            if (sop__v_get_num(k, "cpu_pct", &v))
                sop__v_set_dbl(o, "cpu_pct", v);
            const sop_value *env = sop__v_get(k, "env"); /* allow-listed tuning variables */
            sop_value *oe = env && env->child ? sop__v_obj_at(o, "env") : NULL;
            for (const sop_value *e = env ? env->child : NULL; oe && e; e = e->next)
                if (e->key && sop__v_get_str(env, e->key))
                    sop__v_set_str(oe, e->key, sop__v_get_str(env, e->key));
        }
        sop__v_push(wk, o);
    }
    /* the consumer side: the target's main thread waiting for batches */
    sop_value *ld = sop__v_obj_at(py, "loader");
    if (!ld)
        return;
    sop__v_set_int(ld, "workers", s->nprocs - 1);
    double eff;
    if (sop__v_get_num(ev, "effective_cpus", &eff) && eff > 0)
        sop__v_set_dbl(ld, "workers_per_cpu", (double)(s->nprocs - 1) / eff);
    for (size_t i = 0; i < s->nthrs; i++) {
        const thr *t = &s->thrs[i];
        if (t->proc == 0 && t->tid == s->procs[0].pid)
            sop__v_set_dbl(ld, "main_data_wait_frac", frac(t->data_wait, t->n));
    }
    sop__v_set_dbl(ld, "workers_cpu_frac", frac(wr, wn));
    sop__v_set_dbl(ld, "workers_io_frac", frac(wd, wn));
    sop__v_set_dbl(ld, "workers_idle_frac", frac(ws, wn));
}

/* ---- timeline ------------------------------------------------------------------------ */

void sop__sampler_keep_timeline(sop_sampler *s)
{
    s->keep_timeline = true;
}

size_t sop__sampler_timeline(const sop_sampler *s, const sop_timeline_ev **out)
{
    *out = s->timeline;
    return s->ntimeline;
}

size_t sop__sampler_threads(const sop_sampler *s, sop_thread_info **out)
{
    *out = calloc(s->nthrs + 1, sizeof **out);
    if (!*out)
        return 0;
    for (size_t i = 0; i < s->nthrs; i++) {
        const thr *t = &s->thrs[i];
        const proc_ent *pe = &s->procs[t->proc];
        (*out)[i] = (sop_thread_info){pe->pid, t->tid, t->proc, pe->comm, t->name};
    }
    return s->nthrs;
}
