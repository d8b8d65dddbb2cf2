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
    /* libproc2's items are the fields we think they are: compare with the files themselves */
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
    test_rates();
    test_live();
    return t_done();
}
