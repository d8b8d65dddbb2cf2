#!/usr/bin/env bash
# test_rules_trust.sh — as root, sopctl refuses a rule file or a plugin it requires that
# another user could have written (owned by another uid, or writable by group or others):
# exit 2 and the reason on stderr; a root-owned 0644 pack still loads. As an unprivileged
# user such files are that user's own business and load. The directories from the rules
# file's directory down to a plugin are trusted as the file is, and a link there is refused
# (as root or not). Needs SOPCTL and SOP_SRC (from ctest); root; setpriv for another user.
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
chmod 0644 "$tmp/pack/rules.lua"

# The plugins directory is trusted as the file is (issue 40): root's rules file in a sticky
# world-writable directory (as in /tmp), where another user made plugins/ or planted a link.
# Each case is refused naming the path, exit 2, before the plugin is read: never fewer rules,
# never a word of the linked file. nobody (65534) plays the other user.
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
leaks() { grep -q TOKEN "$tmp/out" "$tmp/err"; } # the secret's text in stdout or stderr
pub="$tmp/pub"                                   # sticky, world-writable: like /tmp
mkdir -m 1777 "$pub"
cp "$tmp/pack/uses.lua" "$pub/rules.lua"
chmod 0644 "$pub/rules.lua"
# root's secret: not Lua, and Lua's syntax error quotes its first word ("near 'TOKEN'")
printf 'api_key TOKEN-SECRET-1234\n' >"$tmp/secret"
: >"$tmp/empty"
chmod 0600 "$tmp/secret"
chmod 0644 "$tmp/empty"
# The control: the leak check can fail. Read as a plugin, the secret's text is in the error.
mkdir -m 0755 "$tmp/ctl" "$tmp/ctl/plugins"
cp "$tmp/pack/uses.lua" "$tmp/ctl/rules.lua"
cp "$tmp/secret" "$tmp/ctl/plugins/h.lua"
expect "control: a root-owned plugin holding the secret" 2 "syntax error" "$tmp/ctl/rules.lua"
leaks && ok "control: a syntax error quotes the file's text" || bad "control: $(cat "$tmp/err")"
if command -v setpriv >/dev/null; then
  nobody mkdir -m 0755 "$pub/plugins"
  nobody cp "$tmp/pack/plugins/h.lua" "$pub/plugins/h.lua"
  expect "plugins/ made by another user" 2 \
    "$pub/plugins refused: running as root, and the directory belongs to uid 65534" "$pub/rules.lua"
  nobody rm "$pub/plugins/h.lua"
  nobody ln -s "$tmp/secret" "$pub/plugins/h.lua"
  expect "their link to root's secret" 2 "$pub/plugins refused" "$pub/rules.lua"
  leaks && bad "their link to root's secret: its text shows: $(cat "$tmp/err")" ||
    ok "their link to root's secret: its text is not shown"
  nobody rm -rf "$pub/plugins"
else
  echo "note: no setpriv: another user's plugins/ not tried"
fi
# A link in root's own plugins/ (planted earlier, or while the directory was open) is refused
# all the same: to the secret, to a good plugin; and a plugins/ that is itself a link.
mkdir -m 0755 "$pub/plugins"
ln -s "$tmp/secret" "$pub/plugins/h.lua"
expect "link to a secret" 2 "$pub/plugins/h.lua refused: a symbolic link" "$pub/rules.lua"
leaks && bad "link to a secret: its text shows: $(cat "$tmp/err")" ||
  ok "link to a secret: its text is not shown"
ln -sfn "$tmp/pack/plugins/h.lua" "$pub/plugins/h.lua"
expect "link to a root-owned plugin" 2 "$pub/plugins/h.lua refused: a symbolic link" "$pub/rules.lua"
rm -rf "$pub/plugins"
ln -s "$tmp/pack/plugins" "$pub/plugins"
expect "plugins/ a link to a good one" 2 "$pub/plugins refused: a symbolic link" "$pub/rules.lua"
rm "$pub/plugins"
mkdir -m 0775 "$pub/plugins"
expect "group-writable plugins/" 2 \
  "$pub/plugins refused: running as root, and the directory is writable by its group" "$pub/rules.lua"
