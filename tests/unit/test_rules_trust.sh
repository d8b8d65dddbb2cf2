#!/usr/bin/env bash
# test_rules_trust.sh — as root, sopctl refuses a rule file or a plugin it requires that
# another user could have written (owned by another uid, or writable by group or others):
# exit 2 and the reason on stderr; a root-owned 0644 pack still loads. As an unprivileged
# user such files are that user's own business and load. Needs SOPCTL (from ctest); root.
. "$(dirname "$0")/lib.sh"
SOPCTL=${SOPCTL:?set SOPCTL}
if [ "$(id -u)" != 0 ]; then
  echo "note: not root; the refusal only applies to root: skipped"
  echo "0 passed, 0 failed"
  exit 0
fi
chmod 0755 "$tmp"
mkdir -p "$tmp/pack/plugins"
cat >"$tmp/pack/rules.lua" <<'LUA'
rule { id = "t.ok", section = "1", severity = "info",
  check = function(ev, th) return clear("fine") end }
LUA
cat >"$tmp/pack/uses.lua" <<'LUA'
local h = require "plugins.h"
rule { id = "t.plugin", section = "1", severity = "info",
  check = function(ev, th) return clear(h.word) end }
LUA
printf 'return { word = "fine" }\n' >"$tmp/pack/plugins/h.lua"
chmod 0644 "$tmp/pack/rules.lua" "$tmp/pack/uses.lua" "$tmp/pack/plugins/h.lua"

expect() { # expect NAME RC PATTERN FILE
  "$SOPCTL" check "$4" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" = "$2" ] && ok "$1: exit $2" || bad "$1: exit $rc (want $2): $(head -c 300 "$tmp/err")"
  if [ -n "$3" ]; then
    grep -q -- "$3" "$tmp/err" && ok "$1: says '$3'" || bad "$1: stderr: $(head -c 300 "$tmp/err")"
  fi
}

expect "root-owned 0644" 0 "" "$tmp/pack/rules.lua"
expect "root-owned 0644 with plugin" 0 "" "$tmp/pack/uses.lua"
chmod 0646 "$tmp/pack/rules.lua"
expect "world-writable" 2 "writable by others" "$tmp/pack/rules.lua"
chmod 0664 "$tmp/pack/rules.lua"
expect "group-writable" 2 "writable by its group" "$tmp/pack/rules.lua"
chmod 0644 "$tmp/pack/rules.lua"
chown 65534 "$tmp/pack/rules.lua"
expect "owned by nobody" 2 "belongs to uid 65534" "$tmp/pack/rules.lua"
chown 0 "$tmp/pack/rules.lua"
chmod 0666 "$tmp/pack/plugins/h.lua"
expect "world-writable plugin" 2 "plugins/h.lua refused" "$tmp/pack/uses.lua"
chmod 0644 "$tmp/pack/plugins/h.lua"
# run refuses too (the same loader), before reading any evidence
chmod 0666 "$tmp/pack/rules.lua"
"$SOPCTL" run "$tmp/pack/rules.lua" --evidence /dev/null >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 2 ] && grep -q refused "$tmp/err" && ok "run: world-writable refused, exit 2" ||
  bad "run: exit $rc: $(head -c 300 "$tmp/err")"
# Unprivileged: the user's own group-writable file is loaded.
if command -v setpriv >/dev/null; then
  chown 65534 "$tmp/pack/rules.lua"
  setpriv --reuid=65534 --regid=65534 --clear-groups "$SOPCTL" check "$tmp/pack/rules.lua" \
    >/dev/null 2>"$tmp/err"; rc=$?
  [ "$rc" = 0 ] && ok "unprivileged: own 0666 file loads" || bad "unprivileged: exit $rc: $(head -c 300 "$tmp/err")"
fi
finish
