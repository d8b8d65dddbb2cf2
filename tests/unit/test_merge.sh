#!/usr/bin/env bash
# test_merge.sh — `sopctl merge` on saved per-rank reports (tests/fixtures/merge): a job-wide
# finding and one straggler (named with its outlier figures and finding, in any input order), a
# healthy job (no straggler, no outlier), a missing rank, mismatched report versions (another
# sopctl merged, another schema excluded), JSON lines and garbage on stdin, and hostile strings
# (controls, Markdown) escaped in md/text/json. Needs SOPCTL, SOP_FIXTURES (ctest) and jq.
. "$(dirname "$0")/lib.sh"
SOPCTL=${SOPCTL:?set SOPCTL}
F=${SOP_FIXTURES:?set SOP_FIXTURES}/merge
check() { # NAME JQ-EXPR FILE
  if jq -e "$2" "$3" >/dev/null 2>&1; then ok "$1"; else bad "$1: $2 on $(head -c 600 "$3")"; fi
}

# One straggler (rank 2 starved by its DataLoader) and a finding on every rank.
"$SOPCTL" merge --format json "$F"/straggler_r*.json >"$tmp/s.json"
rc=$?
[ "$rc" = 1 ] && ok "straggler: exit 1" || bad "straggler: exit $rc"
check "straggler: rank 2 named" '.straggler.rank == "2" and .straggler.node == "n2"' "$tmp/s.json"
check "straggler: its finding" '.straggler.findings | map(.id) == ["dataloader.starved"]' "$tmp/s.json"
check "straggler: its figures" '.straggler.figures | index("data_wait_frac") != null' "$tmp/s.json"
check "outliers: rank 2 only" '(.outliers | length) >= 1 and all(.outliers[]; .rank == "2")' "$tmp/s.json"
check "outlier explained" 'any(.outliers[]; .figure == "data_wait_frac" and .direction == "high"
                            and (.findings | map(.id) | index("dataloader.starved")))' "$tmp/s.json"
check "job-wide finding" '.job_wide | map(.id) == ["cpu.oversubscribed"]' "$tmp/s.json"
# Which findings explain a figure is the pack's data (explains{} in rules.lua), carried by each
# report with each finding's family: give rank 2 a second finding (gil) listed before its
# dataloader one; the report's explains puts dataloader first for data_wait_frac, and an explains
# that names gil for it puts gil first.
mkdir -p "$tmp/ex"
cp "$F"/straggler_r*.json "$tmp/ex/"
jq '.findings = [{id: "gil.contention", family: "gil", section: "4.1", severity: "high",
                  symptom: "s", evidence: "e", fix: "f"}] + .findings' \
  "$F/straggler_r2.json" >"$tmp/ex/straggler_r2.json"
"$SOPCTL" merge --format json "$tmp"/ex/straggler_r*.json >"$tmp/ex1.json"
check "explains{}: the figure's family first" 'any(.outliers[]; .figure == "data_wait_frac"
  and (.findings | map(.id)) == ["dataloader.starved", "gil.contention"])' "$tmp/ex1.json"
jq '.explains.data_wait_frac = ["gil"]' "$tmp/ex/straggler_r2.json" >"$tmp/ex/r2.json"
mv "$tmp/ex/r2.json" "$tmp/ex/straggler_r2.json"
"$SOPCTL" merge --format json "$tmp"/ex/straggler_r*.json >"$tmp/ex2.json"
check "explains{}: read from the report" 'any(.outliers[]; .figure == "data_wait_frac"
  and (.findings | map(.id)) == ["gil.contention", "dataloader.starved"])' "$tmp/ex2.json"
check "rank x rule table" 'any(.rules[]; .id == "cpu.oversubscribed" and .ranks == "0-3" and .job_wide)
                           and any(.rules[]; .id == "dataloader.starved" and .ranks == "2" and (.job_wide | not))' "$tmp/s.json"
check "nothing missing, versions agree" '(.missing | length) == 0 and (.versions.mismatched | not)' "$tmp/s.json"
# Same answer whatever the input order, and from stdin.
cat "$F/straggler_r3.json" "$F/straggler_r2.json" "$F/straggler_r1.json" "$F/straggler_r0.json" |
  "$SOPCTL" merge --format json - >"$tmp/s2.json"
check "straggler from stdin, reversed" '.straggler.rank == "2" and .reports == 4' "$tmp/s2.json"
"$SOPCTL" merge "$F"/straggler_r*.json >"$tmp/s.md"
grep -q '^\*\*Straggler: rank 2 (node n2, pid 201)\*\*' "$tmp/s.md" && ok "md names the straggler" ||
  bad "md straggler: $(head -5 "$tmp/s.md")"
