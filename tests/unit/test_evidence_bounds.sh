#!/usr/bin/env bash
# test_evidence_bounds.sh — the evidence loader's bounds (issue 13 item 4): a file of many tiny
# values is refused before it is parsed (exit 2, the bound and the byte offset named) with a
# peak RSS near the file's size; the densest file the bound accepts is loaded and evaluated
# with a peak RSS a small multiple of its size; nesting past 64 levels, trailing garbage and
# keys of the wrong type are exit 2 naming the byte offset or the key. RSS is measured by
# python3 (getrusage of the child): a memory bound, not a timing one. Needs SOPCTL, SOP_SRC, jq.
. "$(dirname "$0")/lib.sh"
SOPCTL=${SOPCTL:?set SOPCTL}
SRC=${SOP_SRC:?set SOP_SRC}
EV="$SRC/tests/replay/healthy.json"

# run_rss FILE: runs `sopctl run --evidence FILE`; prints "exit peak_rss_kb", stderr in $tmp/err
run_rss() {
  /usr/bin/python3 - "$SOPCTL" "$1" "$tmp/err" <<'PY'
import resource, subprocess, sys
with open(sys.argv[3], "w") as err:
    p = subprocess.run([sys.argv[1], "run", "--evidence", sys.argv[2], "--format", "json"],
                       stdout=subprocess.DEVNULL, stderr=err, timeout=300)
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}

# 16 MB of [0,0,...]: 8 M values, two bytes each (was 1.3 GB of RSS and a "no finding" report)
/usr/bin/python3 -c '
import sys
sys.stdout.write("{\"schema\":1,\"pid\":1,\"host\":{},\"x\":[" + ",".join(["0"] * 8000000) + "]}")' >"$tmp/zeros.json"
size_kb=$(( $(stat -c %s "$tmp/zeros.json") / 1024 ))
read -r rc rss < <(run_rss "$tmp/zeros.json")
[ "$rc" = 2 ] && grep -q "more than .* JSON values at byte" "$tmp/err" && ok "16 MB of tiny values: exit 2 ($(head -c 150 "$tmp/err"))" \
  || bad "16 MB of tiny values: exit $rc: $(head -c 200 "$tmp/err")"
if [ -n "${SOP_SANITIZE:-}" ]; then echo "skip RSS bound: sanitizer build"
elif [ "$rss" -le $((2 * size_kb + 32768)) ]; then ok "refused with peak RSS ${rss} kB for a ${size_kb} kB file"
else bad "refused, but peak RSS ${rss} kB for a ${size_kb} kB file"; fi

# the densest file the bound accepts: 8 bytes a value, ~2 M values (~16 MB)
/usr/bin/python3 -c '
import sys
sys.stdout.write("{\"schema\":1,\"pid\":1,\"host\":{},\"x\":[" + ",".join(["1234567"] * 1990000) + "]}")' >"$tmp/dense.json"
size_kb=$(( $(stat -c %s "$tmp/dense.json") / 1024 ))
read -r rc rss < <(run_rss "$tmp/dense.json")
{ [ "$rc" = 0 ] || [ "$rc" = 1 ]; } && ok "densest accepted file: evaluated (exit $rc)" || bad "dense: exit $rc: $(head -c 200 "$tmp/err")"
if [ -n "${SOP_SANITIZE:-}" ]; then echo "skip RSS bound: sanitizer build"
elif [ "$rss" -le $((16 * size_kb + 32768)) ]; then ok "densest accepted file: peak RSS ${rss} kB = $((rss / size_kb))x its ${size_kb} kB"
else bad "densest accepted file: peak RSS ${rss} kB for ${size_kb} kB (over 16x)"; fi

# nesting past 64 levels
/usr/bin/python3 -c 'import sys; sys.stdout.write("{\"schema\":1,\"pid\":1,\"host\":{},\"x\":" + "[" * 100 + "]" * 100 + "}")' >"$tmp/deep.json"
"$SOPCTL" run --evidence "$tmp/deep.json" >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" = 2 ] && grep -q "nested deeper than 64 levels at byte [0-9]" "$tmp/err" && ok "deep nesting: exit 2 at its byte" \
  || bad "deep nesting: exit $rc: $(head -c 200 "$tmp/err")"

# trailing garbage after a valid evidence object
{ cat "$EV"; printf '\n{"pid": 7} trailing'; } >"$tmp/trail.json"
off=$(( $(stat -c %s "$EV") + 1 ))
"$SOPCTL" run --evidence "$tmp/trail.json" >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" = 2 ] && grep -q "trailing data after the JSON value at byte $off" "$tmp/err" && ok "trailing garbage: exit 2 at byte $off" \
  || bad "trailing garbage: exit $rc: $(head -c 200 "$tmp/err")"
printf '\n\n  \n' | cat "$EV" - >"$tmp/ws.json"
"$SOPCTL" run --evidence "$tmp/ws.json" >/dev/null 2>"$tmp/err"
rc=$?
{ [ "$rc" = 0 ] || [ "$rc" = 1 ]; } && ok "trailing white space: accepted" || bad "trailing white space: exit $rc"

# keys of the wrong type
for edit in '.pid = "4242"' '.threads = {}' '.proc = 5' '.host = []' '.threads[0] = 3'; do
  jq "$edit" "$EV" >"$tmp/typed.json"
  key=$(printf '%s' "$edit" | sed -E 's/^\.([a-z_]+)(\[0\])? .*/\1\2/')
  "$SOPCTL" run --evidence "$tmp/typed.json" >/dev/null 2>"$tmp/err"
  rc=$?
  [ "$rc" = 2 ] && grep -qF "key '$key'" "$tmp/err" && ok "$edit: exit 2 naming '$key'" \
    || bad "$edit: exit $rc: $(head -c 200 "$tmp/err")"
done
finish
