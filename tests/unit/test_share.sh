#!/usr/bin/env bash
# test_share.sh — helpers of plugins/common.lua on replayed evidence. The user's frame: a
# blocked event loop is named by the user's own frame and the leaf below it, and a site file
# can redefine own code. share(): a thread whose
# decode work is spread over 10 distinct stacks, none in its top 5, has an exact share of 30%
# (top stacks alone would say 0%); per process (all threads) and on older evidence without
# window.dist (top_stacks: a lower bound, not exact). Runs a site rule that calls share() (its
# `reads` lists python.window: share() on a process looks for the process's own window first).
# Needs SOPCTL, SOP_SRC, SOP_FIXTURES and jq.
. "$(dirname "$0")/lib.sh"
SOPCTL=${SOPCTL:?set SOPCTL}
FIX=${SOP_FIXTURES:?set SOP_FIXTURES}
cat >"$tmp/site.lua" <<'LUA'
local common = require "plugins.common"
rule { id = "site.share", section = "3", severity = "info", title = "share", reads = { "python.threads", "python.window" },
  check = function(ev)
    local py = ev.python
    local f1, c1, n1, e1 = common.share(py.threads[1], "decode", true)
    local f2, _, n2 = common.share(py.threads[1], "^crop ")
    local f3, c3, n3, e3 = common.share(py, "decode", true)
    local f4, _, _, e4 = common.share(py.threads[2], "decode", true)
    local f5 = common.share({}, "x")
    return hit { symptom = "s", cause = "c", fix = "f", verify = "v", refs = { "https://example.org/" },
      evidence = fmt("t1 %.3f %d %d %s | crop %.3f %d | proc %.3f %d %d %s | old %.3f %s | none %s",
        f1, c1, n1, tostring(e1), f2, n2, f3, c3, n3, tostring(e3), f4, tostring(e4), tostring(f5)) }
  end }
LUA
"$SOPCTL" run --evidence "$FIX/share_evidence.json" --site "$tmp/site.lua" --format json >"$tmp/out.json" 2>"$tmp/err"
got=$(jq -r '.findings[] | select(.id == "site.share") | .evidence' "$tmp/out.json" 2>/dev/null)
want="t1 0.300 60 200 true | crop 0.150 200 | proc 0.300 90 300 false | old 0.300 false | none nil"
[ "$got" = "$want" ] && ok "share(): $got" || bad "share(): got '$got' want '$want' $(head -c 300 "$tmp/err")"
[ "$(jq '.rule_errors | length' "$tmp/out.json")" = 0 ] && ok "no rule errors" || bad "rule errors: $(jq -c .rule_errors "$tmp/out.json")"
# The user's frame: own code (under the script's directory) and the leaf below it.
SRC=${SOP_SRC:?set SOP_SRC}
ABC="$SRC/tests/replay/asyncio_blocking_client.json"
"$SOPCTL" run --evidence "$ABC" --format json >"$tmp/abc.json" 2>"$tmp/err"
ev=$(jq -r '.findings[] | select(.id == "asyncio.loop_blocked") | .evidence' "$tmp/abc.json")
case $ev in
  *"get_user (asyncio_blocking_client.py:"*"→ SocketIO.readinto (socket.py:"*) ok "user frame: $ev" ;;
  *) bad "user frame: '$ev'" ;;
esac
cat >"$tmp/own.lua" <<'LUA'
require("plugins.common").is_own_file = function(file) return file:find("socket.py", 1, true) ~= nil end
LUA
"$SOPCTL" run --evidence "$ABC" --site "$tmp/own.lua" --format json >"$tmp/abc2.json" 2>"$tmp/err"
ev=$(jq -r '.findings[] | select(.id == "asyncio.loop_blocked") | .evidence' "$tmp/abc2.json")
case $ev in
  *"in SocketIO.readinto (socket.py:"*) case $ev in *get_user*) bad "site own code: '$ev'" ;; *) ok "site redefines own code" ;; esac ;;
  *) bad "site own code: '$ev' $(head -c 300 "$tmp/err")" ;;
esac

# tr(): named placeholders, in a different order in zh; a format; braces that are no placeholder.
cat >"$tmp/tr.lua" <<'LUA'
local common = require "plugins.common"
rule { id = "site.tr", section = "3", severity = "info", title = "tr", reads = {},
  check = function()
    return clear(common.tr("{n} threads on {cpus:%.1f} CPUs {not one} {x:}", "{cpus:%.1f} 个 CPU 上 {n} 个线程 {}",
                           { n = 3, cpus = 2, x = "y" }))
  end }
LUA
"$SOPCTL" run --evidence "$ABC" --site "$tmp/tr.lua" --format json --lang zh >"$tmp/tr_zh.json" 2>"$tmp/err"
"$SOPCTL" run --evidence "$ABC" --site "$tmp/tr.lua" --format json >"$tmp/tr.json" 2>"$tmp/err"
got=$(jq -r '.cleared[] | select(.id == "site.tr") | .note' "$tmp/tr.json")
[ "$got" = "3 threads on 2.0 CPUs {not one} {x:}" ] && ok "tr() en: $got" || bad "tr() en: '$got' $(head -c 300 "$tmp/err")"
got=$(jq -r '.cleared[] | select(.id == "site.tr") | .note' "$tmp/tr_zh.json")
[ "$got" = "2.0 个 CPU 上 3 个线程 {}" ] && ok "tr() zh: $got" || bad "tr() zh: '$got'"

finish
