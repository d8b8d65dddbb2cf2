# Three threads run pure-Python CPU work: they take turns on the GIL, so the process uses about
# one core however many the machine has (SOP §4.1).
# expect: gil.contention
# expect@cpu1: none
#   (on one CPU the threads could not run in parallel anyway: the GIL is not what limits them)
# verdict: CPU-bound on one core
# sopctl: --duration 2
import os
import threading
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2


def spin(k, deadline):
    n = 0
    while time.time() < deadline:
        n += sum(i * i for i in range(1000))
        rounds[k] += 1


deadline = time.time() + 60
NTHREADS = 3 * INTENSITY
rounds = [0] * NTHREADS  # each thread's rounds, written by that thread only
threads = [threading.Thread(target=spin, args=(k, deadline), name="worker-%d" % k) for k in range(NTHREADS)]
for t in threads:
    t.start()
# Ready once every thread has had several turns on the GIL (a measured phase, not a sleep): each
# has run 100 rounds, many switch intervals of 5 ms between them.
while min(rounds) < 100 and time.time() < deadline:
    time.sleep(0.01)
print("ready", flush=True)
for t in threads:
    t.join()
