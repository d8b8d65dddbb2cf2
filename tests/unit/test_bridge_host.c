/* test_bridge_host.c — the host, cgroup and alloc bridges: key names per docs/evidence.md,
 * values carried over, unmeasured values and empty groups left out, OOM age computed, and
 * text from outside (comm, memcg paths) made valid UTF-8. Depends on engine/bridge,
 * engine/collect/collect_alloc.h, t.h. */
#include <math.h>

#include "bridge/bridge.h"
#include "collect_alloc.h"
#include "t.h"

static double num(const sop_value *o, const char *key)
{
    double d = NAN;
    sop__v_get_num(o, key, &d);
    return d;
}

static const sop_value *nth(const sop_value *arr, size_t i)
{
    const sop_value *v = arr ? arr->child : NULL;
    while (v && i--)
        v = v->next;
    return v;
}

static void test_host(void)
{
    static sop_host h;
    static sop_oom_list l;
    sop__host_init(&h);
    h.ncpu = 8;
    h.mem_total_kb = 1000;
    h.mem_available_kb = 400;
    h.load1 = 1.5;
    h.swap_out_per_s = 12.0;
    h.pswpout = 99;
    h.psi_memory.present = h.psi_memory.some.present = true;
    h.psi_memory.some.avg10 = 3.5;
    h.psi_memory.some.total_us = 77;
    h.ndisks = 1;
    memset(&h.disks[0], 0, sizeof h.disks[0]);
    snprintf(h.disks[0].name, sizeof h.disks[0].name, "nvme0n1");
    h.disks[0].read_sectors = 2048;
    h.disks[0].util_pct = 42.0;
    h.disks[0].r_await_ms = NAN;
    h.disks[0].w_await_ms = h.disks[0].read_kb_per_s = h.disks[0].write_kb_per_s = NAN;
    h.disks[0].reads_per_s = h.disks[0].writes_per_s = NAN;
    sop__oom_list_init(&l, 1000.0);
    const char *line = "3,1,5000000,-;Memory cgroup out of memory: Killed process 12 (bad\xff"
                       "name) total-vm:10kB, anon-rss:8kB, file-rss:1kB, shmem-rss:0kB, UID:0 "
                       "pgtables:4kB oom_score_adj:0";
    sop__kmsg_feed_line(&l, line, strlen(line), -INFINITY);
    l.read_ok = true;

    sop_value *ev = sop__v_obj();
    sop__bridge_host(ev, &h, &l, 1100.0);
    const sop_value *host = sop__v_get(ev, "host");
    CHECK(host != NULL);
    CHECK_EQ_I(num(host, "ncpu"), 8);
    CHECK_EQ_I(num(host, "mem_available_kb"), 400);
    CHECK(fabs(num(host, "load1") - 1.5) < 1e-9);
    CHECK(sop__v_get(host, "swap_total_kb") == NULL); /* SOP_NA: absent, not 0 */
    CHECK(sop__v_get(host, "load5") == NULL);
    CHECK(sop__v_get(host, "cpu") == NULL); /* no window: no empty object */
    const sop_value *vm = sop__v_get(host, "vm");
    CHECK_EQ_I(num(vm, "pswpout"), 99);
    CHECK(fabs(num(vm, "swap_out_per_s") - 12.0) < 1e-9);
    const sop_value *psi = sop__v_get(host, "psi");
    CHECK(sop__v_get(psi, "cpu") == NULL);
    const sop_value *pm = sop__v_get(psi, "memory");
    CHECK(fabs(num(sop__v_get(pm, "some"), "avg10") - 3.5) < 1e-9);
    CHECK_EQ_I(num(sop__v_get(pm, "some"), "total_us"), 77);
    CHECK(sop__v_get(pm, "full") == NULL);
    const sop_value *disks = sop__v_get(host, "disks");
    CHECK(disks && disks->type == SOP_V_ARR && disks->count == 1);
    CHECK_EQ_S(sop__v_get_str(nth(disks, 0), "name"), "nvme0n1");
    CHECK_EQ_I(num(nth(disks, 0), "read_kb"), 1024);
    CHECK(fabs(num(nth(disks, 0), "util_pct") - 42.0) < 1e-9);
    CHECK(sop__v_get(nth(disks, 0), "r_await_ms") == NULL);
    const sop_value *ooms = sop__v_get(host, "oom_kills");
    CHECK(ooms && ooms->count == 1);
    const sop_value *k = nth(ooms, 0);
    CHECK_EQ_I(num(k, "pid"), 12);
    CHECK_EQ_S(sop__v_get_str(k, "comm"), "bad\xEF\xBF\xBDname"); /* invalid byte replaced */
    CHECK_EQ_I(num(k, "anon_rss_kb"), 8);
    CHECK_EQ_I(num(k, "total_vm_kb"), 10);
    CHECK(fabs(num(k, "time") - 1005.0) < 1e-9);
    CHECK(fabs(num(k, "age_s") - 95.0) < 1e-9);
    sop__v_free(ev);

    /* the log not read: no oom_kills key at all (an empty list would claim "none seen") */
    sop__oom_list_init(&l, 0.0);
    ev = sop__v_obj();
    sop__bridge_host(ev, &h, &l, 0.0);
    CHECK(sop__v_get(sop__v_get(ev, "host"), "oom_kills") == NULL);
    sop__v_free(ev);
    l.read_ok = true;
    ev = sop__v_obj();
    sop__bridge_host(ev, &h, &l, 0.0);
    const sop_value *empty = sop__v_get(sop__v_get(ev, "host"), "oom_kills");
    CHECK(empty && empty->type == SOP_V_ARR && empty->count == 0);
    sop__v_free(ev);
}

