/* cpython.h — the CPython probe: find the interpreter of a process from outside (ELF symbols,
 * _PyRuntime, version; _Py_DebugOffsets on 3.13+, per-version layouts for 3.8-3.12) and walk
 * interpreters -> thread states -> frames without stopping the target; with SOP_PY_NATIVE,
 * also native stacks via libunwind-ptrace (probes/python/native.c is its only home). Finding
 * the runtime is py_runtime.c, the walk py_walk.c, repeated sampling py_sample.c.
 * Depends on libc (and libunwind in native.c). */
#ifndef SOP_PYTHON_H
#define SOP_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../missing.h"
#include "../wait_class.h"
#include "py_layouts.h"
#include "py_runtime.h"
#include "remote_mem.h"

#define SOP_PY_NATIVE 0x1u  /* interrupt each thread briefly and unwind its native stack */
#define SOP_PY_SKIP_GC 0x2u /* leave the GC state out (counting frozen objects walks a list) */
/* Don't read each thread's OS state: `active` then only says "holds the GIL"; the caller, which
 * has read task/TID/stat already, sets it from its own reading (engine/collect/collect.c). */
#define SOP_PY_SKIP_OS_STATE 0x4u
#define SOP_PY_SKIP_FROZEN 0x8u /* read the GC state but do not count frozen objects */
#define SOP_PY_ALL_TASKS 0x10u  /* also list the tasks that run no Python (py->others) */
/* A thread whose stack could not be verified without stopping is stopped briefly
 * (PTRACE_SEIZE + PTRACE_INTERRUPT), walked, and let go; its pause is in pause_ms. */
#define SOP_PY_EXACT 0x20u

typedef struct {
    const char *func; /* qualified name where the version has it (owned by the sop_python) */
    const char *file; /* (owned by the sop_python) */
    int line;         /* -1 when unknown */
    bool entry;       /* last frame of one run of the evaluator (an entry / shim boundary):
                       * where one _PyEval_EvalFrameDefault C frame ends, for --native merging */
    uint64_t obj;     /* which one, where the frame says: asyncio's Handle._run, the Handle it
                       * runs (its first local), which tells one callback from the next;
                       * BaseEventLoop._run_once, the bits of its end_time (a float of the
                       * monotonic clock set each turn), which tells one turn of the loop from
                       * the next; 0 for other frames or unread */
} sop_pyframe;

typedef struct {
    char func[128];
    char lib[128]; /* basename of the mapped object */
    uint64_t ip;
    int py_index; /* >= 0: this entry is the Python frame frames[py_index] of the thread,
                   * merged in place of the evaluator; -1: a native frame */
} sop_nframe;

typedef struct {
    int tid;            /* OS thread id; 0 when unknown */
    uint64_t thread_id; /* pthread id (threading.get_ident()) */
    char name[64];      /* threading.Thread._name; "MainThread" for the process's first
                         * thread; else /proc/PID/task/TID/comm (name_from_comm) */
    bool name_from_comm;
    int64_t interp_id;   /* PyInterpreterState.id: 0 the main interpreter, -1 unreadable */
    bool tid_from_stack; /* a subinterpreter's borrowed thread state (3.8-3.12): its OS thread
                          * found by the stack that refers to it (or 0 when none does) */
    bool active;         /* OS state R (running / runnable) or holding the GIL */
    char os_state;       /* /proc/PID/task/TID/stat letter, read before any --native stop;
                          * '?' when unknown */
    bool gil;            /* holds the GIL */
    sop_pyframe *frames; /* innermost first */
    size_t nframes;
    bool truncated; /* more frames than the bound */
    bool partial;   /* not verified complete: frames of the last walk, maybe cut short */
    char partial_reason[160];
    int walk_retries;   /* walks after the first (each a new snapshot of the chain) */
    sop_nframe *native; /* with SOP_PY_NATIVE; innermost first, Python frames merged in */
    size_t nnative;
    char native_error[160];
    double pause_ms; /* with SOP_PY_NATIVE or a stop of SOP_PY_EXACT: how long this thread
                      * was stopped; else 0 */
    bool stopped;    /* SOP_PY_EXACT stopped it for its walk */
} sop_pythread;

