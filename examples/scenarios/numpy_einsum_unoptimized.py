# expect: numpy.einsum_unoptimized
# sopctl: --duration 3
# needs: numpy
"""A matrix product written as np.einsum without optimize: numpy's own C loop, no BLAS
(SOP §3.4). Exits after 60 s."""
import time

import numpy as np

a = np.random.rand(200, 200)
b = np.random.rand(200, 200)
print("ready", flush=True)
end = time.time() + 60
while time.time() < end:
    c = np.einsum("ij,jk->ik", a, b)
