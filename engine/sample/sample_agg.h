/* sample_agg.h — the aggregation of a sampled window, pure: samples and times come in, counts
 * come out — per thread (activity, GIL, OS states, §7 faults, §8 imports / logging / subprocess),
 * stacks with counts split by state, (leaf, entry, caller) sites, asyncio loop stretches, the
 * target's GC and the timeline. No /proc, no clock: engine/sample/sampler.c feeds it,
 * bridge/window.c reads it, tests/unit/test_sample_agg.c feeds it made-up samples. Depends on
 * probes/python/cpython.h (sop_pysample, sop_pygc), sampler.h and sampler_runtime.c. */
#ifndef SOP_SAMPLE_AGG_H
#define SOP_SAMPLE_AGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python/cpython.h"
#include "sampler.h"

#define SOP_AGG_MAX_THREADS 4096
#define SOP_AGG_STACK_SLOTS (1u << 16)  /* power of two; at most half filled */
#define SOP_AGG_STACK_MAX_BYTES 16384   /* one stack's text; longer ones are cut at the root side */
#define SOP_AGG_TASK_NAMES 32           /* coroutines named in the timeline (the last: "other") */
#define SOP_AGG_TIMELINE_MAX (4u << 20) /* thread samples kept for a timeline (8 bytes each) */
#define SOP_AGG_LOOP_CAND 16            /* candidate frames tracked in one loop stretch */
#define SOP_AGG_LOOP_STACK_BYTES 1536   /* frames of the longest loop stretch kept */
#define SOP_AGG_SITES_MAX 1024          /* (thread, kind, frame) counters: import / logging sites */
#define SOP_AGG_LEAF_SLOTS (1u << 14)   /* (leaf, entry, caller) sites over all threads */
#define SOP_AGG_LINE_SLOTS 4096u        /* (process, file, line) -> "waits for the GPU" answers */
/* A sample "touches fresh memory" when the thread took at least this many minor faults since
 * its previous sample: 256 KiB of pages first written (a new buffer being filled), far above the
 * stray fault of the interpreter's own allocations. */
#define SOP_AGG_FRESH_PAGES 64
#define SOP_AGG_TICK_THREADS 256 /* the target's threads held for one tick's cross-thread view */
#define SOP_AGG_TICK_FUNCS 64    /* functions of one thread's stack compared with a lock site */
#define SOP_AGG_LOCKS_MAX 32     /* lock sites tracked over the window */
#define SOP_AGG_LOCK_TIDS 64     /* distinct waiters counted per lock site */
#define SOP_AGG_LOCK_HOLDERS 4   /* distinct holder frames counted per lock site */

typedef struct {
    char frame[384];
    long count;
} sop_agg_cand;

typedef struct {
    int proc; /* index of the process (0: the target) given by the caller */
    int tid;
    char name[64]; /* threading name, else comm of the task */
    long n, active, gil, runnable_nogil, gil_wait, state_r, state_d, state_s, no_frames, torn;
    long futex_wait;      /* asleep in a futex that is not the GIL's (lock, condition, queue) */
    long waits[SOP_WC_N]; /* its samples asleep, by what the syscall waits on (wait_class.h) */
    bool wanted_gil;      /* held or waited for the GIL at some tick */
    /* consecutive active samples (holding the GIL, or running without it) between which the
     * thread ran (its CPU time advanced), and of those, pairs whose GIL state differs: a thread
     * alternating between Python and short native calls changes state from one sample to the
     * next as often as chance makes it; a long native kernel stays */
    int prev_st; /* 0: none or idle, 1: holding the GIL, 2: running without it */
    int64_t prev_cpu;
    long alt_pairs, alts;
    /* of its samples running without the GIL, those looked at again RECHECK_MS later
     * (sampler.c), and of those, the ones where it held the GIL again; the same for its samples
     * holding the GIL, and the ones where it still held it. Native calls and Python stretches of
     * µs: the two shares alike (its GIL share); kernels of ms: far apart */
    long rechecks, recheck_gil, held_rechecks, held_kept;
    long data_wait;      /* in a DataLoader / multiprocessing queue wait */
    long gpu_wait;       /* waiting for the GPU (SOP_ST_GPU) */
    long ckpt;           /* in torch.save / torch.load / pickle */
    long majflt_smp;     /* samples after which the thread's major faults had risen */
    long fault_wait;     /* ... or in D state: waiting on storage (mapped file pages or reads) */
    int64_t last_majflt; /* SOP_NA until the first sample read it */
    long fresh_smp;      /* samples after which it had touched >= SOP_AGG_FRESH_PAGES new pages */
    int64_t fresh_pages; /* minor faults summed over the samples (from its second sample on) */
    int64_t last_minflt; /* SOP_NA until the first sample read it */
    long import, logging, log_format, log_write, subprocess, spawn; /* sampler_runtime.h */
    long coll;    /* in a collective of the distributed package */
    long own;     /* outside collectives, in a frame of the program's own code */
    bool coll_in; /* the current run of samples in one collective */
    double coll_t0_ms, coll_longest_ms;
    char coll_cur[128];
    bool is_loop;
    bool runs_asyncio; /* a frame of asyncio's or uvloop's package was on its stack */
    /* the current stretch away from the selector */
    bool in_stretch;
    double stretch_t0_ms, stretch_last_ms;
    sop_agg_cand cur[SOP_AGG_LOOP_CAND];
    int ncur;
    /* the longest one */
    double longest_ms;
    char longest_frame[384];
    char stretch_cb[256];  /* the callback the current stretch is in (its outermost own frame) */
    uint64_t stretch_obj;  /* and its Handle (sop_pyframe.obj; 0 when unread): one coroutine
                            * resumed again and again (a keep-alive connection's handler) is a
                            * new callback each time, with a new Handle */
    uint64_t stretch_turn; /* and the loop's turn (_run_once's sop_pyframe.obj; 0: unread): a
                            * new Handle may reuse the address of the one before */
    /* the callback's frames (innermost first, "func\tfile\tline\n" each) of a sample at the
     * stretch's most seen frame, and of the longest stretch: rules pick the user's own frame */
    char stretch_stack[SOP_AGG_LOOP_STACK_BYTES], longest_stack[SOP_AGG_LOOP_STACK_BYTES];
} sop_agg_thread;

