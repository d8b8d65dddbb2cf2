# The per-element loop of tiny torch ops of torch_tiny_ops.py, run by three threads at once (a
# preprocessing thread pool): every op releases the GIL for microseconds and another thread takes
# it, so the GIL changes hands tens of thousands of times a second, each handoff a futex wake-up
# and a context switch paid in the kernel, and no thread keeps the GIL long enough to look like
# a loop of tiny calls on its own. Batching the ops (or one thread) is what helps (SOP §4.1, §3.5).
# expect: gil.handoff_churn
# expect@cpu1: none
#   (on one CPU a thread that releases the GIL cannot be replaced until the holder is preempted:
#   the GIL changes hands at the switch interval, and nothing churns)
# also: gc.pauses
#   (each op allocates a tensor: gen0 runs often, as in torch_tiny_ops.py)
# also@cpu1: cpu.oversubscribed gc.pauses
#   (three to six busy threads on one CPU queue for it)
# sopctl: --duration 3
# needs: torch
"""Ready once every thread has done 2000 elements (measured). Exits after 60 s."""
import os
import threading
import time

import torch

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
NTHREADS = 3 * INTENSITY

torch.set_num_threads(1)
weights = torch.tensor([0.5, 0.25, 0.25])
deadline = time.time() + 60
done = [0] * NTHREADS  # each thread's elements, written by that thread only


def work(k):
    points = torch.rand(20000, 3)
    while time.time() < deadline:
        acc = torch.zeros(3)
        for p in points:
            q = (p * weights).clamp(0.1, 0.9)
            acc = acc + q.sqrt()
            done[k] += 1


threads = [threading.Thread(target=work, args=(k,), name="prep-%d" % k) for k in range(NTHREADS)]
for t in threads:
    t.start()
while min(done) < 2000 and time.time() < deadline:
    time.sleep(0.05)
print("ready", flush=True)
for t in threads:
    t.join()
