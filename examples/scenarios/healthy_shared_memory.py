# expect: none
# cgroup: memory=640M
# needs: numpy
# sopctl: --duration 3
# timeout: 90
"""Healthy: one multiprocessing.shared_memory buffer (192 MiB) filled by the parent and read by
3 forked workers, each attaching by name. Every process maps all of it, so the sum of their RSS is
4 x 192 MiB = 768 MiB, above the 640 MiB memory limit, while the machine holds one copy: memory
rules must count shared memory once (PSS / shmem), not once per worker.
SOP_SCENARIO_INTENSITY=1|2: 192 or 256 MiB (the limit is sized for both: 4 x RSS above it,
one copy well below). Exits by itself after about 20 s."""
import multiprocessing as mp
import os
import sys
import time
from multiprocessing import shared_memory

import numpy as np

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))
SIZE = (192 if INTENSITY < 2 else 256) << 20
WORKERS = 3


def worker(name, t_end, attached):
    shm = shared_memory.SharedMemory(name=name)
    attached.release()
    a = np.ndarray((SIZE // 4,), dtype=np.float32, buffer=shm.buf)
    while time.time() < t_end:
        float(a[::1024].sum())                    # touches every page: all of it resident here
        time.sleep(0.5)
    del a
    shm.close()


if __name__ == "__main__":
    shm = shared_memory.SharedMemory(create=True, size=SIZE)
    unlinked = False
    try:
        a = np.ndarray((SIZE // 4,), dtype=np.float32, buffer=shm.buf)
        a[:] = 1.0
        t_end = time.time() + 20
        ctx = mp.get_context("fork")
        attached = ctx.Semaphore(0)
        procs = [ctx.Process(target=worker, args=(shm.name, t_end, attached)) for _ in range(WORKERS)]
        for p in procs:
            p.start()
        for _ in procs:
            attached.acquire(timeout=30)
        shm.unlink()                # every process has it mapped: nothing left in /dev/shm after SIGKILL
        unlinked = True
        time.sleep(1.0)
        print("ready", flush=True)
        while time.time() < t_end:
            float(a[::1024].sum())
            time.sleep(0.5)
        for p in procs:
            p.join()
        del a
    finally:
        shm.close()
        if not unlinked:
            shm.unlink()
    sys.exit(0)
