#!/usr/bin/env bash
# test_heap_rules.sh — memory findings carry the heap census (ev.python.heap): replays of
# tests/replay/*heap*.json through the default rules; the growing cache names its class and
# says Python objects explain the growth; the native case (numpy buffers) says they do not and
# points to memray's native mode; near the limit, the largest types are named. Needs SOPCTL,
# SOP_SRC and jq.
. "$(dirname "$0")/lib.sh"
SOPCTL=${SOPCTL:?set SOPCTL}
SRC=${SOP_SRC:?set SOP_SRC}

# field CASE RULE FIELD LANG -> the text of that finding's field
field() {
  "$SOPCTL" run --evidence "$SRC/tests/replay/$1.json" --format json --lang "${4:-en}" \
    >"$tmp/out.json" 2>/dev/null
  jq -r --arg id "$2" --arg f "$3" '.findings[] | select(.id == $id) | .[$f]' "$tmp/out.json"
}
has() { # has LABEL TEXT PATTERN
  if grep -qF -- "$3" <<<"$2"; then ok "$1"; else bad "$1: '$3' not in: ${2:0:400}"; fi
}
hasnt() {
  if grep -qF -- "$3" <<<"$2"; then bad "$1: '$3' in: ${2:0:400}"; else ok "$1"; fi
}

e=$(field growth_heap_python mem.growth evidence)
has "cache: evidence names the class" "$e" "__main__.Response +150"
has "cache: Python objects explain the growth" "$e" "objects explain 97% of the anonymous-memory growth"
f=$(field growth_heap_python mem.growth fix)
has "cache: fix bounds what holds the class" "$f" "bound what holds __main__.Response"
hasnt "cache: not called native" "$f" "do not explain"

e=$(field growth_heap_native mem.growth evidence)
has "native: evidence gives the share" "$e" "objects explain 2% of the anonymous-memory growth"
has "native: numpy buffers" "$e" "numpy arrays own 600.0 MiB of data (+37.0 MiB in the window)"
f=$(field growth_heap_native mem.growth fix)
has "native: Python objects do not explain it" "$f" "Python objects do not explain this memory"
has "native: memray native mode" "$f" "memray attach --native"

e=$(field near_limit_heap mem.near_limit evidence)
has "near limit: largest types" "$e" "largest types: __main__.Sample x900000"
f=$(field near_limit_heap mem.near_limit fix)
has "near limit: native (8% explained)" "$f" "malloc_trim(0)"
f=$(field near_limit_heap mem.near_limit fix zh)
has "near limit: zh fix" "$f" "原生内存"

e=$(field growth_heap_gc_off mem.growth evidence)
has "gc off: named in the evidence" "$e" "the garbage collector is disabled"
has "gc off: the class" "$e" "__main__.Node +90000"
f=$(field growth_heap_gc_off mem.growth fix)
has "gc off: fix re-enables it" "$f" "gc.enable()"

# Without a census the findings are as before.
e=$(field growth mem.growth evidence)
hasnt "no census: no census sentence" "$e" "heap census"

# heap_python_pct moves the line between Python and native.
"$SOPCTL" run --evidence "$SRC/tests/replay/near_limit_heap.json" --format json --set heap_python_pct=5 \
  >"$tmp/out.json" 2>/dev/null
f=$(jq -r '.findings[] | select(.id == "mem.near_limit") | .fix' "$tmp/out.json")
has "--set heap_python_pct=5: Python objects explain it" "$f" "Python objects explain it"

finish
