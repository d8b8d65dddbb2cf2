/* test_kmsg.c — OOM records from the kernel log: a real v1 memcg kill log captured on this
 * machine, hand-made 6.x (v2 memcg and global) and 4.x (syslog-stamped, "sacrifice child")
 * logs, garbage and cut lines, the newest-64 bound, the age filter, and — as root — a real
 * OOM kill made here in a 32 MiB memory cgroup that sop__kmsg_collect must then find, also
 * when a settled memo of the log (probes/kmsg_memo.c) was made just before it.
 * Depends on probes/kmsg.h, probes/kmsg_memo.h, probes/cgroup.h (to learn the layout), t.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "kmsg.h"
#include "kmsg_memo.h"
#include "t.h"

static const sop_oom *by_pid(const sop_oom_list *l, int pid)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->items[i].pid == pid)
            return &l->items[i];
    return NULL;
}

static void test_real_v1(void)
{
    sop_oom_list l;
    char *t = t_slurp("kmsg/v1_memcg_oom_real.txt", NULL);
    CHECK_EQ_I(sop__parse_kmsg(t, &l, 1000000.0), 0);
    free(t);
    CHECK_EQ_I(l.n, 2);
    const sop_oom *o = by_pid(&l, 7170);
    CHECK(o != NULL);
    if (o) {
        CHECK_EQ_S(o->comm, "python3");
        CHECK_EQ_S(o->invoker, "python3");
        CHECK_EQ_S(o->constraint, "CONSTRAINT_MEMCG");
        CHECK_EQ_S(o->oom_memcg, "/sop-fixture-5717");
        CHECK_EQ_S(o->task_memcg, "/sop-fixture-5717");
        CHECK_EQ_I(o->total_vm_kb, 74132);
        CHECK_EQ_I(o->anon_rss_kb, 64256);
        CHECK_EQ_I(o->file_rss_kb, 2456);
        CHECK_EQ_I(o->shmem_rss_kb, 0);
        CHECK_EQ_I(o->pgtables_kb, 188);
        CHECK_EQ_I(o->uid, 0);
        CHECK_EQ_I(o->oom_score_adj, 0);
        CHECK(o->closed);
        CHECK(fabs(o->uptime_s - 429.086230) < 1e-6); /* the oom-kill: line opened it */
        CHECK(fabs(o->time - (1000000.0 + 429.086230)) < 1e-6);
    }
    o = by_pid(&l, 7297); /* comm "w (1) x) y": blanks and parens */
    CHECK(o != NULL);
    if (o) {
        CHECK_EQ_S(o->comm, "w (1) x) y");
        CHECK_EQ_S(o->invoker, "w (1) x) y");
        CHECK_EQ_I(o->anon_rss_kb, 48768);
        CHECK_EQ_I(o->total_vm_kb, 58896);
        CHECK_EQ_I(o->pgtables_kb, 156);
    }
    CHECK(l.items[0].pid == 7170 && l.items[1].pid == 7297); /* oldest first */
}

static void test_v2_handmade(void)
{
    sop_oom_list l;
    char *t = t_slurp("kmsg/v2_handmade.txt", NULL);
    CHECK_EQ_I(sop__parse_kmsg(t, &l, NAN), 0);
    free(t);
    CHECK_EQ_I(l.n, 2);
    const sop_oom *o = by_pid(&l, 4400);
    CHECK(o != NULL);
    if (o) {
        CHECK_EQ_S(o->comm, "pt_data_worker");
        CHECK_EQ_S(o->invoker, "torchrun");
        CHECK_EQ_S(o->oom_memcg, "/system.slice/train.service");
        CHECK_EQ_S(o->task_memcg, "/system.slice/train.service/worker");
        CHECK_EQ_I(o->uid, 1000);
        CHECK_EQ_I(o->oom_score_adj, 200);
        CHECK_EQ_I(o->shmem_rss_kb, 65536);
        CHECK_EQ_I(o->anon_rss_kb, 8000000); /* not the oom_reaper's "now anon-rss:0kB" */
        CHECK(isnan(o->time));               /* no btime, no epoch */
        CHECK(fabs(o->uptime_s - 5100.0005) < 1e-6);
    }
    o = by_pid(&l, 5555);
    CHECK(o != NULL);
    if (o) {
        CHECK_EQ_S(o->constraint, "CONSTRAINT_NONE");
        CHECK_EQ_S(o->oom_memcg, "");
        CHECK_EQ_S(o->task_memcg, "/user.slice/user-0.slice/session-3.scope");
        CHECK_EQ_I(o->anon_rss_kb, 29000000);
    }
}

