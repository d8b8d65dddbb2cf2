/* test_sched.c — whole-tree scheduling (probes/proc_tree.c): the accounting on numbers (a
 * baseline at the first poll, threads born or gone in the window, a reused tid), two polls of
 * fixture /proc trees (a thread exits, threads and a worker are born, pool libraries read),
 * ev.sched from its writer; and the CPU budget (probes/cpu_budget.c): affinity ∩ cpuset ∩
 * quota. Depends on probes/proc_tree.h, probes/cpu_budget.h, engine/bridge,
 * engine/collect/collect_sched.h, t.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <unistd.h>

#include "bridge/bridge.h"
#include "collect_sched.h"
#include "cpu_budget.h"
#include "proc_tree.h"
#include "t.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static const sop_tree_thread *thread_of(const sop_tree_sched *t, int tid)
{
    for (size_t i = 0; i < t->nthreads; i++)
        if (t->threads[i].tid == tid)
            return &t->threads[i];
    return NULL;
}

static void test_accounting(void)
{
    sop_tree_sched t;
    memset(&t, 0, sizeof t);
    sop__tree_begin_poll(&t);
    CHECK_EQ_I(sop__tree_observe(&t, 1, 1, "main", 5000000000, 100), 0);
    CHECK_EQ_I(sop__tree_observe(&t, 1, 2, "gone", 1000000000, 0), 0);
    CHECK_EQ_I(sop__tree_observe(&t, 1, 9, "x", -1, 0), -EINVAL);
    sop__tree_end_poll(&t);
    sop__tree_begin_poll(&t);
    CHECK_EQ_I(sop__tree_observe(&t, 1, 1, "main", 6000000000, 500000100), 0);
    CHECK_EQ_I(sop__tree_observe(&t, 1, 2, "gone", 1200000000, 0), 0);
    CHECK_EQ_I(sop__tree_observe(&t, 1, 3, "born", 300000000, 700000000), 0);
    sop__tree_end_poll(&t);
    sop__tree_begin_poll(&t); /* tid 2 exited; tid 3 now a new thread with smaller counters */
    CHECK_EQ_I(sop__tree_observe(&t, 1, 1, "main", 7000000000, 1000000100), 0);
    CHECK_EQ_I(sop__tree_observe(&t, 1, 3, "born", 100000000, 0), 0);
    sop__tree_end_poll(&t);
    CHECK_EQ_I(t.polls, 3);
    const sop_tree_thread *m = thread_of(&t, 1), *g = thread_of(&t, 2), *b = thread_of(&t, 3);
    CHECK(m && g && b);
    CHECK(NEAR(sop__tree_thread_cpu_s(m), 2.0)); /* baseline 5 s before the window */
    CHECK(NEAR(sop__tree_thread_wait_s(m), 1.0));
    CHECK(NEAR(sop__tree_thread_cpu_s(g), 0.2)); /* its time until its last sight is kept */
    CHECK(!g->alive && g->at_start);
    CHECK(!b->at_start && b->alive);
    /* born in the window: 0.3 s, then the tid reused by a thread that ran 0.1 s */
    CHECK(NEAR(sop__tree_thread_cpu_s(b), 0.4));
    CHECK(NEAR(sop__tree_thread_wait_s(b), 0.7));
    sop__tree_free(&t);
    sop__tree_free(NULL);
}

static int open_root(const char *rel)
{
    int fd = open(t_fixture(rel), O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        fprintf(stderr, "cannot open %s\n", t_fixture(rel));
        exit(2);
    }
    return fd;
}

static const sop_value *nth(const sop_value *arr, size_t i)
{
    const sop_value *v = arr ? arr->child : NULL;
    while (v && i--)
        v = v->next;
    return v;
}

static double num(const sop_value *o, const char *key)
{
    double d = NAN;
    sop__v_get_num(o, key, &d);
    return d;
}

