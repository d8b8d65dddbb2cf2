/* rules_dsl.c — the rule DSL a pack is written in: thresholds{}, rule{}, the verdicts hit,
 * clear and unknown (checked and bounded), the kb/pct helpers, and the sandboxed require that
 * finds plugins among the embedded modules or under the pack's directory. Depends on Lua 5.4
 * and the runner's state (rules_int.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "rules_int.h"
#include "sop.h"

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

void sop__rules_need_phase(lua_State *L, const char *fn)
{
    if (R(L)->phase != PHASE_LOAD)
        luaL_error(L, "%s is only allowed at the top level of a rule pack", fn);
}

static int dsl_thresholds(lua_State *L)
{
    sop__rules_need_phase(L, "thresholds{}");
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

/* explains{ figure = {family, ...} }: the rule families whose findings explain a key figure
 * that a job-level merge compares across ranks (engine/merge/merge.c): when a rank's figure stands
 * out, its findings of those families are listed first. Exported with every report
 * ("explains"); a finding carries its rule's family. A later call replaces the figures it
 * names. */
static int dsl_explains(lua_State *L)
{
    sop__rules_need_phase(L, "explains{}");
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_EXPLAINS); /* 2 */
    lua_pushnil(L);
    while (lua_next(L, 1)) { /* -2 figure, -1 list */
        size_t len = 0;
        const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &len) : NULL;
        if (!k || !valid_name(k, len, 0))
            return luaL_error(L, "explains{}: figure names are strings of letters, digits, '_'");
        lua_Integer n = lua_type(L, -1) == LUA_TTABLE ? (lua_Integer)lua_rawlen(L, -1) : 0;
        if (n < 1 || n > 64)
            return luaL_error(L, "explains{}: '%s' must be a list of 1 to 64 rule families", k);
        lua_createtable(L, (int)n, 0);
        for (lua_Integer j = 1; j <= n; j++) {
            size_t fl = 0;
            const char *fam =
                lua_rawgeti(L, -2, j) == LUA_TSTRING ? lua_tolstring(L, -1, &fl) : NULL;
            if (!fam || !valid_name(fam, fl, 1))
                return luaL_error(L, "explains{}: '%s'[%d] must be a rule family like \"cpu\"", k,
                                  (int)j);
            lua_rawseti(L, -2, j);
        }
        lua_pushvalue(L, -3);
        lua_insert(L, -2);
        lua_rawset(L, 2);
        lua_pop(L, 1);
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
 * the whole pack has loaded (sop__rules_check_uses). */
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
            if (lua_rawgeti(L, -2, j) != LUA_TSTRING || (lua_tolstring(L, -1, &len), len == 0) ||
                len > 120)
                luaL_error(L, "rule '%s': %s[%d] must be a non-empty string", id, lists[i], (int)j);
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
void sop__rules_check_uses(lua_State *L)
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
                    luaL_error(L,
                               "%s: rule '%s' uses threshold '%s', which no thresholds{} "
                               "declares",
                               lua_tostring(L, -2), lua_tostring(L, -1), lua_tostring(L, -4));
                }
                lua_pop(L, 2);
            }
        }
        lua_pop(L, 2);
    }
    lua_pop(L, 2);
}

/* What a rule may declare once for all its hits: the texts of a finding that do not depend on
 * the evidence (symptom, cause, fix, verify) and its refs. Checked like a hit's fields when the
 * rule is defined. */
static const char *const STATIC_TEXT[] = {"symptom", "cause", "fix", "verify"};
static const char K_STATICS = 0; /* registry: the running rule's static fields (or nil) */

static int check_refs(lua_State *L, int idx, const char *who);

/* Push a table of the rule's static fields found in the rule table at src; nil when it has none. */
static void push_statics(lua_State *L, int src, const char *id)
{
    int any = 0;
    lua_createtable(L, 0, 5);
    for (size_t i = 0; i < sizeof STATIC_TEXT / sizeof *STATIC_TEXT; i++) {
        char what[160];
        snprintf(what, sizeof what, "rule '%s': %s", id, STATIC_TEXT[i]);
        lua_getfield(L, src, STATIC_TEXT[i]);
        int got = push_text(L, -1, what);
        if (got == 2)
            luaL_error(L, "%s is empty", what);
        any |= got;
        lua_setfield(L, -3, STATIC_TEXT[i]);
        lua_pop(L, 1);
    }
    lua_getfield(L, src, "refs");
    if (!lua_isnil(L, -1)) {
        char who[120];
        snprintf(who, sizeof who, "rule '%s'", id);
        int refs = lua_gettop(L);
        if (check_refs(L, refs, who) == 0)
            luaL_error(L, "rule '%s': refs is empty", id);
        lua_setfield(L, -3, "refs");
        any = 1;
    }
    lua_pop(L, 1);
    if (!any) {
        lua_pop(L, 1);
        lua_pushnil(L);
    }
}

