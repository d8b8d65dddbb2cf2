/* rules.c — the rule runner: one sandboxed Lua 5.4 state per loaded pack (allow-listed globals,
 * the rule DSL, a sandboxed require), each rule run under an instruction and a memory budget
 * that pcall and coroutines cannot escape. Depends on Lua 5.4, engine/value.c and
 * engine/bridge/lua.c (value trees <-> tables). */
#include "rules.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "bridge/lua_bridge.h"
#include "pattern_cost.h"
#include "sop.h"

#define HOOK_TICK 1000             /* instructions between two count-hook calls */
#define MAX_TEXT_BYTES (16 * 1024) /* one text field of a verdict */
#define MAX_REFS 16
#define MAX_SOURCE_BYTES (4 << 20) /* a plugin file */
#define MAX_NAME 64                /* rule ids and threshold names */
#define MAX_MESSAGE 300            /* a rule_errors message */
/* An allowed call is charged one instruction per this many estimated steps: a step of the
 * worst subjects costs up to ~4 ns, a VM instruction ~2.5 ns, and the estimate of a
 * everyday pattern on everyday text is 10-100x above its real cost. */
#define STEPS_PER_INSTRUCTION 4.0

_Static_assert(LUA_EXTRASPACE >= sizeof(void *), "the runner lives in the extra space");

enum { KILL_NONE, KILL_INSTR, KILL_MEM, KILL_TIME, KILL_EVAL_TIME };
enum { PHASE_IDLE, PHASE_LOAD, PHASE_RUN };
enum { VERDICT_HIT = 1, VERDICT_CLEAR, VERDICT_UNKNOWN };

typedef struct {
    char *key;
    char *value;
} override;

typedef struct {
    char *key;
    int type; /* LUA_TNUMBER, LUA_TBOOLEAN or LUA_TSTRING: the type of the pack's default */
} known_threshold;

struct sop_rules {
    lua_State *L;
    /* limits (settable) */
    long long max_instructions;
    size_t max_bytes;
    size_t total_cap_bytes;
    int hook_tick;
    double wall_rule_ms, wall_eval_ms; /* the watchdog: wall-clock limits per rule, per run */
    /* accounting while rule code runs */
    size_t used_bytes;
    size_t rule_cap_bytes;
    long long instructions;
    double rule_deadline_ms, eval_deadline_ms; /* CLOCK_MONOTONIC */
    int limits_active;
    int killed;
    char kill_where[160];
    char err_where[160]; /* first Lua frame the message handler saw */
    lua_State *running;  /* the thread running rule code: the main one or a coroutine */
    int phase;
    /* the loaded pack */
    char **ids;
    size_t nids;
    known_threshold *known;
    size_t nknown;
    char *search_dir;
    /* kept across loads */
    override *ovr;
    size_t novr;
};

/* Registry keys (their addresses are the keys). */
static const char K_SANDBOX, K_RULES, K_IDS, K_DEFAULTS, K_MODULES, K_LOADED, K_LOADING, K_P2R,
    K_R2P, K_PROXY_MT, K_TH_MT, K_RUNNING, K_USES;
#define VERDICT_MT "sop.verdict"

static sop_rules *R(lua_State *L)
{
    return *(sop_rules **)lua_getextraspace(L);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

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

static const char *kill_message(const sop_rules *r)
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

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The watchdog, checked with the instruction count (every hook tick, every charge): a rule
 * past its wall-clock deadline is killed like one past its instruction budget. Returns the
 * kill kind, or KILL_NONE. */
static int past_deadline(const sop_rules *r)
{
    double now = mono_ms();
    if (now > r->eval_deadline_ms)
        return KILL_EVAL_TIME;
    return now > r->rule_deadline_ms ? KILL_TIME : KILL_NONE;
}

/* The allocator: counts every byte of the state; fails growth past the total cap and, while
 * rule code runs, past the rule's budget (which marks the rule killed). Never fails a shrink. */
static void *l_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
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
static void count_hook(lua_State *L, lua_Debug *ar)
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
        lua_pushstring(L, kill_message(r));
        lua_error(L);
    }
}

static void raise_if_killed(lua_State *L)
{
    sop_rules *r = R(L);
    if (r->killed && r->limits_active) {
        lua_pushstring(L, kill_message(r));
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

static void start_limits(sop_rules *r)
{
    double now = mono_ms();
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

static void stop_limits(sop_rules *r)
{
    r->limits_active = 0;
    r->running = r->L;
}

/* Message handler for every protected call of rule code: notes where, adds a traceback. */
static int msgh(lua_State *L)
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
    lua_sethook(co, count_hook, LUA_MASKCOUNT, R(L)->hook_tick);
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
static void push_proxy(lua_State *L, int idx)
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

/* Push the value at idx, wrapped in a proxy when it is a table. */
static void push_wrapped(lua_State *L, int idx)
{
    if (lua_type(L, idx) == LUA_TTABLE)
        push_proxy(L, idx);
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
    lua_pushinteger(L, push_real(L, 1) ? (lua_Integer)lua_rawlen(L, -1) : 0);
    return 1;
}

/* next() that sees through proxies. */
static int sb_next(lua_State *L)
{
    lua_settop(L, 2);
    if (push_real(L, 1)) { /* real at 3 */
        lua_pushvalue(L, 2);
        if (!lua_next(L, 3)) {
            lua_pushnil(L);
            return 1;
        }
        push_wrapped(L, 5);
        lua_remove(L, 5);
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
        return 1;
    }
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checkany(L, 2);
    lua_rawget(L, 1);
    return 1;
}

static int sb_rawlen(lua_State *L)
{
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

/* ---- the rule DSL ------------------------------------------------------------------------ */

static int valid_name(const char *s, size_t len, int allow_dash)
{
    if (len == 0 || len > MAX_NAME)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.' &&
            !(allow_dash && s[i] == '-'))
            return 0;
    return 1;
}

static void need_phase(lua_State *L, const char *fn)
{
    if (R(L)->phase != PHASE_LOAD)
        luaL_error(L, "%s is only allowed at the top level of a rule pack", fn);
}

static int dsl_thresholds(lua_State *L)
{
    need_phase(L, "thresholds{}");
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_DEFAULTS); /* 2 */
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        size_t len = 0;
        const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &len) : NULL;
        if (!k || !valid_name(k, len, 0))
            return luaL_error(L, "threshold names are strings of letters, digits, '_' and '.'");
        int t = lua_type(L, -1);
        if (t != LUA_TNUMBER && t != LUA_TBOOLEAN && t != LUA_TSTRING)
            return luaL_error(L, "threshold '%s' must be a number, a boolean or a string", k);
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, 2);
    }
    return 0;
}

