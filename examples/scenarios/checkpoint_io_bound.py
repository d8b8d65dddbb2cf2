# expect: checkpoint.io_bound
# also: io.d_state
# sopctl: --duration 3
# needs: torch
# timeout: 120
"""checkpoint.io_bound (SOP §7.7, the storage branch): torch.save of 64 tensors of 2 MiB (almost
no pickling) to a file whose every 128 KiB write is made durable at once (os.fsync), as a share
mounted with NFS -o sync (one stable write per wsize) or a FUSE store that flushes each write
does. The saving thread waits in D state for the device inside torch.save a large share of the
time. Exits after about 60 s."""
import io
import os
import sys
import tempfile
import time

import torch

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

WSIZE = 128 << 10

class SyncWriter(io.RawIOBase):
    """A file whose writes reach the disk before write() returns."""

    def __init__(self, path):
        self.f = open(path, "wb", buffering=0)

    def writable(self):
        return True

    def write(self, b):
        mv = memoryview(b)
        for off in range(0, len(mv), WSIZE):     # one stable write per wsize, like NFS -o sync
            self.f.write(mv[off:off + WSIZE])
            os.fsync(self.f.fileno())
        return len(mv)

    def close(self):
        self.f.close()
        super().close()


torch.set_num_threads(1)
d = tempfile.mkdtemp(prefix="sop_ckpt_io_", dir=os.environ.get("SOP_SCENARIO_TMP", "/var/tmp"))
path = os.path.join(d, "ckpt.pt")
weights = {"layer%d" % i: torch.full((512 << 10,), float(i)) for i in range(64 * INTENSITY)}   # 64 x 2 MiB
try:
    t_end = time.time() + 60
    n = 0
    while time.time() < t_end:
        w = SyncWriter(path)
        torch.save(weights, w)
        w.close()
        n += 1
        if n == 1:
            print("ready", flush=True)
finally:
    try:
        os.unlink(path)
        os.rmdir(d)
    except OSError:
        pass
    sys.exit(0)
