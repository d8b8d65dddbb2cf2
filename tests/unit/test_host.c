/* test_host.c — the host probes: PSI and loadavg parsers on fixture text (complete, some-only,
 * truncated, garbage), the rate arithmetic on two hand-built snapshots, and a live
 * sop__host_collect on this machine with its cost measured. Depends on probes/host.h, t.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "t.h"

static void test_psi(void)
{
    sop_psi p;
    char *t = t_slurp("host/psi_memory.txt", NULL);
    CHECK_EQ_I(sop__parse_psi(t, &p), 0);
    CHECK(p.present && p.some.present && p.full.present);
    CHECK(fabs(p.some.avg60 - 0.15) < 1e-9);
    CHECK(fabs(p.full.avg300 - 0.08) < 1e-9);
    CHECK_EQ_I(p.some.total_us, 432485);
    CHECK_EQ_I(p.full.total_us, 395361);
    free(t);

    t = t_slurp("host/psi_cpu_some_only.txt", NULL);
    CHECK_EQ_I(sop__parse_psi(t, &p), 0);
    CHECK(p.some.present && !p.full.present);
    CHECK(fabs(p.some.avg10 - 12.5) < 1e-9);
    CHECK(isnan(p.full.avg10));
    CHECK_EQ_I(p.full.total_us, SOP_NA);
    free(t);

    t = t_slurp("host/psi_truncated.txt", NULL);
    CHECK_EQ_I(sop__parse_psi(t, &p), 0);
    CHECK(p.some.present && !p.full.present);
    CHECK(fabs(p.some.avg300 - 3.0) < 1e-9);
    free(t);

    t = t_slurp("host/psi_garbage.txt", NULL);
    CHECK_EQ_I(sop__parse_psi(t, &p), -EINVAL);
    free(t);
    CHECK(sop__parse_psi("", &p) < 0);
    CHECK(sop__parse_psi("nothing here\n", &p) < 0);
}

static void test_loadavg(void)
{
    sop_host h;
    sop__host_init(&h);
    char *t = t_slurp("host/loadavg.txt", NULL);
    CHECK_EQ_I(sop__parse_loadavg(t, &h), 0);
    CHECK(fabs(h.load1 - 0.26) < 1e-9 && fabs(h.load5 - 0.28) < 1e-9 &&
          fabs(h.load15 - 0.17) < 1e-9);
    free(t);
    sop__host_init(&h);
    t = t_slurp("host/loadavg_truncated.txt", NULL);
    CHECK_EQ_I(sop__parse_loadavg(t, &h), -EINVAL);
    CHECK(isnan(h.load1)); /* nothing half-written */
    free(t);
    CHECK_EQ_I(sop__parse_loadavg("x y z", &h), -EINVAL);
}

/* meminfo, vmstat, /proc/stat and diskstats: sop's own parsers of the host counters (they
 * replaced libproc2's, whose figures they matched field for field on this machine). */
static void test_meminfo(void)
{
    sop_host h;
    sop__host_init(&h);
    char *t = t_slurp("host/meminfo.txt", NULL);
    CHECK_EQ_I(sop__parse_meminfo(t, &h), 0);
    CHECK_EQ_I(h.mem_total_kb, sop__kv_i64(t, "MemTotal"));
    CHECK_EQ_I(h.mem_available_kb, sop__kv_i64(t, "MemAvailable"));
    CHECK_EQ_I(h.cached_kb, sop__kv_i64(t, "Cached")); /* not SwapCached */
    CHECK_EQ_I(h.swap_free_kb, sop__kv_i64(t, "SwapFree"));
    CHECK_EQ_I(h.hugepages_total, sop__kv_i64(t, "HugePages_Total"));
    CHECK(h.mem_total_kb > 0 && h.mlocked_kb != SOP_NA && h.shmem_kb != SOP_NA);
    free(t);
    sop__host_init(&h);
    CHECK_EQ_I(sop__parse_meminfo("MemFree: 5 kB\nCached: 1 kB\n", &h), -EINVAL);
    CHECK_EQ_I(h.mem_total_kb, SOP_NA); /* no MemTotal: not that file */
    sop__host_init(&h);
    CHECK_EQ_I(sop__parse_meminfo("MemTotal: 0 kB\n", &h), -EINVAL);
    CHECK_EQ_I(h.mem_total_kb, SOP_NA);
    sop__host_init(&h);
    CHECK_EQ_I(sop__parse_meminfo("MemTotal: 1000 kB\nMemFree: 12", &h), 0);
    CHECK_EQ_I(h.mem_free_kb, SOP_NA); /* a cut-off last line is no number */
}

