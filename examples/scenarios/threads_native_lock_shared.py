# A log shipper: six worker threads (nine at intensity 2) compress batches of records into ONE
# shared zlib stream (zlib.compressobj) for the archive. zlib releases the GIL while it deflates but takes the
# stream object's own (native) lock, so one worker compresses while the others sleep in futex on
# it (SOP §4.2: several threads with the same stack, waiting on a lock). The fix is a stream per
# thread (threading.local) joined as archive segments; "use processes" for the GIL would not help.
# expect: threads.lock_contention
# sopctl: --duration 3
"""Ready once every worker has compressed a batch. Exits after 60 s. Self-check on stderr: the same
batches through one shared stream and through one stream per thread, two threads each, timed
before the workers start (measured on the 2-CPU machine: shared 367 batches/s, one per thread
650/s)."""
import os
import sys
import threading
import time
import zlib

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
NWORKERS = 3 + 3 * INTENSITY
BATCH = (os.urandom(1 << 14) + b"GET /v1/items 200 12ms\n" * 1400) * 8   # ~0.4 MiB of records
deadline = time.time() + 60
archive = zlib.compressobj(6)      # shared by every worker: the bug
done = [0] * NWORKERS


def rate(streams, per=10):
    """Batches/s through these streams, one thread each."""
    def run(z):
        for _ in range(per):
            z.compress(BATCH)
    t0 = time.perf_counter()
    ts = [threading.Thread(target=run, args=(z,)) for z in streams]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return len(streams) * per / (time.perf_counter() - t0)


def worker(i):
    while time.time() < deadline:
        archive.compress(BATCH)        # the stream's own lock: one deflate at a time
        done[i] += 1


print(f"[self-check] one shared stream {rate([archive, archive]):.0f} batches/s, one per thread "
      f"{rate([zlib.compressobj(6), zlib.compressobj(6)]):.0f} batches/s (2 threads)",
      file=sys.stderr, flush=True)
for i in range(NWORKERS):
    threading.Thread(target=worker, args=(i,), daemon=True).start()
while min(done) == 0:
    time.sleep(0.05)
print("ready", flush=True)
while time.time() < deadline:
    time.sleep(0.5)
