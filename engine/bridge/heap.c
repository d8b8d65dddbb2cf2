/* heap.c — ev.python.heap from one or two heap censuses (probes/python/heap.h): the census
 * (complete, objects, bytes, types), how much of the anonymous memory Python objects explain,
 * and with two censuses the growth per type and of the anonymous memory between them. The
 * same tree is `sopctl heap --json`. Depends on value.h. */
#include <math.h>
#include <stdlib.h>

#include "bridge.h"
#include "python/heap.h"

static sop_value *types_value(const sop_heap_type *t, size_t n, size_t top, bool signed_deltas)
{
    sop_value *arr = sop__v_arr();
    if (!arr)
        return NULL;
    for (size_t i = 0; i < n && i < top; i++) {
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        sop__v_set(o, "name", sop__bridge_text(t[i].name));
        if (signed_deltas) {
            sop__v_set_int(o, "count", (int64_t)t[i].count);
            sop__v_set_int(o, "bytes", (int64_t)t[i].bytes);
        } else {
            sop__v_set_dbl(o, "count", (double)t[i].count);
            sop__v_set_dbl(o, "bytes", (double)t[i].bytes);
            if (t[i].frozen)
                sop__v_set_dbl(o, "frozen", (double)t[i].frozen);
            if (t[i].untracked)
                sop__v_set_bool(o, "untracked", true);
        }
        sop__v_push(arr, o);
    }
    return arr;
}

sop_value *sop__bridge_heap(const struct sop_pyheap *a, const struct sop_pyheap *b, double window_s,
                            int64_t anon_kb0, int64_t anon_kb1, size_t top)
{
    const sop_pyheap *h = b ? b : a;
    sop_value *o = sop__v_obj();
    if (!o || !h)
        return o;
    sop__v_set_bool(o, "complete", a->complete && (!b || b->complete));
    if (!a->complete)
        sop__v_set(o, "partial", sop__bridge_text(a->partial));
    else if (b && !b->complete)
        sop__v_set(o, "partial", sop__bridge_text(b->partial));
    sop__v_set_dbl(o, "objects", (double)h->objects);
    sop__v_set_dbl(o, "bytes", (double)h->bytes);
    sop__v_set_dbl(o, "untracked", (double)h->untracked);
    if (h->numpy_seen) {
        sop_value *np = sop__v_obj_at(o, "numpy");
        sop__v_set_dbl(np, "arrays", (double)h->numpy_arrays);
        sop__v_set_dbl(np, "nbytes", (double)h->numpy_nbytes);
        if (b)
            sop__v_set_dbl(np, "nbytes_growth", (double)b->numpy_nbytes - (double)a->numpy_nbytes);
    }
    sop__v_set_int(o, "types_total", (int64_t)h->ntypes);
    /* How far each list walk got (a partial census says which list stopped). */
    static const char *const lists[SOP_HEAP_LISTS] = {"gen0", "gen1", "gen2", "permanent"};
    sop_value *lv = sop__v_obj_at(o, "lists");
    for (int g = 0; lv && g < SOP_HEAP_LISTS; g++) {
        sop_value *l = sop__v_obj_at(lv, lists[g]);
        sop__v_set_dbl(l, "objects", (double)h->list_objects[g]);
        sop__v_set_bool(l, "complete", h->list_complete[g]);
    }
    if (h->restarts)
        sop__v_set_int(o, "restarts", (int64_t)h->restarts);
    sop__v_set(o, "types", types_value(h->types, h->ntypes, top, false));
    int64_t anon = b ? anon_kb1 : anon_kb0;
    if (anon != SOP_NA && anon > 0) {
        sop__v_set_int(o, "anon_kb", anon);
        double f = (double)h->bytes / ((double)anon * 1024.0);
        sop__v_set_dbl(o, "explained", f > 1 ? 1 : f);
    }
    sop__v_set_int(o, "gc_enabled", h->gc_enabled);
    sop__v_set(o, "version", sop__bridge_text(h->version));
    sop__v_set_dbl(o, "census_ms", a->census_ms + (b ? b->census_ms : 0));
    sop__v_set_bool(o, "stopped", h->stopped);
    if (h->stopped)
        sop__v_set_dbl(o, "pause_ms",
                       a->pause_ms > (b ? b->pause_ms : 0) ? a->pause_ms : b->pause_ms);
    if (b) {
        sop__v_set_dbl(o, "window_s", window_s);
        sop_heap_type *g = NULL;
        long n = sop__heap_growth(a, b, &g);
        if (n >= 0) {
            sop__v_set(o, "growth", types_value(g, (size_t)n, top, true));
            free(g);
        }
        sop__v_set_int(o, "objects_growth", (int64_t)b->objects - (int64_t)a->objects);
        int64_t grew = (int64_t)b->bytes - (int64_t)a->bytes;
        sop__v_set_int(o, "bytes_growth", grew);
        if (anon_kb0 != SOP_NA && anon_kb1 != SOP_NA) {
            int64_t anon_grew = anon_kb1 - anon_kb0;
            sop__v_set_int(o, "anon_growth_kb", anon_grew);
            /* The share of the anonymous growth the Python objects' growth accounts for. */
            if (anon_grew > 0) {
                double f = (double)grew / ((double)anon_grew * 1024.0);
                sop__v_set_dbl(o, "growth_explained", f < 0 ? 0 : f > 1 ? 1 : f);
            }
        }
    }
    return o;
}
