/* test_api.c — the embedding API through the public header only, linked against the shared
 * libsop: site files, the probe mask, self-collection, sop_diagnose, summaries, the watch
 * thread, version; and that the library writes nothing to stdout/stderr meanwhile. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sop.h"
#include "t.h"

static const char SITE[] =
    "thresholds { site_rss_kb = 1 }\n"
    "disable \"gil.contention\"\n"
    "rule { id = \"site.rss\", section = \"2\", severity = \"info\",\n"
    "  check = function(ev, th)\n"
    "    if ev.proc and ev.proc.rss_kb and ev.proc.rss_kb > th.site_rss_kb then\n"
    "      return hit { symptom = \"rss\", evidence = fmt(\"rss %d kB\", ev.proc.rss_kb),\n"
    "                   cause = \"c\", fix = \"f\", verify = \"v\", refs = { "
    "\"https://example.org\" } }\n"
    "    end\n"
    "    return clear(\"small\")\n"
    "  end }\n";

static int has_rule(const sop_engine *e, const char *id)
{
    for (size_t i = 0; i < sop_rule_count(e); i++)
        if (strcmp(sop_rule_id(e, i), id) == 0)
            return 1;
    return 0;
}

static char *report_json(sop_engine *e, const sop_evidence *ev)
{
    sop_report *r = NULL;
    char *out = NULL;
    if (sop_evaluate(e, ev, &r) == 0)
        sop_report_render(r, SOP_FORMAT_JSON, "en", &out);
    sop_report_free(r);
    return out;
}

static void test_site(void)
{
    sop_engine *e = NULL;
    CHECK_EQ_I(sop_engine_new(&e), 0);
    CHECK_EQ_I(sop_load_site_string(e, "site.lua", SITE, strlen(SITE)), SOP_ENORULES);
    CHECK_EQ_I(sop_load_rules_default(e), 0);
    size_t base = sop_rule_count(e);
    CHECK(base > 3);
    CHECK(has_rule(e, "gil.contention"));
    CHECK_EQ_I(sop_set_threshold(e, "site_rss_kb", "5"), SOP_EUNKNOWNKEY);

    CHECK_EQ_I(sop_load_site_string(e, "site.lua", SITE, strlen(SITE)), 0);
    CHECK_EQ_I(sop_rule_count(e), base); /* one disabled, one added */
    CHECK(!has_rule(e, "gil.contention"));
    CHECK(has_rule(e, "site.rss"));
    CHECK_EQ_S(sop_rule_id(e, sop_rule_count(e) - 1), "site.rss"); /* after the pack's */

    sop_collect_opts o;
    sop_collect_opts_init(&o);
    o.duration_s = 0;
    sop_evidence *ev = NULL;
    CHECK_EQ_I(sop_collect_self(e, &o, &ev), 0);
    char *js = report_json(e, ev);
    CHECK(js && strstr(js, "\"site.rss\"") && strstr(js, "rss "));
    /* The site's threshold is settable, and the override survives a reload of the pack. */
    CHECK_EQ_I(sop_set_threshold(e, "site_rss_kb", "1e12"), 0);
    CHECK_EQ_I(sop_load_rules_default(e), 0);
    CHECK_EQ_I(sop_rule_count(e), base);
    CHECK(has_rule(e, "site.rss") && !has_rule(e, "gil.contention"));
    sop_free(js);
    js = report_json(e, ev);
    CHECK(js && strstr(js, "\"small\"")); /* cleared now */
    sop_free(js);

    /* A failing site file leaves the engine as it was, and says where. */
    static const char BAD[] = "thresholds { x_pct = 3 }\n\ndisable \"no.such.rule\"\n";
    CHECK_EQ_I(sop_load_site_string(e, "bad.lua", BAD, strlen(BAD)), SOP_ERULES);
    CHECK(strstr(sop_last_error(e), "bad.lua:3") != NULL);
    CHECK(strstr(sop_last_error(e), "no rule 'no.such.rule'") != NULL);
    CHECK_EQ_I(sop_rule_count(e), base);
    CHECK(has_rule(e, "site.rss"));
    static const char SYNTAX[] = "rule {";
    CHECK_EQ_I(sop_load_site_string(e, "syn.lua", SYNTAX, strlen(SYNTAX)), SOP_ERULES);
    CHECK(strstr(sop_last_error(e), "syn.lua:1") != NULL);
    static const char DUP[] = "rule { id = \"asyncio.loop_blocked\", section = \"5\", severity = "
                              "\"warn\", check = function() return clear(\"x\") end }";
    CHECK_EQ_I(sop_load_site_string(e, "dup.lua", DUP, strlen(DUP)), SOP_ERULES);
    CHECK(strstr(sop_last_error(e), "duplicate rule id") != NULL);
    /* ... but replacing a rule is disable + rule. */
    static const char REPL[] = "disable { \"asyncio.loop_blocked\" }\n"
                               "rule { id = \"asyncio.loop_blocked\", section = \"5\", severity = "
                               "\"warn\", check = function() return clear(\"replaced\") end }";
    sop_engine_free(e);
    CHECK_EQ_I(sop_engine_new(&e), 0);
    CHECK_EQ_I(sop_load_rules_default(e), 0);
    CHECK_EQ_I(sop_load_site_string(e, "repl.lua", REPL, strlen(REPL)), 0);
    CHECK_EQ_I(sop_rule_count(e), base);
    js = report_json(e, ev);
    CHECK(js && strstr(js, "\"replaced\""));
    sop_free(js);
    /* Removing the site file restores the pack. */
    CHECK_EQ_I(sop_load_site_file(e, NULL), 0);
    CHECK(has_rule(e, "gil.contention"));
    CHECK_EQ_I(sop_load_site_file(e, "/nonexistent/site.lua"), SOP_ERULES);
    CHECK(strstr(sop_last_error(e), "/nonexistent/site.lua") != NULL);
    /* The site DSL is top-level only: disable() from a rule is a rule error, not a crash. */
    static const char LATE[] = "rule { id = \"late\", section = \"2\", severity = \"info\", "
                               "check = function() disable \"cpu.busy\" end }";
    CHECK_EQ_I(sop_load_site_string(e, "late.lua", LATE, strlen(LATE)), 0);
    js = report_json(e, ev);
    CHECK(js && strstr(js, "\"rule_errors\"") && strstr(js, "late.lua:1"));
    sop_free(js);
    sop_evidence_free(ev);
    sop_engine_free(e);
}

