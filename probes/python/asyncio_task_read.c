/* asyncio_task_read.c — one asyncio task: its fields (state, name, whether cancel() was
 * asked), its await chain level by level (asyncio_await_chain.c) and what the innermost await
 * waits on: a task, a gather group's children, a future chained to a concurrent future
 * (run_in_executor), or the asyncio function suspended on it (sleep and its delay,
 * Lock.acquire and the lock, Queue.get, ...). Part of the task reader (asyncio_tasks_int.h);
 * depends on remote_mem.c, py_walk.c (code objects), py_names.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asyncio_tasks_int.h"
#include "py_names.h"

#define MAX_CALLBACKS 16
#define TASK_READ 200u /* TaskObj up to its last field used, every version */
#define FUT_PENDING 0
#define FUT_CANCELLED 1
#define FUT_FINISHED 2

bool sop__tasks_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The asyncio function the innermost coroutine level is (its file in the asyncio package);
 * self_type: the names of the class of the level's first local and of its bases (NULL-ended). */
static sop_wait_kind kind_from_frame(const sop_await_frame *f, const char *const *self_type)
{
    static const struct {
        const char *file, *func;
        sop_wait_kind k;
    } known[] = {
        {"/asyncio/tasks.py", "sleep", SOP_WAIT_SLEEP},
        {"/asyncio/tasks.py", "__sleep0", SOP_WAIT_SLEEP},
        {"/asyncio/tasks.py", "_wait", SOP_WAIT_WAIT},
        {"/asyncio/tasks.py", "wait", SOP_WAIT_WAIT},
        {"/asyncio/tasks.py", "wait_for", SOP_WAIT_WAIT},
        {"/asyncio/tasks.py", "as_completed.<locals>._wait_for_one", SOP_WAIT_WAIT},
        {"/asyncio/tasks.py", "_wait_for_one", SOP_WAIT_WAIT},
        {"/asyncio/locks.py", "Lock.acquire", SOP_WAIT_LOCK},
        {"/asyncio/locks.py", "Event.wait", SOP_WAIT_EVENT},
        {"/asyncio/locks.py", "Condition.wait", SOP_WAIT_CONDITION},
        {"/asyncio/locks.py", "Condition.wait_for", SOP_WAIT_CONDITION},
        {"/asyncio/locks.py", "Semaphore.acquire", SOP_WAIT_SEMAPHORE},
        {"/asyncio/locks.py", "BoundedSemaphore.acquire", SOP_WAIT_SEMAPHORE},
        {"/asyncio/queues.py", "Queue.get", SOP_WAIT_QUEUE_GET},
        {"/asyncio/queues.py", "Queue.put", SOP_WAIT_QUEUE_PUT},
        {"/asyncio/streams.py", "StreamReader._wait_for_data", SOP_WAIT_STREAM},
        {"/asyncio/streams.py", "_wait_for_data", SOP_WAIT_STREAM},
        {"/asyncio/threads.py", "to_thread", SOP_WAIT_EXECUTOR},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (sop__tasks_ends_with(f->file, known[i].file) && strcmp(f->func, known[i].func) == 0)
            return known[i].k;
    /* 3.8-3.10 name a level by co_name only ("acquire" is Lock's and Semaphore's): the class
     * of its `self` (or a base of it) says which. */
    if (sop__tasks_ends_with(f->file, "/asyncio/locks.py") ||
        sop__tasks_ends_with(f->file, "/asyncio/queues.py")) {
        static const struct {
            const char *cls, *func;
            sop_wait_kind k;
        } methods[] = {
            {"Lock", "acquire", SOP_WAIT_LOCK},
            {"Semaphore", "acquire", SOP_WAIT_SEMAPHORE},
            {"Event", "wait", SOP_WAIT_EVENT},
            {"Condition", "wait", SOP_WAIT_CONDITION},
            {"Condition", "wait_for", SOP_WAIT_CONDITION},
            {"Queue", "get", SOP_WAIT_QUEUE_GET},
            {"Queue", "put", SOP_WAIT_QUEUE_PUT},
        };
        for (int i = 0; self_type && self_type[i]; i++)
            for (size_t k = 0; k < sizeof methods / sizeof methods[0]; k++)
                if (strcmp(self_type[i], methods[k].cls) == 0 &&
                    strcmp(f->func, methods[k].func) == 0)
                    return methods[k].k;
    }
    if (sop__tasks_ends_with(f->file, "/asyncio/selector_events.py") &&
        strncmp(f->func, "BaseSelectorEventLoop.sock_", 27) == 0)
        return SOP_WAIT_SOCKET;
    if (sop__tasks_ends_with(f->file, "/asyncio/selector_events.py") &&
        strncmp(f->func, "sock_", 5) == 0)
        return SOP_WAIT_SOCKET;
    return SOP_WAIT_NONE;
}

/* A callback of the future is concurrent.futures chaining's _call_check_cancel
 * (futures._chain_future: run_in_executor, wrap_future). */
static bool chained_to_concurrent(tasks_reader *tr, uint64_t fut)
{
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    uint64_t cbs[MAX_CALLBACKS + 1];
    size_t n = 0;
    uint64_t cb0 = 0, list = 0;
    if (sop__rmem_u64(m, fut + L->fut_callback0, &cb0) == 0 && cb0)
        cbs[n++] = cb0;
    if (sop__rmem_u64(m, fut + L->fut_callbacks, &list) == 0 && list &&
        sop__tasks_obj_kind(tr, list, NULL) == K_LIST) {
        int64_t size = 0;
        uint64_t items = 0;
        if (sop__rmem_read(m, list + L->ob_size, &size, 8) == 0 && size > 0 &&
            sop__rmem_u64(m, list + L->list_items, &items) == 0) {
            for (int64_t i = 0; i < size && n < MAX_CALLBACKS; i++) {
                uint64_t tup = 0, cb = 0; /* (callback, context) */
                if (sop__rmem_u64(m, items + 8 * (uint64_t)i, &tup) == 0 &&
                    sop__tasks_obj_kind(tr, tup, NULL) == K_TUPLE &&
                    sop__rmem_u64(m, tup + L->ob_size + 8, &cb) == 0)
                    cbs[n++] = cb;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t code = 0;
        int err = 0;
        if (sop__tasks_obj_kind(tr, cbs[i], NULL) != K_FUNC ||
            sop__rmem_u64(m, cbs[i] + L->func_code, &code) < 0)
            continue;
        const code_entry *c = sop__pywalk_code(&tr->w, code, &err);
        if (c && sop__tasks_ends_with(c->func, "_call_check_cancel") &&
            sop__tasks_ends_with(c->file, "/asyncio/futures.py"))
            return true;
    }
    return false;
}

static int add_await(sop_pytask *t, uint64_t task)
{
    if (t->nawaits >= SOP_TASK_MAX_AWAITS) {
        t->awaits_cut = true;
        return 0;
    }
    if (!t->awaits) {
        t->awaits = calloc(SOP_TASK_MAX_AWAITS, sizeof *t->awaits);
        if (!t->awaits)
            return -ENOMEM;
    }
    t->awaits[t->nawaits++] = task;
    return 0;
}

/* The children of a _GatheringFuture that are tasks. */
static int gather_children(tasks_reader *tr, sop_pytask *t, uint64_t outer)
{
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    uint64_t list = 0, items = 0;
    int64_t size = 0;
    if (sop__py_instance_attr(m, L, outer, "_children", &list) < 0 ||
        sop__tasks_obj_kind(tr, list, NULL) != K_LIST ||
        sop__rmem_read(m, list + L->ob_size, &size, 8) < 0 || size <= 0 ||
        sop__rmem_u64(m, list + L->list_items, &items) < 0)
        return 0;
    for (int64_t i = 0; i < size; i++) {
        if (t->nawaits >= SOP_TASK_MAX_AWAITS) {
            t->awaits_cut = true;
            break;
        }
        uint64_t child = 0;
        if (sop__rmem_u64(m, items + 8 * (uint64_t)i, &child) < 0)
            break;
        if (sop__tasks_obj_kind(tr, child, NULL) == K_TASK) {
            int r = add_await(t, child);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

/* The value of a Python int of at most two 30-bit digits (*neg for a negative one); -EINVAL
 * for anything else. 3.12+: lv_tag = ndigits << 3 | sign; before: signed ob_size. */
int sop__tasks_read_small_int(tasks_reader *tr, uint64_t obj, uint64_t *v, bool *neg)
{
    const sop_pylayout *L = &tr->w.L;
    uint64_t tag = 0;
    uint32_t digits[2] = {0, 0};
    if (sop__rmem_u64(&tr->w.mem, obj + L->ob_size, &tag) < 0 ||
        sop__rmem_read(&tr->w.mem, obj + L->ob_size + 8, digits, sizeof digits) < 0)
        return -EINVAL;
    int64_t nd;
    if (L->minor >= 12) {
        nd = (int64_t)(tag >> 3);
        *neg = (tag & 3) == 2;
    } else {
        nd = (int64_t)tag < 0 ? -(int64_t)tag : (int64_t)tag;
        *neg = (int64_t)tag < 0;
    }
    if (nd < 0 || nd > 2)
        return -EINVAL;
    *v = nd == 0   ? 0
         : nd == 1 ? digits[0] & 0x3fffffffu
                   : (digits[0] & 0x3fffffffu) | (uint64_t)(digits[1] & 0x3fffffffu) << 30;
    return 0;
}

int sop__tasks_read_task(tasks_reader *tr, uint64_t addr, sop_pytask *t)
{
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    memset(t, 0, sizeof *t);
    t->partial = "";
    t->waits_type = "";
    t->addr = addr;
    t->sleep_s = NAN;
    uint8_t b[TASK_READ];
    int r = sop__rmem_read(m, addr, b, sizeof b);
    if (r < 0) {
        sop__tasks_task_partial(t, "task unreadable (%s)", sop__strerror(-r));
        t->state = "pending";
        return sop__tasks_fatal(r) ? r : 0;
    }
    int32_t state = rd32(b, L->fut_state);
    bool cancel_asked = false;
    if (L->task_must_cancel_bit < 0)
        cancel_asked = rd32(b, L->task_must_cancel) != 0;
    else
        cancel_asked = (rd32(b, L->task_must_cancel) >> L->task_must_cancel_bit) & 1;
    if (L->task_num_cancels && rd32(b, L->task_num_cancels) > 0)
        cancel_asked = true;
    uint64_t waiter = sop__pywalk_rd64(b, L->task_fut_waiter),
             coro = sop__pywalk_rd64(b, L->task_coro);
    t->refcnt = (int64_t)sop__pywalk_rd64(b, 0);
    if (!cancel_asked && waiter) { /* 3.8-3.10: cancel() cancels the waiter first */
        int32_t ws = 0;
        if ((sop__tasks_obj_kind(tr, waiter, NULL) == K_TASK ||
             sop__tasks_obj_kind(tr, waiter, NULL) == K_FUTURE) &&
            sop__rmem_read(m, waiter + L->fut_state, &ws, 4) == 0 && ws == FUT_CANCELLED)
            cancel_asked = true;
    }
    if (state == FUT_PENDING) {
        t->state = cancel_asked ? "cancelling" : "pending";
    } else {
        t->state = "done";
        t->outcome = state == FUT_CANCELLED                                           ? "cancelled"
                     : sop__pywalk_rd64(b, L->fut_result) || !sop__pywalk_rd64(b, 48) ? "result"
                                                                                      : "exception";
    }
    uint64_t name = sop__pywalk_rd64(b, L->task_name);
    if (name && sop__tasks_obj_kind(tr, name, NULL) == K_INT) {
        /* 3.12+: an unnamed task keeps its number until get_name() formats "Task-N" */
        uint64_t v = 0;
        bool neg = false;
        if (sop__tasks_read_small_int(tr, name, &v, &neg) == 0 && !neg)
            snprintf(t->name, sizeof t->name, "Task-%llu", (unsigned long long)v);
        else
            snprintf(t->name, sizeof t->name, "?");
    } else if (name && sop__rmem_unicode(m, &L->str, name, t->name, sizeof t->name) < 0) {
        snprintf(t->name, sizeof t->name, "?");
    }
    if (state != FUT_PENDING)
        return 0;
    /* the await chain */
    size_t cap = 0;
    uint64_t obj = coro;
    for (size_t depth = 0; obj; depth++) {
        if (depth >= SOP_TASK_MAX_DEPTH) {
            t->chain_cut = true;
            break;
        }
        const char *tn;
        int k = sop__tasks_obj_kind(tr, obj, &tn);
        if (k == K_CORO || k == K_GEN) {
            uint64_t yf = 0;
            bool executing = false;
            r = sop__tasks_read_level(tr, t, &cap, obj, k == K_GEN, &yf, &executing);
            if (r < 0) {
                if (sop__tasks_fatal(r))
                    return r;
                sop__tasks_task_partial(t, "await level %zu unreadable (%s)", depth,
                                        r == -EINVAL ? "changed while read" : sop__strerror(-r));
                break;
            }
            if (depth == 0 && executing)
                t->running = true;
            obj = r == 1 ? 0 : yf;
            continue;
        }
        /* the innermost awaitable */
        if (k == K_FUTUREITER) {
            uint64_t fut = 0;
            if (sop__rmem_u64(m, obj + L->futiter_future, &fut) == 0 && fut)
                obj = fut;
            k = sop__tasks_obj_kind(tr, obj, &tn);
        }
        t->waits_addr = obj;
        t->waits_type = sop__tasks_type_name(tr, tn);
        if (k == K_TASK) {
            t->waits = SOP_WAIT_TASK;
            if ((r = add_await(t, obj)) < 0)
                return r;
        } else if (k == K_FUTURE) {
            t->waits = SOP_WAIT_FUTURE;
            if (strcmp(tn, "_GatheringFuture") == 0) {
                t->waits = SOP_WAIT_GATHER;
                if ((r = gather_children(tr, t, obj)) < 0)
                    return r;
            } else if (chained_to_concurrent(tr, obj)) {
                t->waits = SOP_WAIT_EXECUTOR;
            }
        } else {
            t->waits = SOP_WAIT_OTHER;
        }
        break;
    }
    /* An asyncio primitive names what the future stands for. */
    if (t->nframes && (t->waits == SOP_WAIT_FUTURE || t->waits == SOP_WAIT_NONE) && !t->running) {
        char names[4][64];
        const char *self_type[5] = {NULL};
        uint64_t self = 0, type = 0;
        if (sop__rmem_u64(m, tr->last_locals, &self) == 0 &&
            (self = sop__pywalk_ref(L, self)) != 0 &&
            sop__rmem_u64(m, self + L->ob_type, &type) == 0 &&
            sop__tasks_is_type_object(m, L, type)) {
            for (int i = 0; type && i < 4; i++) {
                uint64_t nm = 0;
                if (sop__rmem_u64(m, type + L->tp_name, &nm) < 0 ||
                    sop__rmem_read_cstr(m, nm, names[i], sizeof names[i]) < 0)
                    break;
                self_type[i] = names[i];
                if (sop__rmem_u64(m, type + TP_BASE, &type) < 0)
                    break;
            }
        }
        sop_wait_kind k = kind_from_frame(&t->frames[t->nframes - 1], self_type);
        if (k != SOP_WAIT_NONE)
            t->waits = k;
        if ((k == SOP_WAIT_LOCK || k == SOP_WAIT_SEMAPHORE) && self_type[0])
            t->prim = self;
        /* asyncio.sleep(delay, ...): its first local is the delay asked for */
        uint64_t v = 0;
        bool neg = false;
        int dk = self ? sop__tasks_obj_kind(tr, self, NULL) : K_UNKNOWN;
        if (k == SOP_WAIT_SLEEP && dk == K_FLOAT)
            (void)sop__rmem_read(m, self + 16, &t->sleep_s, sizeof t->sleep_s); /* ob_fval */
        else if (k == SOP_WAIT_SLEEP && dk == K_INT &&
                 sop__tasks_read_small_int(tr, self, &v, &neg) == 0)
            t->sleep_s = neg ? -(double)v : (double)v;
    }
    return 0;
}
