/* py_walk_int.h — what the stack walker (py_walk.c) shares with the repeated sampler
 * (py_sample.c): the walker's state, the bounds, and the walk of one thread. Private to
 * probes/python; the public face is cpython.h. Depends on libc. */
#ifndef SOP_PY_WALK_INT_H
#define SOP_PY_WALK_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "addr_set.h"
#include "cpython.h"

#define MAX_INTERPS 64
#define MAX_THREADS 4096
#define MAX_FRAMES 2048
#define MAX_LINETABLE_BYTES (1u << 20)
#define CODE_SLOTS 4096u        /* power of two */
#define FRAME_SET_SLOTS 16384u  /* > 2 x the depth bound (4 x MAX_FRAMES): the most it grows to */
#define THREAD_SET_SLOTS 16384u /* > 2 x MAX_THREADS */
#define FROZEN_MAX 50000
#define SOP_STR_(x) #x
#define SOP_STR(x) SOP_STR_(x)
/* glibc (2.26-2.39, x86-64): offsetof(struct pthread, tid); pthread_t is the address of
 * struct pthread. Checked by experiment against threading.get_native_id() on Debian 12. */
#define GLIBC_PTHREAD_TID_OFFSET 0x2d0

typedef struct {
    uint64_t addr;
    const char *func, *file; /* in the sop_python's string pool */
    int firstlineno;
    uint8_t *lines;
    size_t nlines;
    /* the last (offset -> line) decoded for this code: frames waiting at the same place (a
     * recursion, threads parked in the same function) decode the table once */
    int memo_addr, memo_line;
    bool memo;
    bool handle_run;    /* asyncio.events.Handle._run: its frame's first local is read */
    uint16_t turn_slot; /* asyncio's BaseEventLoop._run_once: 1 + the slot of its local
                         * end_time, whose value is read; 0: none */
} code_entry;

typedef struct {
    int pid;
    const char *proc_root;
    sop_rmem mem;
    sop_pylayout L;
    uint64_t runtime;
    uint64_t code_type; /* &PyCode_Type in the target; 0 when unknown */
    sop_python *py;     /* being filled (owns the string pool) */
    code_entry *codes;  /* ncodes entries, found through code_index (1-based, 0 = empty) */
    size_t ncodes, codes_cap;
    uint32_t *code_index;
    sop_addr_set frame_set; /* frames of the current walk (up to FRAME_SET_SLOTS slots) */
    sop_missing *missing;
    const char *maps; /* the target's maps text: maps_own, or the caller's (collect_with) */
    char *maps_own;
    /* What the last walk read of the chain (thread state, cframe, frames), for the snapshot
     * that verifies it, and how many of those reads the last snapshot did not serve. */
    uint64_t *chain;
    size_t *chain_len;
    size_t nchain;
    uint64_t chain_reads;
    int max_attempts;           /* walks per thread before it is reported partial */
    const sop_pyruntime *found; /* the runtime found for this collection, when still current */
} walker;

#define CHAIN_MAX (MAX_FRAMES + 8)
#define DUMP_WALK_ATTEMPTS 200  /* each after the first: 1 syscall + a walk from the cache */
#define SAMPLE_WALK_ATTEMPTS 48 /* per thread per tick */

typedef struct {
    walker *w;
    uint64_t tstate;
    sop_pythread *t;
    int rc;
    uint64_t boot_frame; /* threading's _bootstrap frame, 0 when none */
    int64_t raw_tid;     /* native_thread_id as read (3.11+), else 0 */
    char why[160];
    int retries;  /* walks after the first */
    bool stopped; /* read while the thread is stopped (ptrace): its chain cannot move */
} thread_job;

static inline int32_t rd32(const uint8_t *b, uint32_t off)
{
    int32_t v;
    memcpy(&v, b + off, sizeof v);
    return v;
}

static inline size_t hash_ptr(uint64_t p)
{
    return (size_t)((p >> 3) * 0x9E3779B97F4A7C15ull >> 20);
}

