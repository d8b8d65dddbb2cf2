# A Pool(2).map loop whose every task carries a whole 16 MiB float32 array for a sum: the workers
# spend their time receiving and unpickling (SOP §8.4, §2.4). (Written from the playbook's words
# by a second author, blind to the rules.)
# expect: pool.shipping
# sopctl: --duration 2
# needs: numpy
"""
Embedding-shard validation job.  The driver keeps a handful of float32
"embedding shards" (16 MiB each) in memory and, every round, fans them out to
a multiprocessing.Pool to compute a checksum/norm per shard:

    pool.map(shard_stats, shards)

WHAT IS WRONG: each task carries a whole 16 MiB ndarray as its argument, so
the parent pickles it, pushes it through the pool's pipe, and the worker
unpickles it -- only to do ~1 ms of numpy (a sum and a few element reads).
Almost all wall time is serialization + pipe copying, not computation.
HOW A PERSON SEES IT: the parent's pool task-handler thread and the workers
show stacks in pickle / connection send_bytes / recv_bytes / _recv; worker
CPU is spent in loads() and read(), not in numpy; the self-check on stderr
shows worker compute is a few % of wall time and tens of MB/s go through the
pipes.
FIX: put the shards in multiprocessing.shared_memory (or np.save them and
np.load(mmap_mode="r") in the worker) and send only names / index ranges.
"""
import multiprocessing as mp
import os
import pickle
import sys
import time

import numpy as np

INTENSITY = max(1, int(os.environ.get("SOP_SCENARIO_INTENSITY", "1") or "1"))
SHARD_MB = 16
N_SHARDS = 6 * INTENSITY
RUN_SECONDS = 75


def shard_stats(shard):
    t0 = time.perf_counter()
    s = float(shard.sum(dtype=np.float64))
    head = float(shard[0, 0])
    out = (s, head, shard.shape[0])
    return out, time.perf_counter() - t0


def main():
    rng = np.random.default_rng(0)
    rows = SHARD_MB * (1 << 20) // (4 * 256)
    shards = [rng.standard_normal((rows, 256), dtype=np.float32) for _ in range(N_SHARDS)]
    shard_bytes = shards[0].nbytes

    # how long does just pickling one shard take, in this process?
    t0 = time.perf_counter()
    for _ in range(3):
        pickle.dumps(shards[0], protocol=pickle.HIGHEST_PROTOCOL)
    dumps_s = (time.perf_counter() - t0) / 3

    ctx = mp.get_context("fork")
    with ctx.Pool(processes=2) as pool:
        pool.map(shard_stats, shards[:2])  # warm up
        print("ready", flush=True)
        start = time.perf_counter()
        reported = False
        win_t0 = start
        win_tasks = 0
        win_compute = 0.0
        win_map = 0.0
        rounds = 0
        while time.perf_counter() - start < RUN_SECONDS:
            m0 = time.perf_counter()
            res = pool.map(shard_stats, shards, chunksize=1)
            win_map += time.perf_counter() - m0
            rounds += 1
            win_tasks += len(res)
            win_compute += sum(dt for _, dt in res)
            now = time.perf_counter()
            if not reported and now - win_t0 >= 3.0:
                wall = now - win_t0
                mb = win_tasks * shard_bytes / 2**20
                print("[self-check] %d shards x %d MiB: %.1f tasks/s, %.0f MiB/s shipped to workers; "
                      "worker numpy time = %.1f%% of pool capacity (2 procs x %.1fs); "
                      "pickle.dumps of one shard alone = %.1f ms vs %.2f ms compute per task" % (
                          N_SHARDS, SHARD_MB, win_tasks / wall, mb / wall,
                          100 * win_compute / (2 * wall), wall, dumps_s * 1e3,
                          1e3 * win_compute / win_tasks), file=sys.stderr, flush=True)
                reported = True
        print("done: %d rounds" % rounds, file=sys.stderr)


if __name__ == "__main__":
    main()
