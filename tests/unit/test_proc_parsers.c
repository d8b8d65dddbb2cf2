/* test_proc_parsers.c — the process probes: every /proc parser on fixture text (real files from
 * a python3 process, and cut/malformed ones), sop__proc_collect on a fixture tree and on the
 * live /proc/self, threads and children (fixture and live), rates on two hand-made snapshots,
 * the bridge's proc/threads/children keys, and the UTF-8 repair of sop__bridge_text. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bridge/bridge.h"
#include "proc.h"
#include "t.h"
#include "value.h"

#define FIX_PID 7743
#define FIX_CHILD 7851
#define FIX_THREAD 7850

static int open_dir(const char *rel)
{
    int fd = open(t_fixture(rel), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "cannot open fixture dir %s\n", t_fixture(rel));
        exit(2);
    }
    return fd;
}

static bool has_missing(const sop_missing *m, const char *probe, const char *reason_part)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->items[i].probe, probe) == 0 && strstr(m->items[i].reason, reason_part))
            return true;
    return false;
}

static void test_stat(void)
{
    sop_stat s;
    char *t = t_slurp("proc/root/7743/stat", NULL);
    CHECK_EQ_I(sop__parse_stat(t, &s), 0);
    CHECK_EQ_I(s.pid, FIX_PID);
    CHECK_EQ_S(s.comm, "python3");
    CHECK_EQ_I(s.state, 'S');
    CHECK_EQ_I(s.ppid, 7741);
    CHECK_EQ_I(s.minflt, 32592);
    CHECK_EQ_I(s.majflt, 0);
    CHECK_EQ_I(s.utime_ticks, 148);
    CHECK_EQ_I(s.stime_ticks, 53);
    CHECK_EQ_I(s.priority, 20);
    CHECK_EQ_I(s.nice, 0);
    CHECK_EQ_I(s.num_threads, 2);
    CHECK_EQ_I(s.starttime_ticks, 46364);
    CHECK_EQ_I(s.vsize_bytes, 728481792);
    CHECK_EQ_I(s.rss_pages, 57717);
    CHECK_EQ_I(s.processor, 1);
    CHECK_EQ_I(s.blkio_ticks, 0);
    free(t);

    /* comm "(a) b)": spaces and ')' inside; fields are counted from the last ')' */
    t = t_slurp("proc/stat_paren_comm", NULL);
    CHECK_EQ_I(sop__parse_stat(t, &s), 0);
    CHECK_EQ_I(s.pid, 4242);
    CHECK_EQ_S(s.comm, "(a) b)");
    CHECK_EQ_I(s.state, 'R');
    CHECK_EQ_I(s.ppid, 1);
    CHECK_EQ_I(s.majflt, 3);
    CHECK_EQ_I(s.utime_ticks, 250);
    CHECK_EQ_I(s.nice, -5);
    CHECK_EQ_I(s.num_threads, 7);
    CHECK_EQ_I(s.rss_pages, 300);
    CHECK_EQ_I(s.processor, 1);
    CHECK_EQ_I(s.blkio_ticks, 12);
    free(t);

    /* cut in the middle of utime: earlier fields kept, the cut number and the rest absent */
    t = t_slurp("proc/stat_truncated", NULL);
    CHECK_EQ_I(sop__parse_stat(t, &s), 0);
    CHECK_EQ_I(s.majflt, 3);
    CHECK_EQ_I(s.utime_ticks, SOP_NA);
    CHECK_EQ_I(s.stime_ticks, SOP_NA);
    CHECK_EQ_I(s.starttime_ticks, SOP_NA);
    free(t);

    t = t_slurp("proc/stat_malformed", NULL); /* no parentheses at all */
    CHECK_EQ_I(sop__parse_stat(t, &s), -EINVAL);
    CHECK_EQ_I(s.utime_ticks, SOP_NA);
    free(t);
    CHECK_EQ_I(sop__parse_stat("", &s), -EINVAL);
    CHECK_EQ_I(sop__parse_stat("12 (x)", &s), -EINVAL); /* no state */
    CHECK_EQ_I(sop__parse_stat("12 (x) Z", &s), 0);
    CHECK_EQ_I(s.state, 'Z');
    CHECK_EQ_I(s.ppid, -1);
    /* a long comm is cut to the buffer, not overflowed */
    char longstat[256];
    snprintf(longstat, sizeof longstat, "5 (%0100d) S 1 2\n", 7);
    CHECK_EQ_I(sop__parse_stat(longstat, &s), 0);
    CHECK_EQ_I(strlen(s.comm), SOP_COMM_MAX - 1);
    CHECK_EQ_I(s.ppid, 1);
}

static void test_status(void)
{
    sop_status s;
    char *t = t_slurp("proc/root/7743/status", NULL);
    CHECK_EQ_I(sop__parse_status(t, &s), 0);
    CHECK_EQ_I(s.vm_peak_kb, 776928);
    CHECK_EQ_I(s.vm_size_kb, 711408);
    CHECK_EQ_I(s.vm_lck_kb, 16);
    CHECK_EQ_I(s.vm_hwm_kb, 231456);
    CHECK_EQ_I(s.vm_rss_kb, 231064);
    CHECK_EQ_I(s.rss_anon_kb, 116004);
    CHECK_EQ_I(s.rss_file_kb, 115060);
    CHECK_EQ_I(s.rss_shmem_kb, 0);
    CHECK_EQ_I(s.threads, 2);
    CHECK_EQ_I(s.voluntary_ctxt_switches, 3);
    CHECK_EQ_I(s.nonvoluntary_ctxt_switches, 144);
    CHECK_EQ_S(s.cpus_allowed_list, "0-1");
    CHECK_EQ_I(s.cpus_allowed_count, 2);
    CHECK_EQ_I(s.uid, 0);
    free(t);

    /* cut inside the VmRSS number: that line is dropped, earlier ones kept */
    t = t_slurp("proc/status_cut", NULL);
    CHECK_EQ_I(sop__parse_status(t, &s), 0);
    CHECK_EQ_I(s.vm_hwm_kb, 231456);
    CHECK_EQ_I(s.vm_rss_kb, SOP_NA);
    CHECK_EQ_I(s.threads, SOP_NA);
    CHECK_EQ_I(s.cpus_allowed_count, SOP_NA);
    CHECK_EQ_S(s.cpus_allowed_list, "");
    free(t);

    CHECK_EQ_I(sop__parse_status("", &s), -ENODATA);
    CHECK_EQ_I(sop__parse_status("garbage\nmore garbage\n", &s), -ENODATA);
    CHECK_EQ_I(sop__parse_status("VmRSS:\tjunk kB\nThreads:\t4\n", &s), 0);
    CHECK_EQ_I(s.vm_rss_kb, SOP_NA);
    CHECK_EQ_I(s.threads, 4);
    /* a key that only starts like another is not it */
    CHECK_EQ_I(sop__parse_status("VmRSSX:\t5 kB\nCpus_allowed_list:\t0-3,8,10-11\n", &s), 0);
    CHECK_EQ_I(s.vm_rss_kb, SOP_NA);
    CHECK_EQ_I(s.cpus_allowed_count, 7);
    /* a list longer than the struct keeps its count, not a cut copy */
    char big[2048] = "Cpus_allowed_list:\t";
    for (int cpu = 0; cpu < 400; cpu += 2)
        snprintf(big + strlen(big), sizeof big - strlen(big), "%d,", cpu);
    big[strlen(big) - 1] = '\n';
    CHECK_EQ_I(sop__parse_status(big, &s), 0);
    CHECK_EQ_I(s.cpus_allowed_count, 200);
    CHECK_EQ_S(s.cpus_allowed_list, "");
    CHECK_EQ_I(sop__parse_status("Cpus_allowed_list:\t3-1\n", &s), 0);
    CHECK_EQ_I(s.cpus_allowed_count, SOP_NA);
}

