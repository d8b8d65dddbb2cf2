# A deduplicating block store hashes its data one 2 KiB block at a time: per block a few lines of
# Python bookkeeping and one hashlib call that releases and re-takes the GIL (hashlib drops it for
# buffers over 2 KiB). The time is the per-call overhead of tens of thousands of tiny calls a
# second, not the hashing: fewer, larger calls are the fix (SOP §3.5; stdlib, no numpy or torch).
# expect: perrow.tiny_ops
# sopctl: --duration 3
"""Ready once the first 5000 blocks are hashed (measured). Exits after 60 s."""
import hashlib
import os
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
BLOCK = 2064  # just over hashlib's 2 KiB GIL-release size
data = memoryview(os.urandom(BLOCK * 4096 * INTENSITY))


class BlockStore:
    def __init__(self):
        self.index = {}
        self.dups = 0

    def put(self, block):
        digest = hashlib.sha1(block).digest()
        if digest in self.index:
            self.dups += 1
        else:
            self.index[digest] = len(self.index)


deadline = time.time() + 60
hashed = 0
ready = False
while time.time() < deadline:
    store = BlockStore()
    for off in range(0, len(data), BLOCK):
        store.put(data[off:off + BLOCK])
        hashed += 1
        if not ready and hashed >= 5000:
            print("ready", flush=True)
            ready = True
