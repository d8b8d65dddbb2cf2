/* rules_run.c — sop__rules_run: every rule of the loaded pack over one evidence tree, each
 * under its instruction, memory and time budget, with the reads check; their verdicts become
 * findings / cleared / unknown / rule_errors (and the thresholds and explains{} in force).
 * Depends on Lua 5.4, engine/core/value.c and engine/rules/lua_value.c. */
#include "rules.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "clock.h"
#include "lua_value.h"
#include "rules_int.h"
#include "severity.h"
#include "sop.h"

/* The first line of msg, at most MAX_MESSAGE bytes, as a new string value. */
static sop_value *first_line(const char *msg)
{
    size_t n = strcspn(msg, "\n");
    return sop__v_strn(msg, n > MAX_MESSAGE ? MAX_MESSAGE : n);
}

/* ---- running ----------------------------------------------------------------------------- */

typedef struct {
    sop_rules *r;
    const sop_value *ev;
    sop_value *out;
    sop_value *findings, *cleared, *unknown, *errors;
} run_ctx;

static void add_error(run_ctx *c, const char *id, const char *where, const char *msg)
{
    sop_value *e = sop__v_obj();
    if (!e)
        return;
    sop__v_set(e, "id", sop__v_str(id));
    sop__v_set(e, "where", sop__v_str(where));
    sop__v_set(e, "message", first_line(msg));
    sop__v_push(c->errors, e);
}

/* Unlink member `key` from obj and return it (NULL when absent). */
static sop_value *take(sop_value *obj, const char *key)
{
    sop_value *prev = NULL;
    for (sop_value *m = obj->child; m; prev = m, m = m->next) {
        if (!m->key || strcmp(m->key, key) != 0)
            continue;
        if (prev)
            prev->next = m->next;
        else
            obj->child = m->next;
        if (obj->last == m)
            obj->last = prev;
        obj->count--;
        m->next = NULL;
        return m;
    }
    return NULL;
}

/* Turn the value rule code returned (at idx) into a finding / cleared / unknown entry. */
static void record_verdict(lua_State *L, run_ctx *c, int idx, const char *id, const char *section,
                           const char *severity, const char *family, const char *def_where)
{
    int *kind = luaL_testudata(L, idx, VERDICT_MT);
    if (!kind) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "check returned %s (expected hit{...}, clear(note) or unknown(reason))",
                 lua_isnoneornil(L, idx) ? "nothing" : luaL_typename(L, idx));
        add_error(c, id, def_where, msg);
        return;
    }
    lua_getiuservalue(L, idx, 1);
    sop_value *data = sop__lua_to_value(L, -1, 4);
    lua_pop(L, 1);
    sop_value *e = sop__v_obj();
    if (!data || !e) {
        sop__v_free(data);
        sop__v_free(e);
        add_error(c, id, def_where, "verdict could not be converted");
        return;
    }
    sop__v_set(e, "id", sop__v_str(id));
    sop__v_set(e, "section", sop__v_str(section));
    if (*kind == VERDICT_HIT) {
        if (family) /* what explains{} names: a job-level merge reads it */
            sop__v_set(e, "family", sop__v_str(family));
        const char *sev = sop__v_get_str(data, "severity");
        sop__v_set(e, "severity", sop__v_str(sev ? sev : severity));
        for (size_t i = 0; i < sizeof HIT_TEXT / sizeof *HIT_TEXT; i++)
            sop__v_set(e, HIT_TEXT[i], take(data, HIT_TEXT[i]));
        sop__v_set(e, "refs", take(data, "refs"));
        sop__v_free(data);
        sop__v_push(c->findings, e);
    } else {
        /* The rule's declared severity: what it would be when hit (metrics label it). */
        if (severity)
            sop__v_set(e, "severity", sop__v_str(severity));
        sop__v_set(e, *kind == VERDICT_CLEAR ? "note" : "reason", data);
        sop__v_push(*kind == VERDICT_CLEAR ? c->cleared : c->unknown, e);
    }
}

/* Whether the declared path d covers the read path p: p is d, on the way to d, or below d. */
static int path_covers(const char *d, const char *p)
{
    size_t dl = strlen(d), pl = strlen(p);
    if (dl == pl)
        return strcmp(d, p) == 0;
    if (dl > pl)
        return strncmp(d, p, pl) == 0 && (d[pl] == '.' || d[pl] == '[');
    return strncmp(p, d, dl) == 0 && (p[dl] == '.' || p[dl] == '[');
}

/* The read log (rules_sandbox.c's note_member: log[path][member]) as the set of full paths it
 * names, pushed: member false is the path itself, true "path[]", a name "path.name" ("name"
 * under ev itself). */