static int valid_severity(const char *s)
{
    return s && (strcmp(s, "high") == 0 || strcmp(s, "warn") == 0 || strcmp(s, "info") == 0);
}

/* The documentation fields of a rule (docs/rules.md is generated from them): `title` (text),
 * `reads` (evidence paths) and `uses` (threshold names), each a list of at most 64 short
 * strings. Copied into the stored rule at `dst`; `uses` is checked against the thresholds once
 * the whole pack has loaded (check_uses). */
static int push_text(lua_State *L, int idx, const char *what);
static void rule_doc_fields(lua_State *L, int src, int dst, const char *id)
{
    char what[160];
    snprintf(what, sizeof what, "rule '%s': title", id);
    lua_getfield(L, src, "title");
    if (push_text(L, -1, what) == 2)
        luaL_error(L, "rule '%s': title is empty", id);
    lua_setfield(L, dst, "title");
    lua_pop(L, 1);
    int dt = lua_getfield(L, src, "doc"); /* optional: what fires it, in English */
    if (dt != LUA_TNIL && dt != LUA_TSTRING)
        luaL_error(L, "rule '%s': doc must be a string", id);
    lua_setfield(L, dst, "doc");
    static const char *const lists[] = {"reads", "uses"};
    for (int i = 0; i < 2; i++) {
        int t = lua_getfield(L, src, lists[i]);
        if (t == LUA_TNIL) {
            lua_pop(L, 1);
            continue;
        }
        if (t != LUA_TTABLE)
            luaL_error(L, "rule '%s': %s must be a list of strings", id, lists[i]);
        lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
        if (n > 64)
            luaL_error(L, "rule '%s': %s has more than 64 entries", id, lists[i]);
        lua_createtable(L, (int)n, 0);
        for (lua_Integer j = 1; j <= n; j++) {
            size_t len = 0;
            if (lua_rawgeti(L, -2, j) != LUA_TSTRING || (lua_tolstring(L, -1, &len), len == 0)
                || len > 120)
                luaL_error(L, "rule '%s': %s[%d] must be a non-empty string", id, lists[i],
                           (int)j);
            lua_rawseti(L, -2, j);
        }
        if (i == 1) { /* uses: also as a set, for th_index */
            lua_createtable(L, 0, (int)n);
            for (lua_Integer j = 1; j <= n; j++) {
                lua_rawgeti(L, -2, j);
                lua_pushboolean(L, 1);
                lua_rawset(L, -3);
            }
            lua_setfield(L, dst, "uses_set");
        }
        lua_setfield(L, dst, lists[i]);
        lua_pop(L, 1);
    }
}

/* Every threshold a rule says it `uses` must be declared by the pack (or the site file). */
static void check_uses(lua_State *L)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_RULES);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_DEFAULTS);
    int rules = lua_gettop(L) - 1, defs = lua_gettop(L);
    lua_Integer n = (lua_Integer)lua_rawlen(L, rules);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, rules, i);
        if (lua_getfield(L, -1, "uses") == LUA_TTABLE) {
            lua_Integer m = (lua_Integer)lua_rawlen(L, -1);
            for (lua_Integer j = 1; j <= m; j++) {
                lua_rawgeti(L, -1, j);
                lua_pushvalue(L, -1);
                if (lua_rawget(L, defs) == LUA_TNIL) {
                    lua_getfield(L, -4, "where");
                    lua_getfield(L, -5, "id");
                    luaL_error(L, "%s: rule '%s' uses threshold '%s', which no thresholds{} "
                               "declares", lua_tostring(L, -2), lua_tostring(L, -1),
                               lua_tostring(L, -4));
                }
                lua_pop(L, 2);
            }
        }
        lua_pop(L, 2);
    }
    lua_pop(L, 2);
}

static int dsl_rule(lua_State *L)
{
    need_phase(L, "rule{}");
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    size_t idlen = 0;
    lua_getfield(L, 1, "id");       /* 2 */
    lua_getfield(L, 1, "section");  /* 3 */
    lua_getfield(L, 1, "severity"); /* 4 */
    lua_getfield(L, 1, "check");    /* 5 */
    const char *id = lua_type(L, 2) == LUA_TSTRING ? lua_tolstring(L, 2, &idlen) : NULL;
    if (!id || !valid_name(id, idlen, 1))
        return luaL_error(L, "rule needs an id: a string of letters, digits, '_', '-' and '.'");
    const char *section = lua_type(L, 3) == LUA_TSTRING ? lua_tostring(L, 3) : NULL;
    if (!section || !*section || strlen(section) > 16)
        return luaL_error(L, "rule '%s': section must be a string like \"2.2\"", id);
    const char *severity = lua_type(L, 4) == LUA_TSTRING ? lua_tostring(L, 4) : NULL;
    if (!valid_severity(severity))
        return luaL_error(L, "rule '%s': severity must be \"high\", \"warn\" or \"info\"", id);
    if (lua_type(L, 5) != LUA_TFUNCTION)
        return luaL_error(L, "rule '%s': check must be a function", id);

    luaL_where(L, 1);
    size_t wl;
    const char *w = lua_tolstring(L, -1, &wl);
    lua_pushlstring(L, w, wl >= 2 ? wl - 2 : wl); /* drop the ": " */
    lua_remove(L, -2);                            /* 6: where */

    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_IDS); /* 7 */
    lua_pushvalue(L, 2);
    if (lua_rawget(L, 7) == LUA_TSTRING)
        return luaL_error(L, "duplicate rule id '%s' (first defined at %s)", id,
                          lua_tostring(L, -1));
    lua_pop(L, 1);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 6);
    lua_rawset(L, 7);

    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_RULES); /* 8 */
    lua_createtable(L, 0, 8);
    static const char *const fields[] = {"id", "section", "severity", "check", "where"};
    for (int i = 0; i < 5; i++) {
        lua_pushvalue(L, 2 + i);
        lua_setfield(L, -2, fields[i]);
    }
    rule_doc_fields(L, 1, lua_gettop(L), id);
    lua_rawseti(L, 8, (lua_Integer)lua_rawlen(L, 8) + 1);
    return 0;
}

