#!/usr/bin/env bash
# test_rules_doc.sh — docs/rules.md is generated (`sopctl check rules.lua --doc`) and must equal
# what the packs say now; every shipped rule carries its documentation fields (title in English
# and Chinese, reads, uses); a rule that `uses` an undeclared threshold does not load; a rule
# that reads a threshold missing from its `uses` list becomes a rule error; the embedded pack
# and rules.lua read from disk describe the same rules. Needs SOPCTL, SOP_SRC and jq.
. "$(dirname "$0")/lib.sh"
SOPCTL=${SOPCTL:?set SOPCTL}
SRC=${SOP_SRC:?set SOP_SRC}

"$SOPCTL" check "$SRC/rules.lua" --doc >"$tmp/rules.md" 2>"$tmp/err"
rc=$?
[ "$rc" = 0 ] && ok "check --doc: exit 0" || bad "check --doc: exit $rc: $(head -c 300 "$tmp/err")"
if diff -u "$SRC/docs/rules.md" "$tmp/rules.md" >"$tmp/diff"; then
  ok "docs/rules.md is what the packs generate"
else
  bad "docs/rules.md differs from the packs; regenerate with: build/sopctl check rules.lua --doc > docs/rules.md"
  head -40 "$tmp/diff"
fi

"$SOPCTL" check "$SRC/rules.lua" --json >"$tmp/desc.json" 2>"$tmp/err" && ok "check --json: exit 0" \
  || bad "check --json: $(head -c 300 "$tmp/err")"
n=$(jq '.rules | length' "$tmp/desc.json")
[ "${n:-0}" -ge 9 ] && ok "$n rules described" || bad "rules described: $n"
missing=$(jq -r '.rules[] | select((.title.en // "") == "" or (.title.zh // "") == "" or (.reads | length) == 0
                 or (has("uses") | not)) | .id' "$tmp/desc.json")
[ -z "$missing" ] && ok "every rule has title (en, zh), reads and uses" || bad "missing doc fields: $missing"
"$SOPCTL" check default --json >"$tmp/desc2.json" 2>/dev/null
[ "$(jq -c '[.rules[] | [.id, .section, .severity, .uses]]' "$tmp/desc.json")" = \
  "$(jq -c '[.rules[] | [.id, .section, .severity, .uses]]' "$tmp/desc2.json")" ] \
  && ok "embedded pack and rules.lua describe the same rules" || bad "embedded pack differs from rules.lua"

# `uses` naming a threshold nobody declares: the pack does not load.
cat >"$tmp/bad_uses.lua" <<'LUA'
thresholds { a = 1 }
rule { id = "x.y", section = "2", severity = "warn", title = "t", reads = { "proc" }, uses = { "b" },
  check = function(ev, th) return clear("ok") end }
LUA
"$SOPCTL" check "$tmp/bad_uses.lua" >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" = 2 ] && grep -q "uses threshold 'b'" "$tmp/err" && ok "undeclared threshold in uses: exit 2, named" \
  || bad "undeclared uses: exit $rc: $(head -c 300 "$tmp/err")"

# Reading a threshold the rule does not list in `uses`: a rule error; a rule without `uses` may
# read any threshold.
cat >"$tmp/undeclared_read.lua" <<'LUA'
thresholds { a = 1, b = 2 }
rule { id = "x.listed", section = "2", severity = "warn", title = "t", reads = { "pid" }, uses = { "a" },
  check = function(ev, th) return clear(fmt("%d %d", th.a, th.b)) end }
rule { id = "x.free", section = "2", severity = "warn",
  check = function(ev, th) return clear(fmt("%d %d", th.a, th.b)) end }
LUA
echo '{"schema":1,"pid":1,"duration_s":0}' >"$tmp/ev.json"
"$SOPCTL" run "$tmp/undeclared_read.lua" --evidence "$tmp/ev.json" --format json >"$tmp/out.json" 2>"$tmp/err"
jq -e '.rule_errors[] | select(.id == "x.listed" and (.message | test("not in the rule.s `uses`")))' \
  "$tmp/out.json" >/dev/null && ok "threshold read outside uses: rule error" \
  || bad "threshold read outside uses: $(head -c 400 "$tmp/out.json")"
jq -e '.cleared[] | select(.id == "x.free")' "$tmp/out.json" >/dev/null && ok "rule without uses reads any threshold" \
  || bad "rule without uses: $(head -c 400 "$tmp/out.json")"

# Bad documentation fields are load errors with the rule named.
printf 'rule { id = "x.z", section = "2", severity = "warn", reads = "proc",\n  check = function(ev, th) return clear("ok") end }\n' >"$tmp/bad_reads.lua"
"$SOPCTL" check "$tmp/bad_reads.lua" >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" = 2 ] && grep -q "reads must be a list" "$tmp/err" && ok "reads not a list: exit 2" \
  || bad "reads not a list: exit $rc: $(head -c 300 "$tmp/err")"

finish
