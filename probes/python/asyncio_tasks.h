/* asyncio_tasks.h — every asyncio task of a CPython 3.8-3.15 process, read from outside without
 * stopping it: the C _asyncio.Task objects (and subclasses) found on asyncio's own per-thread
 * task lists (3.14+) or on the GC lists, each with
 * its state, name, the coroutine chain it is suspended in (one frame per await level) and
 * what the innermost await waits on. Bounded in tasks, await depth and list length; what is
 * cut is marked. Depends on py_layouts.h, remote_mem.h, py_runtime.h, py_walk (code objects),
 * py_names (instance attributes). */
#ifndef SOP_ASYNCIO_TASKS_H
#define SOP_ASYNCIO_TASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../missing.h"
#include "py_runtime.h"
#include "remote_mem.h"

#define SOP_TASKS_MAX 100000u   /* tasks listed; more: `truncated` */
#define SOP_TASK_MAX_DEPTH 64u  /* await levels per task; more: the chain is marked cut */
#define SOP_TASK_MAX_AWAITS 256 /* tasks one task is shown to wait on (a gather's children) */

typedef struct {
    const char *func; /* qualified name on 3.11+, co_name before (owned by the sop_pytasks) */
    const char *file;
    int line;       /* -1 when unknown */
    bool generator; /* a generator level (`yield from`, @types.coroutine) */
    uint64_t slots; /* its frame's locals and value stack (a suspended level; 0 otherwise) */
    uint32_t nslots;
} sop_await_frame;

/* What the innermost await waits on. */
typedef enum {
    SOP_WAIT_NONE,      /* done, running, or suspended in a bare `yield` */
    SOP_WAIT_TASK,      /* another task (waits_addr) */
    SOP_WAIT_FUTURE,    /* a future nobody in asyncio's own code names */
    SOP_WAIT_SLEEP,     /* asyncio.sleep (a future resolved by a TimerHandle) */
    SOP_WAIT_LOCK,      /* asyncio.Lock.acquire */
    SOP_WAIT_EVENT,     /* asyncio.Event.wait */
    SOP_WAIT_CONDITION, /* asyncio.Condition.wait */
    SOP_WAIT_SEMAPHORE, /* asyncio.Semaphore / BoundedSemaphore.acquire */
    SOP_WAIT_QUEUE_GET, /* asyncio.Queue.get (an empty queue) */
    SOP_WAIT_QUEUE_PUT, /* asyncio.Queue.put (a full queue) */
    SOP_WAIT_STREAM,    /* asyncio.StreamReader waiting for data */
    SOP_WAIT_SOCKET,    /* loop.sock_recv / sock_accept / sock_connect / sock_sendall */
    SOP_WAIT_EXECUTOR,  /* a future chained to a concurrent.futures.Future (run_in_executor) */
    SOP_WAIT_GATHER,    /* asyncio.gather's group (awaits: its children) */
    SOP_WAIT_WAIT,      /* asyncio.wait / as_completed / wait_for */
    SOP_WAIT_OTHER,     /* an awaitable of another type (waits_type) */
} sop_wait_kind;

const char *sop__wait_kind_name(sop_wait_kind k);

typedef struct {
    uint64_t addr;
    char name[128];
    const char *state;       /* "pending", "cancelling" (cancel() asked, not yet done), "done" */
    const char *outcome;     /* done: "result", "exception" or "cancelled"; else NULL */
    bool running;            /* its coroutine is executing now (on the loop's thread) */
    sop_await_frame *frames; /* the task's coroutine first, the innermost await level last */
    size_t nframes;
    bool chain_cut;      /* more than SOP_TASK_MAX_DEPTH levels */
    const char *partial; /* why the chain was not read to its end ("" when it was; owned) */
    sop_wait_kind waits;
    const char *waits_type; /* type of the innermost awaitable ("_asyncio.Future", ...): one of
                             * the read's type_names, never NULL after a read */
    uint64_t waits_addr;    /* its address (0 when none) */
    double sleep_s;         /* SOP_WAIT_SLEEP: the delay asyncio.sleep was given (NaN: unread) */
    uint64_t *awaits;       /* the tasks it waits on (directly, or a gather's children) */
    size_t nawaits;
    bool awaits_cut;
    uint64_t prim;  /* lock/semaphore waits: the asyncio.Lock / Semaphore object (0 otherwise) */
    int64_t refcnt; /* its ob_refcnt when read: 1 for a pending task that only what it awaits
                     * refers to (its wakeup callback; asyncio's own task set is weak) */
} sop_pytask;

