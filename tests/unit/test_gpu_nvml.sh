#!/usr/bin/env bash
# test_gpu_nvml.sh — ev.gpu with the fake NVML (tests/fake_nvml/; no GPU needed): real target
# processes show a sign of GPU use (a library named libcuda.so.1 mapped — a copy of the fake —
# or a /dev/nvidiaN file open in a private mount namespace); the fake's script lists the
# target's real pid. Checks the keys and units, the window's mean/max/idle share against what
# the fake logged it returned, the v1 fallbacks, CUDA_VISIBLE_DEVICES, the NSpid mapping, the
# missing entries (no library, an NVML error), that a CPU-only target gets nothing at all, and
# the GPU lane of `record --timeline`.
# Needs SOPCTL, SOP_FAKE_NVML_LIB, SOP_FAKE_NVML_OLD_LIB, jq.
. "$(dirname "$0")/lib.sh"
SOPCTL=${SOPCTL:?set SOPCTL}
FAKE=${SOP_FAKE_NVML_LIB:?set SOP_FAKE_NVML_LIB}
FAKE_OLD=${SOP_FAKE_NVML_OLD_LIB:?set SOP_FAKE_NVML_OLD_LIB}
PY=/usr/bin/python3
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
cp "$FAKE" "$tmp/libcuda.so.1"

# A process that maps "libcuda.so.1" (the fake under that name) and sleeps; its pid in $P.
start_cuda() {
  env "$@" $PY -c "import ctypes,time; ctypes.CDLL('$tmp/libcuda.so.1'); time.sleep(60)" \
    </dev/null >/dev/null 2>&1 &
  P=$!
  pids+=($P)
  for _ in $(seq 200); do grep -q libcuda "/proc/$P/maps" 2>/dev/null && break; sleep 0.05; done
}
ev() { # ev SCRIPT ARGS... : evidence JSON on stdout
  local script=$1
  shift
  SOP_FAKE_NVML="$script" SOP_FAKE_NVML_LOG="$tmp/log" SOP_NVML_LIBRARY=${LIB:-$FAKE} \
    "$SOPCTL" evidence "$@" 2>"$tmp/err"
}

# --- 1. a CUDA process over a 1 s window: keys, units, the window's figures ---
start_cuda
cat >"$tmp/s1" <<EOF
driver 550.54.15
device 0 name=H200 uuid=GPU-aaaa-0000 minor=0 mem_total_mib=1000 mem_used_mib=600 sm_clock=1500 sm_clock_max=1980 temp=61 power_mw=350500 pcie_rx=1200 pcie_tx=3400 reasons=$((0x4 | 0x40 | 0x1))
device 1 name=H200 uuid=GPU-bbbb-1111 minor=1 mem_total_mib=1000 mem_used_mib=0
util 0 90 2 100 40 0 75 3 88 60 10 99 50
mem_util 0 30
util 1 0
proc 0 $P 500 85
proc 0 999999999 100
EOF
rm -f "$tmp/log"
ev "$tmp/s1" --pid "$P" --duration 1.2 >"$tmp/e1.json"
g() { jq -c "$1" "$tmp/e1.json"; }
[ "$(g '.gpu.source')" = '"nvml"' ] && ok "gpu.source nvml" || bad "gpu.source: $(g .gpu) $(cat "$tmp/err")"
[ "$(g '.gpu.driver_version')" = '"550.54.15"' ] && ok "driver_version" || bad "driver_version $(g .gpu.driver_version)"
[ "$(g '.gpu.library')" = "\"$FAKE\"" ] && ok "library: the one named by SOP_NVML_LIBRARY" || bad "library $(g .gpu.library)"
[ "$(g '[.gpu.devices[].index]')" = '[0]' ] && ok "devices: only the one the tree runs on" || bad "devices $(g '[.gpu.devices[].index]')"
[ "$(g '.gpu.devices[0] | [.used_by_tree, .uuid, .name]')" = '[true,"GPU-aaaa-0000","H200"]' ] \
  && ok "used_by_tree, uuid, name" || bad "device 0: $(g '.gpu.devices[0]')"
