/* collect_target.c — the providers over the window's two snapshots and the target's one-shot
 * reads (provider.h): host (with the kernel log's OOM kills), proc with threads[] and
 * children[], parent and siblings[], cgroup, the CPU budget, the rank, the kernel log. (The
 * allocator's and NUMA's are engine/collect/collect_alloc.c and collect_numa.c.) The snapshots
 * themselves are the collector's (engine/collect/collect.c): they decide whether the target is
 * there and how long the window was. Depends on the probes' headers, bridge/bridge.h, rank.h,
 * provider.h. */
#include <stdlib.h>
#include <string.h>

#include "../probes/cpu_budget.h"
#include "bridge/bridge.h"
#include "provider.h"
#include "rank_identity.h"

#define KMSG_MAX_AGE_S (7.0 * 24 * 3600)

/* host: the snapshots' host part and the OOM kills the kmsg provider read. */
static void host_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    (void)p;
    sop__bridge_host(ev, &cx->c->host, &cx->c->ooms, cx->c->collected_at);
}

static const sop_evk_group host_groups[] = {
    {"host", "engine/bridge/host.c, host.numa by engine/collect/collect_numa.c", sop__evk_host,
     &sop__evk_host_n},
    {0},
};

const sop_provider sop__provider_host = {
    .name = "host",
    .groups = host_groups,
    .post_mortem = true,
    .emit = host_emit,
};

/* Remove member `key` of obj (a probe the caller turned off leaves its part absent). */
static void drop_key(sop_value *obj, const char *key)
{
    sop_value *prev = NULL;
    for (sop_value *v = obj ? obj->child : NULL; v; prev = v, v = v->next) {
        if (!v->key || strcmp(v->key, key) != 0)
            continue;
        if (prev)
            prev->next = v->next;
        else
            obj->child = v->next;
        if (obj->last == v)
            obj->last = prev;
        obj->count--;
        v->next = NULL;
        sop__v_free(v);
        return;
    }
}

static void proc_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    (void)p;
    const sop_collection *c = cx->c;
    sop__bridge_proc(ev, &c->proc, &c->threads, &c->children, c->collected_at);
    if (!(cx->o->probes & SOP_PROBE_THREADS))
        drop_key(ev, "threads");
}

static const sop_evk_group proc_groups[] = {
    {"proc", "engine/bridge/proc.c, proc.numa by engine/collect/collect_numa.c", sop__evk_proc,
     &sop__evk_proc_n},
    {"threads[]", "engine/bridge/proc.c", sop__evk_threads, &sop__evk_threads_n},
    {"children[]", "engine/bridge/proc.c", sop__evk_children, &sop__evk_children_n},
    {0},
};

const sop_provider sop__provider_proc = {
    .name = "proc",
    .groups = proc_groups,
    .emit = proc_emit,
};

/* family: the parent and its other children, read once at the end. */
typedef struct {
    sop_child parent; /* valid when have_parent */
    bool have_parent;
    sop_child_list siblings;
} family_state;

static void *family_start(sop_collect_ctx *cx)
{
    return cx->o->children ? calloc(1, sizeof(family_state)) : NULL;
}

static void family_finish(sop_collect_ctx *cx, void *p)
{
    family_state *st = p;
    const sop_collection *c = cx->c;
    if (c->proc.have_stat)
        sop__siblings_collect(cx->root_fd, cx->pid, c->proc.stat.ppid, &st->parent,
                              &st->have_parent, &st->siblings, &cx->c->missing);
}

static void family_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    const family_state *st = p;
    sop__bridge_family(ev, st->have_parent ? &st->parent : NULL, &st->siblings,
                       cx->c->collected_at);
}

static void family_free(void *p)
{
    family_state *st = p;
    sop__child_list_free(&st->siblings);
    free(st);
}

static const sop_evk_group family_groups[] = {
    {"parent", "engine/bridge/proc.c", sop__evk_children, &sop__evk_children_n},
    {"siblings[]", "engine/bridge/proc.c", sop__evk_children, &sop__evk_children_n},
    {0},
};

const sop_provider sop__provider_family = {
    .name = "family",
    .probes = SOP_PROBE_CHILDREN,
    .groups = family_groups,
    .start = family_start,
    .finish = family_finish,
    .emit = family_emit,
    .free = family_free,
};

static void cgroup_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    (void)p;
    sop__bridge_cgroup(ev, &cx->c->cgroup);
}

static const sop_evk_group cgroup_groups[] = {
    {"cgroup", "engine/bridge/cgroup.c", sop__evk_cgroup, &sop__evk_cgroup_n},
    {0},
};

const sop_provider sop__provider_cgroup = {
    .name = "cgroup",
    .probes = SOP_PROBE_CGROUP,
    .groups = cgroup_groups,
    .emit = cgroup_emit,
};

/* budget: the CPUs the job may use, once for everyone (probes/cpu_budget.c); ev.effective_cpus
 * and read by sched's rows. */
static void budget_finish(sop_collect_ctx *cx, void *p)
{
    (void)p;
    sop_collection *c = cx->c;
    sop_cpu_budget b;
    sop__cpu_budget(c->host.ncpu, c->proc.status.cpus_allowed_list,
                    c->proc.status.cpus_allowed_count, c->cgroup.cpuset, c->cgroup.cpuset_count,
                    c->cgroup.quota_cpus, &b);
    c->effective_cpus = b.effective_cpus;
    c->capacity_cpus = b.capacity_cpus;
}

static void budget_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    (void)p;
    sop__v_set_int(ev, "effective_cpus", cx->c->effective_cpus);
}

const sop_provider sop__provider_budget = {
    .name = "budget",
    .finish = budget_finish,
    .emit = budget_emit,
};

static void rank_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    (void)cx, (void)p;
    sop__rank_identity(ev);
}

static const sop_evk_group rank_groups[] = {
    {"rank",
     "engine/bridge/rank_identity.c from proc.env; absent when the process carries no rank. A "
     "report copies it into target, and its key figures into `figures`: docs/ranks.md",
     sop__evk_rank, &sop__evk_rank_n},
    {0},
};

const sop_provider sop__provider_rank = {
    .name = "rank",
    .groups = rank_groups,
    .emit = rank_emit,
};

/* kmsg: the kernel log's OOM kills into c->ooms, which host emits (also after a post-mortem). */
static void *kmsg_start(sop_collect_ctx *cx)
{
    return cx->o->kernel_log ? &sop__provider_on : NULL;
}

static void kmsg_finish(sop_collect_ctx *cx, void *p)
{
    (void)p;
    /* the boot time the process start times use (fractional, probes/proc_collect.c; /proc/stat's
     * btime when the clocks disagree): the whole-second btime alone put a kill up to 1 s before a
     * process that started before it */
    sop__kmsg_collect(&cx->c->ooms, sop__proc_btime_s(), KMSG_MAX_AGE_S, cx->c->host.oom_kill,
                      &cx->c->missing);
}

const sop_provider sop__provider_kmsg = {
    .name = "kmsg",
    .probes = SOP_PROBE_KMSG,
    .start = kmsg_start,
    .finish = kmsg_finish,
};