static void test_smaps_io_sched_limits(void)
{
    sop_smaps sm;
    char *t = t_slurp("proc/root/7743/smaps_rollup", NULL);
    CHECK_EQ_I(sop__parse_smaps_rollup(t, &sm), 0);
    sop_status st;
    char *ts = t_slurp("proc/root/7743/status", NULL);
    sop__parse_status(ts, &st);
    free(ts);
    CHECK(sm.rss_kb > 200000);
    CHECK(sm.pss_kb > 0 && sm.pss_kb <= sm.rss_kb);
    CHECK(sm.pss_anon_kb != SOP_NA && sm.pss_file_kb != SOP_NA && sm.pss_shmem_kb != SOP_NA);
    /* the rollup's parts add up to its Rss */
    CHECK_EQ_I(sm.shared_clean_kb + sm.shared_dirty_kb + sm.private_clean_kb + sm.private_dirty_kb,
               sm.rss_kb);
    CHECK(sm.anonymous_kb > 0);
    CHECK_EQ_I(sm.swap_kb, 0);
    CHECK(sm.locked_kb != SOP_NA);
    free(t);
    t = t_slurp("proc/smaps_rollup_empty", NULL);
    CHECK_EQ_I(sop__parse_smaps_rollup(t, &sm), -ENODATA);
    CHECK_EQ_I(sm.pss_kb, SOP_NA);
    free(t);
    /* "Pss_Dirty" must not be taken for "Pss" */
    CHECK_EQ_I(sop__parse_smaps_rollup("Pss_Dirty:  9 kB\nPss:  4 kB\n", &sm), 0);
    CHECK_EQ_I(sm.pss_kb, 4);

    sop_io io;
    t = t_slurp("proc/root/7743/io", NULL);
    CHECK_EQ_I(sop__parse_io(t, &io), 0);
    CHECK_EQ_I(io.rchar, 16817683);
    CHECK_EQ_I(io.wchar, 10);
    CHECK_EQ_I(io.syscr, 1974);
    CHECK_EQ_I(io.syscw, 4);
    CHECK_EQ_I(io.read_bytes, 0);
    CHECK_EQ_I(io.write_bytes, 4096);
    CHECK_EQ_I(io.cancelled_write_bytes, 0);
    free(t);
    CHECK_EQ_I(sop__parse_io("rchar: 100\nwchar: 12", &io), 0); /* cut: wchar dropped */
    CHECK_EQ_I(io.rchar, 100);
    CHECK_EQ_I(io.wchar, SOP_NA);
    CHECK_EQ_I(sop__parse_io("", &io), -ENODATA);

    sop_schedstat ss;
    t = t_slurp("proc/root/7743/schedstat", NULL);
    CHECK_EQ_I(sop__parse_schedstat(t, &ss), 0);
    CHECK_EQ_I(ss.run_ns, 2023509514);
    CHECK_EQ_I(ss.wait_ns, 181495404);
    CHECK_EQ_I(ss.timeslices, 147);
    free(t);
    CHECK_EQ_I(sop__parse_schedstat("10 20", &ss), -EINVAL);
    CHECK_EQ_I(ss.run_ns, SOP_NA);
    CHECK_EQ_I(sop__parse_schedstat("x y z\n", &ss), -EINVAL);
    /* the one reader of schedstat files: the process's, a thread's, one that is not there */
    int pdir = open(t_fixture("proc/root/7743"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(pdir >= 0);
    CHECK_EQ_I(sop__read_schedstat_at(pdir, "schedstat", &ss), 0);
    CHECK_EQ_I(ss.wait_ns, 181495404);
    CHECK_EQ_I(sop__read_schedstat_at(pdir, "task/7743/schedstat", &ss), 0);
    CHECK(ss.run_ns > 0);
    CHECK_EQ_I(sop__read_schedstat_at(pdir, "task/1/schedstat", &ss), -ENOENT);
    CHECK_EQ_I(ss.run_ns, SOP_NA);
    CHECK_EQ_I(sop__read_schedstat_at(pdir, "comm", &ss), -EINVAL); /* not numbers */
    CHECK_EQ_I(ss.wait_ns, SOP_NA);
    if (pdir >= 0)
        close(pdir);

    sop_limits l;
    t = t_slurp("proc/root/7743/limits", NULL);
    CHECK_EQ_I(sop__parse_limits(t, &l), 0);
    CHECK_EQ_I(l.nofile_soft, 20000);
    CHECK_EQ_I(l.nofile_hard, 20000);
    CHECK_EQ_I(l.memlock_bytes, 8388608);
    CHECK_EQ_I(l.as_bytes, -1);
    CHECK_EQ_I(l.nproc, 96362);
    free(t);
    CHECK_EQ_I(sop__parse_limits("Limit   Soft Limit\n", &l), -ENODATA);
    CHECK_EQ_I(sop__parse_limits("Max open files            1024                 4096   files\n"
                                 "Max processes             12",
                                 &l),
               0);
    CHECK_EQ_I(l.nofile_soft, 1024);
    CHECK_EQ_I(l.nofile_hard, 4096);
    CHECK_EQ_I(l.nproc, SOP_NA);
}

static const char *env_get(const sop_env *e, const char *name)
{
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->vars[i].name, name) == 0)
            return e->vars[i].value;
    return NULL;
}

