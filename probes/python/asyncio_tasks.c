/* asyncio_tasks.c — sop__tasks_read: every asyncio task of a CPython process, from outside.
 * 1. The GC lists of the main interpreter (generations and the permanent one) are walked as
 *    the heap census does (bounded, back links checked, a list that changes under the walk
 *    re-walked twice at most), keeping the objects whose type is _asyncio.Task or a subclass.
 * 2. Each task's fields (state, name, coroutine, fut_waiter) are read with the version's
 *    layout (py_layouts.c), then its await chain: the coroutine's frame, and the object it
 *    is suspended on (CPython's _PyGen_yf: the top of the frame's value stack when the frame
 *    is suspended in YIELD_FROM (3.8-3.10), in a RESUME after SEND (3.11), or in the
 *    FRAME_SUSPENDED_YIELD_FROM state (3.12+)), level by level to the innermost awaitable.
 * 3. The innermost awaitable is named: a task, a gather group, a future run_in_executor
 *    chained to a concurrent future, or by the asyncio function suspended on it (sleep,
 *    Lock.acquire, Queue.get, ...).
 * Never stops the target; reads go through remote_mem.c's page cache. Depends on libc,
 * py_runtime.c, py_walk.c (code objects), py_names.c, linetable.c. */
#include "asyncio_tasks.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "linetable.h"
#include "py_names.h"
#include "py_walk_int.h"
#include "python.h"

#define MAX_LIST_OBJECTS (1ull << 27)
#define LIST_RETRIES 2
#define TYPE_SLOTS 16384u /* power of two */
#define TYPE_READ 272u    /* PyTypeObject up to tp_dict */
#define TP_BASE 256u      /* PyTypeObject.tp_base, every version handled */
#define TPFLAGS_TYPE_SUBCLASS (1ul << 31)
#define MAX_BASES 32
#define MAX_CALLBACKS 16
#define MAX_STACK_SLOTS 100000
#define TASK_READ 200u           /* TaskObj up to its last field used, every version */
#define MAX_FRAME_SLOTS 256u     /* locals + value stack looked at per level (holder scan) */
#define MAX_HOLDER_SLOTS 400000u /* slots looked at over all tasks when looking for holders */
#define METHOD_FUNC 16u          /* PyMethodObject.im_func, every version */
#define METHOD_SELF 24u          /* PyMethodObject.im_self */
/* 3.8-3.10: YIELD_FROM; 3.11: RESUME / RESUME_QUICK (its oparg >= 2 after a yield from or an
 * await); 3.11 and 3.12+ frame states. */
#define OP_YIELD_FROM 72
#define OP_RESUME_311 151
#define OP_RESUME_QUICK_311 150
#define FRAME_EXECUTING 0
#define FRAME_SUSPENDED_311 (-1)
#define FRAME_SUSPENDED_YIELD_FROM_312 (-1)
#define FUT_PENDING 0
#define FUT_CANCELLED 1
#define FUT_FINISHED 2

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
} tasks_reader;

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

