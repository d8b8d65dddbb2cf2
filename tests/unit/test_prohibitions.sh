#!/usr/bin/env bash
# test_prohibitions.sh — the SOP §10 rules on output, checked over every finding the pack
# produces on the replay cases (tests/replay/*.json), in English and Chinese: evidence carries
# numbers; at least one https reference; a non-empty fix and verify; no hedging ("maybe",
# "possibly", "perhaps", "might", "可能"); no blind advice to raise num_workers to a big number
# (§10: measure first); a fix that changes the multiprocessing start method states its side
# effects. Needs SOPCTL, SOP_SRC and jq.
set -u
SOPCTL=${SOPCTL:?set SOPCTL}
SRC=${SOP_SRC:?set SOP_SRC}
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for ev in "$SRC"/tests/replay/*.json; do
  for lang in en zh; do
    "$SOPCTL" run --no-site --evidence "$ev" --format json --lang "$lang" >"$tmp/out.json" 2>/dev/null
    jq -c '.findings[]' "$tmp/out.json" >"$tmp/f" || { bad "$(basename "$ev") $lang: no JSON"; continue; }
    while IFS= read -r f; do
      n=$((n + 1))
      id=$(jq -r .id <<<"$f")
      where="$(basename "$ev") $lang $id"
      jq -e '.evidence | test("[0-9]")' <<<"$f" >/dev/null && ok || bad "$where: evidence without numbers"
      jq -e '[.refs[]? | select(startswith("https://"))] | length > 0' <<<"$f" >/dev/null && ok \
        || bad "$where: no https reference"
      jq -e '(.fix | length > 0) and (.verify | length > 0) and (.cause | length > 0)' <<<"$f" >/dev/null \
        && ok || bad "$where: empty cause/fix/verify"
      if jq -r '[.symptom, .evidence, .cause, .fix, .verify] | join(" ")' <<<"$f" \
          | grep -Eiq '\b(maybe|possibly|perhaps|might)\b|可能'; then
        bad "$where: hedging: $(jq -r '[.symptom, .cause, .fix] | join(" | ")' <<<"$f" | grep -Eio '.{40}(maybe|possibly|perhaps|might|可能).{40}' | head -1)"
      else ok; fi
      if jq -r .fix <<<"$f" | grep -Eiq 'num_workers *(=|to) *(3[2-9]|[4-9][0-9]|[0-9]{3})'; then
        bad "$where: advises a large num_workers without measuring"
      else ok; fi
      if jq -r .fix <<<"$f" | grep -Eiq 'set_start_method|start method|启动方式'; then
        jq -r .fix <<<"$f" | grep -Eiq 'slower|re-?import|picklable|side effect|副作用|更慢|重新 ?import|pickle' \
          && ok || bad "$where: changes the start method without its side effects"
      fi
    done <"$tmp/f"
  done
done
echo "checked $n findings"
[ "$n" -gt 20 ] && ok || bad "only $n findings in the replay cases"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