/* The target's thread ids as its own PID namespace sees them (what native_thread_id and
 * glibc's struct pthread hold) mapped to ours, from the NSpid lines of
 * /proc/PID/task/TID/status. Only built when the target is in another PID namespace. */
typedef struct {
    int ns_tid, tid;
} tid_pair;

/* Text of the frames: chunks owned by the sop_python, freed with it. */
struct sop_pystrings {
    struct sop_pystrings *next;
    size_t used, cap;
    char data[];
};

/* py_walk_read.c: keep text s in the sop_python's pool (NULL when out of memory); read len bytes
 * of the chain at addr through the walk's cache; a little-endian 64-bit field at off. */
const char *sop__pywalk_pool_add(sop_python *py, const char *s);
int sop__pywalk_chain_read(walker *w, uint64_t addr, void *buf, size_t len);
/* py_gc.c: the collector's state of interp into py (frozen: read while the target stopped). */
void sop__pywalk_read_gc(walker *w, uint64_t interp, sop_python *py, bool frozen);
/* py_tids.c: whether the target is in another PID namespace; its thread ids mapped to ours (at
 * most cap; returns how many); a task's state letter ('?' when unread); the OS thread whose
 * stack refers to tstate (0 when none is found; `claimed` is a tid already known). */
bool sop__pywalk_in_other_pidns(const walker *w);
size_t sop__pywalk_ns_tid_map(const walker *w, tid_pair *map, size_t cap);
char sop__pywalk_task_state(const walker *w, int tid);
int sop__pywalk_tid_from_stacks(walker *w, uint64_t tstate, int claimed);
/* Walk the thread of j (a thread_job) until verified or out of attempts; tid unused. */
void sop__pywalk_with_retry(void *ctx, int tid);
/* The thread state holding the GIL of `interp` (0 when released). */
uint64_t sop__pywalk_gil_holder(walker *w, uint64_t interp);
/* The GIL's switch_number (times it went to another thread) and switch interval (µs) of
 * `interp`: 0, or a negative errno (both SOP_NA). */
int sop__pywalk_gil_switches(walker *w, uint64_t interp, int64_t *switches, int64_t *interval_us);
/* Address of the GC state of `interp` (3.8: in _PyRuntime). */
uint64_t sop__pywalk_gc_addr(const walker *w, uint64_t interp);
/* Collections of each generation from a read _gc_runtime_state (SOP_NA where not placed). */
void sop__pywalk_gc_collections(walker *w, const uint8_t *b, int64_t out[3]);
void sop__pywalk_free_codes(walker *w);
/* The cached decoding of the code object at `code` (func, file, line table), or NULL with *err
 * set (-EINVAL: not a code object). Needs w->py (string pool), w->code_index, w->mem, w->L. */
code_entry *sop__pywalk_code(walker *w, uint64_t code, int *err);
/* The runtime for this walk: `found` when given (still current), else found now. */
int sop__pywalk_use_runtime(walker *w, const sop_pyruntime *found, sop_python *py);
/* The OS thread whose live stack refers to tstate (see py_walk.c), or `claimed`. */
int sop__pywalk_tid_from_stacks_once(walker *w, uint64_t tstate, int claimed, int *unscanned);
bool sop__pywalk_task_exists(const walker *w, int tid);
/* The thread's name as the kernel has it (comm, no newline). */
void sop__pywalk_task_comm(const walker *w, int tid, char *out, size_t cap);

/* A reference read from a frame's f_executable, locals or value stack as the object's address:
 * on 3.14+ a _PyStackRef, whose tag bits are cleared. */
static inline uint64_t sop__pywalk_ref(const sop_pylayout *L, uint64_t v)
{
    return L->stackrefs ? SOP_STACKREF_PTR(v) : v;
}

/* A little-endian 64-bit field at off of a block read from the target. */
static inline uint64_t sop__pywalk_rd64(const uint8_t *b, uint32_t off)
{
    uint64_t v;
    memcpy(&v, b + off, sizeof v);
    return v;
}

#endif
