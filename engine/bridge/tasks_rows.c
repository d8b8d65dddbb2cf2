/* tasks_rows.c — ev.python.tasks from two reads of the target's asyncio tasks
 * (probes/python/asyncio_read.c), at the start and the end of the window: how many are
 * pending and how that changed, how many were created and finished, how many stayed pending
 * the whole window, and the largest groups of pending tasks waiting on the same thing (the
 * same kind of wait at the same line of the program). Its keys are the table sop__evk_tasks
 * below (the group "python.tasks" of docs/evidence.md): the figures are computed first into a
 * small struct the plain rows read; the flags and lists are rows with their own writers
 * (SOP_EVK_W), which also write the H rows under them. Depends on value.h, schema.h. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"
#include "python/asyncio_task_index.h"
#include "python/asyncio_tasks.h"
#include "schema.h"

#define TOP_WAITS 5

typedef struct {
    int64_t count, pending, pending_start, pending_growth, running, created, finished;
    int64_t pending_whole_window, unreferenced, unreferenced_both;
    double window_s, pending_growth_per_s, read_ms;
} tasks_figs;

/* The writers of the flags and lists (defined below the table; ctx a tasks_ctx). */
static void w_complete(sop_value *o, const char *name, const void *base, void *ctx);
static void w_partial(sop_value *o, const char *name, const void *base, void *ctx);
static void w_running_tasks(sop_value *o, const char *name, const void *base, void *ctx);
static void w_waits(sop_value *o, const char *name, const void *base, void *ctx);
static void w_convoys(sop_value *o, const char *name, const void *base, void *ctx);
static void w_stuck(sop_value *o, const char *name, const void *base, void *ctx);
static void w_forgotten(sop_value *o, const char *name, const void *base, void *ctx);