/* Push a clean copy of the text value at idx: a string, or a new {en=, zh=} table.
 * Returns 0 (pushing nil) when absent; 1 when non-empty text was pushed; 2 when empty. */
static int push_text(lua_State *L, int idx, const char *what)
{
    idx = lua_absindex(L, idx);
    size_t len;
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        lua_pushnil(L);
        return 0;
    case LUA_TSTRING:
        lua_tolstring(L, idx, &len);
        if (len > MAX_TEXT_BYTES)
            luaL_error(L, "%s is longer than %d bytes", what, MAX_TEXT_BYTES);
        lua_pushvalue(L, idx);
        return len ? 1 : 2;
    case LUA_TTABLE: {
        int nonempty = 0, any = 0;
        lua_createtable(L, 0, 2);
        static const char *const langs[] = {"en", "zh"};
        for (int i = 0; i < 2; i++) {
            int t = lua_getfield(L, idx, langs[i]);
            if (t == LUA_TSTRING) {
                lua_tolstring(L, -1, &len);
                if (len > MAX_TEXT_BYTES)
                    luaL_error(L, "%s is longer than %d bytes", what, MAX_TEXT_BYTES);
                nonempty |= len > 0;
                any = 1;
                lua_setfield(L, -2, langs[i]);
            } else if (t == LUA_TNIL) {
                lua_pop(L, 1);
            } else {
                luaL_error(L, "%s.%s must be a string", what, langs[i]);
            }
        }
        if (!any)
            luaL_error(L, "%s must be a string or {en = \"...\", zh = \"...\"}", what);
        return nonempty ? 1 : 2;
    }
    default:
        return luaL_error(L, "%s must be a string or {en = \"...\", zh = \"...\"}", what);
    }
}

/* Wrap the clean table/text on top of the stack in a verdict userdata (opaque to rules). */
static int make_verdict(lua_State *L, int kind)
{
    int *k = lua_newuserdatauv(L, sizeof(int), 1);
    *k = kind;
    lua_insert(L, -2);
    lua_setiuservalue(L, -2, 1);
    luaL_setmetatable(L, VERDICT_MT);
    return 1;
}

static const char *const HIT_TEXT[] = {"symptom", "evidence", "cause", "fix", "verify"};

static int dsl_hit(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        lua_pop(L, 1);
        const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        int ok = k && (strcmp(k, "refs") == 0 || strcmp(k, "severity") == 0);
        for (size_t i = 0; k && !ok && i < sizeof HIT_TEXT / sizeof *HIT_TEXT; i++)
            ok = strcmp(k, HIT_TEXT[i]) == 0;
        if (!ok)
            return luaL_error(L, "hit: unknown field '%s'", k ? k : luaL_typename(L, -1));
    }
    lua_createtable(L, 0, 7); /* 2: the clean copy */
    for (size_t i = 0; i < sizeof HIT_TEXT / sizeof *HIT_TEXT; i++) {
        lua_getfield(L, 1, HIT_TEXT[i]);
        int got = push_text(L, -1, HIT_TEXT[i]);
        if (i == 1 && got != 1)
            return luaL_error(L, "hit without evidence");
        lua_setfield(L, 2, HIT_TEXT[i]);
        lua_pop(L, 1);
    }
    lua_getfield(L, 1, "refs"); /* 3 */
    lua_createtable(L, 1, 0);   /* 4 */
    lua_Integer nrefs = 0;
    if (lua_type(L, 3) == LUA_TSTRING) {
        lua_pushvalue(L, 3);
        lua_rawseti(L, 4, ++nrefs);
    } else if (lua_type(L, 3) == LUA_TTABLE) {
        for (lua_Integer i = 1; i <= MAX_REFS + 1; i++) {
            int t = lua_geti(L, 3, i);
            if (t == LUA_TNIL) {
                lua_pop(L, 1);
                break;
            }
            if (t != LUA_TSTRING || lua_rawlen(L, -1) == 0 || lua_rawlen(L, -1) > 2048)
                return luaL_error(L, "hit: refs must be non-empty strings (links)");
            if (i > MAX_REFS)
                return luaL_error(L, "hit: more than %d refs", MAX_REFS);
            lua_rawseti(L, 4, ++nrefs);
        }
    } else if (lua_type(L, 3) != LUA_TNIL) {
        return luaL_error(L, "hit: refs must be a list of links");
    }
    if (nrefs == 0)
        return luaL_error(L, "hit without refs");
    lua_setfield(L, 2, "refs");
    lua_pop(L, 1);
    lua_getfield(L, 1, "severity");
    if (!lua_isnil(L, -1) && !valid_severity(lua_tostring(L, -1)))
        return luaL_error(L, "hit: severity must be \"high\", \"warn\" or \"info\"");
    if (lua_type(L, -1) == LUA_TSTRING)
        lua_setfield(L, 2, "severity");
    else
        lua_pop(L, 1);
    return make_verdict(L, VERDICT_HIT);
}

static int text_verdict(lua_State *L, int kind, const char *what)
{
    lua_settop(L, 1);
    if (push_text(L, 1, what) == 0)
        return luaL_error(L, "%s() needs a %s", kind == VERDICT_CLEAR ? "clear" : "unknown", what);
    return make_verdict(L, kind);
}

static int dsl_clear(lua_State *L)
{
    return text_verdict(L, VERDICT_CLEAR, "note");
}
static int dsl_unknown(lua_State *L)
{
    return text_verdict(L, VERDICT_UNKNOWN, "reason");
}

