#!/bin/sh
# bench_sampler_partial.sh — the sampler's partial rate (samples_partial / thread_samples) on the
# recursive target of bench_verified_walk.py, per interpreter: `sopctl record` for 3 s at 100 Hz.
# Usage: sh bench/bench_sampler_partial.sh [DEPTH] [SOPCTL]
DEPTH=${1:-20}
SOPCTL=${2:-$(dirname "$0")/../build/sopctl}
TARGET=$(dirname "$0")/../tests/e2e/targets/peer_recurse.py
for py in /root/.pyenv/versions/3.*/bin/python3 /usr/bin/python3; do
    case "$py" in */3.[0-7].*) continue ;; esac
    "$py" -u "$TARGET" "$DEPTH" > /tmp/sop-bench-rec.$$ &
    pid=$!
    while ! grep -q ready /tmp/sop-bench-rec.$$ 2>/dev/null; do sleep 0.05; done
    printf '%s: ' "$py"
    "$SOPCTL" record --pid "$pid" --duration 3 -o /dev/null 2>&1 | tail -n 1
    kill "$pid"
    wait "$pid" 2>/dev/null
    rm -f /tmp/sop-bench-rec.$$
done
