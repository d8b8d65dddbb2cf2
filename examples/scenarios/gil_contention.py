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


def spin(deadline):
    n = 0
    while time.time() < deadline:
        n += sum(i * i for i in range(1000))


deadline = time.time() + 60
threads = [threading.Thread(target=spin, args=(deadline,), name="worker-%d" % i) for i in range(3 * INTENSITY)]
for t in threads:
    t.start()
time.sleep(1.0)
print("ready", flush=True)
for t in threads:
    t.join()
