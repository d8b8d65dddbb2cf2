/* test_cgroup.c — the cgroup probe: pure parsers on text (incl. malformed and truncated),
 * sop__cgroup_collect on fixture trees (v1 hybrid, v2, v2 malformed, v2 namespaced), rates,
 * a live smoke run on this process, and — as root — real cgroups made here with a memory
 * limit and a cpu quota holding a child process (skipped with a message when not root).
 * Depends on probes/cgroup.h, t.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "t.h"

static void test_parsers(void)
{
    sop_cgroup cg;
    sop__cgroup_init(&cg);
    char *t = t_slurp("cgroup/v1/proc_self_cgroup", NULL);
    CHECK_EQ_I(sop__parse_proc_cgroup(t, &cg), 0);
    CHECK_EQ_I(cg.version, 1);
    CHECK_EQ_S(cg.path, "/job/worker");
    CHECK_EQ_S(cg.cpu_path, "/job/worker");
    CHECK_EQ_S(cg.cpuset_path, "/job");
    CHECK_EQ_S(cg.pids_path, "/job");
    CHECK_EQ_S(cg.v2_path, "/job");
    free(t);

    sop__cgroup_init(&cg);
    CHECK_EQ_I(sop__parse_proc_cgroup("0::/a/b\n", &cg), 0);
    CHECK_EQ_I(cg.version, 2);
    CHECK_EQ_S(cg.path, "/a/b");
    /* named v1 hierarchies alone (systemd) do not make it v1 */
    sop__cgroup_init(&cg);
    CHECK_EQ_I(sop__parse_proc_cgroup("1:name=systemd:/x\n0::/y\n", &cg), 0);
    CHECK_EQ_I(cg.version, 2);
    CHECK_EQ_S(cg.path, "/y");
    /* "cpuacct" alone is not "cpu", "cpu,cpuacct" is */
    sop__cgroup_init(&cg);
    CHECK_EQ_I(sop__parse_proc_cgroup("2:cpuacct:/a\n", &cg), -EINVAL);
    sop__cgroup_init(&cg);
    CHECK_EQ_I(sop__parse_proc_cgroup("2:cpuacct,cpu:/a\n", &cg), 0);
    CHECK_EQ_S(cg.cpu_path, "/a");
    CHECK_EQ_I(sop__parse_proc_cgroup("garbage\n", &cg), -EINVAL);
    CHECK_EQ_I(sop__parse_proc_cgroup("", &cg), -EINVAL);
    CHECK_EQ_I(sop__parse_proc_cgroup("5:memory", &cg), -EINVAL); /* cut before the path */

    int64_t q = 0, p = 0;
    CHECK_EQ_I(sop__parse_cpu_max("max 100000\n", &q, &p), 0);
    CHECK_EQ_I(q, -1);
    CHECK_EQ_I(p, 100000);
    CHECK_EQ_I(sop__parse_cpu_max("200000 100000\n", &q, &p), 0);
    CHECK_EQ_I(q, 200000);
    q = 7;
    CHECK_EQ_I(sop__parse_cpu_max("garbage\n", &q, &p), -EINVAL);
    CHECK_EQ_I(q, 7);
    CHECK_EQ_I(sop__parse_cpu_max("200000 abc\n", &q, &p), -EINVAL);
    CHECK_EQ_I(sop__parse_cpu_max("20x 100000\n", &q, &p), -EINVAL);
    CHECK_EQ_I(sop__parse_cpu_max("", &q, &p), -EINVAL);

    sop__cgroup_init(&cg);
    CHECK_EQ_I(sop__parse_cpu_stat("nr_periods 10\nnr_throttled 4\nthrottled_time 3000000\n", &cg),
               0);
    CHECK_EQ_I(cg.nr_periods, 10);
    CHECK_EQ_I(cg.nr_throttled, 4);
    CHECK_EQ_I(cg.throttled_us, 3000); /* v1 ns -> us */
    sop__cgroup_init(&cg);
    CHECK_EQ_I(sop__parse_cpu_stat("usage_usec 77\nnr_periods 10\nnr_thro", &cg), 0);
    CHECK_EQ_I(cg.usage_us, 77);
    CHECK_EQ_I(cg.nr_throttled, SOP_NA); /* cut line left out */
    CHECK_EQ_I(sop__parse_cpu_stat("what\n", &cg), -EINVAL);

    sop__cgroup_init(&cg);
    t = t_slurp("cgroup/v2_bad/x/y/memory.events", NULL);
    CHECK_EQ_I(sop__parse_memory_events(t, &cg), 0);
    CHECK_EQ_I(cg.ev_high, 3);
    CHECK_EQ_I(cg.ev_max, 7);
    CHECK_EQ_I(cg.ev_oom, SOP_NA);
    CHECK_EQ_I(cg.ev_oom_kill, SOP_NA);
    free(t);
    sop__cgroup_init(&cg);
    CHECK_EQ_I(sop__parse_memory_events("oom_kill_disable 0\nunder_oom 1\noom_kill 9\n", &cg), 0);
    CHECK_EQ_I(cg.ev_oom_kill, 9);
    CHECK_EQ_I(cg.under_oom, 1);

    int64_t b = 0;
    CHECK_EQ_I(sop__parse_mem_limit("9223372036854771712\n", &b), 0);
    CHECK_EQ_I(b, -1);
    CHECK_EQ_I(sop__parse_mem_limit("max\n", &b), 0);
    CHECK_EQ_I(b, -1);
    CHECK_EQ_I(sop__parse_mem_limit("67108864\n", &b), 0);
    CHECK_EQ_I(b, 67108864);
    CHECK_EQ_I(sop__parse_mem_limit("lots\n", &b), -EINVAL);
    CHECK_EQ_I(sop__parse_mem_limit("maxi\n", &b), -EINVAL);

    char mnt[256];
    t = t_slurp("cgroup/mountinfo_hybrid.txt", NULL);
    CHECK_EQ_I(sop__parse_mountinfo_cgroup(t, "memory", mnt, sizeof mnt), 0);
    CHECK_EQ_S(mnt, "/sys/fs/cgroup/memory");
    CHECK_EQ_I(sop__parse_mountinfo_cgroup(t, "cpu", mnt, sizeof mnt), 0);
    CHECK_EQ_S(mnt, "/sys/fs/cgroup/cpu");
    CHECK_EQ_I(sop__parse_mountinfo_cgroup(t, NULL, mnt, sizeof mnt), 0);
    CHECK_EQ_S(mnt, "/sys/fs/cgroup/unified");
    CHECK_EQ_I(sop__parse_mountinfo_cgroup(t, "hugetlb", mnt, sizeof mnt), -ENOENT);
    free(t);
    t = t_slurp("cgroup/mountinfo_v2.txt", NULL);
    CHECK_EQ_I(sop__parse_mountinfo_cgroup(t, "memory", mnt, sizeof mnt), -ENOENT);
    CHECK_EQ_I(sop__parse_mountinfo_cgroup(t, NULL, mnt, sizeof mnt), 0);
    CHECK_EQ_S(mnt, "/sys/fs/cgroup");
    free(t);
}

