/* test_rules.c — the sandboxed rule runner (engine/rules/rules.c) and the value <-> Lua bridge
 * (engine/rules/lua_value.c): sandbox escapes, limits, verdicts, thresholds, require, timing.
 * Fixtures: tests/fixtures/rules/. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <time.h>

#include "lua_value.h"
#include "pattern_cost.h"
#include "rules.h"
#include "sop.h"
#include "t.h"

static char err[1024];

/* A small evidence tree: proc {pid, rss_kb}, threads [{tid 11}, {tid 12}]. */
static sop_value *small_ev(void)
{
    sop_value *ev = sop__v_obj();
    sop__v_set_int(ev, "schema", 1);
    sop_value *proc = sop__v_obj_at(ev, "proc");
    sop__v_set_int(proc, "pid", 42);
    sop__v_set_int(proc, "rss_kb", 1000);
    sop_value *th = sop__v_arr_at(ev, "threads");
    for (int i = 0; i < 2; i++) {
        sop_value *t = sop__v_obj();
        sop__v_set_int(t, "tid", 11 + i);
        sop__v_set_str(t, "name", "w");
        sop__v_push(th, t);
    }
    return ev;
}

static int load_fixture(sop_rules *r, const char *name, const sop_rules_module *mods)
{
    char rel[256];
    snprintf(rel, sizeof rel, "rules/%s", name);
    size_t len;
    char *src = t_slurp(rel, &len);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", t_fixture("rules"));
    int rc = sop__rules_load(r, name, src, len, dir, mods, err, sizeof err);
    free(src);
    return rc;
}

/* Find the entry with id in array `key` of the run output. */
static const sop_value *entry(const sop_value *out, const char *key, const char *id)
{
    const sop_value *arr = sop__v_get(out, key);
    for (const sop_value *e = arr ? arr->child : NULL; e; e = e->next) {
        const char *eid = sop__v_get_str(e, "id");
        if (eid && strcmp(eid, id) == 0)
            return e;
    }
    return NULL;
}

static size_t count_of(const sop_value *out, const char *key)
{
    const sop_value *a = sop__v_get(out, key);
    return a ? a->count : 0;
}

/* "limits.lua:<line of the marker>" for "-- L:<id>" in the fixture text. */
static void marker_where(const char *file, const char *src, const char *id, char *buf, size_t len)
{
    char mark[128];
    snprintf(mark, sizeof mark, "-- L:%s\n", id);
    const char *p = strstr(src, mark);
    int line = 1;
    for (const char *q = src; p && q < p; q++)
        line += *q == '\n';
    snprintf(buf, len, "%s:%d", file, p ? line : -1);
}

static void test_sandbox(void)
{
    sop_rules *r;
    CHECK_EQ_I(sop__rules_new(&r), 0);
    CHECK_EQ_I(load_fixture(r, "sandbox.lua", NULL), 0);
    if (err[0])
        fprintf(stderr, "load: %s\n", err);
    CHECK(sop__rules_count(r) >= 18);
    sop_value *ev = small_ev(), *out = NULL;
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    CHECK_EQ_I(count_of(out, "findings"), 0);
    CHECK_EQ_I(count_of(out, "rule_errors"), 0);
    CHECK_EQ_I(count_of(out, "cleared"), sop__rules_count(r));
    for (const sop_value *f = sop__v_get(out, "findings")->child; f; f = f->next)
        fprintf(stderr, "ESCAPE: %s: %s\n", sop__v_get_str(f, "id"), sop__v_get_str(f, "evidence"));
    for (const sop_value *f = sop__v_get(out, "rule_errors")->child; f; f = f->next)
        fprintf(stderr, "error: %s %s: %s\n", sop__v_get_str(f, "id"), sop__v_get_str(f, "where"),
                sop__v_get_str(f, "message"));
    CHECK(entry(out, "cleared", "esc.ev_unchanged") != NULL);
    /* The evidence tree itself is untouched. */
    double rss = 0;
    CHECK(sop__v_get_num(sop__v_get(ev, "proc"), "rss_kb", &rss) && rss == 1000);
    sop__v_free(out);
    sop__v_free(ev);
    sop__rules_free(r);
}

