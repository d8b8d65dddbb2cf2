/* rules_sandbox.c — the sandbox of the rule runner: the per-rule limits (an allocator that
 * counts every byte, a count hook for instructions and wall-clock time, pcall and coroutines
 * that cannot escape them, cost-charged string patterns), the read-only views of ev and th,
 * and the Lua state built from an allow-list. Depends on Lua 5.4, engine/rules/pattern_cost.c and
 * engine/rules/rules_dsl.c (the DSL's globals). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "clock.h"
#include "pattern_cost.h"
#include "rules_int.h"
#include "sop.h"

/* ---- limits ------------------------------------------------------------------------------ */

/* "file:line" of the innermost Lua function on L's stack from `level` up (or ""). */
static void lua_where(lua_State *L, int level, char *buf, size_t len)
{
    lua_Debug ar;
    buf[0] = '\0';
    for (int i = level; i < level + 64 && lua_getstack(L, i, &ar); i++) {
        if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
            snprintf(buf, len, "%s:%d", ar.short_src, ar.currentline);
            return;
        }
    }
}

const char *sop__rules_kill_message(const sop_rules *r)
{
    switch (r->killed) {
    case KILL_MEM:
        return "memory limit exceeded";
    case KILL_TIME:
        return "time limit exceeded (the watchdog's limit per rule)";
    case KILL_EVAL_TIME:
        return "evaluation time limit exceeded (the watchdog's limit per evaluation)";
    default:
        return "instruction limit exceeded";
    }
}

/* The watchdog, checked with the instruction count (every hook tick, every charge): a rule
 * past its wall-clock deadline is killed like one past its instruction budget. Returns the
 * kill kind, or KILL_NONE. */
static int past_deadline(const sop_rules *r)
{
    double now = sop__now_ms();
    if (now > r->eval_deadline_ms)
        return KILL_EVAL_TIME;
    return now > r->rule_deadline_ms ? KILL_TIME : KILL_NONE;
}

/* The allocator: counts every byte of the state; fails growth past the total cap and, while
 * rule code runs, past the rule's budget (which marks the rule killed). Never fails a shrink. */
void *sop__rules_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    sop_rules *r = ud;
    if (!ptr)
        osize = 0;
    if (nsize == 0) {
        free(ptr);
        r->used_bytes -= osize;
        return NULL;
    }
    if (nsize > osize) {
        size_t grow = nsize - osize;
        if (r->used_bytes + grow > r->total_cap_bytes ||
            (r->limits_active && r->used_bytes + grow > r->rule_cap_bytes)) {
            if (r->limits_active && !r->killed) {
                r->killed = KILL_MEM;
                /* Reading the stack allocates nothing; the thread is consistent here. */
                if (r->running)
                    lua_where(r->running, 0, r->kill_where, sizeof r->kill_where);
            }
            return NULL;
        }
    }
    void *p = realloc(ptr, nsize);
    if (!p) {
        if (nsize > osize)
            return NULL;
        p = ptr; /* a failed shrink keeps the block */
    }
    r->used_bytes = r->used_bytes - osize + nsize;
    return p;
}

/* Counts instructions; once the budget is spent, raises on every tick until the rule ends. */
void sop__rules_count_hook(lua_State *L, lua_Debug *ar)
{
    sop_rules *r = R(L);
    if (!r->limits_active)
        return;
    r->instructions += r->hook_tick;
    int over = r->instructions > r->max_instructions ? KILL_INSTR : KILL_NONE;
    if (!r->killed && !over)
        over = past_deadline(r);
    if (!r->killed && over) {
        r->killed = over;
        r->kill_where[0] = '\0';
        if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0)
            snprintf(r->kill_where, sizeof r->kill_where, "%s:%d", ar->short_src, ar->currentline);
    }
    if (r->killed) {
        lua_pushstring(L, sop__rules_kill_message(r));
        lua_error(L);
    }
}

static void raise_if_killed(lua_State *L)
{
    sop_rules *r = R(L);
    if (r->killed && r->limits_active) {
        lua_pushstring(L, sop__rules_kill_message(r));
        lua_error(L);
    }
}

/* Charge work done inside a C function (which the count hook cannot see) to the running rule;
 * kills it, as the hook would, once the budget is spent. */
