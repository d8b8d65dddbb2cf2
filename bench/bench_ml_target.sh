#!/usr/bin/env bash
# bench_ml_target.sh BASELINE_SOPCTL [SOPCTL] — one ML-shaped target (torch imported, 4 forked
# workers: bench/targets/torch_workers.py), `sopctl evidence` at --duration 0 and 1 with two
# builds, interleaved run by run, in one run: median CPU ms (task-clock) and page faults of
# each, and their ratio. What a job with torch costs: its maps (3 ms a read here) and
# smaps_rollup (2-7 ms a process). Needs root, perf and a python3 that imports torch (Debian:
# python3-torch); says so and exits 0 without one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
base=$(realpath "${1:?usage: bench_ml_target.sh BASELINE_SOPCTL [SOPCTL]}")
cur=$(realpath "${2:-$here/../build/sopctl}")
runs=${RUNS:-9}
py=/usr/bin/python3
if ! "$py" -c 'import torch' 2>/dev/null; then
  echo "bench_ml_target: $py cannot import torch; nothing measured"
  exit 0
fi
fifo=$(mktemp -u); mkfifo "$fifo"
"$py" "$here/targets/torch_workers.py" 4 >"$fifo" &
target=$!
read -r _ _ <"$fifo"; rm -f "$fifo"
trap 'kill $target 2>/dev/null; wait $target 2>/dev/null || true' EXIT
echo "target pid $target: torch, $(cat /proc/$target/task/*/children | wc -w) workers, $(wc -l </proc/$target/maps) mappings"
out=$(mktemp)
for d in 0 1; do
  : >"$out"
  for _ in $(seq "$runs"); do
    for side in base cur; do
      exe=${!side}
      perf stat -x, -e task-clock,page-faults -o "$out.one" "$exe" evidence --pid "$target" \
        --duration "$d" >/dev/null 2>&1
      echo "$side $(grep task-clock "$out.one" | cut -d, -f1) $(grep page-faults "$out.one" | cut -d, -f1)" >>"$out"
    done
  done
  python3 - "$out" "$d" <<'PY'
import statistics, sys
v = {"base": ([], []), "cur": ([], [])}
for line in open(sys.argv[1]):
    side, ms, faults = line.split()
    v[side][0].append(float(ms)); v[side][1].append(float(faults))
b, c = (statistics.median(v[k][0]) for k in ("base", "cur"))
fb, fc = (statistics.median(v[k][1]) for k in ("base", "cur"))
print("evidence --duration %s: CPU %.1f -> %.1f ms (%.2fx), page faults %d -> %d (%.2fx), n=%d"
      % (sys.argv[2], b, c, c / b, fb, fc, fc / fb, len(v["cur"][0])))
PY
done
rm -f "$out" "$out.one"
