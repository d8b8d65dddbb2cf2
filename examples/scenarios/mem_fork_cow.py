# expect: mem.fork_cow
# cgroup: memory=1200M
"""mem_fork_cow.py — SOP §2.4: the parent builds a table of ~200 MiB of small Python objects and
forks 3 workers (multiprocessing 'fork') that read it: every read writes a refcount, so each
worker ends up with a private copy of the pages it touched. The workers then read it every few
seconds and otherwise sleep (no CPU pressure)."""
import ctypes
import multiprocessing as mp
import os
import signal
import time

# SOP_SCENARIO_INTENSITY not read: the table is sized against the 1200 MiB cgroup (parent + 3 copied workers); more would be OOM-killed.

TABLE = []


def worker(ready):
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the parent
    total = 0
    while True:
        for a, b, c in TABLE:  # touches every tuple, int, str and float: refcount writes
            total += a
        ready.put(os.getpid())
        time.sleep(5)


def main():
    rows = 200 * 1024 * 1024 // 190  # ~190 bytes per (int, str, float) row on 3.11
    TABLE.extend((i, str(i), float(i)) for i in range(1000, 1000 + rows))
    ctx = mp.get_context("fork")
    ready = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(ready,), daemon=True) for _ in range(3)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=60)
    print("ready", flush=True)
    t0 = time.time()
    while time.time() - t0 < 50:
        while not ready.empty():
            ready.get()
        time.sleep(0.5)


if __name__ == "__main__":
    main()
