/* heap.h — `sopctl heap`: a census of a process's Python objects by type (probes/python/
 * heap_walk.c) rendered as ev.python.heap JSON (engine/bridge/heap.c) or as a text table.
 * Depends on the heap probe, the bridge and json.c. */
#ifndef SOP_ENGINE_HEAP_H
#define SOP_ENGINE_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "../probes/python/heap_census.h"

/* From engine/bridge/heap.c (bridge.h pulls probes/proc.h, whose names clash with sop.h). */
struct sop_value;
struct sop_value *sop__bridge_heap(const struct sop_pyheap *a, const struct sop_pyheap *b,
                                   double window_s, int64_t anon_kb0, int64_t anon_kb1, size_t top);

/* RssAnon of `pid` in kB from proc_root/PID/status; SOP_NA (INT64_MIN) when unreadable. */
int64_t sop__heap_anon_kb(const char *proc_root, int pid);

#endif