static void test_limits(void)
{
    sop_rules *r;
    CHECK_EQ_I(sop__rules_new(&r), 0);
    CHECK_EQ_I(load_fixture(r, "limits.lua", NULL), 0);
    size_t len;
    char *src = t_slurp("rules/limits.lua", &len);
    sop_value *ev = small_ev(), *out = NULL;
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    printf("limits pack (default limits): %.0f ms\n",
           (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
    for (const sop_value *f = sop__v_get(out, "rule_errors")->child; f; f = f->next)
        printf("  rule_error %-16s %-18s %s\n", sop__v_get_str(f, "id"), sop__v_get_str(f, "where"),
               sop__v_get_str(f, "message"));
    static const struct {
        const char *id, *msg;
    } want[] = {
        {"spin", "instruction limit exceeded"},
        {"mem.rep", "memory limit exceeded"},
        {"mem.table", "memory limit exceeded"},
        {"pcall.spin", "instruction limit exceeded"},
        {"pcall.mem", "memory limit exceeded"},
        {"xpcall.spin", "instruction limit exceeded"},
        {"co.wrap", "instruction limit exceeded"},
        {"co.resume", "instruction limit exceeded"},
        {"co.mem", "memory limit exceeded"},
        {"recurse", "stack overflow"},
        {"err.table", "(error object is a table value)"},
        {"err.plain", "attempt to index a nil value (field 'nope')"},
        {"ret.number", "check returned number (expected hit{...}, clear(note) or unknown(reason))"},
        {"ret.nothing", "check returned nothing"},
        {"hit.norefs", "hit without refs"},
        {"hit.noevidence", "hit without evidence"},
        {"hit.typo", "hit: unknown field 'verfy'"},
        {"plugin.broken", "attempt to index a nil value (local 'x')"},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const sop_value *e = entry(out, "rule_errors", want[i].id);
        CHECK(e != NULL);
        if (!e) {
            fprintf(stderr, "no rule_error for %s\n", want[i].id);
            continue;
        }
        const char *msg = sop__v_get_str(e, "message");
        if (!msg || strncmp(msg, want[i].msg, strlen(want[i].msg)) != 0) {
            fprintf(stderr, "%s: message '%s', expected '%s'\n", want[i].id, msg, want[i].msg);
            CHECK(0);
        }
        char where[128];
        marker_where("limits.lua", src, want[i].id, where, sizeof where);
        if (strcmp(want[i].id, "plugin.broken") == 0)
            snprintf(where, sizeof where, "plugins/broken.lua:3");
        CHECK_EQ_S(sop__v_get_str(e, "where"), where);
    }
    CHECK_EQ_I(count_of(out, "rule_errors"), sizeof want / sizeof *want);
    const sop_value *good = entry(out, "findings", "good");
    CHECK(good != NULL);
    CHECK_EQ_S(sop__v_get_str(good, "evidence"), "RSS 1000 KiB (0%)");
    CHECK_EQ_S(sop__v_get_str(good, "severity"), "warn");
    CHECK(entry(out, "cleared", "after") != NULL);
    sop__v_free(out);

    /* The runner stays usable: a second run gives the same result. */
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    CHECK_EQ_I(count_of(out, "rule_errors"), sizeof want / sizeof *want);
    CHECK_EQ_I(count_of(out, "findings"), 1);
    sop__v_free(out);

    /* Smaller limits are honoured. */
    CHECK_EQ_I(sop__rules_set_limits(r, 100000, 1 << 20), 0);
    CHECK_EQ_I(load_fixture(r, "limits.lua", NULL), 0);
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    CHECK_EQ_S(sop__v_get_str(entry(out, "rule_errors", "spin"), "message"),
               "instruction limit exceeded");
    CHECK_EQ_S(sop__v_get_str(entry(out, "rule_errors", "mem.table"), "message"),
               "memory limit exceeded");
    CHECK(entry(out, "findings", "good") != NULL);
    sop__v_free(out);
    free(src);
    sop__v_free(ev);
    sop__rules_free(r);
}

static void test_load_errors(void)
{
    sop_rules *r;
    CHECK_EQ_I(sop__rules_new(&r), 0);
    CHECK_EQ_I(load_fixture(r, "syntax.lua", NULL), SOP_ERULES);
    CHECK(strncmp(err, "syntax.lua:2: ", 14) == 0);
    printf("syntax error: %s\n", err);
    CHECK_EQ_I(sop__rules_count(r), 0);
    sop_value *ev = small_ev(), *out = NULL;
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), SOP_ENORULES);

    CHECK_EQ_I(load_fixture(r, "dup.lua", NULL), SOP_ERULES);
    CHECK_EQ_S(err, "dup.lua:5: duplicate rule id 'a' (first defined at dup.lua:1)");

    CHECK_EQ_I(sop__rules_set_limits(r, 1000000, 0), 0);
    CHECK_EQ_I(load_fixture(r, "toplevel_spin.lua", NULL), SOP_ERULES);
    CHECK_EQ_S(err, "toplevel_spin.lua:2: instruction limit exceeded");

    static const char bomb[] = "local s = 'x'\nwhile true do s = s .. s end\n";
    CHECK_EQ_I(sop__rules_load(r, "bomb.lua", bomb, strlen(bomb), NULL, NULL, err, sizeof err),
               SOP_ERULES);
    CHECK_EQ_S(err, "bomb.lua:2: memory limit exceeded");

    static const char bin[] = "\033Lua\x54\0";
    CHECK_EQ_I(sop__rules_load(r, "bin.lua", bin, sizeof bin, NULL, NULL, err, sizeof err),
               SOP_ERULES);
    CHECK(strstr(err, "binary") != NULL);

    static const char missing[] = "local m = require 'plugins.missing'\n";
    CHECK_EQ_I(load_fixture(r, "toplevel_spin.lua", NULL), SOP_ERULES);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", t_fixture("rules"));
    CHECK_EQ_I(sop__rules_load(r, "m.lua", missing, strlen(missing), dir, NULL, err, sizeof err),
               SOP_ERULES);
    CHECK(strncmp(err, "m.lua:1: module 'plugins.missing' not found", 43) == 0);
    CHECK(strstr(err, "plugins/missing.lua") != NULL);
    CHECK(strstr(err, dir) == NULL); /* no absolute path in the message */
    printf("missing module: %s\n", err);

    static const char runtime[] = "rule { id = 'x', section = '1', severity = 'bad', check = "
                                  "function() end }\n";
    CHECK_EQ_I(sop__rules_load(r, "sev.lua", runtime, strlen(runtime), NULL, NULL, err, sizeof err),
               SOP_ERULES);
    CHECK(strncmp(err, "sev.lua:1: rule 'x': severity must be", 37) == 0);

    static const char badfam[] = "rule { id = 'x', section = '1', severity = 'info', family = "
                                 "'a b', check = function() end }\n";
    CHECK_EQ_I(sop__rules_load(r, "fam.lua", badfam, strlen(badfam), NULL, NULL, err, sizeof err),
               SOP_ERULES);
    CHECK_EQ_S(err, "fam.lua:1: rule 'x': family must be a name like \"cpu\"");
    static const char badex[] = "explains { cpu_pct = {} }\n";
    CHECK_EQ_I(sop__rules_load(r, "ex.lua", badex, strlen(badex), NULL, NULL, err, sizeof err),
               SOP_ERULES);
    CHECK_EQ_S(err, "ex.lua:1: explains{}: 'cpu_pct' must be a list of 1 to 64 rule families");
    /* A rule's own family and the pack's explains{} reach the findings and the run's output. */
    static const char fam[] = "explains { cpu_pct = { 'hot' } }\n"
                              "rule { id = 'x.y', section = '1', severity = 'info', family = "
                              "'hot', check = function() return hit { symptom = 's', evidence = "
                              "'e', cause = 'c', fix = 'f', verify = 'v', refs = 'https://a' } "
                              "end }\n";
    CHECK_EQ_I(sop__rules_load(r, "fam.lua", fam, strlen(fam), NULL, NULL, err, sizeof err), 0);
    sop_value *fout = NULL;
    CHECK_EQ_I(sop__rules_run(r, ev, &fout, err, sizeof err), 0);
    const sop_value *ff = sop__v_get(fout, "findings");
    CHECK(ff && ff->child && strcmp(sop__v_get_str(ff->child, "family"), "hot") == 0);
    const sop_value *ex = sop__v_get(sop__v_get(fout, "explains"), "cpu_pct");
    CHECK(ex && ex->type == SOP_V_ARR && ex->count == 1 && strcmp(ex->child->str, "hot") == 0);
    sop__v_free(fout);

    static const char late[] = "rule { id = 'x', section = '1', severity = 'info', check = "
                               "function() rule { id = 'y', section = '1', severity = 'info', "
                               "check = print } return clear('x') end }\n";
    CHECK_EQ_I(sop__rules_load(r, "late.lua", late, strlen(late), NULL, NULL, err, sizeof err), 0);
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    CHECK(strstr(sop__v_get_str(entry(out, "rule_errors", "x"), "message"),
                 "only allowed at the top level") != NULL);
    sop__v_free(out);
    sop__v_free(ev);
    sop__rules_free(r);
}

