# expect: mem.growth
# cgroup: memory=1000M
# needs: numpy
# sopctl: --duration 3
# timeout: 90
"""mem.growth beside a large mapped file (issue 19): a lookup service maps a 256 MiB float32 table
with np.memmap (warmed once: resident and flat, file-backed) and leaks ~15 MiB/s of anonymous
memory into an unbounded dict of responses. The leak must be found and judged on anonymous
memory; the mapping is not blamed (its file-backed pages are reclaimable page cache).
SOP_SCENARIO_INTENSITY=1|2: a 256 or 448 MiB table. Exits by itself after about 20 s."""
import os
import sys
import tempfile
import time

import numpy as np

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))
SIZE = (256 if INTENSITY < 2 else 448) << 20

d = tempfile.mkdtemp(prefix="sop_mmap_leak_", dir=os.environ.get("SOP_SCENARIO_TMP", "/var/tmp"))
path = os.path.join(d, "table.f32")
try:
    with open(path, "wb") as f:
        chunk = np.random.default_rng(0).random(1 << 18, dtype=np.float32).tobytes()  # 1 MiB
        for _ in range(SIZE >> 20):
            f.write(chunk)
    table = np.memmap(path, dtype=np.float32, mode="r").reshape(-1, 256)
    os.unlink(path)                             # mapped: gone from disk even after SIGKILL
    os.rmdir(d)
    warm = float(table[:, 0].sum())             # touch every page once: resident, then flat
    cache = {}
    t0 = time.time()
    i = 0
    printed = False
    rng = np.random.default_rng(1)
    while time.time() - t0 < 20:
        row = table[int(rng.integers(0, table.shape[0]))]
        if len(cache) < 2400:                   # 2400 x 256 KiB = 600 MiB at most
            cache["request-%d" % i] = bytearray(row.tobytes()) * 256   # 256 KiB, written
            i += 1
        if not printed and time.time() - t0 > 2:
            print("ready", flush=True)
            printed = True
        time.sleep(1 / 60)                      # ~60 responses/s = 15 MiB/s
finally:
    try:
        os.unlink(path)
        os.rmdir(d)
    except OSError:
        pass
    sys.exit(0)
