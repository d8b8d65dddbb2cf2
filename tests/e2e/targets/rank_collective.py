"""rank_collective.py — one rank of a small data-parallel job on gloo (CPU tensors) for the
collective-wait tests (tests/e2e/test_ranks.py, test_fleet.py, tests/gpu/run-rank-scenarios.sh):
every step each rank prepares its batch (CPU work), then all ranks `all_reduce` a gradient-sized
tensor, as DDP does. SOP_RANK_MODE picks the job:

- balanced: every rank prepares for the same wall time; nobody waits long for anybody.
- compute:  rank SOP_SLOW_RANK prepares 4x as long (its own code, busy on the CPU); the others
            wait for it inside all_reduce every step.
- data:     rank SOP_SLOW_RANK's DataLoader worker is slow (it sleeps per item, like a slow
            storage read); its main loop waits for batches, the others wait in all_reduce.
- hang:     after a few steps rank SOP_SLOW_RANK skips the all_reduce and loops in its own
            code (an evaluation that never returns); the others sit in all_reduce for good.

Preparation is busy work until a wall-clock deadline, so the steps last as long on a loaded
machine as on an idle one (what is measured is where each rank is, not how fast the CPU is).
Prints "ready RANK PID" after a few steps; ends after SOP_RANK_LIFE_S seconds (default 60).
Rank and world from torchrun (RANK, WORLD_SIZE, MASTER_ADDR/PORT) or Slurm (SLURM_PROCID,
SLURM_NTASKS; then SOP_MASTER_PORT on localhost)."""
import datetime
import os
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

RANK = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
WORLD = int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")))
MODE = os.environ.get("SOP_RANK_MODE", "balanced")
SLOW = int(os.environ.get("SOP_SLOW_RANK", "-1"))
LIFE_S = float(os.environ.get("SOP_RANK_LIFE_S", "60"))
STEP_S = float(os.environ.get("SOP_STEP_S", "0.05"))
torch.set_num_threads(1)


class Items(Dataset):
    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        if MODE == "data" and RANK == SLOW:
            time.sleep(STEP_S)  # a slow read: 4 items per batch, 4 step-times per batch
        return torch.ones(64)


def prepare(batch, seconds):
    """The rank's own CPU work on its batch, for `seconds` of wall time: Python feature code.
    (Not a loop of tiny torch ops on a 64-element tensor: that is a problem of its own,
    perrow.tiny_ops, and a balanced job must have none.)"""
    end = time.perf_counter() + seconds
    acc = 0.0
    while time.perf_counter() < end:
        for i in range(256):
            acc += i * 0.5
    return batch.reshape(-1)[:64].clone() + acc * 0.0


def evaluate_forever(batch):
    """The hang: this rank went off on its own and never comes back to the collective."""
    while True:
        prepare(batch, 1.0)


def main():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", os.environ.get("SOP_MASTER_PORT", "29511"))
    dist.init_process_group("gloo", rank=RANK, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=max(LIFE_S * 2, 120)))
    loader = DataLoader(Items(), batch_size=4, num_workers=1, prefetch_factor=2)
    grad = torch.zeros(1 << 16)
    start = time.time()
    for step, batch in enumerate(loader):
        secs = STEP_S * (4 if MODE == "compute" and RANK == SLOW else 1)
        x = prepare(batch, secs)
        grad[:64] = x
        if MODE == "hang" and RANK == SLOW and step == 5:
            evaluate_forever(batch)
        dist.all_reduce(grad)
        if step == 4:
            print("ready", RANK, os.getpid(), flush=True)
        if time.time() - start > LIFE_S:
            break
    os._exit(0)  # no barrier at the end: a rank that finished must not wait for the others


if __name__ == "__main__":
    main()
