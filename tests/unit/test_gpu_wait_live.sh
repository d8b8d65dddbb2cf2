#!/usr/bin/env bash
# test_gpu_wait_live.sh — the GPU-wait thread state on a real process, no GPU needed: a Python
# program whose main thread runs native code without the GIL (numpy's matmul, one BLAS thread)
# at a line that ends in `.item()`, with a file named /dev/nvidia0 open (a private mount
# namespace with its own /dev, as in test_gpu_nvml.sh) and the fake NVML scripting the device's
# busy share. Checks: the thread's window.gpu_wait_frac and gpu_sync_site name that line; with
# the GPU busy the §9 verdict is GPU-bound and cpu.pool_undersized does not fire; with the GPU
# idle gpu.sync_per_step names the line; the same program without the device file has none of
# the GPU-wait keys (a CPU-only process pays nothing and reads as native compute).
# Needs SOPCTL, SOP_FAKE_NVML_LIB, jq, numpy; skipped where `unshare -m` is not permitted.
. "$(dirname "$0")/lib.sh"
SOPCTL=${SOPCTL:?set SOPCTL}
FAKE=${SOP_FAKE_NVML_LIB:?set SOP_FAKE_NVML_LIB}
PY=/usr/bin/python3
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
if ! unshare -m true 2>/dev/null || ! $PY -c 'import numpy' 2>/dev/null; then
  ok "SKIP: unshare -m not permitted or no numpy here"
  finish
  exit
fi
cat >"$tmp/spin.py" <<'PYEOF'
import os, sys, time
import numpy as np
keep = open("/dev/nvidia0") if len(sys.argv) > 1 else None
a = np.random.rand(500, 500)
print("ready", flush=True)
end = time.time() + 60
while time.time() < end:
    v = (a @ a).sum().item()  # native, without the GIL, at a line that reads a value
PYEOF
line=$(grep -n 'sum().item()' "$tmp/spin.py" | cut -d: -f1)
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
wait_ready() { for _ in $(seq 200); do grep -q ready "$1" 2>/dev/null && return 0; sleep 0.05; done; return 1; }

# the program with a GPU device file open
unshare -m --propagation private sh -c "mount -t tmpfs none /dev && : > /dev/nvidia0 &&
  exec $PY -u $tmp/spin.py gpu" </dev/null >"$tmp/gpu.out" 2>&1 &
G=$!
pids+=($G)
# the same program, CPU only
$PY -u "$tmp/spin.py" </dev/null >"$tmp/cpu.out" 2>&1 &
C=$!
pids+=($C)
wait_ready "$tmp/gpu.out" && wait_ready "$tmp/cpu.out" || bad "targets not ready: $(cat "$tmp/gpu.out" "$tmp/cpu.out")"

script() { # script UTIL: the fake NVML's device 0, SM utilisation UTIL, the target on it
  printf 'driver 580.159.04\ndevice 0 name=H200 uuid=GPU-aaaa minor=0 mem_total_mib=1000 mem_used_mib=100\nutil 0 %s\nproc 0 %s 100\n' "$1" "$G" >"$tmp/s$1"
}
run() { # run UTIL ARGS...: sopctl with the fake NVML scripted at UTIL
  local u=$1
  shift
  script "$u"
  SOP_FAKE_NVML="$tmp/s$u" SOP_NVML_LIBRARY=$FAKE "$SOPCTL" "$@" 2>"$tmp/err"
}

run 97 evidence --pid "$G" --duration 2 >"$tmp/e.json"
w() { jq -c ".python.threads[] | select(.tid == $G) | .window.$1" "$tmp/e.json"; }
gw=$(w gpu_wait_frac)
awk -v f="${gw:-0}" 'BEGIN { exit !(f + 0 >= 0.5) }' && ok "GPU-using process: gpu_wait_frac $gw at the .item() line" \
  || bad "gpu_wait_frac '$gw' (runnable_nogil $(w runnable_nogil_frac)); $(head -c 300 "$tmp/err")"
case $(w gpu_sync_site) in
  *"spin.py:$line)"*) ok "gpu_sync_site names spin.py:$line ($(w gpu_sync_site_frac))" ;;
  *) bad "gpu_sync_site $(w gpu_sync_site)" ;;
esac

run 97 run --pid "$G" --duration 2 --format json >"$tmp/r.json"
v=$(jq -r '.findings[] | select(.id == "summary.verdict") | .symptom' "$tmp/r.json")
case $v in *GPU-bound*) ok "GPU 97% busy: $v" ;; *) bad "verdict '$v'; $(head -c 300 "$tmp/err")" ;; esac
jq -e '[.findings[] | select(.id == "cpu.pool_undersized")] | length == 0' "$tmp/r.json" >/dev/null \
  && ok "no torch/BLAS thread advice for a thread that waits on the GPU" || bad "cpu.pool_undersized fired"

run 2 run --pid "$G" --duration 2 --format json >"$tmp/r2.json"
s=$(jq -r '.findings[] | select(.id == "gpu.sync_per_step") | .symptom' "$tmp/r2.json")
case $s in *"spin.py:$line"*) ok "GPU 2% busy: $s" ;; *) bad "gpu.sync_per_step '$s'" ;; esac

"$SOPCTL" evidence --pid "$C" --duration 1 >"$tmp/c.json" 2>"$tmp/err"
jq -e ".python.threads[] | select(.tid == $C) | .window | has(\"gpu_wait_frac\") or has(\"gpu_sync_site\") | not" \
  "$tmp/c.json" >/dev/null && ok "CPU-only process: no GPU-wait keys" || bad "CPU-only: $(jq -c '.python.threads[0].window | {gpu_wait_frac, gpu_sync_site}' "$tmp/c.json")"
n=$(jq ".python.threads[] | select(.tid == $C) | .window.runnable_nogil_frac" "$tmp/c.json")
awk -v f="${n:-0}" 'BEGIN { exit !(f + 0 >= 0.5) }' && ok "CPU-only process: native compute ($n without the GIL)" \
  || bad "CPU-only runnable_nogil_frac '$n'"
finish
