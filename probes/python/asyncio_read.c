/* asyncio_read.c — sop__tasks_read: every asyncio task of a CPython process, from outside.
 * 1. On 3.14+, asyncio's own task lists (one per thread state, one per interpreter) are walked
 *    where _asyncio's debug offsets say (asyncio_thread_lists.c); before 3.14 (or without
 *    them) the GC lists of the main interpreter (generations and the permanent one) are
 *    walked as the heap census does (bounded, back links checked, a list that changes under
 *    the walk re-walked twice at most), keeping the objects whose type is _asyncio.Task or a
 *    subclass (asyncio_gc_lists.c; types told apart by asyncio_types.c).
 * 2. Each task's fields (state, name, coroutine, fut_waiter) are read with the version's
 *    layout (py_layouts.c), then its await chain: the coroutine's frame, and the object it
 *    is suspended on (CPython's _PyGen_yf: the top of the frame's value stack when the frame
 *    is suspended in YIELD_FROM (3.8-3.10), in a RESUME after SEND (3.11), or in the
 *    FRAME_SUSPENDED_YIELD_FROM state (3.12+)), level by level to the innermost awaitable
 *    (asyncio_task_read.c, asyncio_await_chain.c).
 * 3. The innermost awaitable is named: a task, a gather group, a future run_in_executor
 *    chained to a concurrent future, or by the asyncio function suspended on it (sleep,
 *    Lock.acquire, Queue.get, ...); the locks and semaphores waited on are described with
 *    their holders (asyncio_lock_holders.c).
 * This file: the read as a whole, the tasks sorted into the listing, the entry points; what the
 * parts record as they go (found tasks, partial marks, type names) is asyncio_found.c.
 * Never stops the target; reads go through remote_mem.c's page cache. Depends on libc,
 * py_runtime.c, py_walk.c (code objects), py_names.c, linetable.c. */
#include "asyncio_tasks.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "asyncio_tasks_int.h"
#include "cpython.h"

const char *sop__wait_kind_name(sop_wait_kind k)
{
    static const char *const names[] = {
        "none",      "task",      "future",    "sleep",     "lock",   "event",
        "condition", "semaphore", "queue_get", "queue_put", "stream", "socket",
        "executor",  "gather",    "wait",      "other",
    };
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "other";
}

bool sop__task_unreferenced(const sop_pytask *t)
{
    return t->refcnt == 1 && strcmp(t->state, "pending") == 0 && !t->running &&
           t->waits != SOP_WAIT_NONE && t->nframes && !t->partial[0];
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- results --------------------------------------------------------------------------- */

/* Names compared with their digit runs as numbers: Task-2 before Task-10. */
static int natural_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
            const char *a0 = a, *b0 = b;
            while (*a0 == '0')
                a0++;
            while (*b0 == '0')
                b0++;
            const char *a1 = a0, *b1 = b0;
            while (*a1 >= '0' && *a1 <= '9')
                a1++;
            while (*b1 >= '0' && *b1 <= '9')
                b1++;
            if (a1 - a0 != b1 - b0)
                return a1 - a0 < b1 - b0 ? -1 : 1;
            int c = strncmp(a0, b0, (size_t)(a1 - a0));
            if (c)
                return c;
            a = a1;
            b = b1;
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++;
        b++;
    }
    return *a ? 1 : *b ? -1 : 0;
}

static int cmp_tasks(const void *pa, const void *pb)
{
    const sop_pytask *a = pa, *b = pb;
    int c = natural_cmp(a->name, b->name);
    return c ? c : a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

void sop__tasks_free(sop_pytasks *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->ntasks; i++) {
        free(t->tasks[i].frames);
        free(t->tasks[i].awaits);
        sop__tasks_partial_drop(&t->tasks[i]);
    }
    free(t->type_names);
    free(t->tasks);
    free(t->prims);
    sop__python_free(t->text);
    free(t);
}

static int read_all(tasks_reader *tr, sop_pytasks *out)
{
    int r =
        tr->w.L.minor >= 14 && !tr->w.mem.source ? sop__tasks_walk_thread_lists(tr, out) : -ENOTSUP;
    if (r == -ENOTSUP)
        r = sop__tasks_walk_gc(tr, out);
    if (r < 0)
        return r;
    /* A task moved between lists by a collection during the walk is met twice. */
    if (tr->nfound)
        qsort(tr->found, tr->nfound, sizeof *tr->found, cmp_u64);
    size_t n = 0;
    for (size_t i = 0; i < tr->nfound; i++)
        if (!n || tr->found[n - 1] != tr->found[i])
            tr->found[n++] = tr->found[i];
    out->tasks = calloc(n ? n : 1, sizeof *out->tasks);
    if (!out->tasks)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        sop_pytask *t = &out->tasks[out->ntasks];
        r = sop__tasks_read_task(tr, tr->found[i], t);
        out->ntasks++;
        if (r < 0)
            return r;
        if (t->partial[0] && out->complete) {
            out->complete = false;
            snprintf(out->partial, sizeof out->partial, "task %.60s: %.120s", t->name, t->partial);
        }
    }
    qsort(out->tasks, out->ntasks, sizeof *out->tasks, cmp_tasks);
    if ((r = sop__tasks_describe_prims(tr, out)) < 0)
        return r;
    if (tr->truncated) {
        out->truncated = true;
        if (out->complete)
            snprintf(out->partial, sizeof out->partial, "more than %u tasks: the rest not listed",
                     SOP_TASKS_MAX);
        out->complete = false;
    }
    return 0;
}