static void test_thresholds(void)
{
    sop_rules *r;
    CHECK_EQ_I(sop__rules_new(&r), 0);
    /* Before any load there is nothing to check an override against. */
    CHECK_EQ_I(sop__rules_set_threshold(r, "limit", "80.5", err, sizeof err), SOP_ENORULES);
    CHECK_EQ_I(load_fixture(r, "thresholds.lua", NULL), 0);
    CHECK_EQ_I(sop__rules_set_threshold(r, "limit", "80.5", err, sizeof err), 0);
    CHECK_EQ_I(sop__rules_set_threshold(r, "enabled", "false", err, sizeof err), 0);
    CHECK_EQ_I(load_fixture(r, "thresholds.lua", NULL), 0); /* kept across a reload */
    sop_value *ev = small_ev(), *out = NULL;
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    CHECK_EQ_S(sop__v_get_str(entry(out, "findings", "th.show"), "evidence"), "80.5 false fast 1");
    const sop_value *th = sop__v_get(out, "thresholds");
    double d = 0;
    CHECK(sop__v_get_num(th, "limit", &d) && d == 80.5);
    CHECK(sop__v_get_num(th, "other", &d) && d == 1);
    CHECK_EQ_S(sop__v_get_str(th, "mode"), "fast");
    const sop_value *en = sop__v_get(th, "enabled");
    CHECK(en && en->type == SOP_V_BOOL && !en->b);
    CHECK_EQ_S(th->child->key, "enabled"); /* sorted */
    const sop_value *typo = entry(out, "rule_errors", "th.typo");
    CHECK_EQ_S(sop__v_get_str(typo, "message"), "unknown threshold 'limt'");
    CHECK_EQ_S(sop__v_get_str(typo, "where"), "thresholds.lua:8");
    CHECK_EQ_S(sop__v_get_str(entry(out, "cleared", "th.iter"), "note"),
               "enabled,limit,mode,other");
    sop__v_free(out);

    /* Overrides after the load apply at the next run; integers stay integers. */
    CHECK_EQ_I(sop__rules_set_threshold(r, "limit", "70", err, sizeof err), 0);
    CHECK_EQ_I(sop__rules_set_threshold(r, "mode", "12", err, sizeof err), 0);
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    CHECK_EQ_S(sop__v_get_str(entry(out, "findings", "th.show"), "evidence"), "70 false 12 1");
    sop__v_free(out);

    CHECK_EQ_I(sop__rules_set_threshold(r, "nope", "1", err, sizeof err), SOP_EUNKNOWNKEY);
    CHECK_EQ_S(err, "unknown threshold 'nope' (known: enabled, limit, mode, other)");
    CHECK_EQ_I(sop__rules_set_threshold(r, "limit", "lots", err, sizeof err), SOP_EINVAL);
    CHECK_EQ_I(sop__rules_set_threshold(r, "enabled", "yes", err, sizeof err), SOP_EINVAL);

    /* An override the next pack does not declare is dropped at that load, which succeeds. */
    static const char other[] = "thresholds { x = 1 }\n";
    CHECK_EQ_I(sop__rules_load(r, "o.lua", other, strlen(other), NULL, NULL, err, sizeof err), 0);
    CHECK_EQ_I(load_fixture(r, "thresholds.lua", NULL), 0);
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    CHECK_EQ_S(sop__v_get_str(entry(out, "findings", "th.show"), "evidence"), "90 true fast 1");
    sop__v_free(out);
    sop__v_free(ev);
    sop__rules_free(r);
}