/* An OS thread of the process that runs no Python (a C extension's thread, a runtime's
 * helper): its name (/proc/PID/task/TID/comm) and state letter. */
typedef struct {
    int tid;
    char name[64];
    char os_state;      /* '?' when unreadable; read before any --native stop */
    sop_nframe *native; /* with SOP_PY_NATIVE: its native stack, innermost first */
    size_t nnative;
    char native_error[160];
    double pause_ms;
} sop_ostask;

typedef struct sop_python {
    char version[32]; /* "3.11.7" */
    char executable[512];
    char libpython[512];    /* "" for static builds */
    char layout[32];        /* where the offsets came from: "table 3.11", "_Py_DebugOffsets" */
    int64_t gil_holder_tid; /* SOP_NA (INT64_MIN) when unknown / none */
    bool finalizing;        /* the runtime is shutting down (_PyRuntime._finalizing set) */
    /* GC state: SOP_NA where not readable */
    int64_t gc_enabled, gc_collecting, gc_threshold[3], gc_count[3], gc_frozen;
    int64_t gc_collections[3]; /* collections of each generation since start (generation_stats) */
    sop_pythread *threads;
    size_t nthreads;
    sop_ostask *others; /* tasks of the process with no Python thread state */
    size_t nothers;
    long walk_retries;             /* sum over the threads */
    long threads_partial;          /* threads whose stack is partial */
    struct sop_pystrings *strings; /* owns the frames' func/file text */
} sop_python;

/* Read the CPython state of `pid`. proc_root is "/proc" (a fixture root in tests). Returns 0,
 * -ENOEXEC when not CPython, -ENOTSUP for an unsupported version (reason in `missing`),
 * -ESRCH when gone, -EPERM / -EACCES when memory cannot be read. Partial results (a thread
 * whose walk tore twice, native stacks refused) come back with reasons in `missing`.
 * *out is owned by the caller (sop__python_free). */
int sop__python_collect(int pid, const char *proc_root, unsigned flags, sop_python **out,
                        sop_missing *missing);
void sop__python_free(sop_python *py);
/* The same walk over a stand-in memory (fuzzing, tests): the runtime at `runtime`, the
 * built-in layout of 3.<minor>, every read through `source` (see remote_mem.h). No /proc,
 * no ELF, never --native. Returns as sop__python_collect (-ENOTSUP for an unknown minor). */
int sop__python_collect_fake(sop_rmem_source source, void *ctx, int minor, uint64_t runtime,
                             unsigned flags, sop_python **out, sop_missing *missing);

/* The same with the runtime found for this collection (py_runtime.h), used when it still
 * describes the process (else found again); NULL finds it. `maps`: the process's maps text
 * read a moment ago by the caller (the collection's snapshot), or NULL to read it here. Both
 * stay the caller's. */
int sop__python_collect_with(const sop_pyruntime *rt, int pid, const char *proc_root,
                             const char *maps, unsigned flags, sop_python **out,
                             sop_missing *missing);

/* Repeated sampling (engine/sample/sampler.c): the runtime is found once at open; each
 * sop__python_sample re-reads every thread's frames (page cache emptied first, code objects
 * kept), the GIL holder and the OS state, and hands each thread to `cb`. Never stops the
 * target, skips names and the GC. */
typedef struct sop_pysampler sop_pysampler;