static int read_at(int pid, const char *proc_root, sop_rmem_source source, void *ctx, int minor,
                   uint64_t runtime, uint64_t max_objects, sop_pytasks **out, sop_missing *missing)
{
    *out = NULL;
    double t0 = now_ms();
    tasks_reader tr;
    memset(&tr, 0, sizeof tr);
    tr.missing = missing;
    tr.max_objects = max_objects;
    sop_pytasks *res = calloc(1, sizeof *res);
    if (!res)
        return -ENOMEM;
    tr.out = res;
    res->complete = true;
    int rc = 0;
    if (source) {
        const sop_pylayout *L = sop__pylayout_table(minor);
        if (!L || !runtime) {
            free(res);
            return -ENOTSUP;
        }
        tr.w.L = *L;
        tr.w.runtime = runtime;
        snprintf(res->version, sizeof res->version, "3.%d", minor);
    } else {
        sop_pyruntime fresh;
        const sop_pyruntime *found = sop__pyruntime_reuse(NULL, pid, proc_root, &fresh, missing);
        if ((rc = found->rc) < 0) {
            if (rc == -ENOEXEC)
                sop__missing_add(missing, "tasks", "not a CPython process");
            else if (rc == -ESRCH)
                sop__missing_add(missing, "tasks", "process %d not found", pid);
            free(res);
            return rc;
        }
        tr.w.L = found->L;
        tr.w.runtime = found->runtime;
        tr.w.code_type = found->code_type;
        snprintf(res->version, sizeof res->version, "%s", found->version);
    }
    snprintf(res->layout, sizeof res->layout, "%s", tr.w.L.source);
    if (!tr.w.L.task_coro || !tr.w.L.gc_head_size) {
        sop__missing_add(missing, "tasks", "layout %s has no asyncio fields", tr.w.L.source);
        free(res);
        return -ENOTSUP;
    }
    tr.w.pid = pid;
    tr.w.proc_root = proc_root;
    tr.w.py = calloc(1, sizeof *tr.w.py);
    tr.w.code_index = calloc(CODE_SLOTS, sizeof *tr.w.code_index);
    tr.types = calloc(TYPE_SLOTS, sizeof *tr.types);
    if (!tr.w.py || !tr.w.code_index || !tr.types ||
        sop__rmem_open(&tr.w.mem, pid, proc_root) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    tr.w.mem.source = source;
    tr.w.mem.source_ctx = ctx;
    rc = read_all(&tr, res);
    if (!source && (rc == 0 || rc == -EFAULT)) {
        char path[300];
        snprintf(path, sizeof path, "%s/%d", proc_root, pid);
        if (access(path, F_OK) < 0)
            rc = -ESRCH;
    }
    res->reads = tr.w.mem.reads;
out:
    res->text = tr.w.py;
    tr.w.py = NULL;
    sop__pywalk_free_codes(&tr.w);
    sop__rmem_close(&tr.w.mem);
    free(tr.types);
    free(tr.found);
    res->read_ms = now_ms() - t0;
    if (rc < 0) {
        if (rc == -ESRCH)
            sop__missing_add(missing, "tasks", "process %d exited during the read", pid);
        else if (rc == -EPERM || rc == -EACCES)
            sop__missing_add(missing, "tasks", "memory of %d not readable: %s", pid,
                             sop__strerror(-rc));
        else if (rc == -ENOEXEC)
            sop__missing_add(missing, "tasks", "not a CPython process");
        sop__tasks_free(res);
        return rc;
    }
    if (!res->complete)
        sop__missing_add(missing, "tasks", "partial: %s", res->partial);
    *out = res;
    return 0;
}

int sop__tasks_read(int pid, const char *proc_root, sop_pytasks **out, sop_missing *missing)
{
    return read_at(pid, proc_root ? proc_root : "/proc", NULL, NULL, 0, 0, 0, out, missing);
}

int sop__tasks_read_bounded(int pid, const char *proc_root, uint64_t max_objects, sop_pytasks **out,
                            sop_missing *missing)
{
    return read_at(pid, proc_root ? proc_root : "/proc", NULL, NULL, 0, 0, max_objects, out,
                   missing);
}

int sop__tasks_read_fake(sop_rmem_source source, void *ctx, int minor, uint64_t runtime,
                         sop_pytasks **out, sop_missing *missing)
{
    if (!source) {
        *out = NULL;
        return -EINVAL;
    }
    return read_at(0, "/nonexistent-sop-fake-root", source, ctx, minor, runtime, 0, out, missing);
}
