# expect: dataloader.tokenizers_fork:info
# env: TOKENIZERS_PARALLELISM=true
# sopctl: --duration 2
# needs: torch
"""dataloader_tokenizers_fork.py — SOP §6.6: TOKENIZERS_PARALLELISM=true in the job's environment
while the DataLoader forks its workers (the default start method on Linux). The Rust tokenizers
library is not installed here, so the finding is info (a hazard once a fast tokenizer is used);
with it loaded the rule says warn (tests/replay). Otherwise a healthy loader: the step is slower
than loading. Prints "ready", exits after 60 s."""
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2


class Light(Dataset):
    def __len__(self):
        return 10 ** 9

    def __getitem__(self, i):
        return torch.full((64,), float(i % 97))


if __name__ == "__main__":
    torch.set_num_threads(1)
    loader = DataLoader(Light(), batch_size=16 * INTENSITY, num_workers=1, persistent_workers=True)
    w = torch.randn(64, 64)
    deadline = time.time() + 60
    first = True
    for batch in loader:
        time.sleep(0.04)  # the step (waiting on an accelerator, say)
        batch @ w
        if first:
            print("ready", flush=True)
            first = False
        if time.time() > deadline:
            break