#define H SOP_EVK_H
#define W SOP_EVK_W
#define D(k, f, u, d) SOP_EVK_D(k, tasks_figs, f, u, d)
#define I(k, f, u, d) SOP_EVK_I(k, tasks_figs, f, u, d)
const sop_evk sop__evk_tasks[] = {
    W("complete", SOP_EVK_BOOL, w_complete, "",
      "both reads listed every task and read every chain"),
    W("partial", SOP_EVK_TEXT, w_partial, "", "where a read stopped"),
    I("count", count, "", "tasks at the end (done ones still referenced included)"),
    I("pending", pending, "", "pending or cancelling at the end"),
    I("pending_start", pending_start, "", "at the start of the window"),
    I("pending_growth", pending_growth, "", "pending - pending_start"),
    D("pending_growth_per_s", pending_growth_per_s, "1/s", ""),
    I("running", running, "", "tasks whose coroutine runs at the end"),
    I("created", created, "", "pending or done at the end, not there at the start"),
    I("finished", finished, "", "pending at the start, done or gone at the end"),
    I("pending_whole_window", pending_whole_window, "", "pending at both reads"),
    D("window_s", window_s, "s", "between the two reads"),
    D("read_ms", read_ms, "ms", "the end read's wall time"),
    W("running_tasks", SOP_EVK_ARR, w_running_tasks, "",
      "the tasks whose coroutine runs at the end read (the loop's current task), at most 8"),
    H("running_tasks[].task", SOP_EVK_TEXT, "", "its name"),
    H("running_tasks[].func", SOP_EVK_TEXT, "", "its coroutine's function"),
    H("running_tasks[].file", SOP_EVK_TEXT, "", ""),
    H("running_tasks[].line", SOP_EVK_INT, "", "-1 when unknown"),
    W("waits", SOP_EVK_ARR, w_waits, "",
      "pending tasks grouped by what they wait on: the top 5 groups, largest first"),
    H("waits[].kind", SOP_EVK_STR, "",
      "task, gather, executor, sleep, lock, event, condition, semaphore, queue_get, "
      "queue_put, stream, socket, wait, future, other, none (docs/asyncio.md)"),
    H("waits[].frame", SOP_EVK_TEXT, "",
      "`func (file:line)`: the program's own innermost await level, else the innermost"),
    H("waits[].count", SOP_EVK_INT, "", "pending tasks in the group"),
    H("waits[].whole_window", SOP_EVK_INT, "", "of them, pending at both reads"),
    H("waits[].task", SOP_EVK_TEXT, "", "one of them, by name"),
    W("convoys", SOP_EVK_ARR, w_convoys, "",
      "the asyncio.Lock / Semaphore objects pending tasks wait on at the end read (each waiter's "
      "innermost await is that object's acquire), most waiters first, at most 3"),
    H("convoys[].kind", SOP_EVK_STR, "", "lock or semaphore"),
    H("convoys[].type", SOP_EVK_TEXT, "", "its class (Lock, Semaphore, BoundedSemaphore, ...)"),
    H("convoys[].waiting", SOP_EVK_INT, "", "tasks waiting on it at the end read"),
    H("convoys[].waiting_start", SOP_EVK_INT, "",
      "tasks waiting on the same object at the start read (0: none did)"),
    H("convoys[].whole_window", SOP_EVK_INT, "", "tasks waiting on it at both reads"),
    H("convoys[].queue", SOP_EVK_INT, "", "len(_waiters): waiter futures queued on it; -1 unread"),
    H("convoys[].locked", SOP_EVK_BOOL, "", "a lock: its _locked"),
    H("convoys[].value", SOP_EVK_INT, "", "a semaphore: its _value (free slots)"),
    H("convoys[].site", SOP_EVK_TEXT, "",
      "`func (file:line)`: where the waiters acquire it (their own innermost level)"),
    H("convoys[].task", SOP_EVK_TEXT, "", "one waiter, by name"),
    H("convoys[].holders", SOP_EVK_INT, "",
      "tasks seen holding it (inside an `async with` on it; docs/asyncio.md)"),
    H("convoys[].holder", SOP_EVK_TEXT, "", "one holder, by name (absent: none seen)"),
    H("convoys[].holder_waits", SOP_EVK_STR, "", "what that holder's innermost await waits on"),
    H("convoys[].holder_frame", SOP_EVK_TEXT, "",
      "`func (file:line)`: the holder's own innermost await level"),
    H("convoys[].holder_chain", SOP_EVK_TEXT, "",
      "the holder's await chain, outermost first: `func (file:line) > ...`"),
    W("stuck", SOP_EVK_ARR, w_stuck, "",
      "pending tasks pending at both reads (so at least window_s old: CPython keeps no creation "
      "time) whose siblings (tasks of the same coroutine function pending at the start read) "
      "nearly all finished within the window; per coroutine, the largest group of siblings first, "
      "at most 3"),
    H("stuck[].task", SOP_EVK_TEXT, "", "the stuck task, by name (the first of them)"),
    H("stuck[].count", SOP_EVK_INT, "", "its siblings pending at both reads, itself included"),
    H("stuck[].coroutine", SOP_EVK_TEXT, "", "`func (file:line)`: the tasks' coroutine"),
    H("stuck[].siblings_start", SOP_EVK_INT, "",
      "tasks of that coroutine pending at the start read, the stuck ones included"),
    H("stuck[].siblings_finished", SOP_EVK_INT, "", "of them, finished (done or gone) at the end"),
    H("stuck[].siblings_created", SOP_EVK_INT, "",
      "tasks of that coroutine at the end read that were not there at the start"),
    H("stuck[].age_min_s", SOP_EVK_NUM, "s", "the stuck task's age is at least this: the window"),
    H("stuck[].waits", SOP_EVK_STR, "", "what its innermost await waits on (waits[].kind)"),
    H("stuck[].frame", SOP_EVK_TEXT, "", "`func (file:line)`: its own innermost await level"),
    H("stuck[].chain", SOP_EVK_TEXT, "", "its await chain, outermost first"),
    I("unreferenced", unreferenced, "",
      "pending tasks of the program's own coroutines at the end that nothing but what they await "
      "refers to (ob_refcnt 1: no variable, collection or awaiting task holds them; "
      "docs/asyncio.md); a library's own are left out"),
    I("unreferenced_both", unreferenced_both, "", "of them, unreferenced at the start read too"),
    W("forgotten", SOP_EVK_ARR, w_forgotten, "",
      "the unreferenced tasks at the end grouped by coroutine, largest group first, at most 3"),
    H("forgotten[].coroutine", SOP_EVK_TEXT, "", "`func (file)`: their coroutine"),
    H("forgotten[].count", SOP_EVK_INT, "", "unreferenced tasks of that coroutine at the end"),
    H("forgotten[].both", SOP_EVK_INT, "", "of them, unreferenced at the start read too"),
    H("forgotten[].task", SOP_EVK_TEXT, "", "one of them, by name"),
    H("forgotten[].waits", SOP_EVK_STR, "", "what that one waits on (waits[].kind)"),
    H("forgotten[].frame", SOP_EVK_TEXT, "", "`func (file:line)`: its own innermost await level"),
};
const size_t sop__evk_tasks_n = sizeof sop__evk_tasks / sizeof sop__evk_tasks[0];
#undef H
#undef W
#undef D
#undef I