static void charge_instructions(lua_State *L, double n)
{
    sop_rules *r = R(L);
    if (!r->limits_active || !(n > 0))
        return;
    double room = (double)(r->max_instructions - r->instructions) + 1;
    r->instructions += n < room ? (long long)n : (long long)room;
    int over = r->instructions > r->max_instructions ? KILL_INSTR : past_deadline(r);
    if (!r->killed && over) {
        r->killed = over;
        lua_where(L, 1, r->kill_where, sizeof r->kill_where);
    }
    raise_if_killed(L);
}

void sop__rules_start_limits(sop_rules *r)
{
    double now = sop__now_ms();
    if (r->phase != PHASE_RUN) /* the top level of a pack or site: its own evaluation */
        r->eval_deadline_ms = now + r->wall_eval_ms;
    r->rule_deadline_ms = now + r->wall_rule_ms;
    r->instructions = 0;
    r->killed = KILL_NONE;
    r->kill_where[0] = '\0';
    r->err_where[0] = '\0';
    r->running = r->L;
    r->rule_cap_bytes = r->used_bytes + r->max_bytes;
    r->limits_active = 1;
}

void sop__rules_stop_limits(sop_rules *r)
{
    r->limits_active = 0;
    r->running = r->L;
}

/* Message handler for every protected call of rule code: notes where, adds a traceback. */
int sop__rules_msgh(lua_State *L)
{
    sop_rules *r = R(L);
    const char *msg;
    if (lua_type(L, 1) == LUA_TSTRING || lua_type(L, 1) == LUA_TNUMBER)
        msg = lua_tostring(L, 1);
    else
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    lua_where(L, 1, r->err_where, sizeof r->err_where);
    luaL_traceback(L, L, msg, 1);
    return 1;
}

/* ---- sandboxed base functions ------------------------------------------------------------ */

static int finish_pcall(lua_State *L, int status, lua_KContext extra)
{
    raise_if_killed(L); /* a killed rule's error cannot be caught */
    if (status != LUA_OK && status != LUA_YIELD) {
        lua_pushboolean(L, 0);
        lua_pushvalue(L, -2);
        return 2;
    }
    return lua_gettop(L) - (int)extra;
}

static int sb_pcall(lua_State *L)
{
    luaL_checkany(L, 1);
    lua_pushboolean(L, 1);
    lua_insert(L, 1);
    int status = lua_pcallk(L, lua_gettop(L) - 2, LUA_MULTRET, 0, 0, finish_pcall);
    return finish_pcall(L, status, 0);
}

/* xpcall's handler runs where the error was raised, before unwinding; after a raise from the
 * count hook Lua has hooks switched off there, so rule code must not run: once the rule is
 * killed the handler passes the message through untouched. upvalue 1: the rule's handler. */
static int guarded_handler(lua_State *L)
{
    sop_rules *r = R(L);
    if (r->killed && r->limits_active) {
        lua_settop(L, 1);
        return 1;
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

static int sb_xpcall(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, guarded_handler, 1);
    lua_replace(L, 2);
    lua_pushboolean(L, 1);
    lua_pushvalue(L, 1);
    lua_rotate(L, 3, 2);
    int status = lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, finish_pcall);
    return finish_pcall(L, status, 2);
}

static int sb_co_create(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_State *co = lua_newthread(L);
    lua_pushvalue(L, 1);
    lua_xmove(L, co, 1);
    /* New threads do not inherit hooks: without this a coroutine would run unbounded. */
    lua_sethook(co, sop__rules_count_hook, LUA_MASKCOUNT, R(L)->hook_tick);
    return 1;
}

/* upvalue 1: the real coroutine.resume */
static int sb_co_resume(lua_State *L)
{
    sop_rules *r = R(L);
    lua_State *co = lua_tothread(L, 1);
    luaL_argexpected(L, co, 1, "coroutine");
    /* The allocator reads r->running's stack when it kills a rule: the registry anchors that
     * thread, so the pointer stays valid even if an error skips the restore below. */
    lua_pushvalue(L, 1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_RUNNING);
    r->running = co;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    r->running = L;
    lua_pushthread(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_RUNNING);
    raise_if_killed(L);
    return lua_gettop(L);
}

