# expect: dataloader.starved
# sopctl: --duration 3
# needs: torch
"""dataloader_starved.py — SOP §6.4: a training loop starved by its DataLoader. One worker runs a
CPU-heavy per-sample transform in pure Python; the "training step" is cheap, so the main thread
spends most of its time waiting for the next batch. Prints "ready", exits after 60 s."""
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2


class HeavyTransform(Dataset):
    def __len__(self):
        return 10 ** 9

    def __getitem__(self, i):
        x = 0
        for k in range(60000 * INTENSITY):  # a per-pixel augmentation written in Python
            x += (k * i) % 7
        return torch.full((8,), float(x))


if __name__ == "__main__":
    torch.set_num_threads(1)
    loader = DataLoader(HeavyTransform(), batch_size=4, num_workers=1, persistent_workers=True)
    w = torch.randn(8, 8)
    deadline = time.time() + 60
    first = True
    for batch in loader:
        batch @ w  # the step: much cheaper than loading the batch
        if first:
            print("ready", flush=True)
            first = False
        if time.time() > deadline:
            break
