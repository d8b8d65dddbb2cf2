# expect: numpy.hidden_copies
# sopctl: --duration 3
# needs: numpy
"""SOP §3.1/§3.3 — copies materialised where broadcasting would do: each step of a scoring loop
builds (B, K, D) operands with np.repeat and np.tile, then multiplies and reduces them. The
program measures its own ground truth before it reports ready: the share of each step spent in
the two copies, and how much faster the same step is written with broadcasting
(x[:, None, :] * w[None]). Exits after 60 s."""
import os
import time

import numpy as np

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

B, K, D = 256 * INTENSITY, 16, 128
x = np.random.rand(B, D)
w = np.random.rand(K, D)


def step_copied():
    t0 = time.perf_counter()
    xs = np.repeat(x[:, None, :], K, axis=1)   # (B, K, D): every row K times
    ws = np.tile(w[None], (B, 1, 1))            # (B, K, D): the weights B times
    t1 = time.perf_counter()
    s = (xs * ws).sum(axis=2)
    return s, t1 - t0, time.perf_counter() - t0


def step_broadcast():
    return (x[:, None, :] * w[None]).sum(axis=2)


# Ground truth, timed by the program itself: copy share of a step, broadcasting's speed-up.
copy_s = total_s = 0.0
for _ in range(50):
    _, c, t = step_copied()
    copy_s, total_s = copy_s + c, total_s + t
t0 = time.perf_counter()
for _ in range(50):
    step_broadcast()
bcast_s = time.perf_counter() - t0
print("measured: copies %.0f%% of each step; broadcasting %.1fx faster"
      % (100 * copy_s / total_s, total_s / bcast_s), flush=True)
print("ready", flush=True)
end = time.time() + 60
while time.time() < end:
    step_copied()
