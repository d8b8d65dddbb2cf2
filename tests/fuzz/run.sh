#!/usr/bin/env bash
# run.sh — run one libFuzzer target of tests/fuzz/ for a bounded time: first every committed
# input of corpus/<name>/ (seeds and the regression inputs of past crashes) once, then
# fuzzing from them in a scratch copy (the committed corpus is never written) for SECONDS.
# Fails on any crash, hang (-timeout), leak or RSS above the limit; the crashing input is
# left in $SOP_BUILD/fuzz-artifacts/<name>/ to be added to corpus/<name>/ once fixed.
# Usage: run.sh NAME [SECONDS]   (exits 77 when the fuzz tree could not be built)
set -euo pipefail
name=$1
secs=${2:-${SOP_FUZZ_SECONDS:-20}}
src=${SOP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${SOP_BUILD:-$src/build}
bin=$build/fuzz/$name
if [[ ! -x $bin ]]; then
  [[ -f $build/fuzz.skipped ]] && { echo "fuzz: not built ($(cat "$build/fuzz.skipped"))"; exit 77; }
  echo "fuzz: $bin missing (fuzz_build failed?)"; exit 1
fi
corpus=$src/tests/fuzz/corpus/${name#fuzz_}
art=$build/fuzz-artifacts/$name
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$art"
opts=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -detect_leaks=1
      -artifact_prefix="$art/" -print_final_stats=1)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# 1. regressions and seeds, each once
"$bin" "${opts[@]}" -runs=0 "$corpus"
# 2. bounded fuzzing (a scratch copy: new inputs go to $work)
cp -r "$corpus" "$work/corpus"
"$bin" "${opts[@]}" -max_total_time="$secs" -max_len=65536 "$work/corpus"