[ "$(g '.gpu.devices[0] | [.mem_total_kb, .mem_used_kb]')" = '[1024000,614400]' ] \
  && ok "memory in kB" || bad "memory $(g '.gpu.devices[0] | [.mem_total_kb, .mem_used_kb]')"
[ "$(g '.gpu.devices[0] | [.sm_clock_mhz, .sm_clock_max_mhz, .temperature_c, .power_w, .pcie_rx_kb_per_s]')" = '[1500,1980,61,350.5,null]' ] \
  && ok "clocks, temperature, power (W); no PCIe throughput (it blocks 20 ms a call)" || bad "figures $(g '.gpu.devices[0]')"
[ "$(g '.gpu.devices[0].throttle')" = '"sw_power_cap,hw_thermal"' ] \
  && ok "throttle reasons (idle not counted)" || bad "throttle $(g '.gpu.devices[0].throttle')"
# the window: what the fake returned for device 0, as it logged it
read -r n mean max idle <<<"$(awk '$2 == 0 { n++; s += $3; if ($3 > m) m = $3; if ($3 < 5) i++ }
  END { printf "%d %.4f %d %.4f\n", n, s / n, m, i / n }' "$tmp/log")"
got=$(g '.gpu.devices[0] | "\(.util_samples) \(.util_sm_pct) \(.util_sm_max_pct) \(.idle_frac)"' | tr -d '"')
read -r gn gmean gmax gidle <<<"$got"
[ "$n" -ge 2 ] && ok "$n utilisation readings in a 1.2 s window (every 250 ms and at its end)" || bad "readings: $n"
[ "$gn" = "$n" ] && awk -v a="$gmean" -v b="$mean" -v c="$gidle" -v d="$idle" 'BEGIN { exit !((a - b)^2 < 1e-6 && (c - d)^2 < 1e-6) }' \
  && [ "$gmax" = "$max" ] && ok "window mean $gmean, max $gmax, idle share $gidle = the fake's readings" \
  || bad "window: got '$got', the fake returned n=$n mean=$mean max=$max idle=$idle"
[ "$(g '.gpu.devices[0].util_mem_pct')" = 30 ] && ok "util_mem_pct" || bad "util_mem_pct $(g '.gpu.devices[0].util_mem_pct')"
[ "$(g '.gpu.procs')" = "[{\"pid\":$P,\"device\":0,\"mem_kb\":512000,\"util_sm_pct\":85}]" ] \
  && ok "procs: the target (not the other pid), memory, per-process SM share" || bad "procs $(g .gpu.procs)"
[ "$(g '[.gpu.tree_mem_kb, .gpu.busy_pct == .gpu.devices[0].util_sm_pct, .gpu.idle_frac == .gpu.devices[0].idle_frac]')" = '[512000,true,true]' ] \
  && ok "tree_mem_kb, busy_pct, idle_frac" || bad "tree figures $(g '[.gpu.tree_mem_kb, .gpu.busy_pct, .gpu.idle_frac]')"
[ "$(g '[.missing[] | select(.probe == "gpu")] | length')" = 0 ] && ok "no gpu missing entry" || bad "missing $(g .missing)"

# --- 2. --duration 0: one reading, the first of the sequence ---
rm -f "$tmp/log"
ev "$tmp/s1" --pid "$P" --duration 0 >"$tmp/e2.json"
[ "$(jq -c '.gpu.devices[0] | [.util_samples, .util_sm_pct, .idle_frac]' "$tmp/e2.json")" = '[1,90,0]' ] \
  && ok "--duration 0: one reading" || bad "--duration 0: $(jq -c .gpu.devices "$tmp/e2.json")"

# --- 3. an NVML with only the first, unversioned functions (v1 process records) ---
LIB=$FAKE_OLD ev "$tmp/s1" --pid "$P" --duration 0 >"$tmp/e3.json"
[ "$(jq -c '[.gpu.procs[] | [.pid, .mem_kb]]' "$tmp/e3.json")" = "[[$P,512000]]" ] \
  && ok "unversioned nvmlInit/GetCount/GetHandleByIndex, v1 process records" \
  || bad "old NVML: $(jq -c .gpu "$tmp/e3.json") $(cat "$tmp/err")"
