/* heap_rows.c — ev.python.heap from one or two heap censuses (probes/python/heap_census.h): the
 * census (complete, objects, bytes, types), how much of the anonymous memory Python objects
 * explain, and with two censuses the growth per type and of the anonymous memory between them. The
 * same tree is `sopctl heap --json`. Its keys are the table sop__evk_heap below (the group
 * "python.heap" of docs/evidence.md): the figures come from one or two censuses, so they are
 * first computed into a small struct the plain rows read. Depends on value.h, schema.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"
#include "python/heap_census.h"
#include "schema.h"

/* The census's figures (NaN, SOP_NA = absent). */
typedef struct {
    double objects, bytes, untracked;
    int64_t types_total, restarts, anon_kb;
    double explained;
    int64_t gc_enabled;
    double census_ms, pause_ms, window_s;
    int64_t objects_growth, bytes_growth, anon_growth_kb;
    double growth_explained;
} heap_figs;

/* The writers of the rows that are computed, objects or arrays (defined below the table; ctx
 * a heap_ctx; the rows under them are written with them). */
static void w_complete(sop_value *o, const char *name, const void *base, void *ctx);
static void w_partial(sop_value *o, const char *name, const void *base, void *ctx);
static void w_numpy(sop_value *o, const char *name, const void *base, void *ctx);
static void w_lists(sop_value *o, const char *name, const void *base, void *ctx);
static void w_types(sop_value *o, const char *name, const void *base, void *ctx);
static void w_version(sop_value *o, const char *name, const void *base, void *ctx);
static void w_stopped(sop_value *o, const char *name, const void *base, void *ctx);
static void w_growth(sop_value *o, const char *name, const void *base, void *ctx);

#define H SOP_EVK_H
#define D(k, f, u, d) SOP_EVK_D(k, heap_figs, f, u, d)
#define I(k, f, u, d) SOP_EVK_I(k, heap_figs, f, u, d)
const sop_evk sop__evk_heap[] = {
    SOP_EVK_W("complete", SOP_EVK_BOOL, w_complete, "",
              "every list walked end to end, consistently"),
    SOP_EVK_W("partial", SOP_EVK_TEXT, w_partial, "", "where a walk stopped"),
    D("objects", objects, "", "GC-tracked"),
    D("bytes", bytes, "B", "estimate"),
    D("untracked", untracked, "", "objects the GC does not track, held by tracked containers"),
    SOP_EVK_W("numpy", SOP_EVK_OBJ, w_numpy, "", "arrays owning their data, when one was met"),
    H("numpy.arrays", SOP_EVK_NUM, "", ""),
    H("numpy.nbytes", SOP_EVK_NUM, "B", ""),
    H("numpy.nbytes_growth", SOP_EVK_NUM, "B", "two censuses"),
    I("types_total", types_total, "", ""),
    SOP_EVK_W("lists", SOP_EVK_OBJ, w_lists, "", "how far each list walk got"),
    H("lists.*", SOP_EVK_OBJ, "", "`gen0`, `gen1`, `gen2`, `permanent`"),
    H("lists.*.objects", SOP_EVK_NUM, "", ""),
    H("lists.*.complete", SOP_EVK_BOOL, "", ""),
    I("restarts", restarts, "", "list walks restarted after inconsistent data"),
    SOP_EVK_W("types", SOP_EVK_ARR, w_types, "", "top 25 by bytes"),
    H("types[].name", SOP_EVK_TEXT, "", ""),
    H("types[].count", SOP_EVK_NUM, "", ""),
    H("types[].bytes", SOP_EVK_NUM, "B", ""),
    H("types[].frozen", SOP_EVK_NUM, "", "of count, in the permanent generation"),
    H("types[].untracked", SOP_EVK_BOOL, "", "true: a type the GC does not track"),
    I("anon_kb", anon_kb, "kB", "the anonymous memory at the (last) census"),
    D("explained", explained, "", "bytes / anonymous memory, <= 1"),
    I("gc_enabled", gc_enabled, "", ""),
    SOP_EVK_W("version", SOP_EVK_TEXT, w_version, "", ""),
    D("census_ms", census_ms, "ms", "wall time of the walks"),
    SOP_EVK_W("stopped", SOP_EVK_BOOL, w_stopped, "", "read with the process stopped"),
    D("pause_ms", pause_ms, "ms", "the longest stop"),
    D("window_s", window_s, "s", "two censuses: the time between them"),
    SOP_EVK_W("growth", SOP_EVK_ARR, w_growth, "", "signed deltas, top 25 by bytes"),
    H("growth[].name", SOP_EVK_TEXT, "", ""),
    H("growth[].count", SOP_EVK_INT, "", ""),
    H("growth[].bytes", SOP_EVK_INT, "B", ""),
    I("objects_growth", objects_growth, "", ""),
    I("bytes_growth", bytes_growth, "B", ""),
    I("anon_growth_kb", anon_growth_kb, "kB", ""),
    D("growth_explained", growth_explained, "", "bytes_growth / anonymous growth, 0..1"),
};
const size_t sop__evk_heap_n = sizeof sop__evk_heap / sizeof sop__evk_heap[0];
#undef H
#undef D
#undef I

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

