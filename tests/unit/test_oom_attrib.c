/* test_oom_attrib.c — oom.killed counts a kernel-log OOM kill only when it is the target's: kernel
 * log lines (fixtures/kmsg/v2_nested_jobs.txt: an unrelated test process killed in a cgroup nested
 * under the target's, and a worker of the target killed in a cgroup below it) and v2
 * memory.events / memory.events.local text go through the parsers and the bridges into evidence,
 * and the default rules judge it. Depends on probes (kmsg, cgroup, host), the bridge, sop.h, t.h.
 */
#include <math.h>

#include "bridge/bridge.h"
#include "cgroup.h"
#include "engine.h"
#include "host.h"
#include "kmsg.h"
#include "sop.h"
#include "t.h"
#include "value.h"

#define BTIME 1700000000.0
#define TARGET 4242

/* Evidence of a live target in cgroup `path` (v2), started before both kills; `log` NULL: the
 * kernel log was not readable. events / events_local: memory.events(.local) text or NULL. A
 * worker pid > 0 is listed in sched.procs as a descendant that exited during the window. */
static sop_evidence *make_ev(const char *path, const char *log, const char *events,
                             const char *events_local, int worker)
{
    static sop_host h;
    static sop_oom_list l;
    static sop_cgroup cg;
    sop_value *ev = sop__v_obj();
    double now = BTIME + 9600.0;
    sop__v_set_int(ev, "schema", 1);
    sop__v_set_int(ev, "pid", TARGET);
    sop__v_set_bool(ev, "alive", true);
    sop__v_set_dbl(ev, "duration_s", 2.0);
    sop__v_set_dbl(ev, "collected_at", now);
    sop_value *proc = sop__v_obj_at(ev, "proc");
    sop__v_set_int(proc, "pid", TARGET);
    sop__v_set_str(proc, "comm", "python3");
    sop__v_set_dbl(proc, "start_time_s", BTIME + 8000.0);

    sop__host_init(&h);
    sop__oom_list_init(&l, BTIME);
    if (log)
        CHECK_EQ_I(sop__parse_kmsg(log, &l, BTIME), 0);
    sop__bridge_host(ev, &h, &l, now);

    sop__cgroup_init(&cg);
    char line[600];
    snprintf(line, sizeof line, "0::%s\n", path);
    CHECK_EQ_I(sop__parse_proc_cgroup(line, &cg), 0);
    if (events)
        CHECK_EQ_I(sop__parse_memory_events(events, &cg), 0);
    if (events_local)
        CHECK_EQ_I(sop__parse_memory_events_local(events_local, &cg), 0);
    sop__bridge_cgroup(ev, &cg);

    if (worker > 0) {
        sop_value *s = sop__v_obj_at(ev, "sched");
        sop__v_set_dbl(s, "window_s", 2.0);
        sop__v_set_dbl(s, "runnable_load", 0.5);
        sop_value *procs = sop__v_arr_at(s, "procs");
        sop_value *p = sop__v_obj();
        sop__v_set_int(p, "pid", worker);
        sop__v_set_bool(p, "exited", true);
        sop__v_push(procs, p);
    }
    sop_evidence *out = calloc(1, sizeof *out);
    out->tree = ev;
    return out;
}

/* oom.killed's severity in the report, or "" when it did not fire. */
static const char *oom_severity(sop_engine *e, sop_evidence *ev, char *buf, size_t n)
{
    sop_report *r = NULL;
    buf[0] = '\0';
    CHECK_EQ_I(sop_evaluate(e, ev, &r), 0);
    const char *id, *sev;
    for (size_t i = 0; r && sop_report_finding(r, i, &id, &sev) == 0; i++)
        if (strcmp(id, "oom.killed") == 0)
            snprintf(buf, n, "%s", sev);
    sop_report_free(r);
    sop__v_free(ev->tree);
    free(ev);
    return buf;
}

int main(void)
{
    char *log = t_slurp("kmsg/v2_nested_jobs.txt", NULL);
    CHECK(log != NULL);
    sop_engine *e = NULL;
    CHECK_EQ_I(sop_engine_new(&e), 0);
    CHECK_EQ_I(sop_load_rules_default(e), 0);
    char sev[16];
    const char *ev2 = "low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\noom_group_kill 0\n";

    /* the parser: memory.events.local's oom_kill, nothing else of it kept */
    sop_cgroup cg;
    sop__cgroup_init(&cg);
    CHECK_EQ_I(sop__parse_memory_events_local("low 0\nhigh 0\nmax 0\noom 0\noom_kill 1\n", &cg), 0);
    CHECK_EQ_I(cg.ev_local_oom_kill, 1);
    CHECK_EQ_I(cg.ev_oom_kill, SOP_NA);

    /* Target directly in /session: both kills are in groups nested under it, neither pid is in
     * its tree: another job's, info at most (before: high). */
    CHECK_EQ_S(oom_severity(e, make_ev("/session", log, ev2, "oom_kill 0\n", 0), sev, sizeof sev),
               "info");
    /* The same without memory.events.local (kernel < 5.2): the hierarchical counter 2 is
     * explained by the records below, so no counter warn either. */
    CHECK_EQ_S(oom_severity(e, make_ev("/session", log, ev2, NULL, 0), sev, sizeof sev), "info");
    /* Target in /session/job with its worker 4401 polled over the window: the kill in
     * /session/job/loader is its own (high); the one in the sibling /session/sop-test-7 is not. */
    CHECK_EQ_S(
        oom_severity(e, make_ev("/session/job", log, ev2, "oom_kill 0\n", 4401), sev, sizeof sev),
        "high");
    /* ... and without the worker in the tree, info only. */
    CHECK_EQ_S(
        oom_severity(e, make_ev("/session/job", log, ev2, "oom_kill 0\n", 0), sev, sizeof sev),
        "info");
    /* Kernel log unreadable: the local counter decides (0: clear; 1: warn), not memory.events. */
    CHECK_EQ_S(oom_severity(e, make_ev("/session", NULL, ev2, "oom_kill 0\n", 0), sev, sizeof sev),
               "");
    CHECK_EQ_S(oom_severity(e, make_ev("/session", NULL, ev2, "oom_kill 1\n", 0), sev, sizeof sev),
               "warn");

    sop_engine_free(e);
    free(log);
    return t_done();
}