[ "$(jq -c '.gpu.procs[0].util_sm_pct' "$tmp/e3.json")" = null ] \
  && ok "no per-process utilisation where NVML has none" || bad "old util $(jq -c .gpu.procs "$tmp/e3.json")"

# --- 4. CUDA_VISIBLE_DEVICES, and a process not on any GPU yet: the visible devices, unused ---
P1=$P
start_cuda CUDA_VISIBLE_DEVICES=1
P4=$P
P=$P1
ev "$tmp/s1" --pid "$P4" --duration 0 >"$tmp/e4.json"
[ "$(jq -c '[.gpu.cuda_visible_devices, [.gpu.devices[] | [.index, .used_by_tree]], .gpu.procs, .gpu.busy_pct, .gpu.tree_mem_kb]' "$tmp/e4.json")" = '["1",[[1,false]],[],null,null]' ] \
  && ok "CUDA_VISIBLE_DEVICES=1: device 1 listed, not used; no busy figure" \
  || bad "CUDA_VISIBLE_DEVICES: $(jq -c .gpu "$tmp/e4.json")"

# --- 4b. one GPU shared with another job: the device is busy (another process), ours idles ---
cat >"$tmp/s_shared" <<EOF
device 0 name=H200 uuid=GPU-aaaa-0000 minor=0 mem_total_mib=1000 mem_used_mib=900
util 0 100
proc 0 $P 300 0
proc 0 999999998 500 97
EOF
ev "$tmp/s_shared" --pid "$P" --duration 0.6 >"$tmp/e_sh.json"
[ "$(jq -c '[.gpu.busy_pct, .gpu.idle_frac, .gpu.busy_source, .gpu.devices[0].other_procs, .gpu.devices[0].util_sm_pct, .gpu.devices[0].tree_util_sm_pct, .gpu.devices[0].tree_idle_frac]' "$tmp/e_sh.json")" = '[0,1,"process",1,100,0,1]' ] \
  && ok "shared GPU, another job busy, ours idle: busy_pct 0 from the per-process samples, the device's 100% kept apart" \
  || bad "shared GPU: $(jq -c .gpu "$tmp/e_sh.json")"
# the same without per-process figures (the old NVML): the tree's share is unknown, not 100
LIB=$FAKE_OLD ev "$tmp/s_shared" --pid "$P" --duration 0.6 >"$tmp/e_sh2.json"
[ "$(jq -c '[.gpu.busy_pct, .gpu.idle_frac, .gpu.busy_source, .gpu.devices[0].other_procs]' "$tmp/e_sh2.json")" = '[null,null,null,1]' ] \
  && ok "shared GPU without per-process figures: no busy_pct (another job's load is not ours)" \
  || bad "shared GPU, old NVML: $(jq -c .gpu "$tmp/e_sh2.json")"
# another process listed but idle: the device's figures are ours
sed 's/^proc 0 999999998 500 97$/proc 0 999999998 500 0/; s/^proc 0 \([0-9]*\) 300 0$/proc 0 \1 300 90/' "$tmp/s_shared" >"$tmp/s_sh3"
ev "$tmp/s_sh3" --pid "$P" --duration 0.6 >"$tmp/e_sh3.json"
[ "$(jq -c '[.gpu.busy_pct, .gpu.busy_source, .gpu.devices[0].tree_util_sm_pct]' "$tmp/e_sh3.json")" = '[100,"device",null]' ] \
  && ok "shared GPU, the other process idle: the device's figures are the tree's" \
  || bad "shared GPU, other idle: $(jq -c .gpu "$tmp/e_sh3.json")"

