# A vectorised loop over 2M-element arrays whose time is in np.std (its Python wrapper calls a few
# heavy kernels, each running without the GIL): native compute, not tiny calls (the healthy side
# of numpy.tiny_calls and perrow.tiny_ops; numpy.tiny_calls once fired on it in 1 run of 4).
# expect: none
# sopctl: --duration 3
# needs: numpy
"""Ready once the first 5 steps are done (measured). Exits after 60 s."""
import os
import time

import numpy as np

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

a = np.random.rand(2_000_000 * INTENSITY)
deadline = time.time() + 60
steps = 0
while time.time() < deadline:
    s = np.std(a) + np.std(a * 2.0) + np.mean(a)
    steps += 1
    if steps == 5:
        print("ready", flush=True)