static void test_require(void)
{
    static const sop_rules_module mods[] = {
        {"plugins.embedded", "return { name = 'emb' }"},
        {NULL, NULL},
    };
    sop_rules *r;
    CHECK_EQ_I(sop__rules_new(&r), 0);
    CHECK_EQ_I(load_fixture(r, "require.lua", mods), 0);
    if (err[0])
        fprintf(stderr, "load: %s\n", err);
    sop_value *ev = small_ev(), *out = NULL;
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    CHECK_EQ_S(sop__v_get_str(entry(out, "findings", "req.helper"), "evidence"),
               "double=42 same=true count=1 emb=emb");
    sop__v_free(out);
    /* A file in the search directory comes before the modules list (a site edits the plugins
     * next to its rules file); the list fills in what is not there (plugins.embedded). */
    static const sop_rules_module first[] = {
        {"plugins.embedded", "return { name = 'emb2' }"},
        {"plugins.helper", "return { double = function(x) return 3 * x end, count = 7 }"},
        {NULL, NULL},
    };
    CHECK_EQ_I(load_fixture(r, "require.lua", first), 0);
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    CHECK_EQ_S(sop__v_get_str(entry(out, "findings", "req.helper"), "evidence"),
               "double=42 same=true count=1 emb=emb2");
    sop__v_free(out);
    /* Without a search dir the file plugin is not found. */
    size_t len;
    char *src = t_slurp("rules/require.lua", &len);
    CHECK_EQ_I(sop__rules_load(r, "require.lua", src, len, NULL, mods, err, sizeof err),
               SOP_ERULES);
    CHECK(strstr(err, "plugins.helper") != NULL);
    free(src);
    sop__v_free(ev);
    sop__rules_free(r);
}

static void test_verdicts(void)
{
    sop_rules *r;
    CHECK_EQ_I(sop__rules_new(&r), 0);
    CHECK_EQ_I(load_fixture(r, "verdicts.lua", NULL), 0);
    CHECK_EQ_I(sop__rules_count(r), 4);
    CHECK_EQ_S(sop__rules_id(r, 0), "v.hit");
    CHECK_EQ_S(sop__rules_id(r, 3), "v.warn");
    CHECK(sop__rules_id(r, 4) == NULL);
    sop_value *ev = small_ev(), *out = NULL;
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    const sop_value *f = sop__v_get(out, "findings");
    CHECK_EQ_I(f->count, 2);
    CHECK_EQ_S(sop__v_get_str(f->child, "id"), "v.hit"); /* high before warn */
    CHECK_EQ_S(sop__v_get_str(f->child, "severity"), "high");
    CHECK_EQ_S(sop__v_get_str(f->child, "section"), "2.4");
    const sop_value *sym = sop__v_get(f->child, "symptom");
    CHECK(sym && sym->type == SOP_V_OBJ);
    CHECK_EQ_S(sop__v_get_str(sym, "en"), "slow");
    CHECK_EQ_S(sop__v_get_str(sym, "zh"), "慢");
    CHECK_EQ_S(sop__v_get_str(sop__v_get(f->child, "evidence"), "zh"), "证据");
    CHECK_EQ_S(sop__v_get_str(f->child, "verify"), "v");
    const sop_value *refs = sop__v_get(f->child, "refs");
    CHECK(refs && refs->type == SOP_V_ARR && refs->count == 2);
    CHECK_EQ_S(refs->child->str, "https://a");
    /* Key order of a finding is fixed. */
    CHECK_EQ_S(f->child->child->key, "id");
    CHECK_EQ_S(f->child->last->key, "refs");
    const char *fid = sop__v_get_str(f->child, "id");
    const char *fam = sop__v_get_str(f->child, "family"); /* default: the id's first part */
    CHECK(fid && fam && strncmp(fid, fam, strlen(fam)) == 0 &&
          (fid[strlen(fam)] == '.' || fid[strlen(fam)] == '\0'));
    const sop_value *w = f->child->next;
    CHECK_EQ_S(sop__v_get_str(w, "severity"), "warn");
    CHECK(sop__v_get(w, "symptom") == NULL);
    CHECK_EQ_S(sop__v_get(w, "refs")->child->str, "https://single");
    const sop_value *c = entry(out, "cleared", "v.clear");
    CHECK_EQ_S(sop__v_get_str(sop__v_get(c, "note"), "zh"), "正常");
    CHECK_EQ_S(sop__v_get_str(c, "section"), "3");
    CHECK_EQ_S(sop__v_get_str(entry(out, "unknown", "v.unknown"), "reason"), "no cgroup");
    sop__v_free(out);
    sop__v_free(ev);
    sop__rules_free(r);
}

/* Static cause/fix/verify/refs on rule{} (tests/fixtures/rules/statics.lua). */
static void test_statics(void)
{
    sop_rules *r;
    CHECK_EQ_I(sop__rules_new(&r), 0);
    CHECK_EQ_I(load_fixture(r, "statics.lua", NULL), 0);
    sop_value *ev = small_ev(), *out = NULL;
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    const sop_value *s = entry(out, "findings", "s.static");
    CHECK(s != NULL);
    CHECK_EQ_S(sop__v_get_str(sop__v_get(s, "cause"), "zh"), "静态原因");
    CHECK_EQ_S(sop__v_get_str(s, "fix"), "static fix");
    CHECK_EQ_S(sop__v_get_str(s, "verify"), "static verify");
    CHECK_EQ_S(sop__v_get(s, "refs")->child->str, "https://static");
    CHECK_EQ_S(sop__v_get_str(s, "evidence"), "e");
    const sop_value *o = entry(out, "findings", "s.override");
    CHECK_EQ_S(sop__v_get_str(o, "cause"), "own cause");
    CHECK_EQ_S(sop__v_get_str(o, "fix"), "static fix");
    CHECK_EQ_S(sop__v_get(o, "refs")->child->str, "https://own");
    CHECK_EQ_I((int)sop__v_get(o, "refs")->count, 1);
    CHECK(strstr(sop__v_get_str(entry(out, "rule_errors", "s.raises"), "message"), "boom"));
    const sop_value *n = entry(out, "findings", "s.none");
    CHECK(n && sop__v_get(n, "cause") == NULL);
    CHECK_EQ_S(sop__v_get(n, "refs")->child->str, "https://own");
    sop__v_free(out);

    static const char bad_refs[] =
        "rule { id = 'x', section = '1', severity = 'info', refs = { 1 }, "
        "check = function() end }\n";
    CHECK_EQ_I(sop__rules_load(r, "b.lua", bad_refs, strlen(bad_refs), NULL, NULL, err, sizeof err),
               SOP_ERULES);
    CHECK(strstr(err, "rule 'x': refs must be non-empty strings") != NULL);
    static const char bad_cause[] = "rule { id = 'x', section = '1', severity = 'info', cause = 3, "
                                    "check = function() end }\n";
    CHECK_EQ_I(
        sop__rules_load(r, "b.lua", bad_cause, strlen(bad_cause), NULL, NULL, err, sizeof err),
        SOP_ERULES);
    CHECK(strstr(err, "rule 'x': cause must be a string") != NULL);
    /* A hit at the top level (not inside a check) gets no static fields. */
    static const char top[] =
        "rule { id = 'x', section = '1', severity = 'info', refs = 'https://a', "
        "check = function() return clear('c') end }\nhit { evidence = 'e' }\n";
    CHECK_EQ_I(sop__rules_load(r, "t.lua", top, strlen(top), NULL, NULL, err, sizeof err),
               SOP_ERULES);
    CHECK(strstr(err, "hit without refs") != NULL);
    sop__v_free(ev);
    sop__rules_free(r);
}

