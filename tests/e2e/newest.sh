#!/usr/bin/env bash
# newest.sh CMD... — run an end-to-end test on the newest CPython releases: build (once, cached)
# the Debian sid root with python3.13-3.15 (scripts/sid-root.sh), then run CMD with
# SOP_PYTHONS=sid, so the test's targets run on sid's interpreters (tests/e2e/sid/python3.X).
# When the root cannot be built here (no root, no mirror), say why and exit 77 (skipped).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if ! root=$("$here/../../scripts/sid-root.sh"); then
  echo "skip: the Debian sid root could not be built (the reason is above); the newest tier needs it"
  exit 77
fi
export SOP_SID_ROOT="$root" SOP_PYTHONS=sid
exec "$@"