static void test_cgroup(void)
{
    sop_cgroup cg;
    sop__cgroup_init(&cg);
    sop_value *ev = sop__v_obj();
    sop__bridge_cgroup(ev, &cg); /* version 0: not read */
    CHECK(sop__v_get(ev, "cgroup") == NULL);

    cg.version = 2;
    snprintf(cg.path, sizeof cg.path, "/sop/job");
    cg.quota_us = 150000, cg.period_us = 100000, cg.quota_cpus = 1.5;
    snprintf(cg.cpuset, sizeof cg.cpuset, "0-3");
    cg.cpuset_count = 4;
    cg.nr_periods = 10, cg.nr_throttled = 5, cg.throttled_pct = 50.0;
    cg.mem_limit_kb = 1024;
    snprintf(cg.mem_limit_path, sizeof cg.mem_limit_path, "/sop");
    cg.mem_usage_kb = 512;
    cg.ev_oom_kill = 2;
    cg.pids_current = 3, cg.pids_max = -1;
    sop__bridge_cgroup(ev, &cg);
    const sop_value *o = sop__v_get(ev, "cgroup");
    CHECK_EQ_I(num(o, "version"), 2);
    CHECK_EQ_S(sop__v_get_str(o, "path"), "/sop/job");
    const sop_value *cpu = sop__v_get(o, "cpu");
    CHECK_EQ_I(num(cpu, "quota_us"), 150000);
    CHECK(fabs(num(cpu, "quota_cpus") - 1.5) < 1e-9);
    CHECK_EQ_I(num(cpu, "effective_cpus"), 2); /* ceil(1.5) < 4 cpuset */
    CHECK_EQ_S(sop__v_get_str(cpu, "cpuset"), "0-3");
    CHECK(fabs(num(cpu, "throttled_pct") - 50.0) < 1e-9);
    CHECK(sop__v_get(cpu, "throttled_ms_per_s") == NULL);
    const sop_value *mem = sop__v_get(o, "memory");
    CHECK_EQ_I(num(mem, "limit_kb"), 1024);
    CHECK_EQ_S(sop__v_get_str(mem, "limit_path"), "/sop");
    CHECK(sop__v_get(mem, "unlimited") == NULL);
    CHECK_EQ_I(num(sop__v_get(mem, "events"), "oom_kill"), 2);
    CHECK(sop__v_get(sop__v_get(mem, "events"), "oom") == NULL);
    const sop_value *pids = sop__v_get(o, "pids");
    CHECK_EQ_I(num(pids, "current"), 3);
    CHECK(sop__v_get(pids, "max") == NULL);
    CHECK_EQ_S(sop__v_get_str(cpu, "path"), "/sop/job");
    CHECK_EQ_S(sop__v_get_str(mem, "path"), "/sop/job");
    sop__v_free(ev);

    /* v1 with each controller in its own group: every block names its own path */
    sop__cgroup_init(&cg);
    cg.version = 1;
    snprintf(cg.path, sizeof cg.path, "/job/worker");
    snprintf(cg.cpu_path, sizeof cg.cpu_path, "/batch");
    snprintf(cg.cpuset_path, sizeof cg.cpuset_path, "/pinned");
    snprintf(cg.pids_path, sizeof cg.pids_path, "/job");
    cg.quota_us = 200000, cg.period_us = 100000, cg.quota_cpus = 2.0;
    cg.mem_limit_kb = 1024;
    cg.pids_current = 3;
    ev = sop__v_obj();
    sop__bridge_cgroup(ev, &cg);
    o = sop__v_get(ev, "cgroup");
    CHECK_EQ_S(sop__v_get_str(o, "path"), "/job/worker");
    CHECK_EQ_S(sop__v_get_str(o, "cpu_path"), "/batch");
    CHECK_EQ_S(sop__v_get_str(sop__v_get(o, "cpu"), "path"), "/batch");
    CHECK_EQ_S(sop__v_get_str(sop__v_get(o, "cpu"), "cpuset_path"), "/pinned");
    CHECK_EQ_S(sop__v_get_str(sop__v_get(o, "memory"), "path"), "/job/worker");
    CHECK_EQ_S(sop__v_get_str(sop__v_get(o, "pids"), "path"), "/job");
    sop__v_free(ev);

    sop__cgroup_init(&cg);
    cg.version = 1;
    snprintf(cg.path, sizeof cg.path, "/");
    cg.quota_us = -1;
    cg.mem_unlimited = true;
    ev = sop__v_obj();
    sop__bridge_cgroup(ev, &cg);
    o = sop__v_get(ev, "cgroup");
    const sop_value *b = sop__v_get(sop__v_get(o, "cpu"), "quota_unlimited");
    CHECK(b && b->type == SOP_V_BOOL && b->b);
    CHECK(sop__v_get(sop__v_get(o, "cpu"), "quota_us") == NULL);
    CHECK(sop__v_get(sop__v_get(o, "memory"), "limit_kb") == NULL);
    CHECK(sop__v_get(sop__v_get(o, "memory"), "unlimited") != NULL);
    CHECK(sop__v_get(o, "pids") == NULL);
    sop__v_free(ev);
}