/* Order-insensitive structural equality for objects, ordered for arrays. */
static int v_equal(const sop_value *a, const sop_value *b)
{
    if (!a || !b || a->type != b->type)
        return 0;
    switch (a->type) {
    case SOP_V_NULL:
        return 1;
    case SOP_V_BOOL:
        return a->b == b->b;
    case SOP_V_NUM:
        return a->num == b->num;
    case SOP_V_STR:
        return strcmp(a->str, b->str) == 0;
    case SOP_V_ARR: {
        const sop_value *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next)
            if (!v_equal(x, y))
                return 0;
        return !x && !y;
    }
    case SOP_V_OBJ:
        if (a->count != b->count)
            return 0;
        for (const sop_value *x = a->child; x; x = x->next)
            if (!v_equal(x, sop__v_get(b, x->key)))
                return 0;
        return 1;
    }
    return 0;
}

static void test_bridge(void)
{
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    sop_value *v = sop__v_obj();
    sop__v_set_int(v, "int", 123456789012LL);
    sop__v_set_dbl(v, "frac", 0.25);
    sop__v_set_dbl(v, "neg", -3.5);
    sop__v_set_str(v, "s", "héllo \"x\"\n");
    sop__v_set_bool(v, "t", true);
    sop__v_set_bool(v, "f", false);
    sop_value *arr = sop__v_arr_at(v, "list");
    for (int i = 0; i < 3; i++) {
        sop_value *o = sop__v_obj();
        sop__v_set_int(o, "i", i);
        sop__v_push(arr, o);
    }
    sop__v_push(sop__v_arr_at(sop__v_obj_at(v, "deep"), "nums"), sop__v_num(1e300));
    sop__lua_push_value(L, v);
    CHECK(lua_istable(L, -1));
    lua_getfield(L, -1, "int");
    CHECK(lua_isinteger(L, -1) && lua_tointeger(L, -1) == 123456789012LL);
    lua_pop(L, 1);
    lua_getfield(L, -1, "list");
    CHECK_EQ_I(lua_rawlen(L, -1), 3);
    lua_pop(L, 1);
    sop_value *back = sop__lua_to_value(L, -1, 16);
    CHECK(back != NULL);
    CHECK(v_equal(v, back));
    sop__v_free(back);
    /* Too deep for the limit. */
    CHECK(sop__lua_to_value(L, -1, 2) == NULL);
    lua_pop(L, 1);

    /* Refused: functions, cycles, mixed keys; NaN becomes null. */
    luaL_dostring(L, "return { f = print }");
    CHECK(sop__lua_to_value(L, -1, 16) == NULL);
    lua_pop(L, 1);
    luaL_dostring(L, "local t = {} t.self = t return t");
    CHECK(sop__lua_to_value(L, -1, 16) == NULL);
    lua_pop(L, 1);
    luaL_dostring(L, "return { 1, 2, x = 3 }");
    CHECK(sop__lua_to_value(L, -1, 16) == NULL);
    lua_pop(L, 1);
    luaL_dostring(L, "return { 0/0, 2 }");
    sop_value *nan = sop__lua_to_value(L, -1, 16);
    CHECK(nan && nan->type == SOP_V_ARR && nan->child->type == SOP_V_NULL);
    sop__v_free(nan);
    lua_pop(L, 1);
    luaL_dostring(L, "local t = {} for i = 1, 200000 do t[i] = i end return t");
    CHECK(sop__lua_to_value(L, -1, 16) == NULL); /* more than SOP_LUA_MAX_NODES */
    lua_pop(L, 1);
    luaL_dostring(L, "return {}");
    sop_value *empty = sop__lua_to_value(L, -1, 16);
    CHECK(empty && empty->type == SOP_V_OBJ && empty->count == 0);
    sop__v_free(empty);
    lua_close(L);
    sop__v_free(v);
}

