#!/usr/bin/env bash
# test_replay.sh — replays the saved evidence in tests/replay/*.json through the rules
# (`sopctl run --evidence`) and compares each rule's verdict with case.expect ("id verdict" per
# line: hit, hit:SEVERITY, clear, unknown; "exit N"; an optional "~TEXT" after the verdict: the
# rule's symptom, evidence or note holds TEXT). Also: --set flips a verdict, --lang zh.
# The cases run side by side (SOP_TEST_JOBS at a time, default the CPU count), each in a scratch
# directory of its own; their lines are printed in case order. Needs SOPCTL, SOP_SRC (from
# ctest) and jq.
. "$(dirname "$0")/lib.sh"
SOPCTL=${SOPCTL:?set SOPCTL}
SRC=${SOP_SRC:?set SOP_SRC}

# verdicts CASE [RULES] [ARGS...] -> "$tmp/got" lines "id hit:sev|clear|unknown", exit in $rc
verdicts() {
  local case=$1 rules=()
  [ -n "$2" ] && rules=("$2")
  shift 2
  "$SOPCTL" run "${rules[@]}" --evidence "$case" --format json "$@" >"$tmp/out.json" 2>"$tmp/err"
  rc=$?
  if ! jq -e . "$tmp/out.json" >/dev/null 2>&1; then
    : >"$tmp/got"
    return 1
  fi
  jq -r '(.findings[]? | "\(.id) hit:\(.severity)"), (.cleared[]? | "\(.id) clear"),
         (.unknown[]? | "\(.id) unknown")' "$tmp/out.json" >"$tmp/got"
}

# replay_case EXPECT: one case, both packs, in a scratch $tmp of its own (a subshell); its
# ok/FAIL lines on stdout; the embedded pack's report kept as $reports/NAME.json.
replay_case() {
  local exp=$1 case=${1%.expect} name rules label id want rest text got
  name=$(basename "$case")
  for rules in "" "$SRC/rules.lua"; do
    label="$name${rules:+ (rules.lua from file)}"
    if ! verdicts "$case.json" "$rules"; then
      bad "$label: no JSON report (exit $rc): $(head -c 300 "$tmp/err")"
      continue
    fi
    [ -z "$rules" ] && cp "$tmp/out.json" "$reports/$name.json"
    n_err=$(jq '.rule_errors | length' "$tmp/out.json" 2>"$tmp/jqerr")
    [ "$n_err" = 0 ] && ok "$label: no rule errors" ||
      bad "$label: rule errors: $(jq -c .rule_errors "$tmp/out.json" 2>&1) (jq: '$n_err' $(head -c 300 "$tmp/jqerr"); sopctl exit $rc, stderr: $(head -c 300 "$tmp/err"); report: $(head -c 300 "$tmp/out.json"))"
    while read -r id want rest; do
      [ -z "${id:-}" ] && continue
      case $id in \#*) continue ;; esac
      if [ "$id" = exit ]; then
        [ "$rc" = "$want" ] && ok "$label: exit $want" || bad "$label: exit $rc, want $want"
        continue
      fi
      case ${rest:-} in
        \~*)
          text=${rest#\~}
          if jq -e --arg i "$id" --arg t "$text" '[(.findings[]?, .cleared[]?, .unknown[]?)
               | select(.id == $i) | ((.symptom // "") + " " + (.evidence // .note // .reason // "")) | contains($t)] | any' \
               "$tmp/out.json" >/dev/null; then
            ok "$label: $id says '$text'"
          else
            bad "$label: $id does not say '$text'"
          fi ;;
      esac
      got=$(awk -v i="$id" '$1 == i { print $2 }' "$tmp/got")
      if [ "$want" = hit ]; then
        case $got in hit:*) ok "$label: $id $got" ;; *) bad "$label: $id is '${got:-absent}', want hit" ;; esac
      elif [ "$got" = "$want" ]; then
        ok "$label: $id $got"
      else
        bad "$label: $id is '${got:-absent}', want $want"
      fi
    done <"$exp"
  done
}