/* upvalues: the thread, sb_co_resume */
static int sb_co_wrap_call(lua_State *L)
{
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_rotate(L, 1, 2);
    lua_call(L, n + 1, LUA_MULTRET);
    if (!lua_toboolean(L, 1)) {
        lua_settop(L, 2);
        return lua_error(L);
    }
    lua_remove(L, 1);
    return lua_gettop(L);
}

/* coroutine.close. A coroutine that died in an error stays unwound up to its to-be-closed
 * variables, and when that error came from the count hook (a kill) Lua leaves hooks off in it:
 * its __close handlers would run outside every limit. So the handlers of a coroutine that
 * died in an error never run; close returns false and the error, as Lua's close does.
 * upvalue 1: the real coroutine.close. */
static int sb_co_close(lua_State *L)
{
    lua_State *co = lua_tothread(L, 1);
    luaL_argexpected(L, co, 1, "coroutine");
    int st = lua_status(co);
    if (st != LUA_OK && st != LUA_YIELD) {
        lua_pushboolean(L, 0);
        if (lua_gettop(co) > 0) {
            lua_pushvalue(co, -1);
            lua_xmove(co, L, 1);
        } else {
            lua_pushnil(L);
        }
        return 2;
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    raise_if_killed(L);
    return lua_gettop(L);
}

/* upvalue 1: sb_co_resume */
static int sb_co_wrap(lua_State *L)
{
    sb_co_create(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushcclosure(L, sb_co_wrap_call, 2);
    return 1;
}

/* ---- C library calls with unbounded work ------------------------------------------------ */

/* string.find/match/gmatch/gsub (also reached as s:find(...) through the string metatable):
 * estimate the matcher's worst case, refuse it above the budget, charge it, then call the real
 * function. upvalues: the real function, the SOP_PAT_* kind. */
static int sb_pattern(lua_State *L)
{
    int kind = (int)lua_tointeger(L, lua_upvalueindex(2));
    size_t n, m;
    const char *s = luaL_checklstring(L, 1, &n);
    const char *p = luaL_checklstring(L, 2, &m);
    size_t from = 0;
    int isint = 0;
    lua_Integer init = kind == SOP_PAT_GSUB ? 1 : lua_tointegerx(L, 3, &isint);
    if (isint && init > 1)
        from = (size_t)init - 1 < n ? (size_t)init - 1 : n;
    else if (isint && init < 0)
        from = (size_t) - (init + 1) < n ? n - (size_t) - (init + 1) - 1 : 0;
    sop_pat_cost c;
    double per_start = 0;
    size_t repl_len = 0;
    if (kind == SOP_PAT_GSUB)
        per_start = sop__pattern_gsub_per_start(
            lua_type(L, 3) == LUA_TSTRING || lua_type(L, 3) == LUA_TNUMBER
                ? (lua_tolstring(L, 3, &repl_len), (long long)repl_len)
                : -1);
    sop__pattern_cost(kind, s + from, n - from, p, m, kind == SOP_PAT_FIND && lua_toboolean(L, 4),
                      per_start, SOP_PATTERN_BUDGET_STEPS, &c);
    if (c.over) {
        char where[160], msg[300];
        lua_where(L, 1, where, sizeof where);
        if (c.plain)
            snprintf(msg, sizeof msg,
                     "pattern too costly: %zu-byte subject searched for a %zu-byte string "
                     "(limit %.0e steps)",
                     n - from, m, SOP_PATTERN_BUDGET_STEPS);
        else
            snprintf(msg, sizeof msg,
                     "pattern too costly: %zu-byte subject with %d unbounded repetitions "
                     "(limit %.0e steps)",
                     n - from, c.unbounded, SOP_PATTERN_BUDGET_STEPS);
        lua_pushfstring(L, "%s%s%s", where, where[0] ? ": " : "", msg);
        return lua_error(L);
    }
    charge_instructions(L, c.steps / STEPS_PER_INSTRUCTION);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

/* string.rep: an empty result would still loop n times (("").rep("", 1e15) runs for days);
 * a non-empty one is bounded by the memory limit, and its copy loop is charged after.
 * upvalue 1: the real function. */
static int sb_rep(lua_State *L)
{
    size_t l, lsep;
    luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &lsep);
    if (n > 0 && l + lsep == 0) {
        lua_pushliteral(L, "");
        return 1;
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    if (n > 0)
        charge_instructions(L, (double)n / 16);
    return 1;
}

/* table.move(a1, f, e, t [,a2]) loops e - f + 1 times in C even over empty tables: charge the
 * loop (about 4 instructions' worth per element) before it runs. upvalue 1: the real one. */
static int sb_table_move(lua_State *L)
{
    lua_Integer f = luaL_checkinteger(L, 2), e = luaL_checkinteger(L, 3);
    if (e >= f)
        charge_instructions(L, 4.0 * ((double)e - (double)f + 1));
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/* Replace t[name] (t at idx) by fn with the old value as upvalue 1 (and `kind` as 2 if >= 0). */
static void wrap_field(lua_State *L, int idx, const char *name, lua_CFunction fn, int kind)
{
    lua_getfield(L, idx, name);
    if (kind >= 0)
        lua_pushinteger(L, kind);
    lua_pushcclosure(L, fn, kind >= 0 ? 2 : 1);
    lua_setfield(L, idx, name);
}

/* ---- read-only proxies for ev and th ----------------------------------------------------- */

/* If idx is a proxy, push the real table behind it and return 1; else push nothing. */
static int push_real(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) != LUA_TTABLE)
        return 0;
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &K_P2R) != LUA_TTABLE) {
        lua_pop(L, 1);
        return 0;
    }
    lua_pushvalue(L, idx);
    if (lua_rawget(L, -2) != LUA_TTABLE) {
        lua_pop(L, 2);
        return 0;
    }
    lua_remove(L, -2);
    return 1;
}

