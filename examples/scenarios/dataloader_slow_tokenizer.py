# expect: dataloader.slow_tokenizer
# also: dataloader.starved
# sopctl: --duration 3
# needs: torch
"""dataloader_slow_tokenizer.py — SOP §6.6: text tokenized by a pure-Python BPE tokenizer inside
the DataLoader worker (what transformers' use_fast=False does). The worker spends most of its
samples in SlowTokenizer frames and the loop waits for it (dataloader.starved: the same cause).
Prints "ready", exits after 60 s."""
import os
import re
import time

import torch
from torch.utils.data import DataLoader, Dataset

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

WORDS = ("the quick brown fox jumps over the lazy dog while tokenizers written in python "
         "merge byte pairs one at a time").split()


class SlowTokenizer:
    """A tiny byte-pair-encoding tokenizer in pure Python."""

    def __init__(self):
        self.pat = re.compile(r"\w+|[^\w\s]+")
        self.ranks = {}
        for w in WORDS:
            for a, b in zip(w, w[1:]):
                self.ranks.setdefault((a, b), len(self.ranks))

    def _bpe(self, word):
        parts = list(word)
        while len(parts) > 1:
            pairs = [(self.ranks.get((a, b), 1 << 30), k) for k, (a, b) in enumerate(zip(parts, parts[1:]))]
            rank, k = min(pairs)
            if rank == 1 << 30:
                break
            parts[k:k + 2] = [parts[k] + parts[k + 1]]
        return parts

    def encode(self, text):
        ids = []
        for word in self.pat.findall(text):
            for piece in self._bpe(word):
                ids.append(hash(piece) & 0xFFFF)
        return ids


class Texts(Dataset):
    def __init__(self):
        self.tok = SlowTokenizer()

    def __len__(self):
        return 10 ** 9

    def __getitem__(self, i):
        text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(600))
        ids = self.tok.encode(text)[:64]
        return torch.tensor(ids + [0] * (64 - len(ids)))


if __name__ == "__main__":
    torch.set_num_threads(1)
    loader = DataLoader(Texts(), batch_size=8 * INTENSITY, num_workers=1, persistent_workers=True)
    deadline = time.time() + 60
    first = True
    for batch in loader:
        batch.sum()
        if first:
            print("ready", flush=True)
            first = False
        if time.time() > deadline:
            break
