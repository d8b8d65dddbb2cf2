/* asyncio_tasks_int.h — what the parts of the asyncio task reader share (asyncio_read.c the
 * read and the listing, asyncio_thread_lists.c asyncio's own task lists (3.14+),
 * asyncio_gc_lists.c the GC-list walk, asyncio_types.c the object kinds,
 * asyncio_task_read.c one task, asyncio_await_chain.c one await level, asyncio_lock_holders.c
 * the locks and semaphores waited on, asyncio_found.c what they record as they go): the
 * reader, its bounds and the helpers each of them reads with. Private to probes/python; the
 * public face is asyncio_tasks.h. Depends on py_walk_int.h (the walker, code objects). */
#ifndef SOP_ASYNCIO_TASKS_INT_H
#define SOP_ASYNCIO_TASKS_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "asyncio_tasks.h"
#include "py_walk_int.h"

#define TYPE_SLOTS 16384u    /* power of two */
#define TP_BASE 256u         /* PyTypeObject.tp_base, every version handled */
#define MAX_FRAME_SLOTS 256u /* locals + value stack looked at per level (holder scan) */

enum {
    K_UNKNOWN = 0,
    K_OTHER,
    K_TASK,
    K_FUTURE,
    K_FUTUREITER,
    K_CORO,
    K_GEN,
    K_FUNC,
    K_LIST,
    K_TUPLE,
    K_INT,
    K_FLOAT,
    K_BOOL,
    K_METHOD,
    K_DEQUE
};

typedef struct {
    uint64_t addr;
    int kind;
    char name[96];
} type_slot;

typedef struct {
    walker w; /* memory, layout, code objects (py_walk.c) */
    type_slot *types;
    size_t ntypes;
    uint64_t *found; /* task addresses from the GC lists */
    size_t nfound, capfound;
    bool truncated;
    uint64_t last_locals; /* localsplus of the last level read (its `self` for methods) */
    uint64_t max_objects; /* GC objects to look at, over all lists (0: no bound but the lists') */
    uint64_t seen;        /* GC objects looked at so far */
    sop_missing *missing;
    sop_pytasks *out; /* the read being filled (its type_names) */
} tasks_reader;

/* name kept once in tr->out->type_names (static "?" when full or out of memory). */
const char *sop__tasks_type_name(tasks_reader *tr, const char *name);
/* Say why t's chain was not read to its end (printf-like; replaces an earlier note). */
void sop__tasks_task_partial(sop_pytask *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Free a task's partial mark (asyncio_found.c owns what it points at). */
void sop__tasks_partial_drop(sop_pytask *t);

/* A read error that ends the whole read (the process gone, refused, out of memory), not just
 * the object being read. */
static inline bool sop__tasks_fatal(int r)
{
    return r == -ESRCH || r == -EPERM || r == -EACCES || r == -ENOMEM;
}

/* asyncio_types.c: a printable C string (tp_name) at addr; whether `type` is a type object;
 * a string compare; the kind of the type at `type` (cached in tr->types) and of the object at
 * `obj`, *name (when not NULL) its tp_name ("?" unknown). */
bool sop__tasks_is_type_object(sop_rmem *m, const sop_pylayout *L, uint64_t type);
bool sop__tasks_name_is(const char *n, const char *want);
int sop__tasks_type_kind(tasks_reader *tr, uint64_t type, const char **name);
int sop__tasks_obj_kind(tasks_reader *tr, uint64_t obj, const char **name);

/* asyncio_read.c: keep the task at obj in tr->found (at most SOP_TASKS_MAX, then truncated);
 * 0 or -ENOMEM. */
int sop__tasks_add_found(tasks_reader *tr, uint64_t obj);

/* asyncio_gc_lists.c: the task objects on the main interpreter's GC lists into tr->found;
 * out->objects, out->complete and out->partial say how far it got. 0 or a fatal error. */
int sop__tasks_walk_gc(tasks_reader *tr, sop_pytasks *out);

/* asyncio_thread_lists.c: on 3.14+, the tasks on every thread state's and interpreter's task
 * list into tr->found (out->complete / partial say how far it got); -ENOTSUP when the process
 * has no _asyncio debug offsets (then the GC lists), 0, or a fatal error. */
int sop__tasks_walk_thread_lists(tasks_reader *tr, sop_pytasks *out);

/* asyncio_await_chain.c: one coroutine / generator level of t's chain (see there). */
int sop__tasks_read_level(tasks_reader *tr, sop_pytask *t, size_t *cap, uint64_t obj, bool gen,
                          uint64_t *yf, bool *executing);

/* asyncio_task_read.c: whether s ends with suffix; a small Python int (see there); the task at
 * addr into *t (its fields, await chain and what it waits on): 0 (t->partial says what was
 * not read) or a fatal error. */
bool sop__tasks_ends_with(const char *s, const char *suffix);
int sop__tasks_read_small_int(tasks_reader *tr, uint64_t obj, uint64_t *v, bool *neg);
int sop__tasks_read_task(tasks_reader *tr, uint64_t addr, sop_pytask *t);

/* asyncio_lock_holders.c: out->prims, the locks and semaphores out's tasks wait on. */
int sop__tasks_describe_prims(tasks_reader *tr, sop_pytasks *out);

#endif
