# expect: mem.growth
# cgroup: memory=1000M
# sopctl: --duration 3 --heap
# needs: numpy
"""mem_growth_numpy.py — SOP §2.2, growth that is not Python objects: every step keeps a 256 KiB
numpy result in a history list, ~15 MiB/s of array buffers; the heap census says Python
objects do not explain it (numpy buffers do) and points to memray's native mode. Stops growing
at ~500 MiB; exits after 60 s."""
import time

import numpy as np

# SOP_SCENARIO_INTENSITY not read: the growth rate is what the rule measures, and its 1000 MiB cgroup bounds the run.

history = []
t0 = time.time()
printed = False
while time.time() - t0 < 60:
    if len(history) < 2000:  # 2000 x 256 KiB = 500 MiB at most
        history.append(np.ones(32 << 10))  # 32768 float64 = 256 KiB, written
    if not printed and time.time() - t0 > 2:
        print("ready", flush=True)
        printed = True
    time.sleep(1 / 60)  # ~60 steps/s = 15 MiB/s