static void test_alloc(void)
{
    sop_alloc a;
    memset(&a, 0, sizeof a);
    sop_value *ev = sop__v_obj();
    sop__bridge_alloc(ev, &a);
    CHECK(sop__v_get(ev, "alloc") == NULL);
    snprintf(a.allocator, sizeof a.allocator, "jemalloc");
    snprintf(a.source, sizeof a.source, "LD_PRELOAD");
    snprintf(a.ld_preload, sizeof a.ld_preload, "/usr/lib/libjemalloc.so.2");
    snprintf(a.malloc_arena_max, sizeof a.malloc_arena_max, "4");
    snprintf(a.pythonmalloc, sizeof a.pythonmalloc, "malloc");
    sop__bridge_alloc(ev, &a);
    const sop_value *o = sop__v_get(ev, "alloc");
    CHECK_EQ_S(sop__v_get_str(o, "allocator"), "jemalloc");
    CHECK_EQ_S(sop__v_get_str(o, "source"), "LD_PRELOAD");
    CHECK_EQ_S(sop__v_get_str(o, "ld_preload"), "/usr/lib/libjemalloc.so.2");
    CHECK_EQ_I(num(o, "malloc_arena_max"), 4);
    CHECK_EQ_S(sop__v_get_str(o, "pythonmalloc"), "malloc");
    sop__v_free(ev);
    snprintf(a.malloc_arena_max, sizeof a.malloc_arena_max, "4x");
    ev = sop__v_obj();
    sop__bridge_alloc(ev, &a);
    CHECK(sop__v_get(sop__v_get(ev, "alloc"), "malloc_arena_max") == NULL);
    sop__v_free(ev);
}

int main(void)
{
    test_host();
    test_cgroup();
    test_alloc();
    return t_done();
}