/* 30 trivial rules over a ~500-node evidence tree. */
static void test_timing(void)
{
    sop_value *ev = small_ev();
    sop_value *threads = sop__v_arr_at(ev, "threads");
    size_t nodes = 8;
    for (int i = 0; i < 60; i++) {
        sop_value *t = sop__v_obj();
        sop__v_set_int(t, "tid", 100 + i);
        sop__v_set_str(t, "name", "worker");
        sop__v_set_str(t, "state", "S");
        sop__v_set_dbl(t, "cpu_pct", 1.5 * i);
        sop__v_set_int(t, "utime_ms", 10 * i);
        sop__v_set_int(t, "stime_ms", i);
        sop__v_set_int(t, "voluntary_ctxt_switches", 1000 + i);
        sop__v_push(threads, t);
        nodes += 8;
    }
    char *src = malloc(64 * 1024);
    size_t n = (size_t)snprintf(src, 64 * 1024, "thresholds { x = 500 }\n");
    for (int i = 0; i < 30; i++)
        n += (size_t)snprintf(src + n, 64 * 1024 - n,
                              "rule { id = 'r%d', section = '2', severity = 'warn', check = "
                              "function(ev, th) if ev.proc.rss_kb > th.x then return hit { "
                              "evidence = fmt('rss %%d', ev.proc.rss_kb), refs = { 'https://r' "
                              "} } end return clear('ok') end }\n",
                              i);
    sop_rules *r;
    CHECK_EQ_I(sop__rules_new(&r), 0);
    CHECK_EQ_I(sop__rules_load(r, "t.lua", src, n, NULL, NULL, err, sizeof err), 0);
    sop_value *out = NULL;
    int runs = 200;
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    for (int i = 0; i < runs; i++) {
        sop__v_free(out);
        out = NULL;
        CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    double ms = ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6) / runs;
    printf("timing: 30 rules over %zu evidence nodes: %.3f ms per run\n", nodes, ms);
    CHECK_EQ_I(count_of(out, "findings"), 30);
    CHECK(ms < 50); /* CPU time of this thread, so a loaded host does not fail it; loose */
    sop__v_free(out);
    sop__rules_free(r);
    sop__v_free(ev);
    free(src);
}

/* Mutated fixtures (fixed seed, bounded): every load either works or fails with a message
 * naming a file, and every run of what loaded succeeds. Catches crashes and hangs. */
static void test_mutations(void)
{
    static const char *const files[] = {"sandbox.lua", "limits.lua", "verdicts.lua",
                                        "thresholds.lua", "require.lua"};
    static const char *const tok[] = {
        "(", ")", "end", "{",    "}",   "\"", "nil", "ev", "th", "=", "while true do end",
        "0", "-", ".",   "rule", "hit", "#"};
    unsigned seed = 12345;
    int loaded = 0, failed = 0, bad = 0;
    sop_value *ev = small_ev();
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", t_fixture("rules"));
    for (int it = 0; it < 150; it++) {
        char rel[256];
        snprintf(rel, sizeof rel, "rules/%s", files[it % 5]);
        size_t n;
        char *src = t_slurp(rel, &n);
        char *buf = malloc(n + 256);
        memcpy(buf, src, n + 1);
        for (int m = 0; m < 1 + it % 2; m++) {
            seed = seed * 1103515245u + 12345u;
            size_t pos = (seed >> 8) % n;
            const char *t = tok[(seed >> 20) % (sizeof tok / sizeof *tok)];
            size_t tl = strlen(t);
            memmove(buf + pos + tl, buf + pos, n - pos + 1);
            memcpy(buf + pos, t, tl);
            n += tl;
        }
        sop_rules *r;
        sop__rules_new(&r);
        sop__rules_set_limits(r, 200000, 4 << 20);
        int rc = sop__rules_load(r, files[it % 5], buf, n, dir, NULL, err, sizeof err);
        if (rc == 0) {
            loaded++;
            sop_value *out = NULL;
            bad += sop__rules_run(r, ev, &out, err, sizeof err) != 0 && sop__rules_count(r) > 0;
            sop__v_free(out);
        } else {
            failed++;
            bad += strncmp(err, files[it % 5], strlen(files[it % 5])) != 0 &&
                   strncmp(err, "plugins/", 8) != 0 && strncmp(err, "unknown threshold", 17) != 0;
            if (bad)
                fprintf(stderr, "unexpected load error: %s\n", err);
        }
        sop__rules_free(r);
        free(buf);
        free(src);
    }
    printf("mutations: %d loaded, %d refused\n", loaded, failed);
    CHECK_EQ_I(bad, 0);
    CHECK(loaded > 0 && failed > 0);
    sop__v_free(ev);
}

/* ---- pattern calls ------------------------------------------------------------------------ */

/* The evidence for pat.normal: a ~1 KiB cmdline and a /proc status text. */
static sop_value *pattern_ev(void)
{
    sop_value *ev = small_ev();
    sop_value *proc = sop__v_obj_at(ev, "proc");
    char cmd[1200] = "python -u --lr 0.001 --batch 32";
    for (int i = 0; i < 80; i++)
        snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " --opt%02d %d", i, i * 7);
    strcat(cmd, " /home/u/train.py");
    CHECK(strlen(cmd) > 900 && strlen(cmd) < 1100);
    sop__v_set_str(proc, "cmdline", cmd);
    sop__v_set_str(
        proc, "status",
        "Name:\tpython\nVmPeak:\t    2000 kB\nVmRSS:\t    1234 kB\nVmSwap:\t       0 kB\n");
    return ev;
}

