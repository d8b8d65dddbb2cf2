#!/usr/bin/env python3
# bench_versions.py — `sopctl dump` of the same 32 threads x 50 frames on each CPython the
# machine has (pyenv 3.8-3.13, Debian's 3.11, and Debian sid's 3.13-3.15 in the sid root of
# scripts/sid-root.sh, run through tests/e2e/sid/python3.X), side by side in one run, with the
# ratio of each to sid's 3.13 (the same build toolchain and container path as 3.14/3.15; the
# issue-37 goal: 3.14 within 1.2x of 3.13). Best and median of N dumps (default 30).
# Usage: python3 bench/bench_versions.py [BUILD_DIR] [N]   (root)
import glob
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build")
N = int(sys.argv[2]) if len(sys.argv) > 2 else 30
SOPCTL = os.path.join(BUILD, "sopctl")
SID = os.path.join(HERE, "..", "tests", "e2e", "sid")
ROOT = os.environ.get("SOP_SID_ROOT", "/var/cache/sop/sid-root")


def pythons():
    out = []
    for minor in (13, 14, 15):
        if os.path.exists("%s/usr/bin/python3.%d" % (ROOT, minor)):
            out.append(("sid 3.%d" % minor, os.path.join(SID, "python3.%d" % minor)))
    for p in sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3")):
        v = p.split("/")[4]
        if int(v.split(".")[1]) >= 8:
            out.append(("pyenv " + v, p))
    if os.path.exists("/usr/bin/python3.11"):
        out.append(("debian 3.11", "/usr/bin/python3.11"))
    return out


def one(py):
    p = subprocess.Popen([py, os.path.join(HERE, "py_bench_target.py"), "32", "50"],
                         stdout=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        if not line.startswith("ready"):
            return None
        subprocess.run([SOPCTL, "dump", "--pid", str(p.pid), "--json"], capture_output=True)
        ms, frames = [], 0
        for _ in range(N):
            t0 = time.perf_counter()
            r = subprocess.run([SOPCTL, "dump", "--pid", str(p.pid), "--json"],
                               capture_output=True, text=True)
            ms.append((time.perf_counter() - t0) * 1e3)
            frames = r.stdout.count('"func"')
        return min(ms), statistics.median(ms), frames
    finally:
        p.kill()
        p.wait()


def main():
    rows = []
    for tag, py in pythons():
        r = one(py)
        if r:
            rows.append((tag,) + r)
    base = next((r for r in rows if r[0] == "sid 3.13"), rows[0] if rows else None)
    print("| interpreter | frames read | best ms | median ms | median / %s |" % base[0])
    print("|---|---:|---:|---:|---:|")
    for tag, best, med, frames in rows:
        print("| %s | %d | %.2f | %.2f | %.2f |" % (tag, frames, best, med, med / base[2]))


if __name__ == "__main__":
    main()
