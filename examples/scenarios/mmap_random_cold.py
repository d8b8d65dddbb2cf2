# expect: io.mapped_faults
# also: io.d_state
# needs: numpy
# sopctl: --duration 3
# verdict: IO-bound
# shows: io.mapped_faults table.f32
# timeout: 90
"""io.mapped_faults (SOP §7.3 through a memory map): random row lookups in a float32 table opened
with np.memmap, the way a map-style Dataset or an embedding/ANN index reads a packed file with
np.load(mmap_mode="r"). No read() calls: every cold row is a major page fault served by the disk.
The table is kept cold by count, not by time: after touching a quarter of its pages the mapping's
pages are released (madvise DONTNEED) and the file's cache is dropped (posix_fadvise DONTNEED, this
file only), so most lookups fault on any machine. Its anonymous memory stays flat: the file-backed
memory it gains is page cache, not a leak (no memory finding at warn/high).
SOP_SCENARIO_INTENSITY=1|2: a 192 or 448 MiB table, unlinked once mapped (nothing is left behind
when the harness kills it). Exits by itself after about 15 s."""
import mmap
import os
import sys
import tempfile
import time

import numpy as np

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))
SIZE = (192 if INTENSITY < 2 else 448) << 20
ROW = 1024                      # float32 x 256: one row is a quarter of a page
PAGE = mmap.PAGESIZE

d = tempfile.mkdtemp(prefix="sop_mmap_rand_", dir=os.environ.get("SOP_SCENARIO_TMP", "/var/tmp"))
path = os.path.join(d, "table.f32")
try:
    with open(path, "wb") as f:
        chunk = np.random.default_rng(0).random(1 << 18, dtype=np.float32).tobytes()  # 1 MiB
        for _ in range(SIZE >> 20):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    table = np.memmap(path, dtype=np.float32, mode="r").reshape(-1, ROW // 4)
    os.unlink(path)                             # mapped and open: gone from disk even after SIGKILL
    os.rmdir(d)
    nrows = table.shape[0]
    rng = np.random.default_rng(1)
    pages = SIZE // PAGE
    t_end = time.time() + 15
    touched = 0
    ready = False

    def lookup(idx):
        return float(table[idx].sum())          # fancy indexing: one row per index, random pages

    while time.time() < t_end:
        for _ in range(16):
            lookup(rng.integers(0, nrows, 64))
        touched += 16 * 64
        if touched >= pages // 4:               # a quarter of the table touched: make it cold again
            table._mmap.madvise(mmap.MADV_DONTNEED)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            touched = 0
            if not ready:
                print("ready", flush=True)
                ready = True
    os.close(fd)
finally:
    try:
        os.unlink(path)
        os.rmdir(d)
    except OSError:
        pass
    sys.exit(0)
