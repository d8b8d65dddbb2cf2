/* py_gc.c — what the walk reads of an interpreter besides its threads: the thread state that
 * holds the GIL, and the garbage collector's state (collections per generation, whether it is
 * collecting or frozen). Part of the walk (py_walk_int.h); depends on remote_mem.c and the
 * layouts. */
#include "cpython.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../na.h"
#include "py_layouts.h"
#include "py_runtime.h"
#include "py_walk_int.h"
#include "remote_mem.h"

/* The addresses of the GIL's `locked` and `last_holder` of `interp`; false when unreadable. */
static bool gil_fields(walker *w, uint64_t interp, uint64_t *locked_at, uint64_t *holder_at)
{
    const sop_pylayout *L = &w->L;
    uint64_t base;
    if (L->is_ceval_gil_ptr) {
        if (sop__rmem_read_direct(&w->mem, interp + L->is_ceval_gil_ptr, &base, 8) < 0 || !base)
            return false;
        *locked_at = base + L->gil_locked;
        *holder_at = base + L->gil_last_holder;
    } else {
        *locked_at = w->runtime + L->rt_gil_locked;
        *holder_at = w->runtime + L->rt_gil_last_holder;
    }
    return true;
}

int sop__pywalk_gil_switches(walker *w, uint64_t interp, int64_t *switches, int64_t *interval_us)
{
    uint64_t locked_at, holder_at, interval, n;
    *switches = *interval_us = SOP_NA;
    if (!gil_fields(w, interp, &locked_at, &holder_at))
        return -ENODATA;
    /* one read from `interval` to past `switch_number` */
    uint8_t b[SOP_GIL_SWITCHES_FROM_LOCKED - SOP_GIL_INTERVAL_FROM_LOCKED + 8];
    int rc = sop__rmem_read_direct(&w->mem, locked_at + SOP_GIL_INTERVAL_FROM_LOCKED, b, sizeof b);
    if (rc < 0)
        return rc;
    memcpy(&interval, b, 8);
    memcpy(&n, b + sizeof b - 8, 8);
    if (interval == 0 || interval > 10u * 1000 * 1000 || n > ((uint64_t)1 << 62))
        return -EINVAL; /* not a switch interval of 1 µs to 10 s: not the struct we know */
    *switches = (int64_t)n;
    *interval_us = (int64_t)interval;
    return 0;
}

/* The thread state holding the GIL of `interp` (0 when released). */
uint64_t sop__pywalk_gil_holder(walker *w, uint64_t interp)
{
    uint64_t locked_at, holder_at;
    if (!gil_fields(w, interp, &locked_at, &holder_at))
        return 0;
    int32_t locked;
    uint64_t holder;
    if (sop__rmem_read_direct(&w->mem, locked_at, &locked, sizeof locked) < 0 || locked != 1)
        return 0;
    if (sop__rmem_read_direct(&w->mem, holder_at, &holder, sizeof holder) < 0)
        return 0;
    return holder;
}

/* 3.15+: generation_stats points to ring buffers of per-collection records; each buffer's
 * index names its newest record, which carries the running count of collections. */
static void gc_collections_ring(walker *w, const uint8_t *b, int64_t out[3])
{
    const sop_pylayout *L = &w->L;
    const sop_pygcstats *S = &L->gc_stats;
    uint8_t buf[2048];
    uint64_t at = sop__pywalk_rd64(b, L->gc_gen_stats);
    if (!at || S->size > sizeof buf || S->young_index >= S->size ||
        S->old_at + 2 * S->old_size > S->size ||
        sop__rmem_read_direct(&w->mem, at, buf, S->size) < 0)
        return;
    int64_t v[3];
    for (int g = 0; g < 3; g++) {
        uint32_t base = g == 0 ? 0 : S->old_at + (uint32_t)(g - 1) * S->old_size;
        uint32_t n = g == 0 ? S->young_n : S->old_n;
        int8_t idx = (int8_t)buf[base + (g == 0 ? S->young_index : S->old_index)];
        if (idx < 0 || (uint32_t)idx >= n)
            return;
        v[g] = (int64_t)sop__pywalk_rd64(buf, base + (uint32_t)idx * S->item + S->collections);
        if (v[g] < 0 || v[g] > ((int64_t)1 << 48))
            return;
    }
    for (int g = 0; g < 3; g++)
        out[g] = v[g];
}