reports=$tmp/reports lines=$tmp/lines
mkdir -p "$reports" "$lines"
jobs_max=${SOP_TEST_JOBS:-$(nproc)}
names=()
for exp in "$SRC"/tests/replay/*.expect; do
  name=$(basename "${exp%.expect}")
  names+=("$name")
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
  (tmp=$tmp/case.$name && mkdir "$tmp" && replay_case "$exp") >"$lines/$name" 2>&1 &
done
wait
for name in "${names[@]}"; do
  cat "$lines/$name"
  n=$(grep -c '^ok ' "$lines/$name")
  m=$(grep -c '^FAIL ' "$lines/$name")
  pass=$((pass + n)) fail=$((fail + m))
  [ $((n + m)) -gt 0 ] || bad "$name: the case printed nothing"
done
ncases=${#names[@]}
[ "$ncases" -ge 9 ] && ok "$ncases replay cases" || bad "only $ncases replay cases"

# Every finding carries numbers in its evidence and at least one reference (the embedded pack's
# reports of the cases above).
for case in "$SRC"/tests/replay/*.json; do
  name=$(basename "${case%.json}") report=$reports/$name.json
  if [ ! -f "$report" ]; then # a case without .expect (or without a report above)
    verdicts "$case" "" || continue
    report=$tmp/out.json
  fi
  jq -r '.findings[]? | select((.evidence | test("[0-9]") | not) or ((.refs | length) < 1)) | .id' \
    "$report" >"$tmp/weak"
  [ -s "$tmp/weak" ] && bad "$name: findings without numbers or refs: $(tr '\n' ' ' <"$tmp/weak")"
done
ok "findings carry numbers and refs"

# --set changes a threshold and flips a verdict: 91% of the limit is a hit at 90, clear at 95.
verdicts "$SRC/tests/replay/near_limit.json" ""
grep -qx "mem.near_limit hit:high" "$tmp/got" && ok "near_limit: hit at the default" || bad "near_limit default: $(cat "$tmp/got")"
verdicts "$SRC/tests/replay/near_limit.json" "" --set rss_limit_pct=95
grep -qx "mem.near_limit clear" "$tmp/got" && ok "--set rss_limit_pct=95 clears mem.near_limit" \
  || bad "--set rss_limit_pct=95: $(grep near_limit "$tmp/got")"
[ "$rc" = 0 ] && ok "--set: exit 0 once clear" || bad "--set: exit $rc"
verdicts "$SRC/tests/replay/oom_worker_memcg.json" "" --set oom_recent_s=60
grep -qx "oom.killed hit:warn" "$tmp/got" && ok "--set oom_recent_s=60: only the cgroup counter is left (warn)" \
  || bad "--set oom_recent_s=60: $(grep oom.killed "$tmp/got")"

# cgroup v1: the quota finding names the cpu controller's group, not the memory controller's.
verdicts "$SRC/tests/replay/throttled_v1_split.json" ""
jq -r '.findings[] | select(.id == "cpu.throttled") | .evidence' "$tmp/out.json" >"$tmp/thr"
grep -q "/batch" "$tmp/thr" && ! grep -q "/job/worker" "$tmp/thr" \
  && ok "cgroup v1: cpu.throttled names the cpu group" || bad "cgroup v1 cpu.throttled: $(cat "$tmp/thr")"

# cpu.oversubscribed from ev.sched names the pools, and gives BLAS advice only where BLAS runs.
over_text() {
  verdicts "$SRC/tests/replay/$1.json" ""
  jq -r '.findings[] | select(.id == "cpu.oversubscribed") | "\(.evidence) \(.fix)"' "$tmp/out.json" >"$tmp/over"
}
over_text oversub_sched_nested
grep -q "ThreadPoolExecutor" "$tmp/over" && grep -q "multiprocessing worker" "$tmp/over" \
  && ! grep -q "OMP_NUM_THREADS" "$tmp/over" && ok "oversub nested: pools named, no BLAS advice" \
  || bad "oversub nested: $(cat "$tmp/over")"
over_text oversub_sched_gunicorn
grep -q "gunicorn worker" "$tmp/over" && grep -q -- "--workers" "$tmp/over" && ! grep -q "Nested pools" "$tmp/over" \
  && ! grep -q "Pool(processes" "$tmp/over" && ! grep -q "ThreadPoolExecutor" "$tmp/over" \
  && ok "oversub gunicorn: workers named, gunicorn's knob, not nested pools" || bad "oversub gunicorn: $(cat "$tmp/over")"
over_text oversub_sklearn_njobs
grep -q "joblib/loky worker" "$tmp/over" && grep -q "joblib threading backend" "$tmp/over" \
  && grep -q "RandomForestClassifier(n_jobs=1)" "$tmp/over" && ! grep -q "OMP_NUM_THREADS" "$tmp/over" \
  && ok "oversub sklearn: loky workers and joblib threads named, the inner n_jobs as the fix" \
  || bad "oversub sklearn: $(cat "$tmp/over")"
over_text oversub_sched_blas
grep -q "libopenblas" "$tmp/over" && grep -q "OMP_NUM_THREADS" "$tmp/over" \
  && ok "oversub blas: the pool libraries and their variables named" || bad "oversub blas: $(cat "$tmp/over")"

# §9: a tree whose own runnable threads exceed its CPUs is CPU-bound, not starved by others.
verdicts "$SRC/tests/replay/oversub_sched_light_threads.json" ""
jq -r '.findings[] | select(.id == "summary.verdict") | .symptom' "$tmp/out.json" | grep -q "CPU-bound" \
  && ok "summary.verdict: own oversubscription is CPU-bound" \
  || bad "summary.verdict: $(jq -c '.findings[] | select(.id == "summary.verdict") | .symptom' "$tmp/out.json")"

# --lang zh renders the Chinese text of the rules.
"$SOPCTL" run --evidence "$SRC/tests/replay/near_limit.json" --lang zh >"$tmp/zh.md" 2>"$tmp/err"
rc=$?
grep -q "内存已达 cgroup 上限" "$tmp/zh.md" && ok "--lang zh: Chinese symptom" || bad "--lang zh: no Chinese symptom (exit $rc)"
grep -q "Memory at" "$tmp/zh.md" && bad "--lang zh: English symptom present" || ok "--lang zh: no English symptom"
"$SOPCTL" run --evidence "$SRC/tests/replay/near_limit.json" --lang en >"$tmp/en.md" 2>"$tmp/err"
grep -q "Memory at 91% of the cgroup limit" "$tmp/en.md" && ok "--lang en: English symptom" || bad "--lang en: no English symptom"
"$SOPCTL" run --evidence "$SRC/tests/replay/oom_dead_pid.json" --lang zh --format json >"$tmp/zh.json" 2>"$tmp/err"
jq -r '.findings[0].evidence' "$tmp/zh.json" | grep -q "内核日志" && ok "--lang zh: JSON evidence in Chinese" \
  || bad "--lang zh JSON: $(head -c 300 "$tmp/zh.json")"

# The HTML page shows the asyncio tasks of the evidence: what they wait on, the convoy's holder
# with its await chain as a tree of levels, a stuck task's chain; nothing for a program without.
"$SOPCTL" run --evidence "$SRC/tests/replay/asyncio_lock_convoy.json" --format html >"$tmp/t.html" 2>/dev/null
grep -q 'id="asyncio-tasks"' "$tmp/t.html" && grep -q 'id="task-waits"' "$tmp/t.html" &&
  grep -q 'held by task request-worker-' "$tmp/t.html" &&
  grep -q '<ul><li><code>Cache.fetch (.*asyncio_lock_convoy.py:37)</code><ul><li><code>StreamReader.readline' "$tmp/t.html" \
  && ok "html: asyncio tasks, the convoy's holder and its await chain as a tree" \
  || bad "html: no asyncio tasks section: $(grep -A3 asyncio-tasks "$tmp/t.html" | head -c 300)"
"$SOPCTL" run --evidence "$SRC/tests/replay/asyncio_task_stuck.json" --format html >"$tmp/s.html" 2>/dev/null
grep -q 'class="stuck">task Task-8 pending the whole window' "$tmp/s.html" \
  && ok "html: the stuck task and its chain" || bad "html: no stuck task: $(grep -c stuck "$tmp/s.html")"
"$SOPCTL" run --evidence "$SRC/tests/replay/near_limit.json" --format html >"$tmp/n.html" 2>/dev/null
grep -q 'asyncio-tasks' "$tmp/n.html" && bad "html: an asyncio section without tasks" || ok "html: no asyncio section without tasks"

finish
