# expect: numpy.tiny_calls
# sopctl: --duration 3
# needs: numpy
"""Per-point numpy calls on 3-element vectors: the Python/C boundary, not the math, is the
cost (SOP §3.5). Exits after 60 s."""
import os
import time

import numpy as np

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

pts = np.random.rand(10000 * INTENSITY, 3)
lo, hi = np.zeros(3), np.ones(3)
print("ready", flush=True)
end = time.time() + 60
while time.time() < end:
    total = 0.0
    for p in pts:
        q = np.clip(p * 2.0, lo, hi)
        total += np.sum(q) + np.max(q)