static void test_vmstat(void)
{
    sop_host h;
    sop__host_init(&h);
    char *t = t_slurp("host/vmstat.txt", NULL);
    CHECK_EQ_I(sop__parse_vmstat(t, &h), 0);
    CHECK_EQ_I(h.pswpin, 0);
    CHECK_EQ_I(h.pswpout, 0);
    CHECK_EQ_I(h.pgfault, 671093753);
    CHECK_EQ_I(h.pgmajfault, 62028);
    CHECK_EQ_I(h.oom_kill, SOP_NA); /* this capture has no oom_kill line */
    free(t);
    sop__host_init(&h);
    CHECK_EQ_I(sop__parse_vmstat("pgfaultx 5\npgfault_x 6\nnr_free_pages 1\n", &h), -EINVAL);
    CHECK_EQ_I(h.pgfault, SOP_NA); /* whole names only */
    CHECK_EQ_I(sop__parse_vmstat("pgmajfault 7\npgfault 9", &h), 0);
    CHECK_EQ_I(h.pgmajfault, 7);
    CHECK_EQ_I(h.pgfault, SOP_NA);
    CHECK_EQ_I(h.oom_kill, SOP_NA); /* before Linux 4.13: no line, so unknown (the log is read) */
    sop__host_init(&h);
    CHECK_EQ_I(sop__parse_vmstat("xoom_kill 5\noom_kill 0\n", &h), 0);
    CHECK_EQ_I(h.oom_kill, 0);
}

static void test_host_stat(void)
{
    sop_host h;
    sop__host_init(&h);
    char *t = t_slurp("host/stat.txt", NULL);
    CHECK_EQ_I(sop__parse_host_stat(t, &h), 0);
    CHECK_EQ_I(h.cpu_user, 1308208); /* the aggregate line, not cpu0 */
    CHECK_EQ_I(h.cpu_idle, 847812);
    CHECK_EQ_I(h.cpu_iowait, 14260);
    CHECK_EQ_I(h.cpu_steal, 913);
    CHECK_EQ_I(h.procs_running, 15);
    CHECK_EQ_I(h.procs_blocked, 2);
    CHECK_EQ_I(h.processes, 767680);
    CHECK(h.btime == 1796393513.0);
    free(t);
    sop__host_init(&h);
    CHECK_EQ_I(sop__parse_host_stat("cpu  1 2 3 4\nbtime 0\n", &h), 0); /* a 2.4 kernel */
    CHECK_EQ_I(h.cpu_idle, 4);
    CHECK_EQ_I(h.cpu_iowait, SOP_NA);
    CHECK(isnan(h.btime));
    sop__host_init(&h);
    CHECK_EQ_I(sop__parse_host_stat("cpu0 1 2 3 4 5\nintr 5\n", &h), -EINVAL);
    CHECK_EQ_I(sop__parse_host_stat("cpu  1 2 3 4 5 6 7 8", &h), -EINVAL); /* cut off */
    CHECK_EQ_I(h.cpu_user, SOP_NA);
}

static bool not_vda1(void *ctx, const char *name)
{
    (void)ctx;
    return strcmp(name, "vda1") != 0;
}