static void test_environ_cmdline(void)
{
    size_t len;
    sop_env e;
    char *t = t_slurp("proc/environ_secret", &len);
    CHECK_EQ_I(sop__parse_environ(t, len, &e), 0);
    CHECK_EQ_S(env_get(&e, "OMP_NUM_THREADS"), "8"); /* the first one, as getenv sees */
    CHECK_EQ_S(env_get(&e, "MKL_NUM_THREADS"), "1");
    CHECK_EQ_S(env_get(&e, "KMP_AFFINITY"), "granularity=fine,compact");
    CHECK_EQ_S(env_get(&e, "PYTORCH_CUDA_ALLOC_CONF"), "expandable_segments:True");
    CHECK_EQ_S(env_get(&e, "LD_PRELOAD"), "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
    CHECK_EQ_S(env_get(&e, "MALLOC_ARENA_MAX"), "");
    CHECK_EQ_S(env_get(&e, "RANK"), "3");
    CHECK_EQ_S(env_get(&e, "TOKENIZERS_PARALLELISM"), "false");
    CHECK(env_get(&e, "OPENBLAS_NUM_THREADS") == NULL); /* last entry cut (no NUL): dropped */
    CHECK(env_get(&e, "SECRET_TOKEN") == NULL);
    CHECK(env_get(&e, "AWS_SECRET_ACCESS_KEY") == NULL);
    CHECK(env_get(&e, "PATH") == NULL);
    CHECK(env_get(&e, "PYTORCH_TOKEN") == NULL);
    CHECK(env_get(&e, "KMP_") == NULL);
    CHECK_EQ_I(e.n, 8);
    /* no value of a dropped variable is anywhere in the struct */
    const char *blob = (const char *)&e;
    bool leaked = false;
    for (size_t i = 0; i + 7 <= sizeof e; i++)
        leaked =
            leaked || memcmp(blob + i, "tok-liv", 7) == 0 || memcmp(blob + i, "AKIAEXA", 7) == 0;
    CHECK(!leaked);
    /* one name at a time (sop_process_env): the same answers */
    char v[16];
    CHECK(sop__environ_get(t, len, "OMP_NUM_THREADS", v, sizeof v) && strcmp(v, "8") == 0);
    CHECK(sop__environ_get(t, len, "RANK", v, sizeof v) && strcmp(v, "3") == 0);
    CHECK(sop__environ_get(t, len, "KMP_AFFINITY", v, sizeof v) &&
          strcmp(v, "granularity=fin") == 0); /* cut to fit */
    CHECK(!sop__environ_get(t, len, "OPENBLAS_NUM_THREADS", v, sizeof v) && !v[0]);
    CHECK(!sop__environ_get(t, len, "SECRET_TOKEN", v, sizeof v) && !v[0]);
    CHECK(!sop__environ_get(t, len, "PATH", v, sizeof v) && !v[0]);
    free(t);
    /* more allow-listed variables than sop_env holds: a lookup by name still finds the last */
    static char many[SOP_ENV_MAX * 2 * 32];
    size_t at = 0;
    for (int i = 0; i < SOP_ENV_MAX * 2; i++)
        at += (size_t)snprintf(many + at, sizeof many - at, "KMP_X%d=%d", i, i) + 1;
    at += (size_t)snprintf(many + at, sizeof many - at, "RANK=7") + 1;
    CHECK_EQ_I(sop__parse_environ(many, at, &e), 0);
    CHECK_EQ_I(e.n, SOP_ENV_MAX);
    CHECK(sop__environ_get(many, at, "RANK", v, sizeof v) && strcmp(v, "7") == 0);
    CHECK(sop__env_allowed("OMP_NUM_THREADS"));
    CHECK(sop__env_allowed("TCMALLOC_RELEASE_RATE"));
    CHECK(sop__env_allowed("PYTORCH_HIP_ALLOC_CONF"));
    CHECK(!sop__env_allowed("OMP_NUM_THREADSX"));
    CHECK(!sop__env_allowed("HF_TOKEN"));
    CHECK(!sop__env_allowed("WANDB_API_KEY"));
    CHECK(!sop__env_allowed(""));

    /* the real one: OMP_NUM_THREADS etc. kept, the secrets not */
    t = t_slurp("proc/root/7743/environ", &len);
    CHECK_EQ_I(sop__parse_environ(t, len, &e), 0);
    CHECK_EQ_S(env_get(&e, "OMP_NUM_THREADS"), "4");
    CHECK_EQ_S(env_get(&e, "MALLOC_ARENA_MAX"), "2");
    CHECK_EQ_S(env_get(&e, "PYTHONUNBUFFERED"), "1");
    CHECK(env_get(&e, "SECRET_TOKEN") == NULL);
    CHECK_EQ_I(e.n, 3);
    free(t);

    char out[64];
    CHECK_EQ_I(sop__parse_cmdline("python3\0train.py\0--x\0", 22, out, sizeof out), 0);
    CHECK_EQ_S(out, "python3 train.py --x");
    CHECK_EQ_I(sop__parse_cmdline("", 0, out, sizeof out), -ENODATA);
    CHECK_EQ_S(out, "");
    CHECK_EQ_I(sop__parse_cmdline("abcdefgh", 8, out, 5), 0);
    CHECK_EQ_S(out, "abcd");
    t = t_slurp("proc/root/7851/cmdline", &len);
    CHECK_EQ_I(sop__parse_cmdline(t, len, out, sizeof out), 0);
    CHECK_EQ_S(out, "/bin/sleep 60");
    free(t);
}

static const sop_lib *lib_named(const sop_libs *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->libs[i].name, name) == 0)
            return &l->libs[i];
    return NULL;
}

static void test_maps(void)
{
    sop_libs l;
    char *t = t_slurp("proc/maps_libs", NULL);
    CHECK_EQ_I(sop__parse_maps(t, &l), 0);
    const sop_lib *b = lib_named(&l, "libopenblas");
    CHECK(b && strcmp(b->kind, "blas") == 0 && strstr(b->path, "libopenblas64_p-r0"));
    CHECK(lib_named(&l, "libgomp") && strcmp(lib_named(&l, "libgomp")->kind, "openmp") == 0);
    CHECK(lib_named(&l, "libjemalloc") &&
          strcmp(lib_named(&l, "libjemalloc")->kind, "allocator") == 0);
    CHECK(lib_named(&l, "numpy") != NULL);
    CHECK(lib_named(&l, "uvloop") != NULL);
    CHECK(lib_named(&l, "tokenizers") != NULL);
    CHECK(lib_named(&l, "libtcmalloc") != NULL); /* a deleted file still counts */
    CHECK(lib_named(&l, "libmimalloc") == NULL); /* last line cut: not trusted */
    /* deduplicated by path: libgomp is mapped 3 times, openblas 3 times, listed once each */
    CHECK_EQ_I(l.n, 7);
    free(t);

    t = t_slurp("proc/root/7743/maps", NULL);
    CHECK_EQ_I(sop__parse_maps(t, &l), 0);
    CHECK(lib_named(&l, "libblas") != NULL);
    CHECK(lib_named(&l, "libgomp") != NULL);
    CHECK(lib_named(&l, "numpy") != NULL);
    const sop_lib *torch = lib_named(&l, "libtorch");
    CHECK(torch && strcmp(torch->kind, "torch") == 0);
    int ntorch = 0;
    for (size_t i = 0; i < l.n; i++) {
        ntorch += strcmp(l.libs[i].kind, "torch") == 0;
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(l.libs[i].path, l.libs[j].path) != 0);
    }
    CHECK_EQ_I(ntorch, 4); /* libtorch, _cpu, _global_deps, _python */
    free(t);
    CHECK_EQ_I(sop__parse_maps("", &l), 0);
    CHECK_EQ_I(l.n, 0);
}

