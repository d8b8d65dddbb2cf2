/* sampler.h — watching a window: tick at a rate, sample every thread's Python stack (and its
 * CPython descendants', e.g. DataLoader workers) with the python probe's sampler, aggregate per
 * thread (activity, GIL, runnable-without-GIL, top stacks, asyncio loop stretches). Used by
 * engine/collect/collect.c (evidence) and engine/api/record.c (collapsed stacks, flame graphs). */
#ifndef SOP_SAMPLER_H
#define SOP_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "missing.h"
#include "value.h"

#define SOP_SAMPLER_MAX_PROCS 33 /* the target and up to 32 CPython descendants */

typedef struct sop_sampler sop_sampler;
struct sop_pyruntime;

typedef void (*sop_sampler_progress)(void *ctx, double done_frac, long ticks);

/* Find the CPython runtime of pid (and, with workers, of its CPython descendants); `rt`, when
 * not NULL, is pid's runtime found already for this collection (py_runtime.h), used while it
 * still describes the process. Returns 0, or the python probe's error for pid itself
 * (-ENOEXEC when not CPython). */
int sop__sampler_open(int pid, const char *proc_root, const struct sop_pyruntime *rt, bool workers,
                      sop_sampler **out, sop_missing *missing);
/* Sample at rate_hz until the monotonic deadline (sop__now_ms). Returns 0, or -ESRCH when the
 * target exited (what was sampled is kept). */
int sop__sampler_run(sop_sampler *s, double deadline_ms, double rate_hz,
                     sop_sampler_progress progress, void *ctx, const volatile int *stop);
/* (The window as its evidence reads it: sop__sampler_window, sample_window.h.) */

/* Every (thread, stack) seen, root first: "pid 12 (python3);tid 12 (python3);f (a.py);g (b.py)"
 * and its count. The pointers stay valid until close. Returns the number of entries. */
/* What a thread was doing in one sample: holding the GIL (running Python), waiting for it, in
 * native code (running without the GIL), in D state (disk), waiting for a DataLoader batch or a
 * multiprocessing queue, idle (asleep without the GIL), or waiting for the GPU (a process with
 * GPU device files open, without the GIL, in the driver or at a line that waits for the device:
 * engine/sample/sample_agg.c, docs/gpu-wait.md). */
typedef enum {
    SOP_ST_GIL,
    SOP_ST_GIL_WAIT,
    SOP_ST_NATIVE,
    SOP_ST_DISK,
    SOP_ST_BATCH,
    SOP_ST_IDLE,
    SOP_ST_GPU,
    SOP_ST_N
} sop_sample_state;
typedef struct {
    const char *stack;
    long count;
    long by_state[SOP_ST_N]; /* count split by state; idle = SOP_ST_IDLE + SOP_ST_BATCH */
} sop_stack_count;
size_t sop__sampler_stacks(const sop_sampler *s, sop_stack_count **out); /* *out malloc'd */

typedef struct {
    long ticks;           /* ticks taken */
    long missed;          /* ticks skipped because sampling overran, or that failed */
    long thread_samples;  /* (tick, thread) samples: the collapsed counts add up to this */
    long samples_partial; /* of those, stacks not verified complete (docs/python-stacks.md) */
    long walk_retries;    /* re-reads (snapshots) the verification took */
    double rate_hz;
    double self_cpu_ms; /* CPU time sopctl spent sampling */
    double window_s;
} sop_sampler_stats;
void sop__sampler_stats(const sop_sampler *s, sop_sampler_stats *out);

/* Collapsed stacks: one "frame;frame;frame count" line per stack. Returns 0 or -errno. */
int sop__sampler_write_collapsed(const sop_sampler *s, FILE *f);
void sop__sampler_close(sop_sampler *s);
/* Whether a sampled thread of the target ran asyncio so far (a frame of asyncio's or uvloop's
 * package on its stack): its tasks are worth reading (engine/collect/collect_tasks.c). */
bool sop__sampler_saw_asyncio(const sop_sampler *s);

/* The timeline: call keep_timeline before run to keep every (time, thread, state) sample (up
 * to 4 Mi of them); threads lists the threads the thr indices name (*out malloc'd, strings
 * valid until close). */
typedef struct {
    float t_ms; /* since the window's start */
    uint16_t thr;
    uint8_t state; /* sop_sample_state */
    uint8_t task;  /* an event loop's thread inside a callback: 1 + the index of the coroutine
                    * (sop__sampler_task_names) the callback ran; 0 otherwise */
} sop_timeline_ev;
typedef struct {
    int pid, tid;
    int proc; /* 0: the target; > 0: a CPython descendant (a worker) */
    const char *comm, *name;
} sop_thread_info;
void sop__sampler_keep_timeline(sop_sampler *s);
size_t sop__sampler_timeline(const sop_sampler *s, const sop_timeline_ev **out);
size_t sop__sampler_threads(const sop_sampler *s, sop_thread_info **out);
/* The coroutines the timeline's task bytes name ("func (file)", the outermost frame of the
 * task's callback; up to SOP_AGG_TASK_NAMES, later ones share the last slot, "other"). */
size_t sop__sampler_task_names(const sop_sampler *s, const char *const **out);
#endif
