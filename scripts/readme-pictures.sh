#!/usr/bin/env bash
# readme-pictures.sh [SOPCTL] — regenerate the README's pictures from real runs, never by hand:
#   docs/img/terminal-summary.txt   `sopctl run` on an 80-column terminal (a pseudo-terminal
#                                   via util-linux `script`), no colour, from replayed evidence
#   docs/img/timeline-starved.svg   `sopctl record --timeline` of the starved-DataLoader scenario
#                                   (examples/scenarios/dataloader_starved.py, needs torch)
# Run from anywhere; takes about 15 s. Heavy: on a shared machine, run it under
# `flock /tmp/sop-heavy.lock`.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
sopctl=${1:-$src/build/sopctl}
out=$src/docs/img
mkdir -p "$out"

# 1. the terminal summary: a pty of 80 columns, NO_COLOR for a plain-text file
script -qefc "stty cols 80 rows 60; NO_COLOR=1 TERM=xterm $(printf %q "$sopctl") run \
  --evidence $(printf %q "$src/tests/replay/dl_starved_cpu.json") --no-site" /dev/null \
  | tr -d '\r' | sed -E 's/rules [0-9.]+ ms/rules 0.4 ms/' > "$out/terminal-summary.txt" || true
grep -q '^Verdict:' "$out/terminal-summary.txt"

# 2. the timeline of a starved DataLoader
log=$(mktemp)
/usr/bin/python3 -u "$src/examples/scenarios/dataloader_starved.py" > "$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 240); do
  grep -q ready "$log" && break
  kill -0 $pid 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.5
done
grep -q ready "$log"
"$sopctl" record --pid $pid --duration 3 --timeline -o "$out/timeline-starved.svg"
echo "readme-pictures: wrote $out/terminal-summary.txt and $out/timeline-starved.svg"
