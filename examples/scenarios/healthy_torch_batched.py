# The same work as torch_tiny_ops.py, batched: each op runs once over the whole (N, 3) tensor,
# so the thread stays in long native kernels (the healthy side of perrow.tiny_ops).
# expect: none
# sopctl: --duration 3
# needs: torch
"""Ready once the first 20 batches are done (measured). Exits after 60 s."""
import os
import time

import torch

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

torch.set_num_threads(1)
points = torch.rand(2_000_000 * INTENSITY, 3)
weights = torch.tensor([0.5, 0.25, 0.25])
deadline = time.time() + 60
batches = 0
while time.time() < deadline:
    acc = (points * weights).clamp(0.1, 0.9).sqrt().sum(dim=0)
    batches += 1
    if batches == 20:
        print("ready", flush=True)
