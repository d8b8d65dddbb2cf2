#!/usr/bin/env bash
# bench_snapshot.sh [SOPCTL] — issue 2's performance figures, all measured in one run on one
# target (a Python process with 64 threads and 8 forked children):
#   1. wall time of one snapshot (`sopctl evidence --duration 0`), median of N runs, and the
#      collector's own time (collect_ms from the evidence);
#   2. sopctl's peak RSS (GNU time's maximum resident set size);
#   3. time to a report: `sopctl run` (default 1 s window, and --duration 0) against the
#      playbook's cheat-sheet commands run by a shell script (bench/cheatsheet.sh), as ratios.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sopctl=$(realpath "${1:-$here/../build/sopctl}")
runs=${RUNS:-30}
command -v iostat >/dev/null || { echo "installing sysstat for iostat (baseline only)"; \
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends sysstat >/dev/null; }

fifo=$(mktemp -u); mkfifo "$fifo"
python3 "$here/targets/threads_children.py" --threads 64 --children 8 --seconds 300 >"$fifo" &
target=$!
read -r _ _ <"$fifo"; rm -f "$fifo"
trap 'kill $target 2>/dev/null; wait $target 2>/dev/null || true' EXIT
nthreads=$(ls /proc/$target/task | wc -l)
nchildren=$(cat /proc/$target/task/*/children | wc -w)
echo "target pid $target: $nthreads threads, $nchildren children"

ms() { python3 -c 'import sys,statistics; v=sorted(float(x) for x in sys.stdin.read().split()); print("%.2f %.2f %.2f" % (statistics.median(v), v[0], v[int(len(v)*0.9)]))'; }
now() { date +%s.%N; }

walls=(); collects=()
for _ in $(seq "$runs"); do
  t0=$(now); "$sopctl" evidence --pid "$target" --duration 0 -o /tmp/sop-bench-ev.json; t1=$(now)
  walls+=("$(python3 -c "print(($t1-$t0)*1000)")")
  collects+=("$(python3 -c "import json;print(json.load(open('/tmp/sop-bench-ev.json'))['collect_ms'])")")
done
starts=()
for _ in $(seq "$runs"); do
  t0=$(now); "$sopctl" version >/dev/null; t1=$(now)
  starts+=("$(python3 -c "print(($t1-$t0)*1000)")")
done
read -r smed smin sp90 <<<"$(printf '%s\n' "${starts[@]}" | ms)"
read -r wmed wmin wp90 <<<"$(printf '%s\n' "${walls[@]}" | ms)"
read -r cmed cmin cp90 <<<"$(printf '%s\n' "${collects[@]}" | ms)"
echo
echo "1. snapshot (evidence --duration 0), $runs runs"
echo "   whole command wall: median $wmed ms (min $wmin, p90 $wp90)   [goal: < 10 ms]"
echo "   collector alone:    median $cmed ms (min $cmin, p90 $cp90)"
echo "   baseline, process start and exit (sopctl version): median $smed ms (min $smin)"
echo "   without python stacks: $( { t0=$(now); "$sopctl" evidence --pid "$target" --duration 0 --no-python -o /dev/null; t1=$(now); python3 -c "print('%.2f ms' % (($t1-$t0)*1000))"; } )"

rss=$(/usr/bin/time -f %M "$sopctl" run --pid "$target" --duration 0 --format json 2>&1 >/dev/null | tail -1)
rss1=$(/usr/bin/time -f %M "$sopctl" run --pid "$target" --duration 1 --format json 2>&1 >/dev/null | tail -1)
echo
echo "2. sopctl peak RSS: run --duration 0: ${rss} kB, run --duration 1: ${rss1} kB   [goal: < 10240 kB]"

t0=$(now); bash "$here/cheatsheet.sh" "$target" >/dev/null 2>&1 || true; t1=$(now)
cheat=$(python3 -c "print(($t1-$t0)*1000)")
t0=$(now); "$sopctl" run --pid "$target" >/dev/null || true; t1=$(now)
run1=$(python3 -c "print(($t1-$t0)*1000)")
t0=$(now); "$sopctl" run --pid "$target" --duration 0 >/dev/null || true; t1=$(now)
run0=$(python3 -c "print(($t1-$t0)*1000)")
echo
echo "3. time to a report"
printf '   cheat-sheet script:           %9.1f ms  (1.00)\n' "$cheat"
printf '   sopctl run (1 s window):      %9.1f ms  (%.3f of the cheat sheet, %.1fx faster)\n' "$run1" \
  "$(python3 -c "print($run1/$cheat)")" "$(python3 -c "print($cheat/$run1)")"
printf '   sopctl run --duration 0:      %9.1f ms  (%.4f of the cheat sheet, %.0fx faster)\n' "$run0" \
  "$(python3 -c "print($run0/$cheat)")" "$(python3 -c "print($cheat/$run0)")"
