#!/usr/bin/env bash
# test_site.sh — site customization through sopctl: `--site FILE` changes a threshold (a finding
# clears), disables a rule, adds a rule; $SOP_SITE is the default site file (empty: none) and
# `--no-site` skips it; a broken or missing site file stops the run with exit 2 and file:line,
# never silently; `check default --site` validates one; the bundled example loads; a site rule
# reading outside its `reads` is a rule error. Replays
# tests/replay/near_limit.json (target + workers at 93% of the memory limit). Needs SOPCTL,
# SOP_SRC and jq.
. "$(dirname "$0")/lib.sh"
SOPCTL=${SOPCTL:?set SOPCTL}
SRC=${SOP_SRC:?set SOP_SRC}
EV="$SRC/tests/replay/near_limit.json"
unset SOP_SITE
run() { "$SOPCTL" run --evidence "$EV" --format json "$@" >"$tmp/out.json" 2>"$tmp/err"; echo $?; }
has() { jq -e --arg id "$2" ".$1[] | select(.id == \$id)" "$tmp/out.json" >/dev/null; }

rc=$(run)
[ "$rc" = 1 ] && has findings mem.near_limit && ok "no site: mem.near_limit fires (exit 1)" || bad "no site: exit $rc"

cat >"$tmp/site.lua" <<'LUA'
thresholds { rss_limit_pct = 95, site_min = 1 }
disable "io.small_reads"
rule { id = "site.always", section = "9", severity = "info", title = "a site rule", reads = { "pid" },
  uses = { "site_min" },
  check = function(ev, th) return hit { symptom = "s", evidence = fmt("pid %d, min %d", ev.pid, th.site_min),
    cause = "c", fix = "f", verify = "v", refs = { "https://example.org/" } } end }
LUA
rc=$(run --site "$tmp/site.lua")
[ "$rc" = 0 ] && ok "--site: exit 0 (threshold raised to 95%)" || bad "--site: exit $rc $(head -c 300 "$tmp/err")"
has cleared mem.near_limit && ok "--site: mem.near_limit cleared" || bad "--site: mem.near_limit not cleared"
has cleared io.small_reads || has unknown io.small_reads && bad "--site: io.small_reads still runs" \
  || ok "--site: io.small_reads disabled"
has findings site.always && ok "--site: site rule added" || bad "--site: site rule missing"
rc=$(run --site "$tmp/site.lua" --set rss_limit_pct=90)
[ "$rc" = 1 ] && ok "--set wins over the site file" || bad "--set over site: exit $rc"

SOP_SITE="$tmp/site.lua" rc=$(SOP_SITE="$tmp/site.lua" run)
[ "$rc" = 0 ] && has findings site.always && ok "SOP_SITE is the default site file" || bad "SOP_SITE: exit $rc"
rc=$(SOP_SITE="$tmp/site.lua" run --no-site)
[ "$rc" = 1 ] && ! has findings site.always && ok "--no-site skips it" || bad "--no-site: exit $rc"
rc=$(SOP_SITE= run)
[ "$rc" = 1 ] && ok "SOP_SITE empty: no site file" || bad "SOP_SITE empty: exit $rc"

printf 'thresholds { rss_limit_pct = 95 }\ndisable "no.such_rule"\n' >"$tmp/bad1.lua"
rc=$(run --site "$tmp/bad1.lua")
[ "$rc" = 2 ] && grep -q "bad1.lua:2" "$tmp/err" && grep -q "no.such_rule" "$tmp/err" \
  && ok "unknown rule disabled: exit 2 with file:line" || bad "bad1: exit $rc: $(head -c 300 "$tmp/err")"
printf 'thresholds { rss_limit_pct = 95\n' >"$tmp/bad2.lua"
rc=$(SOP_SITE="$tmp/bad2.lua" run)
[ "$rc" = 2 ] && grep -q "bad2.lua" "$tmp/err" && [ ! -s "$tmp/out.json" ] \
  && ok "broken default site file: exit 2, named, no report" || bad "bad2: exit $rc: $(head -c 300 "$tmp/err")"
rc=$(run --site "$tmp/missing.lua")
[ "$rc" = 2 ] && grep -q "missing.lua" "$tmp/err" && ok "missing site file: exit 2" || bad "missing: exit $rc"

"$SOPCTL" check default --site "$SRC/examples/site/site.lua" >"$tmp/ids" 2>"$tmp/err" \
  && grep -qx "site.fd_limit" "$tmp/ids" && ok "the example site file loads and adds site.fd_limit" \
  || bad "example site: $(head -c 300 "$tmp/err")"
"$SOPCTL" check default --site "$tmp/bad1.lua" >/dev/null 2>&1
[ $? = 2 ] && ok "check --site: a broken site file fails" || bad "check --site broken: not exit 2"

# The reads check holds site rules too, in every run: a rule that declares `reads` and reads
# outside them is a rule error naming the path (its verdict dropped); one without `reads` is not
# checked. The example's rule reads only what it lists, its hit included.
cat >"$tmp/reads.lua" <<'LUA'
rule { id = "site.outside", section = "9", severity = "info", title = "t", reads = { "pid" },
  check = function(ev) return clear(fmt("%d %d", ev.pid, ev.proc.rss_kb)) end }
rule { id = "site.unlisted", section = "9", severity = "info", title = "t",
  check = function(ev) return clear(fmt("%d %d", ev.pid, ev.proc.rss_kb)) end }
LUA
run --site "$tmp/reads.lua" >/dev/null
msg=$(jq -r '.rule_errors[] | select(.id == "site.outside") | .message' "$tmp/out.json")
[ "$msg" = 'read ev.proc and 1 more paths outside its `reads` list' ] && ! has cleared site.outside \
  && ok "site rule reading outside its reads: rule error" || bad "reads check on a site rule: '$msg'"
has cleared site.unlisted && ok "site rule without reads: not checked" || bad "site rule without reads"
jq '.proc.fds = 1000 | .proc.fd_limit = 1024' "$EV" >"$tmp/fds.json"
"$SOPCTL" run --evidence "$tmp/fds.json" --site "$SRC/examples/site/site.lua" --format json >"$tmp/out.json" 2>"$tmp/err"
has findings site.fd_limit && [ "$(jq '.rule_errors | length' "$tmp/out.json")" = 0 ] \
  && ok "the example site rule fires within its reads" || bad "example site rule: $(jq -c .rule_errors "$tmp/out.json")"

finish
