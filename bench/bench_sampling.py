#!/usr/bin/env python3
# bench_sampling.py — slowdown of a CPU-bound pure-Python target while `sopctl record` samples
# it at 100 Hz and 1000 Hz, A/B interleaved against unsampled runs in one invocation (rounds of
# off / 100 Hz / off / 1000 Hz), so host load drifts hit both sides alike. Reports medians of
# the target's own wall and CPU time for a fixed amount of work, the ratios, and sopctl's CPU.
# Usage: python3 bench/bench_sampling.py [BUILD_DIR] [ROUNDS]   (aim: <1% at 100 Hz, <5% at 1 kHz)
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
SOPCTL = os.path.join(BUILD, "sopctl")
PY = "/usr/bin/python3"

# Fixed work: ~2 s of pure-Python arithmetic with a few frames of depth, timed inside.
TARGET = r"""
import sys, time
def leaf(n):
    x = 0
    for i in range(n):
        x += i * i % 7
    return x
def mid(n):
    return leaf(n)
def top(k, n):
    return sum(mid(n) for _ in range(k))
print("ready", flush=True)
sys.stdin.readline()                      # go
w0, c0 = time.perf_counter(), time.process_time()
top(900, 40000)
print("%.6f %.6f" % (time.perf_counter() - w0, time.process_time() - c0), flush=True)
"""


def one(rate):
    p = subprocess.Popen([PY, "-u", "-c", TARGET], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().startswith("ready")
    rec = None
    if rate:
        rec = subprocess.Popen([SOPCTL, "record", "--pid", str(p.pid), "--duration", "60",
                                "--rate", str(rate), "-o", "/dev/null"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)  # discovery done before the work starts
    p.stdin.write("go\n")
    p.stdin.flush()
    wall, cpu = map(float, p.stdout.readline().split())
    p.wait()
    info = ""
    if rec:
        info = rec.communicate(timeout=120)[1]
    m = re.search(r"(\d+) samples \((\d+) missed\).* ([\d.]+) ms CPU", info)
    return wall, cpu, m.groups() if m else None


def main():
    res = {0: [], 100: [], 1000: []}
    stats = {100: [], 1000: []}
    paired = {100: [], 1000: []}  # sampled / the unsampled run just before it
    for r in range(ROUNDS):
        prev = None
        for rate in (0, 100, 0, 1000):
            wall, cpu, st = one(rate)
            res[rate].append((wall, cpu))
            if rate and st:
                stats[rate].append(st)
            if rate and prev:
                paired[rate].append((wall / prev[0], cpu / prev[1]))
            prev = (wall, cpu) if not rate else None
        print("round %d/%d done" % (r + 1, ROUNDS), file=sys.stderr)
    base_w = statistics.median(w for w, _ in res[0])
    base_c = statistics.median(c for _, c in res[0])
    print("target: %d rounds, fixed pure-Python work; load %s" % (ROUNDS, os.getloadavg()))
    print("unsampled        wall %.3f s  cpu %.3f s" % (base_w, base_c))
    for rate in (100, 1000):
        w = statistics.median(x for x, _ in res[rate])
        c = statistics.median(x for _, x in res[rate])
        samples = [int(s[0]) for s in stats[rate]]
        missed = [int(s[1]) for s in stats[rate]]
        selfcpu = [float(s[2]) for s in stats[rate]]
        print("sampled %5d Hz wall %.3f s  cpu %.3f s  slowdown wall %+.2f%%  cpu %+.2f%%  "
              "(samples/run %s, missed %s, sopctl CPU %.0f ms/run)"
              % (rate, w, c, 100 * (w / base_w - 1), 100 * (c / base_c - 1),
                 statistics.median(samples) if samples else "?",
                 statistics.median(missed) if missed else "?",
                 statistics.median(selfcpu) if selfcpu else float("nan")))
        if paired[rate]:
            print("                 paired A/B median ratio: wall %+.2f%%  cpu %+.2f%%"
                  % (100 * (statistics.median(x for x, _ in paired[rate]) - 1),
                     100 * (statistics.median(x for _, x in paired[rate]) - 1)))


if __name__ == "__main__":
    main()
