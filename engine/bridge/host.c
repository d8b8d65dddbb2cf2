/* host.c (bridge) — adds ev.host: memory, load, CPU split, vm counters, PSI, disks and the
 * kernel log's OOM kills (with age_s = now - time). Its keys are the table sop__evk_host below
 * (docs/evidence.md is generated from it); objects whose every value is unmeasured are left
 * out. Depends on engine/core/value.h, probes/host.h, kmsg.h, schema.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bridge.h"
#include "schema.h"

/* The writers of the rows that are objects, arrays or computed (defined below the table). */
static void w_cpu(sop_value *o, const char *name, const void *base, void *ctx);
static void w_vm(sop_value *o, const char *name, const void *base, void *ctx);
static void w_psi(sop_value *o, const char *name, const void *base, void *ctx);
static void w_disks(sop_value *o, const char *name, const void *base, void *ctx);
static void w_read_kb(sop_value *o, const char *name, const void *base, void *ctx);
static void w_written_kb(sop_value *o, const char *name, const void *base, void *ctx);
static void w_oom_pid(sop_value *o, const char *name, const void *base, void *ctx);
static void w_oom_age_s(sop_value *o, const char *name, const void *base, void *ctx);

#define I(k, f, u, d) SOP_EVK_I(k, sop_host, f, u, d)
#define D(k, f, u, d) SOP_EVK_D(k, sop_host, f, u, d)
#define H SOP_EVK_H
const sop_evk sop__evk_host[] = {
    I("ncpu", ncpu, "", "online CPUs"),
    I("mem_total_kb", mem_total_kb, "kB", "MemTotal (/proc/meminfo)"),
    I("mem_free_kb", mem_free_kb, "kB", "MemFree"),
    I("mem_available_kb", mem_available_kb, "kB", "MemAvailable"),
    I("cached_kb", cached_kb, "kB", "Cached"),
    I("dirty_kb", dirty_kb, "kB", "Dirty"),
    I("writeback_kb", writeback_kb, "kB", "Writeback"),
    I("swap_total_kb", swap_total_kb, "kB", "SwapTotal"),
    I("swap_free_kb", swap_free_kb, "kB", "SwapFree"),
    I("shmem_kb", shmem_kb, "kB", "Shmem"),
    I("mlocked_kb", mlocked_kb, "kB", "Mlocked"),
    I("hugepages_total", hugepages_total, "pages", "HugePages_Total"),
    I("hugepages_free", hugepages_free, "pages", "HugePages_Free"),
    D("load1", load1, "", "load average over 1 min (/proc/loadavg)"),
    D("load5", load5, "", "load average over 5 min"),
    D("load15", load15, "", "load average over 15 min"),
    I("procs_running", procs_running, "", "runnable tasks (/proc/stat)"),
    I("procs_blocked", procs_blocked, "", "tasks blocked on IO (/proc/stat)"),
    I("processes", processes, "", "/proc/stat \"processes\": forks since boot"),
    I("threads_max", threads_max, "", "/proc/sys/kernel/threads-max: tasks the host may hold"),
    I("pid_max", pid_max, "", "/proc/sys/kernel/pid_max: the highest pid, so the most tasks"),
    D("forks_per_s", forks_per_s, "1/s", "its rate (window)"),
    D("boot_time", btime, "s", "epoch seconds"),
    SOP_EVK_W("cpu", SOP_EVK_OBJ, w_cpu, "", "the host's CPU split over the window (/proc/stat)"),
    D("cpu.user_pct", cpu_user_pct, "%", "user time"),
    D("cpu.system_pct", cpu_system_pct, "%", "system time"),
    D("cpu.iowait_pct", cpu_iowait_pct, "%", "iowait"),
    D("cpu.idle_pct", cpu_idle_pct, "%", "idle"),
    D("cpu.steal_pct", cpu_steal_pct, "%", "stolen by the hypervisor"),
    SOP_EVK_W("vm", SOP_EVK_OBJ, w_vm, "", "/proc/vmstat counters"),
    I("vm.pswpin", pswpin, "pages", "pages swapped in since boot"),
    I("vm.pswpout", pswpout, "pages", "pages swapped out since boot"),
    I("vm.pgfault", pgfault, "", "page faults since boot"),
    I("vm.pgmajfault", pgmajfault, "", "major page faults since boot"),
    D("vm.swap_in_per_s", swap_in_per_s, "pages/s", "window"),
    D("vm.swap_out_per_s", swap_out_per_s, "pages/s", "window"),
    D("vm.pgmajfault_per_s", pgmajfault_per_s, "1/s", "window"),
    SOP_EVK_W("psi", SOP_EVK_OBJ, w_psi, "", "pressure stall information, when the kernel has it"),
    H("psi.*", SOP_EVK_OBJ, "", "`cpu`, `memory`, `io` (/proc/pressure/*)"),
    H("psi.*.*", SOP_EVK_OBJ, "", "`some`, `full` (the kernel's lines)"),
    SOP_EVK_D("psi.*.*.avg10", sop_psi_line, avg10, "%", "share of time stalled, 10 s average"),
    SOP_EVK_D("psi.*.*.avg60", sop_psi_line, avg60, "%", "60 s average"),
    SOP_EVK_D("psi.*.*.avg300", sop_psi_line, avg300, "%", "300 s average"),
    SOP_EVK_I("psi.*.*.total_us", sop_psi_line, total_us, "us", "total stall time"),
    SOP_EVK_W("disks", SOP_EVK_ARR, w_disks, "", "whole disks only (/proc/diskstats)"),
    SOP_EVK_T("disks[].name", sop_disk, name, "device name"),
    SOP_EVK_I("disks[].reads", sop_disk, reads, "", "reads completed since boot"),
    SOP_EVK_I("disks[].writes", sop_disk, writes, "", "writes completed since boot"),
    SOP_EVK_W("disks[].read_kb", SOP_EVK_INT, w_read_kb, "kB", "read since boot (sectors / 2)"),
    SOP_EVK_W("disks[].written_kb", SOP_EVK_INT, w_written_kb, "kB",
              "written since boot (sectors / 2)"),
    SOP_EVK_I("disks[].io_ms", sop_disk, io_ms, "ms", "time spent doing IO since boot"),
    SOP_EVK_D("disks[].util_pct", sop_disk, util_pct, "%", "busy time (window)"),
    SOP_EVK_D("disks[].r_await_ms", sop_disk, r_await_ms, "ms", "mean read wait (window)"),
    SOP_EVK_D("disks[].w_await_ms", sop_disk, w_await_ms, "ms", "mean write wait (window)"),
    SOP_EVK_D("disks[].read_kb_per_s", sop_disk, read_kb_per_s, "kB/s", "window"),
    SOP_EVK_D("disks[].write_kb_per_s", sop_disk, write_kb_per_s, "kB/s", "window"),
    SOP_EVK_D("disks[].reads_per_s", sop_disk, reads_per_s, "1/s", "window"),
    SOP_EVK_D("disks[].writes_per_s", sop_disk, writes_per_s, "1/s", "window"),
    H("numa", SOP_EVK_OBJ, "",
      "NUMA topology (engine/collect/collect_numa.c from probes/numa.c: "
      "/sys/devices/system/node/node<N>/{cpulist,meminfo})"),
    SOP_EVK_I("numa.balancing", sop_numa, balancing, "",
              "/proc/sys/kernel/numa_balancing: 0 off, 1 on, 2 tiering"),
    H("numa.nodes", SOP_EVK_ARR, "",
      "sorted by node, at most 64; absent on a kernel without NUMA support = not measured, "
      "never \"one node\""),
    H("numa.nodes[].node", SOP_EVK_INT, "", "node id"),
    SOP_EVK_S("numa.nodes[].cpus", sop_numa_node, cpus,
              "cpulist (\"0-15,32-47\"); absent for a memory-only node"),
    SOP_EVK_I("numa.nodes[].cpu_count", sop_numa_node, cpu_count, "", "CPUs in the list"),
    SOP_EVK_I("numa.nodes[].mem_total_kb", sop_numa_node, mem_total_kb, "kB", "node<N>/meminfo"),
    SOP_EVK_I("numa.nodes[].mem_free_kb", sop_numa_node, mem_free_kb, "kB", "node<N>/meminfo"),
    H("oom_kills", SOP_EVK_ARR, "",
      "the kernel log's OOM kills, newest last; present only when the kernel log was read: "
      "[] = no kill seen (also when /proc/vmstat counts no OOM kill since boot: the log is "
      "then not read); while that count stays put, a parse of the whole log kept in "
      "$SOP_STATE_DIR (root: /run/sop) answers instead of the log"),
    SOP_EVK_W("oom_kills[].pid", SOP_EVK_INT, w_oom_pid, "", "the victim"),
    SOP_EVK_T("oom_kills[].comm", sop_oom, comm, "the victim's comm"),
    SOP_EVK_I("oom_kills[].anon_rss_kb", sop_oom, anon_rss_kb, "kB", "anon-rss at the kill"),
    SOP_EVK_I("oom_kills[].file_rss_kb", sop_oom, file_rss_kb, "kB", "file-rss"),
    SOP_EVK_I("oom_kills[].shmem_rss_kb", sop_oom, shmem_rss_kb, "kB", "shmem-rss"),
    SOP_EVK_I("oom_kills[].total_vm_kb", sop_oom, total_vm_kb, "kB", "total-vm"),
    SOP_EVK_I("oom_kills[].pgtables_kb", sop_oom, pgtables_kb, "kB", "pgtables"),
    SOP_EVK_I("oom_kills[].uid", sop_oom, uid, "", "the victim's uid"),
    SOP_EVK_I("oom_kills[].oom_score_adj", sop_oom, oom_score_adj, "",
              "the victim's oom_score_adj"),
    SOP_EVK_T("oom_kills[].constraint", sop_oom, constraint,
              "CONSTRAINT_MEMCG, CONSTRAINT_NONE, ..."),
    SOP_EVK_T("oom_kills[].task_memcg", sop_oom, task_memcg, "the victim's memory cgroup"),
    SOP_EVK_T("oom_kills[].oom_memcg", sop_oom, oom_memcg, "the cgroup whose limit was hit"),
    SOP_EVK_T("oom_kills[].invoker", sop_oom, invoker, "comm that invoked the killer"),
    SOP_EVK_D("oom_kills[].time", sop_oom, time, "s", "epoch seconds"),
    SOP_EVK_W("oom_kills[].age_s", SOP_EVK_NUM, w_oom_age_s, "s", "now - time"),
    SOP_EVK_D("oom_kills[].uptime_s", sop_oom, uptime_s, "s", "the record's stamp"),
};
const size_t sop__evk_host_n = sizeof sop__evk_host / sizeof sop__evk_host[0];
#undef I
#undef D
#undef H

