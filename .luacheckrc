-- .luacheckrc — luacheck settings for the rule pack (rules.lua, plugins/*.lua): Lua 5.4 plus
-- the globals the sandboxed rule runner (engine/rules/rules_dsl.c, rules_sandbox.c) provides to every
-- rule file.
std = "lua54"
max_line_length = 120
read_globals = {
  "thresholds", "explains", "rule", "hit", "clear", "unknown", -- the rule DSL
  "fmt", "kb", "pct",                              -- helpers: string.format, kB -> "1.2 GiB", percent
}