static uint64_t rd64(const uint8_t *b, uint32_t off)
{
    uint64_t v;
    memcpy(&v, b + off, sizeof v);
    return v;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static bool fatal(int r)
{
    return r == -ESRCH || r == -EPERM || r == -EACCES || r == -ENOMEM;
}

/* tp_name at addr: printable ASCII, NUL-terminated within cap. */
static int read_cstr(sop_rmem *m, uint64_t addr, char *out, size_t cap)
{
    size_t o = 0;
    while (o + 1 < cap) {
        size_t n = SOP_RMEM_PAGE - (size_t)((addr + o) & (SOP_RMEM_PAGE - 1));
        if (n > cap - 1 - o)
            n = cap - 1 - o;
        int r = sop__rmem_read(m, addr + o, out + o, n);
        if (r < 0)
            return r;
        for (size_t i = 0; i < n; i++) {
            char c = out[o + i];
            if (c == '\0')
                return o + i > 0 ? 0 : -EINVAL;
            if (c < 0x20 || c > 0x7e)
                return -EINVAL;
        }
        o += n;
    }
    out[cap - 1] = '\0';
    return 0;
}

/* A type object: its metatype chain reaches PyType_Type (its own type) with
 * Py_TPFLAGS_TYPE_SUBCLASS on the way. */
static bool is_type_object(sop_rmem *m, const sop_pylayout *L, uint64_t type)
{
    uint64_t t = type;
    for (int depth = 0; depth < 6; depth++) {
        uint64_t meta = 0, flags = 0;
        if (sop__rmem_u64(m, t + L->ob_type, &meta) < 0 || !meta ||
            sop__rmem_u64(m, meta + L->tp_flags, &flags) < 0 || !(flags & TPFLAGS_TYPE_SUBCLASS))
            return false;
        if (meta == t)
            return true;
        t = meta;
    }
    return false;
}

static bool name_is(const char *n, const char *want)
{
    return strcmp(n, want) == 0;
}

/* The kind of the type at `type` (cached); *name gets its tp_name when not NULL. */
static int type_kind(tasks_reader *tr, uint64_t type, const char **name)
{
    static const char unknown[] = "?";
    if (name)
        *name = unknown;
    if (!type || (type & 7))
        return K_UNKNOWN;
    size_t h = hash_ptr(type) & (TYPE_SLOTS - 1);
    type_slot *slot = NULL;
    for (size_t k = 0; k < TYPE_SLOTS; k++, h = (h + 1) & (TYPE_SLOTS - 1)) {
        if (tr->types[h].addr == type) {
            if (name)
                *name = tr->types[h].name;
            return tr->types[h].kind;
        }
        if (!tr->types[h].addr) {
            slot = &tr->types[h];
            break;
        }
    }
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    type_slot e;
    memset(&e, 0, sizeof e);
    e.addr = type;
    e.kind = K_UNKNOWN;
    uint8_t b[TYPE_READ];
    if (sop__rmem_read(m, type, b, sizeof b) == 0 &&
        read_cstr(m, rd64(b, L->tp_name), e.name, sizeof e.name) == 0 &&
        is_type_object(m, L, type)) {
        const char *n = e.name;
        e.kind = K_OTHER;
        if (name_is(n, "coroutine"))
            e.kind = K_CORO;
        else if (name_is(n, "generator"))
            e.kind = K_GEN;
        else if (name_is(n, "function"))
            e.kind = K_FUNC;
        else if (name_is(n, "list"))
            e.kind = K_LIST;
        else if (name_is(n, "tuple"))
            e.kind = K_TUPLE;
        else if (name_is(n, "int"))
            e.kind = K_INT;
        else if (name_is(n, "float"))
            e.kind = K_FLOAT;
        else if (name_is(n, "bool"))
            e.kind = K_BOOL;
        else if (name_is(n, "method"))
            e.kind = K_METHOD;
        else if (name_is(n, "collections.deque"))
            e.kind = K_DEQUE;
        else if (name_is(n, "_asyncio.FutureIter") || name_is(n, "FutureIter"))
            e.kind = K_FUTUREITER;
        else {
            /* _asyncio.Task / _asyncio.Future, or a class deriving from them */
            uint64_t t = type;
            char bn[96];
            for (int i = 0; t && i < MAX_BASES; i++) {
                uint64_t nm = 0;
                if (sop__rmem_u64(m, t + L->tp_name, &nm) < 0 ||
                    read_cstr(m, nm, bn, sizeof bn) < 0)
                    break;
                if (name_is(bn, "_asyncio.Task")) {
                    e.kind = K_TASK;
                    break;
                }
                if (name_is(bn, "_asyncio.Future")) {
                    e.kind = K_FUTURE;
                    break;
                }
                if (sop__rmem_u64(m, t + TP_BASE, &t) < 0)
                    break;
            }
        }
    }
    if (slot && tr->ntypes < TYPE_SLOTS / 2) {
        *slot = e;
        tr->ntypes++;
        if (name)
            *name = slot->name;
        return e.kind;
    }
    return e.kind; /* table full: not cached, name unknown */
}

static int obj_kind(tasks_reader *tr, uint64_t obj, const char **name)
{
    uint64_t type = 0;
    if (name)
        *name = "?";
    if (obj < SOP_RMEM_PAGE || (obj & 7) ||
        sop__rmem_u64(&tr->w.mem, obj + tr->w.L.ob_type, &type) < 0)
        return K_UNKNOWN;
    return type_kind(tr, type, name);
}

/* ---- 1. the GC lists ----------------------------------------------------------------- */

static int add_found(tasks_reader *tr, uint64_t obj)
{
    if (tr->nfound >= SOP_TASKS_MAX) {
        tr->truncated = true;
        return 0;
    }
    if (tr->nfound == tr->capfound) {
        size_t ncap = tr->capfound ? tr->capfound * 2 : 1024;
        uint64_t *n = realloc(tr->found, ncap * sizeof *n);
        if (!n)
            return -ENOMEM;
        tr->found = n;
        tr->capfound = ncap;
    }
    tr->found[tr->nfound++] = obj;
    return 0;
}

/* Walk one GC list (as heap_walk.c's walk_list); 0, -EAGAIN (why), or a fatal read error. */
static int walk_list(tasks_reader *tr, uint64_t head, uint64_t *walked, char *why, size_t whylen)
{
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    uint64_t prev = head, node = 0;
    *walked = 0;
    int r = sop__rmem_u64(m, head, &node);
    if (r < 0)
        return r;
    node &= ~(uint64_t)3;
    uint8_t b[32];
    for (uint64_t n = 0; node != head; n++) {
        if (n >= MAX_LIST_OBJECTS) {
            snprintf(why, whylen, "more than %llu objects", (unsigned long long)MAX_LIST_OBJECTS);
            return -EAGAIN;
        }
        if (tr->max_objects && tr->seen + n >= tr->max_objects) {
            snprintf(why, whylen, "stopped after %llu GC objects (the read's bound)",
                     (unsigned long long)tr->max_objects);
            *walked = n;
            return -E2BIG;
        }
        if (!node || (node & 7)) {
            snprintf(why, whylen, "bad link after %llu objects", (unsigned long long)n);
            return -EAGAIN;
        }
        if ((r = sop__rmem_read(m, node, b, sizeof b)) < 0) {
            if (fatal(r))
                return r;
            snprintf(why, whylen, "unreadable node after %llu objects", (unsigned long long)n);
            return -EAGAIN;
        }
        uint64_t next = rd64(b, 0) & ~(uint64_t)3, back = rd64(b, 8) & ~(uint64_t)3;
        if (back != prev) {
            if ((r = sop__rmem_read_direct(m, node, b, sizeof b)) < 0 ||
                (rd64(b, 8) & ~(uint64_t)3) != prev) {
                snprintf(why, whylen, "list changed under the walk after %llu objects",
                         (unsigned long long)n);
                return -EAGAIN;
            }
            next = rd64(b, 0) & ~(uint64_t)3;
        }
        uint64_t type = rd64(b, L->gc_head_size + L->ob_type);
        if (type_kind(tr, type, NULL) == K_TASK && (r = add_found(tr, node + L->gc_head_size)) < 0)
            return r;
        (*walked)++;
        prev = node;
        node = next;
    }
    return 0;
}

static int walk_gc(tasks_reader *tr, sop_pytasks *out)
{
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    uint64_t interp = 0, last = 0;
    int r = sop__rmem_u64(m, tr->w.runtime + L->rt_interp_head, &interp);
    if (r < 0)
        return r == -EFAULT ? -ENOEXEC : r;
    for (int i = 0; interp && i < MAX_INTERPS; i++) { /* the main interpreter is the last */
        last = interp;
        if (sop__rmem_u64(m, interp + L->is_next, &interp) < 0)
            break;
    }
    if (!last) {
        snprintf(out->partial, sizeof out->partial,
                 "no interpreter (not initialized or finalizing)");
        out->complete = false;
        return 0;
    }
    uint64_t gc = L->rt_gc ? tr->w.runtime + L->rt_gc : last + L->is_gc;
    static const char *const lists[] = {"generation 0", "generation 1", "generation 2",
                                        "permanent generation"};
    for (int g = 0; g < 4; g++) {
        uint64_t head =
            g < 3 ? gc + L->gc_generations + (uint32_t)g * L->gc_gen_size : gc + L->gc_permanent;
        uint64_t walked = 0;
        char why[160] = "";
        size_t start = tr->nfound;
        for (int tries = 0;; tries++) {
            for (int k = 0; k < 20; k++) { /* a collection moves objects: wait a little */
                int32_t collecting = 0;
                if (sop__rmem_read_direct(m, gc + L->gc_collecting, &collecting, 4) < 0 ||
                    collecting != 1)
                    break;
                usleep(5000);
            }
            tr->nfound = start;
            r = walk_list(tr, head, &walked, why, sizeof why);
            if (r != -EAGAIN || tries >= LIST_RETRIES)
                break;
            sop__rmem_flush(m);
        }
        out->objects += walked;
        tr->seen += walked;
        if (r == -EAGAIN || r == -E2BIG) {
            if (out->complete)
                snprintf(out->partial, sizeof out->partial, "%s: %s", lists[g], why);
            out->complete = false;
            if (r == -E2BIG)
                break;
        } else if (r < 0) {
            return r;
        }
    }
    return 0;
}

/* ---- 2. one task ------------------------------------------------------------------- */

static int push_level(tasks_reader *tr, sop_pytask *t, size_t *cap, uint64_t code,
                      int64_t addr_bytes, bool gen)
{
    int err = 0;
    const code_entry *c = sop__pywalk_code(&tr->w, code, &err);
    if (!c)
        return err ? err : -EINVAL;
    if (t->nframes == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4;
        sop_await_frame *nf = realloc(t->frames, ncap * sizeof *nf);
        if (!nf)
            return -ENOMEM;
        t->frames = nf;
        *cap = ncap;
    }
    int line = -1;
    if (addr_bytes >= -2 && addr_bytes < INT_MAX)
        line =
            sop__py_addr2line(tr->w.L.lines, c->lines, c->nlines, c->firstlineno, (int)addr_bytes);
    sop_await_frame *f = &t->frames[t->nframes++];
    f->func = c->func;
    f->file = c->file;
    f->line = line;
    f->generator = gen;
    f->slots = 0;
    f->nslots = 0;
    return 0;
}

/* One coroutine / generator level: its frame pushed, *yf the object it awaits (0: none),
 * *executing when it runs now. Returns 0, 1 when it has no frame (finished), or an error. */
static int read_level(tasks_reader *tr, sop_pytask *t, size_t *cap, uint64_t obj, bool gen,
                      uint64_t *yf, bool *executing)
{
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    *yf = 0;
    *executing = false;
    int r;
    if (L->gen_frame) { /* 3.8-3.10: a PyFrameObject */
        uint64_t f = 0;
        if ((r = sop__rmem_u64(m, obj + L->gen_frame, &f)) < 0)
            return r;
        if (!f)
            return 1;
        uint8_t fb[128];
        if ((r = sop__rmem_read(m, f, fb, sizeof fb)) < 0)
            return r;
        if ((int64_t)rd64(fb, 0) <= 0)
            return -EINVAL; /* freed */
        uint64_t code = rd64(fb, L->fo_code);
        int32_t lasti = rd32(fb, L->fo_lasti);
        int8_t st = (int8_t)fb[L->fo_state];
        *executing = L->fo_state_enum ? st == FRAME_EXECUTING : st == 1;
        int64_t addr = L->lines == SOP_PYLINES_310 ? (int64_t)lasti * 2 : lasti;
        if ((r = push_level(tr, t, cap, code, addr, gen)) < 0)
            return r;
        tr->last_locals = f + L->frame_localsplus;
        if (*executing || lasti < 0)
            return 0;
        {
            uint64_t lp = f + L->frame_localsplus, end = 0;
            if (L->fo_stacktop) {
                end = rd64(fb, L->fo_stacktop);
            } else {
                int32_t d = rd32(fb, L->fo_stackdepth);
                uint64_t vs = rd64(fb, L->fo_valuestack);
                if (d >= 0 && d <= MAX_STACK_SLOTS && vs >= lp)
                    end = vs + 8 * (uint64_t)d;
            }
            sop_await_frame *lv = &t->frames[t->nframes - 1];
            if (end > lp && (end - lp) % 8 == 0) {
                uint64_t n = (end - lp) / 8;
                lv->slots = lp;
                lv->nslots = (uint32_t)(n < MAX_FRAME_SLOTS ? n : MAX_FRAME_SLOTS);
            }
        }
        /* _PyGen_yf: the next instruction is YIELD_FROM */
        uint64_t bytes = 0;
        uint8_t op = 0;
        int64_t next = L->lines == SOP_PYLINES_310 ? ((int64_t)lasti + 1) * 2 : (int64_t)lasti + 2;
        if ((r = sop__rmem_u64(m, code + L->co_code, &bytes)) < 0 ||
            (r = sop__rmem_read(m, bytes + L->str.bytes_sval + (uint64_t)next, &op, 1)) < 0)
            return r;
        if (op != OP_YIELD_FROM)
            return 0;
        uint64_t top;
        if (L->fo_stacktop) {
            top = rd64(fb, L->fo_stacktop);
            if (!top)
                return 0;
        } else {
            int32_t depth = rd32(fb, L->fo_stackdepth);
            if (depth <= 0 || depth > MAX_STACK_SLOTS)
                return 0;
            top = rd64(fb, L->fo_valuestack) + 8 * (uint64_t)depth;
        }
        return sop__rmem_u64(m, top - 8, yf);
    }
    /* 3.11+: the frame lives inside the generator object */
    int8_t state;
    if ((r = sop__rmem_read(m, obj + L->gen_state, &state, 1)) < 0)
        return r;
    if (state > FRAME_EXECUTING)
        return 1; /* completed or cleared */
    uint64_t iframe = obj + L->gen_iframe;
    uint8_t fb[SOP_PYLAYOUT_MAX_FRAME_READ];
    if ((r = sop__rmem_read(m, iframe, fb, L->if_stacktop + 4)) < 0)
        return r;
    uint64_t code = rd64(fb, L->if_code), instr = rd64(fb, L->if_instr);
    *executing = state == FRAME_EXECUTING;
    if ((r = push_level(tr, t, cap, code, (int64_t)(instr - (code + L->co_code_adaptive)), gen)) <
        0)
        return r;
    tr->last_locals = iframe + L->frame_localsplus;
    if (!*executing) {
        int32_t top = rd32(fb, L->if_stacktop);
        sop_await_frame *lv = &t->frames[t->nframes - 1];
        if (top > 0 && top <= MAX_STACK_SLOTS) {
            lv->slots = iframe + L->frame_localsplus;
            lv->nslots = (uint32_t)top < MAX_FRAME_SLOTS ? (uint32_t)top : MAX_FRAME_SLOTS;
        }
    }
    bool yield_from;
    if (L->minor == 11) {
        uint8_t next[2];
        yield_from = state == FRAME_SUSPENDED_311 && sop__rmem_read(m, instr + 2, next, 2) == 0 &&
                     (next[0] == OP_RESUME_311 || next[0] == OP_RESUME_QUICK_311) && next[1] >= 2;
    } else {
        yield_from = state == FRAME_SUSPENDED_YIELD_FROM_312;
    }
    if (!yield_from)
        return 0;
    int32_t stacktop = rd32(fb, L->if_stacktop);
    if (stacktop <= 0 || stacktop > MAX_STACK_SLOTS)
        return 0;
    return sop__rmem_u64(m, iframe + L->frame_localsplus + 8 * ((uint64_t)stacktop - 1), yf);
}

static bool ends_with(const char *s, const char *suffix)
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
        if (ends_with(f->file, known[i].file) && strcmp(f->func, known[i].func) == 0)
            return known[i].k;
    /* 3.8-3.10 name a level by co_name only ("acquire" is Lock's and Semaphore's): the class
     * of its `self` (or a base of it) says which. */
    if (ends_with(f->file, "/asyncio/locks.py") || ends_with(f->file, "/asyncio/queues.py")) {
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
    if (ends_with(f->file, "/asyncio/selector_events.py") &&
        strncmp(f->func, "BaseSelectorEventLoop.sock_", 27) == 0)
        return SOP_WAIT_SOCKET;
    if (ends_with(f->file, "/asyncio/selector_events.py") && strncmp(f->func, "sock_", 5) == 0)
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
        obj_kind(tr, list, NULL) == K_LIST) {
        int64_t size = 0;
        uint64_t items = 0;
        if (sop__rmem_read(m, list + L->ob_size, &size, 8) == 0 && size > 0 &&
            sop__rmem_u64(m, list + L->list_items, &items) == 0) {
            for (int64_t i = 0; i < size && n < MAX_CALLBACKS; i++) {
                uint64_t tup = 0, cb = 0; /* (callback, context) */
                if (sop__rmem_u64(m, items + 8 * (uint64_t)i, &tup) == 0 &&
                    obj_kind(tr, tup, NULL) == K_TUPLE &&
                    sop__rmem_u64(m, tup + L->ob_size + 8, &cb) == 0)
                    cbs[n++] = cb;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t code = 0;
        int err = 0;
        if (obj_kind(tr, cbs[i], NULL) != K_FUNC ||
            sop__rmem_u64(m, cbs[i] + L->func_code, &code) < 0)
            continue;
        const code_entry *c = sop__pywalk_code(&tr->w, code, &err);
        if (c && ends_with(c->func, "_call_check_cancel") &&
            ends_with(c->file, "/asyncio/futures.py"))
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
        obj_kind(tr, list, NULL) != K_LIST || sop__rmem_read(m, list + L->ob_size, &size, 8) < 0 ||
        size <= 0 || sop__rmem_u64(m, list + L->list_items, &items) < 0)
        return 0;
    for (int64_t i = 0; i < size; i++) {
        if (t->nawaits >= SOP_TASK_MAX_AWAITS) {
            t->awaits_cut = true;
            break;
        }
        uint64_t child = 0;
        if (sop__rmem_u64(m, items + 8 * (uint64_t)i, &child) < 0)
            break;
        if (obj_kind(tr, child, NULL) == K_TASK) {
            int r = add_await(t, child);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

/* The value of a Python int of at most two 30-bit digits (*neg for a negative one); -EINVAL
 * for anything else. 3.12+: lv_tag = ndigits << 3 | sign; before: signed ob_size. */
static int read_small_int(tasks_reader *tr, uint64_t obj, uint64_t *v, bool *neg)
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

static int read_task(tasks_reader *tr, uint64_t addr, sop_pytask *t)
{
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    memset(t, 0, sizeof *t);
    t->addr = addr;
    t->sleep_s = NAN;
    uint8_t b[TASK_READ];
    int r = sop__rmem_read(m, addr, b, sizeof b);
    if (r < 0) {
        snprintf(t->partial, sizeof t->partial, "task unreadable (%s)", sop__strerror(-r));
        t->state = "pending";
        return fatal(r) ? r : 0;
    }
    int32_t state = rd32(b, L->fut_state);
    bool cancel_asked = false;
    if (L->task_must_cancel_bit < 0)
        cancel_asked = rd32(b, L->task_must_cancel) != 0;
    else
        cancel_asked = (rd32(b, L->task_must_cancel) >> L->task_must_cancel_bit) & 1;
    if (L->task_num_cancels && rd32(b, L->task_num_cancels) > 0)
        cancel_asked = true;
    uint64_t waiter = rd64(b, L->task_fut_waiter), coro = rd64(b, L->task_coro);
    t->refcnt = (int64_t)rd64(b, 0);
    if (!cancel_asked && waiter) { /* 3.8-3.10: cancel() cancels the waiter first */
        int32_t ws = 0;
        if ((obj_kind(tr, waiter, NULL) == K_TASK || obj_kind(tr, waiter, NULL) == K_FUTURE) &&
            sop__rmem_read(m, waiter + L->fut_state, &ws, 4) == 0 && ws == FUT_CANCELLED)
            cancel_asked = true;
    }
    if (state == FUT_PENDING) {
        t->state = cancel_asked ? "cancelling" : "pending";
    } else {
        t->state = "done";
        t->outcome = state == FUT_CANCELLED                   ? "cancelled"
                     : rd64(b, L->fut_result) || !rd64(b, 48) ? "result"
                                                              : "exception";
    }
    uint64_t name = rd64(b, L->task_name);
    if (name && obj_kind(tr, name, NULL) == K_INT) {
        /* 3.12+: an unnamed task keeps its number until get_name() formats "Task-N" */
        uint64_t v = 0;
        bool neg = false;
        if (read_small_int(tr, name, &v, &neg) == 0 && !neg)
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
        int k = obj_kind(tr, obj, &tn);
        if (k == K_CORO || k == K_GEN) {
            uint64_t yf = 0;
            bool executing = false;
            r = read_level(tr, t, &cap, obj, k == K_GEN, &yf, &executing);
            if (r < 0) {
                if (fatal(r))
                    return r;
                snprintf(t->partial, sizeof t->partial, "await level %zu unreadable (%s)", depth,
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
            k = obj_kind(tr, obj, &tn);
        }
        t->waits_addr = obj;
        snprintf(t->waits_type, sizeof t->waits_type, "%s", tn);
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
        if (sop__rmem_u64(m, tr->last_locals, &self) == 0 && self &&
            sop__rmem_u64(m, self + L->ob_type, &type) == 0 && is_type_object(m, L, type)) {
            for (int i = 0; type && i < 4; i++) {
                uint64_t nm = 0;
                if (sop__rmem_u64(m, type + L->tp_name, &nm) < 0 ||
                    read_cstr(m, nm, names[i], sizeof names[i]) < 0)
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
        int dk = self ? obj_kind(tr, self, NULL) : K_UNKNOWN;
        if (k == SOP_WAIT_SLEEP && dk == K_FLOAT)
            (void)sop__rmem_read(m, self + 16, &t->sleep_s, sizeof t->sleep_s); /* ob_fval */
        else if (k == SOP_WAIT_SLEEP && dk == K_INT && read_small_int(tr, self, &v, &neg) == 0)
            t->sleep_s = neg ? -(double)v : (double)v;
    }
    return 0;
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
    }
    free(t->tasks);
    free(t->prims);
    sop__python_free(t->text);
    free(t);
}

/* ---- 3. the locks and semaphores tasks wait on ---------------------------------------- */

static int cmp_prims(const void *pa, const void *pb)
{
    const sop_pyprim *a = pa, *b = pb;
    if (a->waiting != b->waiting)
        return a->waiting < b->waiting ? 1 : -1;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* The prim (index into p[0..n), -1 none) whose bound `__aexit__` the frame slot value v is:
 * what `async with prim:` keeps on the frame's value stack for the whole block (a mere
 * reference to the lock, a local holding it, says nothing about who holds it). */
static long exit_of(tasks_reader *tr, uint64_t v, const sop_pyprim *p, size_t n)
{
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    uint64_t self = 0, func = 0, code = 0;
    int err = 0;
    if (!v || obj_kind(tr, v, NULL) != K_METHOD || sop__rmem_u64(m, v + METHOD_SELF, &self) < 0)
        return -1;
    long k = 0;
    while ((size_t)k < n && p[k].addr != self)
        k++;
    if ((size_t)k == n || sop__rmem_u64(m, v + METHOD_FUNC, &func) < 0 ||
        obj_kind(tr, func, NULL) != K_FUNC || sop__rmem_u64(m, func + L->func_code, &code) < 0)
        return -1;
    const code_entry *c = sop__pywalk_code(&tr->w, code, &err);
    return c && ends_with(c->func, "__aexit__") ? k : -1;
}

static void prim_fields(tasks_reader *tr, sop_pyprim *p)
{
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    p->queue = -1;
    p->locked = -1;
    p->value = LLONG_MIN;
    uint64_t v = 0, n = 0;
    bool neg = false;
    int64_t size = 0;
    if (sop__py_instance_attr(m, L, p->addr, "_waiters", &v) == 0) {
        const char *tn = "?";
        int k = obj_kind(tr, v, &tn);
        if (k == K_DEQUE && sop__rmem_read(m, v + L->ob_size, &size, 8) == 0 && size >= 0)
            p->queue = size;
        else if (name_is(tn, "NoneType")) /* nobody has queued yet */
            p->queue = 0;
    }
    if (p->kind == SOP_WAIT_LOCK && sop__py_instance_attr(m, L, p->addr, "_locked", &v) == 0 &&
        obj_kind(tr, v, NULL) == K_BOOL && read_small_int(tr, v, &n, &neg) == 0)
        p->locked = n != 0;
    if (p->kind == SOP_WAIT_SEMAPHORE && sop__py_instance_attr(m, L, p->addr, "_value", &v) == 0 &&
        obj_kind(tr, v, NULL) == K_INT && read_small_int(tr, v, &n, &neg) == 0)
        p->value = neg ? -(long long)n : (long long)n;
}

/* Every lock or semaphore a task waits on (the SOP_PRIMS_MAX most waited on): its fields and
 * its holders, found by a bounded scan of the other pending tasks' suspended frames. */
static int describe_prims(tasks_reader *tr, sop_pytasks *out)
{
    sop_pyprim *p = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < out->ntasks; i++) {
        const sop_pytask *t = &out->tasks[i];
        if (!t->prim)
            continue;
        size_t k = 0;
        while (k < n && p[k].addr != t->prim)
            k++;
        if (k == n) {
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 8;
                sop_pyprim *np = realloc(p, nc * sizeof *np);
                if (!np) {
                    free(p);
                    return -ENOMEM;
                }
                p = np;
                cap = nc;
            }
            memset(&p[n], 0, sizeof p[n]);
            p[n].addr = t->prim;
            p[n].kind = t->waits;
            const char *tn = "?";
            (void)obj_kind(tr, t->prim, &tn);
            snprintf(p[n].type, sizeof p[n].type, "%s", tn);
            n++;
        }
        p[k].waiting++;
    }
    if (!n) {
        free(p);
        return 0;
    }
    qsort(p, n, sizeof *p, cmp_prims);
    if (n > SOP_PRIMS_MAX)
        n = SOP_PRIMS_MAX;
    for (size_t k = 0; k < n; k++)
        prim_fields(tr, &p[k]);
    /* one pass over the pending tasks' suspended frames for all of them */
    uint64_t budget = MAX_HOLDER_SLOTS;
    uint64_t slotv[MAX_FRAME_SLOTS];
    bool cut = false;
    for (size_t i = 0; i < out->ntasks && !cut; i++) {
        const sop_pytask *t = &out->tasks[i];
        if (strcmp(t->state, "done") == 0 || t->running)
            continue;
        long held = -1;
        for (size_t f = 0; f < t->nframes && held < 0; f++) {
            const sop_await_frame *lv = &t->frames[f];
            if (!lv->nslots)
                continue;
            if (budget < lv->nslots) {
                cut = true;
                break;
            }
            budget -= lv->nslots;
            if (sop__rmem_read(&tr->w.mem, lv->slots, slotv, 8 * (size_t)lv->nslots) < 0)
                continue;
            for (uint32_t j = 0; j < lv->nslots && held < 0; j++) {
                long k = exit_of(tr, slotv[j], p, n);
                if (k >= 0 && p[k].addr != t->prim) /* its waiters keep it too (3.11+) */
                    held = k;
            }
        }
        if (held < 0)
            continue;
        sop_pyprim *q = &p[held];
        if (q->nholders < SOP_PRIM_MAX_HOLDERS)
            q->holders[q->nholders++] = t->addr;
        else
            q->holders_cut = true;
    }
    for (size_t k = 0; cut && k < n; k++)
        p[k].holders_partial = true;
    out->prims = p;
    out->nprims = n;
    return 0;
}

static int read_all(tasks_reader *tr, sop_pytasks *out)
{
    int r = walk_gc(tr, out);
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
        r = read_task(tr, tr->found[i], t);
        out->ntasks++;
        if (r < 0)
            return r;
        if (t->partial[0] && out->complete) {
            out->complete = false;
            snprintf(out->partial, sizeof out->partial, "task %.60s: %.120s", t->name, t->partial);
        }
    }
    qsort(out->tasks, out->ntasks, sizeof *out->tasks, cmp_tasks);
    if ((r = describe_prims(tr, out)) < 0)
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