/* A temp dir holding the fixture's proc_self_cgroup as "cgroup", opened as a /proc/PID fd. */
static int fake_proc_named(const char *fixture_dir, const char *file, char *tmp, size_t cap)
{
    char rel[256];
    snprintf(rel, sizeof rel, "%s/%s", fixture_dir, file);
    char *text = t_slurp(rel, NULL);
    snprintf(tmp, cap, "/tmp/sop-test-cg-XXXXXX");
    if (!mkdtemp(tmp))
        exit(2);
    char p[300];
    snprintf(p, sizeof p, "%s/cgroup", tmp);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    return open(tmp, O_RDONLY | O_DIRECTORY);
}

static int fake_proc(const char *fixture_dir, char *tmp, size_t cap)
{
    return fake_proc_named(fixture_dir, "proc_self_cgroup", tmp, cap);
}

static void drop_fake_proc(int fd, const char *tmp)
{
    char p[300];
    close(fd);
    snprintf(p, sizeof p, "%s/cgroup", tmp);
    unlink(p);
    rmdir(tmp);
}

static int missing_has(const sop_missing *m, const char *probe, const char *needle)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->items[i].probe, probe) == 0 && strstr(m->items[i].reason, needle))
            return 1;
    return 0;
}

static void collect_fixture(const char *dir, sop_cgroup *cg, sop_missing *m)
{
    char tmp[64], root[1024];
    int fd = fake_proc(dir, tmp, sizeof tmp);
    snprintf(root, sizeof root, "%s", t_fixture(dir));
    CHECK_EQ_I(sop__cgroup_collect(fd, root, cg, m), 0);
    drop_fake_proc(fd, tmp);
}

