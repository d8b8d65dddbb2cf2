# expect: dataloader.workers_restarted
# also@cpu1: dataloader.too_many_workers
#   (on one CPU, two workers beside a CPU-bound step are more than the playbook's sizing)
# sopctl: --duration 3
# needs: torch
# timeout: 120
# prestart: yes
"""dataloader_workers_restarted.py — SOP §6.2: a DataLoader with persistent_workers=False and
short epochs (64 samples, 8 batches of a 0.15 s step: about 1.3 s each). Every epoch shuts its
two workers down and forks new ones, so the workers are always about a second old while the job
runs on. Prints "ready" once the job is 24 s old (the rule wants a parent of at least 20 s) and
two epochs have re-created their workers, exits 60 s after its first epoch. Started early by the
harness (prestart), it idles on stdin until its turn (SOP_SCENARIO_GATE)."""
import os
import sys
import time

BORN = time.time()
if os.environ.get("SOP_SCENARIO_GATE"):  # started early by the harness: idle until its turn
    sys.stdin.readline()

import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2


class Small(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((64,), float(i))


if __name__ == "__main__":
    torch.set_num_threads(1)
    t0 = time.time()
    loader = DataLoader(Small(), batch_size=8 * INTENSITY, num_workers=2, persistent_workers=False,
                        prefetch_factor=2)
    w = torch.randn(64, 64)
    ready = False
    epochs = 0
    while time.time() < t0 + 60:
        for batch in loader:  # a new iterator each epoch: new workers
            t = time.time() + 0.15
            while time.time() < t:  # the step, slower than loading
                batch = torch.tanh(batch @ w) * 0.5
        epochs += 1
        if not ready and time.time() > BORN + 24 and epochs >= 2:
            print("ready", flush=True)
            ready = True