static void test_probes(void)
{
    sop_engine *e = NULL;
    CHECK_EQ_I(sop_engine_new(&e), 0);
    sop_collect_opts o;
    sop_collect_opts_init(&o);
    CHECK_EQ_I(o.probes, SOP_PROBE_ALL);
    o.duration_s = 0;
    sop_evidence *ev = NULL;
    char *js = NULL;
    CHECK_EQ_I(sop_collect_self(e, &o, &ev), 0);
    CHECK_EQ_I(sop_evidence_to_json(ev, 0, &js), 0);
    CHECK(js && strstr(js, "\"threads\":[") && strstr(js, "\"cgroup\":{"));
    CHECK(js && strstr(js, "\"ncpu\""));
    sop_free(js);
    sop_evidence_free(ev);
    o.probes = 0;
    CHECK_EQ_I(sop_collect(e, getpid(), &o, &ev), 0);
    CHECK_EQ_I(sop_evidence_to_json(ev, 0, &js), 0);
    CHECK(js && !strstr(js, "\"threads\":[") && !strstr(js, "\"cgroup\":{"));
    CHECK(js && !strstr(js, "\"ncpu\"") && !strstr(js, "\"python\":{"));
    CHECK(js && strstr(js, "\"rss_kb\"")); /* the process probe always runs */
    sop_free(js);
    sop_evidence_free(ev);
    /* Rules still run over the thin evidence (they say "unknown"). */
    CHECK_EQ_I(sop_load_rules_default(e), 0);
    char *out = NULL;
    int problem = -1;
    CHECK_EQ_I(sop_diagnose(e, 0, &o, SOP_FORMAT_JSON, "en", &out, &problem), 0);
    CHECK(out && strstr(out, "\"unknown\"") && strstr(out, "\"findings\""));
    CHECK(problem == 0 || problem == 1);
    sop_free(out);
    CHECK_EQ_I(sop_diagnose(e, 0, &o, SOP_FORMAT_MD, "zh", &out, NULL), 0);
    CHECK(out && strstr(out, "# "));
    sop_free(out);
    CHECK_EQ_I(sop_diagnose(e, 0, &o, SOP_FORMAT_MD, "fr", &out, NULL), SOP_EINVAL);
    CHECK(out == NULL);
    CHECK_EQ_I(sop_diagnose(e, -5, &o, SOP_FORMAT_MD, "en", &out, NULL), SOP_EINVAL);
    CHECK_EQ_I(sop_diagnose(e, 0, &o, (sop_format)99, "en", &out, NULL), SOP_EINVAL);
    /* The format table: each row describes its own value; names find their rows. */
    size_t nformats = 0;
    for (const sop_format_info *f; (f = sop_format_at(nformats)) != NULL; nformats++) {
        CHECK_EQ_I((int)f->format, (int)nformats);
        CHECK(sop_format_find(f->name) == f);
        CHECK(f->ext[0] == '.' && strchr(f->mime, '/') != NULL);
    }
    CHECK(nformats >= 4);
    CHECK(sop_format_find("xml") == NULL && sop_format_find(NULL) == NULL);
    CHECK((sop_format_find("html")->flags & SOP_FORMAT_MERGE) == 0);
    sop_engine_free(e);
}

