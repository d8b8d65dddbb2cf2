# A server loop starts a new threading.Thread for every request and keeps 8 in flight; each
# request is pure-Python CPU work (about 55 ms alone), so the 8 take turns on the GIL and each
# lives about 0.45 s: no thread lives long enough to look busy, yet at every instant several want
# the GIL and the process runs on one core (SOP §4.1).
# expect: gil.contention
# expect@cpu1: none
#   (on one CPU the threads could not run in parallel anyway: the GIL is not what limits them)
# also@cpu1: cpu.oversubscribed
#   (on one CPU the request threads also queue for the CPU itself, as in gil_contention.py)
# sopctl: --duration 2
"""Ready once as many requests have finished as are in flight (the threads have turned over,
measured). Exits after 60 s."""
import os
import threading
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
IN_FLIGHT = 8 * INTENSITY
done = [0]
done_lock = threading.Lock()


def handle_request(n):
    acc = 0
    for i in range(1000000):  # the request's pure-Python work
        acc += (i * n) % 7
    with done_lock:
        done[0] += 1


deadline = time.time() + 60
ready = False
n = 0
while time.time() < deadline:
    if not ready and done[0] >= IN_FLIGHT:
        print("ready", flush=True)
        ready = True
    if threading.active_count() - 1 < IN_FLIGHT:
        n += 1
        threading.Thread(target=handle_request, args=(n,), name="request-%d" % n).start()
        continue
    time.sleep(0.002)
