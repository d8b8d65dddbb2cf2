/* collect_alloc.c — the evidence group `alloc`, in one file: the allocator in use, how we know
 * (maps / LD_PRELOAD / default), its knobs and glibc's arena heaps, detected once at the
 * window's end (probes/alloc.c). The rows (docs/evidence.md is generated from them; the one hand
 * row: MALLOC_ARENA_MAX is a number when glibc would read it as one), their writer and the
 * provider. Depends on probes/alloc.h, bridge/schema.h, provider.h. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge.h"
#include "bridge/schema.h"
#include "collect_alloc.h"
#include "provider.h"

/* ---- the evidence group ---- */

static const sop_evk sop__evk_alloc[] = {
    SOP_EVK_S("allocator", sop_alloc, allocator,
              "\"glibc\"|\"jemalloc\"|\"tcmalloc\"|\"mimalloc\""),
    SOP_EVK_S("source", sop_alloc, source, "how it is known: \"maps\"|\"LD_PRELOAD\"|\"default\""),
    SOP_EVK_T("ld_preload", sop_alloc, ld_preload, "LD_PRELOAD of the target"),
    SOP_EVK_H("malloc_arena_max", SOP_EVK_INT, "",
              "MALLOC_ARENA_MAX, when glibc reads it as a number"),
    SOP_EVK_T("pythonmalloc", sop_alloc, pythonmalloc, "PYTHONMALLOC"),
    SOP_EVK_I("arenas", sop_alloc, heaps.heaps, "",
              "glibc's non-main arena heaps in /proc/PID/maps (64 MiB-aligned anonymous heaps; "
              "an arena that outgrew one heap counts twice)"),
    SOP_EVK_I("arena_rw_kb", sop_alloc, heaps.rw_kb, "kB",
              "their read-write part (committed, >= their RSS)"),
    SOP_EVK_I("arena_reserved_kb", sop_alloc, heaps.reserved_kb, "kB",
              "address space they reserve"),
};
static const size_t sop__evk_alloc_n = sizeof sop__evk_alloc / sizeof sop__evk_alloc[0];

static void hand(sop_value *o, const sop_evk *row, const char *name, void *ctx)
{
    (void)row;
    const char *m = ((const sop_alloc *)ctx)->malloc_arena_max; /* the only hand row */
    if (m[0]) {
        char *end;
        long n = strtol(m, &end, 10);
        if (end != m && *end == '\0' && isdigit((unsigned char)m[0]) && n >= 0)
            sop__v_set_int(o, name, n);
    }
}

void sop__bridge_alloc(sop_value *ev, const sop_alloc *a)
{
    if (!a ||
        (!a->allocator[0] && !a->ld_preload[0] && !a->malloc_arena_max[0] && !a->pythonmalloc[0]))
        return;
    sop_value *o = sop__v_obj_at(ev, "alloc");
    if (o)
        sop__bridge_keys(o, a, sop__evk_alloc, sop__evk_alloc_n, "", hand, (void *)a);
}

static void *alloc_start(sop_collect_ctx *cx)
{
    (void)cx;
    return calloc(1, sizeof(sop_alloc));
}

static void alloc_finish(sop_collect_ctx *cx, void *p)
{
    sop__alloc_detect(&cx->c->proc, p);
}

static void alloc_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    (void)cx;
    sop__bridge_alloc(ev, p);
}

static const sop_evk_group alloc_groups[] = {
    {"alloc", "engine/collect/collect_alloc.c", sop__evk_alloc, &sop__evk_alloc_n},
    {0},
};

const sop_provider sop__provider_alloc = {
    .name = "alloc",
    .probes = SOP_PROBE_ALLOC,
    .groups = alloc_groups,
    .start = alloc_start,
    .finish = alloc_finish,
    .emit = alloc_emit,
    .free = free,
};
