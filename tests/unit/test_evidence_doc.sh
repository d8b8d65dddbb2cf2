#!/usr/bin/env bash
# test_evidence_doc.sh — docs/evidence.md is generated (`sopctl evidence --doc`) from the schema
# tables (engine/bridge/schema.h) and the template docs/evidence.md.in, and must equal what they
# say now; the tables have no duplicate key; every `reads` entry of the shipped rules that names
# a key of a group with a table (host, cgroup, alloc, proc, threads[], sched, python, ...: an
# array group "x[]" is named "x[]" in entries) is a key of that table, and an entry of one
# segment is a top-level key or a group (a misspelled entry fails, and so does a made-up one in a
# test pack). Entries of other groups are listed when their names do not appear in
# docs/evidence.md (a note, not a failure). Needs SOPCTL, SOP_SRC and jq.
. "$(dirname "$0")/lib.sh"
SOPCTL=${SOPCTL:?set SOPCTL}
SRC=${SOP_SRC:?set SOP_SRC}

"$SOPCTL" evidence --doc >"$tmp/evidence.md" 2>"$tmp/err"
rc=$?
[ "$rc" = 0 ] && ok "evidence --doc: exit 0" || bad "evidence --doc: exit $rc: $(head -c 300 "$tmp/err")"
if diff -u "$SRC/docs/evidence.md" "$tmp/evidence.md" >"$tmp/diff"; then
  ok "docs/evidence.md is what the schema tables and docs/evidence.md.in generate"
else
  bad "docs/evidence.md differs; edit the tables or docs/evidence.md.in, then: build/sopctl evidence --doc > docs/evidence.md"
  head -40 "$tmp/diff"
fi
grep -q '@@KEYS' "$tmp/evidence.md" && bad "a @@KEYS line names no group" || ok "every @@KEYS line names a group"

"$SOPCTL" evidence --doc --json >"$tmp/schema.json" 2>"$tmp/err" && ok "evidence --doc --json: exit 0" \
  || bad "evidence --doc --json: $(head -c 300 "$tmp/err")"
n=$(jq '[.groups[].keys[]] | length' "$tmp/schema.json")
[ "${n:-0}" -ge 100 ] && ok "$n keys in the tables" || bad "keys in the tables: $n"
dups=$(jq -r '[.groups[].keys[].key] | group_by(.) | map(select(length > 1) | .[0]) | .[]' "$tmp/schema.json")
[ -z "$dups" ] && ok "no key twice" || bad "keys listed twice: $dups"
undoc=$(jq -r '.groups[].keys[] | select((.doc // "") == "" and (.type == "object" or .type == "array")) | .key' \
  "$tmp/schema.json")
[ -z "$undoc" ] && ok "every object and array row says what it is" || bad "rows without doc: $undoc"

# reads entries against the tables: segment by segment, `*` in a key matches any name, and an
# entry may stop above a leaf (reading an object or an array as a whole).
unknown_reads() { # $1: a `check --json` description; prints "rule entry" per unknown entry
  jq -r --slurpfile s "$tmp/schema.json" '
    ($s[0].groups | map(.group | sub("\\[\\]$"; ""))) as $groups
    | ($s[0].groups | map(.keys[].key | split("."))) as $keys
    | .rules[] | .id as $id | (.reads // [])[]
    | . as $r | ($r | split(".")) as $e
    | select(($groups | index($e[0] | sub("\\[\\]$"; ""))) != null)
    | select(($e | length) > 1)
    | select([$keys[] | . as $k | select(($k | length) >= ($e | length))
              | select([range(0; $e | length) | select($k[.] == "*" or $k[.] == $e[.])] | length
                       == ($e | length))] | length == 0)
    | "\($id) \($r)"' "$1"
}
# Entries of one segment ("duration_s", "missing[]", "sched"): a top-level key (the group "") or
# a group.
unknown_top() { # $1: a `check --json` description; prints "rule entry" per unknown entry
  jq -r --slurpfile s "$tmp/schema.json" '
    ($s[0].groups | map(.group | sub("\\[\\]$"; ""))
     + [$s[0].groups[] | select(.group == "") | .keys[].key | split(".")[0] | sub("\\[\\]$"; "")])
      as $names
    | .rules[] | .id as $id | (.reads // [])[]
    | select(contains(".") | not) | . as $r
    | select(($names | index($r | sub("\\[\\]$"; ""))) == null)
    | "\($id) \($r)"' "$1"
}
"$SOPCTL" check default --json >"$tmp/desc.json" 2>"$tmp/err" || bad "check default --json: $(head -c 300 "$tmp/err")"
nreads=$(jq '[.rules[].reads[]?] | length' "$tmp/desc.json")
unknown=$(unknown_reads "$tmp/desc.json")
[ -z "$unknown" ] && ok "$nreads reads entries; those of groups with a table name keys of their table" \
  || bad "reads entries naming no key of their group's table: $unknown"
unknown=$(unknown_top "$tmp/desc.json")
[ -z "$unknown" ] && ok "reads entries of one segment name a top-level key or a group" \
  || bad "reads entries naming no top-level key: $unknown"

cat >"$tmp/typo.lua" <<'LUA'
rule { id = "x.typo", section = "2", severity = "warn", title = "t",
  reads = { "host.mem_totl_kb", "host.psi.io.some.avg10", "cgroup.cpu", "proc.rss_kb",
            "threads[].majflt", "threads[].tdi", "siblings[].rss_kb",
            "python.threads[].window.leaves[].caller.code", "sched.procs[].top", "duraton_s",
            "missing[]", "io_files", "effective_cpus" }, uses = {},
  check = function(ev, th) return clear("ok") end }
LUA
"$SOPCTL" check "$tmp/typo.lua" --json >"$tmp/typo.json" 2>"$tmp/err"
[ "$(unknown_reads "$tmp/typo.json" | tr '\n' ' ')" = "x.typo host.mem_totl_kb x.typo threads[].tdi " ] && ok "a misspelled reads entry is caught, a wildcard row matches" \
  || bad "typo check: '$(unknown_reads "$tmp/typo.json")' $(head -c 300 "$tmp/err")"
[ "$(unknown_top "$tmp/typo.json")" = "x.typo duraton_s" ] && ok "a misspelled top-level reads entry is caught" \
  || bad "top-level typo check: '$(unknown_top "$tmp/typo.json")'"

# Groups without a table: every name of the entry should at least appear in the page.
grep -ow '[A-Za-z_0-9]*' "$SRC/docs/evidence.md" | sort -u >"$tmp/words"
notes=$(jq -r --slurpfile s "$tmp/schema.json" '($s[0].groups | map(.group | sub("\\[\\]$"; ""))) as $g | .rules[] | .id as $id
  | (.reads // [])[] | . as $r | ($r | split(".")[0] | sub("\\[\\]$"; "")) as $h
  | select(($g | index($h)) == null) | "\($id) \($r)"' "$tmp/desc.json" |
  awk 'NR == FNR { w[$1] = 1; next }
       { n = split($2, seg, "."); for (i = 1; i <= n; i++) { s = seg[i]; sub(/\[\]$/, "", s)
         if (!(s in w)) { print; break } } }' "$tmp/words" -)
[ -n "$notes" ] && echo "note: reads entries of groups without a table whose names docs/evidence.md does not show: $notes"

finish
