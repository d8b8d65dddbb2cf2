# Eight request threads wait on their backend outside any lock and take a shared lock only to
# count the result: the lock is held for microseconds, nobody queues on it (the healthy side of
# threads.lock_contention).
# expect: none
# sopctl: --duration 2
"""Ready once every thread has counted twice (measured). Exits after 60 s."""
import os
import threading
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
NTHREADS = 8 * INTENSITY

stats_lock = threading.Lock()
served = [0] * NTHREADS
totals = {"bytes": 0}
deadline = time.time() + 60


def handle_requests(i):
    while time.time() < deadline:
        time.sleep(0.02)  # the backend call, outside the lock
        with stats_lock:
            totals["bytes"] += 100 + i
            served[i] += 1


threads = [threading.Thread(target=handle_requests, args=(i,), name="req-%d" % i, daemon=True)
           for i in range(NTHREADS)]
for t in threads:
    t.start()
while min(served) < 2 and time.time() < deadline:
    time.sleep(0.01)
print("ready", flush=True)
for t in threads:
    t.join()
