/* cgroup.c (bridge) — adds ev.cgroup: version, path, cpu (quota, cpuset, throttling), memory
 * (tightest limit and where, usage, events) and pids; its keys are the table sop__evk_cgroup
 * below (docs/evidence.md is generated from it). A row that is not a plain field names its own
 * writer (SOP_EVK_W); the H rows left (cpu.quota_cpus, cpu.quota_unlimited, cpu.path,
 * cpu.cpuset_path, pids.unlimited) are written by the writer of a row before them. Unlimited
 * limits are left out and flagged (cpu.quota_unlimited, memory.unlimited, pids.unlimited).
 * Depends on engine/core/value.h, probes/cgroup.h, probes/cpu_budget.h, schema.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../probes/cpu_budget.h"
#include "bridge.h"
#include "schema.h"

/* The writers of the rows that are not plain fields (defined below the table); base is the
 * sop_cgroup. */
static void w_version(sop_value *o, const char *name, const void *base, void *ctx);
static void w_cpu_path(sop_value *o, const char *name, const void *base, void *ctx);
static void w_cpu(sop_value *o, const char *name, const void *base, void *ctx);
static void w_quota_us(sop_value *o, const char *name, const void *base, void *ctx);
static void w_effective_cpus(sop_value *o, const char *name, const void *base, void *ctx);
static void w_memory(sop_value *o, const char *name, const void *base, void *ctx);
static void w_memory_path(sop_value *o, const char *name, const void *base, void *ctx);
static void w_limit_path(sop_value *o, const char *name, const void *base, void *ctx);
static void w_memory_unlimited(sop_value *o, const char *name, const void *base, void *ctx);
static void w_events(sop_value *o, const char *name, const void *base, void *ctx);
static void w_events_local(sop_value *o, const char *name, const void *base, void *ctx);
static void w_pids(sop_value *o, const char *name, const void *base, void *ctx);
static void w_pids_path(sop_value *o, const char *name, const void *base, void *ctx);
static void w_pids_max(sop_value *o, const char *name, const void *base, void *ctx);