static bool pending(const sop_pytask *t)
{
    return strcmp(t->state, "done") != 0;
}

static bool library_file(const char *f)
{
    return !f || f[0] == '<' || strstr(f, "/site-packages/") || strstr(f, "/dist-packages/") ||
           strstr(f, "/lib/python3") || strstr(f, "/lib64/python3");
}

static void wait_frame(const sop_pytask *t, char *out, size_t cap)
{
    const sop_await_frame *f = NULL;
    for (size_t i = t->nframes; i-- > 0 && !f;)
        if (!library_file(t->frames[i].file))
            f = &t->frames[i];
    if (!f && t->nframes)
        f = &t->frames[t->nframes - 1];
    if (f)
        snprintf(out, cap, "%s (%s:%d)", f->func, f->file, f->line);
    else
        out[0] = '\0';
}

typedef struct {
    const char *kind;
    char frame[320];
    int64_t count, whole;
    const char *task;
} wait_group;

static int cmp_groups(const void *pa, const void *pb)
{
    const wait_group *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count < b->count ? 1 : -1;
    int c = strcmp(a->kind, b->kind);
    return c ? c : strcmp(a->frame, b->frame);
}

static bool wait_eq(size_t k, const void *key, const void *ctx)
{
    const wait_group *g = &((const wait_group *)ctx)[k], *w = key;
    return strcmp(g->kind, w->kind) == 0 && strcmp(g->frame, w->frame) == 0;
}

typedef struct {
    const sop_pytasks *a, *b;
    const sop_task_index *ia, *ib; /* NULL: that read absent, or no memory for its index */
    double window_s;
} tasks_ctx;

/* The same task in the other read (its index: NULL finds none). */
static const sop_pytask *find(const sop_task_index *ix, const sop_pytask *t)
{
    return ix ? sop__task_index_same(ix, t) : NULL;
}

#define TOP_CONVOYS 3

/* The holder's await chain as one line, outermost first (bounded). */
static void chain_line(const sop_pytask *t, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t k = 0; k < t->nframes && o + 1 < cap; k++) {
        const sop_await_frame *f = &t->frames[k];
        int n = snprintf(out + o, cap - o, "%s%s (%s:%d)", k ? " > " : "", f->func,
                         f->file ? f->file : "?", f->line);
        if (n < 0)
            break;
        o += (size_t)n;
    }
    if (o >= cap && cap > 4)
        memcpy(out + cap - 4, "...", 4);
}

#define TOP_STUCK 3

/* The coroutine a task runs (its first await level), as "func (file:line)" of its definition
 * is not known: the function and file name the group. */
static bool same_coro(const sop_pytask *x, const sop_pytask *y)
{
    return x->nframes && y->nframes && strcmp(x->frames[0].func, y->frames[0].func) == 0 &&
           strcmp(x->frames[0].file ? x->frames[0].file : "",
                  y->frames[0].file ? y->frames[0].file : "") == 0;
}

/* Groups found by key in expected constant time, so that grouping n tasks stays linear however
 * many distinct groups there are: each slot holds a group's index + 1 (0: empty), with more
 * slots than groups. */