mkfifo -m 0644 "$pub/plugins/h.lua"
chmod 0755 "$pub/plugins"
expect "a FIFO for a plugin" 2 "$pub/plugins/h.lua is not a regular file" "$pub/rules.lua"
rm "$pub/plugins/h.lua"
# A plugin in a subdirectory: every directory on the way is checked.
sed 's/plugins\.h"/plugins.sub.h"/' "$tmp/pack/uses.lua" >"$pub/sub.lua"
mkdir -m 0757 "$pub/plugins/sub"
cp "$tmp/pack/plugins/h.lua" "$pub/plugins/sub/h.lua"
expect "world-writable plugins/sub/" 2 \
  "$pub/plugins/sub refused: running as root, and the directory is writable by others" "$pub/sub.lua"
chmod 0755 "$pub/plugins/sub"
expect "trusted plugins/sub/h.lua" 0 "" "$pub/sub.lua"
# Root's own 0755 plugins/ with a plain file: the override next to the rules file wins, in the
# sticky directory too (its rule is the one listed).
printf 'rule { id = "t.override", section = "1", severity = "info",\n  check = function(ev, th) return clear("x") end }\nreturn { word = "x" }\n' \
  >"$pub/plugins/h.lua"
chmod 0644 "$pub/plugins/h.lua"
expect "root's plugins/ beside the rules file" 0 "" "$pub/rules.lua"
grep -qx t.override "$tmp/out" && ok "the override is the plugin loaded" ||
  bad "the override is not loaded: $(head -c 300 "$tmp/out")"
rm -rf "$pub/plugins" "$pub/sub.lua"

# The shipped pack in the sticky directory: with no plugins/ beside it the built-in plugins
# load (as before); a link planted for one of them (to an empty file: the pack would load
# without that plugin's rules) is refused, not a pack with fewer rules.
SRC=${SOP_SRC:-$(dirname "$0")/../..}
cp "$SRC/rules.lua" "$pub/rules.lua"
chmod 0644 "$pub/rules.lua"
"$SOPCTL" check default >"$tmp/builtin" 2>/dev/null
expect "the shipped pack, no plugins/" 0 "" "$pub/rules.lua"
grep -v 'rules OK' "$tmp/out" >"$tmp/ids"
grep -v 'rules OK' "$tmp/builtin" >"$tmp/builtin_ids"
[ -s "$tmp/ids" ] && cmp -s "$tmp/ids" "$tmp/builtin_ids" &&
  ok "the shipped pack, no plugins/: the built-in rules" ||
  bad "the shipped pack, no plugins/: $(wc -l <"$tmp/ids") rules, default has $(wc -l <"$tmp/builtin_ids")"
mkdir -m 0755 "$pub/plugins"
ln -s "$tmp/empty" "$pub/plugins/memory.lua"
expect "the shipped pack, plugins/memory.lua a link to an empty file" 2 \
  "$pub/plugins/memory.lua refused: a symbolic link" "$pub/rules.lua"
if command -v setpriv >/dev/null; then
  rm -rf "$pub/plugins"
  nobody mkdir -m 0755 "$pub/plugins"
  nobody ln -s "$tmp/empty" "$pub/plugins/memory.lua"
  expect "the shipped pack, another user's plugins/" 2 "$pub/plugins refused" "$pub/rules.lua"
fi

# Unprivileged: the user's own group-writable file is loaded.
if command -v setpriv >/dev/null; then
  chown 65534 "$tmp/pack/rules.lua"
  setpriv --reuid=65534 --regid=65534 --clear-groups "$SOPCTL" check "$tmp/pack/rules.lua" \
    >/dev/null 2>"$tmp/err"; rc=$?
  [ "$rc" = 0 ] && ok "unprivileged: own 0666 file loads" || bad "unprivileged: exit $rc: $(head -c 300 "$tmp/err")"
fi
finish
