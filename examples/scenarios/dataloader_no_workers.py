# expect: dataloader.no_workers
# expect@cpu1: dataloader.no_workers:info
#   (on one CPU, workers could not run beside the step: the rule notes it, no warning)
# sopctl: --duration 3
# needs: torch
"""dataloader_no_workers.py — SOP §6.2: DataLoader(num_workers=0). Every sample is decoded in the
training process between steps, so the main thread spends most of its samples inside
_SingleProcessDataLoaderIter > fetch.py > __getitem__. Prints "ready", exits after 60 s."""
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2


class Decode(Dataset):
    def __len__(self):
        return 10 ** 9

    def __getitem__(self, i):
        x = 0
        for k in range(40000 * INTENSITY):  # decoding written in Python
            x ^= (k * 31 + i) & 0xFF
        return torch.full((8,), float(x))


if __name__ == "__main__":
    torch.set_num_threads(1)
    loader = DataLoader(Decode(), batch_size=4, num_workers=0)
    w = torch.randn(8, 8)
    deadline = time.time() + 60
    first = True
    for batch in loader:
        batch @ w
        if first:
            print("ready", flush=True)
            first = False
        if time.time() > deadline:
            break
