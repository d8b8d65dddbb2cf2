/* test_sandbox_limits.c — the rule runner's limits hold on every path that runs Lua code
 * (issue 13 item 1): a __close handler reached through a coroutine killed by the limit and
 * closed by a later rule, one added to a metatable after setmetatable, a __gc added late, a
 * <close> handler in a killed rule; and the wall-clock watchdog per rule and per evaluation.
 * Also (item 2): packs do not poison each other — a pack's file, each plugin and the site file
 * each see pristine built-ins and their own globals only.
 * A run that does not return is caught by alarm() and fails the test. Depends on
 * engine/rules/rules.c. */
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "rules.h"
#include "sop.h"
#include "t.h"

static char err[1024];

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: a rule run did not return (the limit was escaped)\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

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

static sop_value *run_src(sop_rules *r, const char *src)
{
    int rc = sop__rules_load(r, "escape.lua", src, strlen(src), NULL, NULL, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "load: %s\n", err);
    CHECK_EQ_I(rc, 0);
    sop_value *ev = sop__v_obj(), *out = NULL;
    sop__v_set_int(ev, "pid", 1);
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    sop__v_free(ev);
    const sop_value *errs = out ? sop__v_get(out, "rule_errors") : NULL;
    for (const sop_value *e = errs ? errs->child : NULL; e; e = e->next)
        printf("  rule_error %-10s %-16s %s\n", sop__v_get_str(e, "id"), sop__v_get_str(e, "where"),
               sop__v_get_str(e, "message"));
    return out;
}

static int msg_starts(const sop_value *out, const char *id, const char *want)
{
    const sop_value *e = entry(out, "rule_errors", id);
    const char *m = e ? sop__v_get_str(e, "message") : NULL;
    if (!m || strncmp(m, want, strlen(want)) != 0) {
        fprintf(stderr, "%s: message '%s', expected '%s...'\n", id, m ? m : "(none)", want);
        return 0;
    }
    return 1;
}

static int has_msg(const sop_value *out, const char *id, const char *want)
{
    const sop_value *e = entry(out, "rule_errors", id);
    const char *m = e ? sop__v_get_str(e, "message") : NULL;
    if (!m || !strstr(m, want)) {
        fprintf(stderr, "%s: message '%s', expected '...%s...'\n", id, m ? m : "(none)", want);
        return 0;
    }
    return 1;
}

/* The attack of the issue: __close added after setmetatable, a coroutine holding it killed by
 * the limit, a later rule closing that coroutine. */
static const char CLOSE_AFTER_KILL[] =
    "local co\n"
    "rule { id = 'a.kill', section = '9', severity = 'info', check = function()\n"
    "  local mt = {}\n"
    "  local obj = setmetatable({}, mt)\n"
    "  mt.__close = function() while true do end end\n"
    "  co = coroutine.create(function() local x <close> = obj; while true do end end)\n"
    "  coroutine.resume(co)\n"
    "  return clear('x') end }\n"
    "rule { id = 'b.close', section = '9', severity = 'info', check = function()\n"
    "  coroutine.close(co)\n"
    "  return clear('closed') end }\n"
    "rule { id = 'c.after', section = '9', severity = 'info', check = function()\n"
    "  return clear('still running') end }\n";

/* A <close> handler in the killed rule itself runs under the limit; the handlers of a
 * coroutine that died in an error (killed or not) never run; a __gc added after setmetatable
 * is never called (Lua marks an object for finalization only at setmetatable). */
static const char CLOSE_IN_RULE[] =
    "local co\n"
    "local function closable() local mt = {}; local o = setmetatable({}, mt);\n"
    "  mt.__close = function() while true do end end; return o end\n"
    "rule { id = 'a.self', section = '9', severity = 'info', check = function()\n"
    "  local x <close> = closable(); while true do end end }\n"
    "rule { id = 'b.err', section = '9', severity = 'info', check = function()\n"
    "  co = coroutine.create(function() local x <close> = closable(); error('boom') end)\n"
    "  coroutine.resume(co); return clear('x') end }\n"
    "rule { id = 'c.close', section = '9', severity = 'info', check = function()\n"
    "  coroutine.close(co); return clear('closed') end }\n"
    "rule { id = 'd.gc', section = '9', severity = 'info', check = function()\n"
    "  for i = 1, 2000 do local mt = {}; setmetatable({}, mt); mt.__gc = function() while true do "
    "end end end\n"
    "  local t = {} for i = 1, 20000 do t[i % 100] = {i} end\n"
    "  return clear('gc') end }\n"
    "rule { id = 'e.after', section = '9', severity = 'info', check = function()\n"
    "  return clear('still running') end }\n";

static void test_close_paths(void)
{
    sop_rules *r;
    CHECK_EQ_I(sop__rules_new(&r), 0);
    sop_value *out = run_src(r, CLOSE_AFTER_KILL);
    CHECK(msg_starts(out, "a.kill", "instruction limit exceeded"));
    CHECK(entry(out, "cleared", "c.after") != NULL);
    sop__v_free(out);

    out = run_src(r, CLOSE_IN_RULE);
    CHECK(msg_starts(out, "a.self", "instruction limit exceeded"));
    CHECK(entry(out, "cleared", "c.close") != NULL);
    CHECK(entry(out, "cleared", "d.gc") != NULL);
    CHECK(entry(out, "cleared", "e.after") != NULL);
    sop__v_free(out);
    sop__rules_free(r); /* lua_close runs pending finalizers: none may spin */
}

/* The watchdog: with an instruction budget no loop reaches, a wall-clock limit per rule stops
 * a spinning rule, and one per evaluation stops the evaluation (the rules left are reported,
 * not run). An endless loop exceeds any wall-clock limit, so this holds at any machine speed. */