static void test_summary(void)
{
    sop_engine *e = NULL;
    CHECK_EQ_I(sop_engine_new(&e), 0);
    static const char PACK[] =
        "rule { id = \"a.one\", section = \"2\", severity = \"warn\", check = function(ev) "
        "return hit { symptom = \"s\", evidence = { en = \"tab\\there\", zh = \"zh text\" }, "
        "cause = \"c\", fix = \"f\", verify = \"v\", refs = \"https://example.org\" } end }\n"
        "rule { id = \"b.two\", section = \"2\", severity = \"high\", check = function(ev) "
        "return hit { symptom = \"s\", evidence = \"big\", cause = \"c\", fix = \"f\", "
        "verify = \"v\", refs = \"https://example.org\" } end }\n"
        "rule { id = \"c.three\", section = \"2\", severity = \"info\", check = function(ev) "
        "return clear(\"fine\") end }\n";
    CHECK_EQ_I(sop_load_rules_string(e, "p.lua", PACK, strlen(PACK)), 0);
    sop_evidence *ev = NULL;
    static const char EV[] = "{\"schema\":1,\"pid\":7,\"host\":{}}";
    CHECK_EQ_I(sop_evidence_from_json(e, EV, strlen(EV), &ev), 0);
    sop_report *r = NULL;
    CHECK_EQ_I(sop_evaluate(e, ev, &r), 0);
    char *s = NULL;
    CHECK_EQ_I(sop_report_summary(r, "en", &s), 0);
    CHECK_EQ_S(s, "2 findings: b.two (high), a.one (warn) | top: big");
    sop_free(s);
    sop_report_free(r);
    static const char PACK2[] =
        "rule { id = \"a.one\", section = \"2\", severity = \"warn\", check = function(ev) "
        "return hit { symptom = \"s\", evidence = { en = \"tab\\there\", zh = \"zh text\" }, "
        "cause = \"c\", fix = \"f\", verify = \"v\", refs = \"https://example.org\" } end }\n";
    CHECK_EQ_I(sop_load_rules_string(e, "p2.lua", PACK2, strlen(PACK2)), 0);
    CHECK_EQ_I(sop_evaluate(e, ev, &r), 0);
    CHECK_EQ_I(sop_report_summary(r, "en", &s), 0);
    CHECK_EQ_S(s, "1 finding: a.one (warn) | top: tab\\x09here");
    sop_free(s);
    CHECK_EQ_I(sop_report_summary(r, "zh", &s), 0);
    CHECK_EQ_S(s, "1 finding: a.one (warn) | top: zh text");
    sop_free(s);
    sop_report_free(r);
    static const char PACK3[] = "rule { id = \"c.three\", section = \"2\", severity = \"info\", "
                                "check = function(ev) return clear(\"fine\") end }\n";
    CHECK_EQ_I(sop_load_rules_string(e, "p3.lua", PACK3, strlen(PACK3)), 0);
    CHECK_EQ_I(sop_evaluate(e, ev, &r), 0);
    CHECK_EQ_I(sop_report_summary(r, NULL, &s), 0);
    CHECK_EQ_S(s, "no findings (1 cleared, 0 unknown)");
    sop_free(s);
    sop_report_free(r);
    sop_evidence_free(ev);
    sop_engine_free(e);
}