static void test_fixture_v1(void)
{
    sop_cgroup cg;
    sop_missing m = {0};
    collect_fixture("cgroup/v1", &cg, &m);
    CHECK_EQ_I(cg.version, 1);
    CHECK_EQ_S(cg.path, "/job/worker");
    CHECK_EQ_I(cg.mem_limit_kb, 2097152); /* the parent's 2 GiB is tighter than 4 GiB */
    CHECK_EQ_S(cg.mem_limit_path, "/job");
    CHECK(!cg.mem_unlimited);
    CHECK_EQ_I(cg.mem_usage_kb, 1572864);
    CHECK_EQ_I(cg.mem_max_usage_kb, 2097148);
    CHECK_EQ_I(cg.mem_failcnt, 42);
    CHECK_EQ_I(cg.swap_limit_kb, 1048576); /* memsw 5 GiB - own limit 4 GiB */
    CHECK_EQ_I(cg.ev_oom_kill, 3);
    CHECK_EQ_I(cg.under_oom, 0);
    CHECK_EQ_I(cg.quota_us, 150000);
    CHECK_EQ_I(cg.period_us, 100000);
    CHECK(fabs(cg.quota_cpus - 1.5) < 1e-9);
    CHECK_EQ_I(cg.nr_periods, 5000);
    CHECK_EQ_I(cg.nr_throttled, 1200);
    CHECK_EQ_I(cg.throttled_us, 987654321);
    CHECK_EQ_I(cg.usage_us, 123456789);
    CHECK_EQ_S(cg.cpuset, "0-3");
    CHECK_EQ_I(cg.cpuset_count, 4);
    CHECK_EQ_I(cg.pids_current, 12);
    CHECK_EQ_I(cg.pids_max, -1);
    for (size_t i = 0; i < m.n; i++)
        fprintf(stderr, "  v1 missing: %s: %s\n", m.items[i].probe, m.items[i].reason);
    CHECK_EQ_I(m.n, 0);
    sop__missing_free(&m);
}

/* v1 with the cpu controller in another group than memory: each is read from its own. */
static void test_fixture_v1_split(void)
{
    sop_cgroup cg;
    sop_missing m = {0};
    char tmp[64], root[1024];
    sop__cgroup_init(&cg);
    int fd = fake_proc_named("cgroup/v1", "proc_split_cgroup", tmp, sizeof tmp);
    snprintf(root, sizeof root, "%s", t_fixture("cgroup/v1"));
    CHECK_EQ_I(sop__cgroup_collect(fd, root, &cg, &m), 0);
    drop_fake_proc(fd, tmp);
    CHECK_EQ_I(cg.version, 1);
    CHECK_EQ_S(cg.path, "/job/worker");
    CHECK_EQ_S(cg.cpu_path, "/job");
    CHECK_EQ_I(cg.quota_us, -1);          /* /job's own quota, not /job/worker's 150000 */
    CHECK_EQ_I(cg.mem_limit_kb, 2097152); /* memory still from /job/worker up */
    CHECK_EQ_I(cg.mem_usage_kb, 1572864);
    sop__missing_free(&m);
}

