#!/usr/bin/env bash
# test_format.sh — every C source and header in the tree is formatted as .clang-format says
# (clang-format 14, Debian 12). Fix with:
#   git ls-files '*.c' '*.h' | xargs clang-format -i
# Needs SOP_SRC; clang-format comes from scripts/install-deps.sh.
set -u
SRC=${SOP_SRC:?set SOP_SRC}
cd "$SRC" || exit 1
if ! command -v clang-format >/dev/null; then
  echo "FAIL clang-format not found (scripts/install-deps.sh installs it)"
  exit 1
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.c' '*.h')
else
  mapfile -t files < <(find cli engine include probes tests examples bench -name '*.[ch]' 2>/dev/null | sort)
fi
[ "${#files[@]}" -gt 50 ] || { echo "FAIL found only ${#files[@]} C files under $SRC"; exit 1; }
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ "${#bad[@]}" -gt 0 ]; then
  echo "FAIL ${#bad[@]} of ${#files[@]} files are not formatted: ${bad[*]}"
  clang-format "${bad[0]}" | diff -u "${bad[0]}" - | head -30
  echo "fix: git ls-files '*.c' '*.h' | xargs clang-format -i"
  exit 1
fi
echo "ok   ${#files[@]} C files formatted per .clang-format"
