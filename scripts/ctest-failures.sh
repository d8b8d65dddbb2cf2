#!/usr/bin/env bash
# scripts/ctest-failures.sh — run in a build tree after ctest failed: repeats, as the last lines
# of the log, each failing test's own failure lines ("FAIL ..." of tests/e2e/sopt.py, "FAILED ..."
# of the scenario matrix, ctest's "***Failed"), so that a log cut to its head and tail still
# names what failed. Prints at most 60 lines; never fails itself.
log=Testing/Temporary/LastTest.log
[ -r "$log" ] || { echo "ctest-failures: no $log here"; exit 0; }
echo "---- what failed (from $log) ----"
grep -aE '^(FAIL |FAILED |miss )|\*\*\*(Failed|Timeout|Exception)|^[0-9]+/[0-9]+ Test +#[0-9]+: .*(Failed|Timeout)' "$log" \
    | cut -c1-400 | tail -n 60
exit 0
