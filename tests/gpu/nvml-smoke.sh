#!/usr/bin/env bash
# nvml-smoke.sh — on a real NVIDIA GPU host: ev.gpu against real NVML. Starts two torch CUDA
# processes (a busy matmul loop, and one that touched CUDA and then sleeps), runs
# `sopctl evidence --pid P` on each and prints the `gpu` group (and any gpu missing entry)
# beside nvidia-smi's view; then the cost: sopctl's collection time with and without NVML and
# the cost of one window poll (nvml_tick_bench). Results also go to $OUT/ when set.
# Env: SOPCTL (required), PYTHON (default $SOP_TEST_PYTHON, else python3: one with torch CUDA), NVML_BENCH (default: nvml_tick_bench
# next to $SOPCTL or in its build tree's tests/), DURATION (default 3).
# Exit: 0 all checks held, 1 a check failed, 77 no GPU/torch CUDA here (skipped).
set -u
SOPCTL=${SOPCTL:?set SOPCTL to the sopctl to test}
PY=${PYTHON:-${SOP_TEST_PYTHON:-python3}}
DUR=${DURATION:-3}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
d=$(dirname "$SOPCTL")
BENCH=${NVML_BENCH:-}
[ -z "$BENCH" ] && for b in "$d/nvml_tick_bench" "$d/tests/nvml_tick_bench"; do [ -x "$b" ] && BENCH=$b && break; done
fail=0
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
check() { if eval "$2"; then say "ok   $1"; else say "FAIL $1"; fail=1; fi; }
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT

if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  say "SKIP: no torch with CUDA, or no GPU visible"
  exit 77
fi
{ nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total --format=csv 2>&1
  "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'; } | tee "$OUT/host.txt"

# busy: matmuls back to back, synchronised now and then (the host waits on the GPU)
"$PY" - >"$OUT/busy.log" 2>&1 <<'EOF' &
import time, torch
x = torch.randn(8192, 8192, device="cuda")
print("ready", flush=True)
t = time.time()
while time.time() - t < 120:
    for _ in range(8):
        y = x @ x
    torch.cuda.synchronize()
EOF
pids+=($!)
BUSY=$!
# idle: CUDA initialised, memory held, no kernels
"$PY" - >"$OUT/idle.log" 2>&1 <<'EOF' &
import time, torch
x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")  # 1 GiB held
print("ready", flush=True)
time.sleep(120)
EOF
pids+=($!)
IDLE=$!
for _ in $(seq 600); do
  grep -q ready "$OUT/busy.log" && grep -q ready "$OUT/idle.log" && break
  sleep 0.1
done
sleep 2
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >"$OUT/nvidia-smi-apps.txt" 2>&1
nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv >"$OUT/nvidia-smi-util.txt" 2>&1
cat "$OUT/nvidia-smi-apps.txt" "$OUT/nvidia-smi-util.txt"

"$SOPCTL" evidence --pid "$BUSY" --duration "$DUR" >"$OUT/busy.json" 2>"$OUT/busy.err"
# the idle one while the busy one runs on the same GPU: the device is busy, its process is not
"$SOPCTL" evidence --pid "$IDLE" --duration "$DUR" >"$OUT/shared.json" 2>"$OUT/shared.err"
# cost: collection time (no window) with NVML and without it (a library that is not there)
for i in 1 2 3; do
  "$SOPCTL" evidence --pid "$BUSY" --duration 0 | jq .collect_ms >>"$OUT/collect_ms.nvml"
  SOP_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$SOPCTL" evidence --pid "$BUSY" --duration 0 \
    | jq .collect_ms >>"$OUT/collect_ms.without"
done
"$SOPCTL" record --pid "$BUSY" --duration 2 --timeline -o "$OUT/busy-timeline.svg" 2>&1 | tail -1
kill "$BUSY" 2>/dev/null
wait "$BUSY" 2>/dev/null
sleep 3 # NVML's utilisation is an average over its last period
"$SOPCTL" evidence --pid "$IDLE" --duration "$DUR" >"$OUT/idle.json" 2>"$OUT/idle.err"
for w in busy shared idle; do
  echo "== $w: ev.gpu"
  jq '{gpu, gpu_missing: [.missing[] | select(.probe == "gpu")], collect_ms}' "$OUT/$w.json" | tee "$OUT/$w.gpu.json"
done
j() { jq -r "$2" "$OUT/$1.json" 2>/dev/null; }
check "busy: ev.gpu present, source nvml" '[ "$(j busy .gpu.source)" = nvml ]'
check "busy: its process listed with its memory" \
  '[ "$(j busy "[.gpu.procs[] | select(.pid == $BUSY and .mem_kb > 0)] | length")" -ge 1 ]'
check "busy: busy_pct >= 80 ($(j busy .gpu.busy_pct))" \
  '[ "$(j busy "(.gpu.busy_pct // 0) >= 80")" = true ]'
check "busy: device used_by_tree, util_samples >= 2" \
  '[ "$(j busy "[.gpu.devices[] | select(.used_by_tree and .util_samples >= 2)] | length")" -ge 1 ]'
check "shared GPU: the idle process's busy_pct is its own share ($(j shared .gpu.busy_pct), source $(j shared .gpu.busy_source)), not the device's" \
  '[ "$(j shared "(.gpu.busy_pct // 100) <= 20 and .gpu.busy_source == \"process\"")" = true ]'
say "shared GPU: the idle process's own SM share $(j shared '[.gpu.procs[] | select(.pid == '"$IDLE"') | .util_sm_pct][0]') (device $(j shared .gpu.busy_pct)%)"
check "record --timeline of the busy one: a GPU lane" 'grep -q "class=\"gpu-lane\"" "$OUT/busy-timeline.svg"'
check "idle: busy_pct <= 20 ($(j idle .gpu.busy_pct)), tree_mem_kb >= 1 GiB ($(j idle .gpu.tree_mem_kb))" \
  '[ "$(j idle "(.gpu.busy_pct // 100) <= 20 and (.gpu.tree_mem_kb // 0) >= 1048576")" = true ]'
check "idle: idle_frac >= 0.8 ($(j idle .gpu.idle_frac))" '[ "$(j idle "(.gpu.idle_frac // 0) >= 0.8")" = true ]'

say "collect_ms with NVML: $(tr '\n' ' ' <"$OUT/collect_ms.nvml")  without: $(tr '\n' ' ' <"$OUT/collect_ms.without")"
if [ -n "$BENCH" ]; then
  "$BENCH" 2000 "$IDLE" | tee "$OUT/tick_bench.json"
  check "one window poll < 1 ms ($(jq .poll_mean_us "$OUT/tick_bench.json") us mean)" \
    '[ "$(jq ".poll_mean_us < 1000" "$OUT/tick_bench.json")" = true ]'
else
  say "note: nvml_tick_bench not found (NVML_BENCH): poll cost not measured"
fi
say "results in $OUT"
exit $fail