/* The collections of each generation from a read _gc_runtime_state: generation_stats[g] when
 * the layout places the array right before `collecting` (3.8-3.14), the ring buffers it
 * points to on 3.15+; SOP_NA where not placed or implausible. */
void sop__pywalk_gc_collections(walker *w, const uint8_t *b, int64_t out[3])
{
    const sop_pylayout *L = &w->L;
    for (int g = 0; g < 3; g++)
        out[g] = SOP_NA;
    if (L->gc_stats_ptr) {
        gc_collections_ring(w, b, out);
        return;
    }
    if (!L->gc_gen_stats || L->gc_gen_stats + 3 * L->gc_gen_stats_size != L->gc_collecting ||
        L->gc_collecting + 4 > SOP_PYLAYOUT_GC_READ)
        return;
    int64_t v[3];
    for (int g = 0; g < 3; g++) {
        v[g] = (int64_t)sop__pywalk_rd64(b, L->gc_gen_stats + (uint32_t)g * L->gc_gen_stats_size);
        if (v[g] < 0 || v[g] > ((int64_t)1 << 48))
            return;
    }
    for (int g = 0; g < 3; g++)
        out[g] = v[g];
}

/* Address of the GC state of `interp` (3.8: in _PyRuntime). */
uint64_t sop__pywalk_gc_addr(const walker *w, uint64_t interp)
{
    return w->L.rt_gc ? w->runtime + w->L.rt_gc : interp + w->L.is_gc;
}

void sop__pywalk_read_gc(walker *w, uint64_t interp, sop_python *py, bool frozen)
{
    const sop_pylayout *L = &w->L;
    uint64_t gc = sop__pywalk_gc_addr(w, interp);
    uint8_t b[SOP_PYLAYOUT_GC_READ];
    if (L->gc_permanent + 16 > sizeof b || sop__rmem_read_direct(&w->mem, gc, b, sizeof b) < 0) {
        sop__missing_add(w->missing, "python", "GC state unreadable");
        return;
    }
    int32_t en = rd32(b, L->gc_enabled), co = rd32(b, L->gc_collecting);
    if ((en != 0 && en != 1) || (co != 0 && co != 1)) {
        sop__missing_add(w->missing, "python", "GC state implausible (enabled=%d)", en);
        return;
    }
    py->gc_enabled = en;
    py->gc_collecting = co;
    for (int g = 0; g < 3 && L->gc_gen_size; g++) { /* 0: not found (py_runtime.c) */
        uint32_t go = L->gc_generations + (uint32_t)g * L->gc_gen_size;
        py->gc_threshold[g] = rd32(b, go + L->gc_gen_threshold);
        py->gc_count[g] = rd32(b, go + L->gc_gen_count);
    }
    sop__pywalk_gc_collections(w, b, py->gc_collections);
    if (!frozen)
        return;
    /* Frozen objects: the permanent generation's list (gc.freeze() does not keep a count);
     * walked up to FROZEN_MAX nodes (through the page cache), else left unknown. */
    uint64_t head = gc + L->gc_permanent, node = sop__pywalk_rd64(b, L->gc_permanent);
    int64_t count = 0;
    for (; node != head && count <= FROZEN_MAX; count++) {
        if (!node || sop__rmem_u64(&w->mem, node, &node) < 0) {
            count = -1;
            break;
        }
        node &= ~(uint64_t)3; /* _gc_next carries no flag bits, but be safe */
    }
    if (count < 0 || count > FROZEN_MAX)
        sop__missing_add(w->missing, "python", "frozen GC objects not counted (%s)",
                         count < 0 ? "list unreadable" : "more than " SOP_STR(FROZEN_MAX));
    else
        py->gc_frozen = count;
}
