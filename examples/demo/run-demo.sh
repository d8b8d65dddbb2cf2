#!/usr/bin/env bash
# run-demo.sh — README command (a): start the bundled misbehaving workload (forked_workers.py),
# wait until it is ready, run `sopctl run --pid PID` on it, then end it by PID.
# Usage: run-demo.sh [SOPCTL] [sopctl run options...]   (SOPCTL: path of the binary, else
# $SOPCTL, else build/sopctl). Needs python3. Exit 0 when sopctl ran and reported findings (its
# status 1, the point of the demo); 1 when it found nothing; sopctl's status 2/3 otherwise.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  SOPCTL=$1
  shift
fi
SOPCTL=${SOPCTL:-$here/../../build/sopctl}
PYTHON=${PYTHON:-python3}
[ -x "$SOPCTL" ] || { echo "run-demo.sh: no sopctl at $SOPCTL (build first)" >&2; exit 2; }

log=$(mktemp /tmp/sop-demo.XXXXXX)
# The thread-pool variables are left unset on purpose: that is one of the findings.
env -u OMP_NUM_THREADS -u MKL_NUM_THREADS -u OPENBLAS_NUM_THREADS \
  "$PYTHON" "$here/forked_workers.py" --mb 300 --workers 3 --threads 2 --seconds 120 >"$log" 2>&1 &
pid=$!
cleanup() {
  kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -f "$log"
}
trap cleanup EXIT

echo "demo: started forked_workers.py as pid $pid; waiting until its workers have read the table..." >&2
for _ in $(seq 1 600); do
  grep -q '^ready' "$log" && break
  if ! kill -0 "$pid" 2>/dev/null; then cat "$log" >&2; exit 3; fi
  sleep 0.1
done
grep -q '^ready' "$log" || { echo "demo: workload not ready after 60 s" >&2; cat "$log" >&2; exit 3; }
echo "demo: $(cat "$log")" >&2
echo "demo: sopctl run --pid $pid --duration 2 $*" >&2

"$SOPCTL" run --pid "$pid" --duration 2 "$@"
rc=$?
case $rc in
  1) echo "demo: sopctl exit status 1: findings of severity warn or high, as intended" >&2; exit 0 ;;
  0) echo "demo: sopctl found nothing: the workload did not misbehave as intended" >&2; exit 1 ;;
  *) echo "demo: sopctl exit status $rc" >&2; exit "$rc" ;;
esac
