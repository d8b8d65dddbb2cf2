#!/usr/bin/env python3
# bench_watch.py — the cost of `sopctl watch` at its default interval (a 1 s window every 30 s):
# the CPU sopctl itself uses, and how much a CPU-bound pure-Python target slows down.
# Paired design, so that other load on the host cancels out: two identical targets A and B run
# side by side throughout, each timing fixed chunks of work (~0.25 s each, wall and its own CPU
# time). Each round has three phases: A watched, B watched, neither watched. In a phase the
# watched target's median chunk time is divided by the other's, measured over the same seconds;
# the unwatched phases give the same ratio with no watch (A/B), the pair's own noise floor.
# At 30 s the effect is below that floor, so a second part runs the same with a window every 2 s
# (half the time inside a window): what that costs, scaled by the share of time in windows
# (1/30 vs 1/2), bounds the default's cost.
# Usage: python3 bench/bench_watch.py [BUILD_DIR] [ROUNDS] [PHASE_S] [EVERY_S]
#        (defaults: build 4 45 30 — about 12 minutes; docs/metrics.md quotes a run)
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 4
PHASE_S = float(sys.argv[3]) if len(sys.argv) > 3 else 45.0
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
import sys
if len(sys.argv) > 1:
    n = int(sys.argv[1])                 # the twin does the same work per chunk
else:
    n = 20000
    t0 = time.perf_counter()
    leaf(n)
    n = max(1000, int(n * 0.25 / max(time.perf_counter() - t0, 1e-6)))   # ~0.25 s a chunk
print("ready %d" % n, flush=True)
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


class Target:
    """One pure-Python target; a reader thread collects its chunk lines."""

    def __init__(self, n=None):
        self.proc = subprocess.Popen([PY, "-u", "-c", TARGET] + ([str(n)] if n else []),
                                     stdout=subprocess.PIPE, text=True)
        ready = self.proc.stdout.readline().split()
        assert ready[0] == "ready"
        self.n = int(ready[1])
        self.chunks = []  # (end, wall, cpu)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.chunks.append(tuple(map(float, line.split())))

    def within(self, start, stop, i):
        # chunks that began and ended inside [start, stop]
        return [c[i] for c in list(self.chunks) if start < c[0] - c[1] and c[0] <= stop]

    def end(self):
        self.proc.kill()
        self.proc.wait()


def pct(xs):
    return " ".join("%+.2f%%" % (100 * (x - 1)) for x in xs)


def measure(pair, every, rounds, phase_s):
    log = "/tmp/bench_watch.%d.log" % os.getpid()
    watched = []  # (watched index or None, start, stop, sopctl cpu s, windows)
    for r in range(rounds):
        for who in (0, 1, None):
            w = None
            if who is not None:
                w = subprocess.Popen([SOPCTL, "watch", "--pid", str(pair[who].proc.pid),
                                      "--every", every],
                                     stdout=subprocess.DEVNULL, stderr=open(log, "w"))
            start = time.monotonic()
            time.sleep(phase_s)
            stop = time.monotonic()
            cpu, windows = 0.0, 0
            if w:
                cpu = cpu_s(w.pid)
                w.send_signal(signal.SIGTERM)
                w.wait(timeout=120)
                windows = open(log).read().count(" window #")
                os.unlink(log)
            watched.append((who, start, stop, cpu, windows))
            print("--every %s: round %d/%d, %s watched" % (every, r + 1, rounds,
                  "neither" if who is None else "AB"[who]), file=sys.stderr)

    print("sopctl watch --every %s (1 s window, 100 Hz sampling): %d rounds of %.0f s phases "
          "(A watched, B watched, neither); load %s" % (
              every, rounds, phase_s, " ".join("%.1f" % x for x in os.getloadavg())))
    on = [p for p in watched if p[0] is not None]
    cpu, secs, windows = sum(p[3] for p in on), sum(p[2] - p[1] for p in on), sum(p[4] for p in on)
    print("  sopctl CPU: %.3f s over %.0f s = %.3f%% of one CPU; %d windows, %.0f ms CPU each"
          % (cpu, secs, 100 * cpu / secs, windows, 1e3 * cpu / max(windows, 1)))
    result = {}
    for i, what in ((1, "wall"), (2, "cpu")):
        # per round: A/B with A watched, with B watched, with neither; the neither ratio
        # takes out what differs between the twins, leaving two estimates of the watch's effect
        effect, floor = [], []
        for r in range(rounds):
            ratio = {}
            for who, start, stop, _, _ in watched[3 * r:3 * r + 3]:
                a, b = pair[0].within(start, stop, i), pair[1].within(start, stop, i)
                if a and b:
                    ratio[who] = statistics.median(a) / statistics.median(b)
            if None in ratio:
                floor.append(ratio[None])
                if 0 in ratio:
                    effect.append(ratio[0] / ratio[None])
                if 1 in ratio:
                    effect.append(ratio[None] / ratio[1])
        med = statistics.median(effect) - 1 if effect else float("nan")
        base = statistics.median(floor) if floor else float("nan")
        spread = max(abs(x / base - 1) for x in floor) if floor else float("nan")
        result[what] = med
        print("  target %s time per chunk, watched / unwatched twin: %s; median %+.2f%%"
              % (what, pct(effect), 100 * med))
        print("    twins with neither watched, round to round (the noise floor): up to %.2f%%"
              % (100 * spread))
    return result


def main():
    first = Target()
    pair = [first, Target(first.n)]
    try:
        measure(pair, EVERY_S, ROUNDS, PHASE_S)
        amp = measure(pair, "2", ROUNDS, max(PHASE_S / 3, 10))
        print("scaled from --every 2 to --every %s (x %.3f): wall %+.3f%%, cpu %+.3f%%"
              % (EVERY_S, 2 / float(EVERY_S), 100 * amp["wall"] * 2 / float(EVERY_S),
                 100 * amp["cpu"] * 2 / float(EVERY_S)))
    finally:
        for t in pair:
            t.end()


if __name__ == "__main__":
    main()