#define I(k, f, u, d) SOP_EVK_I(k, sop_cgroup, f, u, d)
#define D(k, f, u, d) SOP_EVK_D(k, sop_cgroup, f, u, d)
#define H SOP_EVK_H
#define W SOP_EVK_W
const sop_evk sop__evk_cgroup[] = {
    W("version", SOP_EVK_INT, w_version, "", "1 or 2"),
    SOP_EVK_T("path", sop_cgroup, path, "the memory controller's group on v1, the group on v2"),
    W("cpu_path", SOP_EVK_TEXT, w_cpu_path, "",
      "v1, when it differs from path: the cpu controller's group"),
    W("cpu", SOP_EVK_OBJ, w_cpu, "",
      "the cpu controller (each controller's block names its own group)"),
    W("cpu.quota_us", SOP_EVK_INT, w_quota_us, "us",
      "CFS quota per period (absent when unlimited)"),
    H("cpu.quota_cpus", SOP_EVK_NUM, "CPUs", "quota / period"),
    H("cpu.quota_unlimited", SOP_EVK_BOOL, "", "true: no quota; quota_us is then absent"),
    I("cpu.period_us", period_us, "us", "CFS period"),
    SOP_EVK_S("cpu.cpuset", sop_cgroup, cpuset, "the cpuset's CPUs (\"0-3\")"),
    I("cpu.cpuset_count", cpuset_count, "CPUs", "CPUs in cpuset"),
    W("cpu.effective_cpus", SOP_EVK_NUM, w_effective_cpus, "CPUs",
      "what the group may use: min(ceil(quota), cpuset)"),
    I("cpu.nr_periods", nr_periods, "", "periods elapsed (cpu.stat)"),
    I("cpu.nr_throttled", nr_throttled, "", "periods throttled"),
    I("cpu.throttled_us", throttled_us, "us", "time throttled"),
    I("cpu.usage_us", usage_us, "us", "CPU time used"),
    D("cpu.throttled_pct", throttled_pct, "%", "window: throttled periods / periods"),
    D("cpu.throttled_ms_per_s", throttled_ms_per_s, "ms/s", "window"),
    H("cpu.path", SOP_EVK_TEXT, "", "the cpu controller's group (a text about the quota names it)"),
    H("cpu.cpuset_path", SOP_EVK_TEXT, "", "v1, when not cpu.path: the cpuset controller's group"),
    W("memory", SOP_EVK_OBJ, w_memory, "",
      "the memory controller: the tightest limit on the path to the root"),
    W("memory.path", SOP_EVK_TEXT, w_memory_path, "", "its group"),
    I("memory.limit_kb", mem_limit_kb, "kB", "the tightest limit"),
    W("memory.limit_path", SOP_EVK_TEXT, w_limit_path, "", "the group that sets it"),
    W("memory.unlimited", SOP_EVK_BOOL, w_memory_unlimited, "",
      "true: no limit on the path to the root"),
    I("memory.usage_kb", mem_usage_kb, "kB", "usage"),
    I("memory.max_usage_kb", mem_max_usage_kb, "kB", "peak usage (v1)"),
    I("memory.swap_limit_kb", swap_limit_kb, "kB", "swap limit"),
    I("memory.failcnt", mem_failcnt, "", "times the limit was hit (v1)"),
    I("memory.under_oom", under_oom, "", "v1 memory.oom_control"),
    W("memory.events", SOP_EVK_OBJ, w_events, "",
      "memory.events (v2: this group and those below it)"),
    I("memory.events.low", ev_low, "", ""),
    I("memory.events.high", ev_high, "", ""),
    I("memory.events.max", ev_max, "", ""),
    I("memory.events.oom", ev_oom, "", ""),
    I("memory.events.oom_kill", ev_oom_kill, "", "also the v1 oom_control count"),
    W("memory.events_local", SOP_EVK_OBJ, w_events_local, "",
      "v2 memory.events.local, kernel 5.2+"),
    I("memory.events_local.oom_kill", ev_local_oom_kill, "", "kills in this group only"),
    W("pids", SOP_EVK_OBJ, w_pids, "", "the pids controller"),
    W("pids.path", SOP_EVK_TEXT, w_pids_path, "", "its group"),
    I("pids.current", pids_current, "", "tasks in the group"),
    W("pids.max", SOP_EVK_INT, w_pids_max, "", "the limit"),
    H("pids.unlimited", SOP_EVK_BOOL, "", "true: no limit"),
};
const size_t sop__evk_cgroup_n = sizeof sop__evk_cgroup / sizeof sop__evk_cgroup[0];
#undef I
#undef D
#undef H
#undef W

/* The rows of one level (prefix "" = cgroup's own, "cpu." = cgroup.cpu) into o. */
static void set(sop_value *o, const sop_cgroup *cg, const char *prefix)
{
    sop__bridge_keys(o, cg, sop__evk_cgroup, sop__evk_cgroup_n, prefix, NULL, NULL);
}

static void add_text(sop_value *o, const char *key, const char *s)
{
    if (s && s[0])
        sop__v_set(o, key, sop__bridge_text(s));
}

/* Was anything of the memory controller read? (Its path alone does not make a group.) */
static bool mem_read(const sop_cgroup *cg)
{
    return cg->mem_limit_kb != SOP_NA || cg->mem_usage_kb != SOP_NA || cg->mem_unlimited ||
           cg->ev_oom_kill != SOP_NA || cg->ev_max != SOP_NA || cg->mem_failcnt != SOP_NA;
}

static void w_version(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)ctx;
    sop__v_set_int(o, "version", ((const sop_cgroup *)base)->version);
}

static void w_cpu_path(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)ctx;
    const sop_cgroup *cg = base;
    if (cg->version == 1 && cg->cpu_path[0] && strcmp(cg->cpu_path, cg->path) != 0)
        add_text(o, "cpu_path", cg->cpu_path);
}

/* A controller's object (cpu, memory, pids): its rows, attached when any was written. */
static sop_value *controller(const sop_cgroup *cg, const char *name)
{
    sop_value *sub = sop__v_obj();
    char prefix[16];
    snprintf(prefix, sizeof prefix, "%s.", name);
    if (sub)
        set(sub, cg, prefix);
    return sub;
}

