/* lua_value.c — value tree (engine/core/value.h) <-> Lua tables, for the rule runner
 * (engine/rules/rules.c). Depends on Lua 5.4 and engine/core/value.c. Pushing may raise memory
 * errors (callers are in protected mode); converting back uses raw access only and never raises. */
#include "lua_value.h"

#include <lauxlib.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PUSH_MAX_DEPTH 64

static void push_rec(lua_State *L, const sop_value *v, int depth)
{
    if (!v || depth > PUSH_MAX_DEPTH) {
        lua_pushnil(L);
        return;
    }
    switch (v->type) {
    case SOP_V_NULL:
        lua_pushnil(L);
        break;
    case SOP_V_BOOL:
        lua_pushboolean(L, v->b);
        break;
    case SOP_V_NUM:
        /* Integral values within ±2^53 become Lua integers so "%d" formats them. */
        if (isfinite(v->num) && v->num == floor(v->num) && fabs(v->num) <= 9007199254740992.0)
            lua_pushinteger(L, (lua_Integer)v->num);
        else
            lua_pushnumber(L, v->num);
        break;
    case SOP_V_STR:
        lua_pushstring(L, v->str ? v->str : "");
        break;
    case SOP_V_ARR: {
        luaL_checkstack(L, 3, "value tree too deep");
        lua_createtable(L, v->count > (size_t)INT32_MAX ? 0 : (int)v->count, 0);
        lua_Integer i = 1;
        for (const sop_value *c = v->child; c; c = c->next, i++) {
            push_rec(L, c, depth + 1);
            lua_rawseti(L, -2, i);
        }
        break;
    }
    case SOP_V_OBJ: {
        luaL_checkstack(L, 3, "value tree too deep");
        lua_createtable(L, 0, v->count > (size_t)INT32_MAX ? 0 : (int)v->count);
        for (const sop_value *c = v->child; c; c = c->next) {
            if (!c->key || c->type == SOP_V_NULL)
                continue;
            push_rec(L, c, depth + 1);
            lua_setfield(L, -2, c->key); /* a fresh table: no metamethods */
        }
        break;
    }
    }
}

void sop__lua_push_value(lua_State *L, const sop_value *v)
{
    push_rec(L, v, 0);
}

static int cmp_key(const void *a, const void *b)
{
    const sop_value *x = *(const sop_value *const *)a, *y = *(const sop_value *const *)b;
    return strcmp(x->key, y->key);
}

/* Relink the members of obj in key order (deterministic output whatever lua_next did). */
static int sort_members(sop_value *obj)
{
    if (obj->count < 2)
        return 0;
    sop_value **v = malloc(obj->count * sizeof *v);
    if (!v)
        return -1;
    size_t n = 0;
    for (sop_value *c = obj->child; c; c = c->next)
        v[n++] = c;
    qsort(v, n, sizeof *v, cmp_key);
    for (size_t i = 0; i + 1 < n; i++)
        v[i]->next = v[i + 1];
    v[n - 1]->next = NULL;
    obj->child = v[0];
    obj->last = v[n - 1];
    free(v);
    return 0;
}

static sop_value *to_rec(lua_State *L, int idx, int depth, size_t *budget);

static sop_value *table_to(lua_State *L, int idx, int depth, size_t *budget)
{
    if (depth <= 0 || !lua_checkstack(L, 4))
        return NULL;
    /* First pass: classify the keys. */
    lua_Unsigned n = lua_rawlen(L, idx);
    size_t nkeys = 0;
    int all_str = 1, all_seq = 1;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        nkeys++;
        if (nkeys > *budget) {
            lua_pop(L, 1);
            return NULL;
        }
        if (lua_type(L, -1) == LUA_TSTRING) {
            all_seq = 0;
        } else {
            all_str = 0;
            int isint = 0;
            lua_Integer k = lua_tointegerx(L, -1, &isint);
            if (lua_type(L, -1) != LUA_TNUMBER || !isint || k < 1 || (lua_Unsigned)k > n)
                all_seq = 0;
        }
    }
    if (nkeys == 0)
        return sop__v_obj();
    if (all_seq && nkeys == n) {
        sop_value *arr = sop__v_arr();
        for (lua_Unsigned i = 1; arr && i <= n; i++) {
            lua_rawgeti(L, idx, (lua_Integer)i);
            sop_value *item = to_rec(L, -1, depth - 1, budget);
            lua_pop(L, 1);
            if (!item || sop__v_push(arr, item) != 0) {
                sop__v_free(arr);
                return NULL;
            }
        }
        return arr;
    }
    if (!all_str)
        return NULL;
    sop_value *obj = sop__v_obj();
    lua_pushnil(L);
    while (obj && lua_next(L, idx)) {
        sop_value *item = to_rec(L, -1, depth - 1, budget);
        lua_pop(L, 1);
        if (!item || !sop__v_set(obj, lua_tostring(L, -1), item)) {
            lua_pop(L, 1);
            sop__v_free(obj);
            return NULL;
        }
    }
    if (obj && sort_members(obj) != 0) {
        sop__v_free(obj);
        return NULL;
    }
    return obj;
}

static sop_value *to_rec(lua_State *L, int idx, int depth, size_t *budget)
{
    if (*budget == 0)
        return NULL;
    (*budget)--;
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        return sop__v_null();
    case LUA_TBOOLEAN:
        return sop__v_bool(lua_toboolean(L, idx));
    case LUA_TNUMBER: {
        double d = lua_isinteger(L, idx) ? (double)lua_tointeger(L, idx) : lua_tonumber(L, idx);
        return isfinite(d) ? sop__v_num(d) : sop__v_null();
    }
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len); /* a string: no conversion, no alloc */
        return sop__v_strn(s, strnlen(s, len));
    }
    case LUA_TTABLE:
        return table_to(L, idx, depth, budget);
    default:
        return NULL;
    }
}

sop_value *sop__lua_to_value(lua_State *L, int idx, int depth_limit)
{
    size_t budget = SOP_LUA_MAX_NODES;
    return to_rec(L, idx, depth_limit, &budget);
}