/* kb(n): a size given in kB as "512 KiB", "1.5 MiB", "1.2 GiB". */
static int dsl_kb(lua_State *L)
{
    double v = luaL_checknumber(L, 1);
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    while (fabs(v) >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    if (i == 0)
        lua_pushfstring(L, "%d %s", (int)lround(v), unit[0]);
    else {
        char buf[64];
        snprintf(buf, sizeof buf, "%.1f %s", v, unit[i]);
        lua_pushstring(L, buf);
    }
    return 1;
}

/* pct(a, b): 100*a/b, or nil when either is absent or b is 0. */
static int dsl_pct(lua_State *L)
{
    int ok_a, ok_b;
    double a = lua_tonumberx(L, 1, &ok_a), b = lua_tonumberx(L, 2, &ok_b);
    if (!ok_a || !ok_b || b == 0 || isnan(a) || isnan(b))
        lua_pushnil(L);
    else
        lua_pushnumber(L, 100.0 * a / b);
    return 1;
}

/* Read a regular text file of at most `max` bytes into a malloc'd buffer; errno on failure. */
static char *read_file(const char *path, size_t max, size_t *len, char *why, size_t whylen)
{
    /* O_NONBLOCK: a FIFO must not block the open; only a regular file is read */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0)
        goto out;
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "is not a regular file");
        errno = EINVAL;
        goto out;
    }
    if ((size_t)st.st_size > max) {
        errno = EFBIG;
        goto out;
    }
    if (sop__rules_file_trusted(&st, why, whylen) != 0) {
        errno = EPERM;
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf)
        goto out;
    size_t n = 0;
    while (n < (size_t)st.st_size) {
        ssize_t got = read(fd, buf + n, (size_t)st.st_size - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    buf[n] = '\0';
    *len = n;
out:
    close(fd);
    return buf;
}

/* A new global environment for one chunk (a pack's file, each plugin, the site file): a copy of
 * the pristine sandbox kept in the registry, with its library tables (string, table, math...)
 * copied too. So a chunk that replaces `hit`, `pairs` or `string.format`, or sets a global,
 * changes them for its own rules only: no pack or plugin sees another's globals or changes to
 * the built-ins. Modules share values only through what `require` returns. */
static void push_fresh_env(lua_State *L)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_SANDBOX);
    int tmpl = lua_gettop(L);
    lua_createtable(L, 0, 48);
    int env = tmpl + 1;
    lua_pushnil(L);
    while (lua_next(L, tmpl)) {
        if (lua_type(L, -1) == LUA_TTABLE && !lua_rawequal(L, -1, tmpl)) {
            int lib = lua_gettop(L);
            lua_newtable(L);
            lua_pushnil(L);
            while (lua_next(L, lib)) {
                lua_pushvalue(L, -2);
                lua_insert(L, -2);
                lua_rawset(L, -4);
            }
            lua_replace(L, lib);
        }
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, env);
    }
    lua_pushvalue(L, env);
    lua_setfield(L, env, "_G");
    lua_remove(L, tmpl);
}

static int is_binary_chunk(const char *s, size_t len)
{
    return len >= 4 && memcmp(s, LUA_SIGNATURE, 4) == 0;
}

/* require "plugins.x": the embedded modules first, then <search_dir>/plugins/x.lua (text only),
 * run once in the sandbox and cached. */
static int sb_require(lua_State *L)
{
    sop_rules *r = R(L);
    size_t len;
    const char *name = luaL_checklstring(L, 1, &len);
    lua_settop(L, 1);
    int ok = len > 0 && len <= 128 && name[0] != '.' && name[len - 1] != '.' && !strstr(name, "..");
    for (size_t i = 0; ok && i < len; i++)
        ok = isalnum((unsigned char)name[i]) || name[i] == '_' || name[i] == '.';
    if (!ok)
        return luaL_error(L, "bad module name '%s' (letters, digits, '_' and '.' only)", name);

    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_LOADED); /* 2 */
    lua_pushvalue(L, 1);
    int t = lua_rawget(L, 2);
    if (t == LUA_TLIGHTUSERDATA)
        return luaL_error(L, "circular require of '%s'", name);
    if (t != LUA_TNIL)
        return 1;
    lua_pop(L, 1);

    char rel[160], chunk[170];
    snprintf(rel, sizeof rel, "%s.lua", name);
    for (char *p = rel; *p && strcmp(p, ".lua") != 0; p++)
        if (*p == '.')
            *p = '/';
    snprintf(chunk, sizeof chunk, "@%s", rel);

    int status;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_MODULES);
    lua_pushvalue(L, 1);
    if (lua_rawget(L, -2) == LUA_TSTRING) {
        size_t slen;
        const char *src = lua_tolstring(L, -1, &slen);
        status = luaL_loadbufferx(L, src, slen, chunk, "t");
    } else if (r->search_dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", r->search_dir, rel);
        size_t flen = 0;
        char why[200] = "";
        char *buf = read_file(path, MAX_SOURCE_BYTES, &flen, why, sizeof why);
        if (!buf && why[0])
            return luaL_error(L, "module '%s': %s %s", name, rel, why);
        if (!buf)
            return luaL_error(L, "module '%s' not found: cannot read %s (%s)", name, rel,
                              strerror(errno));
        if (is_binary_chunk(buf, flen)) {
            free(buf);
            return luaL_error(L, "module '%s': %s is a binary chunk (only text is loaded)", name,
                              rel);
        }
        status = luaL_loadbufferx(L, buf, flen, chunk, "t");
        free(buf);
    } else {
        return luaL_error(L, "module '%s' not found (no embedded module, no search directory)",
                          name);
    }
    if (status != LUA_OK)
        return lua_error(L);
    push_fresh_env(L);
    lua_setupvalue(L, -2, 1); /* _ENV */
    lua_pushvalue(L, 1);
    lua_pushlightuserdata(L, (void *)&K_LOADING);
    lua_rawset(L, 2);
    lua_pushvalue(L, 1);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        lua_pushvalue(L, 1);
        lua_pushnil(L);
        lua_rawset(L, 2);
        return lua_error(L);
    }
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
    lua_pushvalue(L, 1);
    lua_pushvalue(L, -2);
    lua_rawset(L, 2);
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

static void new_registry_table(lua_State *L, const void *key)
{
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, key);
}

static void set_fn(lua_State *L, const char *name, lua_CFunction f)
{
    lua_pushcfunction(L, f);
    lua_setfield(L, -2, name);
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
static void setup_state(lua_State *L, const sop_rules_module *modules)
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
    new_registry_table(L, &K_LOADED);
    new_registry_table(L, &K_P2R);
    new_registry_table(L, &K_R2P);
    lua_pushboolean(L, 0); /* the slot exists, so setting it later allocates nothing */
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_RUNNING);
    lua_newtable(L);
    for (const sop_rules_module *m = modules; m && m->name; m++) {
        if (m->source) {
            lua_pushstring(L, m->source);
            lua_setfield(L, -2, m->name);
        }
    }
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
    set_fn(L, "next", sb_next);
    set_fn(L, "rawget", sb_rawget);
    set_fn(L, "rawlen", sb_rawlen);
    set_fn(L, "rawset", sb_rawset);
    set_fn(L, "setmetatable", sb_setmetatable);
    set_fn(L, "pcall", sb_pcall);
    set_fn(L, "xpcall", sb_xpcall);
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

    set_fn(L, "thresholds", dsl_thresholds);
    set_fn(L, "rule", dsl_rule);
    set_fn(L, "hit", dsl_hit);
    set_fn(L, "clear", dsl_clear);
    set_fn(L, "unknown", dsl_unknown);
    set_fn(L, "require", sb_require);
    set_fn(L, "kb", dsl_kb);
    set_fn(L, "pct", dsl_pct);
    lua_getfield(L, str, "format");
    lua_setfield(L, sb, "fmt");
    lua_pushvalue(L, sb);
    lua_setfield(L, sb, "_G");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_SANDBOX);
    lua_settop(L, base);
}

