# A document pipeline on a concurrent.futures.ThreadPoolExecutor: each document task submits its
# chunk tasks to the same pool and blocks on their results. With more documents in flight than
# workers, every worker holds a document task waiting on chunks that sit in the queue behind
# it: nothing runs again (SOP §9: is it making progress? every thread waits on another).
# expect: progress.hang
# verdict: stalled
# sopctl: --duration 2
"""Ready once every worker has been blocked for a while (measured: no chunk finished for 0.5 s)."""
import concurrent.futures as cf
import os
import threading
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
WORKERS = 4 * INTENSITY
pool = cf.ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="docs")
done = [0]
done_lock = threading.Lock()


def embed(chunk):
    with done_lock:
        done[0] += 1
    return len(chunk)


def document(text):
    chunks = [text[i:i + 32] for i in range(0, len(text), 32)]
    futures = [pool.submit(embed, c) for c in chunks]  # the same pool
    return sum(f.result() for f in futures)            # a worker waits on the queue behind it


docs = [pool.submit(document, "lorem ipsum dolor sit amet " * 8) for _ in range(WORKERS * 3)]
last, still = -1, time.time()
while time.time() - still < 0.5:
    time.sleep(0.05)
    with done_lock:
        if done[0] != last:
            last, still = done[0], time.time()
print("ready", flush=True)
print(sum(d.result() for d in docs))  # the main thread joins the stall
