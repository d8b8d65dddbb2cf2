"""rank_train.py — one rank of a small training job for the --ranks and fleet tests (torchrun or
srun start four of them). A DataLoader with one worker feeds a loop of short steps (a little
compute, then a 20 ms wait like a device step). The rank named by SOP_STARVE_RANK gets a slow
dataset (its worker sleeps 50 ms per item, 200 ms per batch), so its loop waits for data most of
the time; the others find their batch ready. Prints "ready RANK PID" once its loop runs, and
ends after SOP_RANK_LIFE_S seconds (default 60). Rank from RANK (torchrun) or SLURM_PROCID."""
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset

RANK = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
STARVE = int(os.environ.get("SOP_STARVE_RANK", "-1"))
LIFE_S = float(os.environ.get("SOP_RANK_LIFE_S", "60"))
torch.set_num_threads(1)


class Items(Dataset):
    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        if RANK == STARVE:
            time.sleep(0.05)
        return torch.ones(8)


def main():
    loader = DataLoader(Items(), batch_size=4, num_workers=1, prefetch_factor=2)
    start = time.time()
    for step, batch in enumerate(loader):
        batch.sum()
        time.sleep(0.02)
        if step == 3:
            print("ready", RANK, os.getpid(), flush=True)
        if time.time() - start > LIFE_S:
            break


if __name__ == "__main__":
    main()
