# expect: none
# cgroup: memory=1000M
# sopctl: --duration 3
"""healthy_memory.py — the healthy counterpart of the §2 scenarios: a 150 MiB working set loaded
once, a bounded cache (functools.lru_cache), per-step temporaries freed, automatic GC only: flat
memory, no pinned pages, no long collections."""
import os
import functools
import time

import numpy as np

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2


@functools.lru_cache(maxsize=256)
def feature(i):
    return np.full(256, i, dtype=np.float32)


def main():
    data = np.random.default_rng(0).random((150 << 20) * INTENSITY // 8)  # 150 MiB x intensity, written
    time.sleep(1)
    print("ready", flush=True)
    t0 = time.time()
    step = 0
    while time.time() - t0 < 50:
        idx = (step * 4096) % (len(data) - 4096)
        batch = data[idx:idx + 4096] * 2.0
        f = feature(step % 512)
        _ = float(batch.sum()) + float(f[0])
        step += 1
        time.sleep(0.01)


if __name__ == "__main__":
    main()