static void test_patterns(void)
{
    sop_rules *r;
    CHECK_EQ_I(sop__rules_new(&r), 0);
    CHECK_EQ_I(load_fixture(r, "patterns.lua", NULL), 0);
    size_t len;
    char *src = t_slurp("rules/patterns.lua", &len);
    sop_value *ev = pattern_ev(), *out = NULL;
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    double ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
    printf("patterns pack: %.0f ms\n", ms);
    CHECK(ms < 1500);
    for (const sop_value *f = sop__v_get(out, "rule_errors")->child; f; f = f->next)
        printf("  rule_error %-14s %-16s %s\n", sop__v_get_str(f, "id"), sop__v_get_str(f, "where"),
               sop__v_get_str(f, "message"));
    static const struct {
        const char *id, *msg;
    } want[] = {
        {"pat.match", "pattern too costly: 50000-byte subject with 3 unbounded repetitions (limit"},
        {"pat.method", "pattern too costly: 50000-byte subject with 3 unbounded repetitions"},
        {"pat.gmatch", "pattern too costly: 50000-byte subject with 2 unbounded repetitions"},
        {"pat.gsub", "pattern too costly: 50000-byte subject with 2 unbounded repetitions"},
        {"pat.find", "pattern too costly: 50000-byte subject with 2 unbounded repetitions"},
        {"pat.plain",
         "pattern too costly: 4000000-byte subject searched for a 2000001-byte string"},
        {"pat.optional", "pattern too costly: 40-byte subject with 0 unbounded repetitions"},
        {"pat.gsub.repl", "pattern too costly: 1000-byte subject with 0 unbounded repetitions"},
        {"pat.loop", "instruction limit exceeded"},
        {"pat.move", "instruction limit exceeded"},
        {"pat.rep.big", "memory limit exceeded"},
        {"pat.format", "invalid conversion"},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const sop_value *e = entry(out, "rule_errors", want[i].id);
        CHECK(e != NULL);
        if (!e) {
            fprintf(stderr, "no rule_error for %s\n", want[i].id);
            continue;
        }
        const char *msg = sop__v_get_str(e, "message");
        if (!msg || strncmp(msg, want[i].msg, strlen(want[i].msg)) != 0) {
            fprintf(stderr, "%s: message '%s', expected '%s'\n", want[i].id, msg, want[i].msg);
            CHECK(0);
        }
        char where[128];
        marker_where("patterns.lua", src, want[i].id, where, sizeof where);
        CHECK_EQ_S(sop__v_get_str(e, "where"), where);
    }
    CHECK_EQ_I(count_of(out, "rule_errors"), sizeof want / sizeof *want);
    const sop_value *caught = entry(out, "cleared", "pat.caught");
    const char *note = caught ? sop__v_get_str(caught, "note") : NULL;
    CHECK(note && strncmp(note, "false patterns.lua:", 19) == 0 &&
          strstr(note, ": pattern too costly: 50000-byte subject") != NULL);
    const sop_value *empty = entry(out, "cleared", "pat.rep.empty");
    CHECK_EQ_S(empty ? sop__v_get_str(empty, "note") : NULL, "[][]");
    const sop_value *normal = entry(out, "findings", "pat.normal");
    CHECK_EQ_S(normal ? sop__v_get_str(normal, "evidence") : NULL,
               "python=true script=train.py rss=1234 sum=3234 args=82 at=11");
    CHECK(entry(out, "cleared", "after") != NULL);
    sop__v_free(out);
    free(src);
    sop__v_free(ev);
    sop__rules_free(r);
}

/* The estimator reads classes as lstrlib does: compare with the real matcher, byte by byte. */
static void test_pattern_classes(void)
{
    static const char *const classes[] = {
        ".",       "%a",    "%A",      "%c",        "%C",           "%d",     "%D",     "%g",
        "%G",      "%l",    "%L",      "%p",        "%P",           "%s",     "%S",     "%u",
        "%U",      "%w",    "%W",      "%x",        "%X",           "%%",     "%.",     "%]",
        "%z",      "%Z",    "x",       "]",         "[abc]",        "[^abc]", "[a-z]",  "[^%d/]",
        "[%a_]",   "[]]",   "[^]]",    "[a-]",      "[-a]",         "[%-]",   "[a%-z]", "[%]%[]",
        "[^%s%p]", "[z-a]", "[a-c-e]", "[%w_%.%-]", "[^\x80-\xff]",
    };
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    int bad = 0;
    for (size_t i = 0; i < sizeof classes / sizeof *classes; i++) {
        char pat[64];
        snprintf(pat, sizeof pat, "^%s$", classes[i]);
        for (int c = 0; c < 256; c++) {
            char ch = (char)c;
            lua_getglobal(L, "string");
            lua_getfield(L, -1, "find");
            lua_pushlstring(L, &ch, 1);
            lua_pushstring(L, pat);
            lua_call(L, 2, 1);
            int real = !lua_isnil(L, -1);
            lua_settop(L, 0);
            int mine = sop__pattern_class_has(classes[i], strlen(classes[i]), (unsigned char)c);
            if (real != mine && bad++ < 5)
                fprintf(stderr, "class %s byte %d: lstrlib %d, estimator %d\n", classes[i], c, real,
                        mine);
        }
    }
    CHECK_EQ_I(bad, 0);
    lua_close(L);

    /* Counting: escapes, set contents and %b/%f operands are not quantifiers. */
    static const struct {
        const char *pat;
        int unbounded;
    } counts[] = {
        {".-.-.-b", 3}, {"%-%*%+%?x", 0},  {"[*+-]+", 1},     {"[%]*]x", 0},
        {"%b()*", 1},   {"%f[%w*]%w+", 1}, {"(%d+)%s+kB", 2}, {"^python", 0},
        {"[^/]+$", 1},  {"a?b?c?", 0},     {"%b-+", 1},       {"()x*()", 1},
    };
    const char *subj = "python /home/u/train.py 1234 kB";
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
        sop_pat_cost c;
        sop__pattern_cost(SOP_PAT_MATCH, subj, strlen(subj), counts[i].pat, strlen(counts[i].pat),
                          0, 0, SOP_PATTERN_BUDGET_STEPS, &c);
        if (c.unbounded != counts[i].unbounded || c.over) {
            fprintf(stderr, "%s: %d unbounded (want %d), over %d\n", counts[i].pat, c.unbounded,
                    counts[i].unbounded, c.over);
            CHECK(0);
        }
    }
    /* Anchoring and plain search. */
    sop_pat_cost anch, free_, plain;
    sop__pattern_cost(SOP_PAT_FIND, subj, strlen(subj), "^py.-n", 6, 0, 0, 1e300, &anch);
    sop__pattern_cost(SOP_PAT_FIND, subj, strlen(subj), "py.-n", 5, 0, 0, 1e300, &free_);
    sop__pattern_cost(SOP_PAT_FIND, subj, strlen(subj), "py.-n", 5, 1, 0, 1e300, &plain);
    CHECK(anch.steps * 3 < free_.steps); /* the estimate's own scan is shared */
    CHECK(plain.plain && !free_.plain && plain.steps < free_.steps);
}

