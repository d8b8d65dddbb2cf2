# expect: dataloader.starved
# verdict: input-bound
# sopctl: --duration 3
# needs: torch cuda
"""gpu_loader_starved.py — SOP §6.4 on a GPU (issue 25): a DataLoader with 2 workers running a
CPU-heavy per-sample transform in pure Python feeds a model on the GPU whose step takes a few
milliseconds; the training loop waits for batches and the GPU idles. dataloader.starved states
the GPU's idle share, the §9 verdict is input-bound. Prints "ready" after the first batches,
exits after 60 s."""
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))
RUN_S = 60


class HeavyTransform(Dataset):
    def __len__(self):
        return 10 ** 9

    def __getitem__(self, i):
        x = 0
        for k in range(150000 * INTENSITY):  # a per-pixel augmentation written in Python
            x += (k * i) % 7
        return torch.full((256,), float(x % 100) / 100)


if __name__ == "__main__":
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader = DataLoader(HeavyTransform(), batch_size=8, num_workers=2, persistent_workers=True,
                        pin_memory=True)
    end = time.time() + RUN_S
    for n, batch in enumerate(loader):
        batch = batch.to(dev, non_blocking=True)
        loss = model(batch).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if n == 4:
            print("ready", flush=True)
        if time.time() > end:
            break
