/* test_bridge_golden.c — the host, cgroup, alloc and numa bridges give, for fixed structs
 * (unmeasured fields, unlimited limits, v1 paths that differ, invalid UTF-8, empty groups), the
 * exact JSON they gave before their keys became schema tables (engine/bridge/schema.h): same
 * keys, order and values. Depends on engine/bridge, engine/collect/collect_alloc.h,
 * engine/collect/collect_numa.h, engine/core/json.c, t.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge.h"
#include "collect_alloc.h"
#include "collect_numa.h"
#include "json.h"
#include "t.h"

static const char *const expected[] = {
    "{\"cgroup\":{\"version\":1,\"path\":\"/mem\",\"cpu_path\":\"/"
    "cpu\",\"cpu\":{\"quota_us\":150000,\"quota_cpus\":1.5,\"period_us\":100000,\"cpuset\":\"0-3\","
    "\"cpuset_count\":4,\"effective_cpus\":2,\"nr_periods\":10,\"nr_throttled\":2,\"throttled_"
    "pct\":20,\"path\":\"/cpu\",\"cpuset_path\":\"/cs\"},\"memory\":{\"path\":\"/"
    "mem\",\"limit_kb\":1000,\"limit_path\":\"/mem/"
    "up\",\"under_oom\":0,\"events\":{\"oom_kill\":3}},\"pids\":{\"path\":\"/"
    "p\",\"current\":5,\"unlimited\":true}}}",
    "{\"cgroup\":{\"version\":2,\"path\":\"/a\xef"
    "\xbf"
    "\xbd"
    "\",\"cpu\":{\"quota_unlimited\":true,\"period_us\":100000,\"cpuset_count\":2,\"effective_"
    "cpus\":2,\"path\":\"/a\xef"
    "\xbf"
    "\xbd"
    "\"},\"memory\":{\"path\":\"/a\xef"
    "\xbf"
    "\xbd"
    "\",\"unlimited\":true,\"usage_kb\":5,\"events\":{\"low\":1},\"events_local\":{\"oom_kill\":0}}"
    ",\"pids\":{\"path\":\"/a\xef"
    "\xbf"
    "\xbd"
    "\",\"max\":100}}}",
    "{\"cgroup\":{\"version\":2,\"path\":\"/x\"}}",
    "{}",
    "{\"cgroup\":{\"version\":1,\"path\":\"/m\",\"cpu\":{\"quota_us\":50000,\"path\":\"/"
    "m\"},\"memory\":{\"path\":\"/m\",\"events\":{\"max\":0}},\"pids\":{\"path\":\"/"
    "m\",\"current\":1}}}",
    "{\"cgroup\":{\"version\":1,\"path\":\"/m\",\"cpu\":{\"usage_us\":7,\"path\":\"/m\"}}}",
    "{\"alloc\":{\"allocator\":\"glibc\",\"source\":\"maps\",\"malloc_arena_max\":4,\"arenas\":3,"
    "\"arena_rw_kb\":10,\"arena_reserved_kb\":0}}",
    "{\"alloc\":{\"pythonmalloc\":\"malloc\"}}",
    "{\"alloc\":{\"allocator\":\"jemalloc\",\"source\":\"LD_PRELOAD\",\"ld_preload\":\"/x\xef"
    "\xbf"
    "\xbd"
    ".so\"}}",
    "{\"alloc\":{\"malloc_arena_max\":8}}",
    "{}",
    "{\"host\":{}}",
    "{\"host\":{\"ncpu\":4,\"load1\":0.5,\"cpu\":{\"idle_pct\":50},\"vm\":{\"pgfault\":9},\"psi\":{"
    "\"io\":{\"full\":{\"avg10\":1}}},\"disks\":[{\"name\":\"sda\",\"reads\":0,\"writes\":0,"
    "\"written_kb\":4,\"io_ms\":0,\"r_await_ms\":0,\"w_await_ms\":0,\"read_kb_per_s\":0,\"write_kb_"
    "per_s\":0,\"reads_per_s\":0,\"writes_per_s\":0},{\"writes\":0,\"read_kb\":0,\"written_kb\":0,"
    "\"io_ms\":0,\"util_pct\":0,\"r_await_ms\":0,\"w_await_ms\":0,\"read_kb_per_s\":0,\"write_kb_"
    "per_s\":0,\"reads_per_s\":0,\"writes_per_s\":0}],\"oom_kills\":[{\"pid\":7,\"comm\":\"py\xef"
    "\xbf"
    "\xbd"
    "\",\"file_rss_kb\":0,\"shmem_rss_kb\":0,\"total_vm_kb\":0,\"pgtables_kb\":0,\"uid\":0,\"oom_"
    "score_adj\":0,\"time\":100,\"age_s\":100},{\"anon_rss_kb\":0,\"file_rss_kb\":0,\"shmem_rss_"
    "kb\":0,\"total_vm_kb\":0,\"pgtables_kb\":0,\"uid\":0,\"oom_score_adj\":0,\"uptime_s\":3}]}}",
    "{\"host\":{\"oom_kills\":[]}}",
    "{\"host\":{}}",
    "{}",
    "{\"host\":{\"numa\":{\"balancing\":1}}}",
    "{\"host\":{\"numa\":{\"nodes\":[{\"node\":0,\"cpus\":\"0-3\",\"cpu_count\":4,\"mem_total_kb\":"
    "10},{\"node\":1,\"mem_total_kb\":1,\"mem_free_kb\":2}]}},\"proc\":{\"numa\":{\"nodes\":[{"
    "\"node\":0,\"kb\":5},{\"node\":1,\"kb\":0},{\"node\":3,\"kb\":2}],\"kb\":7,\"interleave_kb\":"
    "0,\"mappings\":4,\"truncated\":false}}}",
};
static size_t seen;

static void out(sop_value *ev)
{
    char *s = sop__json_print(ev, 0);
    CHECK(seen < sizeof expected / sizeof expected[0]);
    if (s && seen < sizeof expected / sizeof expected[0])
        CHECK_EQ_S(s, expected[seen]);
    seen++;
    free(s);
    sop__v_free(ev);
}

static void run(void)
{
    static sop_cgroup cg;
    static sop_alloc a;
    static sop_host h;
    static sop_oom_list l;
    static sop_numa n;
    for (int v = 0; v < 6; v++) {
        sop__cgroup_init(&cg);
        if (v == 0) {
            cg.version = 1;
            strcpy(cg.path, "/mem");
            strcpy(cg.cpu_path, "/cpu");
            cg.quota_us = 150000;
            cg.period_us = 100000;
            cg.quota_cpus = 1.5;
            strcpy(cg.cpuset, "0-3");
            cg.cpuset_count = 4;
            cg.nr_periods = 10;
            cg.nr_throttled = 2;
            cg.throttled_pct = 20;
            strcpy(cg.cpuset_path, "/cs");
            strcpy(cg.pids_path, "/p");
            cg.pids_current = 5;
            cg.pids_max = -1;
            cg.mem_limit_kb = 1000;
            strcpy(cg.mem_limit_path, "/mem/up");
            cg.under_oom = 0;
            cg.ev_oom_kill = 3;
        }
        if (v == 1) {
            cg.version = 2;
            strcpy(cg.path, "/a\xff");
            cg.quota_us = -1;
            cg.period_us = 100000;
            cg.mem_unlimited = true;
            cg.mem_usage_kb = 5;
            cg.ev_low = 1;
            cg.ev_local_oom_kill = 0;
            cg.pids_max = 100;
            cg.cpuset_count = 2;
        }
        if (v == 2) {
            cg.version = 2;
            strcpy(cg.path, "/x");
        }
        if (v == 3) {
            cg.version = 0;
        }
        if (v == 4) {
            cg.version = 1;
            strcpy(cg.path, "/m");
            strcpy(cg.cpu_path, "/m");
            cg.quota_us = 50000;
            cg.quota_cpus = NAN;
            cg.pids_current = 1;
            cg.ev_max = 0;
        }
        if (v == 5) {
            cg.version = 1;
            strcpy(cg.path, "/m");
            cg.usage_us = 7;
            cg.pids_max = SOP_NA;
            cg.pids_current = SOP_NA;
        }
        sop_value *ev = sop__v_obj();
        sop__bridge_cgroup(ev, &cg);
        out(ev);
    }
    for (int v = 0; v < 5; v++) {
        memset(&a, 0, sizeof a);
        a.heaps.heaps = a.heaps.rw_kb = a.heaps.reserved_kb = SOP_NA;
        if (v == 0) {
            strcpy(a.allocator, "glibc");
            strcpy(a.source, "maps");
            strcpy(a.malloc_arena_max, "4");
            a.heaps.heaps = 3;
            a.heaps.rw_kb = 10;
            a.heaps.reserved_kb = 0;
        }
        if (v == 1) {
            strcpy(a.malloc_arena_max, "abc");
            strcpy(a.pythonmalloc, "malloc");
        }
        if (v == 2) {
            strcpy(a.allocator, "jemalloc");
            strcpy(a.source, "LD_PRELOAD");
            strcpy(a.ld_preload, "/x\xfe.so");
            strcpy(a.malloc_arena_max, "-1");
        }
        if (v == 3) {
            strcpy(a.malloc_arena_max, "08");
        }
        sop_value *ev = sop__v_obj();
        sop__bridge_alloc(ev, &a);
        out(ev);
    }
    for (int v = 0; v < 4; v++) {
        sop__host_init(&h);
        memset(&l, 0, sizeof l);
        if (v == 1) {
            h.ncpu = 4;
            h.load1 = 0.5;
            h.cpu_idle_pct = 50;
            h.pgfault = 9;
            h.psi_io.present = true;
            h.psi_io.full.present = true;
            h.psi_io.full.avg10 = 1;
            h.psi_cpu.present = true;
            h.ndisks = 2;
            memset(h.disks, 0, sizeof h.disks[0] * 2);
            strcpy(h.disks[0].name, "sda");
            h.disks[0].read_sectors = SOP_NA;
            h.disks[0].write_sectors = 9;
            h.disks[0].util_pct = NAN;
            h.disks[1].name[0] = 0;
            h.disks[1].reads = SOP_NA;
            l.read_ok = true;
            l.n = 2;
            memset(l.items, 0, sizeof l.items[0] * 2);
            l.items[0].pid = 7;
            strcpy(l.items[0].comm, "py\xc3");
            l.items[0].time = 100;
            l.items[0].uptime_s = NAN;
            l.items[0].anon_rss_kb = SOP_NA;
            l.items[1].time = NAN;
            l.items[1].uptime_s = 3;
        }
        if (v == 2) {
            l.read_ok = true;
        }
        sop_value *ev = sop__v_obj();
        sop__bridge_host(ev, v == 3 ? NULL : &h, v ? &l : NULL, 200);
        out(ev);
    }
    for (int v = 0; v < 3; v++) {
        memset(&n, 0, sizeof n);
        n.balancing = SOP_NA;
        if (v == 1) {
            n.balancing = 1;
        }
        if (v == 2) {
            n.have_topology = true;
            n.nnodes = 2;
            n.nodes[0].node = 0;
            strcpy(n.nodes[0].cpus, "0-3");
            n.nodes[0].cpu_count = 4;
            n.nodes[0].mem_total_kb = 10;
            n.nodes[0].mem_free_kb = SOP_NA;
            n.nodes[1].node = 1;
            n.nodes[1].cpu_count = SOP_NA;
            n.nodes[1].mem_total_kb = 1;
            n.nodes[1].mem_free_kb = 2;
            n.have_pages = true;
            n.pages.kb[0] = 5;
            n.pages.kb[3] = 2;
            n.pages.lines = 4;
        }
        sop_value *ev = sop__v_obj();
        sop__bridge_numa(ev, &n);
        out(ev);
    }
}

int main(void)
{
    run();
    CHECK_EQ_I(seen, sizeof expected / sizeof expected[0]);
    return t_done();
}