/* One distinct (thread, stack): "f (a.py);g (b.py)" root first. */
typedef struct {
    uint64_t hash;
    uint32_t thr;
    char *stack; /* NULL: a free slot */
    long count;
    long by_state[SOP_ST_N]; /* the count split by sop_sample_state */
} sop_agg_stack;

/* How often one thread was seen importing one module / logging from one call site / waiting on
 * storage at one line / waiting for the GPU at one line / waiting in one collective / running one
 * line of its own code. */
enum {
    SOP_AGG_SITE_IMPORT,
    SOP_AGG_SITE_LOG,
    SOP_AGG_SITE_FAULT,
    SOP_AGG_SITE_GPU,
    SOP_AGG_SITE_COLL, /* the collective (innermost distributed-package function) */
    SOP_AGG_SITE_OWN   /* outside collectives: the innermost frame of the program's own code */
};
typedef struct {
    uint32_t thr;
    int kind;
    char frame[384];
    long count;
} sop_agg_site;

/* The text of line `line` of `file` as process index `proc` sees it, into out (cap bytes);
 * returns 0, or < 0 when it cannot be read (engine/sample/sampler.c reads the target's source). */
typedef int (*sop_agg_line_fn)(void *ctx, int proc, const char *file, int line, char *out,
                               size_t cap);
typedef struct {
    uint64_t key; /* 0: a free slot */
    bool sync;
} sop_agg_line;

/* One Python frame, owned copy (func NULL: none). */
typedef struct {
    char *func, *file;
    int line;
} sop_agg_frame;

/* Where a thread's samples were: the innermost frame (leaf), the innermost frame of the
 * program's own code (caller) and the library frame it called (entry: the API it entered). */
typedef struct {
    uint64_t hash; /* 0: a free slot */
    uint32_t thr;
    sop_agg_frame leaf, entry, caller;
    long count, active;
    long fresh;          /* samples at the site that touched fresh memory (SOP_AGG_FRESH_PAGES) */
    int64_t fresh_pages; /* minor faults charged to the site (taken since the previous sample) */
} sop_agg_leaf;

/* One thread of the target as seen at the current tick (sop__agg_tick compares them). */
typedef struct {
    uint32_t thr;
    bool gil, gil_wait, run, waits; /* waits: asleep in a futex that is not the GIL's */
    uint64_t addr;                  /* the futex word it waits on */
    uint64_t site;      /* hash of its innermost own frame (func, file, line); 0: none */
    uint64_t site_func; /* hash of that frame's (func, file) */
    uint64_t funcs[SOP_AGG_TICK_FUNCS]; /* hash of (func, file) of its frames, innermost first */
    int nfuncs;
    char site_txt[384]; /* "func (file:line)" of that frame */
    char leaf_txt[384]; /* "func (file:line)" of its innermost frame */
} sop_agg_tick_thr;

