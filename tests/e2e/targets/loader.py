"""loader.py MODE DIR — a torch DataLoader consumer for test_sampling.py. MODE: inline
(num_workers=0, heavy __getitem__), cpu (2 workers, CPU-bound __getitem__), files (2 workers
reading many small files, each dropped from the page cache first). Prints 'ready' when iterating."""
import os
import sys
import torch
from torch.utils.data import DataLoader, Dataset

mode, root = sys.argv[1], sys.argv[2]
FILES = 400


def burn(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


class Heavy(Dataset):
    def __len__(self):
        return 10 ** 9

    def __getitem__(self, i):
        burn(200000)
        return torch.zeros(4)


class SmallFiles(Dataset):
    index = None  # a long-lived descriptor per worker (an index read sequentially)

    def __len__(self):
        return 10 ** 9

    def __getitem__(self, i):
        if self.index is None:
            self.index = open(os.path.join(root, "index"), "rb", buffering=0)
        if not self.index.read(64):
            self.index.seek(0)
        total = 0
        for k in range(20):
            path = os.path.join(root, "f%d" % ((i * 20 + k) % FILES))
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # force a device read
                total += len(os.read(fd, 8192))
            finally:
                os.close(fd)
        return torch.tensor([total])


if mode == "files":
    os.makedirs(root, exist_ok=True)
    for k in range(FILES):
        with open(os.path.join(root, "f%d" % k), "wb") as f:
            f.write(os.urandom(4096))
            f.flush()
            os.fsync(f.fileno())
    with open(os.path.join(root, "index"), "wb") as f:
        f.write(os.urandom(1 << 20))
    ds, workers = SmallFiles(), 2
elif mode == "cpu":
    ds, workers = Heavy(), 2
else:
    ds, workers = Heavy(), 0

loader = DataLoader(ds, batch_size=4, num_workers=workers)
first = True
for batch in loader:
    if first:
        print("ready", flush=True)
        first = False
