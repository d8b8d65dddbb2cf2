/* heap_census.h — a census of a CPython process's garbage-collected objects, read from outside:
 * the GC generations (and gc.freeze()'s permanent generation) walked from the interpreter
 * state, objects counted by type with estimated sizes, every list walk bounded and
 * validated. Optionally (SOP_HEAP_STOP) with the whole process stopped (heap_stop.c).
 * Depends on py_layouts.h, remote_mem.h, cpython.h (to locate the runtime). */
#ifndef SOP_HEAP_H
#define SOP_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../missing.h"
#include "py_layouts.h"
#include "py_runtime.h"
#include "remote_mem.h"

#define SOP_HEAP_STOP 0x1u /* stop every thread for an exact census (PTRACE_SEIZE/INTERRUPT) */

#define SOP_HEAP_LISTS 4 /* generations 0, 1, 2 and the permanent generation */

typedef struct {
    char name[128]; /* "dict", "__main__.Node", "collections.OrderedDict" */
    uint64_t type;  /* address of the type object in the target */
    uint64_t count;
    uint64_t bytes;  /* estimate: see docs/heap.md */
    uint64_t frozen; /* of count, in the permanent generation (gc.freeze()) */
    bool untracked;  /* a type the GC does not track, counted through its containers */
} sop_heap_type;

typedef struct sop_pyheap {
    char version[32];
    char layout[32];
    bool complete;           /* every list walked end to end, consistently */
    char partial[224];       /* when not complete: where and why it stopped */
    uint64_t objects, bytes; /* objects: GC-tracked ones; bytes: with the untracked ones */
    uint64_t untracked;      /* str, bytes, bytearray, int, ... objects held by tracked lists,
                              * tuples and dicts (each counted once) */
    bool numpy_seen;         /* a numpy.ndarray was met */
    uint64_t numpy_arrays, numpy_nbytes;   /* arrays owning their data, and its size */
    uint64_t list_objects[SOP_HEAP_LISTS]; /* objects counted per list */
    bool list_complete[SOP_HEAP_LISTS];
    sop_heap_type *types; /* sorted by bytes, then count, descending */
    size_t ntypes;
    int64_t gc_enabled; /* SOP_NA (INT64_MIN) when unknown */
    double census_ms;   /* wall time of the walk */
    bool stopped;       /* read with the process stopped */
    double pause_ms;    /* how long it was stopped (0 when not) */
    uint64_t reads;     /* read syscalls issued */
    uint32_t restarts;  /* list walks restarted after meeting inconsistent data */
} sop_pyheap;

/* Census of `pid` (proc_root "/proc" or a fixture root). Returns 0 (maybe partial: see
 * complete/partial), -ENOEXEC not CPython, -ENOTSUP unsupported version, -ESRCH gone,
 * -EPERM/-EACCES refused, -ENOMEM. *out owned by the caller (sop__heap_free). */
int sop__heap_census(int pid, const char *proc_root, unsigned flags, sop_pyheap **out,
                     sop_missing *missing);
/* The same with the runtime found for this collection (py_runtime.h): used when it still
 * describes the process, else found again; NULL finds it. */
int sop__heap_census_with(const sop_pyruntime *rt, int pid, const char *proc_root, unsigned flags,
                          sop_pyheap **out, sop_missing *missing);
/* The same walk over a stand-in memory (tests, fuzzing): the built-in layout of 3.<minor>,
 * the runtime at `runtime`, every read through `source`. Never stops anything. */
int sop__heap_census_fake(sop_rmem_source source, void *ctx, int minor, uint64_t runtime,
                          sop_pyheap **out, sop_missing *missing);
void sop__heap_free(sop_pyheap *h);

/* Per-type growth from `a` to `b` (same process): types whose count or bytes changed, sorted
 * by bytes grown, descending. *out malloc'd (count/bytes hold signed deltas cast to
 * uint64_t: read them as int64_t). Returns the number of entries or -ENOMEM. */
long sop__heap_growth(const sop_pyheap *a, const sop_pyheap *b, sop_heap_type **out);

/* Stopping the whole process (heap_stop.c): every task PTRACE_SEIZE'd and interrupted.
 * If sopctl dies while they are stopped the kernel detaches them and they run on. */
typedef struct {
    int pid;
    int *tids;
    int *sigs; /* a signal met at the stop, passed on at detach */
    size_t n;
    double t0_ms;
} sop_stopped;
/* Returns 0, or -EPERM/-EACCES (ptrace refused), -ESRCH; on failure nothing stays stopped. */
int sop__stop_process(int pid, const char *proc_root, sop_stopped *s, char *err, size_t errlen);
/* Detach every task; returns how long they were stopped, in ms. */
double sop__resume_process(sop_stopped *s);

#endif