static void w_cpu(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_cgroup *cg = base;
    sop_value *sub = controller(cg, name);
    /* Each controller's own group: on v1 the cpu, memory, cpuset and pids hierarchies may
     * place the target in different groups, and a text naming one must not show another's. */
    const char *cpu_path = cg->cpu_path[0] ? cg->cpu_path : cg->path;
    if (sub && sub->count > 0) { /* a path alone is no reading of the controller */
        add_text(sub, "path", cpu_path);
        if (cg->version == 1 && cg->cpuset_path[0] && strcmp(cg->cpuset_path, cpu_path) != 0)
            add_text(sub, "cpuset_path", cg->cpuset_path);
    }
    sop__bridge_attach(o, name, sub);
}

static void w_memory(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__bridge_attach(o, name, controller(base, name));
}

static void w_pids(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__bridge_attach(o, name, controller(base, name));
}

/* cpu.quota_us, with cpu.quota_cpus or cpu.quota_unlimited. */
static void w_quota_us(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)ctx;
    const sop_cgroup *cg = base;
    if (cg->quota_us > 0) {
        sop__v_set_int(o, "quota_us", cg->quota_us);
        sop__v_set_dbl(o, "quota_cpus", cg->quota_cpus);
    } else if (cg->quota_us == -1) {
        sop__v_set_bool(o, "quota_unlimited", true);
    }
}

/* What the group alone may use, min(ceil(quota), cpuset): the one budget function
 * (probes/cpu_budget.c) that also gives the top-level effective_cpus, here without the
 * target's affinity and the host's CPU count. */
static void w_effective_cpus(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)ctx;
    const sop_cgroup *cg = base;
    sop_cpu_budget b;
    sop__cpu_budget(SOP_NA, NULL, SOP_NA, NULL, cg->cpuset_count,
                    cg->quota_us > 0 && isfinite(cg->quota_cpus) ? cg->quota_cpus : NAN, &b);
    sop__v_set_dbl(o, "effective_cpus",
                   b.effective_cpus == SOP_NA ? NAN : (double)b.effective_cpus);
}

static void w_memory_path(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)ctx;
    const sop_cgroup *cg = base;
    if (mem_read(cg))
        add_text(o, "path", cg->path);
}

static void w_limit_path(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)ctx;
    const sop_cgroup *cg = base;
    if (cg->mem_limit_kb != SOP_NA)
        add_text(o, "limit_path", cg->mem_limit_path);
}

static void w_memory_unlimited(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)ctx;
    if (((const sop_cgroup *)base)->mem_unlimited)
        sop__v_set_bool(o, "unlimited", true);
}

/* memory.events and memory.events_local: objects of plain rows, attached when any was read. */
static void events(sop_value *o, const char *name, const sop_cgroup *cg, const char *prefix)
{
    sop_value *sub = sop__v_obj();
    if (sub)
        set(sub, cg, prefix);
    sop__bridge_attach(o, name, sub);
}

static void w_events(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    events(o, name, base, "memory.events.");
}

static void w_events_local(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    events(o, name, base, "memory.events_local.");
}

static void w_pids_path(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)ctx;
    const sop_cgroup *cg = base;
    if (cg->pids_current != SOP_NA || cg->pids_max != SOP_NA)
        add_text(o, "path", cg->version == 1 && cg->pids_path[0] ? cg->pids_path : cg->path);
}

/* pids.max, or pids.unlimited. */
static void w_pids_max(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)ctx;
    const sop_cgroup *cg = base;
    if (cg->pids_max >= 0)
        sop__v_set_int(o, "max", cg->pids_max);
    else if (cg->pids_max == -1)
        sop__v_set_bool(o, "unlimited", true);
}

void sop__bridge_cgroup(sop_value *ev, const sop_cgroup *cg)
{
    if (!cg || cg->version == 0)
        return; /* not read at all: `missing` says why */
    sop_value *o = sop__v_obj_at(ev, "cgroup");
    if (o)
        set(o, cg, "");
}
