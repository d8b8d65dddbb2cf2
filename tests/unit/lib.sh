# lib.sh — what the shell unit tests share (sourced, not run): `set -u`, the ok/bad counters,
# a scratch directory $tmp removed on exit, and `finish`, the summary line and exit status.
# A test that needs more cleanup sets its own EXIT trap and removes $tmp there.
set -u
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# finish: print "N passed, M failed" and return 0 only when nothing failed (the script's last
# command, so its status is the test's).
finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" = 0 ]
}