/* Push the proxy of the real table at idx (one per table per run). */
void sop__rules_push_proxy(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    luaL_checkstack(L, 5, NULL);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_R2P);
    lua_pushvalue(L, idx);
    if (lua_rawget(L, -2) == LUA_TTABLE) {
        lua_remove(L, -2);
        return;
    }
    lua_pop(L, 1);
    lua_createtable(L, 0, 0);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_PROXY_MT);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, idx);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4); /* R2P[real] = proxy */
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_P2R);
    lua_pushvalue(L, -2);
    lua_pushvalue(L, idx);
    lua_rawset(L, -3); /* P2R[proxy] = real */
    lua_pop(L, 1);
    lua_remove(L, -2);
}

/* The reads check (sop__rules_set_check_reads): the path of the evidence proxy at idx ("" for
 * ev itself) pushed, or NULL with nothing pushed when no rule is being checked or idx is not
 * a view of the evidence (th, a rule's own table). */
static const char *push_path(lua_State *L, int idx)
{
    if (!R(L)->check_reads)
        return NULL;
    idx = lua_absindex(L, idx);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &K_READ_LOG) != LUA_TTABLE) {
        lua_pop(L, 1);
        return NULL;
    }
    lua_pop(L, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_PATHS);
    lua_pushvalue(L, idx);
    if (lua_rawget(L, -2) != LUA_TSTRING) {
        lua_pop(L, 2);
        return NULL;
    }
    lua_remove(L, -2);
    return lua_tostring(L, -1);
}

/* Log that the running rule read `what` of the evidence at the path on top of the stack (which
 * is popped): log[path][what], `what` being a member's name, true for any number key ("[]"),
 * or false for the table itself. The full paths ("a.b", "a[]") are made once per rule, when
 * the log is checked (rules_run.c), not at every read. */
static void note_member(lua_State *L, int what)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_READ_LOG);
    lua_pushvalue(L, -2);
    if (lua_rawget(L, -2) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, 0, 4);
        lua_pushvalue(L, -3);
        lua_pushvalue(L, -2);
        lua_rawset(L, -4);
    }
    if (what == 0)
        lua_pushboolean(L, 0);
    else if (lua_type(L, what) == LUA_TNUMBER)
        lua_pushboolean(L, 1);
    else
        lua_pushvalue(L, what);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 3); /* the members, the log, the path */
}

