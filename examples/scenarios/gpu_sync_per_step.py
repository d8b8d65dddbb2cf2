# expect: gpu.sync_per_step
# verdict: host-bound
# sopctl: --duration 3
# needs: torch cuda
# SOP_SCENARIO_INTENSITY not read: the host and GPU shares come from a measured phase, not a size
"""gpu_sync_per_step.py — a device-to-host sync in the hot loop (issue 25): each step launches
some GPU work, then reads the loss with .item() (the sync: the host waits until the GPU is
done) and only then runs the step's Python bookkeeping (per-sample metrics in a Python loop),
during which the GPU sits idle. The warm-up measures the GPU's time per step and sizes the
Python part to about three times that, so on any GPU and CPU the GPU is busy about a quarter
of the time and the thread waits at the .item() line about a quarter: gpu.sync_per_step names the line,
the §9 verdict is host-bound. Prints "ready", exits after 60 s."""
import time

import torch

RUN_S = 60


def gpu_part(w, x, n):
    y = x
    for _ in range(n):
        y = torch.relu(y @ w)
    return y.mean()


def bookkeeping(k):
    acc = 0.0
    for i in range(k):  # per-sample metrics written in Python
        acc += (i % 13) * 0.5
    return acc


def main():
    dev = torch.device("cuda")
    w = torch.randn(2048, 2048, device=dev) / 45
    x = torch.randn(2048, 2048, device=dev)
    gpu_part(w, x, 2).item()
    # measured phase: GPU time per step (at least ~5 ms of it), and Python time per 1000 iterations
    n = 2
    while True:
        t0 = time.perf_counter()
        gpu_part(w, x, n).item()
        gpu_ms = (time.perf_counter() - t0) * 1e3
        if gpu_ms >= 5 or n >= 4096:
            break
        n *= 2
    t0 = time.perf_counter()
    bookkeeping(200000)
    per_k_ms = (time.perf_counter() - t0) * 1e3 / 200
    k = int(1000 * 3 * gpu_ms / max(per_k_ms, 1e-4))
    end = time.time() + RUN_S
    steps = 0
    while time.time() < end:
        loss = gpu_part(w, x, n)
        loss_val = loss.item()  # the sync: waits for the GPU every step
        bookkeeping(k)          # then the GPU idles while Python runs
        steps += 1
        if steps == 20:
            print("ready gpu %.1f ms/step, python %d iterations, loss %.3f" % (gpu_ms, k, loss_val),
                  flush=True)


if __name__ == "__main__":
    main()
