# A training loop keeps each step's input, activation and a numpy copy of the gradient in a list
# "for debugging": ~30 MiB/s of resident memory that is never freed, no memory limit but the host's
# RAM (SOP §2.2, "grows the longer it runs"). (Written from the playbook's words by a second author,
# blind to the rules; capped at 1.2 GiB for the test.)
# expect: mem.growth
# sopctl: --duration 3
# needs: torch numpy
# Toy training loop that logs per-step diagnostics.
# BUG: every step appends the full activation tensor (plus a numpy copy of the
# gradient) to `history` "for debugging", so RSS grows ~30 MiB/s without bound.
# Here it is capped at ~1.2 GiB, after which it just sleeps (still holding it).
# Symptom: VmRSS in /proc/PID/status rising steadily, no plateau.
import sys
import time

import numpy as np
import torch

CAP_RSS_MIB = 1200                    # harness cap on total RSS
TARGET_MIB_S = 22                     # log pacing: ~30 MiB/s of retained tensors


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return -1.0


def main():
    torch.manual_seed(0)
    model = torch.nn.Linear(256, 256)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    history = []                      # leaks: never trimmed
    kept = 0
    t0 = time.time()
    rss0 = rss_mib()
    reported = False
    step = 0
    print("ready", flush=True)
    capped = False
    while True:
        if not capped and step % 10 == 0 and rss_mib() >= CAP_RSS_MIB:
            capped = True
        if not capped:
            x = torch.randn(512, 256)
            act = model(x)
            loss = act.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            # per step: input batch + activation (0.5 MiB each) + 1 MiB numpy grad snapshot
            rec = {"step": step, "loss": loss.item(),
                   "x": x, "act": act.detach().clone(),
                   "grad": np.array(model.weight.grad.numpy(), copy=True).repeat(4, axis=0)}
            history.append(rec)
            kept += (rec["x"].numel() + rec["act"].numel()) * 4 + rec["grad"].nbytes
            step += 1
        if not reported and time.time() - t0 >= 3:
            dt = time.time() - t0
            r = rss_mib()
            print(f"[self-check] t={dt:.1f}s steps={step} history_len={len(history)} "
                  f"RSS={r:.0f}MiB (+{(r - rss0) / dt:.1f} MiB/s)", file=sys.stderr, flush=True)
            reported = True
        if capped:
            time.sleep(1.0)
        else:
            ahead = kept / (TARGET_MIB_S * 1024 * 1024) - (time.time() - t0)
            if ahead > 0:
                time.sleep(ahead)


if __name__ == "__main__":
    main()
