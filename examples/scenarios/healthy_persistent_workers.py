# expect: none
# also@cpu1: dataloader.too_many_workers
#   (on one CPU, two workers beside a CPU-bound step are more than the playbook's sizing)
# sopctl: --duration 3
# needs: torch
# timeout: 120
# prestart: yes
"""healthy_persistent_workers.py — SOP §6.2, the fix of dataloader_workers_restarted.py: the same
short epochs with persistent_workers=True. The two workers start with the first epoch and serve
every later one, so they are as old as the job (less its start-up); no dataloader.workers_restarted
(or other warn/high) finding. Prints "ready" once the job is 24 s old and its workers 6.5 s old
(older than the rule's 5 s), exits 60 s after its first epoch. Started early by the harness
(prestart), it idles on stdin until its turn (SOP_SCENARIO_GATE)."""
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
    loader = DataLoader(Small(), batch_size=8 * INTENSITY, num_workers=2, persistent_workers=True,
                        prefetch_factor=2)
    w = torch.randn(64, 64)
    ready = False
    epochs = 0
    while time.time() < t0 + 60:
        for batch in loader:  # a new iterator each epoch, the same workers
            t = time.time() + 0.15
            while time.time() < t:  # the step, slower than loading
                batch = torch.tanh(batch @ w) * 0.5
        epochs += 1
        if not ready and time.time() > BORN + 24 and time.time() > t0 + 6.5:
            print("ready", flush=True)
            ready = True
