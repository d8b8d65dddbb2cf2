/* evidence.h — everything one collection learns about a target, as plain C structs.
 * Probes fill it (the probes/ headers define the parts); engine/bridge/ turns it into the `ev`
 * tree. No library headers here. docs/evidence.md is the key-by-key description. */
#ifndef SOP_EVIDENCE_H
#define SOP_EVIDENCE_H

#include <stdbool.h>
#include <stddef.h>

#include "../probes/alloc.h"
#include "../probes/cgroup.h"
#include "../probes/gpu.h"
#include "../probes/host.h"
#include "../probes/kmsg.h"
#include "../probes/missing.h"
#include "../probes/numa.h"
#include "../probes/proc.h"
#include "../probes/proc_tree.h"

struct sop_python; /* probes/python/cpython.h */

typedef struct sop_collection {
    int pid;
    double duration_s;
    double collected_at; /* epoch seconds */
    bool alive;          /* false: the pid was gone; only the kernel log speaks of it */
    /* the window's last snapshot (engine/collect/collect.c) */
    sop_host host;
    sop_proc proc;
    sop_thread_list threads;
    sop_child_list children;
    sop_cgroup cgroup;
    /* what providers read from each other (provider.h); the rest they keep in their state */
    sop_oom_list ooms;         /* the kernel log's (kmsg provider), emitted under host */
    int64_t effective_cpus;    /* the budget provider's (probes/cpu_budget.c) */
    double capacity_cpus;      /* effective_cpus with the quota as a fraction */
    struct sop_python *python; /* NULL when not CPython or not read (python provider) */
    struct sop_sampler
        *sampling; /* the window's stack samples (engine/sample/sampler.h); or NULL */
    sop_missing missing;
} sop_collection;

void sop__collection_free(sop_collection *c); /* frees the parts, not ev itself (collect.c) */

#endif
