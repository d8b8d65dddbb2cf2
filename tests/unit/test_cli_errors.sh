#!/usr/bin/env bash
# test_cli_errors.sh — the errors a careful CLI gives (issue 13): a failed write of stdout or
# -o is exit 2 with a message, for every command (items 7); only regular files (or a documented
# `-`) are read as evidence, rules, site or plugin, anything else (a FIFO, a directory) is exit
# 2 naming it without blocking (item 5); the minor usage errors of item 10. Needs SOPCTL,
# SOP_SRC; a FIFO read that blocked is caught by `timeout`.
. "$(dirname "$0")/lib.sh"
SOPCTL=$(readlink -f "${SOPCTL:?set SOPCTL}")
SRC=${SOP_SRC:?set SOP_SRC}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
unset SOP_SITE
EV="$SRC/tests/replay/healthy.json"
# expect2 LABEL CMD...: exit 2 and something on stderr, within 20 s (a blocked open is a failure)
expect2() {
  local label=$1
  shift
  timeout 20 "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" = 2 ] && [ -s "$tmp/err" ]; then ok "$label: exit 2 ($(head -c 120 "$tmp/err" | tr '\n' ' '))"
  else bad "$label: exit $rc, stderr '$(head -c 200 "$tmp/err")'"; fi
}

## item 7: write errors
if [ -w /dev/full ]; then
  for args in "version" "check default --doc" "check default --json" "check default" "agents-md" \
              "run --evidence $EV" "run --evidence $EV --format json" "help"; do
    # shellcheck disable=SC2086
    timeout 60 "$SOPCTL" $args >/dev/full 2>"$tmp/err"
    rc=$?
    [ "$rc" = 2 ] && grep -q "writ" "$tmp/err" && ok "$args >/dev/full: exit 2 with a message" \
      || bad "$args >/dev/full: exit $rc, stderr '$(head -c 200 "$tmp/err")'"
  done
  # dump: only meaningful when dumping this python works at all here
  /usr/bin/python3 -c 'import time; time.sleep(120)' &
  py=$!
  pids+=("$py")
  sleep 0.5
  if timeout 60 "$SOPCTL" dump --pid "$py" >/dev/null 2>&1; then
    timeout 60 "$SOPCTL" dump --pid "$py" >/dev/full 2>"$tmp/err"
    rc=$?
    [ "$rc" = 2 ] && grep -q "writ" "$tmp/err" && ok "dump >/dev/full: exit 2 with a message" \
      || bad "dump >/dev/full: exit $rc, stderr '$(head -c 200 "$tmp/err")'"
    timeout 60 "$SOPCTL" dump --pid "$py" --json >/dev/full 2>"$tmp/err"
    rc=$?
    [ "$rc" = 2 ] && grep -q "writ" "$tmp/err" && ok "dump --json >/dev/full: exit 2 with a message" \
      || bad "dump --json >/dev/full: exit $rc, stderr '$(head -c 200 "$tmp/err")'"
    timeout 60 "$SOPCTL" tasks --pid "$py" >/dev/full 2>"$tmp/err"
    rc=$?
    [ "$rc" = 2 ] && grep -q "writ" "$tmp/err" && ok "tasks >/dev/full: exit 2 with a message" \
      || bad "tasks >/dev/full: exit $rc, stderr '$(head -c 200 "$tmp/err")'"
    timeout 60 "$SOPCTL" evidence --pid "$py" --duration 0 -o /dev/full 2>"$tmp/err"
    rc=$?
    [ "$rc" = 2 ] && ok "evidence -o /dev/full: exit 2" || bad "evidence -o /dev/full: exit $rc"
  else
    echo "skip dump/evidence >/dev/full: cannot dump a python here"
  fi
else
  echo "skip: no writable /dev/full"
fi

## evidence whose pid is no process id (a fuzzer's 4.2e53 once reached an int64 cast)
for bad_pid in 424444444444444444444444444444444444444444444444444442 0 -7 4242.5; do
  sed "s/^ *\"pid\": *[0-9]*,/  \"pid\": $bad_pid,/" "$EV" >"$tmp/badpid.json"
  expect2 "evidence with pid $bad_pid" "$SOPCTL" run --evidence "$tmp/badpid.json"
  grep -q "not a process id" "$tmp/err" && ok "pid $bad_pid: 'not a process id'" \
    || bad "pid $bad_pid message: $(head -c 200 "$tmp/err")"
done

## item 5: only regular files are read (a FIFO must not block the open)
mkfifo "$tmp/fifo"
mkdir -p "$tmp/pack/plugins" "$tmp/dir"
mkfifo "$tmp/pack/plugins/x.lua"
printf 'require "plugins.x"\n' >"$tmp/pack/main.lua"
expect2 "run --evidence FIFO" "$SOPCTL" run --evidence "$tmp/fifo"
grep -q "fifo" "$tmp/err" && grep -q "regular" "$tmp/err" && ok "FIFO evidence: named, 'not a regular file'" \
  || bad "FIFO evidence message: $(head -c 200 "$tmp/err")"
expect2 "run --evidence DIR" "$SOPCTL" run --evidence "$tmp/dir"
grep -q "JSON" "$tmp/err" && bad "directory evidence: says JSON: $(head -c 200 "$tmp/err")" \
  || ok "directory evidence: not a JSON error"