typedef struct {
    int tid;             /* 0 when unknown */
    const char *name;    /* threading name ("" when none); valid during the callback */
    bool gil;            /* holds the GIL */
    bool gil_wait;       /* asleep in a futex on the GIL (/proc/.../syscall) */
    bool futex_wait;     /* asleep in a futex elsewhere: a lock, condition, semaphore or queue */
    uint64_t futex_addr; /* the futex word it sleeps on (futex_wait), 0 otherwise */
    long syscall_nr;     /* the syscall it sleeps in (this architecture's numbers); -1 when
                            running, unread or not in one (read only when not R, no GIL) */
    sop_wait_class wait; /* what that syscall waits on (wait_class.h); SOP_WC_NONE when
                            running, holding the GIL or unread */
    bool gpu_fd;         /* that syscall's first argument is one of the GPU device fds
                            given by sop__python_sample_gpu_fds */
    char state;          /* OS state letter; '?' when unreadable */
    int64_t majflt;      /* the task's major faults so far (stat); SOP_NA when unread */
    int64_t minflt;      /* its minor faults so far (stat); SOP_NA when unread */
    int64_t cpu_ticks;   /* its utime + stime so far (stat, clock ticks); SOP_NA when unread */
    const sop_pyframe *frames; /* innermost first; valid during the callback only */
    size_t nframes;
    bool torn;   /* partial: no walk verified complete within the bound; frames so far */
    int retries; /* walks after the first */
} sop_pysample;

typedef void (*sop_pysample_cb)(void *ctx, const sop_pysample *t);

/* The process's open GPU device fds (/dev/nvidia*, ...: at most 64 kept): a thread sleeping in
 * ioctl(2) on one of them is inside the GPU driver (sop_pysample.gpu_fd). */
void sop__python_sample_gpu_fds(sop_pysampler *s, const int *fds, size_t n);

/* Returns 0, -ENOEXEC (not CPython), -ENOTSUP, -ESRCH, -EPERM/-EACCES, -ENOMEM. */
int sop__python_open(int pid, const char *proc_root, sop_pysampler **out, sop_missing *missing);
/* The same with the runtime found for this collection (as sop__python_collect_with). */
int sop__python_open_with(const sop_pyruntime *rt, int pid, const char *proc_root,
                          sop_pysampler **out, sop_missing *missing);
/* One tick. Returns the number of threads seen, or -ESRCH when the process is gone, or
 * another negative errno when the thread list could not be read. */
int sop__python_sample(sop_pysampler *s, sop_pysample_cb cb, void *ctx);
/* A moment after a tick: for each thread that tick saw holding the GIL or running without it
 * (state R, not the holder; at most 16, in interpreters whose GIL could be read), whether it
 * holds the GIL now. A thread whose native calls and Python stretches are all far shorter than
 * the pause holds it then as often whatever it did at the tick; one in a long call (or a long
 * stretch of Python) mostly still does what it did. Reads one GIL holder per interpreter,
 * nothing of the threads. Returns how many were handed to `cb`; a NULL `cb` forgets them. */
typedef void (*sop_pyrecheck_cb)(void *ctx, int tid, bool held_gil, bool holds_gil);
int sop__python_recheck(sop_pysampler *s, sop_pyrecheck_cb cb, void *ctx);
/* How many threads the next sop__python_recheck would look at (0: no need to pause). */
size_t sop__python_recheck_pending(const sop_pysampler *s);
void sop__python_close(sop_pysampler *s);
/* Let s read through the page cache of `with` (sampled one after the other, never at once):
 * the samplers of one window's processes need one cache's memory, not one each. */
void sop__python_share_cache(sop_pysampler *s, sop_pysampler *with);

/* The main interpreter at one tick: whether its GC is collecting and how many collections of
 * each generation it has run; how many times its GIL has gone to another thread than its last
 * holder, and its switch interval (SOP_NA each where not readable). */
typedef struct {
    int64_t collecting;
    int64_t collections[3];
    int64_t gil_switches, gil_interval_us;
} sop_pygc;
/* Returns 0, -ESRCH when gone, or another negative errno (out left SOP_NA). */
int sop__python_sample_gc(sop_pysampler *s, sop_pygc *out);

#endif
