# A request handler starts a thread per request to fetch from a backend and waits for it with a
# timeout; the fetch thread blocks on a reply queue nobody feeds, and the handler gives up on it
# without ending it. Every request leaves one blocked thread behind: the thread count climbs
# steadily until the task limit (SOP §9: is something piling up?).
# expect: progress.threads_grow
# verdict: waiting while
# sopctl: --duration 2
"""Ready once 20 threads have leaked (measured). Stops leaking at 2000 threads; exits after 90 s."""
import os
import queue
import threading
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
RATE = 15 * INTENSITY  # requests per second
replies = queue.Queue()  # the backend that should fill it was never started


def fetch(request_id, out):
    out.append(replies.get())  # blocks forever


def handle(request_id):
    out = []
    t = threading.Thread(target=fetch, args=(request_id, out), daemon=True)
    t.start()
    t.join(timeout=0.001)  # gives up at once, leaves the thread blocked
    return out


start = time.time()
n = 0
while time.time() - start < 90:
    if threading.active_count() < 2000:
        handle(n)
        n += 1
    if n == 20:
        print("ready", flush=True)
    time.sleep(1.0 / RATE)
