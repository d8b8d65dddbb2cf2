# expect: numpy.blas_threads_in_workers
# also: cpu.oversubscribed
# sopctl: --duration 3
# needs: torch
"""Worker processes that each multiply matrices with the default thread pool (one OpenMP thread
per host CPU, OMP/MKL/OPENBLAS_NUM_THREADS unset): workers x pool threads > CPUs
(SOP §3.6, §4.4). Exits after 60 s."""
import multiprocessing as mp
import os
import time

import torch

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

NWORKERS = 2 * INTENSITY


def work(end, started):
    # A pool sized to the host's logical CPUs, as OpenBLAS, MKL and libgomp do by default (this
    # torch build would pick the physical cores, 1 on a 2-vCPU VM).
    torch.set_num_threads(os.cpu_count())
    a = torch.rand(384, 384)
    b = torch.rand(384, 384)
    a @ b  # the pool starts here
    started.put(os.getpid())
    while time.time() < end:
        c = a @ b
        a = torch.tanh(c)


if __name__ == "__main__":
    for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.pop(v, None)
    ctx = mp.get_context("spawn")
    end = time.time() + 60
    started = ctx.Queue()
    procs = [ctx.Process(target=work, args=(end, started)) for _ in range(NWORKERS)]
    for p in procs:
        p.start()
    for _ in procs:
        started.get(timeout=50)
    time.sleep(1)
    print("ready", flush=True)
    for p in procs:
        p.join()