static void set(sop_value *o, const void *base, const char *prefix, void *ctx)
{
    sop__bridge_keys(o, base, sop__evk_host, sop__evk_host_n, prefix, NULL, ctx);
}

static sop_value *psi_line(const sop_psi_line *l)
{
    if (!l->present)
        return NULL;
    sop_value *o = sop__v_obj();
    if (o)
        set(o, l, "psi.*.*.", NULL);
    return o;
}

static void add_psi(sop_value *psi, const char *key, const sop_psi *p)
{
    if (!p->present)
        return;
    sop_value *o = sop__v_obj();
    if (!o)
        return;
    sop__bridge_attach(o, "some", psi_line(&p->some));
    sop__bridge_attach(o, "full", psi_line(&p->full));
    sop__bridge_attach(psi, key, o);
}

static int64_t sectors_kb(int64_t sectors)
{
    return sectors == SOP_NA ? SOP_NA : sectors / 2;
}

static void w_read_kb(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set_int(o, name, sectors_kb(((const sop_disk *)base)->read_sectors));
}

static void w_written_kb(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set_int(o, name, sectors_kb(((const sop_disk *)base)->write_sectors));
}

static void add_disks(sop_value *host, const sop_host *h)
{
    if (h->ndisks == 0)
        return;
    sop_value *arr = sop__v_arr_at(host, "disks");
    for (size_t i = 0; arr && i < h->ndisks && i < SOP_DISKS_MAX; i++) {
        const sop_disk *d = &h->disks[i];
        sop_value *o = sop__v_obj();
        if (!o)
            return;
        set(o, d, "disks[].", NULL);
        sop__v_push(arr, o);
    }
}

