# expect: none
# sopctl: --duration 3
# needs: numpy
"""Busy, vectorized numpy: broadcasting instead of tile, one concatenate per batch of large
blocks, einsum with optimize, reductions over whole arrays. Exits after 60 s."""
import os
import time

import numpy as np

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

x = np.random.rand(2000 * INTENSITY, 256)
w = np.random.rand(256, 128)
bias = np.random.rand(256)
print("ready", flush=True)
end = time.time() + 60
while time.time() < end:
    y = x + bias                                   # broadcast, no copy of bias
    z = np.einsum("ij,jk->ik", y, w, optimize=True)  # BLAS through tensordot
    s = np.sum(z, axis=0)
    blocks = [z[i:i + 500] for i in range(0, 2000 * INTENSITY, 500)]
    zz = np.concatenate(blocks)                    # once per batch
    m = np.sort(zz[:, 0])
