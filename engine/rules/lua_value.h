/* lua_value.h — moves value trees (engine/core/value.h) in and out of Lua tables, for the rule
 * runner (engine/rules/). Implemented in lua_value.c; the rule runner's files are the only ones
 * that include Lua headers. */
#ifndef SOP_LUA_VALUE_H
#define SOP_LUA_VALUE_H

#include <lua.h>

#include "value.h"

/* Largest number of nodes sop__lua_to_value converts before giving up. */
#define SOP_LUA_MAX_NODES 100000

/* Push `v` as a fresh Lua value: objects and arrays become tables (arrays 1-based), numbers
 * that hold an integer become Lua integers, null becomes nil (skipped in objects, a hole in
 * arrays). Trees deeper than 64 levels are cut (the deeper value becomes nil). NULL pushes
 * nil. May raise a Lua memory error: call it in protected mode. */
void sop__lua_push_value(lua_State *L, const sop_value *v);

/* Convert the Lua value at `idx` into a new tree owned by the caller. A table whose keys are
 * exactly 1..n (n > 0) becomes an array, a table with only string keys an object (members
 * sorted by key; the empty table is an empty object). Non-finite numbers become null.
 * Returns NULL (and converts nothing) for functions, userdata, threads, tables with other
 * keys, trees deeper than `depth_limit` (which is how cycles end), more than
 * SOP_LUA_MAX_NODES nodes, or when malloc fails. Uses raw access only: it runs no
 * metamethods and raises no Lua error. */
sop_value *sop__lua_to_value(lua_State *L, int idx, int depth_limit);

#endif
