# expect: none
# needs: numpy
# sopctl: --duration 3
# timeout: 90
"""Healthy counterpart of io.mapped_faults: a float32 file streamed in order through np.memmap in
1 MiB slices (the way np.load(mmap_mode="r") reads a dataset epoch by epoch), each slice then used
by a training step that takes longer than the disk needs to bring the next one (a job whose input
keeps up; a job that only streams is IO-bound by design, and sop says so). Read-ahead serves
the stream: few major faults, each bringing in a large piece. The file's cache is dropped at every
pass (madvise DONTNEED on the mapping, posix_fadvise DONTNEED on this file only), so every pass
comes from the disk. Its anonymous memory stays flat; the file-backed memory it gains is page
cache, not a leak. SOP_SCENARIO_INTENSITY=1|2: a 192 or 448 MiB file. Exits after about 15 s."""
import mmap
import os
import sys
import tempfile
import time

import numpy as np

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))
SIZE = (192 if INTENSITY < 2 else 448) << 20
SLICE = (1 << 20) // 4          # float32 items in 1 MiB

d = tempfile.mkdtemp(prefix="sop_mmap_seq_", dir=os.environ.get("SOP_SCENARIO_TMP", "/var/tmp"))
path = os.path.join(d, "stream.f32")
try:
    with open(path, "wb") as f:
        chunk = np.random.default_rng(0).random(SLICE, dtype=np.float32).tobytes()
        for _ in range(SIZE >> 20):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    data = np.memmap(path, dtype=np.float32, mode="r")
    os.unlink(path)                             # mapped and open: gone from disk even after SIGKILL
    os.rmdir(d)
    t_end = time.time() + 15
    ready = False
    total = 0.0
    while time.time() < t_end:
        for off in range(0, data.shape[0], SLICE):
            x = data[off:off + SLICE]
            for _ in range(8):                  # the step: compute on the slice
                x = np.tanh(x * 1.0001)
            total += float(x.sum())
            if not ready and off >= 16 * SLICE:
                print("ready", flush=True)
                ready = True
            if time.time() >= t_end:
                break
        data._mmap.madvise(mmap.MADV_DONTNEED)      # next pass from the disk again
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
finally:
    try:
        os.unlink(path)
        os.rmdir(d)
    except OSError:
        pass
    sys.exit(0)