static void push_read_paths(lua_State *L, int log)
{
    lua_newtable(L);
    int set = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, log)) { /* path, members */
        const char *p = lua_tostring(L, -2);
        lua_pushnil(L);
        while (lua_next(L, -2)) { /* member, true */
            lua_pop(L, 1);
            if (lua_type(L, -1) == LUA_TSTRING)
                lua_pushfstring(L, "%s%s%s", p, *p ? "." : "", lua_tostring(L, -1));
            else if (lua_toboolean(L, -1))
                lua_pushfstring(L, "%s[]", p);
            else
                lua_pushstring(L, p);
            lua_pushboolean(L, 1);
            lua_rawset(L, set);
        }
        lua_pop(L, 1);
    }
}

/* The reads check: the first (in byte order) of the paths the rule read (the log at log) that
 * no entry of the list at reads covers, as a rule_errors message in msg; msg unchanged when
 * none. */
static void first_read_outside(lua_State *L, int log, int reads, char *msg, size_t msglen)
{
    push_read_paths(L, log);
    log = lua_gettop(L);
    const char *first = NULL;
    size_t outside = 0;
    lua_Integer nreads = (lua_Integer)lua_rawlen(L, reads);
    lua_pushnil(L);
    while (lua_next(L, log)) {
        lua_pop(L, 1);
        const char *p = lua_tostring(L, -1);
        int covered = 0;
        for (lua_Integer j = 1; !covered && j <= nreads; j++) {
            lua_rawgeti(L, reads, j);
            const char *d = lua_tostring(L, -1);
            covered = d && path_covers(d, p);
            lua_pop(L, 1);
        }
        if (!covered) {
            outside++;
            if (!first || strcmp(p, first) < 0)
                first = p; /* a key of log, which stays alive while we iterate */
        }
    }
    if (first && outside > 1)
        snprintf(msg, msglen, "read ev.%s and %zu more paths outside its `reads` list", first,
                 outside - 1);
    else if (first)
        snprintf(msg, msglen, "read ev.%s, which is outside its `reads` list", first);
    lua_pop(L, 1);
}

static void run_one(lua_State *L, run_ctx *c, int rule_idx, int ev_proxy, int th_proxy, int handler)
{
    sop_rules *r = c->r;
    lua_getfield(L, rule_idx, "id");
    lua_getfield(L, rule_idx, "section");
    lua_getfield(L, rule_idx, "severity");
    lua_getfield(L, rule_idx, "where");
    lua_getfield(L, rule_idx, "family");
    const char *id = lua_tostring(L, -5), *section = lua_tostring(L, -4),
               *severity = lua_tostring(L, -3), *def_where = lua_tostring(L, -2),
               *family = lua_tostring(L, -1);
    if (sop__now_ms() > r->eval_deadline_ms) {
        add_error(c, id, def_where,
                  "not run: evaluation time limit exceeded (the watchdog's limit per evaluation)");
        return;
    }
    lua_getfield(L, rule_idx, "uses_set");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_USES);
    int check_reads = r->check_reads && lua_getfield(L, rule_idx, "reads") == LUA_TTABLE;
    int reads = lua_gettop(L); /* the rule's `reads` (or what stands there) */
    if (check_reads) {
        lua_newtable(L);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &K_READ_LOG);
    }
    lua_getfield(L, rule_idx, "check");
    lua_pushvalue(L, ev_proxy);
    lua_pushvalue(L, th_proxy);
    r->phase = PHASE_RUN;
    sop__rules_start_limits(r);
    int status = lua_pcall(L, 2, 1, handler);
    sop__rules_stop_limits(r);
    r->phase = PHASE_IDLE;
    lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_USES);
    int res = lua_gettop(L);
    char outside[200] = "";
    if (check_reads) {
        lua_rawgetp(L, LUA_REGISTRYINDEX, &K_READ_LOG);
        lua_pushnil(L);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &K_READ_LOG);
        if (status == LUA_OK && !r->killed)
            first_read_outside(L, lua_gettop(L), reads, outside, sizeof outside);
        lua_pop(L, 1);
    }
    if (r->killed) {
        add_error(c, id, r->kill_where[0] ? r->kill_where : def_where, sop__rules_kill_message(r));
        if (r->killed == KILL_MEM)
            lua_gc(L, LUA_GCCOLLECT);
    } else if (status != LUA_OK) {
        const char *msg = lua_type(L, res) == LUA_TSTRING ? lua_tostring(L, res) : "error";
        if (status == LUA_ERRMEM)
            msg = "not enough memory";
        char where[160];
        const char *rest = sop__rules_split_where(msg, where, sizeof where);
        if (rest)
            add_error(c, id, where, rest);
        else
            add_error(c, id, r->err_where[0] ? r->err_where : def_where, msg);
    } else if (outside[0]) {
        add_error(c, id, def_where, outside);
    } else {
        record_verdict(L, c, res, id, section, severity, family, def_where);
    }
}