static void test_fixture_v2(void)
{
    sop_cgroup cg;
    sop_missing m = {0};
    collect_fixture("cgroup/v2", &cg, &m);
    CHECK_EQ_I(cg.version, 2);
    CHECK_EQ_S(cg.path, "/sop/job");
    CHECK_EQ_I(cg.mem_limit_kb, 1048576); /* /sop's 1 GiB; the job itself says max */
    CHECK_EQ_S(cg.mem_limit_path, "/sop");
    CHECK_EQ_I(cg.mem_usage_kb, 524288);
    CHECK_EQ_I(cg.mem_max_usage_kb, 1048576);
    CHECK_EQ_I(cg.swap_limit_kb, 0);
    CHECK_EQ_I(cg.ev_high, 17);
    CHECK_EQ_I(cg.ev_max, 230);
    CHECK_EQ_I(cg.ev_oom, 4);
    CHECK_EQ_I(cg.ev_oom_kill, 2);
    CHECK_EQ_I(cg.quota_us, 200000);
    CHECK(fabs(cg.quota_cpus - 2.0) < 1e-9);
    CHECK_EQ_I(cg.nr_periods, 300);
    CHECK_EQ_I(cg.nr_throttled, 75);
    CHECK_EQ_I(cg.throttled_us, 4500000);
    CHECK_EQ_S(cg.cpuset, "0-1");
    CHECK_EQ_I(cg.cpuset_count, 2);
    CHECK_EQ_I(cg.pids_current, 37);
    CHECK_EQ_I(cg.pids_max, 100);
    for (size_t i = 0; i < m.n; i++)
        fprintf(stderr, "  v2 missing: %s: %s\n", m.items[i].probe, m.items[i].reason);
    CHECK_EQ_I(m.n, 0);
    sop__missing_free(&m);

    /* rates: a second reading 2 s later */
    sop_cgroup later = cg;
    later.nr_periods += 20;
    later.nr_throttled += 5;
    later.throttled_us += 300000;
    sop__cgroup_rates(&later, &cg, 2.0);
    CHECK(fabs(later.throttled_pct - 25.0) < 1e-9);
    CHECK(fabs(later.throttled_ms_per_s - 150.0) < 1e-9);
    sop_cgroup gone = cg;
    gone.nr_periods = SOP_NA;
    sop__cgroup_rates(&gone, &cg, 2.0);
    CHECK(isnan(gone.throttled_pct));
}

static void test_fixture_bad(void)
{
    sop_cgroup cg;
    sop_missing m = {0};
    collect_fixture("cgroup/v2_bad", &cg, &m);
    CHECK_EQ_I(cg.version, 2);
    CHECK_EQ_I(cg.quota_us, SOP_NA); /* cpu.max "garbage" */
    CHECK(isnan(cg.quota_cpus));
    CHECK(missing_has(&m, "cgroup.cpu", "cpu.max"));
    CHECK_EQ_I(cg.mem_limit_kb, 262144); /* own limit read; the parent's "lots" reported */
    CHECK(missing_has(&m, "cgroup.memory", "memory.max"));
    CHECK_EQ_I(cg.ev_max, 7);
    CHECK_EQ_I(cg.ev_oom_kill, SOP_NA); /* truncated memory.events */
    CHECK_EQ_I(cg.nr_periods, 10);
    CHECK_EQ_I(cg.nr_throttled, SOP_NA);
    CHECK_EQ_I(cg.pids_max, -1);
    CHECK(missing_has(&m, "cgroup.pids", "pids.current"));
    CHECK(missing_has(&m, "cgroup.cpuset", "cpuset"));
    sop__missing_free(&m);
}

