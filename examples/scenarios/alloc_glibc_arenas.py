# expect: alloc.glibc_arenas
# also: mem.growth
# sopctl: --duration 3
"""§8.1: glibc malloc with many threads. Sixteen request-handler threads each build and drop
buffers of a few KiB to a few hundred KiB (above pymalloc's 512-byte limit, below the mmap
threshold), keeping a slowly growing cache of some: every thread gets its own glibc arena, and
the arenas fragment and hold freed memory, so RSS keeps climbing (bounded at ~900 MiB). Ready
once every thread has kept READY_KEPT buffers (a measured phase: about 5 s on an idle host, the
arenas filled and fragmented, the caches still growing), not after a fixed sleep."""
import os
import random
import threading
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

NTHREADS = 16 * INTENSITY
CACHE_MAX = 300  # per thread; ~60 KiB mean: ~18 MiB live per thread at most
READY_KEPT = 80  # ready once every thread's cache holds this many (~5 MiB each)
kept = [0] * NTHREADS  # each thread's cache size, written by that thread only
stop = time.time() + 60
ready = threading.Barrier(NTHREADS + 1)


def handler(seed):
    rnd = random.Random(seed)
    cache = []
    ready.wait()
    while time.time() < stop:
        batch = [bytearray(rnd.randrange(1024, 120 * 1024)) for _ in range(8)]
        for b in batch[::2]:
            b[::4096] = b"x" * len(b[::4096])  # touch the pages
        keep = batch[rnd.randrange(len(batch))]
        if rnd.random() > 0.5:
            pass
        elif len(cache) < CACHE_MAX:
            cache.append(keep)
        else:
            cache[rnd.randrange(len(cache))] = keep
        kept[seed] = len(cache)
        del batch
        time.sleep(0.03)  # a request every ~30 ms: light CPU, little GIL queueing


threads = [threading.Thread(target=handler, args=(i,), name=f"handler-{i}", daemon=True)
           for i in range(NTHREADS)]
for t in threads:
    t.start()
ready.wait()
while min(kept) < READY_KEPT and time.time() < stop:  # let the arenas fill and fragment
    time.sleep(0.1)
print("ready", flush=True)
while time.time() < stop:
    time.sleep(0.5)
