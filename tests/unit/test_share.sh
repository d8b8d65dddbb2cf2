#!/usr/bin/env bash
# test_share.sh — the share() helper of plugins/common.lua on replayed evidence: a thread whose
# decode work is spread over 10 distinct stacks, none in its top 5, has an exact share of 30%
# (top stacks alone would say 0%); per process (all threads) and on older evidence without
# window.dist (top_stacks: a lower bound, not exact). Runs a site rule that calls share().
# Needs SOPCTL, SOP_SRC, SOP_FIXTURES and jq.
set -u
SOPCTL=${SOPCTL:?set SOPCTL}
FIX=${SOP_FIXTURES:?set SOP_FIXTURES}
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/site.lua" <<'LUA'
local common = require "plugins.common"
rule { id = "site.share", section = "3", severity = "info", title = "share", reads = { "python.threads" },
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
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