static void test_collect_fixture(void)
{
    int root = open_dir("proc/root");
    int dfd = open_dir("proc/root/7743");
    sop_proc *p = malloc(sizeof *p);
    sop_missing m = {0};
    CHECK_EQ_I(sop__proc_collect(dfd, FIX_PID, p, &m), 0);
    CHECK(p->have_stat && p->have_status && p->have_smaps && p->have_io && p->have_limits &&
          p->have_sched && p->have_env && p->have_maps);
    CHECK_EQ_I(p->pid, FIX_PID);
    CHECK_EQ_S(p->stat.comm, "python3");
    CHECK(strncmp(p->cmdline, "/usr/bin/python3 -c ", 20) == 0);
    CHECK_EQ_S(p->exe, "/usr/bin/python3.11");
    CHECK_EQ_I(p->fds, 5);
    CHECK_EQ_I(p->limits.nofile_soft, 20000);
    CHECK_EQ_I(p->status.cpus_allowed_count, 2);
    CHECK(!isnan(p->start_time_s) && p->start_time_s > 1.0e9);
    CHECK(isnan(p->rate.cpu_pct)); /* one snapshot: no rates */
    CHECK_EQ_I(m.n, 0);
    CHECK(env_get(&p->env, "SECRET_TOKEN") == NULL);

    sop_thread_list tl;
    CHECK_EQ_I(sop__threads_collect(dfd, &tl, &m), 0);
    CHECK_EQ_I(tl.n, 2);
    bool saw_thread = false;
    for (size_t i = 0; i < tl.n; i++) {
        if (tl.items[i].tid == FIX_THREAD) {
            saw_thread = true;
            CHECK_EQ_S(tl.items[i].name, "python3");
            CHECK_EQ_I(tl.items[i].stat.state, 'S');
            CHECK(tl.items[i].sched.run_ns != SOP_NA);
            CHECK(tl.items[i].voluntary_ctxt_switches != SOP_NA);
            CHECK(isnan(tl.items[i].cpu_pct) && isnan(tl.items[i].wait_pct));
        }
    }
    CHECK(saw_thread);

    sop_child_list cl;
    CHECK_EQ_I(sop__children_collect(root, FIX_PID, &cl, &m), 0);
    CHECK_EQ_I(cl.n, 1);
    if (cl.n == 1) {
        CHECK_EQ_I(cl.items[0].pid, FIX_CHILD);
        CHECK_EQ_I(cl.items[0].ppid, FIX_PID);
        CHECK_EQ_I(cl.items[0].depth, 1);
        CHECK_EQ_S(cl.items[0].stat.comm, "sleep");
        CHECK_EQ_S(cl.items[0].cmdline, "/bin/sleep 60");
        CHECK(cl.items[0].have_smaps && cl.items[0].smaps.pss_kb > 0);
        CHECK(cl.items[0].io.rchar != SOP_NA);
        CHECK(env_get(&cl.items[0].env, "OMP_NUM_THREADS") != NULL);
        CHECK(env_get(&cl.items[0].env, "SECRET_TOKEN") == NULL);
    }
    CHECK_EQ_I(m.n, 0);

    /* the bridge: walk the tree by key */
    sop_value *ev = sop__v_obj();
    sop__bridge_proc(ev, p, &tl, &cl, p->start_time_s + 30.0);
    const sop_value *pr = sop__v_get(ev, "proc");
    double d = 0;
    CHECK(pr && pr->type == SOP_V_OBJ);
    CHECK(sop__v_get_num(pr, "pid", &d) && d == FIX_PID);
    CHECK(sop__v_get_num(pr, "ppid", &d) && d == 7741);
    CHECK_EQ_S(sop__v_get_str(pr, "comm"), "python3");
    CHECK_EQ_S(sop__v_get_str(pr, "state"), "S");
    CHECK_EQ_S(sop__v_get_str(pr, "state_name"), "sleeping");
    CHECK_EQ_S(sop__v_get_str(pr, "exe"), "/usr/bin/python3.11");
    CHECK(sop__v_get_num(pr, "threads", &d) && d == 2);
    CHECK(sop__v_get_num(pr, "age_s", &d) && fabs(d - 30.0) < 1e-6);
    CHECK(sop__v_get_num(pr, "rss_kb", &d) && d == 231064);
    CHECK(sop__v_get_num(pr, "anon_kb", &d) && d == 116004);
    CHECK(sop__v_get_num(pr, "utime_ms", &d) && d == 1480);
    CHECK(sop__v_get_num(pr, "stime_ms", &d) && d == 530);
    CHECK(sop__v_get_num(pr, "fds", &d) && d == 5);
    CHECK(sop__v_get_num(pr, "fd_limit", &d) && d == 20000);
    CHECK(sop__v_get_num(pr, "memlock_limit_kb", &d) && d == 8192);
    CHECK(sop__v_get_num(pr, "as_limit_kb", &d) && d == -1);
    CHECK(sop__v_get_num(pr, "nonvoluntary_ctxt_switches", &d) && d == 144);
    double priv_clean = 0, priv_dirty = 0, priv = 0;
    const sop_value *sm = sop__v_get(pr, "smaps");
    CHECK(sop__v_get_num(sm, "private_clean_kb", &priv_clean));
    CHECK(sop__v_get_num(sm, "private_dirty_kb", &priv_dirty));
    CHECK(sop__v_get_num(pr, "private_kb", &priv) && priv == priv_clean + priv_dirty);
    CHECK(sop__v_get_num(sm, "pss_kb", &d) && d > 0);
    CHECK(sop__v_get_num(sop__v_get(pr, "sched"), "wait_ms", &d) && d == 181);
    CHECK(sop__v_get_num(sop__v_get(pr, "io"), "rchar", &d) && d == 16817683);
    CHECK(sop__v_get(sop__v_get(pr, "io"), "rchar_per_s") == NULL); /* no window */
    CHECK(sop__v_get(pr, "cpu_pct") == NULL);
    CHECK_EQ_S(sop__v_get_str(sop__v_get(pr, "affinity"), "cpus"), "0-1");
    CHECK(sop__v_get_num(sop__v_get(pr, "affinity"), "count", &d) && d == 2);
    const sop_value *env = sop__v_get(pr, "env");
    CHECK_EQ_S(sop__v_get_str(env, "OMP_NUM_THREADS"), "4");
    CHECK(sop__v_get(env, "SECRET_TOKEN") == NULL);
    const sop_value *libs = sop__v_get(pr, "libs");
    CHECK(libs && libs->type == SOP_V_ARR && libs->count >= 6);
    bool torch = false;
    for (const sop_value *l = libs ? libs->child : NULL; l; l = l->next)
        torch = torch ||
                (sop__v_get_str(l, "kind") && strcmp(sop__v_get_str(l, "kind"), "torch") == 0 &&
                 sop__v_get_str(l, "name") && sop__v_get_str(l, "path"));
    CHECK(torch);
    const sop_value *th = sop__v_get(ev, "threads");
    CHECK(th && th->type == SOP_V_ARR && th->count == 2);
    if (th && th->child) {
        CHECK(sop__v_get_num(th->child, "tid", &d));
        const char *s = sop__v_get_str(th->child, "state");
        CHECK(s && strlen(s) == 1);
        CHECK(sop__v_get_num(th->child, "run_ms", &d));
        CHECK(sop__v_get_num(th->child, "voluntary_ctxt_switches", &d));
        CHECK(sop__v_get(th->child, "cpu_pct") == NULL);
        CHECK(sop__v_get(th->child, "wait_pct") == NULL);
    }
    const sop_value *ch = sop__v_get(ev, "children");
    CHECK(ch && ch->type == SOP_V_ARR && ch->count == 1);
    if (ch && ch->child) {
        const sop_value *c = ch->child;
        CHECK(sop__v_get_num(c, "pid", &d) && d == FIX_CHILD);
        CHECK(sop__v_get_num(c, "ppid", &d) && d == FIX_PID);
        CHECK(sop__v_get_num(c, "depth", &d) && d == 1);
        /* started 46584 - 46364 ticks after the target, which is 30 s old */
        CHECK(sop__v_get_num(c, "age_s", &d) &&
              fabs(d - (30.0 - 220.0 / sop__proc_ticks_per_s())) < 1e-3);
        CHECK(sop__v_get_num(c, "start_time_s", &d) && fabs(d - cl.items[0].start_time_s) < 1e-6);
        CHECK_EQ_S(sop__v_get_str(c, "comm"), "sleep");
        CHECK_EQ_S(sop__v_get_str(c, "state"), "S");
        CHECK(sop__v_get_num(c, "private_kb", &d) &&
              d == cl.items[0].smaps.private_clean_kb + cl.items[0].smaps.private_dirty_kb);
        CHECK(sop__v_get_num(c, "shared_kb", &d) &&
              d == cl.items[0].smaps.shared_clean_kb + cl.items[0].smaps.shared_dirty_kb);
        CHECK(sop__v_get_num(c, "pss_kb", &d) && d > 0);
        CHECK(sop__v_get_num(c, "anon_kb", &d));
        CHECK(sop__v_get_num(c, "swap_kb", &d) && d == 0);
        CHECK(sop__v_get_num(c, "rss_kb", &d) && d > 0);
        CHECK(sop__v_get(sop__v_get(c, "env"), "SECRET_TOKEN") == NULL);
    }
    sop__v_free(ev);

    sop__thread_list_free(&tl);
    sop__child_list_free(&cl);
    sop__missing_free(&m);
    free(p);
    close(dfd);
    close(root);
}

