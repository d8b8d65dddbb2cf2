# expect: gpu.memory_near_full
# sopctl: --duration 2
# needs: torch cuda
# SOP_SCENARIO_INTENSITY not read: it fills a share of the device, whatever its size
"""gpu_memory_hog.py — a process holding most of its GPU's memory (issue 25): it measures the
device's free memory (torch.cuda.mem_get_info) and allocates all but 4% of the device, then
runs a small kernel now and then. gpu.memory_near_full names this process. Prints "ready",
exits after 60 s."""
import time

import torch

RUN_S = 60

if __name__ == "__main__":
    dev = torch.device("cuda")
    free, total = torch.cuda.mem_get_info()
    take = free - int(0.04 * total)
    blocks = []
    chunk = 1 << 30
    while take > 0:  # 1 GiB at a time: no single huge allocation
        n = min(chunk, take)
        blocks.append(torch.empty(n, dtype=torch.uint8, device=dev))
        take -= n
    free2, _ = torch.cuda.mem_get_info()
    print("ready holding %.1f GiB of %.1f GiB (%.0f%% of the device in use)"
          % (sum(b.numel() for b in blocks) / 2**30, total / 2**30, 100 * (1 - free2 / total)), flush=True)
    x = torch.randn(256, 256, device=dev)
    end = time.time() + RUN_S
    while time.time() < end:
        (x @ x).sum().item()
        time.sleep(0.05)