"$SOPCTL" merge --lang zh --format text "$F"/straggler_r*.json >"$tmp/s.txt"
grep -q '拖慢者（straggler）: rank 2' "$tmp/s.txt" && ok "zh text names the straggler" ||
  bad "zh: $(head -5 "$tmp/s.txt")"

# The GPU figure: the straggler's GPU idles (0.1) while the others' are busy (0.9-0.95): it
# stands out low on gpu_busy_frac, explained by its starved DataLoader.
for f in "$F"/straggler_r*.json; do
  b=$(basename "$f" .json)
  busy=0.9
  case $b in *r1) busy=0.95 ;; *r2) busy=0.1 ;; *r3) busy=0.92 ;; esac
  jq --argjson g "$busy" '.figures.gpu_busy_frac = $g' "$f" >"$tmp/gpu_$b.json"
done
"$SOPCTL" merge --format json "$tmp"/gpu_straggler_r*.json >"$tmp/g.json"
check "GPU idle on one rank: outlier low on gpu_busy_frac" 'any(.outliers[]; .rank == "2" and
  .figure == "gpu_busy_frac" and .direction == "low" and (.findings | map(.id) | index("dataloader.starved")))
  and all(.outliers[]; .rank == "2")' "$tmp/g.json"
check "GPU idle on one rank: among the straggler's figures" '.straggler.rank == "2" and
  (.straggler.figures | index("gpu_busy_frac") != null)' "$tmp/g.json"
"$SOPCTL" merge "$tmp"/gpu_straggler_r*.json >"$tmp/g.md"
grep -q 'GPU busy' "$tmp/g.md" && grep -q '10%' "$tmp/g.md" && ok "md: GPU busy 10%" || bad "md GPU busy: $(grep -i gpu "$tmp/g.md")"

# A damaged pid (1e47, found by fuzz_merge: a double cast to an integer out of range, undefined
# behaviour that the sanitizer tier's UBSan stops on) is no pid: the rank is kept, without one.
mkdir -p "$tmp/pid"
cp "$F"/straggler_r*.json "$tmp/pid/"
jq '.target.pid = 1.1e47' "$F/straggler_r1.json" >"$tmp/pid/straggler_r1.json"
"$SOPCTL" merge --format json "$tmp"/pid/straggler_r*.json >"$tmp/pid.json"
check "a pid of 1e47 is dropped, its rank kept" 'any(.ranks[]; .rank == "1" and (has("pid") | not))
  and .reports == 4 and .straggler.rank == "2"' "$tmp/pid.json"

# A healthy job: an info finding on one rank and small differences are no straggler.
"$SOPCTL" merge --format json "$F/healthy.jsonl" >"$tmp/h.json"
rc=$?
[ "$rc" = 0 ] && ok "healthy: exit 0" || bad "healthy: exit $rc"
check "healthy: no straggler, no outlier, nothing job-wide" \
  '(has("straggler") | not) and (.outliers | length) == 0 and (.job_wide | length) == 0 and .reports == 4' "$tmp/h.json"
"$SOPCTL" merge "$F/healthy.jsonl" | grep -q '^No straggler' && ok "healthy md: no straggler" ||
  bad "healthy md"

# A missing rank: the world size says 4, three reports came.
"$SOPCTL" merge --format json --missing 'n3=timed out after 30 s' "$F/missing.jsonl" >"$tmp/m.json"
rc=$?
[ "$rc" = 1 ] && ok "missing: exit 1" || bad "missing: exit $rc"
check "missing rank 2 listed" 'any(.missing[]; .ranks == "2")' "$tmp/m.json"
check "missing node listed with its reason" 'any(.missing[]; .node == "n3" and .reason == "timed out after 30 s")' "$tmp/m.json"

# Mismatched versions: another sopctl is merged and named; another schema is excluded.
"$SOPCTL" merge --format json "$F/versions.jsonl" >"$tmp/v.json"
check "versions: mismatched" '.versions.mismatched' "$tmp/v.json"
check "versions: 0.0.9 merged and counted" 'any(.versions.seen[]; .sop_version == "0.0.9" and .reports == 1) and .reports == 3' "$tmp/v.json"
check "versions: schema 2 excluded" 'any(.versions.excluded[]; .schema == 2 and .sop_version == "9.0.0")' "$tmp/v.json"
check "versions: the excluded rank is missing" 'any(.missing[]; .ranks == "3")' "$tmp/v.json"
"$SOPCTL" merge "$F/versions.jsonl" | grep -q 'Report versions: versions differ' && ok "md lists versions" ||
  bad "md versions"

