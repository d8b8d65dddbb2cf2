/* collect_numa.c — the evidence group `numa`, in one file: the host's NUMA topology and
 * balancing, and the target's resident memory per node from /proc/PID/numa_maps, read once at
 * the window's end (probes/numa.c). Its writer adds host.numa {balancing nodes[] {node cpus
 * cpu_count mem_total_kb mem_free_kb}} (keys: the numa rows of sop__evk_host,
 * engine/bridge/host.c) and proc.numa {nodes[] {node kb} kb other_kb interleave_kb mappings
 * truncated} (keys per docs/evidence.md); nothing is added for what was not read. The writer and
 * the provider. Depends on probes/numa.h, bridge/schema.h, provider.h. */
#include <stdlib.h>

#include "bridge/bridge.h"
#include "bridge/schema.h"
#include "collect_numa.h"
#include "provider.h"

static void node_id(sop_value *o, const sop_evk *row, const char *name, void *ctx)
{
    (void)row;
    sop__v_set_int(o, name, ((const sop_numa_node *)ctx)->node);
}

void sop__bridge_numa(sop_value *ev, const sop_numa *n)
{
    if (!n || (!n->have_topology && n->balancing == SOP_NA))
        return;
    sop_value *host = sop__v_obj_at(ev, "host");
    sop_value *o = host ? sop__v_obj_at(host, "numa") : NULL;
    if (!o)
        return;
    sop__bridge_keys(o, n, sop__evk_host, sop__evk_host_n, "numa.", NULL, NULL);
    if (n->have_topology) { /* the numa.nodes row, by hand: an array of the nodes read */
        sop_value *arr = sop__v_arr_at(o, "nodes");
        for (size_t i = 0; arr && i < n->nnodes && i < SOP_NUMA_NODES_MAX; i++) {
            const sop_numa_node *d = &n->nodes[i];
            sop_value *e = sop__v_obj();
            if (!e)
                return;
            sop__bridge_keys(e, d, sop__evk_host, sop__evk_host_n, "numa.nodes[].", node_id,
                             (void *)d);
            sop__v_push(arr, e);
        }
    }
    if (!n->have_pages)
        return;
    const sop_numa_pages *pg = &n->pages;
    sop_value *proc = sop__v_obj_at(ev, "proc");
    sop_value *p = proc ? sop__v_obj_at(proc, "numa") : NULL;
    if (!p)
        return;
    int64_t total = pg->other_kb;
    sop_value *arr = sop__v_arr_at(p, "nodes");
    for (int i = 0; arr && i < SOP_NUMA_NODES_MAX; i++) {
        bool listed = false; /* every node of the host, and any other node holding pages */
        for (size_t j = 0; j < n->nnodes; j++)
            listed = listed || n->nodes[j].node == i;
        if (!listed && pg->kb[i] == 0)
            continue;
        sop_value *e = sop__v_obj();
        if (!e)
            return;
        sop__v_set_int(e, "node", i);
        sop__v_set_int(e, "kb", pg->kb[i]);
        sop__v_push(arr, e);
        total += pg->kb[i];
    }
    sop__v_set_int(p, "kb", total);
    if (pg->other_kb)
        sop__v_set_int(p, "other_kb", pg->other_kb);
    sop__v_set_int(p, "interleave_kb", pg->interleave_kb);
    sop__v_set_int(p, "mappings", pg->lines);
    sop__v_set_bool(p, "truncated", pg->truncated);
}

static void *numa_start(sop_collect_ctx *cx)
{
    (void)cx;
    sop_numa *n = malloc(sizeof *n);
    if (n)
        sop__numa_init(n);
    return n;
}

static void numa_finish(sop_collect_ctx *cx, void *p)
{
    sop__numa_collect(cx->root_fd, cx->pid_fd, p, &cx->c->missing);
}

static void numa_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    (void)cx;
    sop__bridge_numa(ev, p);
}

const sop_provider sop__provider_numa = {
    .name = "numa",
    .probes = SOP_PROBE_HOST,
    .start = numa_start,
    .finish = numa_finish,
    .emit = numa_emit,
    .free = free,
};