/* The check the runner calls: upvalue 1 the rule's own check, 2 its static fields (or nil),
 * which hit() reads while the check runs (the runner calls one check at a time; a check that
 * raised leaves them set until the next check sets its own). */
static int static_check(lua_State *L)
{
    int nargs = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_STATICS);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, nargs, 1);
    lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_STATICS);
    return 1;
}

static int dsl_rule(lua_State *L)
{
    sop__rules_need_phase(L, "rule{}");
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
    /* family: what kind of problem (explains{} names families); default the id's first part */
    char family[MAX_NAME + 1];
    size_t famlen = strcspn(id, ".");
    if (lua_getfield(L, 1, "family") != LUA_TNIL) {
        const char *fam = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &famlen) : NULL;
        if (!fam || !valid_name(fam, famlen, 1))
            return luaL_error(L, "rule '%s': family must be a name like \"cpu\"", id);
        memcpy(family, fam, famlen);
    } else {
        memcpy(family, id, famlen);
    }
    family[famlen] = '\0';
    lua_pop(L, 1);

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

    /* Every check is wrapped, so each one sets (or clears) what hit() fills in. */
    lua_pushvalue(L, 5);
    push_statics(L, 1, id);
    lua_pushcclosure(L, static_check, 2);
    lua_replace(L, 5);

    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_RULES); /* 8 */
    lua_createtable(L, 0, 8);
    static const char *const fields[] = {"id", "section", "severity", "check", "where"};
    for (int i = 0; i < 5; i++) {
        lua_pushvalue(L, 2 + i);
        lua_setfield(L, -2, fields[i]);
    }
    lua_pushstring(L, family);
    lua_setfield(L, -2, "family");
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

const char *const sop__rules_hit_text[HIT_TEXT_COUNT] = {"symptom", "evidence", "cause", "fix",
                                                         "verify"};

/* Check the refs at idx (a link or a list of links) and push a clean list of them; returns how
 * many (0 when absent). who names the caller in errors ("hit", "rule 'x'"). */
static int check_refs(lua_State *L, int idx, const char *who)
{
    idx = lua_absindex(L, idx);
    lua_createtable(L, 1, 0);
    int out = lua_gettop(L);
    lua_Integer nrefs = 0;
    if (lua_type(L, idx) == LUA_TSTRING) {
        lua_pushvalue(L, idx);
        lua_rawseti(L, out, ++nrefs);
    } else if (lua_type(L, idx) == LUA_TTABLE) {
        for (lua_Integer i = 1; i <= MAX_REFS + 1; i++) {
            int t = lua_geti(L, idx, i);
            if (t == LUA_TNIL) {
                lua_pop(L, 1);
                break;
            }
            if (t != LUA_TSTRING || lua_rawlen(L, -1) == 0 || lua_rawlen(L, -1) > 2048)
                return luaL_error(L, "%s: refs must be non-empty strings (links)", who);
            if (i > MAX_REFS)
                return luaL_error(L, "%s: more than %d refs", who, MAX_REFS);
            lua_rawseti(L, out, ++nrefs);
        }
    } else if (lua_type(L, idx) != LUA_TNIL) {
        return luaL_error(L, "%s: refs must be a list of links", who);
    }
    return (int)nrefs;
}

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
    /* Inside the check of a rule with static fields: the fields this hit leaves out are the
     * rule's (a copy of the hit's table, so the rule's own table is not changed). */
    if (R(L)->phase == PHASE_RUN && lua_rawgetp(L, LUA_REGISTRYINDEX, &K_STATICS) == LUA_TTABLE) {
        lua_createtable(L, 0, 8);
        lua_pushnil(L);
        while (lua_next(L, 1)) {
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_rawset(L, 3);
        }
        lua_pushnil(L);
        while (lua_next(L, 2)) {
            lua_pushvalue(L, -2);
            if (lua_rawget(L, 3) == LUA_TNIL) {
                lua_pop(L, 1);
                lua_pushvalue(L, -2);
                lua_insert(L, -2);
                lua_rawset(L, 3);
            } else {
                lua_pop(L, 2);
            }
        }
        lua_replace(L, 1);
    }
    lua_settop(L, 1);
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
    if (check_refs(L, 3, "hit") == 0)
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

