/* test_rules_reads.c — the `reads` check of the rule runner (on by default;
 * sop__rules_set_check_reads): the evidence paths a rule reads through `ev` are recorded and held
 * to its `reads` list. Also holds every shipped rule to its list over all the replay evidence
 * (tests/replay/, every .json): one read outside fails, naming the rule and the path. Depends on
 * engine/rules*.c. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "engine.h"
#include "json.h"
#include "rules.h"
#include "t.h"

static const char PACK[] =
    "local function ok() return clear('ok') end\n"
    "rule { id = 'inside', section = '9', severity = 'info', reads = { 'proc.rss_kb' },\n"
    "  check = function(ev) local _ = ev.proc.rss_kb; return ok() end }\n"
    "rule { id = 'outside', section = '9', severity = 'info', reads = { 'proc.rss_kb' },\n"
    "  check = function(ev) local _ = ev.proc.rss_kb + ev.proc.threads; return ok() end }\n"
    "rule { id = 'outside2', section = '9', severity = 'info', reads = { 'proc.rss_kb' },\n"
    "  check = function(ev) local _ = ev.pid, ev.proc.threads; return ok() end }\n"
    "rule { id = 'undeclared', section = '9', severity = 'info',\n"
    "  check = function(ev) local _ = ev.pid, ev.proc.threads; return ok() end }\n"
    "rule { id = 'subtree', section = '9', severity = 'info',\n"
    "  reads = { 'python.threads[].window', 'proc.env' },\n"
    "  check = function(ev, th)\n"
    "    local n = #ev.python.threads\n"
    "    for _, t in ipairs(ev.python.threads) do\n"
    "      local w = t.window; local _ = w and w.samples\n"
    "    end\n"
    "    for _, t in pairs(ev.python.threads) do local _ = rawget(t, 'window') end\n"
    "    for k, v in pairs(ev.proc.env) do local _ = k .. v end\n"
    "    for k in pairs(th) do local _ = k end\n"
    "    return clear('n ' .. n) end }\n"
    "rule { id = 'element', section = '9', severity = 'info',\n"
    "  reads = { 'python.threads[].window' },\n"
    "  check = function(ev) local _ = ev.python.threads[1].tid; return ok() end }\n"
    "rule { id = 'absent', section = '9', severity = 'info',\n"
    "  reads = { 'cgroup.memory.limit_kb' },\n"
    "  check = function(ev) local c = ev.cgroup; local _ = c and c.memory; return ok() end }\n"
    "rule { id = 'absent_out', section = '9', severity = 'info', reads = { 'cgroup.cpu' },\n"
    "  check = function(ev) local _ = ev.alloc; return ok() end }\n"
    "rule { id = 'twice', section = '9', severity = 'info', reads = { 'pid' },\n"
    "  check = function(ev) local _ = #ev.proc.env, ev.proc.env.A, ev.proc.env; return ok() end }\n"
    "thresholds { x = 1 }\n";

static const char EV[] =
    "{\"pid\": 7, \"proc\": {\"rss_kb\": 10, \"threads\": 3, \"env\": {\"A\": \"1\"}},\n"
    " \"python\": {\"threads\": [{\"tid\": 1, \"window\": {\"samples\": 5}}, {\"tid\": 2}]}}";

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

static const char *error_of(const sop_value *out, const char *id)
{
    const sop_value *e = entry(out, "rule_errors", id);
    return e ? sop__v_get_str(e, "message") : NULL;
}

static void test_check(void)
{
    sop_rules *r = NULL;
    char err[512] = "";
    CHECK_EQ_I(sop__rules_new(&r), 0);
    CHECK_EQ_I(sop__rules_load(r, "reads.lua", PACK, sizeof PACK - 1, NULL, NULL, err, sizeof err),
               0);
    sop_value *ev = sop__json_parse(EV, sizeof EV - 1, err, sizeof err);
    CHECK(ev != NULL);

    /* On by default; the same answer on a second run. */
    sop_value *out = NULL;
    for (int round = 0; round < 2; round++) {
        out = NULL;
        CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
        CHECK(entry(out, "cleared", "inside") != NULL);
        CHECK(entry(out, "cleared", "undeclared") != NULL);
        CHECK(entry(out, "cleared", "subtree") != NULL);
        CHECK(entry(out, "cleared", "absent") != NULL);
        CHECK_EQ_S(error_of(out, "outside"),
                   "read ev.proc.threads, which is outside its `reads` list");
        CHECK_EQ_S(error_of(out, "outside2"),
                   "read ev.pid and 1 more paths outside its `reads` list");
        CHECK_EQ_S(error_of(out, "element"),
                   "read ev.python.threads[].tid, which is outside its `reads` list");
        CHECK_EQ_S(error_of(out, "absent_out"), "read ev.alloc, which is outside its `reads` list");
        /* a path read as a member and as a whole (its length) counts once: proc, proc.env,
         * proc.env.A */
        CHECK_EQ_S(error_of(out, "twice"),
                   "read ev.proc and 2 more paths outside its `reads` list");
        CHECK_EQ_I(sop__v_get(out, "rule_errors")->count, 5);
        sop__v_free(out);
    }

    /* Off (tests only): every rule gives its verdict. */
    sop__rules_set_check_reads(r, 0);
    out = NULL;
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    CHECK_EQ_I(sop__v_get(out, "rule_errors")->count, 0);
    CHECK_EQ_I(sop__v_get(out, "cleared")->count, 9);
    sop__v_free(out);
    sop__v_free(ev);
    sop__rules_free(r);
}