typedef struct {
    size_t cap, *slot;
} group_table;

static bool group_table_init(group_table *g, size_t n)
{
    g->cap = 16;
    while (g->cap < 2 * n + 1)
        g->cap *= 2;
    g->slot = calloc(g->cap, sizeof *g->slot);
    return g->slot != NULL;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (h ^ 0xff) * 1099511628211ull; /* a separator: ("ab","c") is not ("a","bc") */
}

/* The slot of the group that eq says equals key, or the empty slot where it goes. */
static size_t *group_at(const group_table *g, uint64_t h,
                        bool (*eq)(size_t k, const void *key, const void *ctx), const void *key,
                        const void *ctx)
{
    for (size_t i = (size_t)(h ^ h >> 29) & (g->cap - 1);; i = (i + 1) & (g->cap - 1))
        if (!g->slot[i] || eq(g->slot[i] - 1, key, ctx))
            return &g->slot[i];
}

static uint64_t coro_hash(const sop_pytask *t)
{
    return hash_str(hash_str(14695981039346656037ull, t->frames[0].func), t->frames[0].file);
}

/* A group k of tasks of one coroutine: its first task is tasks[firsts[k]]. */
typedef struct {
    const sop_pytasks *s;
    const size_t *first;
    size_t stride; /* bytes between consecutive `first` fields */
} coro_groups;

static bool coro_eq(size_t k, const void *key, const void *ctx)
{
    const coro_groups *c = ctx;
    size_t first = *(const size_t *)(const void *)((const char *)c->first + k * c->stride);
    return same_coro(&c->s->tasks[first], key);
}

typedef struct {
    size_t first; /* index in a: the group's first start-pending task */
    int64_t start, finished, both, created;
    const sop_pytask *one; /* a stuck one (in b) */
} coro_group;

