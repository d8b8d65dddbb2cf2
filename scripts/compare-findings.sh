#!/usr/bin/env bash
# compare-findings.sh OLD_SOPCTL NEW_SOPCTL [SRC] — replays every tests/replay/*.json through two
# builds of sopctl, in English and in Chinese, and diffs the findings, cleared, unknown and
# rule_errors (text included: the replay tests check verdicts and a few phrases only). For a change
# that must not change what the rules say (issue 17: packs as data). Build the old one from main in
# /tmp: git archive main | tar -x -C /tmp/old && cmake -S /tmp/old -B /tmp/old/build &&
# cmake --build /tmp/old/build --target sopctl. Needs jq. Exit 0 when nothing differs.
set -u
OLD=${1:?usage: compare-findings.sh OLD_SOPCTL NEW_SOPCTL [SRC]}
NEW=${2:?usage: compare-findings.sh OLD_SOPCTL NEW_SOPCTL [SRC]}
SRC=${3:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
runs=0 differ=0
for f in "$SRC"/tests/replay/*.json; do
  for lang in en zh; do
    runs=$((runs + 1))
    for side in OLD NEW; do
      "${!side}" run --evidence "$f" --format json --lang "$lang" --no-site 2>/dev/null \
        | jq -S '{findings, cleared, unknown, rule_errors}' >"$tmp/$side" 2>/dev/null
      if ! jq -e '(.findings | length) + (.cleared | length) + (.unknown | length) > 0' "$tmp/$side" >/dev/null 2>&1; then
        echo "no verdicts from $side ($(basename "$f"), $lang)"
        exit 2
      fi
    done
    if ! cmp -s "$tmp/OLD" "$tmp/NEW"; then
      differ=$((differ + 1))
      echo "DIFF $(basename "$f") --lang $lang"
      diff "$tmp/OLD" "$tmp/NEW" | head -20
    fi
  done
done
echo "$runs runs, $differ differ"
[ "$differ" = 0 ]
