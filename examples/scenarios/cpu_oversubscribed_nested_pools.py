# Process pool x thread pool: one worker process per CPU, each running a ThreadPoolExecutor of
# 4 threads (8 at SOP_SCENARIO_INTENSITY=2) that hash buffers with the GIL released. No thread
# is busy (each gets 1/4 of a core or less), yet 4x as many threads want a CPU as there are
# (SOP §4.4, §8.5: N workers x M threads > cores). No BLAS/OpenMP pool runs.
# expect: cpu.oversubscribed
# sopctl: --duration 2
import concurrent.futures as cf
import hashlib
import multiprocessing as mp
import os
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1") or 1)
THREADS = 4 * INTENSITY


def hash_loop(deadline):
    buf = b"x" * (4 << 20)  # sha256 releases the GIL over buffers > 2 KiB
    while time.time() < deadline:
        hashlib.sha256(buf).digest()


def worker(deadline, started):
    with cf.ThreadPoolExecutor(max_workers=THREADS) as pool:
        futs = [pool.submit(hash_loop, deadline) for _ in range(THREADS)]
        started.put(os.getpid())
        for f in futs:
            f.result()


if __name__ == "__main__":
    deadline = time.time() + 60
    ncpu = len(os.sched_getaffinity(0))
    started = mp.Queue()
    procs = [mp.Process(target=worker, args=(deadline, started)) for _ in range(ncpu)]
    for p in procs:
        p.start()
    for _ in procs:
        started.get(timeout=30)
    time.sleep(0.5)
    print("ready", flush=True)
    for p in procs:
        p.join()
