# expect: gc.pauses
# sopctl: --duration 2
"""gc_pauses.py — SOP §2.5: a training-style loop that calls gc.collect() after every step while
~1.5 million long-lived container objects live on the heap: every step pays a full (gen2)
collection of hundreds of milliseconds."""
import os
import gc
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

samples = [[i, float(i)] for i in range(1_500_000 * INTENSITY)]  # long-lived, tracked by the GC
print("ready", flush=True)
t0 = time.time()
step = 0
while time.time() - t0 < 50:
    batch = [samples[(step * 64 + k) % len(samples)][1] for k in range(64)]
    loss = sum(batch) / len(batch)
    step += 1
    gc.collect()  # "free memory" after each step: a full collection every time
