#!/usr/bin/env bash
# run-gpu-scenarios.sh — on a GPU host (issue 25): every GPU scenario of examples/scenarios/
# (gpu_*.py, healthy_gpu_*.py) RUNS times through the scenario harness (tests/e2e/test_scenarios.py,
# CELLS=all/1 repeated), then a results table (scenario, run, attempt, result, §9 verdict, first
# finding, problems) and each report's JSON. Where no CUDA GPU is visible every scenario is
# reported as skipped, and the table says so. Bounded: the harness runs under `timeout` (BUDGET_S),
# scenarios it left behind are ended by pid, and every outcome, a timeout included, is a row.
# Env: SOPCTL (required: the sopctl to test), PYTHON (the scenarios' interpreter, with torch;
# default $SOP_TEST_PYTHON, else python3), HARNESS_PYTHON (default /usr/bin/python3, else
# python3), RUNS (default 3), BUDGET_S (default 330), OUT (default: a new temporary directory),
# SCENARIOS (default 'gpu_*,healthy_gpu_*'; another set tests this script on a CPU host).
# Writes to $OUT: results.md (the table), harness.log, host.txt, reports.tar.gz (the JSON
# reports, NAME.RUN.ATTEMPT.json). Exit: 0 every run passed, 1 a run failed or did not run,
# 77 no CUDA GPU (all skipped).
set -u
SOPCTL=${SOPCTL:?set SOPCTL to the sopctl to test}
PY=${PYTHON:-${SOP_TEST_PYTHON:-python3}}
HPY=${HARNESS_PYTHON:-}
[ -z "$HPY" ] && { [ -x /usr/bin/python3 ] && HPY=/usr/bin/python3 || HPY=python3; }
RUNS=${RUNS:-3}
BUDGET_S=${BUDGET_S:-330}
OUT=${OUT:-$(mktemp -d)}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/reports"
t_start=$(date +%s)

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "host: $(uname -r), $(nproc) CPUs"
  echo "sopctl: $("$SOPCTL" version 2>&1 | head -1)"
  echo "python: $PY ($("$PY" -V 2>&1))"
  timeout 60 "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
  "available", torch.cuda.is_available())' 2>&1 | tail -1
  timeout 20 nvidia-smi --query-gpu=index,name,driver_version,memory.total,utilization.gpu \
    --format=csv,noheader 2>&1 | head -8
} >"$work/host.txt" 2>&1
cp "$work/host.txt" "$OUT/host.txt"

cells=all/1
for _ in $(seq 2 "$RUNS"); do cells="$cells,all/1"; done
PATTERNS=${SCENARIOS:-gpu_*,healthy_gpu_*}
IFS=, read -ra pats <<<"$PATTERNS"
scen=$(cd "$SRC/examples/scenarios" && for p in "${pats[@]}"; do find . -maxdepth 1 -name "$p.py"; done |
  sed 's|^\./||; s/\.py$//' | sort -u | tr '\n' ' ')

# The harness, bounded; its scenarios run in their own sessions, so after it the ones it left
# (a timeout) are found by their command line and ended by pid.
( cd "$SRC" && SOPCTL=$SOPCTL SOP_SRC=$SRC SOP_FIXTURES=$SRC/tests/fixtures SOP_TEST_PYTHON=$PY \
    SOP_SCENARIO_REPORTS=$work/reports SCENARIOS=$PATTERNS CELLS=$cells \
    timeout -k 5 "$BUDGET_S" "$HPY" -u tests/e2e/test_scenarios.py ) >"$work/harness.log" 2>&1
hrc=$?
[ "$hrc" = 124 ] || [ "$hrc" = 137 ] && echo "harness: timed out after ${BUDGET_S} s" >>"$work/harness.log"
for d in /proc/[0-9]*; do
  cmd=$( { tr '\0' ' ' <"$d/cmdline"; } 2>/dev/null) || continue
  for s in $scen; do
    case $cmd in
      *"$SRC/examples/scenarios/$s.py"*)
        kill -9 "${d#/proc/}" 2>/dev/null && echo "ended leftover pid ${d#/proc/}: $cmd" >>"$work/harness.log" ;;
    esac
  done
