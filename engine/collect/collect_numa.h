/* collect_numa.h — the writer of the evidence group `numa` (engine/collect/collect_numa.c), for
 * the unit tests that build host.numa and proc.numa from a struct they fill. Depends on
 * bridge/bridge.h. */
#ifndef SOP_COLLECT_NUMA_H
#define SOP_COLLECT_NUMA_H

#include "bridge/bridge.h"

/* host.numa (nodes, balancing) and, when numa_maps was read, proc.numa (pages per node). */
void sop__bridge_numa(sop_value *ev, const sop_numa *n);

#endif