static void test_v4_old(void)
{
    sop_oom_list l;
    char *t = t_slurp("kmsg/v4_old.txt", NULL);
    CHECK_EQ_I(sop__parse_kmsg(t, &l, 100.0), 0);
    free(t);
    CHECK_EQ_I(l.n, 3);
    const sop_oom *o = by_pid(&l, 2345);
    CHECK(o != NULL);
    if (o) {
        CHECK_EQ_S(o->comm, "python");
        CHECK_EQ_S(o->invoker, "python");
        CHECK_EQ_S(o->task_memcg, "/docker/abc123");
        CHECK_EQ_S(o->oom_memcg, "/docker/abc123");
        CHECK_EQ_S(o->constraint, "CONSTRAINT_MEMCG");
        CHECK_EQ_I(o->anon_rss_kb, 1040000);
        CHECK_EQ_I(o->uid, SOP_NA); /* 4.x prints no UID */
        CHECK(fabs(o->time - (100.0 + 8123.4572)) < 1e-6);
    }
    /* "sacrifice child": 3000 was scored, its child 3001 was killed */
    CHECK(by_pid(&l, 3000) == NULL);
    o = by_pid(&l, 3001);
    CHECK(o != NULL);
    if (o) {
        CHECK_EQ_S(o->comm, "java worker");
        CHECK_EQ_S(o->invoker, "java");
        CHECK_EQ_S(o->task_memcg, "");
        CHECK_EQ_I(o->total_vm_kb, 500);
    }
    /* a log cut after the "Kill process" line still yields the kill */
    o = by_pid(&l, 4000);
    CHECK(o != NULL);
    if (o) {
        CHECK_EQ_S(o->comm, "lonely");
        CHECK_EQ_I(o->anon_rss_kb, SOP_NA);
        CHECK(fabs(o->uptime_s - 9500.0) < 1e-9);
    }
}

static void test_garbage(void)
{
    sop_oom_list l;
    char *t = t_slurp("kmsg/garbage.txt", NULL);
    CHECK_EQ_I(sop__parse_kmsg(t, &l, 0.0), 0);
    free(t);
    CHECK_EQ_I(l.n, 2);
    const sop_oom *o = by_pid(&l, 88); /* "Killed process 88 (cut" */
    CHECK(o != NULL);
    if (o) {
        CHECK_EQ_S(o->comm, "");
        CHECK_EQ_I(o->total_vm_kb, SOP_NA);
    }
    o = by_pid(&l, 99); /* "total-vm:1234" cut before "kB": not taken */
    CHECK(o != NULL);
    if (o) {
        CHECK_EQ_S(o->comm, "py");
        CHECK_EQ_I(o->total_vm_kb, SOP_NA);
    }
    CHECK_EQ_I(sop__parse_kmsg(NULL, &l, 0.0), -EINVAL);
    CHECK_EQ_I(sop__parse_kmsg("", &l, 0.0), 0);
    CHECK_EQ_I(l.n, 0);
}

