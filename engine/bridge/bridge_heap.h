/* bridge_heap.h — a heap census (probes/python/heap_walk.c) as ev.python.heap
 * (engine/bridge/heap_rows.c), apart from bridge.h, which pulls probes/proc.h (whose names clash
 * with sop.h) into its users. */
#ifndef SOP_BRIDGE_HEAP_H
#define SOP_BRIDGE_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "../../probes/python/heap_census.h"

struct sop_value;
/* The census a (and b at the window's end, may be NULL) with the RssAnon readings beside them:
 * the top types by size, and their growth over window_s. */
struct sop_value *sop__bridge_heap(const struct sop_pyheap *a, const struct sop_pyheap *b,
                                   double window_s, int64_t anon_kb0, int64_t anon_kb1, size_t top);

#endif
