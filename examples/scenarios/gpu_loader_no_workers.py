# expect: dataloader.no_workers
# verdict: input-bound
# sopctl: --duration 3
# needs: torch cuda
"""gpu_loader_no_workers.py — SOP §6.2 on a GPU (issue 25): DataLoader(num_workers=0) with a
CPU-heavy __getitem__ feeding a model on the GPU: the training process loads every batch
itself between steps, so the GPU idles while it does. dataloader.no_workers states the GPU's
share, the §9 verdict is input-bound. Prints "ready" after the first batches, exits after 60 s."""
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))
RUN_S = 60


class Decode(Dataset):
    def __len__(self):
        return 10 ** 9

    def __getitem__(self, i):
        x = 0
        for k in range(40000 * INTENSITY):  # decoding written in Python
            x += (k ^ i) & 7
        return torch.full((256,), float(x % 100) / 100)


if __name__ == "__main__":
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader = DataLoader(Decode(), batch_size=8, num_workers=0)
    end = time.time() + RUN_S
    for n, batch in enumerate(loader):
        batch = batch.to(dev)
        loss = model(batch).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if n == 4:
            print("ready", flush=True)
        if time.time() > end:
            break
