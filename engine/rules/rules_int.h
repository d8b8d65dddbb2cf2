/* rules_int.h — what the three parts of the rule runner share, and nothing outside them reads:
 * the runner's state (struct sop_rules), its registry keys, and the calls between
 * engine/rules/rules_sandbox.c (limits, allocator, hook, read-only proxies, the allow-list),
 * engine/rules/rules_dsl.c (rule/hit/clear/unknown, helpers, require) and engine/rules/rules.c
 * (loading, running, site files). Depends on Lua 5.4 and rules.h. */
#ifndef SOP_RULES_INT_H
#define SOP_RULES_INT_H

#include <stddef.h>

#include <lauxlib.h>
#include <lua.h>

#include "rules.h"

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
    int check_reads; /* sop__rules_set_check_reads: a rule reading outside its `reads` fails */
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

/* Registry keys: the addresses of these members are the keys (defined in engine/rules/rules.c). */
extern const struct sop__rules_keys {
    char sandbox, rules, ids, defaults, modules, modcode, loaded, loading, p2r, r2p, proxy_mt,
        th_mt, running, uses, paths, read_log, explains;
} sop__rules_keys;
#define K_SANDBOX (sop__rules_keys.sandbox)
#define K_RULES (sop__rules_keys.rules)
#define K_IDS (sop__rules_keys.ids)
#define K_DEFAULTS (sop__rules_keys.defaults)
#define K_MODULES (sop__rules_keys.modules)
#define K_MODCODE (sop__rules_keys.modcode) /* module name -> its build-time bytecode */
#define K_LOADED (sop__rules_keys.loaded)
#define K_LOADING (sop__rules_keys.loading)
#define K_P2R (sop__rules_keys.p2r)
#define K_R2P (sop__rules_keys.r2p)
#define K_PROXY_MT (sop__rules_keys.proxy_mt)
#define K_TH_MT (sop__rules_keys.th_mt)
#define K_RUNNING (sop__rules_keys.running)
#define K_USES (sop__rules_keys.uses)
#define K_PATHS (sop__rules_keys.paths)       /* proxy -> its evidence path (reads check) */
#define K_READ_LOG (sop__rules_keys.read_log) /* set of the paths the running rule read */
#define K_EXPLAINS (sop__rules_keys.explains) /* explains{}: figure -> list of rule families */
#define VERDICT_MT "sop.verdict"

static inline sop_rules *R(lua_State *L)
{
    return *(sop_rules **)lua_getextraspace(L);
}

static inline void new_registry_table(lua_State *L, const void *key)
{
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, key);
}

static inline void set_fn(lua_State *L, const char *name, lua_CFunction f)
{
    lua_pushcfunction(L, f);
    lua_setfield(L, -2, name);
}

/* ---- engine/rules/rules_sandbox.c --------------------------------------------------------------
 */

/* Why the running rule was killed ("instruction limit exceeded", ...), or NULL. */
const char *sop__rules_kill_message(const sop_rules *r);
/* The state's allocator (ud is the runner): counts and caps what rule code allocates. */
void *sop__rules_alloc(void *ud, void *ptr, size_t osize, size_t nsize);
/* The count hook: instruction and wall-clock limits. */
void sop__rules_count_hook(lua_State *L, lua_Debug *ar);
/* Arm and disarm the per-rule limits around a run of rule code. */
void sop__rules_start_limits(sop_rules *r);
void sop__rules_stop_limits(sop_rules *r);
/* The message handler of every pcall into rule code: adds file:line and a traceback. */
int sop__rules_msgh(lua_State *L);
/* Push a read-only view of the table at idx. */
void sop__rules_push_proxy(lua_State *L, int idx);
/* Open the libraries into the registry and build the sandbox (the allow-list, the DSL). */
void sop__rules_setup_state(lua_State *L, const sop_rules_module *modules);

/* ---- engine/rules/rules_dsl.c ------------------------------------------------------------------
 */

/* The DSL's globals: thresholds, explains, rule, hit, clear, unknown, require, kb, pct. */
extern const luaL_Reg sop__rules_dsl_lib[];
/* The text fields of a hit, in the order a finding lists them. */
#define HIT_TEXT_COUNT 5
extern const char *const sop__rules_hit_text[HIT_TEXT_COUNT];
#define HIT_TEXT sop__rules_hit_text
/* Raise unless the runner is loading a pack (fn names the caller in the message). */
void sop__rules_need_phase(lua_State *L, const char *fn);
/* Check the `uses` of every rule against the declared thresholds. */
void sop__rules_check_uses(lua_State *L);
/* Push a new global environment for one chunk: a copy of the pristine sandbox. */
void sop__rules_push_fresh_env(lua_State *L);
int sop__rules_is_binary_chunk(const char *s, size_t len);

/* rules.c, shared with rules_run.c: printf into err (may be NULL); the override entry of a
 * threshold name (NULL when unknown); a Lua message "file:line: text" split into where (the
 * "file:line" part) and the text returned (NULL when it has no such prefix). */
void sop__rules_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const known_threshold *sop__rules_find_known(const sop_rules *r, const char *key);
const char *sop__rules_split_where(const char *msg, char *where, size_t wlen);

#endif
