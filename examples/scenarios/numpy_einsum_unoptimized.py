# expect: numpy.einsum_unoptimized
# sopctl: --duration 3
# needs: numpy
"""A matrix product written as np.einsum without optimize: numpy's own C loop, no BLAS
(SOP §3.4). Exits after 60 s."""
import os
import time

import numpy as np

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

a = np.random.rand(200 * INTENSITY, 200)
b = np.random.rand(200, 200)
print("ready", flush=True)
end = time.time() + 60
while time.time() < end:
    c = np.einsum("ij,jk->ik", a, b)
