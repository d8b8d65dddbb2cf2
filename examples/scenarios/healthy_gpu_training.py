# expect: none
# verdict: GPU-bound
# sopctl: --duration 3
# needs: torch cuda
# SOP_SCENARIO_INTENSITY not read: each step is sized by a measured phase to ~40 ms of GPU work
"""healthy_gpu_training.py — a healthy GPU-bound training loop (issue 25): every step runs
large bf16 matmuls on the GPU and reads the loss with .item() once, so the host spends the
step spinning in CUDA's synchronize while the device is busy. The right §9 verdict is
"GPU-bound" (healthy), and no rule may advise more CPU threads. The step is sized from a
measured warm-up to about 40 ms of GPU time on any GPU. Prints "ready", exits after 60 s."""
import time

import torch

RUN_S = 60
STEP_GPU_MS = 40.0


def step(w, x, n):
    y = x
    for _ in range(n):
        y = torch.tanh(y @ w)
    return y.float().pow(2).mean()


def main():
    dev = torch.device("cuda")
    w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16) / 64
    x = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    # measured phase: the time of one matmul, then the matmuls per step for STEP_GPU_MS
    step(w, x, 4).item()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    step(w, x, 20).item()
    per_mm_ms = (time.perf_counter() - t0) * 1e3 / 20
    n = max(4, int(STEP_GPU_MS / max(per_mm_ms, 1e-3)))
    end = time.time() + RUN_S
    steps = 0
    while time.time() < end:
        loss = step(w, x, n)
        loss_val = loss.item()  # once per step: the device is busy meanwhile
        steps += 1
        if steps == 10:
            print("ready %d matmuls/step, %.2f ms each, loss %.3f" % (n, per_mm_ms, loss_val), flush=True)


if __name__ == "__main__":
    main()
