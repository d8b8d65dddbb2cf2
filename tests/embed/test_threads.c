/* test_threads.c — engines in parallel threads on live processes: each thread builds its own
 * engine (default pack + a site file), collects a live CPython child and itself, evaluates and
 * renders; all of them also evaluate one shared evidence and render one shared report, and a
 * watch runs alongside. Built twice: normally, and under ThreadSanitizer (test_tsan.sh). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sop.h"
#include "t.h"

#define NTHREADS 4
#define ROUNDS 2

static const char SITE[] =
    "thresholds { busy_thread_pct = 70 }\n"
    "rule { id = \"site.threads\", section = \"3\", severity = \"info\",\n"
    "  check = function(ev) return clear(fmt(\"%d threads\", #(ev.threads or {}))) end }\n";

typedef struct {
    int target;                 /* a live CPython process */
    const sop_evidence *shared; /* evaluated by every thread */
    const sop_report *shared_report;
    const char *shared_md; /* what shared_report renders to, made before the threads */
    int fails;
    size_t rules;
} job;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void fail(job *j, const char *what, const char *detail)
{
    pthread_mutex_lock(&mu);
    j->fails++;
    fprintf(stderr, "thread %lu: %s: %s\n", (unsigned long)pthread_self(), what,
            detail ? detail : "");
    pthread_mutex_unlock(&mu);
}

static void *worker(void *arg)
{
    job *j = arg;
    for (int round = 0; round < ROUNDS; round++) {
        sop_engine *e = NULL;
        if (sop_engine_new(&e) != 0 || sop_load_rules_default(e) != 0 ||
            sop_load_site_string(e, "site.lua", SITE, strlen(SITE)) != 0) {
            fail(j, "engine", e ? sop_last_error(e) : "new");
            sop_engine_free(e);
            continue;
        }
        if (sop_rule_count(e) != j->rules)
            fail(j, "rule count", NULL);
        sop_collect_opts o;
        sop_collect_opts_init(&o);
        o.duration_s = 0.2;
        int pids[2] = {j->target, (int)getpid()};
        for (int k = 0; k < 2; k++) {
            sop_evidence *ev = NULL;
            sop_report *r = NULL;
            int rc = k ? sop_collect_self(e, &o, &ev) : sop_collect(e, pids[k], &o, &ev);
            if (rc != 0) {
                fail(j, "collect", sop_last_error(e));
                continue;
            }
            if (sop_evaluate(e, ev, &r) != 0) {
                fail(j, "evaluate", sop_last_error(e));
            } else {
                static const sop_format fmts[] = {SOP_FORMAT_MD, SOP_FORMAT_JSON, SOP_FORMAT_TEXT};
                for (int f = 0; f < 3; f++) {
                    char *out = NULL;
                    if (sop_report_render(r, fmts[f], f == 1 ? "zh" : "en", &out) != 0 || !out ||
                        !*out)
                        fail(j, "render", NULL);
                    else if (f == 1 && !strstr(out, "site.threads"))
                        fail(j, "site rule missing from the report", NULL);
                    sop_free(out);
                }
                char *js = NULL;
                if (sop_evidence_to_json(ev, 0, &js) != 0 ||
                    (k == 0 && !strstr(js, "\"python\":{")))
                    fail(j, "evidence of the CPython target has no python part", NULL);
                sop_free(js);
            }
            sop_report_free(r);
            sop_evidence_free(ev);
        }
        /* Shared, read-only objects from several threads at once. */
        sop_report *r = NULL;
        if (sop_evaluate(e, j->shared, &r) != 0)
            fail(j, "evaluate shared", sop_last_error(e));
        sop_report_free(r);
        char *md = NULL;
        if (sop_report_render(j->shared_report, SOP_FORMAT_MD, "en", &md) != 0 ||
            strcmp(md, j->shared_md) != 0)
            fail(j, "shared report renders differently", NULL);
        sop_free(md);
        char *dump = NULL;
        int drc = sop_dump(e, j->target, 0, SOP_FORMAT_JSON, &dump);
        if (drc != 0 || !strstr(dump, "\"frames\""))
            fail(j, "dump", dump);
        sop_free(dump);
        sop_engine_free(e);
    }
    return NULL;
}

static _Atomic int watch_runs, watch_bad;
static void on_event(const sop_watch_event *ev, void *user)
{
    (void)user;
    if (ev->rc != 0 || !ev->report)
        watch_bad++;
    watch_runs++;
}

int main(void)
{
    pid_t child = fork();
    if (child == 0) {
        execl("/usr/bin/python3", "python3", "-c",
              "import threading, time\n"
              "def spin():\n"
              "    while True: sum(range(1000)); time.sleep(0.001)\n"
              "for _ in range(2): threading.Thread(target=spin, daemon=True).start()\n"
              "time.sleep(600)\n",
              (char *)NULL);
        _exit(127);
    }
    usleep(800000); /* let the interpreter start */

    job j = {.target = (int)child};
    sop_engine *e = NULL;
    CHECK_EQ_I(sop_engine_new(&e), 0);
    CHECK_EQ_I(sop_load_rules_default(e), 0);
    CHECK_EQ_I(sop_load_site_string(e, "site.lua", SITE, strlen(SITE)), 0);
    j.rules = sop_rule_count(e);
    sop_collect_opts o;
    sop_collect_opts_init(&o);
    o.duration_s = 0.2;
    sop_evidence *shared = NULL;
    sop_report *shared_report = NULL;
    char *shared_md = NULL;
    CHECK_EQ_I(sop_collect(e, (int)child, &o, &shared), 0);
    CHECK_EQ_I(sop_evaluate(e, shared, &shared_report), 0);
    CHECK_EQ_I(sop_report_render(shared_report, SOP_FORMAT_MD, "en", &shared_md), 0);
    j.shared = shared;
    j.shared_report = shared_report;
    j.shared_md = shared_md;

    sop_watch_config wc;
    sop_watch_config_init(&wc);
    wc.pid = (int)child;
    wc.interval_s = 0.05;
    wc.collect.duration_s = 0.05;
    sop_engine *we = NULL;
    CHECK_EQ_I(sop_engine_new(&we), 0);
    CHECK_EQ_I(sop_load_rules_default(we), 0);
    sop_watch *w = NULL;
    CHECK_EQ_I(sop_watch_new(we, &wc, on_event, NULL, &w), 0);

    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        CHECK_EQ_I(pthread_create(&t[i], NULL, worker, &j), 0);
    for (int i = 0; i < NTHREADS; i++) {
        sop_watch_trigger(w);
        pthread_join(t[i], NULL);
    }
    sop_watch_free(w);
    CHECK_EQ_I(j.fails, 0);
    CHECK(watch_runs >= 1);
    CHECK_EQ_I(watch_bad, 0);

    sop_free(shared_md);
    sop_report_free(shared_report);
    sop_evidence_free(shared);
    sop_engine_free(e);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return t_done();
}
