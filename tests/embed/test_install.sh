#!/usr/bin/env bash
# test_install.sh — `cmake --install` into a temporary prefix, check the layout (bin, lib,
# include, share: rules and plugins, man page, docs; sop.pc; the CMake package; the Python
# binding), then build tests/embed/consumer against the installed tree twice — with
# `pkg-config --cflags --libs sop` and with find_package(sop) (shared and static) — and run the
# programs, and the installed Python module, against a live process.
set -euo pipefail
src=${SOP_SRC:?} build=${SOP_BUILD:?}
if [[ -n ${SOP_SANITIZE:-} ]]; then
  echo "skipped: a libsop built with -fsanitize=$SOP_SANITIZE is not installable"; exit 77
fi
tmp=$(mktemp -d /tmp/sop-install.XXXXXX)
target_pid=
cleanup() { [[ -n $target_pid ]] && kill "$target_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fails=0 passes=0
check() { # check "what" command...
  local what=$1; shift
  if "$@" >"$tmp/out" 2>&1; then passes=$((passes + 1)); echo "ok   $what"
  else fails=$((fails + 1)); echo "FAIL $what"; sed 's/^/     /' "$tmp/out" | head -40; fi
}

prefix=$tmp/prefix
check "cmake --install" cmake --install "$build" --prefix "$prefix"
for f in bin/sopctl lib/libsop.so lib/libsop.so.0 lib/libsop.a include/sop.h \
         share/sop/rules.lua share/sop/plugins/asyncio.lua share/man/man1/sopctl.1 \
         share/doc/sop/embedding.md lib/pkgconfig/sop.pc lib/cmake/sop/sop-config.cmake \
         lib/cmake/sop/sop-config-version.cmake lib/cmake/sop/sop-targets.cmake; do
  check "installed $f" test -s "$prefix/$f"
done
# The Python package: lib/python3.X/dist-packages (lib/python3/dist-packages under /usr).
pydir=$(dirname "$(dirname "$(ls "$prefix"/lib/python3*/dist-packages/sop/__init__.py | head -1)")")
for f in sop/__init__.py sop/_paths.py; do
  check "installed ${pydir#$prefix/}/$f" test -s "$pydir/$f"
done
check "the man page is a sopctl(1) page" grep -q '^\.TH SOPCTL 1' "$prefix/share/man/man1/sopctl.1"
check "the installed sopctl runs" "$prefix/bin/sopctl" version
check "the installed rules load" "$prefix/bin/sopctl" check "$prefix/share/sop/rules.lua"

# A live target.
/usr/bin/python3 -c 'import time; time.sleep(300)' &
target_pid=$!
sleep 0.3
cat >"$tmp/site.lua" <<'LUA'
disable "gil.contention"
rule { id = "site.installed", section = "2", severity = "warn",
  check = function(ev) return hit { symptom = "s", evidence = fmt("pid %d", ev.pid),
    cause = "c", fix = "f", verify = "v", refs = "https://example.org" } end }
LUA

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
check "pkg-config knows sop 0.1.0" test "$(pkg-config --modversion sop)" = 0.1.0
cc_flags=$(pkg-config --cflags --libs sop)
check "build with pkg-config" cc -std=c11 -Wall -Werror -o "$tmp/consumer_pc" \
  "$src/tests/embed/consumer/consumer.c" $cc_flags -Wl,-rpath,"$(pkg-config --variable=libdir sop)"
check "the pkg-config build links the installed libsop" \
  test "$(realpath "$(ldd "$tmp/consumer_pc" | awk '/libsop/ {print $3}')")" = \
       "$(realpath "$prefix/lib/libsop.so.0")"
check "the pkg-config build diagnoses a live process" \
  bash -c "'$tmp/consumer_pc' $target_pid '$tmp/site.lua' | tee /dev/stderr | grep -q 'pid $target_pid: .*site.installed (warn).*top: pid $target_pid'"

check "configure with find_package(sop)" cmake -S "$src/tests/embed/consumer" -B "$tmp/cmake" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
check "build with sop::sop and sop::sop_static" cmake --build "$tmp/cmake"
for exe in consumer consumer_static; do
  check "find_package build '$exe' diagnoses a live process" \
    bash -c "'$tmp/cmake/$exe' $target_pid '$tmp/site.lua' | grep -q 'pid $target_pid: .*site.installed'"
done
check "the static build does not need libsop.so" \
  bash -c "! ldd '$tmp/cmake/consumer_static' | grep -q libsop"

check "the installed Python module finds the installed library" \
  env -u SOP_LIBRARY PYTHONPATH="$pydir" /usr/bin/python3 -c "
import sop, sys
assert sop.library_path().startswith('$prefix/'), sop.library_path()
r = sop.diagnose($target_pid, duration=0.2)
assert r['target']['pid'] == $target_pid, r['target']
print(sop.library_path(), len(r['findings']), 'findings')
"
echo "$passes passed, $fails failed"
((fails == 0))
