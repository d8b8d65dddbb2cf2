# expect: none
# env: TOKENIZERS_PARALLELISM=false
# sopctl: --duration 3
# needs: torch
"""healthy_dataloader.py — a well-configured DataLoader (SOP §6.2): one persistent worker with a
cheap __getitem__ keeps its prefetch queue full while the training step, the slower part, runs in
the main process; TOKENIZERS_PARALLELISM=false in the environment. No dataloader.* (or other) warn/high finding.
Prints "ready", exits after 60 s."""
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2


class Samples(Dataset):
    def __len__(self):
        return 10 ** 9

    def __getitem__(self, i):
        return torch.full((64,), float(i % 97))


if __name__ == "__main__":
    torch.set_num_threads(1)
    loader = DataLoader(Samples(), batch_size=32 * INTENSITY, num_workers=1, persistent_workers=True,
                        prefetch_factor=4)
    w = torch.randn(64, 64)
    deadline = time.time() + 60
    n = 0
    for batch in loader:
        t = time.time() + 0.08
        while time.time() < t:  # the step: compute in the main process, slower than loading
            batch = torch.tanh(batch @ w) * 0.5
        n += 1
        if n == 10:
            print("ready", flush=True)
        if time.time() > deadline:
            break