static void test_bounds(void)
{
    sop_oom_list l;
    sop__oom_list_init(&l, 0.0);
    char line[256];
    for (int i = 1; i <= 70; i++) {
        snprintf(line, sizeof line,
                 "3,%d,%d000000,-;Out of memory: Killed process %d (p%d) total-vm:%dkB, "
                 "anon-rss:1kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:0",
                 i, i, 1000 + i, i, i);
        sop__kmsg_feed_line(&l, line, strlen(line), -INFINITY);
    }
    CHECK_EQ_I(l.n, SOP_OOM_MAX);
    CHECK_EQ_I(l.items[0].pid, 1000 + 70 - SOP_OOM_MAX + 1);
    CHECK_EQ_I(l.items[SOP_OOM_MAX - 1].pid, 1070);
    CHECK_EQ_I(l.items[SOP_OOM_MAX - 1].total_vm_kb, 70);

    sop__oom_list_init(&l, 0.0);
    for (int i = 1; i <= 20; i++) {
        snprintf(line, sizeof line, "3,%d,%d000000,-;Killed process %d (p) total-vm:1kB", i, i, i);
        sop__kmsg_feed_line(&l, line, strlen(line), 10.5); /* stamps 1..10 s are too old */
    }
    CHECK_EQ_I(l.n, 10); /* 11..20 */
    CHECK_EQ_I(l.items[0].pid, 11);

    /* the same pid killed twice (pid reuse) gives two records */
    sop__oom_list_init(&l, 0.0);
    const char *a = "3,1,1000000,-;Killed process 42 (a) total-vm:1kB, anon-rss:1kB";
    const char *b = "3,2,2000000,-;Killed process 42 (b) total-vm:2kB, anon-rss:2kB";
    sop__kmsg_feed_line(&l, a, strlen(a), -INFINITY);
    sop__kmsg_feed_line(&l, b, strlen(b), -INFINITY);
    CHECK_EQ_I(l.n, 2);
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

static double btime_now(void)
{
    char *t = NULL;
    FILE *f = fopen("/proc/stat", "r");
    char line[256];
    double bt = NAN;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "btime ", 6) == 0)
            bt = strtod(line + 6, NULL);
    if (f)
        fclose(f);
    free(t);
    return bt;
}

