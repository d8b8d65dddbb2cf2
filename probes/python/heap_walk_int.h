/* heap_walk_int.h — what the parts of the heap census share (heap_walk.c the GC-list walk,
 * heap_types.c the type index, heap_sizes.c the byte counts): the walker, its bounds and the
 * helpers each of them reads with. Depends on heap_census.h (sop_pyheap), cpython.h. */
#ifndef SOP_HEAP_WALK_INT_H
#define SOP_HEAP_WALK_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "cpython.h"
#include "heap_census.h"

#define MAX_INTERPS 64
#define MAX_LIST_OBJECTS                                                                           \
    (1ull << 27) /* per list: far above any heap seen, below a loop forever                        \
                  */
#define MAX_TYPES 65536u
#define LIST_RETRIES 2
#define TPFLAGS_MANAGED_WEAKREF (1ul << 3)
#define TPFLAGS_MANAGED_DICT (1ul << 4)
#define TPFLAGS_HEAPTYPE (1ul << 9)
#define TPFLAGS_HAVE_GC (1ul << 14)
#define TPFLAGS_TYPE_SUBCLASS (1ul << 31)
#define TYPE_READ 272u /* PyTypeObject up to tp_dict */
#define NODE_READ 48u  /* PyGC_Head + ob_refcnt, ob_type, ob_size + one more word */

enum { KIND_PLAIN, KIND_DICT, KIND_LIST, KIND_SET, KIND_TUPLE };
/* Objects the GC does not track, met as items of tracked lists, tuples and dicts. */
enum { LEAF_OTHER, LEAF_BYTES, LEAF_BYTEARRAY, LEAF_STR, LEAF_INT, LEAF_NDARRAY };
#define MAX_SCAN_ITEMS 65536u /* items looked at per container */
/* Per census (issue 28): item pointers read from containers in all (64 MiB of reads: 50k
 * lists that each claim 2^40 items over one 65,536-item array were 25 GB), and how long the
 * target may stay stopped under --stop. Past either the census is kept as far as it got,
 * marked partial. */
#define CENSUS_SCAN_ITEMS (8ull << 20)
#define STOP_PAUSE_MS 3000.0
#define SCAN_CHUNK 512u
#define NPY_OWNDATA 0x4

typedef struct {
    sop_heap_type t;
    uint64_t gcount, gbytes; /* counted in the list walk in progress */
    uint64_t basicsize, itemsize, flags;
    int kind;
    int leaf; /* untracked types: LEAF_* */
    bool untracked;
    size_t twin;  /* exact dict/list/tuple: 1 + index of the entry of its untracked objects */
    bool is_twin; /* that entry (not in the index) */
} type_entry;

typedef struct {
    sop_rmem mem;
    sop_pylayout L;
    int minor;
    uint64_t runtime;
    sop_missing *missing;
    type_entry *types;
    size_t ntypes, cap;
    uint32_t *index; /* open addressing, type address -> 1 + index in types; 0 empty */
    size_t index_cap;
    uint64_t *seen; /* untracked objects already counted (open addressing; 0 empty) */
    size_t seen_n, seen_cap;
    uint64_t *bad; /* addresses that are not the type of an untracked object we count */
    size_t bad_n, bad_cap;
    uint64_t numpy_arrays, numpy_nbytes, untracked;
    bool numpy_seen;
    uint64_t scan_left; /* CENSUS_SCAN_ITEMS, counted down */
    double deadline_ms; /* --stop: when the pause budget is spent (0: none) */
} heap_walker;

static inline double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline uint64_t rd64(const uint8_t *b, uint32_t off)
{
    uint64_t v;
    memcpy(&v, b + off, sizeof v);
    return v;
}

static inline size_t hash_ptr(uint64_t p)
{
    return (size_t)((p >> 3) * 0x9E3779B97F4A7C15ull >> 20);
}

static inline bool fatal(int r)
{
    return r == -ESRCH || r == -EPERM || r == -EACCES || r == -ENOMEM;
}

/* heap_types.c: the entry of the type at `type` (resolved and indexed on first sight; NULL
 * with *err when it is not a type or the index is full); a printable C string at addr. */
type_entry *sop__heap_resolve_type(heap_walker *w, uint64_t type, bool untracked, int *err);
/* heap_sizes.c: the bytes the census counts for obj (of entry e, its GC node read at node),
 * and the scan of a tracked container's items (depth: how far nested containers are followed);
 * 0 or a negative errno (fatal when the read cannot go on). */
uint64_t sop__heap_object_bytes(heap_walker *w, const type_entry *e, uint64_t obj,
                                const uint8_t *node);
int sop__heap_scan_container(heap_walker *w, const type_entry *e, uint64_t obj, const uint8_t *node,
                             int depth);
/* heap_sizes.c: the untracked objects an instance's __dict__ (or managed dict) refers to. */
int sop__heap_scan_instance(heap_walker *w, const type_entry *e, uint64_t obj);

#endif
