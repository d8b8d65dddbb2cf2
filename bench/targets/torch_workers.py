"""torch_workers.py [N] — an ML-shaped target for the benchmarks: torch imported (its ~1,700
mappings and a large page table, what makes /proc/PID/maps and smaps_rollup cost milliseconds),
then N forked workers (default 4) that each touch a tensor, all idle. Prints "ready PID" when
set; the workers are ended with it (SIGTERM to the parent ends the process group it leads)."""
import os
import signal
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 4
os.setpgid(0, 0)
kids = []
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        x = torch.ones(1000000)  # noqa: F841 (touched pages, as a worker's batch)
        time.sleep(3600)
        os._exit(0)
    kids.append(pid)
signal.signal(signal.SIGTERM, lambda *_: (os.killpg(0, signal.SIGKILL)))
print("ready %d" % os.getpid(), flush=True)
time.sleep(3600)
