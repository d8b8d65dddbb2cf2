# expect: dataloader.too_many_workers
# also: dataloader.starved cpu.oversubscribed
# sopctl: --duration 3
# needs: torch
"""dataloader_too_many_workers.py — SOP §6.2: num_workers sized far beyond the CPUs (2.5 CPU-bound
workers per CPU, at least 5), all runnable at once, so they time-slice the cores with the
training loop. The consumer is also starved (the same cause
seen from the loop) and the host's CPUs are oversubscribed. Prints "ready", exits after 60 s."""
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
        for k in range(60000 * INTENSITY):
            x += (k * i) % 7
        return torch.full((8,), float(x))


if __name__ == "__main__":
    torch.set_num_threads(1)
    cpus = len(os.sched_getaffinity(0))
    workers = max(5, int(2.5 * cpus + 0.5))
    loader = DataLoader(HeavyTransform(), batch_size=4, num_workers=workers, persistent_workers=True)
    w = torch.randn(8, 8)
    deadline = time.time() + 60
    n = 0
    for batch in loader:
        batch @ w
        n += 1
        if n == 2 * workers:  # every worker has produced batches: all of them are running
            print("ready", flush=True)
        if time.time() > deadline:
            break