static void test_fixture_ns(void)
{
    sop_cgroup cg;
    sop_missing m = {0};
    collect_fixture("cgroup/v2_ns", &cg, &m);
    CHECK_EQ_I(cg.version, 2);
    CHECK_EQ_S(cg.path, "/kubepods/burstable/pod1234/ctr");
    CHECK(missing_has(&m, "cgroup", "cgroup namespace"));
    CHECK_EQ_I(cg.mem_limit_kb, 786432);
    CHECK_EQ_S(cg.mem_limit_path, "/");
    CHECK_EQ_I(cg.mem_usage_kb, 102400);
    CHECK(fabs(cg.quota_cpus - 0.5) < 1e-9);
    CHECK_EQ_I(cg.ev_oom_kill, 0);
    sop__missing_free(&m);

    /* "/../v2/sop/job" (another cgroup namespace) exists next to the mount, but a path with
     * ".." must not lead out of it: the mount root is read instead */
    char tmp[64], root[1024];
    sop_missing m2 = {0};
    int fd = fake_proc_named("cgroup/v2_ns", "proc_self_cgroup_escape", tmp, sizeof tmp);
    snprintf(root, sizeof root, "%s", t_fixture("cgroup/v2_ns"));
    CHECK_EQ_I(sop__cgroup_collect(fd, root, &cg, &m2), 0);
    drop_fake_proc(fd, tmp);
    CHECK(missing_has(&m2, "cgroup", "cgroup namespace"));
    CHECK_EQ_I(cg.mem_limit_kb, 786432);
    CHECK_EQ_I(cg.mem_usage_kb, 102400);
    sop__missing_free(&m2);
}

static void test_live_self(void)
{
    sop_cgroup cg;
    sop_missing m = {0};
    int fd = open("/proc/self", O_RDONLY | O_DIRECTORY);
    CHECK_EQ_I(sop__cgroup_collect(fd, "/sys/fs/cgroup", &cg, &m), 0);
    close(fd);
    CHECK(cg.version == 1 || cg.version == 2);
    CHECK(cg.path[0] == '/');
    CHECK(cg.mem_usage_kb > 0);
    CHECK(cg.mem_limit_kb > 0 || cg.mem_unlimited);
    CHECK(cg.quota_us == -1 || cg.quota_us > 0);
    printf("self: v%d %s limit_kb=%lld usage_kb=%lld quota_us=%lld cpuset=%s\n", cg.version,
           cg.path, (long long)cg.mem_limit_kb, (long long)cg.mem_usage_kb, (long long)cg.quota_us,
           cg.cpuset);
    for (size_t i = 0; i < m.n; i++)
        printf("  self missing: %s: %s\n", m.items[i].probe, m.items[i].reason);
    sop__missing_free(&m);
}

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, text, strlen(text));
    int e = n < 0 ? -errno : 0;
    close(fd);
    return e;
}

