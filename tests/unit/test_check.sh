#!/usr/bin/env bash
# test_check.sh — `sopctl check` on the default pack (lists every rule id, exit 0), on packs
# with a syntax error (exit 2, file:line on stderr, also inside a required plugin), a rule
# that raises (a rule_errors entry, the others still run), `--set` of an unknown key (exit 2),
# and luacheck on the pack. Needs SOPCTL, SOP_SRC (from ctest) and jq.
. "$(dirname "$0")/lib.sh"
SOPCTL=${SOPCTL:?set SOPCTL}
SRC=${SOP_SRC:?set SOP_SRC}
IDS="oom.killed mem.near_limit mem.fork_cow cpu.oversubscribed cpu.throttled io.d_state io.small_reads"

"$SOPCTL" check "$SRC/rules.lua" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 0 ] && ok "check rules.lua: exit 0" || bad "check rules.lua: exit $rc: $(head -c 300 "$tmp/err")"
for id in $IDS; do
  grep -qw -- "$id" "$tmp/out" && ok "check lists $id" || bad "check does not list $id"
done

# A syntax error in the pack itself.
mkdir -p "$tmp/pack/plugins"
printf 'thresholds { x = 1 }\nrule { id = "a.b", section = "2", severity = "warn",\n  check = function(ev, th) return clear("ok") end\n\n' >"$tmp/pack/bad.lua"
"$SOPCTL" check "$tmp/pack/bad.lua" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 2 ] && ok "syntax error: exit 2" || bad "syntax error: exit $rc"
grep -Eq 'bad\.lua:[0-9]+' "$tmp/err" && ok "syntax error: file:line on stderr" || bad "syntax error stderr: $(head -c 300 "$tmp/err")"

# A syntax error inside a required plugin names the plugin file and line.
printf 'thresholds { x = 1 }\nrequire "plugins.broken"\n' >"$tmp/pack/main.lua"
printf -- '-- broken plugin\nrule { id = "c.d", section = "2", severity = "warn",\n  check = function(ev, th) return clear("ok") en }\n' >"$tmp/pack/plugins/broken.lua"
"$SOPCTL" check "$tmp/pack/main.lua" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 2 ] && ok "plugin syntax error: exit 2" || bad "plugin syntax error: exit $rc"
grep -Eq 'broken\.lua:3' "$tmp/err" && ok "plugin syntax error: broken.lua:3 on stderr" || bad "plugin stderr: $(head -c 300 "$tmp/err")"

# A rule that raises becomes a rule_errors entry with file:line; the other rule still runs.
cat >"$tmp/pack/raise.lua" <<'LUA'
thresholds { x = 1 }
rule { id = "t.raise", section = "2", severity = "warn",
  check = function(ev, th) return ev.no.such.key end }
rule { id = "t.fine", section = "2", severity = "warn",
  check = function(ev, th) return clear("fine") end }
LUA
"$SOPCTL" run "$tmp/pack/raise.lua" --evidence "$SRC/tests/replay/healthy.json" --format json >"$tmp/out" 2>"$tmp/err"
rc=$?
jq -e '.rule_errors[] | select(.id == "t.raise" and (.where | test("raise\\.lua:3")))' "$tmp/out" >/dev/null \
  && ok "raising rule: rule_errors entry at raise.lua:3" || bad "raising rule: $(head -c 400 "$tmp/out") $(head -c 200 "$tmp/err")"
jq -e '.cleared[] | select(.id == "t.fine")' "$tmp/out" >/dev/null && ok "raising rule: the other rule still ran" \
  || bad "raising rule: t.fine missing"

# --set: known keys are accepted, unknown keys are a usage error.
"$SOPCTL" run --evidence "$SRC/tests/replay/healthy.json" --set rss_limit_pct=80 --format json >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" = 0 ] && ok "--set rss_limit_pct=80: exit 0" || bad "--set rss_limit_pct=80: exit $rc: $(head -c 200 "$tmp/err")"
"$SOPCTL" run --evidence "$SRC/tests/replay/healthy.json" --set unknown_key=1 --format json >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" = 2 ] && ok "--set unknown_key=1: exit 2" || bad "--set unknown_key=1: exit $rc"
grep -q unknown_key "$tmp/err" && ok "--set unknown_key=1: named on stderr" || bad "--set unknown_key: stderr $(head -c 200 "$tmp/err")"

# The pack is luacheck-clean (.luacheckrc declares the DSL globals).
if command -v luacheck >/dev/null; then
  (cd "$SRC" && luacheck -q --no-color rules.lua plugins) >"$tmp/lc" 2>&1 && ok "luacheck clean" \
    || bad "luacheck: $(cat "$tmp/lc")"
else
  echo "skip luacheck (not installed)"
fi

finish
