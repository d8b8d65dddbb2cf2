/* provider.h — an evidence provider: one evidence group of a collection (host, proc, sched,
 * gpu, python, ...) as one module with a name, the probes that turn it on, its schema rows and
 * start / poll / finish / emit / free. The providers are listed, in emit order, in one table
 * (engine/collect/providers.c); engine/collect/collect.c schedules them over the window.
 * docs/providers.md has the design. Depends on evidence.h, bridge/schema.h, sop.h. */
#ifndef SOP_PROVIDER_H
#define SOP_PROVIDER_H

#include <math.h>
#include <stdbool.h>

#include "bridge/schema.h"
#include "evidence.h"
#include "sop.h"
#include "value.h"

struct sop_pyruntime;
struct sop_sampler;
struct sop_timeline_gpu;

/* What every provider of one collection shares. The window's two snapshots (host, proc,
 * threads, children, cgroup) are taken by the collector itself: they decide whether the target
 * is there and how long the window was; providers read them from `c`. */
typedef struct sop_collect_ctx {
    int pid;
    int root_fd, pid_fd; /* the /proc root and /proc/PID, open */
    const char *proc_root;
    const sop_collect_opts *o;
    sop_collection *c;               /* the evidence; c->proc etc. from the first snapshot during
                                      * the window, from the last one at finish and emit */
    const sop_proc *proc0;           /* the first snapshot's process and descendants, for */
    const sop_child_list *children0; /* start (children0 empty when not read) */
    bool window_ok;                  /* finish: the second snapshot was taken (rates measured) */
    const char *maps;                /* the current snapshot's maps text (NULL: unread): start
                                      * sees the first snapshot's, finish the last one's */
    struct sop_pyruntime *rt;        /* the CPython runtime, found once (python provider) */
    struct sop_sampler *sampler;     /* the window's stack sampler, or NULL */
    bool pictures;                   /* the window's pictures were asked for */
    sop_gpu_series *gpu_lane;        /* for them, a copy of the window's GPU readings (malloc'd by
                                      * the gpu provider; the collector frees it), or NULL */
} sop_collect_ctx;

/* Is the target of /proc/PID (cx->pid_fd) still there? (engine/collect/collect.c) */
bool sop__collect_target_alive(const sop_collect_ctx *cx);

typedef struct {
    const char *name;
    unsigned probes; /* SOP_PROBE_* bits that must all be on; 0: always */
    /* The evidence groups it emits (their key, what writes them, their schema rows), ended by
     * {0}; NULL: none of its own. docs/evidence.md and the reads check list them from here. */
    const sop_evk_group *groups;
    bool post_mortem; /* emits also when the pid was gone (host and the kernel log only) */
    /* At the window's start, after the first snapshot: the provider's state, or NULL when it
     * has nothing to do in this collection (then nothing else is called). NULL: always on,
     * with no state. */
    void *(*start)(sop_collect_ctx *cx);
    /* On the sampler's tick: returns when it wants its next poll (sop__now_ms clock), INFINITY
     * for never. Called first right after start. May be NULL. */
    double (*poll)(sop_collect_ctx *cx, void *st, double now_ms);
    /* (SOP_POLL_EVERY_TICK: at each of the sampler's ticks, never woken for by itself.) */
    /* After the second snapshot, in table order (a provider reads those above it). */
    void (*finish)(sop_collect_ctx *cx, void *st);
    /* Adds its keys to ev, in table order. */
    void (*emit)(const sop_collect_ctx *cx, void *st, sop_value *ev);
    void (*free)(void *st);
} sop_provider;

#define SOP_POLL_EVERY_TICK (-INFINITY)

/* The state of a provider that is on and keeps none (a start may return it). */
extern char sop__provider_on;

/* The providers, in emit order: one line each. X(name) is the provider sop__provider_<name>,
 * defined in its own file; engine/collect/providers.c makes the table from this list. */
#define SOP_PROVIDERS(X)                                                                           \
    X(host)   /* engine/collect/collect_target.c: host (the snapshots), the kernel log's OOMs */   \
    X(proc)   /* engine/collect/collect_target.c: proc, threads[], children[] (the snapshots) */   \
    X(family) /* engine/collect/collect_target.c: parent, siblings[] */                            \
    X(cgroup) /* engine/collect/collect_target.c: cgroup (the snapshots) */                        \
    X(container) /* engine/collect/container_identity.c: the container, its name and pod */        \
    X(block)     /* engine/collect/collect_block.c: the disks' queues (scheduler, read-ahead) */   \
    X(budget)    /* engine/collect/collect_target.c: effective_cpus, computed once */              \
    X(sched)     /* engine/collect/collect_sched.c: the whole tree's scheduling, polled */         \
    X(fds)       /* engine/collect/collect_fds.c: open descriptors over the window, polled */      \
    X(alloc)     /* engine/collect/collect_alloc.c: the allocator */                               \
    X(numa)      /* engine/collect/collect_numa.c: host.numa, proc.numa */                         \
    X(gpu)       /* engine/collect/collect_gpu.c: NVML, polled */                                  \
    X(python) /* engine/collect/collect_python.c: CPython stacks (and the runtime, found once) */  \
    X(sampling) /* engine/collect/collect_python.c: the window's samples */                        \
    X(heap)     /* engine/collect/collect_heap.c: python.heap */                                   \
    X(tasks)    /* engine/collect/collect_tasks.c: python.tasks */                                 \
    X(rank)     /* engine/collect/collect_target.c: rank (the launcher's identity) */              \
    X(kmsg)     /* engine/collect/collect_target.c: OOM kills (emitted by host) */

#define SOP__PROVIDER_DECL(name) extern const sop_provider sop__provider_##name;
SOP_PROVIDERS(SOP__PROVIDER_DECL)
#undef SOP__PROVIDER_DECL

#define SOP__PROVIDER_ONE(name) +1
enum { SOP_NPROVIDERS = 0 SOP_PROVIDERS(SOP__PROVIDER_ONE) };
#undef SOP__PROVIDER_ONE

extern const sop_provider *const sop__providers[SOP_NPROVIDERS];
extern const size_t sop__nproviders;

/* The providers' evidence groups in table order, at most cap into out; returns how many
 * there are (engine/collect/providers.c). */
size_t sop__collect_groups(const sop_evk_group **out, size_t cap);

#endif
