# expect: cpu.affinity_mismatch
# also: cpu.oversubscribed
# sopctl: --duration 3
# env: OMP_NUM_THREADS=4 MKL_NUM_THREADS=4 OPENBLAS_NUM_THREADS=4
"""§8.5: thread pools sized for CPUs the process cannot use. The job pins itself to one CPU
(as a launcher's taskset / K8s CPU manager would) but its environment asks for four BLAS/OpenMP
threads, so the four pool threads of every matrix product time-share that one CPU
(cpu.oversubscribed sees the same cause from the run queue)."""
import os
import time

os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import numpy as np  # noqa: E402  after pinning, as under taskset

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

a = np.random.rand(600 * INTENSITY, 600)
stop = time.time() + 60
print("ready", flush=True)
while time.time() < stop:
    a = np.tanh(a @ a.T / 600.0)
