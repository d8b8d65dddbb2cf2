# expect: dataloader.no_workers
# expect@cpu1: dataloader.no_workers:info
#   (on one CPU, workers could not run beside the step: the rule notes it, no warning)
# sopctl: --duration 3
# needs: torch torchvision PIL
"""torchvision_imagefolder.py — SOP §6.1/§6.2 as a tutorial writes it: ImageFolder over a folder
of JPEGs (256 photo-sized images generated into a temp dir), PIL decode + RandomResizedCrop,
RandomHorizontalFlip, ToTensor, Normalize, a DataLoader with num_workers=0 (the default) and a
small CNN step. Decoding and augmenting in the training process between steps is most of the
time. Prints "ready" once training runs, exits after about 60 s and removes its images (a run
killed before that is swept by the next one)."""
import glob
import os
import shutil
import tempfile
import time

import numpy as np
import torch
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1") or 1)  # the matrix's size: 1 or 2
PREFIX = "sop_imagefolder_"


def sweep_stale():
    """Remove the image folders of earlier runs that were killed (their pid is gone)."""
    for d in glob.glob(os.path.join(tempfile.gettempdir(), PREFIX + "*")):
        try:
            pid = int(os.path.basename(d)[len(PREFIX):].split("_")[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except (ValueError, PermissionError):
            pass


def make_images(root, n, w, h):
    """n JPEGs in 4 class folders: 32 distinct images, the rest hard links to them (encoding is
    slow on a loaded CPU, and a killed run leaves only 32 files' worth; decoding, the program's
    cost, is the same)."""
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:h, 0:w]
    classes = ("cat", "dog", "bird", "fish")
    for c in classes:
        os.makedirs(os.path.join(root, c))
    firsts = []
    for i in range(min(n, 32)):
        base = np.stack([(xx * (i % 7 + 1)) % 256, (yy * (i % 5 + 1)) % 256,
                         (xx + yy + 9 * i) % 256], -1)
        img = np.clip(base + rng.integers(-24, 24, base.shape), 0, 255).astype(np.uint8)
        path = os.path.join(root, classes[i % 4], "%05d.jpg" % i)
        Image.fromarray(img).save(path, quality=90)
        firsts.append(path)
    for i in range(len(firsts), n):
        os.link(firsts[i % len(firsts)], os.path.join(root, classes[i % 4], "%05d.jpg" % i))


def main(root):
    # photo-sized JPEGs (ImageNet's are about 500x375), cropped to 128 for a small model
    make_images(root, 256, 320 + 160 * INTENSITY, 240 + 120 * INTENSITY)
    tf = transforms.Compose([
        transforms.RandomResizedCrop(128),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    data = datasets.ImageFolder(root, transform=tf)
    loader = DataLoader(data, batch_size=32, shuffle=True)  # num_workers=0: the default
    model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
                          nn.Flatten(), nn.Linear(128, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    deadline = time.time() + 60
    first = True
    while time.time() < deadline:
        for x, y in loader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            if first:
                print("ready", flush=True)
                first = False
            if time.time() > deadline:
                break


if __name__ == "__main__":
    sweep_stale()
    root = tempfile.mkdtemp(prefix="%s%d_" % (PREFIX, os.getpid()))
    try:
        main(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