/* ---- public ------------------------------------------------------------------------------ */

int sop__rules_new(sop_rules **out)
{
    sop_rules *r = calloc(1, sizeof *r);
    if (!r)
        return SOP_ENOMEM;
    sop__rules_set_limits(r, 0, 0);
    *out = r;
    return 0;
}

int sop__rules_set_limits(sop_rules *r, long long max_instructions, size_t max_bytes)
{
    if (!r || max_instructions < 0)
        return SOP_EINVAL;
    r->max_instructions = max_instructions ? max_instructions : SOP_RULES_DEFAULT_INSTRUCTIONS;
    r->max_bytes = max_bytes ? max_bytes : SOP_RULES_DEFAULT_BYTES;
    r->hook_tick = r->max_instructions < HOOK_TICK ? (int)r->max_instructions : HOOK_TICK;
    if (r->wall_rule_ms <= 0)
        sop__rules_set_time_limits(r, 0, 0);
    /* The whole state: the pack, the evidence, and one rule's worth (times a margin). */
    r->total_cap_bytes = 4 * r->max_bytes + (16u << 20);
    if (r->L)
        lua_sethook(r->L, count_hook, LUA_MASKCOUNT, r->hook_tick);
    return 0;
}

int sop__rules_set_time_limits(sop_rules *r, long rule_ms, long eval_ms)
{
    if (!r || rule_ms < 0 || eval_ms < 0)
        return SOP_EINVAL;
    r->wall_rule_ms = rule_ms ? (double)rule_ms : (double)SOP_RULES_DEFAULT_RULE_MS;
    r->wall_eval_ms = eval_ms ? (double)eval_ms : (double)SOP_RULES_DEFAULT_EVAL_MS;
    return 0;
}

static void drop_pack(sop_rules *r)
{
    if (r->L)
        lua_close(r->L);
    r->L = NULL;
    r->running = NULL;
    for (size_t i = 0; i < r->nids; i++)
        free(r->ids[i]);
    free(r->ids);
    r->ids = NULL;
    r->nids = 0;
    for (size_t i = 0; i < r->nknown; i++)
        free(r->known[i].key);
    free(r->known);
    r->known = NULL;
    r->nknown = 0;
    free(r->search_dir);
    r->search_dir = NULL;
}

void sop__rules_free(sop_rules *r)
{
    if (!r)
        return;
    drop_pack(r);
    for (size_t i = 0; i < r->novr; i++) {
        free(r->ovr[i].key);
        free(r->ovr[i].value);
    }
    free(r->ovr);
    free(r);
}

size_t sop__rules_count(const sop_rules *r)
{
    return r ? r->nids : 0;
}

const char *sop__rules_id(const sop_rules *r, size_t i)
{
    return r && i < r->nids ? r->ids[i] : NULL;
}

static const known_threshold *find_known(const sop_rules *r, const char *key)
{
    for (size_t i = 0; i < r->nknown; i++)
        if (strcmp(r->known[i].key, key) == 0)
            return &r->known[i];
    return NULL;
}

/* Check `key=value` against the loaded pack's defaults; fill err on failure. */
static int check_override(const sop_rules *r, const char *key, const char *value, char *err,
                          size_t errlen)
{
    const known_threshold *k = find_known(r, key);
    if (!k) {
        char list[512] = "";
        size_t used = 0;
        for (size_t i = 0; i < r->nknown && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                     r->known[i].key);
        set_err(err, errlen, "unknown threshold '%s' (known: %s)", key, r->nknown ? list : "none");
        return SOP_EUNKNOWNKEY;
    }
    if (k->type == LUA_TNUMBER) {
        char *end;
        errno = 0;
        double d = strtod(value, &end);
        if (end == value || *end || !isfinite(d)) {
            set_err(err, errlen, "threshold '%s' expects a number, not '%s'", key, value);
            return SOP_EINVAL;
        }
    } else if (k->type == LUA_TBOOLEAN && strcmp(value, "true") && strcmp(value, "false")) {
        set_err(err, errlen, "threshold '%s' expects true or false, not '%s'", key, value);
        return SOP_EINVAL;
    }
    return 0;
}

/* Drop the overrides the pack now loaded does not declare, or whose value does not read as
 * the type of its default: a load applies what fits and never fails for an override. */
static void prune_overrides(sop_rules *r)
{
    size_t keep = 0;
    for (size_t i = 0; i < r->novr; i++) {
        char scratch[8];
        if (check_override(r, r->ovr[i].key, r->ovr[i].value, scratch, sizeof scratch) == 0) {
            r->ovr[keep++] = r->ovr[i];
        } else {
            free(r->ovr[i].key);
            free(r->ovr[i].value);
        }
    }
    r->novr = keep;
}

void sop__rules_clear_thresholds(sop_rules *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->novr; i++) {
        free(r->ovr[i].key);
        free(r->ovr[i].value);
    }
    r->novr = 0;
}

int sop__rules_set_threshold(sop_rules *r, const char *key, const char *value, char *err,
                             size_t errlen)
{
    if (!r || !key || !value)
        return SOP_EINVAL;
    if (!r->L) {
        set_err(err, errlen, "no rule pack loaded: load one first (an override is checked "
                             "against the pack in force)");
        return SOP_ENORULES;
    }
    int rc = check_override(r, key, value, err, errlen);
    if (rc)
        return rc;
    char *v = strdup(value);
    if (!v)
        return SOP_ENOMEM;
    for (size_t i = 0; i < r->novr; i++) {
        if (strcmp(r->ovr[i].key, key) == 0) {
            free(r->ovr[i].value);
            r->ovr[i].value = v;
            return 0;
        }
    }
    override *n = realloc(r->ovr, (r->novr + 1) * sizeof *n);
    char *k = strdup(key);
    if (!n || !k) {
        free(v);
        free(k);
        if (n)
            r->ovr = n;
        return SOP_ENOMEM;
    }
    r->ovr = n;
    r->ovr[r->novr].key = k;
    r->ovr[r->novr].value = v;
    r->novr++;
    return 0;
}

