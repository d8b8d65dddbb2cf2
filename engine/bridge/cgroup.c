/* cgroup.c (bridge) — adds ev.cgroup: version, path, cpu (quota, cpuset, throttling), memory
 * (tightest limit and where, usage, events) and pids, keys per docs/evidence.md. Unlimited
 * limits are left out and flagged (cpu.quota_unlimited, memory.unlimited, pids.unlimited).
 * Depends on engine/value.h, probes/cgroup.h. */
#include <math.h>
#include <string.h>

#include "bridge.h"

static void attach(sop_value *parent, const char *key, sop_value *o)
{
    if (o && o->count > 0)
        sop__v_set(parent, key, o);
    else
        sop__v_free(o);
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

void sop__bridge_cgroup(sop_value *ev, const sop_cgroup *cg)
{
    if (!cg || cg->version == 0)
        return; /* not read at all: `missing` says why */
    sop_value *o = sop__v_obj_at(ev, "cgroup");
    if (!o)
        return;
    sop__v_set_int(o, "version", cg->version);
    add_text(o, "path", cg->path);
    if (cg->version == 1 && cg->cpu_path[0] && strcmp(cg->cpu_path, cg->path) != 0)
        add_text(o, "cpu_path", cg->cpu_path);

    /* Each controller's own group: on v1 the cpu, memory, cpuset and pids hierarchies may
     * place the target in different groups, and a text naming one must not show another's. */
    const char *cpu_path = cg->cpu_path[0] ? cg->cpu_path : cg->path;
    sop_value *cpu = sop__v_obj();
    if (cpu) {
        if (cg->quota_us > 0) {
            sop__v_set_int(cpu, "quota_us", cg->quota_us);
            sop__v_set_dbl(cpu, "quota_cpus", cg->quota_cpus);
        } else if (cg->quota_us == -1) {
            sop__v_set_bool(cpu, "quota_unlimited", true);
        }
        sop__v_set_int(cpu, "period_us", cg->period_us);
        sop__v_set_str(cpu, "cpuset", cg->cpuset);
        sop__v_set_int(cpu, "cpuset_count", cg->cpuset_count);
        /* what the group may use: min(ceil(quota), cpuset) */
        double eff = NAN;
        if (cg->quota_us > 0 && isfinite(cg->quota_cpus))
            eff = ceil(cg->quota_cpus);
        if (cg->cpuset_count > 0 && (isnan(eff) || (double)cg->cpuset_count < eff))
            eff = (double)cg->cpuset_count;
        sop__v_set_dbl(cpu, "effective_cpus", eff);
        sop__v_set_int(cpu, "nr_periods", cg->nr_periods);
        sop__v_set_int(cpu, "nr_throttled", cg->nr_throttled);
        sop__v_set_int(cpu, "throttled_us", cg->throttled_us);
        sop__v_set_int(cpu, "usage_us", cg->usage_us);
        sop__v_set_dbl(cpu, "throttled_pct", cg->throttled_pct);
        sop__v_set_dbl(cpu, "throttled_ms_per_s", cg->throttled_ms_per_s);
        if (cpu->count > 0) { /* a path alone is no reading of the controller */
            add_text(cpu, "path", cpu_path);
            if (cg->version == 1 && cg->cpuset_path[0] && strcmp(cg->cpuset_path, cpu_path) != 0)
                add_text(cpu, "cpuset_path", cg->cpuset_path);
        }
    }
    attach(o, "cpu", cpu);

    sop_value *mem = sop__v_obj();
    if (mem) {
        if (mem_read(cg))
            add_text(mem, "path", cg->path);
        sop__v_set_int(mem, "limit_kb", cg->mem_limit_kb);
        if (cg->mem_limit_kb != SOP_NA)
            add_text(mem, "limit_path", cg->mem_limit_path);
        if (cg->mem_unlimited)
            sop__v_set_bool(mem, "unlimited", true);
        sop__v_set_int(mem, "usage_kb", cg->mem_usage_kb);
        sop__v_set_int(mem, "max_usage_kb", cg->mem_max_usage_kb);
        sop__v_set_int(mem, "swap_limit_kb", cg->swap_limit_kb);
        sop__v_set_int(mem, "failcnt", cg->mem_failcnt);
        sop__v_set_int(mem, "under_oom", cg->under_oom);
        sop_value *evs = sop__v_obj();
        if (evs) {
            sop__v_set_int(evs, "low", cg->ev_low);
            sop__v_set_int(evs, "high", cg->ev_high);
            sop__v_set_int(evs, "max", cg->ev_max);
            sop__v_set_int(evs, "oom", cg->ev_oom);
            sop__v_set_int(evs, "oom_kill", cg->ev_oom_kill);
        }
        attach(mem, "events", evs);
        sop_value *local = sop__v_obj();
        if (local)
            sop__v_set_int(local, "oom_kill", cg->ev_local_oom_kill);
        attach(mem, "events_local", local);
    }
    attach(o, "memory", mem);

    sop_value *pids = sop__v_obj();
    if (pids) {
        if (cg->pids_current != SOP_NA || cg->pids_max != SOP_NA)
            add_text(pids, "path", cg->version == 1 && cg->pids_path[0] ? cg->pids_path : cg->path);
        sop__v_set_int(pids, "current", cg->pids_current);
        if (cg->pids_max >= 0)
            sop__v_set_int(pids, "max", cg->pids_max);
        else if (cg->pids_max == -1)
            sop__v_set_bool(pids, "unlimited", true);
    }
    attach(o, "pids", pids);
}
