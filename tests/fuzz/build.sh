#!/usr/bin/env bash
# build.sh — build the libFuzzer targets of tests/fuzz/ in a clang tree of their own
# (OUT, default $SOP_BUILD/fuzz): the library with -fsanitize=fuzzer-no-link,address,undefined,
# each fuzz_*.c linked with -fsanitize=fuzzer. Without clang or libFuzzer it leaves OUT.skipped
# (run.sh then exits 77: skipped) and exits 0.
# Usage: build.sh [OUT]   (SOP_SRC: the source tree; default: this script's ../..)
set -euo pipefail
src=${SOP_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
out=${1:-${SOP_BUILD:-$src/build}/fuzz}
cc=${SOP_FUZZ_CC:-}
if [[ -z $cc ]]; then
  for c in clang clang-16 clang-15 clang-14; do
    command -v "$c" >/dev/null && { cc=$c; break; }
  done
fi
skip() { echo "fuzz: $*; skipped"; mkdir -p "$(dirname "$out")"; echo "$*" >"$out.skipped"; exit 0; }
rm -f "$out.skipped"
[[ -n $cc ]] || skip "no clang (scripts/install-deps.sh installs it)"
# libFuzzer present? (Debian: libclang-rt-NN-dev)
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>"$probe/err"; then
  cat "$probe/err"; skip "$cc cannot link libFuzzer (Debian: libclang-rt-14-dev)"
fi
mkdir -p "$out"
targets=()
for f in "$src"/tests/fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
cmake -S "$src" -B "$out" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSOP_TESTS=OFF -DSOP_FUZZ=ON -DSOP_SANITIZE=fuzzer-no-link,address,undefined \
  -DCMAKE_C_FLAGS="-fno-sanitize-recover=undefined" >"$out.configure.log" 2>&1 ||
  { cat "$out.configure.log"; exit 1; }
cmake --build "$out" -j "$(nproc)" --target "${targets[@]}"