/* A fixture directory missing most files: every miss is recorded, collection goes on. */
static void test_collect_partial(void)
{
    char dir[] = "/tmp/sop_proc_partialXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/stat", dir);
    FILE *f = fopen(path, "w");
    fputs("99 (x y) R 1 1 1 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 5 0 0\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/smaps_rollup", dir);
    fclose(fopen(path, "w")); /* empty, as for a kernel thread */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    sop_proc *p = malloc(sizeof *p);
    sop_missing m = {0};
    CHECK_EQ_I(sop__proc_collect(dfd, 99, p, &m), 0);
    CHECK(p->have_stat && !p->have_status && !p->have_smaps && !p->have_io);
    CHECK_EQ_S(p->stat.comm, "x y");
    CHECK_EQ_I(p->status.vm_rss_kb, SOP_NA);
    CHECK_EQ_I(p->fds, SOP_NA);
    CHECK(has_missing(&m, "proc", "status: No such file or directory"));
    CHECK(has_missing(&m, "proc", "smaps_rollup: empty"));
    CHECK(has_missing(&m, "proc", "io: No such file or directory"));
    sop_value *ev = sop__v_obj();
    sop__bridge_proc(ev, p, NULL, NULL, NAN);
    const sop_value *pr = sop__v_get(ev, "proc");
    double d;
    CHECK(sop__v_get(pr, "rss_kb") == NULL); /* absent, not 0 */
    CHECK(sop__v_get(pr, "smaps") == NULL);
    CHECK(sop__v_get(pr, "io") == NULL);
    CHECK(sop__v_get(pr, "age_s") == NULL);
    CHECK(sop__v_get_num(pr, "utime_ms", &d) && d == 70);
    CHECK(sop__v_get(ev, "threads") == NULL);
    sop__v_free(ev);
    sop__missing_free(&m);
    free(p);
    close(dfd);
    unlink(path);
    snprintf(path, sizeof path, "%s/stat", dir);
    unlink(path);
    rmdir(dir);
}