# Garbage among reports is listed, never silently dropped; nothing readable is exit 2.
printf '{"x": 1}\n{"schema": 1, "target": {}, "findings": []}\nnot json' |
  "$SOPCTL" merge --format json - >"$tmp/g.json" 2>/dev/null
check "garbage listed as missing" '(.missing | map(.node)) == ["stdin#1", "stdin#3"] and .reports == 1' "$tmp/g.json"
printf 'nope' | "$SOPCTL" merge - >/dev/null 2>&1
rc=$?
[ "$rc" = 2 ] && ok "nothing readable: exit 2" || bad "nothing readable: exit $rc"
"$SOPCTL" merge "$tmp/does-not-exist.json" "$F/healthy.jsonl" --format json >"$tmp/n.json" 2>/dev/null
check "unreadable file listed" 'any(.missing[]; (.reason | startswith("cannot read")))' "$tmp/n.json"
"$SOPCTL" merge >/dev/null 2>&1
rc=$?
[ "$rc" = 2 ] && ok "no arguments: exit 2" || bad "no arguments: exit $rc"

# Collective wait (issue 31): saved reports of real 3-rank gloo jobs (tests/e2e/targets/rank_collective.py
# through `run --ranks`): the rank the others wait for in all_reduce is the straggler, by its wait,
# whatever its CPU; a balanced job has none; a hang names the rank that is elsewhere, or gone.
"$SOPCTL" merge --format json "$F/collective_compute.json" >"$tmp/cc.json"
rc=$?
[ "$rc" = 1 ] && ok "collective compute: exit 1" || bad "collective compute: exit $rc"
check "compute straggler: rank 1 by collective wait" '.straggler.rank == "1" and .straggler.by == "collective_wait"
   and .straggler.wait_frac < 0.1 and (.straggler.own_frame | startswith("prepare ("))
   and .straggler.others.ranks == "0, 2" and .straggler.others.collective == "all_reduce"
   and .straggler.others.wait_min > 0.5' "$tmp/cc.json"
"$SOPCTL" merge "$F/collective_compute.json" >"$tmp/cc.md"
grep -q '^\*\*Straggler: rank 1 (node vm, pid [0-9]*)\*\*$' "$tmp/cc.md" &&
  grep -q '^- rank 1 spends 9[0-9]% of the window outside collectives, most at prepare (rank\\_collective.py:51) .*; ranks 0, 2 wait 70–72% in all\\_reduce for it\.$' "$tmp/cc.md" &&
  ok "compute md headline: rank 1, its frame, the others' wait" || bad "compute md: $(sed -n 3,4p "$tmp/cc.md")"
"$SOPCTL" merge --lang zh --format text "$F/collective_compute.json" | grep -q 'rank 0, 2 有 70–72% 的时间在 all_reduce 中等它' &&
  ok "compute zh text" || bad "compute zh text"
"$SOPCTL" merge --format json "$F/collective_data.json" >"$tmp/cd.json"
check "data straggler: rank 2, waiting for its DataLoader" '.straggler.rank == "2" and .straggler.by == "collective_wait"
   and .straggler.data_wait_frac > 0.5 and .straggler.others.ranks == "0-1"
   and (.straggler.findings | map(.id) | index("dataloader.starved"))' "$tmp/cd.json"
"$SOPCTL" merge --format json "$F/collective_balanced.json" >"$tmp/cb.json"
rc=$?
[ "$rc" = 0 ] && ok "collective balanced: exit 0" || bad "collective balanced: exit $rc"
check "balanced: no straggler, no hang" '(has("straggler") | not) and (has("hang") | not) and .balanced.collective == "all_reduce"
   and .balanced.wait_max - .balanced.wait_min < 0.25' "$tmp/cb.json"
"$SOPCTL" merge "$F/collective_balanced.json" | grep -q '^No straggler: the ranks wait alike in collectives' &&
  ok "balanced md headline" || bad "balanced md"
"$SOPCTL" merge --format json "$F/collective_hang.json" >"$tmp/ch.json"
rc=$?
[ "$rc" = 1 ] && ok "collective hang: exit 1" || bad "collective hang: exit $rc"
check "hang: rank 1 elsewhere, 0 and 2 in all_reduce the whole window" '.hang.rank == "1" and .hang.where.kind == "own"
   and (.hang.where.frame | startswith("prepare (")) and .hang.waiting.ranks == "0, 2"
   and .hang.waiting.collective == "all_reduce" and .hang.waiting.waited_s >= 3.5 and (has("straggler") | not)' "$tmp/ch.json"
