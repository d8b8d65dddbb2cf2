/* rules.c — the rule runner: one sandboxed Lua 5.4 state per loaded pack (allow-listed globals,
 * the rule DSL, a sandboxed require), each rule run under an instruction and a memory budget
 * that pcall and coroutines cannot escape. This file loads a pack (and a site file over it),
 * keeps threshold overrides and describes the pack; running the rules is engine/rules/rules_run.c,
 * the sandbox engine/rules/rules_sandbox.c, the DSL engine/rules/rules_dsl.c. Depends on Lua 5.4,
 * engine/core/value.c and engine/rules/lua_value.c (value trees <-> tables). */
#include "rules.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "clock.h"
#include "lua_value.h"
#include "rules_int.h"
#include "severity.h"
#include "sop.h"

const struct sop__rules_keys sop__rules_keys = {0};

void sop__rules_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- public ------------------------------------------------------------------------------ */

int sop__rules_new(sop_rules **out)
{
    sop_rules *r = calloc(1, sizeof *r);
    if (!r)
        return SOP_ENOMEM;
    sop__rules_set_limits(r, 0, 0);
    r->check_reads = 1; /* every run, site packs included (docs/rule-runner.md) */
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
        lua_sethook(r->L, sop__rules_count_hook, LUA_MASKCOUNT, r->hook_tick);
    return 0;
}

