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

struct sop_python; /* probes/python/python.h */

typedef struct sop_collection {
    int pid;
    double duration_s;
    double collected_at; /* epoch seconds */
    bool alive;          /* false: the pid was gone; only the kernel log speaks of it */
    sop_host host;
    sop_oom_list ooms;
    sop_proc proc;
    sop_thread_list threads;
    sop_child_list children;
    sop_child parent; /* valid when have_parent */
    bool have_parent;
    sop_child_list siblings; /* the parent's other children */
    sop_cgroup cgroup;
    int64_t effective_cpus;
    double capacity_cpus;  /* effective_cpus with the quota as a fraction (probes/cpu_budget.c) */
    sop_tree_sched *sched; /* whole-tree scheduling over the window; NULL when not measured */
    sop_alloc alloc;
    sop_numa numa;                /* host.numa and proc.numa */
    sop_gpu *gpu;                 /* ev.gpu (probes/gpu_nvml.c); NULL when not read */
    struct sop_python *python;    /* NULL when not CPython or not read */
    struct sop_sampler *sampling; /* the window's stack samples (engine/sampler.h); or NULL */
    struct sop_value *heap;       /* ev.python.heap (engine/collect_heap.c); or NULL */
    struct sop_value *tasks;      /* ev.python.tasks (engine/collect_tasks.c); or NULL */
    sop_missing missing;
} sop_collection;

void sop__collection_free(sop_collection *c); /* frees the parts, not ev itself */

#endif