/* The running rule read the proxy at idx as a whole (its length, an iteration). */
static void note_read_self(lua_State *L, int idx)
{
    const char *p = push_path(L, idx);
    if (!p)
        return;
    if (*p)
        note_member(L, 0);
    else
        lua_pop(L, 1);
}

/* The running rule read member `key` of the proxy at idx and got `val` (a proxy when a table). */
static void note_read(lua_State *L, int idx, int key, int val)
{
    key = lua_absindex(L, key);
    val = lua_absindex(L, val);
    int kt = lua_type(L, key);
    if (kt != LUA_TNUMBER && kt != LUA_TSTRING)
        return;
    const char *p = push_path(L, idx);
    if (!p)
        return;
    if (lua_type(L, val) == LUA_TTABLE) { /* the proxy knows its path from its first read */
        lua_rawgetp(L, LUA_REGISTRYINDEX, &K_PATHS);
        lua_pushvalue(L, val);
        if (lua_rawget(L, -2) == LUA_TNIL) {
            lua_pop(L, 1);
            lua_pushvalue(L, val);
            if (kt == LUA_TNUMBER)
                lua_pushfstring(L, "%s[]", p);
            else
                lua_pushfstring(L, "%s%s%s", p, *p ? "." : "", lua_tostring(L, key));
            lua_rawset(L, -3);
        } else {
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    note_member(L, key);
}

/* Push the value at idx, wrapped in a proxy when it is a table. */
static void push_wrapped(lua_State *L, int idx)
{
    if (lua_type(L, idx) == LUA_TTABLE)
        sop__rules_push_proxy(L, idx);
    else
        lua_pushvalue(L, idx);
}

static int ro_index(lua_State *L)
{
    if (!push_real(L, 1))
        return 0;
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    push_wrapped(L, -1);
    note_read(L, 1, 2, -1);
    return 1;
}

/* th.x for a name the pack never declared is a mistake worth an error, not a nil. */
static int th_index(lua_State *L)
{
    if (!push_real(L, 1))
        return 0;
    lua_pushvalue(L, 2);
    if (lua_rawget(L, -2) == LUA_TNIL)
        return luaL_error(L, "unknown threshold '%s'", luaL_tolstring(L, 2, NULL));
    /* A rule that lists the thresholds it `uses` reads only those (docs/rules.md is generated
     * from the list, so it cannot drift from the code). */
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &K_USES) == LUA_TTABLE) {
        lua_pushvalue(L, 2);
        if (lua_rawget(L, -2) == LUA_TNIL)
            return luaL_error(L, "threshold '%s' is not in the rule's `uses` list",
                              luaL_tolstring(L, 2, NULL));
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return 1;
}

static int ro_newindex(lua_State *L)
{
    return luaL_error(L, "the evidence and the thresholds are read-only");
}

static int ro_len(lua_State *L)
{
    note_read_self(L, 1);
    lua_pushinteger(L, push_real(L, 1) ? (lua_Integer)lua_rawlen(L, -1) : 0);
    return 1;
}

/* next() that sees through proxies. */
static int sb_next(lua_State *L)
{
    lua_settop(L, 2);
    note_read_self(L, 1);
    if (push_real(L, 1)) { /* real at 3 */
        lua_pushvalue(L, 2);
        if (!lua_next(L, 3)) {
            lua_pushnil(L);
            return 1;
        }
        push_wrapped(L, 5);
        lua_remove(L, 5);
        note_read(L, 1, 4, 5);
        return 2;
    }
    luaL_checktype(L, 1, LUA_TTABLE);
    if (lua_next(L, 1))
        return 2;
    lua_pushnil(L);
    return 1;
}

static int ro_pairs(lua_State *L)
{
    lua_pushcfunction(L, sb_next);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

static int sb_rawget(lua_State *L)
{
    lua_settop(L, 2);
    if (push_real(L, 1)) {
        lua_pushvalue(L, 2);
        lua_rawget(L, 3);
        push_wrapped(L, 4);
        note_read(L, 1, 2, 5);
        return 1;
    }
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checkany(L, 2);
    lua_rawget(L, 1);
    return 1;
}

static int sb_rawlen(lua_State *L)
{
    note_read_self(L, 1);
    if (push_real(L, 1)) {
        lua_pushinteger(L, (lua_Integer)lua_rawlen(L, -1));
        return 1;
    }
    int t = lua_type(L, 1);
    luaL_argexpected(L, t == LUA_TTABLE || t == LUA_TSTRING, 1, "table or string");
    lua_pushinteger(L, (lua_Integer)lua_rawlen(L, 1));
    return 1;
}

static int sb_rawset(lua_State *L)
{
    if (push_real(L, 1))
        return ro_newindex(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checkany(L, 2);
    luaL_checkany(L, 3);
    lua_settop(L, 3);
    lua_rawset(L, 1);
    return 1;
}

static int sb_setmetatable(lua_State *L)
{
    int t = lua_type(L, 2);
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
    /* A finalizer runs with hooks off, outside every limit; a __close handler may run while
     * a killed coroutine is closed: neither exists in rule code. */
    if (t == LUA_TTABLE) {
        static const char *const banned[] = {"__gc", "__close"};
        for (int i = 0; i < 2; i++) {
            lua_pushstring(L, banned[i]);
            if (lua_rawget(L, 2) != LUA_TNIL)
                return luaL_error(L, "%s metamethods are not allowed in rules", banned[i]);
            lua_pop(L, 1);
        }
    }
    if (luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL)
        return luaL_error(L, "cannot change a protected metatable");
    lua_settop(L, 2);
    lua_setmetatable(L, 1);
    return 1;
}

/* ---- building the state ------------------------------------------------------------------ */

/* Copy the named fields of the table at src (absolute) into a new table on top. */
static void copy_fields(lua_State *L, int src, const char *const *names)
{
    lua_newtable(L);
    for (; *names; names++) {
        lua_getfield(L, src, *names);
        lua_setfield(L, -2, *names);
    }
}

/* Copy every field of the table at src (absolute) except `skip` into a new table on top. */
static void copy_table(lua_State *L, int src, const char *skip)
{
    lua_newtable(L);
    lua_pushnil(L);
    while (lua_next(L, src)) {
        if (skip && lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), skip) == 0) {
            lua_pop(L, 1);
            continue;
        }
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, -4);
    }
}

