# expect: mem.siblings_full_copy
# cgroup: memory=1200M
"""mem_siblings_full_copy.py — SOP §2.2 ("every rank blows up"): a launcher starts 3 ranks with
multiprocessing 'spawn' (as torchrun / mp.spawn do) and each rank loads the full 200 MiB dataset
instead of its shard. The launcher itself stays small; the copies are the ranks' own memory."""
import ctypes
import multiprocessing as mp
import os
import signal
import tempfile
import time

import numpy as np

# SOP_SCENARIO_INTENSITY not read: three full copies are sized against the 1200 MiB cgroup; more would be OOM-killed.


def rank(r, path, ready):
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the launcher
    data = np.fromfile(path, dtype=np.float32)  # the whole dataset, in every rank
    data += 1.0  # written: private, resident
    ready.put(r)
    t0 = time.time()
    while time.time() - t0 < 60:
        time.sleep(0.5)


def main():
    fd, path = tempfile.mkstemp(prefix="sop-ds-", suffix=".bin")
    try:
        with os.fdopen(fd, "wb") as f:
            np.ones(50 * (1 << 20), dtype=np.float32).tofile(f)  # 200 MiB
        ctx = mp.get_context("spawn")
        ready = ctx.Queue()
        procs = [ctx.Process(target=rank, args=(r, path, ready), daemon=True) for r in range(3)]
        for p in procs:
            p.start()
        for _ in procs:
            ready.get(timeout=60)
        os.unlink(path)  # the page cache copy goes; the ranks' copies stay
        print("ready", flush=True)
        time.sleep(50)
    finally:
        if os.path.exists(path):
            os.unlink(path)


if __name__ == "__main__":
    main()