/* A pending task, suspended on something, that nothing but that something refers to (ob_refcnt
 * 1: the awaited future's wakeup callback): no variable, collection or awaiting task holds it, so
 * it was created and forgotten; asyncio keeps only weak references to tasks. */
bool sop__task_unreferenced(const sop_pytask *t);

#define SOP_PRIMS_MAX 32 /* locks and semaphores described (those most waited on) */
#define SOP_PRIM_MAX_HOLDERS 8

/* An asyncio.Lock or Semaphore that at least one task waits on: what its own fields say and
 * the tasks that hold it. asyncio records no owner: a holder is a pending task, not waiting on
 * it, one of whose suspended frames keeps its bound `__aexit__` on the value stack (the body of
 * an `async with` on it). A holder that took it by `await acquire()` is not seen. */
typedef struct {
    uint64_t addr;
    char type[64];      /* its class ("Lock", "Semaphore", "BoundedSemaphore", a subclass) */
    sop_wait_kind kind; /* SOP_WAIT_LOCK or SOP_WAIT_SEMAPHORE */
    size_t waiting;     /* tasks whose innermost await waits on it */
    long long queue;    /* len(_waiters) (the waiter futures queued on it); -1 unread */
    int locked;         /* Lock: _locked; -1 unread or a semaphore */
    long long value;    /* Semaphore: _value; LLONG_MIN unread or a lock */
    uint64_t holders[SOP_PRIM_MAX_HOLDERS];
    size_t nholders;
    bool holders_cut;     /* more holders than SOP_PRIM_MAX_HOLDERS */
    bool holders_partial; /* the scan for holders stopped at its bound */
} sop_pyprim;

typedef struct sop_pytasks {
    char version[32];
    char layout[32];
    sop_pytask *tasks; /* sorted by name (numbers in names compared as numbers) */
    size_t ntasks;
    bool complete;           /* every list walked end to end and every chain read */
    bool from_lists;         /* 3.14+: found on asyncio's own per-thread task lists; else
                              * on the GC lists */
    char partial[224];       /* when not: where and why */
    bool truncated;          /* more tasks than SOP_TASKS_MAX */
    uint64_t objects;        /* GC objects looked at */
    double read_ms;          /* wall time of the whole read */
    uint64_t reads;          /* read syscalls issued */
    struct sop_python *text; /* owns the frames' text */
    sop_pyprim *prims;       /* the locks and semaphores waited on, most waiters first */
    size_t nprims;
    /* The awaitables' type names, each kept once (a task holds a pointer: 100,000 tasks hold
     * 8 bytes each, not a copy); more distinct names than SOP_TASK_TYPE_NAMES read "?". */
    char (*type_names)[96];
    size_t ntype_names;
} sop_pytasks;

#define SOP_TASK_TYPE_NAMES 64

/* Read the tasks of `pid` (proc_root "/proc" or a fixture root). Returns 0 (maybe partial),
 * -ENOEXEC not CPython, -ENOTSUP unsupported version, -ESRCH gone, -EPERM/-EACCES refused,
 * -ENOMEM. *out owned by the caller (sop__tasks_free). */
int sop__tasks_read(int pid, const char *proc_root, sop_pytasks **out, sop_missing *missing);
/* The same, looking at no more than max_objects GC objects (then partial: the tasks found so
 * far), for reads inside a collection (engine/collect/collect_tasks.c). */
int sop__tasks_read_bounded(int pid, const char *proc_root, uint64_t max_objects, sop_pytasks **out,
                            sop_missing *missing);
/* The same over a stand-in memory (fuzzing, tests): the built-in layout of 3.<minor>, the
 * runtime at `runtime`, every read through `source`. */
int sop__tasks_read_fake(sop_rmem_source source, void *ctx, int minor, uint64_t runtime,
                         sop_pytasks **out, sop_missing *missing);
void sop__tasks_free(sop_pytasks *t);

#endif