/* As root: real cgroups, a child inside, and the collector must see the limit and quota. */
static void test_live_real_cgroup(void)
{
    if (geteuid() != 0) {
        printf("SKIP real cgroup test: needs root\n");
        return;
    }
    sop_cgroup self;
    sop_missing m0 = {0};
    int sfd = open("/proc/self", O_RDONLY | O_DIRECTORY);
    sop__cgroup_collect(sfd, "/sys/fs/cgroup", &self, &m0);
    close(sfd);
    sop__missing_free(&m0);

    char mem_parent[200], mem_child[256], cpu_dir[256], buf[300];
    const char *memfile, *cpufile_q;
    int v1 = self.version == 1;
    if (v1) {
        snprintf(mem_parent, sizeof mem_parent, "/sys/fs/cgroup/memory/sop-test-%d", getpid());
        snprintf(cpu_dir, sizeof cpu_dir, "/sys/fs/cgroup/cpu/sop-test-%d", getpid());
        memfile = "memory.limit_in_bytes";
        cpufile_q = "cpu.cfs_quota_us";
    } else {
        snprintf(mem_parent, sizeof mem_parent, "/sys/fs/cgroup/sop-test-%d", getpid());
        cpu_dir[0] = '\0';
        memfile = "memory.max";
        cpufile_q = "cpu.max";
        write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory +cpu");
    }
    snprintf(mem_child, sizeof mem_child, "%s/inner", mem_parent);
    if (mkdir(mem_parent, 0755) < 0 || mkdir(mem_child, 0755) < 0) {
        printf("SKIP real cgroup test: mkdir %s: %s\n", mem_parent, strerror(errno));
        rmdir(mem_parent);
        return;
    }
    if (!v1) {
        snprintf(buf, sizeof buf, "%s/cgroup.subtree_control", mem_parent);
        write_file(buf, "+memory +cpu");
        snprintf(cpu_dir, sizeof cpu_dir, "%s", mem_child);
    } else if (mkdir(cpu_dir, 0755) < 0) {
        printf("SKIP real cgroup test: mkdir %s: %s\n", cpu_dir, strerror(errno));
        rmdir(mem_child);
        rmdir(mem_parent);
        return;
    }
    char p[320];
    snprintf(p, sizeof p, "%s/%s", mem_parent, memfile);
    CHECK_EQ_I(write_file(p, "104857600"), 0); /* parent 100 MiB: the tighter one */
    snprintf(p, sizeof p, "%s/%s", mem_child, memfile);
    CHECK_EQ_I(write_file(p, "209715200"), 0);
    snprintf(p, sizeof p, "%s/%s", cpu_dir, cpufile_q);
    CHECK_EQ_I(write_file(p, v1 ? "50000" : "50000 100000"), 0);
    if (v1) {
        snprintf(p, sizeof p, "%s/cpu.cfs_period_us", cpu_dir);
        CHECK_EQ_I(write_file(p, "100000"), 0);
    }

    int pipefd[2];
    if (pipe(pipefd) < 0)
        exit(2);
    pid_t child = fork();
    if (child == 0) {
        char c;
        close(pipefd[1]);
        ssize_t r = read(pipefd[0], &c, 1); /* wait until the parent is done */
        _exit(r < 0);
    }
    close(pipefd[0]);
    char pidtxt[32];
    snprintf(pidtxt, sizeof pidtxt, "%d", (int)child);
    snprintf(p, sizeof p, "%s/cgroup.procs", mem_child);
    CHECK_EQ_I(write_file(p, pidtxt), 0);
    if (v1) {
        snprintf(p, sizeof p, "%s/cgroup.procs", cpu_dir);
        CHECK_EQ_I(write_file(p, pidtxt), 0);
    }

    snprintf(p, sizeof p, "/proc/%d", (int)child);
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    sop_cgroup cg;
    sop_missing m = {0};
    CHECK_EQ_I(sop__cgroup_collect(fd, "/sys/fs/cgroup", &cg, &m), 0);
    close(fd);
    char want[128];
    snprintf(want, sizeof want, "/sop-test-%d/inner", getpid());
    CHECK_EQ_S(cg.path, want);
    CHECK_EQ_I(cg.mem_limit_kb, 102400);
    snprintf(want, sizeof want, "/sop-test-%d", getpid());
    CHECK_EQ_S(cg.mem_limit_path, want);
    CHECK_EQ_I(cg.quota_us, 50000);
    CHECK_EQ_I(cg.period_us, 100000);
    CHECK(fabs(cg.quota_cpus - 0.5) < 1e-9);
    CHECK(cg.mem_usage_kb >= 0);
    CHECK(cg.nr_periods >= 0);
    printf("real v%d cgroup: path=%s limit_kb=%lld at %s quota=%lld/%lld\n", cg.version, cg.path,
           (long long)cg.mem_limit_kb, cg.mem_limit_path, (long long)cg.quota_us,
           (long long)cg.period_us);
    for (size_t i = 0; i < m.n; i++)
        printf("  real missing: %s: %s\n", m.items[i].probe, m.items[i].reason);
    sop__missing_free(&m);

    close(pipefd[1]); /* the child reads EOF and exits */
    int st;
    waitpid(child, &st, 0);
    CHECK(WIFEXITED(st));
    rmdir(mem_child);
    CHECK_EQ_I(rmdir(mem_parent), 0);
    if (v1)
        CHECK_EQ_I(rmdir(cpu_dir), 0);
}

int main(void)
{
    test_parsers();
    test_fixture_v1();
    test_fixture_v1_split();
    test_fixture_v2();
    test_fixture_bad();
    test_fixture_ns();
    test_live_self();
    test_live_real_cgroup();
    return t_done();
}