/* A lock site: the innermost own frame (a `with lock:` line, an acquire() call, or the call into
 * a library that locks) at which threads of the target were seen asleep in a futex, and what the
 * other threads did at those ticks. Inside: a thread not waiting there whose stack holds the
 * site's function (it got past the acquire: the holder, when it is alone); a thread at the same
 * site and innermost frame that is not asleep (just woken, or about to sleep) is neither. */
typedef struct {
    uint64_t site, site_func;
    char site_txt[384];
    long ticks; /* ticks with at least one waiter there */
    long waiter_sum, waiter_max;
    long held;        /* of those ticks: exactly one thread inside (mutual exclusion) */
    long crowded;     /* more than one thread inside (not a mutex: a queue, a pool) */
    long holder_run;  /* the one inside running (R) or holding the GIL */
    long held_native; /* of the held ticks: the one inside at the waiters' own call, outside Python
                       * (a library call holding its own lock, the GIL released) */
    long multi;       /* ticks with at least two waiters there */
    long one_word;    /* of those, ticks with most waiters asleep on one futex word (one
                       * mutex; a Condition/queue gives each waiter its own) */
    int tids[SOP_AGG_LOCK_TIDS];
    int ntids;
    struct {
        char frame[384]; /* "leaf (file:line)" or "own (file:line) > leaf (file:line)" */
        long count;
    } holders[SOP_AGG_LOCK_HOLDERS];
    int nholders;
} sop_agg_lock;

typedef struct sop_agg {
    sop_agg_thread *thrs; /* SOP_AGG_MAX_THREADS */
    size_t nthrs;
    sop_agg_stack *stacks; /* SOP_AGG_STACK_SLOTS, open addressing */
    size_t nstacks;
    /* the slots taken, in the order they were (stacks: SOP_AGG_STACK_SLOTS / 2 entries, leaves
     * SOP_AGG_LEAF_SLOTS / 2): the queries walk these, not the tables (5.8 MB and 4 MB, mostly
     * empty pages that a walk would map, once per thread) */
    uint32_t *stack_used, *leaf_used;
    struct sop_agg_by_thread *by_thr; /* the queries' index of them (sample_agg_query.c) */
    long other;                       /* samples not stored because the stack table was full */
    sop_agg_leaf *leaves;             /* SOP_AGG_LEAF_SLOTS, open addressing */
    size_t nleaves;
    sop_agg_site *sites; /* SOP_AGG_SITES_MAX */
    size_t nsites;
    long thread_samples;
    long samples_partial, walk_retries; /* thread samples whose stack was not verified whole */
    long proc_samples[SOP_SAMPLER_MAX_PROCS]; /* thread samples per process index */
    /* GPU waits: which processes use a GPU (sop__agg_gpu_proc), the source line reader, and its
     * answers per (process, file, line) */
    bool proc_gpu[SOP_SAMPLER_MAX_PROCS];
    sop_agg_line_fn line_fn;
    void *line_ctx;
    sop_agg_line *lines; /* SOP_AGG_LINE_SLOTS, allocated with the first line asked */
    size_t nlines;
    /* the target's GC over the window (main interpreter) */
    long gc_samples, gc_collecting;
    bool gc_in_stretch;
    double gc_stretch_t0_ms, gc_longest_ms;
    int64_t gc_first[3], gc_last[3]; /* generation_stats collections at the first/last tick */
    double gc_first_ms, gc_last_ms;
    /* the GIL's switch_number at the first and last tick that read it, and its interval;
     * gil_sw_backs: reads below the one before (the counter only grows: it was written) */
    int64_t gil_sw_first, gil_sw_last, gil_interval_us;
    double gil_sw_first_ms, gil_sw_last_ms;
    long gil_sw_backs;
    /* the cross-thread view per tick (sop__agg_tick): the target's threads at this tick, the
     * GIL concurrency and the lock sites over the window */
    sop_agg_tick_thr *tick; /* SOP_AGG_TICK_THREADS */
    size_t ntick;
    long conc_ticks, conc_wanting_sum, conc_wanting_max, conc_contended, conc_ge2,
        conc_runnable_sum;
    sop_agg_lock *locks; /* SOP_AGG_LOCKS_MAX */
    size_t nlocks;
    /* with sop__agg_keep_timeline: one per thread sample */
    bool keep_timeline;
    sop_timeline_ev *timeline;
    size_t ntimeline, timeline_cap;
    char *task_names[SOP_AGG_TASK_NAMES]; /* the coroutines the events' task bytes name */
    size_t ntask_names;
    double t0_ms;
    char buf[SOP_AGG_STACK_MAX_BYTES];
} sop_agg;

