/* collect_alloc.h — the writer of the evidence group `alloc` (engine/collect/collect_alloc.c),
 * for the unit tests that build ev.alloc from a struct they fill. Depends on bridge/bridge.h. */
#ifndef SOP_COLLECT_ALLOC_H
#define SOP_COLLECT_ALLOC_H

#include "bridge/bridge.h"

/* ev.alloc (nothing when no allocator, LD_PRELOAD, MALLOC_ARENA_MAX or PYTHONMALLOC was read). */
void sop__bridge_alloc(sop_value *ev, const sop_alloc *a);

#endif
