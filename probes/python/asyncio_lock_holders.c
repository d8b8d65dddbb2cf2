/* asyncio_lock_holders.c — the asyncio.Lock and Semaphore objects tasks wait on (the most
 * waited on first): their own fields (_locked, _value, the waiters queued) and the tasks that
 * hold them, found by a bounded scan of the other pending tasks' suspended frames for the
 * `__aexit__` an `async with` keeps. Part of the task reader (asyncio_tasks_int.h);
 * depends on remote_mem.c, py_walk.c (code objects), py_names.c. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asyncio_tasks_int.h"
#include "py_names.h"

#define MAX_HOLDER_SLOTS 400000u /* slots looked at over all tasks when looking for holders */
#define METHOD_FUNC 16u          /* PyMethodObject.im_func, every version */
#define METHOD_SELF 24u          /* PyMethodObject.im_self */

static int cmp_prims(const void *pa, const void *pb)
{
    const sop_pyprim *a = pa, *b = pb;
    if (a->waiting != b->waiting)
        return a->waiting < b->waiting ? 1 : -1;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Is `func` a function whose code is some `__aexit__`? */
static bool is_aexit(tasks_reader *tr, uint64_t func)
{
    uint64_t code = 0;
    int err = 0;
    if (sop__tasks_obj_kind(tr, func, NULL) != K_FUNC ||
        sop__rmem_u64(&tr->w.mem, func + tr->w.L.func_code, &code) < 0)
        return false;
    const code_entry *c = sop__pywalk_code(&tr->w, code, &err);
    return c && sop__tasks_ends_with(c->func, "__aexit__");
}

static long prim_index(const sop_pyprim *p, size_t n, uint64_t addr)
{
    for (size_t k = 0; k < n; k++)
        if (p[k].addr == addr)
            return (long)k;
    return -1;
}

/* The prim (index into p[0..n), -1 none) whose `__aexit__` the frame slot value v is, `next`
 * the slot above it: what `async with prim:` keeps on the frame's value stack for the whole
 * block (a mere reference to the lock, a local holding it, says nothing about who holds it).
 * Up to 3.13 a bound method (its im_self the prim); 3.14+ the plain function with the prim in
 * the next slot. */
static long exit_of(tasks_reader *tr, uint64_t v, uint64_t next, const sop_pyprim *p, size_t n)
{
    uint64_t self = 0, func = 0;
    if (!v)
        return -1;
    int kind = sop__tasks_obj_kind(tr, v, NULL);
    if (kind == K_FUNC) {
        long k = next ? prim_index(p, n, next) : -1;
        return k >= 0 && is_aexit(tr, v) ? k : -1;
    }
    if (kind != K_METHOD || sop__rmem_u64(&tr->w.mem, v + METHOD_SELF, &self) < 0)
        return -1;
    long k = prim_index(p, n, self);
    if (k < 0 || sop__rmem_u64(&tr->w.mem, v + METHOD_FUNC, &func) < 0)
        return -1;
    return is_aexit(tr, func) ? k : -1;
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
        int k = sop__tasks_obj_kind(tr, v, &tn);
        if (k == K_DEQUE && sop__rmem_read(m, v + L->ob_size, &size, 8) == 0 && size >= 0)
            p->queue = size;
        else if (sop__tasks_name_is(tn, "NoneType")) /* nobody has queued yet */
            p->queue = 0;
    }
    if (p->kind == SOP_WAIT_LOCK && sop__py_instance_attr(m, L, p->addr, "_locked", &v) == 0 &&
        sop__tasks_obj_kind(tr, v, NULL) == K_BOOL &&
        sop__tasks_read_small_int(tr, v, &n, &neg) == 0)
        p->locked = n != 0;
    if (p->kind == SOP_WAIT_SEMAPHORE && sop__py_instance_attr(m, L, p->addr, "_value", &v) == 0 &&
        sop__tasks_obj_kind(tr, v, NULL) == K_INT &&
        sop__tasks_read_small_int(tr, v, &n, &neg) == 0)
        p->value = neg ? -(long long)n : (long long)n;
}

/* Every lock or semaphore a task waits on (the SOP_PRIMS_MAX most waited on): its fields and
 * its holders, found by a bounded scan of the other pending tasks' suspended frames. */
int sop__tasks_describe_prims(tasks_reader *tr, sop_pytasks *out)
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
            (void)sop__tasks_obj_kind(tr, t->prim, &tn);
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
                uint64_t next = j + 1 < lv->nslots ? sop__pywalk_ref(&tr->w.L, slotv[j + 1]) : 0;
                long k = exit_of(tr, sop__pywalk_ref(&tr->w.L, slotv[j]), next, p, n);
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