expect2 "run FIFO-as-rules" "$SOPCTL" run "$tmp/fifo" --evidence "$EV"
expect2 "check FIFO-as-rules" "$SOPCTL" check "$tmp/fifo"
expect2 "run --site FIFO" "$SOPCTL" run --evidence "$EV" --site "$tmp/fifo"
expect2 "check --site FIFO" "$SOPCTL" check default --site "$tmp/fifo"
expect2 "require of a FIFO plugin" "$SOPCTL" check "$tmp/pack/main.lua"
grep -q "x.lua" "$tmp/err" && ok "FIFO plugin: named" || bad "FIFO plugin message: $(head -c 200 "$tmp/err")"
# '-' (stdin) stays documented for --evidence
"$SOPCTL" run --evidence - --format json <"$EV" >"$tmp/out" 2>"$tmp/err"
rc=$?
{ [ "$rc" = 0 ] || [ "$rc" = 1 ]; } && ok "--evidence - reads stdin (exit $rc)" || bad "--evidence -: exit $rc $(head -c 200 "$tmp/err")"

## item 10: the minor usage errors
expect2 "version extra" "$SOPCTL" version extra
expect2 "run --duration 0x10" "$SOPCTL" run --pid $$ --duration 0x10
expect2 "run --duration inf" "$SOPCTL" run --pid $$ --duration inf
expect2 "run --rate 1e3" "$SOPCTL" run --pid $$ --rate 1e3
expect2 "run: --pid twice" "$SOPCTL" run --pid $$ --pid 1
grep -q "twice" "$tmp/err" && ok "--pid twice: says so" || bad "--pid twice: $(head -c 200 "$tmp/err")"
expect2 "evidence: --pid twice" "$SOPCTL" evidence --pid $$ --pid 1
expect2 "dump: --pid twice" "$SOPCTL" dump --pid $$ --pid 1
expect2 "run --site x --no-site" "$SOPCTL" run --evidence "$EV" --site "$SRC/examples/site/site.lua" --no-site
expect2 "run: --evidence twice" "$SOPCTL" run --evidence "$EV" --evidence "$EV"
"$SOPCTL" run --evidence "$EV" --duration 2.5 >/dev/null 2>&1
rc=$?
{ [ "$rc" = 0 ] || [ "$rc" = 1 ]; } && ok "--duration 2.5 still accepted" || bad "--duration 2.5: exit $rc"
# dump of a kernel thread (kthreadd is pid 2 on Linux, when visible) is "not CPython", not "not found"
if [ -r /proc/2/stat ] && [ "$(awk '{print $2}' /proc/2/stat)" = "(kthreadd)" ]; then
  timeout 20 "$SOPCTL" dump --pid 2 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" = 3 ] && grep -q "kernel thread" "$tmp/out" "$tmp/err" && ! grep -q "not found" "$tmp/err" \
    && ok "dump --pid 2: exit 3, a kernel thread" || bad "dump --pid 2: exit $rc: $(cat "$tmp/out" "$tmp/err" | head -c 300)"
else
  echo "skip dump --pid 2: no kthreadd visible"
fi
# evidence -o - is stdout, never a file named '-'
/usr/bin/python3 -c 'import time; time.sleep(120)' &
py2=$!
pids+=("$py2")
(cd "$tmp" && timeout 60 "$SOPCTL" evidence --pid "$py2" --duration 0 --no-python -o - >"$tmp/ev.json" 2>"$tmp/err")
rc=$?
[ "$rc" = 0 ] && [ ! -e "$tmp/-" ] && grep -q '"pid"' "$tmp/ev.json" && ok "evidence -o -: stdout, no file '-'" \
  || bad "evidence -o -: exit $rc, file '-' $( [ -e "$tmp/-" ] && echo exists || echo absent): $(head -c 200 "$tmp/err")"

## item 6: --rate never shortens the window; fewer than two samples in it is a usage error
/usr/bin/python3 -c 'while True: pass' &
busy=$!
pids+=("$busy")
sleep 0.5
timeout 60 "$SOPCTL" evidence --pid "$busy" --duration 1 --rate 2 >"$tmp/ev2.json" 2>"$tmp/err"
rc=$?
if [ "$rc" = 0 ] && jq -e '.python.threads' "$tmp/ev2.json" >/dev/null 2>&1; then
  # a sleep can only make the window longer under load, never shorter: a lower bound is exact
  w=$(jq '.duration_s' "$tmp/ev2.json")
  awk -v w="$w" 'BEGIN { exit !(w >= 0.999) }' && ok "--duration 1 --rate 2: window ${w}s (the asked 1 s)" \
    || bad "--duration 1 --rate 2: window ${w}s, shorter than asked"
else
  echo "skip window check: python not sampled here (exit $rc)"
fi
expect2 "run --duration 2 --rate 0.5 (one sample)" "$SOPCTL" run --pid "$busy" --duration 2 --rate 0.5
grep -q "fewer than two samples" "$tmp/err" && ok "one sample: says so" || bad "one sample: $(head -c 200 "$tmp/err")"
expect2 "record --duration 1 --rate 1" "$SOPCTL" record --pid "$busy" --duration 1 --rate 1 -o "$tmp/r.txt"
kill "$busy" 2>/dev/null

finish
