#!/usr/bin/env bash
# test_tsan.sh — builds libsop and the embed C tests with -fsanitize=thread in a build tree of
# their own ($SOP_BUILD/tsan, reused between runs) and runs them: engines in parallel threads,
# the watch thread, shared evidence and reports. Any ThreadSanitizer report fails the test.
set -euo pipefail
src=${SOP_SRC:?} build=${SOP_BUILD:?}/tsan
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSOP_SANITIZE=thread \
      -DSOP_TESTS=ON >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target embed_test_threads embed_test_api \
      >"$build.build.log" 2>&1 || { tail -50 "$build.build.log"; exit 1; }
rm -f "$build"/tsan-report.*
status=0
for t in embed_test_threads embed_test_api; do
  log=$build/$t.log
  # ASLR with many random bits breaks TSan's shadow mapping on some kernels: run without it.
  if setarch "$(uname -m)" -R true 2>/dev/null; then run=(setarch "$(uname -m)" -R); else run=(); fi
  # Reports go to files: test_api captures its own stdout/stderr.
  if ! TSAN_OPTIONS="halt_on_error=1 exitcode=66 log_path=$build/tsan-report" \
       "${run[@]}" "$build/tests/$t" >"$log" 2>&1; then
    cat "$build"/tsan-report.* 2>/dev/null || true
    echo "FAIL: $t under ThreadSanitizer"; cat "$log"; status=1; continue
  fi
  if grep -q "ThreadSanitizer" "$log" "$build"/tsan-report.* 2>/dev/null; then
    echo "FAIL: $t: ThreadSanitizer report"; cat "$log" "$build"/tsan-report.*; status=1; continue
  fi
  echo "ok: $t under ThreadSanitizer: $(tail -1 "$log")"
done
exit $status