/* "file:12: rest" → where = "file:12", returns rest; NULL when the first line has no such
 * prefix. */
static const char *split_where(const char *msg, char *where, size_t wlen)
{
    size_t line = strcspn(msg, "\n");
    for (size_t i = 1; i < line; i++) {
        if (msg[i] != ':' || !isdigit((unsigned char)msg[i + 1]))
            continue;
        size_t j = i + 1;
        while (j < line && isdigit((unsigned char)msg[j]))
            j++;
        if (j < line && msg[j] == ':') {
            snprintf(where, wlen, "%.*s", (int)j, msg);
            j++;
            while (msg[j] == ' ')
                j++;
            return msg + j;
        }
    }
    return NULL;
}

/* The first line of msg, at most MAX_MESSAGE bytes, as a new string value. */
static sop_value *first_line(const char *msg)
{
    size_t n = strcspn(msg, "\n");
    return sop__v_strn(msg, n > MAX_MESSAGE ? MAX_MESSAGE : n);
}

typedef struct {
    sop_rules *r;
    const char *chunkname;
    const char *src;
    size_t len;
    const sop_rules_module *modules;
    char *err;
    size_t errlen;
    int rc;
} load_ctx;

static int known_cmp(const void *a, const void *b)
{
    return strcmp(((const known_threshold *)a)->key, ((const known_threshold *)b)->key);
}

/* Run a text chunk at the top level of the sandbox, under the limits, with the load context's
 * error reporting: "file:line: message" in err, rc set. Expects the context userdata at stack
 * index 1 and nothing above it; leaves exactly that on success. Returns 1 on success. */
static int run_top_chunk(lua_State *L, sop_rules *r, const char *chunkname, const char *src,
                         size_t len, char *err, size_t errlen, int *rc)
{
    char chunk[300];
    snprintf(chunk, sizeof chunk, "@%s", chunkname);
    if (is_binary_chunk(src, len)) {
        set_err(err, errlen, "%s: binary chunks are not loaded (text only)", chunkname);
        *rc = SOP_ERULES;
        return 0;
    }
    lua_pushcfunction(L, msgh); /* 2 */
    int status = luaL_loadbufferx(L, src, len, chunk, "t");
    if (status == LUA_OK) {
        push_fresh_env(L);
        lua_setupvalue(L, -2, 1);
        r->phase = PHASE_LOAD;
        start_limits(r);
        status = lua_pcall(L, 0, 0, 2);
        stop_limits(r);
        r->phase = PHASE_IDLE;
    }
    if (r->killed) {
        set_err(err, errlen, "%s: %s", r->kill_where[0] ? r->kill_where : chunkname,
                kill_message(r));
        *rc = SOP_ERULES;
        return 0;
    }
    if (status != LUA_OK) {
        const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error";
        char where[160];
        size_t n = strcspn(msg, "\n");
        if (split_where(msg, where, sizeof where))
            set_err(err, errlen, "%.*s", (int)n, msg);
        else
            set_err(err, errlen, "%s: %.*s", r->err_where[0] ? r->err_where : chunkname, (int)n,
                    msg);
        *rc = status == LUA_ERRMEM ? SOP_ENOMEM : SOP_ERULES;
        return 0;
    }
    lua_settop(L, 1);
    return 1;
}

static int load_protected(lua_State *L)
{
    load_ctx *c = lua_touserdata(L, 1);
    sop_rules *r = c->r;
    setup_state(L, c->modules);

    if (!run_top_chunk(L, r, c->chunkname, c->src, c->len, c->err, c->errlen, &c->rc))
        return 0;

    check_uses(L);
    /* Remember the ids and the thresholds' names and types on the C side. */
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_RULES);
    size_t n = (size_t)lua_rawlen(L, -1);
    if (n) {
        r->ids = calloc(n, sizeof *r->ids);
        if (!r->ids)
            return luaL_error(L, "not enough memory");
        for (size_t i = 0; i < n; i++) {
            lua_rawgeti(L, -1, (lua_Integer)i + 1);
            lua_getfield(L, -1, "id");
            r->ids[i] = strdup(lua_tostring(L, -1));
            lua_pop(L, 2);
            if (!r->ids[i])
                return luaL_error(L, "not enough memory");
            r->nids = i + 1;
        }
    }
    lua_pop(L, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_DEFAULTS);
    size_t nk = 0;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        nk++;
        lua_pop(L, 1);
    }
    if (nk) {
        r->known = calloc(nk, sizeof *r->known);
        if (!r->known)
            return luaL_error(L, "not enough memory");
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            int t = lua_type(L, -1);
            lua_pop(L, 1);
            char *k = strdup(lua_tostring(L, -1));
            if (!k) {
                lua_pop(L, 1);
                return luaL_error(L, "not enough memory");
            }
            r->known[r->nknown].key = k;
            r->known[r->nknown].type = t;
            r->nknown++;
        }
        qsort(r->known, r->nknown, sizeof *r->known, known_cmp);
    }
    prune_overrides(r);
    return 0;
}

int sop__rules_load(sop_rules *r, const char *chunkname, const char *src, size_t len,
                    const char *search_dir, const sop_rules_module *modules, char *err,
                    size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!r || !src)
        return SOP_EINVAL;
    drop_pack(r);
    if (!chunkname)
        chunkname = "rules.lua";
    if (search_dir && !(r->search_dir = strdup(search_dir)))
        return SOP_ENOMEM;
    r->used_bytes = 0;
    lua_State *L = lua_newstate(l_alloc, r);
    if (!L) {
        drop_pack(r);
        set_err(err, errlen, "cannot create the Lua state");
        return SOP_ENOMEM;
    }
    *(sop_rules **)lua_getextraspace(L) = r;
    r->L = L;
    r->running = L;
    lua_sethook(L, count_hook, LUA_MASKCOUNT, r->hook_tick);
    load_ctx c = {r, chunkname, src, len, modules, err, errlen, 0};
    lua_pushcfunction(L, load_protected);
    lua_pushlightuserdata(L, &c);
    int status = lua_pcall(L, 1, 0, 0);
    stop_limits(r);
    r->phase = PHASE_IDLE;
    if (status != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        set_err(err, errlen, "%s: %s", chunkname, msg ? msg : "error");
        c.rc = status == LUA_ERRMEM ? SOP_ENOMEM : SOP_ERULES;
    }
    if (c.rc) {
        drop_pack(r);
        return c.rc;
    }
    lua_settop(L, 0);
    return 0;
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
                           const char *severity, const char *def_where)
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

