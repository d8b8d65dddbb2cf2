# expect: cpu.pool_undersized:info
# sopctl: --duration 3
# needs: torch
# skip@cpu1: one CPU has no second core for the pool to use
"""A torch matmul loop whose intra-op pool was capped at one thread (torch.set_num_threads(1), as
a script copied from a DataLoader worker does): the job is CPU-bound in torch's native compute on
one core while the other CPUs the job may use stay idle (SOP §9, §8.5). Exits after 60 s."""
import os
import time

import torch

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

torch.set_num_threads(1)
N = 256 * INTENSITY
a = torch.rand(N, N)
b = torch.rand(N, N)
a @ b
print("ready", flush=True)
end = time.time() + 60
while time.time() < end:
    c = a @ b
    a = torch.tanh(c)