static void test_fixture_tree(void)
{
    sop_tree_sched t;
    memset(&t, 0, sizeof t);
    sop_missing m = {0};
    int r0 = open_root("proc_tree/t0"), r1 = open_root("proc_tree/t1");
    CHECK_EQ_I(sop__tree_poll(r0, 100, &t, false, NULL, &m), 0);
    CHECK_EQ_I(t.nthreads, 3);
    CHECK_EQ_I(t.nprocs, 2);
    CHECK_EQ_I(sop__tree_poll(r1, 100, &t, true, NULL, &m), 0);
    CHECK_EQ_I(sop__tree_poll(r1, 4242, &t, true, NULL, &m), -ESRCH); /* no such target */
    t.polls = 2;
    t.first_poll_ms = 0;
    t.last_poll_ms = 1000;
    CHECK_EQ_I(t.nprocs, 3);
    CHECK_EQ_I(t.nthreads, 6);
    CHECK(!t.no_schedstat);
    const sop_tree_thread *th = thread_of(&t, 101);
    CHECK(th && !th->alive && NEAR(sop__tree_thread_cpu_s(th), 0.0));
    th = thread_of(&t, 102);
    CHECK(th && NEAR(sop__tree_thread_wait_s(th), 0.75));
    CHECK_EQ_S(th->name, "pool-2");
    CHECK_EQ_I(t.procs[0].nlibs, 2);
    CHECK_EQ_S(t.procs[0].libs[0].kind, "openmp");
    CHECK_EQ_S(t.procs[0].libs[1].kind, "blas");
    CHECK_EQ_S(t.procs[1].cmdline, "python3 -c from multiprocessing.spawn import spawn_main");

    sop_value *ev = sop__v_obj();
    sop__bridge_sched(ev, &t, 2, 1.5);
    const sop_value *s = sop__v_get(ev, "sched");
    CHECK(s != NULL);
    CHECK(NEAR(num(s, "window_s"), 1.0));
    CHECK(NEAR(num(s, "cpu_s"), 1.85));
    CHECK(NEAR(num(s, "runqueue_wait_s"), 2.65));
    CHECK(NEAR(num(s, "runnable_load"), 4.5));
    CHECK_EQ_I(num(s, "effective_cpus"), 2);
    CHECK(NEAR(num(s, "capacity_cpus"), 1.5));
    CHECK_EQ_I(num(s, "threads_seen"), 6);
    CHECK_EQ_I(num(s, "threads"), 5);
    const sop_value *procs = sop__v_get(s, "procs");
    const sop_value *p0 = nth(procs, 0), *p1 = nth(procs, 1), *p2 = nth(procs, 2);
    CHECK_EQ_I(num(p0, "pid"), 100);
    CHECK_EQ_I(num(p0, "threads"), 2);
    CHECK_EQ_I(num(p0, "threads_seen"), 3);
    CHECK_EQ_I(num(p0, "threads_born"), 1);
    CHECK_EQ_I(num(p0, "threads_exited"), 1);
    CHECK(NEAR(num(p0, "cpu_s"), 0.75));
    CHECK(NEAR(num(p0, "wait_s"), 0.95));
    CHECK_EQ_S(sop__v_get_str(nth(sop__v_get(p0, "libs"), 1), "name"), "libopenblas");
    CHECK_EQ_I(num(nth(sop__v_get(p0, "top"), 0), "tid"), 102); /* busiest first */
    CHECK_EQ_I(num(p1, "pid"), 200);
    CHECK_EQ_I(num(p1, "ppid"), 100);
    CHECK(NEAR(num(p1, "load"), 1.8));
    CHECK_EQ_I(num(p2, "pid"), 300);
    CHECK(sop__v_get(p2, "born") != NULL);
    sop__v_free(ev);

    ev = sop__v_obj(); /* one poll is no window */
    t.polls = 1;
    sop__bridge_sched(ev, &t, 2, 2);
    CHECK(sop__v_get(ev, "sched") == NULL);
    sop__v_free(ev);

    sop__tree_free(&t);
    sop__missing_free(&m);
    close(r0);
    close(r1);
}

static void test_budget(void)
{
    CHECK_EQ_I(sop__cpulist_intersect_count("0-3,8", "2-9"), 3);
    CHECK_EQ_I(sop__cpulist_intersect_count("0-3\n", "4-7"), 0);
    CHECK_EQ_I(sop__cpulist_intersect_count("0-x", "1"), -1);
    CHECK_EQ_I(sop__cpulist_intersect_count("5000", "1"), -1);
    sop_cpu_budget b;
    /* affinity 0-3, cpuset 2-5: the job may use 2 and 3 only (the counts alone say 4) */
    sop__cpu_budget(8, "0-3", 4, "2-5", 4, NAN, &b);
    CHECK_EQ_I(b.effective_cpus, 2);
    CHECK(NEAR(b.capacity_cpus, 2.0));
    sop__cpu_budget(8, "0-7", 8, "", SOP_NA, 1.5, &b); /* quota 1.5 */
    CHECK_EQ_I(b.effective_cpus, 2);
    CHECK(NEAR(b.capacity_cpus, 1.5));
    sop__cpu_budget(4, NULL, SOP_NA, NULL, SOP_NA, NAN, &b); /* host only */
    CHECK_EQ_I(b.effective_cpus, 4);
    sop__cpu_budget(SOP_NA, NULL, SOP_NA, NULL, SOP_NA, NAN, &b);
    CHECK_EQ_I(b.effective_cpus, SOP_NA);
    CHECK(isnan(b.capacity_cpus));
    sop__cpu_budget(8, "0-3", 4, "garbage", 6, NAN, &b); /* unparsable list: counts */
    CHECK_EQ_I(b.effective_cpus, 4);
}

int main(void)
{
    test_accounting();
    test_fixture_tree();
    test_budget();
    return t_done();
}