"$SOPCTL" merge "$F/collective_hang.json" | grep -q '^\*\*Hang: rank 1 (node vm, pid [0-9]*) is elsewhere; ranks 0, 2 have sat in all\\_reduce for the whole window\*\*$' &&
  ok "hang md headline" || bad "hang md: $("$SOPCTL" merge "$F/collective_hang.json" | sed -n 3p)"
"$SOPCTL" merge --lang zh "$F/collective_hang.json" | grep -q '卡住（hang）：rank 1' && ok "hang zh" || bad "hang zh"
# The rank that went elsewhere is gone (no report): the others still name it.
jq -c 'select(.target.rank != 1)' "$F/collective_hang.json" | "$SOPCTL" merge --format json - >"$tmp/cg.json"
check "hang: a gone rank named" '.hang.rank == "1" and .hang.where.kind == "gone" and any(.missing[]; .ranks == "1")' "$tmp/cg.json"

# Hostile strings from reports: no raw control character in any format; Markdown cells stay cells.
for fmt in md text json; do
  for lang in en zh; do
    "$SOPCTL" merge --format $fmt --lang $lang "$F/hostile.json" >"$tmp/x.$fmt" 2>/dev/null
    if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$tmp/x.$fmt"; then
      bad "hostile $fmt/$lang: raw control characters"
    else
      ok "hostile $fmt/$lang: controls escaped"
    fi
  done
done
jq -e '.nodes | index("n|1\u001b]0;t\u0007")' "$tmp/x.json" >/dev/null && ok "json keeps the string, escaped" ||
  bad "json hostile: $(head -c 300 "$tmp/x.json")"
# Every row of each Markdown table has the header's number of unescaped '|'.
awk '/^\|/ { line = $0; gsub(/\\\\/, "", line); gsub(/\\\|/, "", line); n = gsub(/\|/, "", line)
             if (!intable) { want = n; intable = 1 } else if (n != want) { print "row: " $0; badrows++ } ; next }
     { intable = 0 } END { exit badrows > 0 }' "$tmp/x.md" && ok "md table cells intact" || bad "md table cells broken"
grep -q '\\`bad\\`' "$tmp/x.md" && ok "md escapes backticks" || bad "md backticks: $(grep -m1 bad "$tmp/x.md")"

# Amplification (issue 28): input over the reader's bounds is refused at once with a clear
# error, never merged for minutes or into GBs (8 MB of "{}" was 1.7 GB; 2000 reports with 50
# distinct ids each, or 100k tiny reports, took 30-130 s).
limit() { # NAME FILE
  local t0 t1 rc
  t0=$(date +%s%N)
  timeout 60 "$SOPCTL" merge --format json "$2" >/dev/null 2>"$tmp/lim.err"
  rc=$?
  t1=$(date +%s%N)
  if [ "$rc" = 2 ] && grep -q "over the merge limits" "$tmp/lim.err" &&
    [ $(((t1 - t0) / 1000000)) -lt 10000 ]; then
    ok "$1: refused (exit 2) in $(((t1 - t0) / 1000000)) ms"
  else
    bad "$1: exit $rc after $(((t1 - t0) / 1000000)) ms: $(head -c 300 "$tmp/lim.err")"
  fi
}
python3 -c 'import sys; sys.stdout.write("{}" * 4000000)' >"$tmp/empty.json"
limit "8 MB of {}" "$tmp/empty.json"
python3 - "$F/straggler_r0.json" "$tmp" <<'PY'
import json, sys
base = json.load(open(sys.argv[1]))
f0 = base["findings"][0]
with open(sys.argv[2] + "/ids.jsonl", "w") as out:
    for r in range(2000):
        base["target"]["rank"] = r
        base["findings"] = [dict(f0, id="x.r%d_%d" % (r, i)) for i in range(50)]
        out.write(json.dumps(base) + "\n")
with open(sys.argv[2] + "/tiny.jsonl", "w") as out:
    for r in range(100000):
        out.write('{"schema":1,"sop_version":"v%d","target":{"rank":%d,"node":"n%d","job_id":"j%d"},'
                  '"findings":[]}\n' % (r, r, r, r))
PY
limit "2000 reports x 50 distinct ids" "$tmp/ids.jsonl"
limit "100k tiny reports" "$tmp/tiny.jsonl"

finish
