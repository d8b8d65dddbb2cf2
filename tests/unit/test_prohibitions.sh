#!/usr/bin/env bash
# test_prohibitions.sh — the SOP §10 rules on output, checked over every finding the pack
# produces on the replay cases (tests/replay/*.json), in English and Chinese: evidence carries
# numbers; at least one https reference; a non-empty fix and verify; no hedging ("maybe",
# "possibly", "perhaps", "might", "可能"); no blind advice to raise num_workers to a big number
# (§10: measure first); a fix that changes the multiprocessing start method states its side
# effects. The cases run side by side (SOP_TEST_JOBS at a time). Needs SOPCTL, SOP_SRC and jq.
. "$(dirname "$0")/lib.sh"
SOPCTL=${SOPCTL:?set SOPCTL}
SRC=${SOP_SRC:?set SOP_SRC}
ok() { pass=$((pass + 1)); }
n=0
# One jq pass per report: a line "COUNT" then one line per violation.
CHECK='
  def hedge: test("\\b(maybe|possibly|perhaps|might)\\b"; "i") or test("可能");
  def texts: [.symptom, .evidence, .cause, .fix, .verify] | map(tostring) | join(" ");
  (.findings | length),
  (.findings[] | . as $f | .id as $id |
    (if (.evidence | tostring | test("[0-9]")) then empty else "\($id): evidence without numbers" end),
    (if ([.refs[]? | select(startswith("https://"))] | length) > 0 then empty else "\($id): no https reference" end),
    (if (.fix | length > 0) and (.verify | length > 0) and (.cause | length > 0) then empty
     else "\($id): empty cause/fix/verify" end),
    (if ($f | texts | hedge) then "\($id): hedging: \($f | texts | match(".{0,40}(maybe|possibly|perhaps|might|可能).{0,40}"; "i").string)"
     else empty end),
    (if (.fix | test("num_workers *(=|to) *(3[2-9]|[4-9][0-9]|[0-9]{3})"; "i"))
     then "\($id): advises a large num_workers without measuring" else empty end),
    (if (.fix | test("set_start_method|start method|启动方式"; "i"))
        and ((.fix | test("slower|re-?import|picklable|side effect|副作用|更慢|重新 ?import|pickle"; "i")) | not)
     then "\($id): changes the start method without its side effects" else empty end))'
# check_case EV: both languages, in a scratch $tmp of its own (a subshell): "bad TEXT" per
# violation, "findings K" and "ok" per language checked.
check_case() {
  local ev=$1 lang k v
  for lang in en zh; do
    "$SOPCTL" run --no-site --evidence "$ev" --format json --lang "$lang" >"$tmp/out.json" 2>/dev/null
    if ! jq -r "$CHECK" "$tmp/out.json" >"$tmp/res" 2>"$tmp/jqerr" || ! [ -s "$tmp/res" ]; then
      echo "bad $(basename "$ev") $lang: no JSON report: $(head -c 200 "$tmp/jqerr" | tr '\n' ' ')"
      continue
    fi
    k=$(head -1 "$tmp/res")
    echo "findings $k"
    while IFS= read -r v; do echo "bad $(basename "$ev") $lang $v"; done < <(tail -n +2 "$tmp/res")
    echo "ok"
  done
}
# The cases side by side, SOP_TEST_JOBS at a time (default: the CPU count); read in case order.
jobs_max=${SOP_TEST_JOBS:-$(nproc)}
mkdir "$tmp/lines"
cases=("$SRC"/tests/replay/*.json)
for i in "${!cases[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
  (tmp=$tmp/case.$i && mkdir "$tmp" && check_case "${cases[$i]}") >"$tmp/lines/$i" 2>&1 &
done
wait
for i in "${!cases[@]}"; do
  while IFS= read -r line; do
    case $line in
      ok) ok ;;
      findings\ *) n=$((n + ${line#findings })) ;;
      bad\ *) bad "${line#bad }" ;;
      *) bad "$(basename "${cases[$i]}"): $line" ;;
    esac
  done <"$tmp/lines/$i"
done
echo "checked $n findings"
[ "$n" -gt 20 ] && ok || bad "only $n findings in the replay cases"
finish