typedef struct {
    const sop_oom *kill;
    double now;
} oom_ctx;

static void w_oom_pid(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const oom_ctx *c = ctx;
    if (c->kill->pid > 0)
        sop__v_set_int(o, name, c->kill->pid);
}

static void w_oom_age_s(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const oom_ctx *c = ctx;
    if (isfinite(c->kill->time) && isfinite(c->now))
        sop__v_set_dbl(o, name, c->now - c->kill->time);
}

static void add_ooms(sop_value *host, const sop_oom_list *ooms, double now)
{
    /* always an array when the log was read: an empty list is evidence ("no kill seen") */
    sop_value *arr = sop__v_arr_at(host, "oom_kills");
    for (size_t i = 0; arr && i < ooms->n && i < SOP_OOM_MAX; i++) {
        oom_ctx c = {&ooms->items[i], now};
        sop_value *o = sop__v_obj();
        if (!o)
            return;
        set(o, c.kill, "oom_kills[].", &c);
        sop__v_push(arr, o);
    }
}

/* The host's own level (base the sop_host): its objects are built where the walk reaches their
 * row; numa: engine/collect/collect_numa.c; oom_kills: below, also without a host. */
static void add_obj(sop_value *host, const char *name, const sop_host *h)
{
    sop_value *o = sop__v_obj();
    char prefix[8];
    snprintf(prefix, sizeof prefix, "%s.", name);
    if (o)
        set(o, h, prefix, NULL);
    sop__bridge_attach(host, name, o);
}

static void w_cpu(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    add_obj(o, name, base);
}

static void w_vm(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    add_obj(o, name, base);
}

static void w_psi(sop_value *host, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_host *h = base;
    sop_value *psi = sop__v_obj();
    if (psi) {
        add_psi(psi, "cpu", &h->psi_cpu);
        add_psi(psi, "memory", &h->psi_memory);
        add_psi(psi, "io", &h->psi_io);
    }
    sop__bridge_attach(host, name, psi);
}

static void w_disks(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name, (void)ctx;
    add_disks(o, base);
}

void sop__bridge_host(sop_value *ev, const sop_host *h, const sop_oom_list *ooms, double now)
{
    sop_value *host = sop__v_obj_at(ev, "host");
    if (!host)
        return;
    if (h)
        set(host, h, "", NULL);
    if (ooms && ooms->read_ok)
        add_ooms(host, ooms, now);
}
