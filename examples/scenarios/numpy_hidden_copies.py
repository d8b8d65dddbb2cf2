# expect: numpy.hidden_copies
# sopctl: --duration 3
# needs: numpy
"""Rows appended by re-copying the whole array (x = np.concatenate([x, row])) and a bias
materialized with np.tile instead of broadcast (SOP §3.1, §3.3). Exits after 60 s."""
import os
import time

import numpy as np

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

D = 256 * INTENSITY
bias = np.random.rand(D)
print("ready", flush=True)
end = time.time() + 60
while time.time() < end:
    x = np.empty((0, D))
    for i in range(1500):
        row = np.full((1, D), float(i))
        x = np.concatenate([x, row])
    y = x + np.tile(bias, (x.shape[0], 1))
