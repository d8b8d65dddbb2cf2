# expect: numpy.hidden_copies
# sopctl: --duration 3
# needs: torch
"""SOP §3.1/§3.3 in torch, written another way than numpy_materialised_broadcast.py: a pairwise
scorer module materialises its broadcast operands with x.unsqueeze(1).expand(...).contiguous()
and y.repeat(...) before an elementwise product, where x[:, None] * y[None] reads both in place.
No numpy frame and no Python wrapper: the copies are C methods, seen only through the module's
own line. The program times its own step (copy share, broadcast speed-up) and reports ready.
Exits after 60 s."""
import os
import time

import torch

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
torch.set_num_threads(1)  # one core: the copies, not a thread pool, are what is measured


class PairScorer:
    def __init__(self, n, m, d):
        self.queries = torch.rand(n, d)
        self.keys = torch.rand(m, d)
        self.copy_s = 0.0

    def forward(self):
        n, m = self.queries.shape[0], self.keys.shape[0]
        t0 = time.perf_counter()
        q = self.queries.unsqueeze(1).expand(n, m, -1).contiguous()
        k = self.keys.unsqueeze(0).repeat(n, 1, 1)
        self.copy_s += time.perf_counter() - t0
        return (q * k).sum(-1)

    def forward_broadcast(self):
        return (self.queries[:, None] * self.keys[None]).sum(-1)


scorer = PairScorer(192 * INTENSITY, 64, 96)
with torch.no_grad():
    t0 = time.perf_counter()
    for _ in range(50):
        scorer.forward()
    total_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(50):
        scorer.forward_broadcast()
    bcast_s = time.perf_counter() - t0
    print("measured: copies %.0f%% of each step; broadcasting %.1fx faster"
          % (100 * scorer.copy_s / total_s, total_s / bcast_s), flush=True)
    print("ready", flush=True)
    end = time.time() + 60
    while time.time() < end:
        scorer.forward()