static void run_one(lua_State *L, run_ctx *c, int rule_idx, int ev_proxy, int th_proxy, int handler)
{
    sop_rules *r = c->r;
    lua_getfield(L, rule_idx, "id");
    lua_getfield(L, rule_idx, "section");
    lua_getfield(L, rule_idx, "severity");
    lua_getfield(L, rule_idx, "where");
    const char *id = lua_tostring(L, -4), *section = lua_tostring(L, -3),
               *severity = lua_tostring(L, -2), *def_where = lua_tostring(L, -1);
    if (mono_ms() > r->eval_deadline_ms) {
        add_error(c, id, def_where,
                  "not run: evaluation time limit exceeded (the watchdog's limit per evaluation)");
        return;
    }
    lua_getfield(L, rule_idx, "uses_set");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_USES);
    lua_getfield(L, rule_idx, "check");
    lua_pushvalue(L, ev_proxy);
    lua_pushvalue(L, th_proxy);
    r->phase = PHASE_RUN;
    start_limits(r);
    int status = lua_pcall(L, 2, 1, handler);
    stop_limits(r);
    r->phase = PHASE_IDLE;
    lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_USES);
    int res = lua_gettop(L);
    if (r->killed) {
        add_error(c, id, r->kill_where[0] ? r->kill_where : def_where, kill_message(r));
        if (r->killed == KILL_MEM)
            lua_gc(L, LUA_GCCOLLECT);
    } else if (status != LUA_OK) {
        const char *msg = lua_type(L, res) == LUA_TSTRING ? lua_tostring(L, res) : "error";
        if (status == LUA_ERRMEM)
            msg = "not enough memory";
        char where[160];
        const char *rest = split_where(msg, where, sizeof where);
        if (rest)
            add_error(c, id, where, rest);
        else
            add_error(c, id, r->err_where[0] ? r->err_where : def_where, msg);
    } else {
        record_verdict(L, c, res, id, section, severity, def_where);
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
        const known_threshold *k = find_known(r, r->ovr[i].key);
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
    sop__lua_push_value(L, c->ev); /* 2 */
    if (!lua_istable(L, 2)) {
        lua_pop(L, 1);
        lua_newtable(L);
    }
    push_proxy(L, 2);                /* 3 */
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
    lua_pushcfunction(L, msgh);                  /* 6 */
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_RULES); /* 7 */
    lua_Integer n = (lua_Integer)lua_rawlen(L, 7);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, 7, i); /* 8 */
        run_one(L, c, 8, 3, 5, 6);
        lua_settop(L, 7);
    }
    return 0;
}

static int severity_rank(const sop_value *f)
{
    const char *s = sop__v_get_str(f, "severity");
    return s && strcmp(s, "high") == 0 ? 0 : s && strcmp(s, "warn") == 0 ? 1 : 2;
}

/* Most severe first, keeping the pack's order within a severity. */
static void sort_findings(sop_value *arr)
{
    sop_value *head[3] = {0}, *tail[3] = {0};
    for (sop_value *f = arr->child, *next; f; f = next) {
        next = f->next;
        f->next = NULL;
        int k = severity_rank(f);
        if (tail[k])
            tail[k]->next = f;
        else
            head[k] = f;
        tail[k] = f;
    }
    arr->child = arr->last = NULL;
    for (int k = 0; k < 3; k++) {
        if (!head[k])
            continue;
        if (arr->last)
            arr->last->next = head[k];
        else
            arr->child = head[k];
        arr->last = tail[k];
    }
}

int sop__rules_run(sop_rules *r, const sop_value *ev, sop_value **out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!r || !out)
        return SOP_EINVAL;
    *out = NULL;
    if (!r->L || r->nids == 0) {
        set_err(err, errlen, "no rules loaded");
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
    r->eval_deadline_ms = mono_ms() + r->wall_eval_ms;
    lua_pushcfunction(L, run_protected);
    lua_pushlightuserdata(L, &c);
    int status = lua_pcall(L, 1, 0, 0);
    stop_limits(r);
    r->phase = PHASE_IDLE;
    if (status != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        set_err(err, errlen, "rule runner: %s", msg ? msg : "error");
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
    sort_findings(c.findings);
    *out = c.out;
    return 0;
}

/* ---- site files ---------------------------------------------------------------------------
 * A site file runs after a pack, in the same sandbox and under the same limits as the pack's
 * top level: `thresholds{}` changes defaults (or declares new ones), `rule{}` adds rules,
 * `disable "id"` / `disable {"a", "b"}` removes rules of the pack. Kept apart from the loader
 * above (additive) so that the two can change independently. */

typedef struct {
    sop_rules *r;
    const char *chunkname;
    const char *src;
    size_t len;
    char *err;
    size_t errlen;
    int rc;
} site_ctx;

/* disable("id") or disable{"a", "b"}: remove rules by id; an unknown id is an error. */
static int site_disable(lua_State *L)
{
    need_phase(L, "disable");
    if (lua_type(L, 1) == LUA_TSTRING) {
        lua_createtable(L, 1, 0);
        lua_pushvalue(L, 1);
        lua_rawseti(L, -2, 1);
        lua_replace(L, 1);
    }
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_IDS);   /* 2 */
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_RULES); /* 3 */
    lua_Integer nids = (lua_Integer)lua_rawlen(L, 1);
    for (lua_Integer i = 1; i <= nids && i <= 4096; i++) {
        if (lua_rawgeti(L, 1, i) != LUA_TSTRING)
            return luaL_error(L, "disable: rule ids are strings");
        const char *id = lua_tostring(L, -1);
        lua_pushvalue(L, -1);
        if (lua_rawget(L, 2) == LUA_TNIL)
            return luaL_error(L, "disable: no rule '%s' in the loaded pack", id);
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_pushnil(L);
        lua_rawset(L, 2);
        /* Compact the ordered list without the rule. */
        lua_Integer n = (lua_Integer)lua_rawlen(L, 3), w = 1;
        for (lua_Integer j = 1; j <= n; j++) {
            lua_rawgeti(L, 3, j);
            lua_getfield(L, -1, "id");
            int same = strcmp(lua_tostring(L, -1), id) == 0;
            lua_pop(L, 1);
            if (same) {
                lua_pop(L, 1);
                continue;
            }
            lua_rawseti(L, 3, w++);
        }
        for (; w <= n; w++) {
            lua_pushnil(L);
            lua_rawseti(L, 3, w);
        }
        lua_pop(L, 1);
    }
    return 0;
}

