#!/usr/bin/env bash
# run-rank-scenarios.sh — the collective-wait scenarios of issue 31 (tests/e2e/targets/rank_collective.py:
# compute straggler, data-loading straggler, balanced, hang) at 4 and 8 ranks on a bigger machine
# (16 CPUs; gloo on CPU tensors, so no GPU is used), for the coordinator to run once:
#
#   SOPCTL=/path/to/carried/sopctl OUT=/some/dir tests/gpu/run-rank-scenarios.sh
#
# Each launch: torchrun (python -m torch.distributed.run) of N ranks, wait for every rank's
# "ready", `sopctl run --ranks --pid TORCHRUN --duration 4 --format json`, `sopctl merge` of those
# reports (json + md), a verdict (the right rank named, or none for the balanced job), then the
# launch's whole session is killed. Writes $OUT/rank-scenarios.tar: results.tsv (one row per
# launch), and per launch the reports, the merged job (json, md), torchrun's log, sopctl's stderr.
# Bounded: the whole run ends within TOTAL_S (default 230 s): every step is under `timeout` cut to
# the time left, a launch is not started with less than 40 s left (its row says SKIPPED), and a
# trap kills whatever is left of a launch. Exit 0 when
# every launch run gave the expected verdict, 1 otherwise, 2 on a setup error.
# Env: PYTHON (default python3; 3.12 + torch 2.11 expected), SOPCTL, OUT, SIZES ("4 8"),
# MODES ("compute data balanced hang"), DURATION (4), TOTAL_S (230), TORCHRUN_ARGS (extra torchrun
# options; Debian's torch 1.13 needs "--redirects 1 --tee 1", docs/ranks.md).
set -u
here=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
SOPCTL=${SOPCTL:?set SOPCTL to the sopctl binary}
OUT=${OUT:?set OUT to the output directory}
SIZES=${SIZES:-4 8}
MODES=${MODES:-compute data balanced hang}
DUR=${DURATION:-4}
TOTAL_S=${TOTAL_S:-230}
TARGET=$here/../e2e/targets/rank_collective.py
SLOW=1
work=$(mktemp -d)
res=$work/rank-scenarios
mkdir -p "$res" "$OUT" || exit 2
[ -x "$SOPCTL" ] || { echo "no sopctl at $SOPCTL" >&2; exit 2; }
[ -f "$TARGET" ] || { echo "no $TARGET" >&2; exit 2; }
start=$(date +%s)
leader=
cleanup() {
  if [ -n "$leader" ]; then
    kill -TERM -- "-$leader" 2>/dev/null
    sleep 1
    kill -KILL -- "-$leader" 2>/dev/null
    wait "$leader" 2>/dev/null
    leader=
  fi
}
trap 'cleanup; exit 1' INT TERM
{
  echo "# $(date -u +%FT%TZ) $(uname -n) nproc=$(nproc) $($PY -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)' 2>&1 | tail -1)"
  echo "# sopctl $("$SOPCTL" --version 2>&1 | head -1); load: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$res/results.tsv"
printf 'mode\tranks\tverdict\tnamed\twant\tstraggler_wait\tothers_wait\tcollective\tframe\theadline\tseconds\n' >>"$res/results.tsv"
fails=0 port=$((29900 + RANDOM % 500))
for n in $SIZES; do
  for mode in $MODES; do
    now=$(date +%s)
    left=$((TOTAL_S - (now - start)))
    if [ "$left" -lt 40 ]; then
      printf '%s\t%s\tSKIPPED\t\t\t\t\t\t\tout of time (TOTAL_S)\t0\n' "$mode" "$n" >>"$res/results.tsv"
      continue
    fi
    tag=$mode-${n}ranks port=$((port + 1)) t0=$now
    SOP_RANK_MODE=$mode SOP_SLOW_RANK=$SLOW SOP_RANK_LIFE_S=60 OMP_NUM_THREADS=1 \
      setsid timeout -k 2 "$((left - 5))" "$PY" -m torch.distributed.run --nproc_per_node "$n" \
      --master_port "$port" ${TORCHRUN_ARGS:-} "$TARGET" >"$res/$tag.torchrun.log" 2>&1 &
    leader=$!
    for _ in $(seq $(((left - 25) * 2 < 80 ? (left - 25) * 2 : 80))); do # every rank "ready" (<= 40 s)
      [ "$(grep -c 'ready' "$res/$tag.torchrun.log" 2>/dev/null)" -ge "$n" ] && break
      kill -0 "$leader" 2>/dev/null || break
      sleep 0.5
    done
    sleep 2
    left=$((TOTAL_S - ($(date +%s) - start)))
    timeout -k 2 "$((left > 35 ? 30 : (left > 8 ? left - 5 : 3)))" "$SOPCTL" run --ranks --pid "$leader" --duration "$DUR" --format json \
      >"$res/$tag.reports.json" 2>"$res/$tag.sopctl.err"
    timeout -k 2 10 "$SOPCTL" merge --format json "$res/$tag.reports.json" >"$res/$tag.job.json" 2>>"$res/$tag.sopctl.err"
    timeout -k 2 10 "$SOPCTL" merge "$res/$tag.reports.json" >"$res/$tag.job.md" 2>>"$res/$tag.sopctl.err"
    cleanup
    row=$(timeout 10 "$PY" - "$mode" "$n" "$SLOW" "$res/$tag.job.json" "$res/$tag.job.md" <<'EOF'
import json, re, sys
mode, n, slow, jpath, mdpath = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
try:
    job = json.load(open(jpath))
except Exception:
    job = {}
try:
    lines = [l for l in open(mdpath).read().splitlines() if l.strip()]
except Exception:
    lines = []
head = (lines[1] if len(lines) > 1 else "").replace("\t", " ")[:200]
st, hang = job.get("straggler") or {}, job.get("hang") or {}
named = hang.get("rank") or st.get("rank") or ""
want = "" if mode == "balanced" else slow
if mode == "balanced":
    ok = not st and not hang and job.get("reports") == n
elif mode == "hang":
    ok = hang.get("rank") == slow and (hang.get("waiting") or {}).get("count") == n - 1
else:
    ok = st.get("rank") == slow and st.get("by") == "collective_wait"
others = st.get("others") or {}
coll = others.get("collective") or (hang.get("waiting") or {}).get("collective") or \
    (job.get("balanced") or {}).get("collective") or ""
frame = st.get("own_frame") or (hang.get("where") or {}).get("frame") or ""
ow = "%.2f-%.2f" % (others["wait_min"], others["wait_max"]) if "wait_min" in others else ""
sw = "%.2f" % st["wait_frac"] if "wait_frac" in st else ""
print("\t".join(["PASS" if ok else "FAIL", named, want, sw, ow, coll, re.sub(r"\(.*/", "(", frame), head]))
EOF
)
    [ -n "$row" ] || row=$(printf 'FAIL\t\t\t\t\t\t\tno verdict')
    case $row in PASS*) ;; *) fails=$((fails + 1)) ;; esac
    printf '%s\t%s\t%s\t%s\n' "$mode" "$n" "$row" "$(($(date +%s) - t0))" >>"$res/results.tsv"
  done
done
echo "# total $(($(date +%s) - start)) s; failures $fails" >>"$res/results.tsv"
tar -C "$work" -cf "$OUT/rank-scenarios.tar" rank-scenarios
cat "$res/results.tsv"
rm -rf "$work"
[ "$fails" = 0 ]
