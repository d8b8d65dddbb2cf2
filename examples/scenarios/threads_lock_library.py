# A ThreadPoolExecutor of 12 workers updates one shared registry whose method takes an RLock with
# explicit acquire()/release() and hashes a 4 MiB snapshot inside it (hashlib runs without the
# GIL): one worker computes natively while the other eleven sleep on the lock (SOP §4.2), on
# CPython 3.12.
# expect: threads.lock_contention
# python: /root/.pyenv/versions/3.12.1/bin/python3
# sopctl: --duration 2
"""Ready once every worker has been through the lock (measured). Exits after 60 s."""
import hashlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
NWORKERS = 12
deadline = time.time() + 60


class Registry:
    def __init__(self):
        self._lock = threading.RLock()
        self._digests = {}
        self.entered = set()

    def update(self, key, records):
        self._lock.acquire()
        try:
            self.entered.add(threading.get_ident())
            h = hashlib.sha256()
            h.update(records)  # native work (the GIL released), still under the lock
            self._digests[key] = h.hexdigest()
        finally:
            self._lock.release()


registry = Registry()
RECORDS = os.urandom((4 << 20) * INTENSITY)


def worker(n):
    while time.time() < deadline:
        registry.update(n % 64, RECORDS)


pool = ThreadPoolExecutor(max_workers=NWORKERS)
futures = [pool.submit(worker, n) for n in range(NWORKERS)]
while len(registry.entered) < NWORKERS and time.time() < deadline:
    time.sleep(0.01)
print("ready", flush=True)
for f in futures:
    f.result()