/* The effective thresholds: the pack's defaults, then the overrides typed like them. */
static void push_effective_thresholds(lua_State *L, const sop_rules *r)
{
    lua_newtable(L);
    int eff = lua_gettop(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_DEFAULTS);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, eff);
    }
    lua_pop(L, 1);
    for (size_t i = 0; i < r->novr; i++) {
        const known_threshold *k = sop__rules_find_known(r, r->ovr[i].key);
        if (!k)
            continue;
        const char *v = r->ovr[i].value;
        if (k->type == LUA_TBOOLEAN)
            lua_pushboolean(L, strcmp(v, "true") == 0);
        else if (k->type != LUA_TNUMBER || lua_stringtonumber(L, v) == 0) {
            if (k->type == LUA_TNUMBER)
                lua_pushnumber(L, strtod(v, NULL)); /* "1e3", " 5": strtod's reading */
            else
                lua_pushstring(L, v);
        }
        lua_setfield(L, eff, k->key);
    }
}

static int run_protected(lua_State *L)
{
    run_ctx *c = lua_touserdata(L, 1);
    sop_rules *r = c->r;
    new_registry_table(L, &K_P2R);
    new_registry_table(L, &K_R2P);
    new_registry_table(L, &K_PATHS);
    sop__lua_push_value(L, c->ev); /* 2 */
    if (!lua_istable(L, 2)) {
        lua_pop(L, 1);
        lua_newtable(L);
    }
    sop__rules_push_proxy(L, 2);                 /* 3 */
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_PATHS); /* ev's path, for the reads check: "" */
    lua_pushvalue(L, 3);
    lua_pushliteral(L, "");
    lua_rawset(L, -3);
    lua_pop(L, 1);
    push_effective_thresholds(L, r); /* 4 */
    lua_createtable(L, 0, 0);        /* 5: th, strict about names */
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_TH_MT);
    lua_setmetatable(L, 5);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_P2R);
    lua_pushvalue(L, 5);
    lua_pushvalue(L, 4);
    lua_rawset(L, -3);
    lua_pop(L, 1);
    sop__v_set(c->out, "thresholds", sop__lua_to_value(L, 4, 2));
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_EXPLAINS); /* explains{}: for a job-level merge */
    int explains = lua_gettop(L);
    lua_pushnil(L);
    if (lua_type(L, explains) == LUA_TTABLE && lua_next(L, explains) != 0) { /* not empty */
        lua_pop(L, 2);
        sop__v_set(c->out, "explains", sop__lua_to_value(L, explains, 3));
    }
    lua_settop(L, explains - 1);
    lua_pushcfunction(L, sop__rules_msgh);       /* 6 */
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_RULES); /* 7 */
    lua_Integer n = (lua_Integer)lua_rawlen(L, 7);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, 7, i); /* 8 */
        run_one(L, c, 8, 3, 5, 6);
        lua_settop(L, 7);
    }
    return 0;
}

int sop__rules_run(sop_rules *r, const sop_value *ev, sop_value **out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!r || !out)
        return SOP_EINVAL;
    *out = NULL;
    if (!r->L || r->nids == 0) {
        sop__rules_set_err(err, errlen, "no rules loaded");
        return SOP_ENORULES;
    }
    run_ctx c = {r, ev, sop__v_obj(), NULL, NULL, NULL, NULL};
    if (c.out) {
        c.findings = sop__v_arr_at(c.out, "findings");
        c.cleared = sop__v_arr_at(c.out, "cleared");
        c.unknown = sop__v_arr_at(c.out, "unknown");
        c.errors = sop__v_arr_at(c.out, "rule_errors");
    }
    if (!c.findings || !c.cleared || !c.unknown || !c.errors) {
        sop__v_free(c.out);
        return SOP_ENOMEM;
    }
    lua_State *L = r->L;
    lua_settop(L, 0);
    r->eval_deadline_ms = sop__now_ms() + r->wall_eval_ms;
    lua_pushcfunction(L, run_protected);
    lua_pushlightuserdata(L, &c);
    int status = lua_pcall(L, 1, 0, 0);
    sop__rules_stop_limits(r);
    r->phase = PHASE_IDLE;
    if (status != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        sop__rules_set_err(err, errlen, "rule runner: %s", msg ? msg : "error");
        lua_settop(L, 0);
        sop__v_free(c.out);
        return status == LUA_ERRMEM ? SOP_ENOMEM : SOP_EINTERNAL;
    }
    lua_settop(L, 0);
    /* Drop this run's proxies and evidence tables now rather than at the next run. */
    lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_P2R);
    lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_R2P);
    sop__sort_by_severity(c.findings);
    *out = c.out;
    return 0;
}