static void test_diskstats(void)
{
    sop_host h;
    sop__host_init(&h);
    char *t = t_slurp("host/diskstats.txt", NULL);
    CHECK_EQ_I(sop__parse_diskstats(t, not_vda1, NULL, &h), 0);
    /* loop0 and ram0 by name, vda1 a partition, vdb never used: vda, nvme0n1 (11 fields, a
     * pre-4.18 kernel) and vdc (10 fields) stay */
    CHECK_EQ_I((int64_t)h.ndisks, 3);
    if (h.ndisks == 3) {
        CHECK_EQ_S(h.disks[0].name, "vda");
        CHECK_EQ_I(h.disks[0].reads, 1988199);
        CHECK_EQ_I(h.disks[0].read_sectors, 260263810);
        CHECK_EQ_I(h.disks[0].read_ms, 1432941);
        CHECK_EQ_I(h.disks[0].writes, 756158);
        CHECK_EQ_I(h.disks[0].write_sectors, 140254584);
        CHECK_EQ_I(h.disks[0].write_ms, 833938);
        CHECK_EQ_I(h.disks[0].io_ms, 334904);
        CHECK(isnan(h.disks[0].util_pct));
        CHECK_EQ_S(h.disks[1].name, "nvme0n1");
        CHECK_EQ_I(h.disks[1].io_ms, 140);
        CHECK_EQ_S(h.disks[2].name, "vdc");
        CHECK_EQ_I(h.disks[2].io_ms, 4);
    }
    free(t);
    CHECK_EQ_I(sop__parse_diskstats("garbage\n", NULL, NULL, &h), -EINVAL);
    CHECK_EQ_I((int64_t)h.ndisks, 0);
    CHECK_EQ_I(sop__parse_diskstats(" 8 0 sda 1 2 3 4 5 6 7 8 9\n", NULL, NULL, &h), -EINVAL);
    CHECK_EQ_I((int64_t)h.ndisks, 0); /* 9 fields: not a record */
}

