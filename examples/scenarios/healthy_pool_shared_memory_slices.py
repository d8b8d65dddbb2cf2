# Healthy: the same pool shape done right: a matrix in multiprocessing.shared_memory, workers
# attached once in the initializer, tasks of (lo, hi) doing ms of numpy each (SOP §2.4). (Written
# blind to the rules.)
# expect: none
# also@cpu1: cpu.oversubscribed
# sopctl: --duration 2
# needs: numpy
"""
HEALTHY CONTROL -- this is the right way to fan a big array out to a pool.

Feature-statistics job over a large float32 matrix (128 MiB x intensity).
The matrix lives in multiprocessing.shared_memory; each pool worker attaches
to it once (pool initializer) and then only receives (row_start, row_stop)
tuples -- a few dozen bytes per task.  Each task does real numpy work on its
slice (per-column moments + a histogram of the row norms, a few ms), so the
workers spend their time computing, not unpickling.
Expected picture: 2 worker processes near 100% CPU each, stacks inside numpy
(_var / histogram / einsum), parent mostly idle waiting in pool.map; tiny
pickled payloads.  Shared segment is unlinked on exit (also on SIGTERM).
"""
import multiprocessing as mp
import os
import pickle
import signal
import sys
import time
from multiprocessing import shared_memory

import numpy as np

INTENSITY = max(1, int(os.environ.get("SOP_SCENARIO_INTENSITY", "1") or "1"))
COLS = 256
ROWS = (128 << 20) * INTENSITY // (4 * COLS)
ROWS_PER_TASK = 8192          # 8 MiB view per task, nothing copied
RUN_SECONDS = 75

_matrix = None
_shm = None


def _attach(name, shape):
    global _matrix, _shm
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _shm = shared_memory.SharedMemory(name=name)
    _matrix = np.ndarray(shape, dtype=np.float32, buffer=_shm.buf)


def block_stats(bounds):
    lo, hi = bounds
    t0 = time.perf_counter()
    x = _matrix[lo:hi]
    mean = x.mean(axis=0, dtype=np.float64)
    var = x.var(axis=0, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    hist, _ = np.histogram(norms, bins=64, range=(0.0, 32.0))
    out = (float(mean.mean()), float(var.mean()), hist.argmax())
    return out, time.perf_counter() - t0


def main():
    shm = shared_memory.SharedMemory(create=True, size=ROWS * COLS * 4)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        mat = np.ndarray((ROWS, COLS), dtype=np.float32, buffer=shm.buf)
        rng = np.random.default_rng(1)
        step = 1 << 16
        for lo in range(0, ROWS, step):
            mat[lo:lo + step] = rng.standard_normal((min(step, ROWS - lo), COLS), dtype=np.float32)

        tasks = [(lo, min(lo + ROWS_PER_TASK, ROWS)) for lo in range(0, ROWS, ROWS_PER_TASK)]
        arg_bytes = len(pickle.dumps(tasks[0], protocol=pickle.HIGHEST_PROTOCOL))

        with mp.get_context("fork").Pool(2, initializer=_attach, initargs=(shm.name, mat.shape)) as pool:
            pool.map(block_stats, tasks[:2])
            print("ready", flush=True)
            start = win_t0 = time.perf_counter()
            win_tasks, win_compute, reported, rounds = 0, 0.0, False, 0
            while time.perf_counter() - start < RUN_SECONDS:
                res = pool.map(block_stats, tasks, chunksize=1)
                rounds += 1
                win_tasks += len(res)
                win_compute += sum(dt for _, dt in res)
                now = time.perf_counter()
                if not reported and now - win_t0 >= 3.0:
                    wall = now - win_t0
                    print("[self-check] %d tasks/round over %d MiB shared matrix: %.0f tasks/s, "
                          "%.2f ms numpy per task, worker compute = %.0f%% of pool capacity "
                          "(2 procs x %.1fs); pickled args %d bytes/task" % (
                              len(tasks), mat.nbytes >> 20, win_tasks / wall,
                              1e3 * win_compute / win_tasks, 100 * win_compute / (2 * wall),
                              wall, arg_bytes), file=sys.stderr, flush=True)
                    reported = True
            print("done: %d rounds" % rounds, file=sys.stderr)
    finally:
        del mat
        shm.close()
        shm.unlink()


if __name__ == "__main__":
    main()