static int cmp_coro_groups(const void *pa, const void *pb)
{
    const coro_group *x = pa, *y = pb;
    if (x->start != y->start)
        return x->start < y->start ? 1 : -1;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* Tasks pending at both reads among siblings that came and went: per coroutine of the start
 * read's pending tasks, how many finished, how many stayed. */
static void stuck(sop_value *arr, const tasks_ctx *c)
{
    const sop_pytasks *a = c->a, *b = c->b;
    group_table gt = {0};
    coro_group *g = arr && group_table_init(&gt, a->ntasks)
                        ? calloc(a->ntasks ? a->ntasks : 1, sizeof *g)
                        : NULL;
    coro_groups cg = {a, g ? &g[0].first : NULL, sizeof *g};
    size_t n = 0;
    for (size_t i = 0; g && i < a->ntasks; i++) {
        const sop_pytask *s = &a->tasks[i];
        if (!pending(s) || !s->nframes)
            continue;
        size_t *slot = group_at(&gt, coro_hash(s), coro_eq, s, &cg);
        if (!*slot) {
            g[n].first = i;
            *slot = ++n;
        }
        size_t k = *slot - 1;
        g[k].start++;
        const sop_pytask *e = find(c->ib, s);
        if (!e || !pending(e)) {
            g[k].finished++;
        } else {
            g[k].both++;
            if (!g[k].one && !e->running)
                g[k].one = e;
        }
    }
    for (size_t i = 0; g && i < b->ntasks; i++) {
        const sop_pytask *t = &b->tasks[i];
        if (!t->nframes)
            continue;
        size_t *slot = group_at(&gt, coro_hash(t), coro_eq, t, &cg);
        if (*slot && !find(c->ia, t))
            g[*slot - 1].created++;
    }
    free(gt.slot);
    if (g && n)
        qsort(g, n, sizeof *g, cmp_coro_groups);
    for (size_t k = 0, shown = 0; g && k < n && shown < TOP_STUCK; k++) {
        if (!g[k].both || !g[k].finished || !g[k].one)
            continue;
        const sop_pytask *t = g[k].one;
        const sop_await_frame *f0 = &a->tasks[g[k].first].frames[0];
        char buf[1024];
        sop_value *v = sop__v_obj();
        sop__v_set(v, "task", sop__bridge_text(t->name));
        sop__v_set_int(v, "count", g[k].both);
        snprintf(buf, sizeof buf, "%s (%s)", f0->func, f0->file ? f0->file : "?");
        sop__v_set(v, "coroutine", sop__bridge_text(buf));
        sop__v_set_int(v, "siblings_start", g[k].start);
        sop__v_set_int(v, "siblings_finished", g[k].finished);
        sop__v_set_int(v, "siblings_created", g[k].created);
        sop__v_set_dbl(v, "age_min_s", c->window_s);
        sop__v_set_str(v, "waits", sop__wait_kind_name(t->waits));
        wait_frame(t, buf, 320);
        sop__v_set(v, "frame", sop__bridge_text(buf));
        chain_line(t, buf, sizeof buf);
        sop__v_set(v, "chain", sop__bridge_text(buf));
        sop__v_push(arr, v);
        shown++;
    }
    free(g);
}

/* A task of the program's own coroutine that nothing refers to (a library's own forgotten
 * task, e.g. uvicorn 0.17's lifespan task, is not the program's to fix). */
static bool forgotten_task(const sop_pytask *t)
{
    return sop__task_unreferenced(t) && !library_file(t->frames[0].file);
}

/* Unreferenced at the end and at the start (the same task). */
static bool forgotten_both(const sop_task_index *ia, const sop_pytask *t)
{
    const sop_pytask *s = forgotten_task(t) ? find(ia, t) : NULL;
    return s && forgotten_task(s);
}

#define TOP_FORGOTTEN 3

static void forgotten(sop_value *arr, const tasks_ctx *c)
{
    const sop_pytasks *a = c->a, *b = c->b;
    size_t *first = calloc(b->ntasks ? b->ntasks : 1, sizeof *first);
    int64_t *count = calloc(b->ntasks ? b->ntasks : 1, sizeof *count);
    int64_t *both = calloc(b->ntasks ? b->ntasks : 1, sizeof *both);
    group_table gt = {0};
    bool ok = arr && first && count && both && group_table_init(&gt, b->ntasks);
    coro_groups cg = {b, first, sizeof *first};
    size_t n = 0;
    for (size_t i = 0; ok && i < b->ntasks; i++) {
        const sop_pytask *t = &b->tasks[i];
        if (!forgotten_task(t))
            continue;
        size_t *slot = group_at(&gt, coro_hash(t), coro_eq, t, &cg);
        if (!*slot) {
            first[n] = i;
            *slot = ++n;
        }
        size_t k = *slot - 1;
        count[k]++;
        both[k] += forgotten_both(c->ia, t);
    }
    free(gt.slot);
    for (size_t shown = 0; shown < TOP_FORGOTTEN && shown < n; shown++) {
        size_t best = n;
        for (size_t k = 0; k < n; k++)
            if (count[k] > 0 && (best == n || count[k] > count[best]))
                best = k;
        if (best == n)
            break;
        const sop_pytask *t = &b->tasks[first[best]];
        char buf[400];
        sop_value *v = sop__v_obj();
        snprintf(buf, sizeof buf, "%s (%s)", t->frames[0].func,
                 t->frames[0].file ? t->frames[0].file : "?");
        sop__v_set(v, "coroutine", sop__bridge_text(buf));
        sop__v_set_int(v, "count", count[best]);
        if (a)
            sop__v_set_int(v, "both", both[best]);
        sop__v_set(v, "task", sop__bridge_text(t->name));
        sop__v_set_str(v, "waits", sop__wait_kind_name(t->waits));
        wait_frame(t, buf, 320);
        sop__v_set(v, "frame", sop__bridge_text(buf));
        sop__v_push(arr, v);
        count[best] = -1;
    }
    free(first);
    free(count);
    free(both);
}

static void convoys(sop_value *arr, const tasks_ctx *cx)
{
    const sop_pytasks *a = cx->a, *b = cx->b;
    for (size_t k = 0, shown = 0; arr && k < b->nprims && shown < TOP_CONVOYS; k++) {
        const sop_pyprim *p = &b->prims[k];
        sop_value *c = sop__v_obj();
        sop__v_set_str(c, "kind", sop__wait_kind_name(p->kind));
        sop__v_set(c, "type", sop__bridge_text(p->type));
        sop__v_set_int(c, "waiting", (int64_t)p->waiting);
        int64_t start = 0, whole = 0;
        const sop_pytask *one = NULL;
        for (size_t i = 0; i < b->ntasks; i++) {
            const sop_pytask *t = &b->tasks[i];
            if (t->prim != p->addr)
                continue;
            if (!one)
                one = t;
            const sop_pytask *s = find(cx->ia, t);
            whole += s && s->prim == p->addr;
        }
        for (size_t i = 0; a && i < a->ntasks; i++)
            start += a->tasks[i].prim == p->addr;
        if (a) {
            sop__v_set_int(c, "waiting_start", start);
            sop__v_set_int(c, "whole_window", whole);
        }
        sop__v_set_int(c, "queue", p->queue);
        if (p->locked >= 0)
            sop__v_set_bool(c, "locked", p->locked != 0);
        if (p->value != LLONG_MIN)
            sop__v_set_int(c, "value", p->value);
        char buf[1024];
        if (one) {
            wait_frame(one, buf, 320);
            sop__v_set(c, "site", sop__bridge_text(buf));
            sop__v_set(c, "task", sop__bridge_text(one->name));
        }
        sop__v_set_int(c, "holders", (int64_t)p->nholders);
        long hi = p->nholders && cx->ib ? sop__task_index_find(cx->ib, p->holders[0]) : -1;
        const sop_pytask *h = hi >= 0 ? &b->tasks[hi] : NULL;
        if (h) {
            sop__v_set(c, "holder", sop__bridge_text(h->name));
            sop__v_set_str(c, "holder_waits", sop__wait_kind_name(h->waits));
            wait_frame(h, buf, 320);
            sop__v_set(c, "holder_frame", sop__bridge_text(buf));
            chain_line(h, buf, sizeof buf);
            sop__v_set(c, "holder_chain", sop__bridge_text(buf));
        }
        sop__v_push(arr, c);
        shown++;
    }
}

static void w_complete(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const tasks_ctx *c = ctx;
    sop__v_set_bool(o, name, c->b->complete && (!c->a || c->a->complete));
}

static void w_partial(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const tasks_ctx *c = ctx;
    if (!c->b->complete)
        sop__v_set(o, name, sop__bridge_text(c->b->partial));
    else if (c->a && !c->a->complete)
        sop__v_set(o, name, sop__bridge_text(c->a->partial));
}

static void w_running_tasks(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const sop_pytasks *b = ((const tasks_ctx *)ctx)->b;
    sop_value *arr = sop__v_arr_at(o, name);
    for (size_t i = 0, k = 0; arr && i < b->ntasks && k < 8; i++) {
        const sop_pytask *t = &b->tasks[i];
        if (!t->running || !t->nframes)
            continue;
        sop_value *r = sop__v_obj();
        sop__v_set(r, "task", sop__bridge_text(t->name));
        sop__v_set(r, "func", sop__bridge_text(t->frames[0].func));
        sop__v_set(r, "file", sop__bridge_text(t->frames[0].file));
        sop__v_set_int(r, "line", t->frames[0].line);
        sop__v_push(arr, r);
        k++;
    }
}

/* waits[]: the pending tasks that are not running, grouped by (kind, frame). */
static void w_waits(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const tasks_ctx *c = ctx;
    const sop_pytasks *b = c->b;
    group_table gt = {0};
    wait_group *g =
        group_table_init(&gt, b->ntasks) ? calloc(b->ntasks ? b->ntasks : 1, sizeof *g) : NULL;
    size_t n = 0;
    for (size_t i = 0; g && i < b->ntasks; i++) {
        const sop_pytask *t = &b->tasks[i];
        if (!pending(t) || t->running)
            continue;
        wait_group key = {.kind = sop__wait_kind_name(t->waits)};
        wait_frame(t, key.frame, sizeof key.frame);
        size_t *slot =
            group_at(&gt, hash_str(hash_str(14695981039346656037ull, key.kind), key.frame), wait_eq,
                     &key, g);
        if (!*slot) {
            g[n] = key;
            g[n].task = t->name;
            *slot = ++n;
        }
        size_t k = *slot - 1;
        g[k].count++;
        const sop_pytask *s = find(c->ia, t);
        g[k].whole += s && pending(s);
    }
    free(gt.slot);
    if (g && n)
        qsort(g, n, sizeof *g, cmp_groups);
    sop_value *arr = sop__v_arr_at(o, name);
    for (size_t k = 0; arr && k < n && k < TOP_WAITS; k++) {
        sop_value *w = sop__v_obj();
        sop__v_set_str(w, "kind", g[k].kind);
        sop__v_set(w, "frame", sop__bridge_text(g[k].frame));
        sop__v_set_int(w, "count", g[k].count);
        sop__v_set_int(w, "whole_window", g[k].whole);
        sop__v_set(w, "task", sop__bridge_text(g[k].task));
        sop__v_push(arr, w);
    }
    free(g);
}

static void w_convoys(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    convoys(sop__v_arr_at(o, name), ctx);
}

/* stuck[]: only with the start read to compare with. */
static void w_stuck(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const tasks_ctx *c = ctx;
    if (c->a)
        stuck(sop__v_arr_at(o, name), c);
}

static void w_forgotten(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    forgotten(sop__v_arr_at(o, name), ctx);
}

sop_value *sop__bridge_tasks(const sop_pytasks *a, const sop_pytasks *b, double window_s)
{
    if (!b)
        return NULL;
    tasks_figs f = {.count = (int64_t)b->ntasks,
                    .pending_start = SOP_NA,
                    .pending_growth = SOP_NA,
                    .created = SOP_NA,
                    .finished = SOP_NA,
                    .pending_whole_window = SOP_NA,
                    .unreferenced_both = SOP_NA,
                    .window_s = a ? window_s : NAN,
                    .pending_growth_per_s = NAN,
                    .read_ms = b->read_ms};
    for (size_t i = 0; i < b->ntasks; i++) {
        f.pending += pending(&b->tasks[i]);
        f.running += b->tasks[i].running;
        f.unreferenced += forgotten_task(&b->tasks[i]);
    }
    /* Each read indexed once: matching the two reads stays linear (issue 40). Without memory for
     * an index, the window's comparisons are left out (NA), never guessed. */
    sop_task_index ia, ib;
    bool have_b = sop__task_index_build(&ib, b, false) == 0;
    bool have_a = a && have_b && sop__task_index_build(&ia, a, false) == 0;
    if (!have_a)
        a = NULL;
    if (a) {
        f.pending_start = f.created = f.finished = f.pending_whole_window = 0;
        for (size_t i = 0; i < a->ntasks; i++) {
            const sop_pytask *s = &a->tasks[i], *e = find(&ib, s);
            if (!pending(s))
                continue;
            f.pending_start++;
            if (!e || !pending(e))
                f.finished++;
            else
                f.pending_whole_window++;
        }
        for (size_t i = 0; i < b->ntasks; i++)
            f.created += find(&ia, &b->tasks[i]) == NULL;
        f.pending_growth = f.pending - f.pending_start;
        f.unreferenced_both = 0;
        for (size_t i = 0; i < b->ntasks; i++)
            f.unreferenced_both += forgotten_both(&ia, &b->tasks[i]);
        if (window_s > 0)
            f.pending_growth_per_s = (double)f.pending_growth / window_s;
    }
    sop_value *o = sop__v_obj();
    tasks_ctx c = {a, b, have_a ? &ia : NULL, have_b ? &ib : NULL, window_s};
    if (o)
        sop__bridge_keys(o, &f, sop__evk_tasks, sop__evk_tasks_n, "", NULL, &c);
    if (have_a)
        sop__task_index_free(&ia);
    if (have_b)
        sop__task_index_free(&ib);
    return o;
}