typedef struct {
    _Atomic int runs, on_demand, bad, self_freed;
    sop_watch *w;
    int free_at;
} watch_state;

static void on_event(const sop_watch_event *ev, void *user)
{
    watch_state *s = user;
    if (ev->rc != 0 || !ev->report || !ev->evidence || ev->pid != (int)getpid() ||
        ev->seq != (unsigned long long)atomic_load(&s->runs) + 1 || !(ev->run_ms >= 0))
        atomic_fetch_add(&s->bad, 1);
    char *sum = NULL;
    if (ev->report && sop_report_summary(ev->report, "en", &sum) != 0)
        atomic_fetch_add(&s->bad, 1);
    sop_free(sum);
    char *om = NULL;
    if (ev->report &&
        (sop_report_openmetrics(ev->report, ev->evidence, &om) != 0 ||
         !strstr(om, "sop_rule_hit{") || !strstr(om, "sop_last_window_timestamp_seconds ")))
        atomic_fetch_add(&s->bad, 1);
    sop_free(om);
    if (ev->on_demand)
        atomic_fetch_add(&s->on_demand, 1);
    int n = atomic_fetch_add(&s->runs, 1) + 1;
    if (s->free_at && n == s->free_at) {
        sop_watch_free(s->w); /* from its own callback */
        atomic_store(&s->self_freed, 1);
    }
}

static void wait_for(_Atomic int *v, int at_least, double max_s)
{
    for (int i = 0; i < (int)(max_s * 100) && atomic_load(v) < at_least; i++)
        usleep(10000);
}

static void test_watch(void)
{
    sop_watch_config cfg;
    sop_watch_config_init(&cfg);
    cfg.collect.duration_s = 0.05;
    sop_engine *e = NULL;
    sop_watch *w = (sop_watch *)&cfg;
    /* No rules: refused (and the engine is taken over, so nothing leaks). */
    CHECK_EQ_I(sop_engine_new(&e), 0);
    CHECK_EQ_I(sop_watch_new(e, &cfg, on_event, NULL, &w), SOP_ENORULES);
    CHECK(w == NULL);
    CHECK_EQ_I(sop_watch_new(NULL, &cfg, on_event, NULL, &w), SOP_EINVAL);

    /* On demand only: nothing runs until triggered. */
    watch_state s = {0};
    CHECK_EQ_I(sop_engine_new(&e), 0);
    CHECK_EQ_I(sop_load_rules_default(e), 0);
    CHECK_EQ_I(sop_watch_new(e, &cfg, on_event, &s, &w), 0);
    usleep(300000);
    CHECK_EQ_I(atomic_load(&s.runs), 0);
    char *om = NULL;
    CHECK_EQ_I(sop_watch_openmetrics(w, &om), 0); /* before any run: the counters only */
    CHECK(om && strstr(om, "sop_watch_runs_total 0\n") && !strstr(om, "sop_rule_hit"));
    sop_free(om);
    CHECK_EQ_I(sop_watch_trigger(w), 0);
    wait_for(&s.runs, 1, 30);
    CHECK_EQ_I(atomic_load(&s.runs), 1);
    om = NULL;
    CHECK_EQ_I(sop_watch_openmetrics(w, &om), 0); /* the last report's series */
    CHECK(om && strstr(om, "sop_rule_hit{rule=\"oom.killed\"") &&
          strstr(om, "sop_watch_runs_total 1\n") && strstr(om, "sop_watch_failed_runs_total 0\n"));
    sop_free(om);
    CHECK_EQ_I(atomic_load(&s.on_demand), 1);
    CHECK_EQ_I(sop_watch_runs(w), 1);
    sop_watch_free(w);
    CHECK_EQ_I(atomic_load(&s.bad), 0);

    /* Periodic, plus a trigger; freed from the main thread while it may be running. */
    watch_state p = {0};
    cfg.interval_s = 0.1;
    CHECK_EQ_I(sop_engine_new(&e), 0);
    CHECK_EQ_I(sop_load_rules_default(e), 0);
    CHECK_EQ_I(sop_watch_new(e, &cfg, on_event, &p, &w), 0);
    wait_for(&p.runs, 2, 30);
    sop_watch_trigger(w);
    wait_for(&p.on_demand, 1, 30);
    sop_watch_free(w);
    int runs = atomic_load(&p.runs);
    CHECK(runs >= 3);
    CHECK(atomic_load(&p.on_demand) >= 1);
    CHECK_EQ_I(atomic_load(&p.bad), 0);
    usleep(300000);
    CHECK_EQ_I(atomic_load(&p.runs), runs); /* stopped means stopped */

    /* Freed from its own callback. */
    watch_state f = {0};
    f.free_at = 2;
    CHECK_EQ_I(sop_engine_new(&e), 0);
    CHECK_EQ_I(sop_load_rules_default(e), 0);
    CHECK_EQ_I(sop_watch_new(e, &cfg, on_event, &f, &f.w), 0);
    wait_for(&f.self_freed, 1, 30);
    usleep(400000);
    CHECK_EQ_I(atomic_load(&f.self_freed), 1);
    CHECK_EQ_I(atomic_load(&f.runs), 2);
    CHECK_EQ_I(atomic_load(&f.bad), 0);
}

