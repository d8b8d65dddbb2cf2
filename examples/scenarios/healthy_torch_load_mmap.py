# expect: none
# needs: torch
# sopctl: --duration 3
# timeout: 120
# shows: mem.growth mapped: ckpt.pt
"""Healthy: the playbook's §7 advice for checkpoints, torch.load(mmap=True). A state dict of float32
matrices (SOP_SCENARIO_INTENSITY=1|2: 128 or 256 MiB) is saved with torch.save, loaded with
torch.load(path, mmap=True, weights_only=True) and used by training-like steps (a forward pass
through every matrix). The weights are pages of the mapped checkpoint: file-backed memory (page
cache, reclaimable), not anonymous memory, so no memory rule may call them growth or a leak; the
steps are CPU-bound and nothing waits on storage (one warm-up pass maps every page before `ready`).

torch.load(mmap=True) needs torch >= 2.1. Older torch (Debian's is 1.13) has no such option, so the
program does what 2.1 does: map the whole checkpoint file privately (2.1's
UntypedStorage.from_file(shared=False) is a MAP_PRIVATE mmap too) and let torch's own zip loader,
with its weights-only unpickler, take each tensor's storage as a slice of that mapping at the record's
offset in the zip. The file is unlinked once mapped. Exits by itself after about 25 s."""
import mmap
import os
import struct
import sys
import tempfile
import time
import zipfile

import torch

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))
N = 1024                                       # each weight: N x N float32 = 4 MiB
LAYERS = 32 if INTENSITY < 2 else 64           # 128 or 256 MiB


class MappedZip:
    """The two calls torch.serialization._load makes on a zip reader, served from a private mmap of
    the whole file (torch 2.1's mmap=True path): records are stored uncompressed, so a tensor's bytes
    are a slice of the mapping."""

    def __init__(self, path):
        self.zf = zipfile.ZipFile(path)
        self.f = open(path, "rb")
        self.mm = mmap.mmap(self.f.fileno(), 0, access=mmap.ACCESS_COPY)   # MAP_PRIVATE
        self.names = {i.filename.split("/", 1)[1]: i for i in self.zf.infolist()}

    def _offset(self, info):
        self.f.seek(info.header_offset)
        head = self.f.read(30)                 # the local file header: name and extra lengths
        n, m = struct.unpack("<HH", head[26:30])
        return info.header_offset + 30 + n + m

    def get_record(self, name):
        return self.zf.read(self.names[name])

    def get_storage_from_record(self, name, nbytes, _storage_type):
        info = self.names[name]
        assert info.compress_type == zipfile.ZIP_STORED and info.file_size == nbytes
        return torch.frombuffer(self.mm, dtype=torch.uint8, count=nbytes, offset=self._offset(info))


def load_mmap(path):
    try:
        return torch.load(path, mmap=True, weights_only=True)
    except TypeError:                          # torch < 2.1: no mmap=True
        from torch import _weights_only_unpickler
        return torch.serialization._load(MappedZip(path), None, _weights_only_unpickler)


torch.set_num_threads(1)
d = tempfile.mkdtemp(prefix="sop_torch_mmap_", dir=os.environ.get("SOP_SCENARIO_TMP", "/var/tmp"))
path = os.path.join(d, "ckpt.pt")
try:
    g = torch.Generator().manual_seed(0)
    state = {"layer%d.weight" % i: torch.randn(N, N, generator=g) / N ** 0.5 for i in range(LAYERS)}
    torch.save(state, path)
    del state
    weights = load_mmap(path)
    os.unlink(path)                            # mapped: gone from disk even after SIGKILL
    os.rmdir(d)
    x = torch.randn(16, N, generator=g)
    t_end = time.time() + 25
    ready = False
    total = 0.0
    while time.time() < t_end:
        h = x
        for i in range(LAYERS):                # a forward pass through every mapped weight
            h = torch.tanh(h @ weights["layer%d.weight" % i])
        total += float(h.sum())
        if not ready:                          # the first pass mapped every page
            print("ready", flush=True)
            ready = True
finally:
    try:
        os.unlink(path)
        os.rmdir(d)
    except OSError:
        pass
    sys.exit(0)