/* /proc/vmstat's oom_kill, or -1. */
static int64_t vmstat_kills(void)
{
    FILE *f = fopen("/proc/vmstat", "r");
    char line[128];
    long long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "oom_kill %lld", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

/* A memo of the whole log for this count of kills, settled as if a first run had seen the
 * count 6 s ago. */
static void settle_memo(int dirfd, int64_t kills, double bt)
{
    sop_oom_list whole;
    sop_missing m = {0};
    CHECK_EQ_I(sop__kmsg_collect(&whole, bt, 0, kills, &m), 0);
    sop__missing_free(&m);
    sop_kmsg_key k;
    CHECK(sop__kmsg_key_now(&k, kills));
    k.now_s -= SOP_KMSG_MEMO_SETTLE_S + 1;
    sop__kmsg_memo_put(dirfd, &k, &whole);
    k.now_s += SOP_KMSG_MEMO_SETTLE_S + 1;
    sop__kmsg_memo_put(dirfd, &k, &whole);
}

/* As root: kill a child by the OOM killer in a 32 MiB cgroup, then find it in the log. */
static void test_live_oom(void)
{
    if (geteuid() != 0) {
        printf("SKIP live OOM test: needs root\n");
        return;
    }
    sop_cgroup self;
    sop_missing m0 = {0};
    int sfd = open("/proc/self", O_RDONLY | O_DIRECTORY);
    sop__cgroup_collect(sfd, "/sys/fs/cgroup", &self, &m0);
    close(sfd);
    sop__missing_free(&m0);
    char dir[128], p[200];
    int v1 = self.version == 1;
    snprintf(dir, sizeof dir,
             v1 ? "/sys/fs/cgroup/memory/sop-oomtest-%d" : "/sys/fs/cgroup/sop-oomtest-%d",
             getpid());
    if (!v1)
        write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory");
    if (mkdir(dir, 0755) < 0) {
        printf("SKIP live OOM test: mkdir %s: %s\n", dir, strerror(errno));
        return;
    }
    snprintf(p, sizeof p, "%s/%s", dir, v1 ? "memory.limit_in_bytes" : "memory.max");
    CHECK_EQ_I(write_file(p, "33554432"), 0);
    if (!v1) {
        snprintf(p, sizeof p, "%s/memory.swap.max", dir);
        write_file(p, "0");
    }
    int pipefd[2];
    if (pipe(pipefd) < 0)
        exit(2);
    /* a settled memo of the log as it is before the kill */
    char memo_dir[64];
    snprintf(memo_dir, sizeof memo_dir, "/tmp/sop-kmsg-memo-XXXXXX");
    CHECK(mkdtemp(memo_dir) != NULL);
    setenv("SOP_STATE_DIR", memo_dir, 1);
    int memo_fd = sop__state_dir_open();
    CHECK(memo_fd >= 0);
    int64_t kills0 = vmstat_kills();
    if (kills0 > 0)
        settle_memo(memo_fd, kills0, btime_now());
    setenv("SOP_STATE_DIR", "", 1); /* the checks before the memo's hand it made-up counts */
    pid_t child = fork();
    if (child == 0) {
        char c;
        close(pipefd[1]);
        if (read(pipefd[0], &c, 1) < 0)
            _exit(3);
        for (int i = 0; i < 256; i++) { /* 256 MiB, far past the limit; bounded */
            char *b = malloc(1 << 20);
            if (!b)
                _exit(4);
            memset(b, i + 1, 1 << 20);
        }
        _exit(5); /* not killed: the limit did not hold */
    }
    close(pipefd[0]);
    char pidtxt[32];
    snprintf(pidtxt, sizeof pidtxt, "%d", (int)child);
    snprintf(p, sizeof p, "%s/cgroup.procs", dir);
    CHECK_EQ_I(write_file(p, pidtxt), 0);
    time_t before = time(NULL);
    close(pipefd[1]); /* go */
    int st;
    waitpid(child, &st, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    CHECK_EQ_I(rmdir(dir), 0);

    sop_oom_list l;
    sop_missing m = {0};
    double bt = btime_now();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_EQ_I(sop__kmsg_collect(&l, bt, 600.0, SOP_NA, &m), 0); /* the kill count unknown */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("kernel log read in %.2f ms, %zu OOM records in the last 600 s\n",
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6, l.n);
    CHECK(l.read_ok);
    const sop_oom *o = by_pid(&l, (int)child);
    CHECK(o != NULL);
    if (o) {
        printf("live OOM: pid %d comm %s anon_rss_kb %lld memcg %s, %.1f s after start\n", o->pid,
               o->comm, (long long)o->anon_rss_kb, o->task_memcg, o->time - (double)before);
        /* about the 32 MiB limit; pages shared with the parent since fork (ASan's shadow,
         * say) count in the RSS but were charged to the parent's cgroup, hence the slack */
        CHECK(o->anon_rss_kb > 16 * 1024 && o->anon_rss_kb < 96 * 1024);
        CHECK(strstr(o->task_memcg, "sop-oomtest-") != NULL);
        CHECK(fabs(o->time - (double)before) < 30.0);
    }
    /* The gate: told that /proc/vmstat counts no kill since boot, the log is not read (the
     * kill just made is in it, and is not found); a count above 0 reads it. */
    sop_oom_list none;
    sop_missing m2 = {0};
    CHECK_EQ_I(sop__kmsg_collect(&none, bt, 600.0, 0, &m2), 0);
    CHECK(none.read_ok && none.n == 0);
    CHECK_EQ_I(sop__kmsg_collect(&none, bt, 600.0, 1, &m2), 0);
    CHECK(by_pid(&none, (int)child) != NULL);

    /* With the memo: the count moved past the memo's, so the log is read again and the kill
     * found (twice: the new memo is not settled yet); asked with the count the memo was made
     * at, the memo answers, without it (what keys a memo is the count, nothing else). */
    int64_t kills1 = vmstat_kills();
    CHECK(kills1 > kills0);
    setenv("SOP_STATE_DIR", memo_dir, 1);
    if (kills0 > 0) {
        CHECK_EQ_I(sop__kmsg_collect(&none, bt, 600.0, kills0, &m2), 0);
        CHECK(none.read_ok && by_pid(&none, (int)child) == NULL);
    }
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_I(sop__kmsg_collect(&none, bt, 600.0, kills1, &m2), 0);
        CHECK(none.read_ok && by_pid(&none, (int)child) != NULL);
    }
    /* settled at the new count, the memo holds the kill */
    settle_memo(memo_fd, kills1, bt);
    CHECK_EQ_I(sop__kmsg_collect(&none, bt, 600.0, kills1, &m2), 0);
    CHECK(by_pid(&none, (int)child) != NULL);
    setenv("SOP_STATE_DIR", "", 1);
    close(memo_fd);
    char mp[128];
    snprintf(mp, sizeof mp, "%s/kmsg-oom", memo_dir);
    unlink(mp);
    rmdir(memo_dir);
    sop__missing_free(&m2);
    sop__missing_free(&m);
}

int main(void)
{
    /* the tests below hand sop__kmsg_collect made-up kill counts: no memo of them anywhere */
    setenv("SOP_STATE_DIR", "", 1);
    test_real_v1();
    test_v2_handmade();
    test_v4_old();
    test_garbage();
    test_bounds();
    test_live_oom();
    return t_done();
}