# --- 4c. MIG: CUDA_VISIBLE_DEVICES names a MIG device (new form MIG-<uuid>, old form
# MIG-GPU-<uuid>/<gi>/<ci>): its parent GPU is the device, with the instance's UUID and memory,
# and no utilisation (the fake keeps answering the parent's, which is not the job's) ---
cat >"$tmp/s_mig" <<EOF
device 0 name=H100 uuid=GPU-aaaa-0000 minor=0 mem_total_mib=1000 mem_used_mib=100
device 1 name=H100 uuid=GPU-bbbb-1111 minor=1 mem_total_mib=1000 mem_used_mib=900
mig 1 uuid=MIG-1111-2222 gi=2 ci=0 mem_total_mib=200 mem_used_mib=150
mig 1 uuid=MIG-3333-4444 gi=3 ci=0 mem_total_mib=400 mem_used_mib=10
util 0 40
util 1 97
EOF
P1=$P
start_cuda CUDA_VISIBLE_DEVICES=MIG-3333-4444
PM=$P
P=$P1
migq='[[.gpu.devices[] | [.index, .mig_enabled, .mig_uuid, .mig_mem_used_kb, .mig_mem_total_kb, .util_sm_pct, .util_samples, .idle_frac]], .gpu.busy_pct, .gpu.idle_frac]'
ev "$tmp/s_mig" --pid "$PM" --duration 0.6 >"$tmp/e_mig.json"
[ "$(jq -c "$migq" "$tmp/e_mig.json")" = '[[[1,true,"MIG-3333-4444",10240,409600,null,null,null]],null,null]' ] \
  && ok "CUDA_VISIBLE_DEVICES=MIG-<uuid>: its parent GPU 1 with the instance's memory, no utilisation" \
  || bad "MIG-<uuid>: $(jq -c .gpu "$tmp/e_mig.json") $(cat "$tmp/err")"
r=$(jq -r '[.missing[] | select(.probe == "gpu") | .reason] | .[0] // ""' "$tmp/e_mig.json")
[[ $r == *"MIG"*"no utilisation per MIG instance"* ]] && ok "MIG: missing says why there is no busy share ($r)" \
  || bad "MIG missing entry: $(jq -c .missing "$tmp/e_mig.json")"
# the job runs on it (NVML lists it on the parent): used, and still no busy figure though the
# fake returned 97% for the whole GPU
{ cat "$tmp/s_mig"; echo "proc 1 $PM 120"; } >"$tmp/s_mig2"
rm -f "$tmp/log"
ev "$tmp/s_mig2" --pid "$PM" --duration 0.6 >"$tmp/e_mig2.json"
[ "$(jq -c '[[.gpu.devices[] | [.index, .used_by_tree, .util_sm_pct]], .gpu.busy_pct, .gpu.busy_source, .gpu.tree_mem_kb]' "$tmp/e_mig2.json")" = '[[[1,true,null]],null,null,122880]' ] \
  && grep -q '^util 1 97' "$tmp/log" \
  && ok "MIG job on the GPU: used_by_tree, no busy_pct (the whole GPU's 97% read but not taken for the job's)" \
  || bad "MIG used: $(jq -c .gpu "$tmp/e_mig2.json")"
# the old form: the instance by GPU instance / compute instance id
start_cuda CUDA_VISIBLE_DEVICES=MIG-GPU-bbbb-1111/2/0
PO=$P
P=$P1
ev "$tmp/s_mig" --pid "$PO" --duration 0 >"$tmp/e_mig3.json"
[ "$(jq -c "$migq" "$tmp/e_mig3.json")" = '[[[1,true,"MIG-1111-2222",153600,204800,null,null,null]],null,null]' ] \
  && ok "CUDA_VISIBLE_DEVICES=MIG-GPU-<uuid>/2/0: parent by UUID, the instance by its ids" \
  || bad "MIG-GPU-<uuid>/gi/ci: $(jq -c .gpu "$tmp/e_mig3.json")"