static void test_watchdog(void)
{
    static const char SRC[] = "rule { id = 'a.spin', section = '9', severity = 'info', check = "
                              "function() while true do end end }\n"
                              "rule { id = 'b.ok', section = '9', severity = 'info', check = "
                              "function() return clear('ok') end }\n"
                              "rule { id = 'c.spin', section = '9', severity = 'info', check = "
                              "function() while true do end end }\n"
                              "rule { id = 'd.spin', section = '9', severity = 'info', check = "
                              "function() while true do end end }\n"
                              "rule { id = 'e.ok', section = '9', severity = 'info', check = "
                              "function() return clear('ok') end }\n";
    sop_rules *r;
    CHECK_EQ_I(sop__rules_new(&r), 0);
    CHECK_EQ_I(sop__rules_set_limits(r, 1LL << 62, 0), 0);
    CHECK_EQ_I(sop__rules_set_time_limits(r, 200, 1000000), 0);
    sop_value *out = run_src(r, SRC);
    CHECK(msg_starts(out, "a.spin", "time limit exceeded"));
    CHECK(msg_starts(out, "c.spin", "time limit exceeded"));
    CHECK(entry(out, "cleared", "b.ok") != NULL);
    CHECK(entry(out, "cleared", "e.ok") != NULL);
    sop__v_free(out);

    /* per evaluation: 3 spinning rules of 200 ms each cannot fit in 300 ms. Under load a.spin
     * may already meet the evaluation's limit and b.ok or c.spin be skipped; d and e never run. */
    CHECK_EQ_I(sop__rules_set_time_limits(r, 200, 300), 0);
    out = run_src(r, SRC);
    CHECK(has_msg(out, "a.spin", "time limit exceeded"));
    CHECK(has_msg(out, "c.spin", "evaluation time limit exceeded"));
    CHECK(msg_starts(out, "d.spin", "not run: evaluation time limit exceeded"));
    CHECK(msg_starts(out, "e.ok", "not run: evaluation time limit exceeded"));
    sop__v_free(out);
    CHECK_EQ_I(sop__rules_set_time_limits(r, 0, 0), 0); /* defaults */
    sop__rules_free(r);
}

/* The pack's main file poisons built-ins at load and from a rule at run time; a plugin and the
 * site file, loaded after, must see them pristine and none of its globals. */
static const char POISON_MAIN[] =
    "leak = 'from main'\n"
    "local real_hit = hit\n"
    "hit = function() return clear('poisoned hit') end\n"
    "pairs = function() error('poisoned pairs') end\n"
    "string.format = function() return 'poisoned format' end\n"
    "fmt = string.format\n"
    "table.concat = nil\n"
    "rule { id = 'main.poison_at_run', section = '9', severity = 'info', check = function()\n"
    "  math.max = function() return -1 end; coroutine.wrap = nil; tostring = nil; leak2 = 1\n"
    "  return clear('x') end }\n"
    "require 'plugins.victim'\n";
static const char VICTIM[] =
    "local function pristine()\n"
    "  local bad = {}\n"
    "  if leak ~= nil or leak2 ~= nil then bad[#bad + 1] = 'a global leaked' end\n"
    "  if string.format('%d', 7) ~= '7' or fmt('%d', 7) ~= '7' then bad[#bad + 1] = 'format' end\n"
    "  if table.concat == nil or math.max(1, 2) ~= 2 then bad[#bad + 1] = 'table/math' end\n"
    "  if coroutine.wrap == nil or tostring == nil then bad[#bad + 1] = 'coroutine/tostring' end\n"
    "  local ok = pcall(pairs, {}) if not ok then bad[#bad + 1] = 'pairs' end\n"
    "  return bad\n"
    "end\n"
    "RULE_PREFIX = RULE_PREFIX or 'victim'\n"
    "rule { id = RULE_PREFIX .. '.pristine', section = '9', severity = 'info', check = function()\n"
    "  local bad = pristine()\n"
    "  if #bad > 0 then return hit { evidence = 'poisoned: ' .. bad[1], refs = { 'r' } } end\n"
    "  return hit { evidence = 'pristine', refs = { 'r' } } end }\n";

static void test_isolation(void)
{
    static const sop_rules_module mods[] = {{"plugins.victim", VICTIM}, {NULL, NULL}};
    char site[sizeof VICTIM + 64];
    snprintf(site, sizeof site, "RULE_PREFIX = 'site'\n%s", VICTIM);
    sop_rules *r;
    CHECK_EQ_I(sop__rules_new(&r), 0);
    int rc = sop__rules_load_site(r, "main.lua", POISON_MAIN, strlen(POISON_MAIN), NULL, mods,
                                  "site.lua", site, strlen(site), NULL, err, sizeof err);
    if (rc)
        fprintf(stderr, "load: %s\n", err);
    CHECK_EQ_I(rc, 0);
    sop_value *ev = sop__v_obj(), *out = NULL;
    CHECK_EQ_I(sop__rules_run(r, ev, &out, err, sizeof err), 0);
    CHECK_EQ_I(sop__v_get(out, "rule_errors")->count, 0);
    static const char *const ids[] = {"victim.pristine", "site.pristine"};
    for (int i = 0; i < 2; i++) {
        const sop_value *f = entry(out, "findings", ids[i]);
        const char *evs = f ? sop__v_get_str(f, "evidence") : NULL;
        printf("  %s: %s\n", ids[i], evs ? evs : "(no finding)");
        CHECK(evs && strcmp(evs, "pristine") == 0);
    }
    sop__v_free(out);
    sop__v_free(ev);
    sop__rules_free(r);
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    alarm(100);
    test_close_paths();
    test_watchdog();
    test_isolation();
    printf("%d passed, %d failed\n", t_pass, t_fail);
    return t_fail != 0;
}
