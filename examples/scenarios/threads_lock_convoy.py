# Eight request threads share one client behind a threading.Lock, and hold the lock across the
# slow backend call: they queue on the lock (a convoy), so eight threads serve no more requests
# per second than one (SOP §4.2: several threads with the same stack, waiting on a lock).
# expect: threads.lock_contention
# verdict: waiting on a lock at handle_requests
# sopctl: --duration 2
"""Ready once every thread has been through the lock twice (measured, not slept). Exits after 60 s."""
import os
import threading
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
NTHREADS = 8 * INTENSITY


class BackendClient:
    """A client that is not thread-safe: one request at a time."""

    def call(self, payload):
        time.sleep(0.02)  # the backend's latency (a socket round trip)
        return len(payload)


client = BackendClient()
client_lock = threading.Lock()
served = [0] * NTHREADS
deadline = time.time() + 60


def handle_requests(i):
    while time.time() < deadline:
        payload = "request %d" % i
        with client_lock:
            client.call(payload)
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
