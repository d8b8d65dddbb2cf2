# A result collector waits for the scorer's next batch by spinning on `while len(self.pending) == 0`
# with a deadline check, taking GIL turns from the pure-Python scoring thread (SOP §4). (Written from
# the playbook's words by a second author, blind to the rules.)
# expect: gil.busy_wait
# sopctl: --duration 2
"""
Log-scoring pipeline: ScoringService parses raw access-log lines and scores
them in a background worker thread (pure Python: split, dict lookups, string
hashing).  The ResultCollector "waits" for each batch of scores with

    while len(self.pending) == 0:
        if time.monotonic() > deadline: ...
        continue

i.e. it busy-waits on a shared deque without sleeping or blocking.

WHAT IS WRONG: the collector thread spins on the GIL.  It never releases the
GIL voluntarily, so the CPython switch interval (5 ms) splits the interpreter
between the spinner and the real worker.  A process that should use ~1 core
for scoring shows ~100% CPU on one core, but the worker only gets a fraction
of it; throughput is well below a single-threaded run.
HOW A PERSON SEES IT: top shows ~100% CPU for the process; py-spy dump shows
one thread permanently in ResultCollector.wait_for_batch (the len()/monotonic
loop), while the scoring thread's throughput (printed on stderr) is roughly
halved versus the baseline measured at start-up.
FIX: use threading.Condition / queue.Queue.get() (blocking) instead of polling.
"""
import collections
import hashlib
import os
import random
import sys
import threading
import time

INTENSITY = max(1, int(os.environ.get("SOP_SCENARIO_INTENSITY", "1") or "1"))
RUN_SECONDS = 75
BATCH = 200

_METHODS = ["GET", "POST", "PUT", "DELETE"]
_PATHS = ["/api/v1/predict", "/api/v1/embed", "/health", "/static/app.js",
          "/api/v2/rank", "/login", "/api/v1/feedback"]


def make_lines(n, seed):
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        out.append("%d.%d.%d.%d - - [10/Oct/2024:13:55:%02d] \"%s %s?uid=%d HTTP/1.1\" %d %d \"ua-%d\"" % (
            rnd.randint(1, 254), rnd.randint(0, 255), rnd.randint(0, 255), rnd.randint(1, 254),
            rnd.randint(0, 59), rnd.choice(_METHODS), rnd.choice(_PATHS), rnd.randint(1, 99999),
            rnd.choice([200, 200, 200, 404, 500, 302]), rnd.randint(100, 90000), rnd.randint(1, 40)))
    return out


def score_line(line, weights):
    # deliberately plain Python: this is the "real" work
    parts = line.split(" ")
    ip = parts[0]
    method = parts[4].lstrip('"')
    path, _, query = parts[5].partition("?")
    status = int(parts[7])
    size = int(parts[8])
    s = weights.get(method, 0.0) + weights.get(path, 0.0)
    if status >= 500:
        s += 5.0
    elif status >= 400:
        s += 2.0
    s += (size % 997) / 997.0
    h = 0
    for ch in ip + query:
        h = (h * 31 + ord(ch)) & 0xFFFFFFFF
    return s + (h % 1000) / 1000.0


class ScoringService(threading.Thread):
    def __init__(self, lines, sink, stop_evt, name):
        super().__init__(name=name, daemon=True)
        self.lines = lines
        self.sink = sink
        self.stop_evt = stop_evt
        self.weights = {m: i * 0.5 for i, m in enumerate(_METHODS)}
        self.weights.update({p: len(p) * 0.1 for p in _PATHS})
        self.scored = 0

    def run(self):
        i = 0
        n = len(self.lines)
        while not self.stop_evt.is_set():
            batch = []
            for _ in range(BATCH):
                batch.append(score_line(self.lines[i % n], self.weights))
                i += 1
            self.scored += len(batch)
            self.sink.append(batch)


class ResultCollector:
    def __init__(self):
        self.pending = collections.deque()
        self.total = 0
        self.spins = 0
        self.timeouts = 0
        self.top = 0.0

    def wait_for_batch(self, timeout=2.0):
        deadline = time.monotonic() + timeout
        # BUG: spin until something shows up or the deadline passes
        while len(self.pending) == 0:
            self.spins += 1
            if time.monotonic() > deadline:
                self.timeouts += 1
                return None
            continue
        return self.pending.popleft()

    def run(self, stop_evt):
        while not stop_evt.is_set():
            batch = self.wait_for_batch()
            if batch is None:
                continue
            self.total += len(batch)
            m = max(batch)
            if m > self.top:
                self.top = m


def baseline_rate(lines, seconds=1.0):
    svc = ScoringService(lines, collections.deque(), threading.Event(), "baseline")
    t0 = time.perf_counter()
    i = 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(BATCH):
            score_line(lines[i % len(lines)], svc.weights)
            i += 1
    return i / (time.perf_counter() - t0)


def main():
    lines = make_lines(20000, 7)
    base = baseline_rate(lines)

    stop = threading.Event()
    collector = ResultCollector()
    workers = [ScoringService(lines, collector.pending, stop, "scorer-%d" % k)
               for k in range(INTENSITY)]
    for w in workers:
        w.start()
    ct = threading.Thread(target=collector.run, args=(stop,), name="collector", daemon=True)
    ct.start()
    print("ready", flush=True)

    t0 = time.perf_counter()
    c0 = time.process_time()
    s0 = sum(w.scored for w in workers)
    sp0 = collector.spins
    time.sleep(3.0)
    dt = time.perf_counter() - t0
    rate = (sum(w.scored for w in workers) - s0) / dt
    spin_rate = (collector.spins - sp0) / dt
    cpu = (time.process_time() - c0) / dt * 100
    print("[self-check] scored %.0f lines/s with %d scorer thread(s) + spinning collector "
          "(single-thread baseline %.0f lines/s, ratio %.2f); collector spins %.2fM iters/s; "
          "process CPU %.0f%%" % (rate, INTENSITY, base, rate / base, spin_rate / 1e6, cpu),
          file=sys.stderr, flush=True)

    time.sleep(max(0.0, RUN_SECONDS - 3.0))
    stop.set()
    print("collected %d scores, top=%.3f" % (collector.total, collector.top), file=sys.stderr)


if __name__ == "__main__":
    main()