/* Rebuild the C-side copies of the rule ids and the thresholds' names and types. */
static int site_remember(lua_State *L, sop_rules *r)
{
    for (size_t i = 0; i < r->nids; i++)
        free(r->ids[i]);
    free(r->ids);
    r->ids = NULL;
    r->nids = 0;
    for (size_t i = 0; i < r->nknown; i++)
        free(r->known[i].key);
    free(r->known);
    r->known = NULL;
    r->nknown = 0;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_RULES);
    size_t n = (size_t)lua_rawlen(L, -1);
    if (n && !(r->ids = calloc(n, sizeof *r->ids)))
        return SOP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, -1, (lua_Integer)i + 1);
        lua_getfield(L, -1, "id");
        r->ids[i] = strdup(lua_tostring(L, -1));
        lua_pop(L, 2);
        if (!r->ids[i])
            return SOP_ENOMEM;
        r->nids = i + 1;
    }
    lua_pop(L, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_DEFAULTS);
    size_t nk = 0;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        nk++;
        lua_pop(L, 1);
    }
    if (nk && !(r->known = calloc(nk, sizeof *r->known)))
        return SOP_ENOMEM;
    lua_pushnil(L);
    while (nk && lua_next(L, -2)) {
        int t = lua_type(L, -1);
        lua_pop(L, 1);
        char *k = strdup(lua_tostring(L, -1));
        if (!k) {
            lua_pop(L, 2);
            return SOP_ENOMEM;
        }
        r->known[r->nknown].key = k;
        r->known[r->nknown].type = t;
        r->nknown++;
    }
    lua_pop(L, 1);
    if (r->nknown)
        qsort(r->known, r->nknown, sizeof *r->known, known_cmp);
    return 0;
}

static int site_protected(lua_State *L)
{
    site_ctx *c = lua_touserdata(L, 1);
    sop_rules *r = c->r;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_SANDBOX);
    set_fn(L, "disable", site_disable);
    lua_pop(L, 1);
    if (!run_top_chunk(L, r, c->chunkname, c->src, c->len, c->err, c->errlen, &c->rc))
        return 0;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_SANDBOX);
    lua_pushnil(L);
    lua_setfield(L, -2, "disable");
    lua_pop(L, 1);
    check_uses(L);
    c->rc = site_remember(L, r);
    if (c->rc)
        set_err(c->err, c->errlen, "%s: out of memory", c->chunkname);
    return 0;
}

int sop__rules_load_site(sop_rules *r, const char *chunkname, const char *src, size_t len,
                         const char *search_dir, const sop_rules_module *modules,
                         const char *site_name, const char *site_src, size_t site_len,
                         const char *site_dir, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!r || !src)
        return SOP_EINVAL;
    /* Overrides may name thresholds only the site file declares: check them after it. */
    override *ovr = r->ovr;
    size_t novr = r->novr;
    r->ovr = NULL;
    r->novr = 0;
    int rc = sop__rules_load(r, chunkname, src, len, search_dir, modules, err, errlen);
    if (rc == 0 && site_src) {
        /* The site's own `require` looks next to the site file. */
        char *pack_dir = r->search_dir;
        r->search_dir = site_dir ? strdup(site_dir) : NULL;
        if (site_dir && !r->search_dir) {
            r->search_dir = pack_dir;
            rc = SOP_ENOMEM;
        } else {
            site_ctx c = {r, site_name ? site_name : "site.lua", site_src, site_len, err, errlen,
                          0};
            lua_State *L = r->L;
            lua_pushcfunction(L, site_protected);
            lua_pushlightuserdata(L, &c);
            int status = lua_pcall(L, 1, 0, 0);
            stop_limits(r);
            r->phase = PHASE_IDLE;
            if (status != LUA_OK) {
                const char *msg = lua_tostring(L, -1);
                set_err(err, errlen, "%s: %s", c.chunkname, msg ? msg : "error");
                c.rc = status == LUA_ERRMEM ? SOP_ENOMEM : SOP_ERULES;
            }
            lua_settop(L, 0);
            free(r->search_dir);
            r->search_dir = pack_dir;
            rc = c.rc;
        }
    }
    r->ovr = ovr;
    r->novr = novr;
    if (rc == 0)
        prune_overrides(r);
    else
        drop_pack(r);
    return rc;
}

/* ---- description --------------------------------------------------------------------------
 * What the loaded pack holds, for generated documentation (engine/rules_doc.c):
 * {rules = [{id section severity where title reads uses}], thresholds = {name = default}}. */
int sop__rules_describe(sop_rules *r, sop_value **out)
{
    *out = NULL;
    if (!r || !r->L)
        return SOP_EINVAL;
    lua_State *L = r->L;
    int top = lua_gettop(L);
    sop_value *d = sop__v_obj(), *rules = d ? sop__v_arr_at(d, "rules") : NULL;
    if (!rules) {
        sop__v_free(d);
        return SOP_ENOMEM;
    }
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_RULES);
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    static const char *const fields[] = {"id", "section", "severity", "where",
                                         "title", "doc", "reads", "uses"};
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        sop_value *o = sop__v_obj();
        for (size_t f = 0; o && f < sizeof fields / sizeof *fields; f++) {
            lua_getfield(L, -1, fields[f]);
            if (!lua_isnil(L, -1)) {
                sop_value *v = sop__lua_to_value(L, -1, 4);
                if (v && !sop__v_set(o, fields[f], v)) { /* v freed by the failed set */
                    sop__v_free(o);
                    o = NULL;
                }
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        if (!o || sop__v_push(rules, o) != 0) { /* a failed push frees o */
            sop__v_free(d);
            lua_settop(L, top);
            return SOP_ENOMEM;
        }
    }
    lua_pop(L, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_DEFAULTS);
    sop_value *th = sop__lua_to_value(L, -1, 2);
    lua_settop(L, top);
    if (!th || !sop__v_set(d, "thresholds", th)) {
        sop__v_free(d);
        return SOP_ENOMEM;
    }
    *out = d;
    return 0;
}
