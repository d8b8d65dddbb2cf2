# Healthy: one thread runs a real pure-Python `while` loop (a Collatz search with a memo table) and
# the main thread joins it: CPU-bound on one core, no busy-wait (SOP §4/§9). (Written blind.)
# expect: none
# verdict: CPU-bound on one core
# sopctl: --duration 2
"""
HEALTHY CONTROL -- nothing is wrong here.

Offline analysis job: a background thread searches for the starting value
with the longest Collatz ("3n+1") trajectory below a limit, using a small
memo table.  It is a plain CPU-bound pure-Python loop (`while steps < ...`,
arithmetic in the body); the main thread just waits for it with join().
Expected picture: ~100% of one core, one busy thread whose stack moves through
collatz_len/search, main thread blocked in join() (lock acquire).  No thread
polls a flag; no GIL contention; throughput on stderr matches a plain
single-threaded run.
"""
import os
import sys
import threading
import time

INTENSITY = max(1, int(os.environ.get("SOP_SCENARIO_INTENSITY", "1") or "1"))
LIMIT = 200_000_000 * INTENSITY
MAX_SECONDS = 75
MEMO_SIZE = 1 << 20


class CollatzSearch(threading.Thread):
    def __init__(self, limit, max_seconds):
        super().__init__(name="collatz-search")
        self.limit = limit
        self.max_seconds = max_seconds
        self.memo = [0] * MEMO_SIZE
        self.memo[1] = 1
        self.checked = 0
        self.best = (1, 1)

    def collatz_len(self, n):
        memo = self.memo
        start = n
        steps = 0
        while n >= MEMO_SIZE or memo[n] == 0:
            if n & 1:
                n = 3 * n + 1
            else:
                n >>= 1
            steps += 1
        total = steps + memo[n]
        if start < MEMO_SIZE:
            memo[start] = total
        return total

    def run(self):
        t_end = time.monotonic() + self.max_seconds
        n = 2
        while n < self.limit:
            chunk_end = min(n + 50_000, self.limit)
            best_len, best_n = self.best
            while n < chunk_end:
                length = self.collatz_len(n)
                if length > best_len:
                    best_len, best_n = length, n
                n += 1
            self.best = (best_len, best_n)
            self.checked = n - 2
            if time.monotonic() > t_end:   # job time budget, checked per chunk
                break


def main():
    job = CollatzSearch(LIMIT, MAX_SECONDS)
    job.start()
    print("ready", flush=True)

    # one-off self-measurement from a short-lived timer (main thread stays in join())
    c0, t0, cpu0 = job.checked, time.perf_counter(), time.process_time()

    def report():
        dt = time.perf_counter() - t0
        print("[self-check] collatz search: %.0f numbers/s, best so far n=%d (len %d); "
              "process CPU %.0f%% over %.1fs" % (
                  (job.checked - c0) / dt, job.best[1], job.best[0],
                  100 * (time.process_time() - cpu0) / dt, dt), file=sys.stderr, flush=True)

    timer = threading.Timer(3.0, report)
    timer.start()

    job.join()
    print("longest trajectory below %d: n=%d, %d steps (checked %d)" % (
        job.limit, job.best[1], job.best[0], job.checked), file=sys.stderr)


if __name__ == "__main__":
    main()