done
cp "$work/harness.log" "$OUT/harness.log"

# The table, from the harness's lines and the saved reports.
"$HPY" - "$work/harness.log" "$work/reports" "$RUNS" "$hrc" "$scen" >"$OUT/results.md" <<'PYEOF'
import json, os, re, sys
log, reports, runs, hrc, scen = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].split()
line_re = re.compile(r"^(ok  |miss) (\S+) \[([^\]]+)\] attempt (\d) \(([\d.]+) s\): (.*?)(?: -- (.*))?$")
rows, runs_seen, skipped = [], {}, {}
for line in open(log, errors="replace"):
    line = line.rstrip("\n")
    m = line_re.match(line)
    if m:
        ok, name, cell, attempt, secs, fired, problems = m.groups()
        if attempt == "1":
            runs_seen[name] = runs_seen.get(name, 0) + 1
        run = runs_seen.get(name, 1)
        verdict = fired.split(" | §9: ", 1)[1] if " | §9: " in fired else "-"
        first = "-"
        path = os.path.join(reports, "%s.%d.%s.json" % (name, run, attempt))
        try:
            with open(path) as f:
                rep = json.load(f)
            fs = rep.get("findings", [])
            loud = [x for x in fs if x["id"] != "summary.verdict"]
            if loud:
                first = "%s (%s)" % (loud[0]["id"], loud[0]["severity"])
        except (OSError, ValueError, KeyError):
            pass
        rows.append((name, str(run), attempt, "pass" if ok.strip() == "ok" else "FAIL", verdict, first,
                     secs, problems or ""))
        continue
    m = re.match(r"^skip (\S+?)(?: \[[^\]]*\])?: (.*)$", line)
    if m:
        skipped[m.group(1)] = skipped.get(m.group(1), 0) + 1
        rows.append((m.group(1), str(skipped[m.group(1)]), "-", "SKIP", "-", "-", "-", m.group(2)))
for name in scen:  # runs that never happened (timeout, harness failure)
    done = max(runs_seen.get(name, 0), skipped.get(name, 0))
    for r in range(done + 1, runs + 1):
        rows.append((name, str(r), "-", "NOT RUN", "-", "-", "-",
                     "harness exit %d%s" % (hrc, " (timeout)" if hrc in (124, 137) else "")))
rows.sort(key=lambda r: (r[0], int(r[1]), r[2]))
hdr = ("scenario", "run", "attempt", "result", "§9 verdict", "first finding", "s", "problems")
print("| " + " | ".join(hdr) + " |")
print("|" + "---|" * len(hdr))
for r in rows:
    print("| " + " | ".join(x.replace("|", "/") for x in r) + " |")
final = {}
for r in rows:  # a run passes when its last attempt passed
    final[(r[0], r[1])] = r[3]
n_pass = sum(1 for v in final.values() if v == "pass")
n_skip = sum(1 for v in final.values() if v == "SKIP")
print("\n%d runs: %d passed, %d skipped, %d failed or not run (harness exit %d)"
      % (len(final), n_pass, n_skip, len(final) - n_pass - n_skip, hrc))
status = 77 if final and n_skip == len(final) else (0 if final and n_pass + n_skip == len(final) else 1)
open(os.path.join(reports, "..", "status"), "w").write(str(status))
PYEOF
status=$(cat "$work/status" 2>/dev/null || echo 1)
tar -czf "$OUT/reports.tar.gz" -C "$work" reports 2>/dev/null
cat "$OUT/results.md"
echo "took $(( $(date +%s) - t_start )) s; results in $OUT (results.md, harness.log, host.txt, reports.tar.gz)"
exit "$status"
