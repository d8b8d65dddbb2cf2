# expect: checkpoint.pickle_bound
# also: gc.pauses
# sopctl: --duration 3
# needs: torch
# timeout: 120
"""checkpoint.pickle_bound (SOP §7.7): a training loop that checkpoints with torch.save after
every few steps, and whose checkpoint is full of Python objects: 20 000 small tensors (one
persistent_id call each) and a metrics history of 150 000 dicts. The data written is small
(tens of MiB/s at most), so the disk idles while one core pickles. Exits after about 60 s."""
import os
import sys
import tempfile
import time

import torch

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

torch.set_num_threads(1)
d = tempfile.mkdtemp(prefix="sop_ckpt_", dir=os.environ.get("SOP_SCENARIO_TMP", "/var/tmp"))
path = os.path.join(d, "ckpt.pt")
state = {
    "model": {"block%d.w" % i: torch.randn(16) for i in range(20000)},
    "history": [{"step": i, "loss": 1.0 / (i + 1), "lr": 1e-3, "tags": ["train", "gpu0"]}
                for i in range(150000 * INTENSITY)],
}
try:
    t_end = time.time() + 60
    n = 0
    while time.time() < t_end:
        torch.save(state, path)
        n += 1
        if n == 1:
            print("ready", flush=True)
        time.sleep(0.01)          # the "training step" between checkpoints
finally:
    try:
        os.unlink(path)
        os.rmdir(d)
    except OSError:
        pass
    sys.exit(0)