static void *linger(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* sop_process_read: this process, a gone pid, and a zombie leader whose thread runs on (alive)
 * and then reaped (gone). */
static void test_process(void)
{
    sop_process p;
    CHECK_EQ_I(sop_process_read(getpid(), &p), 0);
    CHECK(p.alive == 1 && p.ppid == getppid() && p.start_ticks > 0 && p.state != 'Z');
    CHECK(strstr("embed_test_api", p.comm) != NULL || strstr(p.comm, "embed_test") != NULL);
    CHECK_EQ_I(sop_process_read(0, &p), SOP_EINVAL);
    pid_t child = fork();
    if (child == 0) { /* the leader exits, its thread runs on */
        pthread_t t;
        if (pthread_create(&t, NULL, linger, NULL) == 0)
            pthread_exit(NULL);
        _exit(1);
    }
    CHECK(child > 0);
    if (child <= 0)
        return;
    bool zombie = false;
    for (int i = 0; i < 200 && !zombie; i++) {
        zombie = sop_process_read(child, &p) == 0 && p.state == 'Z';
        if (!zombie)
            usleep(10000);
    }
    CHECK(zombie && p.alive == 1);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CHECK_EQ_I(sop_process_read(child, &p), SOP_ENOTARGET);
}

/* sop_process_env: a child's rank variables by name; a name off the allow-list reads as unset
 * whatever its value; a gone pid; bad arguments. */
static void test_process_env(void)
{
    int go[2];
    if (pipe(go) < 0)
        return;
    pid_t child = fork();
    if (child == 0) {
        close(go[1]);
        char *envp[] = {"SECRET_TOKEN=tok-live", "RANK=3", "SLURM_JOB_ID=4242", "RANK=9",
                        "LOCAL_RANK=1",          NULL};
        char *argv[] = {"cat", NULL};
        dup2(go[0], 0);
        execve("/bin/cat", argv, envp);
        _exit(127);
    }
    close(go[0]);
    CHECK(child > 0);
    if (child <= 0)
        return;
    const char *names[] = {"RANK", "SECRET_TOKEN", "SLURM_JOB_ID", "WORLD_SIZE", "LOCAL_RANK"};
    char vals[5][8];
    int set = -1;
    for (int i = 0; i < 200; i++) { /* until it runs cat (its environment set by execve) */
        set = sop_process_env(child, names, 5, vals[0], sizeof vals[0]);
        if (set == 3)
            break;
        usleep(10000);
    }
    CHECK_EQ_I(set, 3);
    CHECK_EQ_S(vals[0], "3"); /* the first definition, as getenv sees */
    CHECK_EQ_S(vals[1], "");  /* not allow-listed */
    CHECK_EQ_S(vals[2], "4242");
    CHECK_EQ_S(vals[3], "");
    CHECK_EQ_S(vals[4], "1");
    char small[3];
    const char *job[] = {"SLURM_JOB_ID"};
    CHECK_EQ_I(sop_process_env(child, job, 1, small, sizeof small), 1);
    CHECK_EQ_S(small, "42"); /* cut to fit */
    CHECK_EQ_I(sop_process_env(child, names, 5, NULL, 8), SOP_EINVAL);
    CHECK_EQ_I(sop_process_env(0, names, 1, vals[0], 8), SOP_EINVAL);
    CHECK_EQ_I(sop_process_env(child, NULL, 0, NULL, 0), 0);
    close(go[1]);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CHECK_EQ_I(sop_process_env(child, names, 5, vals[0], sizeof vals[0]), SOP_ENOTARGET);
}

/* sop_escape: a caller's own text escaped as sop's outputs are, for each kind. */
static void test_escape(void)
{
    /* a tab, ESC, DEL, a C1 CSI, RLO (U+202E), a byte that is not UTF-8, a quote, a pipe, é */
    const char *hostile = "a\tb\x1b[31m\x7f\xc2\x9b\xe2\x80\xaez\xff\"|\xc3\xa9";
    char *o = NULL;
    CHECK_EQ_I(sop_escape(hostile, SOP_ESCAPE_TEXT, &o), 0);
    CHECK_EQ_S(o, "a\\x09b\\x1b[31m\\x7f\\u009b\\u202ez\\xff\"|\xc3\xa9");
    sop_free(o);
    CHECK_EQ_I(sop_escape(hostile, SOP_ESCAPE_JSON, &o), 0);
    CHECK_EQ_S(o, "\"a\\tb\\u001b[31m\\u007f\\u009b\\u202ez\\ufffd\\\"|\xc3\xa9\"");
    sop_free(o);
    CHECK_EQ_I(sop_escape("[x](u) <b>|", SOP_ESCAPE_MARKDOWN, &o), 0);
    CHECK_EQ_S(o, "\\[x\\](u) \\<b\\>\\|");
    sop_free(o);
    o = NULL;
    CHECK_EQ_I(sop_escape(NULL, SOP_ESCAPE_TEXT, &o), SOP_EINVAL);
    CHECK_EQ_I(sop_escape("x", (sop_escape_kind)7, &o), SOP_EINVAL);
    CHECK(o == NULL);
}

int main(void)
{
    CHECK_EQ_S(sop_version(), SOP_VERSION_STRING);
    CHECK_EQ_I(sop_version_hex(), SOP_VERSION_HEX);
    CHECK_EQ_I(SOP_VERSION_HEX,
               (SOP_VERSION_MAJOR << 16) | (SOP_VERSION_MINOR << 8) | SOP_VERSION_PATCH);
    /* Everything the library does below must leave stdout and stderr untouched. */
    fflush(stdout);
    fflush(stderr);
    FILE *cap = tmpfile();
    int out = dup(1), err = dup(2);
    if (!cap || out < 0 || err < 0)
        return 2;
    dup2(fileno(cap), 1);
    dup2(fileno(cap), 2);
    test_escape();
    test_site();
    test_probes();
    test_summary();
    test_watch();
    test_process();
    test_process_env();
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(err, 2);
    long written = ftell(cap) >= 0 ? (long)lseek(fileno(cap), 0, SEEK_END) : -1;
    if (written > 0) {
        char buf[4096];
        lseek(fileno(cap), 0, SEEK_SET);
        ssize_t n = read(fileno(cap), buf, sizeof buf - 1);
        fprintf(stderr,
                "written to stdout/stderr during the test (library output, or failed "
                "CHECKs):\n%.*s\n",
                (int)(n > 0 ? n : 0), buf);
    }
    CHECK_EQ_I(written, 0);
    return t_done();
}