static void put_file(const char *dir, const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

/* A kernel without CONFIG_PROC_CHILDREN: no task/TID/children files, so the descendants come
 * from one scan of the ppids; the depth bound holds there too. */
static void test_children_fallback(void)
{
    char root[] = "/tmp/sop_proc_rootXXXXXX";
    CHECK(mkdtemp(root) != NULL);
    /* 10 -> 11 -> 12 -> 13 -> 14 -> 15 (too deep), 10 -> 16; 20 is unrelated */
    const int pids[] = {10, 11, 12, 13, 14, 15, 16, 20};
    const int ppids[] = {1, 10, 11, 12, 13, 14, 10, 1};
    char rel[64], text[160];
    for (size_t i = 0; i < sizeof pids / sizeof pids[0]; i++) {
        snprintf(rel, sizeof rel, "%d", pids[i]);
        char dir[128];
        snprintf(dir, sizeof dir, "%s/%s", root, rel);
        mkdir(dir, 0755);
        snprintf(rel, sizeof rel, "%d/task", pids[i]);
        snprintf(dir, sizeof dir, "%s/%s", root, rel);
        mkdir(dir, 0755);
        snprintf(rel, sizeof rel, "%d/task/%d", pids[i], pids[i]);
        snprintf(dir, sizeof dir, "%s/%s", root, rel);
        mkdir(dir, 0755);
        snprintf(rel, sizeof rel, "%d/stat", pids[i]);
        snprintf(text, sizeof text, "%d (w %d) S %d 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 9 0 0\n",
                 pids[i], pids[i], ppids[i]);
        put_file(root, rel, text);
    }
    int rfd = open(root, O_RDONLY | O_DIRECTORY);
    sop_child_list cl;
    sop_missing m = {0};
    CHECK_EQ_I(sop__children_collect(rfd, 10, &cl, &m), 0);
    CHECK_EQ_I(cl.n, 5); /* 11 16 12 13 14: breadth first, depth at most 4 */
    if (cl.n == 5) {
        CHECK_EQ_I(cl.items[0].pid, 11);
        CHECK_EQ_I(cl.items[1].pid, 16);
        CHECK_EQ_I(cl.items[1].depth, 1);
        CHECK_EQ_I(cl.items[2].pid, 12);
        CHECK_EQ_I(cl.items[2].depth, 2);
        CHECK_EQ_I(cl.items[4].pid, 14);
        CHECK_EQ_I(cl.items[4].depth, 4);
        CHECK_EQ_I(cl.items[4].ppid, 13);
        CHECK_EQ_S(cl.items[4].stat.comm, "w 14");
        CHECK(!cl.items[4].have_smaps);
    }
    CHECK(has_missing(&m, "children", "smaps_rollup"));
    sop__child_list_free(&cl);
    sop__missing_free(&m);
    close(rfd);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK_EQ_I(system(cmd), 0);
}

static void test_rates(void)
{
    sop_proc *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    int dfd = open_dir("proc/root/7743");
    sop_missing m = {0};
    CHECK_EQ_I(sop__proc_collect(dfd, FIX_PID, a, &m), 0);
    close(dfd);
    *b = *a;
    /* two hand-made snapshots 2 s apart: +150 utime +50 stime ticks at 100 Hz = 100% of a core */
    b->stat.utime_ticks += 150;
    b->stat.stime_ticks += 50;
    b->stat.majflt += 20;
    b->status.vm_rss_kb += 4096;
    b->io.rchar += 8 << 20;
    b->io.syscr += 128;
    b->io.read_bytes += 1 << 20;
    b->io.wchar += 1000; /* no write syscalls in the window: mean write undefined */
    b->sched.wait_ns += 500000000;
    sop__proc_rates(b, a, 2.0, 100.0);
    CHECK(fabs(b->rate.cpu_pct - 100.0) < 1e-9);
    CHECK(fabs(b->rate.majflt_per_s - 10.0) < 1e-9);
    CHECK(fabs(b->rate.rss_growth_kb_per_s - 2048.0) < 1e-9);
    CHECK(fabs(b->rate.rchar_per_s - 4194304.0) < 1e-9);
    CHECK(fabs(b->rate.syscr_per_s - 64.0) < 1e-9);
    CHECK(fabs(b->rate.mean_read_bytes - 65536.0) < 1e-9);
    CHECK(isnan(b->rate.mean_write_bytes));
    CHECK(fabs(b->rate.read_bytes_per_s - 524288.0) < 1e-9);
    CHECK(fabs(b->rate.wchar_per_s - 500.0) < 1e-9);
    CHECK(fabs(b->rate.sched_wait_ms_per_s - 250.0) < 1e-9);

    sop_value *ev = sop__v_obj();
    sop__bridge_proc(ev, b, NULL, NULL, NAN);
    double d;
    CHECK(sop__v_get_num(sop__v_get(ev, "proc"), "cpu_pct", &d) && fabs(d - 100.0) < 1e-9);
    CHECK(sop__v_get_num(sop__v_get(sop__v_get(ev, "proc"), "io"), "mean_read_bytes", &d) &&
          d == 65536.0);
    CHECK(sop__v_get(sop__v_get(sop__v_get(ev, "proc"), "io"), "mean_write_bytes") == NULL);
    CHECK(sop__v_get_num(sop__v_get(sop__v_get(ev, "proc"), "sched"), "wait_per_s_ms", &d) &&
          fabs(d - 250.0) < 1e-9);
    sop__v_free(ev);

    sop__proc_rates(b, a, 0.0, 100.0); /* no window */
    CHECK(isnan(b->rate.cpu_pct) && isnan(b->rate.rchar_per_s));
    sop__proc_rates(b, NULL, 2.0, 100.0);
    CHECK(isnan(b->rate.cpu_pct));
    b->io.syscr = SOP_NA; /* one side missing */
    sop__proc_rates(b, a, 2.0, 100.0);
    CHECK(isnan(b->rate.syscr_per_s) && isnan(b->rate.mean_read_bytes));
    CHECK(!isnan(b->rate.rchar_per_s));
    b->stat.starttime_ticks += 1; /* pid reused: not the same process */
    sop__proc_rates(b, a, 2.0, 100.0);
    CHECK(isnan(b->rate.cpu_pct) && isnan(b->rate.rchar_per_s));

    /* threads: matched by tid, whatever the order; a new thread has no rate */
    sop_thread t0[2], t1[3];
    memset(t0, 0, sizeof t0);
    memset(t1, 0, sizeof t1);
    int tids0[2] = {10, 11}, tids1[3] = {12, 11, 10};
    int64_t ticks0[2] = {100, 40}, ticks1[3] = {5, 140, 100};
    int64_t wait0[2] = {0, 1000}, wait1[3] = {0, 250001000, SOP_NA};
    for (int i = 0; i < 2; i++) {
        t0[i].sched.wait_ns = wait0[i];
        t0[i].tid = tids0[i];
        t0[i].stat.utime_ticks = ticks0[i];
        t0[i].stat.stime_ticks = 0;
        t0[i].stat.starttime_ticks = 1;
    }
    for (int i = 0; i < 3; i++) {
        t1[i].sched.wait_ns = wait1[i];
        t1[i].tid = tids1[i];
        t1[i].stat.utime_ticks = ticks1[i];
        t1[i].stat.stime_ticks = 0;
        t1[i].stat.starttime_ticks = 1;
    }
    sop_thread_list l0 = {t0, 2}, l1 = {t1, 3};
    sop__threads_rates(&l1, &l0, 1.0, 100.0);
    CHECK(isnan(t1[0].cpu_pct));
    CHECK(fabs(t1[1].cpu_pct - 100.0) < 1e-9); /* tid 11: 40 -> 140 */
    CHECK(fabs(t1[2].cpu_pct - 0.0) < 1e-9);   /* tid 10: idle, a measured 0 */
    CHECK(fabs(t1[1].wait_pct - 25.0) < 1e-9); /* 250 ms runnable-waiting in 1 s */
    CHECK(isnan(t1[2].wait_pct));              /* schedstat unread now */
    CHECK(isnan(t1[0].wait_pct));
    CHECK(fabs(t1[1].sys_pct) < 1e-9 && isnan(t1[0].sys_pct));
    t1[1].stat.stime_ticks = 30; /* 0.3 s of its 1.3 s in the kernel */
    sop__threads_rates(&l1, &l0, 1.0, 100.0);
    CHECK(fabs(t1[1].sys_pct - 30.0) < 1e-9 && fabs(t1[1].cpu_pct - 130.0) < 1e-9);
    t1[1].stat.stime_ticks = 0;
    t1[1].stat.starttime_ticks = 2; /* tid 11 reused by a new thread */
    sop__threads_rates(&l1, &l0, 1.0, 100.0);
    CHECK(isnan(t1[1].cpu_pct) && isnan(t1[1].wait_pct) && isnan(t1[1].sys_pct));
    t1[1].stat.starttime_ticks = 1;
    sop__threads_rates(&l1, &l0, -1.0, 100.0);
    CHECK(isnan(t1[1].cpu_pct));

    sop_child c0, c1;
    memset(&c0, 0, sizeof c0);
    c0.pid = 50;
    c0.stat.utime_ticks = 10;
    c0.stat.stime_ticks = 10;
    c0.stat.starttime_ticks = 9;
    c0.io.read_bytes = 0;
    c0.io.rchar = 100;
    c1 = c0;
    c1.stat.utime_ticks = 60;
    c1.io.read_bytes = 4096;
    c1.io.rchar = SOP_NA;
    sop_child_list cl0 = {&c0, 1, 0, 0, SOP_NA, NAN}, cl1 = {&c1, 1, 0, 0, SOP_NA, NAN};
    sop__children_rates(&cl1, &cl0, 0.5, 100.0);
    CHECK(fabs(c1.cpu_pct - 100.0) < 1e-9);
    CHECK(fabs(c1.read_bytes_per_s - 8192.0) < 1e-9);
    CHECK(isnan(c1.rchar_per_s));
    c1.pid = 51; /* another process */
    sop__children_rates(&cl1, &cl0, 0.5, 100.0);
    CHECK(isnan(c1.cpu_pct));

    sop__missing_free(&m);
    free(a);
    free(b);
}

static void test_text(void)
{
    sop_value *v = sop__bridge_text("a\xff"
                                    "b");
    CHECK_EQ_S(v->str, "a\xEF\xBF\xBD"
                       "b");
    sop__v_free(v);
    v = sop__bridge_text("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x90\x8D"); /* valid: kept */
    CHECK_EQ_S(v->str, "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x90\x8D");
    sop__v_free(v);
    v = sop__bridge_text("\x1b[31mred\x07"); /* control characters kept */
    CHECK_EQ_S(v->str, "\x1b[31mred\x07");
    sop__v_free(v);
    v = sop__bridge_text("\xC0\xAF"); /* overlong '/' */
    CHECK_EQ_S(v->str, "\xEF\xBF\xBD\xEF\xBF\xBD");
    sop__v_free(v);
    v = sop__bridge_text("\xED\xA0\x80x"); /* surrogate */
    CHECK_EQ_S(v->str, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDx");
    sop__v_free(v);
    v = sop__bridge_text("ok\xE2\x82"); /* sequence cut at the end */
    CHECK_EQ_S(v->str, "ok\xEF\xBF\xBD\xEF\xBF\xBD");
    sop__v_free(v);
    v = sop__bridge_text("\xF4\x90\x80\x80"); /* beyond U+10FFFF */
    CHECK_EQ_S(v->str, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    sop__v_free(v);
    v = sop__bridge_text(NULL);
    CHECK(v && v->type == SOP_V_STR && v->str[0] == '\0');
    sop__v_free(v);
}

/* ---- live: this very process, its threads and its children ---- */

static int thread_pipe[2]; /* idle threads block reading it until it is closed */

static void *idle_thread(void *arg)
{
    (void)arg;
    char c;
    while (read(thread_pipe[0], &c, 1) > 0) {
    }
    return NULL;
}

static double clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double now_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

static void test_live(void)
{
    enum { NTHREADS = 63, NCHILD = 8 };
    pthread_t pt[NTHREADS];
    CHECK_EQ_I(pipe(thread_pipe), 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&pt[i], NULL, idle_thread, NULL);
    pid_t kids[NCHILD];
    int pipefd[2];
    CHECK_EQ_I(pipe(pipefd), 0);
    for (int i = 0; i < NCHILD; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            close(pipefd[1]);
            close(thread_pipe[0]);
            close(thread_pipe[1]);
            pid_t g = -1;
            if (i == 0) { /* a grandchild under the first child */
                g = fork();
                if (g == 0) {
                    char c;
                    while (read(pipefd[0], &c, 1) > 0) {
                    }
                    _exit(0);
                }
            }
            char c;
            while (read(pipefd[0], &c, 1) > 0) { /* until the parent closes the pipe */
            }
            if (g > 0)
                waitpid(g, NULL, 0);
            _exit(0);
        }
    }
    close(pipefd[0]);
    usleep(100000); /* let the grandchild fork */

    char self[32];
    snprintf(self, sizeof self, "/proc/%d", (int)getpid());
    int root = open("/proc", O_RDONLY | O_DIRECTORY);
    sop_proc *p = malloc(sizeof *p), *p2 = malloc(sizeof *p2);
    sop_missing m = {0};
    sop_thread_list tl = {0}, tl2 = {0};
    sop_child_list cl = {0}, cl2 = {0};

    /* one snapshot of a 64-thread process with 8 (+1) descendants */
    /* judged on this thread's CPU time (user + kernel, where /proc is generated), which other
     * load on the machine does not inflate; wall time is printed too */
    double best = 1e9, best_wall = 1e9;
    for (int round = 0; round < 5; round++) {
        sop__thread_list_free(&tl);
        sop__child_list_free(&cl);
        double t0 = now_ms(), c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
        int dfd = open(self, O_RDONLY | O_DIRECTORY);
        CHECK_EQ_I(sop__proc_collect(dfd, getpid(), p, &m), 0);
        CHECK_EQ_I(sop__threads_collect(dfd, &tl, &m), 0);
        CHECK_EQ_I(sop__children_collect(root, getpid(), &cl, &m), 0);
        close(dfd);
        double ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0, wall = now_ms() - t0;
        best = ms < best ? ms : best;
        best_wall = wall < best_wall ? wall : best_wall;
    }
    printf("snapshot of %zu threads + %zu descendants: %.2f ms CPU, %.2f ms wall (best of 5)\n",
           tl.n, cl.n, best, best_wall);
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(__SANITIZE_ADDRESS__)
#define __SANITIZE_ADDRESS__ 1 /* clang spells it __has_feature */
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
    (void)best; /* instrumented builds are several times slower: no budget check */
#else
    CHECK(best < 10.0);
#endif

    CHECK(p->have_stat && p->have_status && p->have_smaps && p->have_io && p->have_sched &&
          p->have_limits && p->have_env && p->have_maps);
    CHECK_EQ_I(p->pid, getpid());
    CHECK_EQ_I(p->stat.pid, getpid());
    CHECK_EQ_I(p->stat.ppid, getppid());
    CHECK_EQ_I(p->status.threads, NTHREADS + 1);
    CHECK(p->fds >= 3);
    CHECK(p->exe[0] == '/' && strstr(p->exe, "test_proc_parsers"));
    CHECK(strstr(p->cmdline, "test_proc_parsers") != NULL);
    CHECK(p->status.vm_rss_kb > 0 && p->smaps.pss_kb > 0);
    CHECK(p->start_time_s > 1.0e9 && p->start_time_s <= (double)time(NULL) + 1);
    CHECK(p->status.cpus_allowed_count >= 1);
    CHECK_EQ_I(tl.n, NTHREADS + 1);
    bool main_seen = false;
    for (size_t i = 0; i < tl.n; i++)
        main_seen = main_seen || tl.items[i].tid == getpid();
    CHECK(main_seen);

    CHECK_EQ_I(cl.n, NCHILD + 1);
    int depth2 = 0;
    for (size_t i = 0; i < cl.n; i++) {
        if (cl.items[i].depth == 2) {
            depth2++;
            CHECK_EQ_I(cl.items[i].ppid, kids[0]);
        } else {
            CHECK_EQ_I(cl.items[i].depth, 1);
            CHECK_EQ_I(cl.items[i].ppid, getpid());
        }
        CHECK(cl.items[i].have_smaps);
    }
    CHECK_EQ_I(depth2, 1);
    if (cl.n > 0)
        CHECK_EQ_I(cl.items[cl.n - 1].depth, 2); /* breadth first */

    /* a window: a fresh "before", burn 200 ms of CPU (whatever else loads the machine), then
     * "after"; the rates must agree with the CPU clocks the kernel keeps for us */
    int dfd = open(self, O_RDONLY | O_DIRECTORY);
    sop__thread_list_free(&tl);
    sop__child_list_free(&cl);
    CHECK_EQ_I(sop__proc_collect(dfd, getpid(), p, &m), 0);
    CHECK_EQ_I(sop__threads_collect(dfd, &tl, &m), 0);
    CHECK_EQ_I(sop__children_collect(root, getpid(), &cl, &m), 0);
    double t0 = now_ms(), p0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    double th0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
    volatile double x = 0;
    while (clock_ms(CLOCK_THREAD_CPUTIME_ID) - th0 < 200 && now_ms() - t0 < 5000)
        x += 1.0;
    (void)x; /* the busy loop's work; read so clang's -Wunused-but-set-variable is quiet */
    double proc_cpu_ms = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - p0;
    double main_cpu_ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - th0;
    double secs = (now_ms() - t0) / 1e3;
    CHECK_EQ_I(sop__proc_collect(dfd, getpid(), p2, &m), 0);
    CHECK_EQ_I(sop__threads_collect(dfd, &tl2, &m), 0);
    CHECK_EQ_I(sop__children_collect(root, getpid(), &cl2, &m), 0);
    close(dfd);
    sop__proc_rates(p2, p, secs, sop__proc_ticks_per_s());
    sop__threads_rates(&tl2, &tl, secs, sop__proc_ticks_per_s());
    sop__children_rates(&cl2, &cl, secs, sop__proc_ticks_per_s());
    double want = proc_cpu_ms / 10.0 / secs, want_main = main_cpu_ms / 10.0 / secs;
    printf("live cpu_pct %.1f (CPU clock says %.1f) over %.3f s\n", p2->rate.cpu_pct, want, secs);
    /* stat times have 10 ms ticks and the snapshots themselves cost CPU: a loose band */
    CHECK(fabs(p2->rate.cpu_pct - want) < 15.0 + 0.15 * want);
    double main_pct = NAN;
    for (size_t i = 0; i < tl2.n; i++)
        if (tl2.items[i].tid == getpid())
            main_pct = tl2.items[i].cpu_pct;
    CHECK(fabs(main_pct - want_main) < 15.0 + 0.15 * want_main);
    CHECK(cl2.n == cl.n && cl2.n > 0 && !isnan(cl2.items[0].cpu_pct) && cl2.items[0].cpu_pct < 50);

    sop_value *ev = sop__v_obj();
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    sop__bridge_proc(ev, p2, &tl2, &cl2, (double)wall.tv_sec + (double)wall.tv_nsec / 1e9);
    const sop_value *th = sop__v_get(ev, "threads");
    CHECK(th && th->count == NTHREADS + 1);
    double d;
    CHECK(sop__v_get_num(sop__v_get(ev, "proc"), "cpu_pct", &d) && d == p2->rate.cpu_pct);
    CHECK(sop__v_get_num(sop__v_get(ev, "proc"), "age_s", &d) && d >= 0 && d < 600);
    sop__v_free(ev);

    close(thread_pipe[1]);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(pt[i], NULL);
    close(thread_pipe[0]);
    close(pipefd[1]); /* the children (and grandchild) exit on EOF */
    for (int i = 0; i < NCHILD; i++)
        waitpid(kids[i], NULL, 0);
    sop__thread_list_free(&tl);
    sop__thread_list_free(&tl2);
    sop__child_list_free(&cl);
    sop__child_list_free(&cl2);
    sop__missing_free(&m);
    free(p);
    free(p2);
    close(root);
}

/* A pid that has exited: from a dir fd opened while it lived, and by number afterwards. */
static void test_vanished(void)
{
    pid_t kid = fork();
    if (kid == 0) {
        pause();
        _exit(0);
    }
    char path[32];
    snprintf(path, sizeof path, "/proc/%d", (int)kid);
    int dfd = open(path, O_RDONLY | O_DIRECTORY);
    CHECK(dfd >= 0);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    sop_proc *p = malloc(sizeof *p);
    sop_missing m = {0};
    int rc = sop__proc_collect(dfd, kid, p, &m);
    CHECK(rc == -ESRCH || rc == -ENOENT);
    sop_thread_list tl;
    rc = sop__threads_collect(dfd, &tl, &m);
    CHECK(rc == -ESRCH || rc == -ENOENT);
    CHECK_EQ_I(tl.n, 0);
    close(dfd);
    CHECK_EQ_I(m.n, 0); /* a vanished process is not "missing evidence" */
    int root = open("/proc", O_RDONLY | O_DIRECTORY);
    sop_child_list cl;
    rc = sop__children_collect(root, kid, &cl, &m);
    CHECK(rc == -ESRCH || rc == -ENOENT);
    CHECK_EQ_I(cl.n, 0);
    close(root);
    dfd = open(path, O_RDONLY | O_DIRECTORY);
    CHECK(dfd < 0 && errno == ENOENT);
    sop__missing_free(&m);
    free(p);
}

int main(void)
{
    test_stat();
    test_status();
    test_smaps_io_sched_limits();
    test_environ_cmdline();
    test_maps();
    test_collect_fixture();
    test_collect_partial();
    test_children_fallback();
    test_rates();
    test_text();
    test_live();
    test_vanished();
    return t_done();
}