typedef struct {
    const sop_pyheap *a, *b, *h;
    size_t top;
} heap_ctx;

static void w_complete(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const heap_ctx *c = ctx;
    sop__v_set_bool(o, name, c->a->complete && (!c->b || c->b->complete));
}

static void w_partial(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const heap_ctx *c = ctx;
    if (!c->a->complete)
        sop__v_set(o, name, sop__bridge_text(c->a->partial));
    else if (c->b && !c->b->complete)
        sop__v_set(o, name, sop__bridge_text(c->b->partial));
}

static void w_numpy(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const heap_ctx *c = ctx;
    const sop_pyheap *h = c->h;
    if (!h->numpy_seen)
        return;
    sop_value *np = sop__v_obj_at(o, name);
    sop__v_set_dbl(np, "arrays", (double)h->numpy_arrays);
    sop__v_set_dbl(np, "nbytes", (double)h->numpy_nbytes);
    if (c->b)
        sop__v_set_dbl(np, "nbytes_growth",
                       (double)c->b->numpy_nbytes - (double)c->a->numpy_nbytes);
}

/* How far each list walk got (a partial census says which list stopped). */
static void w_lists(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const sop_pyheap *h = ((const heap_ctx *)ctx)->h;
    static const char *const lists[SOP_HEAP_LISTS] = {"gen0", "gen1", "gen2", "permanent"};
    sop_value *lv = sop__v_obj_at(o, name);
    for (int g = 0; lv && g < SOP_HEAP_LISTS; g++) {
        sop_value *l = sop__v_obj_at(lv, lists[g]);
        sop__v_set_dbl(l, "objects", (double)h->list_objects[g]);
        sop__v_set_bool(l, "complete", h->list_complete[g]);
    }
}

static void w_types(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const heap_ctx *c = ctx;
    sop__v_set(o, name, types_value(c->h->types, c->h->ntypes, c->top, false));
}

static void w_version(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    sop__v_set(o, name, sop__bridge_text(((const heap_ctx *)ctx)->h->version));
}

static void w_stopped(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    sop__v_set_bool(o, name, ((const heap_ctx *)ctx)->h->stopped);
}

static void w_growth(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const heap_ctx *c = ctx;
    if (!c->b)
        return;
    sop_heap_type *g = NULL;
    long n = sop__heap_growth(c->a, c->b, &g);
    if (n >= 0) {
        sop__v_set(o, name, types_value(g, (size_t)n, c->top, true));
        free(g);
    }
}

sop_value *sop__bridge_heap(const struct sop_pyheap *a, const struct sop_pyheap *b, double window_s,
                            int64_t anon_kb0, int64_t anon_kb1, size_t top)
{
    const sop_pyheap *h = b ? b : a;
    sop_value *o = sop__v_obj();
    if (!o || !h)
        return o;
    heap_figs f = {.objects = (double)h->objects,
                   .bytes = (double)h->bytes,
                   .untracked = (double)h->untracked,
                   .types_total = (int64_t)h->ntypes,
                   .restarts = h->restarts ? (int64_t)h->restarts : SOP_NA,
                   .anon_kb = SOP_NA,
                   .explained = NAN,
                   .gc_enabled = h->gc_enabled,
                   .census_ms = a->census_ms + (b ? b->census_ms : 0),
                   .pause_ms = NAN,
                   .window_s = b ? window_s : NAN,
                   .objects_growth = SOP_NA,
                   .bytes_growth = SOP_NA,
                   .anon_growth_kb = SOP_NA,
                   .growth_explained = NAN};
    int64_t anon = b ? anon_kb1 : anon_kb0;
    if (anon != SOP_NA && anon > 0) {
        f.anon_kb = anon;
        double e = (double)h->bytes / ((double)anon * 1024.0);
        f.explained = e > 1 ? 1 : e;
    }
    if (h->stopped)
        f.pause_ms = !b || a->pause_ms > b->pause_ms ? a->pause_ms : b->pause_ms; /* the longest */
    if (b) {
        f.objects_growth = (int64_t)b->objects - (int64_t)a->objects;
        int64_t grew = (int64_t)b->bytes - (int64_t)a->bytes;
        f.bytes_growth = grew;
        if (anon_kb0 != SOP_NA && anon_kb1 != SOP_NA) {
            int64_t anon_grew = anon_kb1 - anon_kb0;
            f.anon_growth_kb = anon_grew;
            /* The share of the anonymous growth the Python objects' growth accounts for. */
            if (anon_grew > 0) {
                double e = (double)grew / ((double)anon_grew * 1024.0);
                f.growth_explained = e < 0 ? 0 : e > 1 ? 1 : e;
            }
        }
    }
    heap_ctx c = {a, b, h, top};
    sop__bridge_keys(o, &f, sop__evk_heap, sop__evk_heap_n, "", NULL, &c);
    return o;
}