void sop__rules_set_check_reads(sop_rules *r, int on)
{
    if (r)
        r->check_reads = on != 0;
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

const known_threshold *sop__rules_find_known(const sop_rules *r, const char *key)
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
    const known_threshold *k = sop__rules_find_known(r, key);
    if (!k) {
        char list[512] = "";
        size_t used = 0;
        for (size_t i = 0; i < r->nknown && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                     r->known[i].key);
        sop__rules_set_err(err, errlen, "unknown threshold '%s' (known: %s)", key,
                           r->nknown ? list : "none");
        return SOP_EUNKNOWNKEY;
    }
    if (k->type == LUA_TNUMBER) {
        char *end;
        errno = 0;
        double d = strtod(value, &end);
        if (end == value || *end || !isfinite(d)) {
            sop__rules_set_err(err, errlen, "threshold '%s' expects a number, not '%s'", key,
                               value);
            return SOP_EINVAL;
        }
    } else if (k->type == LUA_TBOOLEAN && strcmp(value, "true") && strcmp(value, "false")) {
        sop__rules_set_err(err, errlen, "threshold '%s' expects true or false, not '%s'", key,
                           value);
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
        sop__rules_set_err(err, errlen,
                           "no rule pack loaded: load one first (an override is checked "
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
const char *sop__rules_split_where(const char *msg, char *where, size_t wlen)
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

/* The build-time bytecode of the text src when it is, byte for byte, the embedded module
 * that chunkname names ("rules.lua" for the module "rules"), else NULL. */
static const unsigned char *embedded_code_for(const sop_rules_module *modules,
                                              const char *chunkname, const char *src, size_t len,
                                              size_t *clen)
{
    for (const sop_rules_module *m = modules; m && m->name; m++) {
        char rel[200];
        size_t n = strlen(m->name);
        if (!m->source || n + 5 > sizeof rel)
            continue;
        for (size_t i = 0; i <= n; i++)
            rel[i] = m->name[i] == '.' ? '/' : m->name[i];
        memcpy(rel + n, ".lua", 5);
        if (strcmp(rel, chunkname) == 0 && strlen(m->source) == len &&
            memcmp(m->source, src, len) == 0)
            return sop__embedded_code(m->source, clen);
    }
    return NULL;
}

/* Run a text chunk at the top level of the sandbox, under the limits, with the load context's
 * error reporting: "file:line: message" in err, rc set. Expects the context userdata at stack
 * index 1 and nothing above it; leaves exactly that on success. Returns 1 on success. The
 * embedded pack's own text (modules) is loaded from its build-time bytecode. */
static int run_top_chunk(lua_State *L, sop_rules *r, const char *chunkname, const char *src,
                         size_t len, const sop_rules_module *modules, char *err, size_t errlen,
                         int *rc)
{
    char chunk[300];
    snprintf(chunk, sizeof chunk, "@%s", chunkname);
    if (sop__rules_is_binary_chunk(src, len)) {
        sop__rules_set_err(err, errlen, "%s: binary chunks are not loaded (text only)", chunkname);
        *rc = SOP_ERULES;
        return 0;
    }
    lua_pushcfunction(L, sop__rules_msgh); /* 2 */
    size_t clen = 0;
    const unsigned char *code = embedded_code_for(modules, chunkname, src, len, &clen);
    int status = code ? luaL_loadbufferx(L, (const char *)code, clen, chunk, "b")
                      : luaL_loadbufferx(L, src, len, chunk, "t");
    if (status == LUA_OK) {
        sop__rules_push_fresh_env(L);
        lua_setupvalue(L, -2, 1);
        r->phase = PHASE_LOAD;
        sop__rules_start_limits(r);
        status = lua_pcall(L, 0, 0, 2);
        sop__rules_stop_limits(r);
        r->phase = PHASE_IDLE;
    }
    if (r->killed) {
        sop__rules_set_err(err, errlen, "%s: %s", r->kill_where[0] ? r->kill_where : chunkname,
                           sop__rules_kill_message(r));
        *rc = SOP_ERULES;
        return 0;
    }
    if (status != LUA_OK) {
        const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error";
        char where[160];
        size_t n = strcspn(msg, "\n");
        if (sop__rules_split_where(msg, where, sizeof where))
            sop__rules_set_err(err, errlen, "%.*s", (int)n, msg);
        else
            sop__rules_set_err(err, errlen, "%s: %.*s", r->err_where[0] ? r->err_where : chunkname,
                               (int)n, msg);
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
    sop__rules_setup_state(L, c->modules);

    if (!run_top_chunk(L, r, c->chunkname, c->src, c->len, c->modules, c->err, c->errlen, &c->rc))
        return 0;

    sop__rules_check_uses(L);
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
    lua_State *L = lua_newstate(sop__rules_alloc, r);
    if (!L) {
        drop_pack(r);
        sop__rules_set_err(err, errlen, "cannot create the Lua state");
        return SOP_ENOMEM;
    }
    *(sop_rules **)lua_getextraspace(L) = r;
    r->L = L;
    r->running = L;
    lua_sethook(L, sop__rules_count_hook, LUA_MASKCOUNT, r->hook_tick);
    load_ctx c = {r, chunkname, src, len, modules, err, errlen, 0};
    lua_pushcfunction(L, load_protected);
    lua_pushlightuserdata(L, &c);
    int status = lua_pcall(L, 1, 0, 0);
    sop__rules_stop_limits(r);
    r->phase = PHASE_IDLE;
    if (status != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        sop__rules_set_err(err, errlen, "%s: %s", chunkname, msg ? msg : "error");
        c.rc = status == LUA_ERRMEM ? SOP_ENOMEM : SOP_ERULES;
    }
    if (c.rc) {
        drop_pack(r);
        return c.rc;
    }
    lua_settop(L, 0);
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
    sop__rules_need_phase(L, "disable");
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
    if (!run_top_chunk(L, r, c->chunkname, c->src, c->len, NULL, c->err, c->errlen, &c->rc))
        return 0;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_SANDBOX);
    lua_pushnil(L);
    lua_setfield(L, -2, "disable");
    lua_pop(L, 1);
    sop__rules_check_uses(L);
    c->rc = site_remember(L, r);
    if (c->rc)
        sop__rules_set_err(c->err, c->errlen, "%s: out of memory", c->chunkname);
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
            sop__rules_stop_limits(r);
            r->phase = PHASE_IDLE;
            if (status != LUA_OK) {
                const char *msg = lua_tostring(L, -1);
                sop__rules_set_err(err, errlen, "%s: %s", c.chunkname, msg ? msg : "error");
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
 * What the loaded pack holds, for generated documentation (engine/rules/rules_doc.c):
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
    static const char *const fields[] = {"id",    "section", "severity", "where",
                                         "title", "doc",     "reads",    "uses"};
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