/* The costliest subject the budget allows, for several pattern shapes, run through the real
 * lstrlib: each must finish well under a second. Prints the numbers quoted in the docs. */
static void test_pattern_worst_case(void)
{
    static const struct {
        int kind;
        const char *unit, *pat;
    } shapes[] = {
        {SOP_PAT_MATCH, "a", ".-b"},
        {SOP_PAT_MATCH, "a", ".-.-b"},
        {SOP_PAT_MATCH, "a", ".-.-.-b"},
        {SOP_PAT_GSUB, "a", ".-.-b"},
        {SOP_PAT_GSUB, "a", "a"},
        {SOP_PAT_GSUB, "a", ""},
        {SOP_PAT_GMATCH, "a", ".-.-b"},
        {SOP_PAT_FIND, "(", "%b()"},
        {SOP_PAT_MATCH, "a", "[^/]+$x"},
        {SOP_PAT_MATCH, "a", "(.-)%1b"},
        {SOP_PAT_FIND, "a", "[bcdefghijklmnopqrstuvwxyz0123456789]"},
        {SOP_PAT_FIND, "a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"},
    };
    static const char *const fn[] = {"find", "match", "gmatch", "gsub"};
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    double worst_ms = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const char *pat = shapes[i].pat;
        size_t lo = 1, hi = (size_t)1 << 24, m = strlen(pat);
        char *s = malloc(hi + 1);
        memset(s, shapes[i].unit[0], hi);
        sop_pat_cost c;
        double per_start = shapes[i].kind == SOP_PAT_GSUB ? sop__pattern_gsub_per_start(1) : 0;
        while (lo < hi) { /* the longest subject the budget allows */
            size_t mid = (lo + hi + 1) / 2;
            sop__pattern_cost(shapes[i].kind, s, mid, pat, m, 0, per_start,
                              SOP_PATTERN_BUDGET_STEPS, &c);
            if (c.over)
                hi = mid - 1;
            else
                lo = mid;
        }
        sop__pattern_cost(shapes[i].kind, s, lo, pat, m, 0, per_start, SOP_PATTERN_BUDGET_STEPS,
                          &c);
        CHECK(!c.over);
        struct timespec a, b;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
        lua_getglobal(L, "string");
        lua_getfield(L, -1, fn[shapes[i].kind]);
        lua_pushlstring(L, s, lo);
        lua_pushstring(L, pat);
        if (shapes[i].kind == SOP_PAT_GSUB) {
            lua_pushliteral(L, "x");
            lua_call(L, 3, 0);
        } else if (shapes[i].kind == SOP_PAT_GMATCH) {
            lua_call(L, 2, 1);
            for (int k = 0; k < 1 << 20; k++) {
                lua_pushvalue(L, -1);
                lua_call(L, 0, 1);
                int done = lua_isnil(L, -1);
                lua_pop(L, 1);
                if (done)
                    break;
            }
        } else {
            lua_call(L, 2, 0);
        }
        lua_settop(L, 0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        double ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
        printf("pattern worst case: %-6s %-14.14s n=%-9zu %.1e steps %6.1f ms\n",
               fn[shapes[i].kind], pat, lo, c.steps, ms);
        worst_ms = ms > worst_ms ? ms : worst_ms;
        free(s);
    }
    /* the ?-chain: 2^q paths on a q-byte subject */
    for (int q = 10; q <= 40; q++) {
        char pat[128] = "^", s[64];
        for (int k = 0; k < q; k++)
            strcat(pat, "a?");
        for (int k = 0; k < q; k++)
            strcat(pat, "a");
        memset(s, 'a', (size_t)q);
        sop_pat_cost c;
        sop__pattern_cost(SOP_PAT_FIND, s, (size_t)q, pat, strlen(pat), 0, 0,
                          SOP_PATTERN_BUDGET_STEPS, &c);
        if (!c.over)
            continue;
        /* q - 1 is the longest allowed chain: time it */
        pat[0] = '\0';
        strcat(pat, "^");
        for (int k = 0; k < q - 1; k++)
            strcat(pat, "a?");
        for (int k = 0; k < q - 1; k++)
            strcat(pat, "a");
        struct timespec a, b;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
        lua_getglobal(L, "string");
        lua_getfield(L, -1, "find");
        lua_pushlstring(L, s, (size_t)q - 1);
        lua_pushstring(L, pat);
        lua_call(L, 2, 0);
        lua_settop(L, 0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        double ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
        printf("pattern worst case: find   (a?)^%d a^%d   %6.1f ms\n", q - 1, q - 1, ms);
        worst_ms = ms > worst_ms ? ms : worst_ms;
        break;
    }
    lua_close(L);
    printf("pattern worst case at %.0e steps: %.0f ms\n", SOP_PATTERN_BUDGET_STEPS, worst_ms);
    CHECK(worst_ms < 1000);
}

int main(void)
{
    test_bridge();
    test_verdicts();
    test_statics();
    test_thresholds();
    test_require();
    test_load_errors();
    test_sandbox();
    test_limits();
    test_patterns();
    test_pattern_classes();
    test_pattern_worst_case();
    test_timing();
    test_mutations();
    return t_done();
}
