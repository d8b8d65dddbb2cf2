/* alloc.c (bridge) — adds ev.alloc: the allocator in use, how we know (maps / LD_PRELOAD /
 * default), and its knobs. MALLOC_ARENA_MAX is a number when glibc would read it as one.
 * Depends on engine/value.h, probes/alloc.h. */
#include <ctype.h>
#include <stdlib.h>

#include "bridge.h"

void sop__bridge_alloc(sop_value *ev, const sop_alloc *a)
{
    if (!a ||
        (!a->allocator[0] && !a->ld_preload[0] && !a->malloc_arena_max[0] && !a->pythonmalloc[0]))
        return;
    sop_value *o = sop__v_obj_at(ev, "alloc");
    if (!o)
        return;
    sop__v_set_str(o, "allocator", a->allocator);
    sop__v_set_str(o, "source", a->source);
    if (a->ld_preload[0])
        sop__v_set(o, "ld_preload", sop__bridge_text(a->ld_preload));
    const char *m = a->malloc_arena_max;
    if (m[0]) {
        char *end;
        long n = strtol(m, &end, 10);
        if (end != m && *end == '\0' && isdigit((unsigned char)m[0]) && n >= 0)
            sop__v_set_int(o, "malloc_arena_max", n);
    }
    if (a->pythonmalloc[0])
        sop__v_set(o, "pythonmalloc", sop__bridge_text(a->pythonmalloc));
    sop__v_set_int(o, "arenas", a->heaps.heaps);
    sop__v_set_int(o, "arena_rw_kb", a->heaps.rw_kb);
    sop__v_set_int(o, "arena_reserved_kb", a->heaps.reserved_kb);
}