# a plain index on the same host still works: device 0, its utilisation
start_cuda CUDA_VISIBLE_DEVICES=0
PI0=$P
P=$P1
ev "$tmp/s_mig" --pid "$PI0" --duration 0 >"$tmp/e_mig4.json"
[ "$(jq -c '[.gpu.devices[] | [.index, .mig_enabled, .util_sm_pct]]' "$tmp/e_mig4.json")" = '[[0,null,40]]' ] \
  && [ "$(jq -c '[.missing[] | select(.probe == "gpu")]' "$tmp/e_mig4.json")" = '[]' ] \
  && ok "CUDA_VISIBLE_DEVICES=0 beside a MIG GPU: device 0 with its utilisation, no MIG note" \
  || bad "plain index: $(jq -c '[.gpu.devices, .missing]' "$tmp/e_mig4.json")"
# MIG mode on with CUDA_VISIBLE_DEVICES unset (the job found through NVML's list): no utilisation
printf 'device 0 name=A100 uuid=GPU-cccc minor=0 mem_total_mib=1000 mem_used_mib=500 mig=1\nutil 0 99\nproc 0 %s 300\n' "$P" >"$tmp/s_mig5"
ev "$tmp/s_mig5" --pid "$P" --duration 0.6 >"$tmp/e_mig5.json"
[ "$(jq -c '[[.gpu.devices[] | [.index, .used_by_tree, .mig_enabled, .mig_uuid, .util_sm_pct]], .gpu.busy_pct]' "$tmp/e_mig5.json")" = '[[[0,true,true,null,null]],null]' ] \
  && ok "a GPU in MIG mode (nvmlDeviceGetMigMode), no MIG entry: its utilisation not taken for the job's" \
  || bad "MIG mode: $(jq -c .gpu "$tmp/e_mig5.json")"
# an NVML without the MIG functions (a driver before MIG): as before (nothing visible), and said
LIB=$FAKE_OLD ev "$tmp/s_mig" --pid "$PM" --duration 0 >"$tmp/e_mig6.json"
r=$(jq -r '[.missing[] | select(.probe == "gpu") | .reason] | .[0] // ""' "$tmp/e_mig6.json")
[ "$(jq -c '.gpu.devices' "$tmp/e_mig6.json")" = '[]' ] && [[ $r == *"driver before MIG"* ]] \
  && ok "NVML without MIG functions: no device, and missing says so ($r)" \
  || bad "old NVML, MIG: $(jq -c '[.gpu.devices, .missing]' "$tmp/e_mig6.json")"
# a MIG UUID NVML does not know
start_cuda CUDA_VISIBLE_DEVICES=MIG-ffff-0000
PU=$P
P=$P1
ev "$tmp/s_mig" --pid "$PU" --duration 0 >"$tmp/e_mig7.json"
r=$(jq -r '[.missing[] | select(.probe == "gpu") | .reason] | .[0] // ""' "$tmp/e_mig7.json")
[ "$(jq -c '.gpu.devices' "$tmp/e_mig7.json")" = '[]' ] && [[ $r == *"MIG device NVML does not know"* ]] \
  && ok "an unknown MIG UUID: no device, said ($r)" || bad "unknown MIG: $(jq -c '[.gpu.devices, .missing]' "$tmp/e_mig7.json")"

# --- 5. a CPU-only target: NVML is not even loaded; nothing in the evidence ---
sleep 60 </dev/null >/dev/null 2>&1 &
pids+=($!)
rm -f "$tmp/log"
ev "$tmp/s1" --pid $! --duration 0.6 >"$tmp/e5.json"
[ "$(jq -c '[has("gpu"), [.missing[] | select(.probe == "gpu")]]' "$tmp/e5.json")" = '[false,[]]' ] \
  && ok "CPU-only target: no gpu key, no missing entry" || bad "CPU-only: $(jq -c '[.gpu, .missing]' "$tmp/e5.json")"
[ ! -s "$tmp/log" ] && ok "CPU-only target: NVML not called" || bad "NVML called for a CPU-only target"

# --- 6. signs of GPU use but no NVML / an NVML error: a missing entry, no gpu key ---
LIB=$tmp/nonexistent/libnvidia-ml.so.1 ev "$tmp/s1" --pid "$P" --duration 0 >"$tmp/e6.json"
r=$(jq -r '[.missing[] | select(.probe == "gpu") | .reason] | .[0] // ""' "$tmp/e6.json")
[ "$(jq 'has("gpu")' "$tmp/e6.json")" = false ] && [[ $r == *"NVML not loaded"* ]] \
  && ok "no NVML: missing entry ($r)" || bad "no NVML: $(jq -c '[.gpu, .missing]' "$tmp/e6.json")"