/* Read the plugin `rel` under `dir` (at most `max` bytes; sop__rules_open_plugin checks it is
 * a trusted regular file before a byte is read) into a malloc'd buffer. NULL with errno set
 * (ENOENT: not there) and, for any other failure, the reason naming the path in why. */
static char *read_plugin(const char *dir, const char *rel, size_t max, size_t *len, char *why,
                         size_t whylen)
{
    int fd = sop__rules_open_plugin(dir, rel, why, whylen);
    if (fd < 0) {
        errno = -fd;
        return NULL;
    }
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        snprintf(why, whylen, "%s/%s: %s", dir, rel, strerror(err));
        errno = err;
        goto out;
    }
    if ((size_t)st.st_size > max) {
        snprintf(why, whylen, "%s/%s: larger than %zu bytes", dir, rel, max);
        errno = EFBIG;
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        snprintf(why, whylen, "%s/%s: out of memory", dir, rel);
        errno = ENOMEM;
        goto out;
    }
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
void sop__rules_push_fresh_env(lua_State *L)
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

int sop__rules_is_binary_chunk(const char *s, size_t len)
{
    return len >= 4 && memcmp(s, LUA_SIGNATURE, 4) == 0;
}

/* require "plugins.x": <search_dir>/plugins/x.lua (text only) where it exists, else the
 * embedded module; run once in the sandbox and cached. */
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

    /* A file next to the rules file (search_dir) wins: a site edits plugins/x.lua in place. */
    char *buf = NULL;
    size_t flen = 0;
    if (r->search_dir) {
        /* the plugins directory is trusted as the file is: a step that another user could
         * have written, or a link, is refused before the file is read (never its content) */
        char why[512] = "";
        buf = read_plugin(r->search_dir, rel, MAX_SOURCE_BYTES, &flen, why, sizeof why);
        if (!buf && errno != ENOENT)
            return luaL_error(L, "module '%s': %s", name, why[0] ? why : strerror(errno));
        if (buf && sop__rules_is_binary_chunk(buf, flen)) {
            free(buf);
            return luaL_error(L, "module '%s': %s is a binary chunk (only text is loaded)", name,
                              rel);
        }
    }

    int status;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_MODCODE);
    lua_pushvalue(L, 1);
    size_t clen = 0;
    const unsigned char *code = NULL;
    const char *text = NULL;
    if (lua_rawget(L, -2) == LUA_TLIGHTUSERDATA) { /* the embedded text's address */
        text = lua_touserdata(L, -1);
        code = sop__embedded_code(text, &clen);
    }
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_MODULES);
    lua_pushvalue(L, 1);
    if (code && (!buf || (flen == strlen(text) && memcmp(buf, text, flen) == 0))) {
        /* the built-in module, or a file that is byte for byte its text: its bytecode,
         * compiled from that text at build time (the same chunk, line numbers included),
         * without parsing it again (never a file's bytes) */
        status = luaL_loadbufferx(L, (const char *)code, clen, chunk, "b");
    } else if (buf) {
        status = luaL_loadbufferx(L, buf, flen, chunk, "t");
    } else if (lua_rawget(L, -2) == LUA_TSTRING) {
        size_t slen;
        const char *src = lua_tolstring(L, -1, &slen);
        status = luaL_loadbufferx(L, src, slen, chunk, "t");
    } else if (r->search_dir) {
        return luaL_error(L, "module '%s' not found: cannot read %s (%s)", name, rel,
                          strerror(ENOENT));
    } else {
        return luaL_error(L, "module '%s' not found (no embedded module, no search directory)",
                          name);
    }
    free(buf);
    if (status != LUA_OK)
        return lua_error(L);
    sop__rules_push_fresh_env(L);
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

const luaL_Reg sop__rules_dsl_lib[] = {{"thresholds", dsl_thresholds},
                                       {"explains", dsl_explains},
                                       {"rule", dsl_rule},
                                       {"hit", dsl_hit},
                                       {"clear", dsl_clear},
                                       {"unknown", dsl_unknown},
                                       {"require", sb_require},
                                       {"kb", dsl_kb},
                                       {"pct", dsl_pct},
                                       {NULL, NULL}};
