#!/usr/bin/env python3
# bench_heap.py — `sopctl heap` on CPython targets holding ~100k and ~1M GC-tracked objects
# (tests/e2e/targets/py_heap_target.py shapes: class instances with a list each, __slots__
# objects, dicts, instances with bytearray attributes): census time, sopctl's peak RSS, the
# pause of --stop, and the target's slowdown during back-to-back non-stopping censuses (a busy
# thread in the target counts loop iterations; its rate during censuses vs before).
# Usage: python3 bench/bench_heap.py [BUILD_DIR] [PYTHON]   (root; run under
# flock /tmp/sop-heavy.lock: other load on the machine shows in the numbers)
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build")
PY = sys.argv[2] if len(sys.argv) > 2 else "/usr/bin/python3"
SOPCTL = os.path.join(BUILD, "sopctl")
TARGET = os.path.join(HERE, "..", "tests", "e2e", "targets", "py_heap_target.py")

# The heap target, plus a thread counting loop iterations ("count" on stdin prints it).
BUSY = """
import runpy, sys, threading
count = [0]
def spin():
    while True:
        count[0] += 1
threading.Thread(target=spin, daemon=True).start()
sys.argv = [sys.argv[1], sys.argv[2]]
stdin_lines = sys.stdin
class Cmd:
    def __iter__(self):
        for line in stdin_lines:
            if line.strip() == "count":
                print(count[0], flush=True)
                continue
            yield line
sys.stdin = Cmd()
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_heap(pid, *extra):
    t0 = time.monotonic()
    p = subprocess.Popen([SOPCTL, "heap", "--pid", str(pid), "--json", "--top", "5"] +
                         list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate()
    wall = time.monotonic() - t0
    return json.loads(out), wall


def peak_rss_kb(pid):
    """sopctl's peak RSS, from a run under /usr/bin/time's sibling: os.wait4."""
    p = subprocess.Popen([SOPCTL, "heap", "--pid", str(pid), "--json"], stdout=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    return ru.ru_maxrss


def main():
    print("target %s; sopctl %s" % (PY, SOPCTL))
    for n in (40000, 420000):
        t = subprocess.Popen([PY, "-c", BUSY, TARGET, str(n)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        try:
            t.stdout.readline()  # the histogram: the heap is built

            def count():
                t.stdin.write("count\n")
                t.stdin.flush()
                return int(t.stdout.readline())

            doc, wall = run_heap(t.pid)
            runs = [run_heap(t.pid) for _ in range(3)]
            best = min(runs, key=lambda r: r[0]["census_ms"])
            rss = peak_rss_kb(t.pid)
            stop_doc, _ = run_heap(t.pid, "--stop")
            # slowdown: loop rate for 1 s before, then during 1 s of back-to-back censuses
            c0, t0 = count(), time.monotonic()
            time.sleep(1.0)
            c1, t1 = count(), time.monotonic()
            ncensus = 0
            while time.monotonic() - t1 < 1.0:
                run_heap(t.pid)
                ncensus += 1
            c2, t2 = count(), time.monotonic()
            base = (c1 - c0) / (t1 - t0)
            during = (c2 - c1) / (t2 - t1)
            print("%8d GC objects (+%d untracked): census %.0f ms (best of 3; sopctl wall %.0f ms), "
                  "sopctl peak RSS %.1f MiB; --stop pause %.0f ms; target loop %.2fM/s before, "
                  "%.2fM/s during %d censuses (%.0f%% slower); complete=%s"
                  % (best[0]["objects"], best[0]["untracked"], best[0]["census_ms"],
                     best[1] * 1e3, rss / 1024, stop_doc.get("pause_ms", -1), base / 1e6,
                     during / 1e6, ncensus, 100 * (1 - during / base) if base else 0,
                     best[0]["complete"]), flush=True)
        finally:
            t.kill()
            t.wait()


if __name__ == "__main__":
    main()