printf 'init_error 9\n' >"$tmp/s6"
ev "$tmp/s6" --pid "$P" --duration 0 >"$tmp/e7.json"
r=$(jq -r '[.missing[] | select(.probe == "gpu") | .reason] | .[0] // ""' "$tmp/e7.json")
[[ $r == *"Driver Not Loaded"* ]] && ok "NVML error: clear reason ($r)" || bad "NVML error: $(jq -c .missing "$tmp/e7.json")"

# --- 7. /dev/nvidia1 open (a private mount namespace with its own /dev): device by minor ---
if unshare -m true 2>/dev/null; then
  unshare -m --propagation private sh -c "mount -t tmpfs none /dev && : > /dev/nvidia1 &&
    exec $PY -c 'f = open(\"/dev/nvidia1\"); import time; time.sleep(60)'" </dev/null >/dev/null 2>&1 &
  pids+=($!)
  P7=$!
  for _ in $(seq 200); do ls -l /proc/$P7/fd 2>/dev/null | grep -q nvidia1 && break; sleep 0.05; done
  ev "$tmp/s1" --pid "$P7" --duration 0 >"$tmp/e8.json"
  [ "$(jq -c '[.gpu.devices[] | [.index, .used_by_tree]]' "$tmp/e8.json")" = '[[1,true]]' ] \
    && ok "/dev/nvidia1 open: device of minor 1 used" || bad "minor: $(jq -c '[.gpu, .missing]' "$tmp/e8.json")"
  # record --timeline: a GPU lane under the threads, one bar per reading
  SOP_FAKE_NVML="$tmp/s1" SOP_NVML_LIBRARY=$FAKE "$SOPCTL" record --pid "$P7" --duration 1 --timeline \
    -o "$tmp/t.svg" >/dev/null 2>"$tmp/err"
  lane=$(sed -n 's/.*<g class="gpu-lane" data-readings="\([0-9]*\)".*/\1/p' "$tmp/t.svg")
  bars=$(grep -c 'class="gpu"' "$tmp/t.svg")
  [ "${lane:-0}" -ge 2 ] && [ "$bars" = "$lane" ] && grep -q 'GPU [0-9]*% busy, 0.00-0.[0-9]* s' "$tmp/t.svg" \
    && ok "record --timeline: GPU lane of $lane readings from the window's start" \
    || bad "record --timeline GPU lane: readings=${lane:-none} bars=$bars $(cat "$tmp/err")"
  # the HTML report's timeline has the lane too
  SOP_FAKE_NVML="$tmp/s1" SOP_NVML_LIBRARY=$FAKE "$SOPCTL" run --pid "$P7" --duration 1 --format html \
    -o "$tmp/r.html" >/dev/null 2>"$tmp/err"
  grep -q '<g class="gpu-lane" data-readings="[1-9]' "$tmp/r.html" && ok "run --format html: GPU lane in the timeline" \
    || bad "run --format html: no GPU lane $(head -c 300 "$tmp/err")"
  $PY -c 'import time; time.sleep(60)' </dev/null >/dev/null 2>&1 &
  pids+=($!)
  sleep 0.3
  SOP_FAKE_NVML="$tmp/s1" SOP_NVML_LIBRARY=$FAKE "$SOPCTL" record --pid $! --duration 0.5 --timeline \
    -o "$tmp/t2.svg" >/dev/null 2>&1
  [ -s "$tmp/t2.svg" ] && ! grep -q gpu-lane "$tmp/t2.svg" && ok "record --timeline, CPU-only: no GPU lane" \
    || bad "record --timeline on a CPU-only target: $(grep -c gpu-lane "$tmp/t2.svg")"
  unshare -m --propagation private sh -c "mount -t tmpfs none /dev && mkdir /dev/dri &&
    : > /dev/dri/renderD128 &&
    exec $PY -c 'f = open(\"/dev/dri/renderD128\"); import time; time.sleep(60)'" </dev/null >/dev/null 2>&1 &
  pids+=($!)
  P9=$!
  for _ in $(seq 200); do ls -l /proc/$P9/fd 2>/dev/null | grep -q renderD && break; sleep 0.05; done
  rm -f "$tmp/log"
  ev "$tmp/s1" --pid "$P9" --duration 0 >"$tmp/e10.json"
  r=$(jq -r '[.missing[] | select(.probe == "gpu") | .reason] | .[0] // ""' "$tmp/e10.json")
  [ "$(jq 'has("gpu")' "$tmp/e10.json")" = false ] && [[ $r == *"NVML only"* ]] \
    && ok "a GPU of another vendor: missing entry ($r)" || bad "other vendor: $(jq -c .missing "$tmp/e10.json")"
