#!/usr/bin/env bash
# sanitize.sh — build the whole tree with AddressSanitizer + UndefinedBehaviorSanitizer
# (Debug, -DSOP_SANITIZE=address,undefined) in BUILD (default build-asan) and run the tests
# of the given ctest labels (default: unit and e2e; embed skips what cannot load a sanitized
# libsop). Leaks are reported by LeakSanitizer at each sopctl exit. $CC picks the compiler
# (CI: clang, so this tier is also the clang build); SOP_WERROR=ON adds -Werror.
# Usage: scripts/sanitize.sh [BUILD] [LABEL_REGEX]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-asan}
labels=${2:-unit|e2e}
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DSOP_SANITIZE=address,undefined \
  -DSOP_WERROR="${SOP_WERROR:-OFF}"
cmake --build "$build" -j "$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$build" && ctest --output-on-failure -j "$(nproc)" -L "$labels"
