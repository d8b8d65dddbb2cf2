#!/usr/bin/env bash
# bundle.sh — copy sopctl and the shared libraries it loads (as ldd lists them, less the C
# library, libm and the dynamic loader, which every Linux machine has) into one folder, for a
# machine with no package registry (a GPU node, a locked-down container). Libraries sopctl opens
# only when a command needs them (libmicrohttpd for `watch --listen`, NVML from the driver) are
# copied too where this machine has them (libmicrohttpd, libunwind), except NVML,
# which must be the driver's own.
# Usage: scripts/bundle.sh [BUILD_DIR] OUT_DIR
#   then, there: LD_LIBRARY_PATH=OUT_DIR/lib OUT_DIR/sopctl version
set -euo pipefail
build=${2:+$1}
build=${build:-build}
out=${2:-${1:?usage: bundle.sh [BUILD_DIR] OUT_DIR}}
bin=$build/sopctl
[ -x "$bin" ] || { echo "bundle.sh: $bin not found: build first (make build)" >&2; exit 2; }
mkdir -p "$out/lib"
cp "$bin" "$out/sopctl"
copy_deps() {
  ldd "$1" | awk '/=> \// { print $3 }' | while read -r lib; do
    case $(basename "$lib") in
      libc.so.*|libm.so.*|ld-linux*|libpthread.so.*|libdl.so.*|librt.so.*) ;;
      *) cp -L "$lib" "$out/lib/" ;;
    esac
  done
}
copy_deps "$bin"
# Opened at run time by the commands that need them (not listed by ldd).
cache=$(ldconfig -p)
for name in libmicrohttpd.so.12 libunwind-ptrace.so.0 libunwind-x86_64.so.8 libunwind.so.8 libunwind-generic.so; do
  path=$(awk -v n="$name" '$1 == n && /x86-64/ { print $NF; exit }' <<<"$cache")
  if [ -n "$path" ]; then
    cp -L "$path" "$out/lib/"
    copy_deps "$path"
  fi
done
echo "bundle.sh: $out: sopctl and $(ls "$out/lib" | wc -l) libraries ($(du -sh "$out" | cut -f1)); run with LD_LIBRARY_PATH=$out/lib"