else
  ok "SKIP /dev/nvidiaN test: unshare -m not permitted here"
fi

# --- 8. NSpid: a driver that names the process by its pid inside its own PID namespace ---
# The target runs in a new PID namespace with an inner pid no process of ours has (the
# namespace's ns_last_pid set first): NVML's inner pid maps to it. Then the same with an inner
# pid (1) that a host process has too: never taken for the tree's (that pid is init's).
start_ns() { # start_ns INNER_PID_OR_EMPTY: sets P8 (host pid) and inner
  local set=
  [ -n "$1" ] && set="echo $(($1 - 1)) > /proc/sys/kernel/ns_last_pid;"
  unshare -p -f sh -c "$set $PY -c \"import ctypes,time; ctypes.CDLL('$tmp/libcuda.so.1'); time.sleep(60)\" & wait" \
    </dev/null >/dev/null 2>&1 &
  pids+=($!)
  local u=$!
  P8=
  for _ in $(seq 200); do
    local sh1
    sh1=$(cat /proc/$u/task/*/children 2>/dev/null | tr -s ' ' '\n' | head -1)
    [ -n "$sh1" ] && P8=$(cat /proc/$sh1/task/*/children 2>/dev/null | tr -s ' ' '\n' | head -1)
    [ -n "$P8" ] && grep -q libcuda "/proc/$P8/maps" 2>/dev/null && break
    sleep 0.05
  done
  pids+=($P8)
  inner=$(awk '/^NSpid:/ { print $NF }' "/proc/$P8/status" 2>/dev/null)
}
if unshare -p -f true 2>/dev/null; then
  free_pid=
  for c in $(seq 30000 -7 20000); do [ ! -e /proc/$c ] && free_pid=$c && break; done
  start_ns "$free_pid"
  sed "s/^proc 0 $P /proc 0 $inner /" "$tmp/s1" >"$tmp/s8"
  ev "$tmp/s8" --pid "$P8" --duration 0 >"$tmp/e9.json"
  [ -n "$inner" ] && [ "$inner" != "$P8" ] && [ ! -e "/proc/$inner" ] &&
    [ "$(jq -c '[.gpu.procs[].pid]' "$tmp/e9.json")" = "[$P8]" ] \
    && ok "NSpid: NVML's pid $inner (inner namespace) mapped to $P8" \
    || bad "NSpid ($inner -> $P8): $(jq -c .gpu.procs "$tmp/e9.json") $(cat "$tmp/err")"
  start_ns ""
  sed "s/^proc 0 $P /proc 0 $inner /" "$tmp/s1" >"$tmp/s9"
  ev "$tmp/s9" --pid "$P8" --duration 0 >"$tmp/e10.json"
  [ "$inner" = 2 ] && [ "$(jq -c '.gpu.procs' "$tmp/e10.json")" = '[]' ] \
    && ok "NSpid: an inner pid ($inner) that a host process has is not taken for the tree's" \
    || bad "NSpid collision (inner $inner): $(jq -c .gpu.procs "$tmp/e10.json")"
else
  ok "SKIP NSpid test: unshare -p not permitted here"
fi
finish
