/* collect_sched.h — the writer of the evidence group `sched` (engine/collect/collect_sched.c),
 * for the unit tests that build ev.sched from a tree they made. Depends on bridge/bridge.h. */
#ifndef SOP_COLLECT_SCHED_H
#define SOP_COLLECT_SCHED_H

#include "bridge/bridge.h"

/* ev.sched: whole-tree CPU and run-queue time over the window (nothing when < 2 polls). */
void sop__bridge_sched(sop_value *ev, const sop_tree_sched *t, int64_t effective_cpus,
                       double capacity_cpus);

#endif