static void test_rates(void)
{
    sop_host a, b;
    sop__host_init(&a);
    sop__host_init(&b);
    /* 2 s window, 2 CPUs at 100 Hz = 400 jiffies */
    a.cpu_user = 1000, a.cpu_nice = 0, a.cpu_system = 500, a.cpu_idle = 9000;
    a.cpu_iowait = 100, a.cpu_irq = 0, a.cpu_softirq = 0, a.cpu_steal = 0;
    b = a;
    b.cpu_user += 200, b.cpu_system += 40, b.cpu_idle += 100, b.cpu_iowait += 40, b.cpu_steal += 20;
    a.pswpin = 10, a.pswpout = 20, a.pgmajfault = 1000;
    b.pswpin = 10, b.pswpout = 220, b.pgmajfault = 1500;
    a.ndisks = b.ndisks = 1;
    snprintf(a.disks[0].name, sizeof a.disks[0].name, "vda");
    snprintf(b.disks[0].name, sizeof b.disks[0].name, "vda");
    a.disks[0].reads = 100, a.disks[0].writes = 50, a.disks[0].read_ms = 1000;
    a.disks[0].write_ms = 100, a.disks[0].io_ms = 5000;
    a.disks[0].read_sectors = 0, a.disks[0].write_sectors = 0;
    b.disks[0] = a.disks[0];
    b.disks[0].reads += 40, b.disks[0].read_ms += 200, b.disks[0].io_ms += 1500;
    b.disks[0].read_sectors += 4096;
    sop__host_rates(&b, &a, 2.0);
    CHECK(fabs(b.cpu_user_pct - 50.0) < 1e-9);
    CHECK(fabs(b.cpu_system_pct - 10.0) < 1e-9);
    CHECK(fabs(b.cpu_iowait_pct - 10.0) < 1e-9);
    CHECK(fabs(b.cpu_idle_pct - 25.0) < 1e-9);
    CHECK(fabs(b.cpu_steal_pct - 5.0) < 1e-9);
    CHECK(fabs(b.swap_in_per_s - 0.0) < 1e-9);
    CHECK(fabs(b.swap_out_per_s - 100.0) < 1e-9);
    CHECK(fabs(b.pgmajfault_per_s - 250.0) < 1e-9);
    CHECK(fabs(b.disks[0].util_pct - 75.0) < 1e-9);
    CHECK(fabs(b.disks[0].r_await_ms - 5.0) < 1e-9);
    CHECK(fabs(b.disks[0].w_await_ms - 0.0) < 1e-9);
    CHECK(fabs(b.disks[0].read_kb_per_s - 1024.0) < 1e-9);
    CHECK(fabs(b.disks[0].reads_per_s - 20.0) < 1e-9);

    /* an unmeasured side leaves the rate absent, a counter going backwards too */
    sop_host c = b;
    c.pswpin = SOP_NA;
    c.pgmajfault = 0;
    c.cpu_user_pct = NAN;
    c.cpu_user = SOP_NA;
    sop__host_rates(&c, &a, 2.0);
    CHECK(isnan(c.swap_in_per_s));
    CHECK(isnan(c.pgmajfault_per_s));
    sop_host d = b;
    d.swap_out_per_s = NAN;
    sop__host_rates(&d, &a, 0.0); /* no window: nothing computed */
    CHECK(isnan(d.swap_out_per_s));
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void test_live(void)
{
    sop_host h, h2;
    sop_missing m = {0};
    CHECK_EQ_I(sop__host_collect(&h, &m), 0);
    CHECK_EQ_I(h.ncpu, sysconf(_SC_NPROCESSORS_ONLN));
    CHECK(h.mem_total_kb > 0);
    CHECK(h.mem_available_kb > 0 && h.mem_available_kb <= h.mem_total_kb);
    CHECK(h.swap_total_kb >= 0);
    CHECK(h.cpu_idle > 0 && h.cpu_user > 0);
    CHECK(h.procs_running >= 1); /* this test is running */
    CHECK(h.pgfault > 0);
    CHECK(h.btime > 1e9 && h.btime < (double)time(NULL));
    CHECK(!isnan(h.load1));
    /* the fields are the ones we think they are: compare with the files themselves */
    char *mi = NULL, *st = NULL;
    if (sop__read_file_at(AT_FDCWD, "/proc/meminfo", 1 << 16, &mi, NULL) == 0) {
        CHECK_EQ_I(h.mem_total_kb, sop__kv_i64(mi, "MemTotal"));
        CHECK_EQ_I(h.swap_total_kb, sop__kv_i64(mi, "SwapTotal"));
        CHECK_EQ_I(h.hugepages_total, sop__kv_i64(mi, "HugePages_Total"));
        free(mi);
    }
    if (sop__read_file_at(AT_FDCWD, "/proc/stat", 1 << 20, &st, NULL) == 0) {
        const char *b = strstr(st, "\nbtime ");
        CHECK(b != NULL);
        if (b) {
            b += 7;
            CHECK_EQ_I((int64_t)h.btime, sop__parse_i64(&b));
        }
        free(st);
    }
    for (size_t i = 0; i < h.ndisks; i++) {
        CHECK(sop__disk_name_wanted(h.disks[i].name));
        CHECK(h.disks[i].reads >= 0 && h.disks[i].io_ms >= 0);
    }
    if (access("/proc/pressure/cpu", R_OK) == 0)
        CHECK(h.psi_cpu.present && h.psi_cpu.some.present);
    else
        CHECK(!h.psi_cpu.present && m.n > 0);

    /* cost: the whole snapshot must stay well under 2 ms (best of 20 runs) */
    double best = 1e9, t0;
    for (int i = 0; i < 20; i++) {
        sop_missing m2 = {0};
        t0 = now_ms();
        sop__host_collect(&h2, &m2);
        double dt = now_ms() - t0;
        if (dt < best)
            best = dt;
        sop__missing_free(&m2);
    }
    printf("host snapshot: best %.3f ms, %zu disks\n", best, h2.ndisks);
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
    CHECK(best < 10.0); /* instrumented or unoptimized builds: a looser budget */
#else
    CHECK(best < 2.0);
#endif
    usleep(100 * 1000);
    sop_missing m3 = {0};
    sop__host_collect(&h2, &m3);
    sop__host_rates(&h2, &h, 0.1 + 1e-3);
    CHECK(h2.cpu_idle_pct >= 0 && h2.cpu_idle_pct <= 100.0);
    CHECK(h2.swap_in_per_s >= 0);
    sop__missing_free(&m3);
    sop__missing_free(&m);
}

int main(void)
{
    test_psi();
    test_loadavg();
    test_meminfo();
    test_vmstat();
    test_host_stat();
    test_diskstats();
    test_rates();
    test_live();
    return t_done();
}
