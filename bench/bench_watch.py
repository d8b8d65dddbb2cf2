#!/usr/bin/env python3
# bench_watch.py — the cost of `sopctl watch` at its default interval (a 1 s window every 30 s):
# the CPU sopctl itself uses, and how much a CPU-bound pure-Python target slows down. One target
# runs throughout; phases without and with a watch alternate (off / on / off / on ...), so host
# load drifts hit both sides alike; the target times fixed chunks of work (~0.25 s each, wall
# and its own CPU time) and each watched phase is compared with the unwatched phase before it.
# At 30 s the effect is below what a shared machine's noise lets one see, so a second part runs
# the same with a window every 2 s (half the time inside a window): what that costs, scaled by
# the share of time in windows (1/30 vs 1/2), bounds the default's cost.
# Usage: python3 bench/bench_watch.py [BUILD_DIR] [ROUNDS] [PHASE_S] [EVERY_S]
#        (defaults: build 4 60 30 — about 10 minutes; docs/metrics.md quotes a run)
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 4
PHASE_S = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
EVERY_S = sys.argv[4] if len(sys.argv) > 4 else "30"
SOPCTL = os.path.join(BUILD, "sopctl")
PY = "/usr/bin/python3"
TICK = os.sysconf("SC_CLK_TCK")

# Fixed chunks of pure-Python work, each timed; one line per chunk: "<monotonic end> <wall> <cpu>".
TARGET = r"""
import time
def leaf(n):
    x = 0
    for i in range(n):
        x += i * i % 7
    return x
n = 20000
t0 = time.perf_counter()
leaf(n)
n = max(1000, int(n * 0.25 / max(time.perf_counter() - t0, 1e-6)))   # ~0.25 s a chunk
print("ready", flush=True)
while True:
    t0, c0 = time.perf_counter(), time.process_time()
    leaf(n)
    t1, c1 = time.perf_counter(), time.process_time()
    print("%.6f %.6f %.6f" % (time.monotonic(), t1 - t0, c1 - c0), flush=True)
"""


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def measure(target, every, rounds, phase_s):
    chunks = []  # (end, wall, cpu)
    phases = []  # (kind, start, end, sopctl cpu s, windows)
    log = "/tmp/bench_watch.%d.log" % os.getpid()
    for r in range(rounds):
        for kind in ("off", "on"):
            w = None
            if kind == "on":
                w = subprocess.Popen([SOPCTL, "watch", "--pid", str(target.pid), "--every", every],
                                     stdout=subprocess.DEVNULL, stderr=open(log, "w"))
            start = time.monotonic()
            while time.monotonic() - start < phase_s:
                chunks.append(tuple(map(float, target.stdout.readline().split())))
            stop = time.monotonic()
            cpu, windows = 0.0, 0
            if w:
                cpu = cpu_s(w.pid)
                w.send_signal(signal.SIGTERM)
                w.wait(timeout=120)
                windows = open(log).read().count(" window #")
                os.unlink(log)
            phases.append((kind, start, stop, cpu, windows))
            print("--every %s: round %d/%d %s done" % (every, r + 1, rounds, kind), file=sys.stderr)

    def of(p, i):
        return [c[i] for c in chunks if p[1] < c[0] - c[1] and c[0] <= p[2]]

    print("sopctl watch --every %s (1 s window, 100 Hz sampling): %d rounds of %.0f s off / "
          "%.0f s on; load %s" % (every, rounds, phase_s, phase_s,
                                  " ".join("%.1f" % x for x in os.getloadavg())))
    cpu = sum(p[3] for p in phases if p[0] == "on")
    secs = sum(p[2] - p[1] for p in phases if p[0] == "on")
    windows = sum(p[4] for p in phases if p[0] == "on")
    print("  sopctl CPU: %.3f s over %.0f s = %.3f%% of one CPU; %d windows, %.0f ms CPU each"
          % (cpu, secs, 100 * cpu / secs, windows, 1e3 * cpu / max(windows, 1)))
    offs = [p for p in phases if p[0] == "off"]
    ons = [p for p in phases if p[0] == "on"]
    result = {}
    for i, what in ((1, "wall"), (2, "cpu")):
        ratios = [statistics.median(of(b, i)) / statistics.median(of(a, i))
                  for a, b in zip(offs, ons) if of(a, i) and of(b, i)]
        med = statistics.median(ratios) - 1 if ratios else float("nan")
        result[what] = med
        print("  target %s time per chunk, watched / unwatched phase before it: %s; median %+.2f%%"
              % (what, " ".join("%+.2f%%" % (100 * (r - 1)) for r in ratios), 100 * med))
    return result


def main():
    target = subprocess.Popen([PY, "-u", "-c", TARGET], stdout=subprocess.PIPE, text=True)
    assert target.stdout.readline().startswith("ready")
    try:
        measure(target, EVERY_S, ROUNDS, PHASE_S)
        amp = measure(target, "2", ROUNDS, max(PHASE_S / 3, 10))
        print("scaled from --every 2 to --every %s (x %.3f): wall %+.3f%%, cpu %+.3f%%"
              % (EVERY_S, 2 / float(EVERY_S), 100 * amp["wall"] * 2 / float(EVERY_S),
                 100 * amp["cpu"] * 2 / float(EVERY_S)))
    finally:
        target.kill()
        target.wait()


if __name__ == "__main__":
    main()