/* The shipped pack over every replay case (the check on, as in every run): a rule that reads
 * outside its `reads` fails the test, once per rule, with the case and the message. */
static void check_shipped_pack(void)
{
    const char *src = getenv("SOP_SRC"); /* ctest sets it */
    CHECK(src != NULL);
    if (!src)
        return;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/replay", src);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d)
        return;
    sop_rules *r = NULL;
    char err[512] = "";
    CHECK_EQ_I(sop__rules_new(&r), 0);
    const sop_rules_module *m = sop__embedded_modules;
    CHECK_EQ_I(
        sop__rules_load(r, "rules.lua", m->source, strlen(m->source), NULL, m, err, sizeof err), 0);
    size_t cases = 0, outside = 0;
    char seen[8192] = "";
    for (struct dirent *de; (de = readdir(d));) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
            continue;
        char rel[1200];
        snprintf(rel, sizeof rel, "%s/%s", dir, de->d_name);
        FILE *f = fopen(rel, "rb");
        if (!f)
            continue;
        static char buf[4 << 20];
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        sop_value *ev = sop__json_parse(buf, len, err, sizeof err);
        if (!ev)
            continue;
        sop_value *out = NULL;
        CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
        cases++;
        const sop_value *errs = out ? sop__v_get(out, "rule_errors") : NULL;
        for (const sop_value *e = errs ? errs->child : NULL; e; e = e->next) {
            const char *msg = sop__v_get_str(e, "message"), *id = sop__v_get_str(e, "id");
            char key[80];
            snprintf(key, sizeof key, " %s ", id ? id : "?");
            if (msg && strstr(msg, "`reads`") && !strstr(seen, key) &&
                strlen(seen) + strlen(key) < sizeof seen) {
                strcat(seen, key);
                outside++;
                fprintf(stderr, "FAIL %s (%s): %s\n", id ? id : "?", de->d_name, msg);
            }
        }
        sop__v_free(out);
        sop__v_free(ev);
    }
    closedir(d);
    printf("reads check over %zu replay cases: %zu of %zu shipped rules read outside their "
           "`reads`:%s\n",
           cases, outside, sop__rules_count(r), seen);
    CHECK(cases > 0);
    CHECK_EQ_I(outside, 0);
    sop__rules_free(r);
}

int main(void)
{
    test_check();
    check_shipped_pack();
    return t_done();
}