/* Open the libraries into the registry (not as globals) and build the sandbox table. */

/* A read-only view's metatable, kept in the registry under key: reads through index_fn,
 * writes refused, # and pairs on the underlying table, metatable hidden. */
static void register_ro_mt(lua_State *L, lua_CFunction index_fn, const void *key)
{
    lua_newtable(L);
    set_fn(L, "__index", index_fn);
    set_fn(L, "__newindex", ro_newindex);
    set_fn(L, "__len", ro_len);
    set_fn(L, "__pairs", ro_pairs);
    lua_pushliteral(L, "read-only");
    lua_setfield(L, -2, "__metatable");
    lua_rawsetp(L, LUA_REGISTRYINDEX, key);
}
/* The base functions the sandbox replaces with its own (the rest of its base is copied). */
static const luaL_Reg sandbox_base[] = {{"next", sb_next},
                                        {"rawget", sb_rawget},
                                        {"rawlen", sb_rawlen},
                                        {"rawset", sb_rawset},
                                        {"setmetatable", sb_setmetatable},
                                        {"pcall", sb_pcall},
                                        {"xpcall", sb_xpcall},
                                        {NULL, NULL}};

void sop__rules_setup_state(lua_State *L, const sop_rules_module *modules)
{
    static const struct {
        const char *name;
        lua_CFunction open;
    } libs[] = {{"_G", luaopen_base},
                {"string", luaopen_string},
                {"table", luaopen_table},
                {"math", luaopen_math},
                {"utf8", luaopen_utf8},
                {"os", luaopen_os},
                {"coroutine", luaopen_coroutine}};
    int base = lua_gettop(L);
    for (size_t i = 0; i < sizeof libs / sizeof *libs; i++)
        luaL_requiref(L, libs[i].name, libs[i].open, 0); /* base+1 .. base+7 */
    int g = base + 1, str = base + 2, tab = base + 3, math = base + 4, utf8 = base + 5,
        os = base + 6, co = base + 7;

    /* string.dump is reachable through ("").dump: remove it from the real table, and hide the
     * string metatable from getmetatable. */
    lua_pushnil(L);
    lua_setfield(L, str, "dump");
    /* The string table is also the string metatable's __index: wrapping its entries in place
     * covers s:match(...) as well as string.match(s, ...). */
    wrap_field(L, str, "find", sb_pattern, SOP_PAT_FIND);
    wrap_field(L, str, "match", sb_pattern, SOP_PAT_MATCH);
    wrap_field(L, str, "gmatch", sb_pattern, SOP_PAT_GMATCH);
    wrap_field(L, str, "gsub", sb_pattern, SOP_PAT_GSUB);
    wrap_field(L, str, "rep", sb_rep, -1);
    wrap_field(L, tab, "move", sb_table_move, -1);
    lua_pushliteral(L, "");
    lua_getmetatable(L, -1);
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 2);

    new_registry_table(L, &K_RULES);
    new_registry_table(L, &K_IDS);
    new_registry_table(L, &K_DEFAULTS);
    new_registry_table(L, &K_EXPLAINS);
    new_registry_table(L, &K_LOADED);
    new_registry_table(L, &K_P2R);
    new_registry_table(L, &K_R2P);
    lua_pushboolean(L, 0); /* the slot exists, so setting it later allocates nothing */
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_RUNNING);
    lua_newtable(L);
    lua_newtable(L);
    for (const sop_rules_module *m = modules; m && m->name; m++) {
        if (!m->source)
            continue;
        size_t clen = 0;
        if (sop__embedded_code(m->source, &clen)) {
            /* An embedded module: its text and bytecode are static data of the library, so
             * the table keeps the text's address (require finds the code from it), not a copy
             * of either (1 MB of Lua heap for the default pack). */
            lua_pushlightuserdata(L, (void *)(uintptr_t)m->source);
            lua_setfield(L, -2, m->name);
        } else {
            lua_pushstring(L, m->source);
            lua_setfield(L, -3, m->name);
        }
    }
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_MODCODE);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_MODULES);

    register_ro_mt(L, ro_index, &K_PROXY_MT); /* ev views */
    register_ro_mt(L, th_index, &K_TH_MT);    /* th: unknown names raise */

    luaL_newmetatable(L, VERDICT_MT);
    lua_pushliteral(L, "verdict");
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);

    /* The sandbox: an allow-list, nothing else. */
    static const char *const base_ok[] = {"assert",   "error",    "ipairs",       "pairs",
                                          "select",   "tonumber", "tostring",     "type",
                                          "rawequal", "_VERSION", "getmetatable", NULL};
    copy_fields(L, g, base_ok);
    int sb = lua_gettop(L);
    luaL_setfuncs(L, sandbox_base, 0);
    lua_getfield(L, tab, "unpack");
    lua_setfield(L, sb, "unpack");
    copy_table(L, str, "dump");
    lua_setfield(L, sb, "string");
    copy_table(L, tab, NULL);
    lua_setfield(L, sb, "table");
    copy_table(L, math, NULL);
    lua_setfield(L, sb, "math");
    copy_table(L, utf8, NULL);
    lua_setfield(L, sb, "utf8");
    static const char *const os_ok[] = {"time", "clock", "date", NULL};
    copy_fields(L, os, os_ok);
    lua_setfield(L, sb, "os");
    static const char *const co_ok[] = {"yield", "status", "running", "isyieldable", NULL};
    copy_fields(L, co, co_ok);
    lua_getfield(L, co, "close");
    lua_pushcclosure(L, sb_co_close, 1);
    lua_setfield(L, -2, "close");
    set_fn(L, "create", sb_co_create);
    lua_getfield(L, co, "resume");
    lua_pushcclosure(L, sb_co_resume, 1);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "resume");
    lua_pushcclosure(L, sb_co_wrap, 1);
    lua_setfield(L, -2, "wrap");
    lua_setfield(L, sb, "coroutine");

    luaL_setfuncs(L, sop__rules_dsl_lib, 0);
    lua_getfield(L, str, "format");
    lua_setfield(L, sb, "fmt");
    lua_pushvalue(L, sb);
    lua_setfield(L, sb, "_G");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_SANDBOX);
    lua_settop(L, base);
}
