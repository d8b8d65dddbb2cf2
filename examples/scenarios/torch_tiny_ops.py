# A per-element loop of tiny torch ops on 3-element tensors (scale, clamp, sqrt, accumulate):
# each op costs microseconds of dispatch and allocation and releases and re-takes the GIL, the
# math is nothing; batched over the (N, 3) tensor it is hundreds of times faster (SOP §3.5). The
# brief GIL releases must not read as native compute (no advice to add threads).
# expect: perrow.tiny_ops
# also: gc.pauses
#   (the same churn seen from the GC: each op allocates a tensor, gen0 runs ~70 times a second)
# sopctl: --duration 3
# needs: torch
"""Ready once the first 2000 elements are done (measured). Exits after 60 s."""
import os
import time

import torch

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

torch.set_num_threads(1)
points = torch.rand(20000 * INTENSITY, 3)
weights = torch.tensor([0.5, 0.25, 0.25])
deadline = time.time() + 60
done = 0
ready = False
while time.time() < deadline:
    acc = torch.zeros(3)
    for p in points:
        q = (p * weights).clamp(0.1, 0.9)
        acc = acc + q.sqrt()
        done += 1
        if not ready and done >= 2000:
            print("ready", flush=True)
            ready = True