/* NULL when out of memory. The caller frees with sop__agg_free (NULL accepted). */
sop_agg *sop__agg_new(void);
void sop__agg_free(sop_agg *a);
void sop__agg_keep_timeline(sop_agg *a);
/* The window starts at t0_ms (timeline times are relative to it). */
void sop__agg_start(sop_agg *a, double t0_ms);

/* Process index `proc` has GPU device files open: its threads' samples may be GPU waits. */
void sop__agg_gpu_proc(sop_agg *a, int proc, bool uses_gpu);
/* How the source lines of a GPU process's samples are read (NULL: never; then only the
 * driver syscall tells a GPU wait). */
void sop__agg_line_reader(sop_agg *a, sop_agg_line_fn fn, void *ctx);

/* The thread (proc, tid): its index, or -1 when not seen yet. */
int sop__agg_find_thread(const sop_agg *a, int proc, int tid);
/* Add (proc, tid) named `name` (';' and newlines become ':', it is a frame of the collapsed
 * stacks). Returns its index, or -1 when SOP_AGG_MAX_THREADS are there already. */
int sop__agg_add_thread(sop_agg *a, int proc, int tid, const char *name);
/* One thread sample of thread ti taken at now_ms. */
void sop__agg_sample(sop_agg *a, int ti, const sop_pysample *p, double now_ms);
/* The end of one tick (every thread of the target sampled once since the previous call): the
 * threads wanting the GIL at once, and the lock sites, are counted across threads. */
void sop__agg_tick(sop_agg *a);
/* One tick of the target's GC state. */
void sop__agg_gc(sop_agg *a, const sop_pygc *g, double now_ms);
/* A thread seen holding the GIL (held_gil) or running without it at this tick, looked at
 * again: holds_gil when it holds it then (sop__python_recheck). */
void sop__agg_recheck(sop_agg *a, int ti, bool held_gil, bool holds_gil);
/* The window ended at end_ms: close open loop and GC stretches. */
void sop__agg_finish(sop_agg *a, double end_ms);

/* The queries' index (sample_agg_query.c): made with the aggregation, freed with it. */
struct sop_agg_by_thread *sop__agg_by_thread_new(void);
void sop__agg_by_thread_free(struct sop_agg_by_thread *x);

/* ---- queries (pure: the index they build is a cache of the tables) ---- */
/* The slots of thread ti's stacks / (leaf, entry, caller) sites, in table order, into *slots
 * (valid until the next sample); returns how many. One pass over the taken slots builds the
 * index for every thread. */
size_t sop__agg_thread_stacks(const sop_agg *a, size_t ti, const uint32_t **slots);
size_t sop__agg_thread_leaves(const sop_agg *a, size_t ti, const uint32_t **slots);
/* Every stack's slot in table order (a->nstacks of them), into *slots; returns how many. */
size_t sop__agg_all_stacks(const sop_agg *a, const uint32_t **slots);
/* The n most counted stacks / (leaf, entry, caller) sites of thread ti, most first (ties in table
 * order) into top[0..n); returns how many. */
int sop__agg_top_stacks(const sop_agg *a, size_t ti, const sop_agg_stack **top, int n);
int sop__agg_top_leaves(const sop_agg *a, size_t ti, const sop_agg_leaf **top, int n);
/* The most counted site of `kind` (SOP_AGG_SITE_*) of thread ti, NULL when none. */
const sop_agg_site *sop__agg_top_site(const sop_agg *a, size_t ti, int kind);
/* Samples of thread ti stored in the stack table (== its samples unless the table was full). */
long sop__agg_stored(const sop_agg *a, size_t ti);

/* Per library entry point (the API the program called) of thread ti: its samples, and how many
 * of them sat at its most sampled innermost site (a heavy kernel concentrates on one line;
 * per-call overhead spreads over the wrapper's lines). At most n, most sampled first (of the
 * first 64 distinct entries met). */
typedef struct {
    const sop_agg_frame *entry;
    long count, active, top_active, sites;
} sop_agg_entry;
int sop__agg_entries(const sop_agg *a, size_t ti, sop_agg_entry *out, int n);

/* Samples of one thread by OS state: n, running (R), io (D), idle (the rest). */
typedef struct {
    long n, running, io, idle;
} sop_agg_states;
/* Thread (proc, tid)'s states; false (out zeroed) when it was never sampled. */
bool sop__agg_thread_states(const sop_agg *a, int proc, int tid, sop_agg_states *out);

#endif
