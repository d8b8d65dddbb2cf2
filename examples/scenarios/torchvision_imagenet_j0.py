# expect: dataloader.no_workers
# expect@cpu1: dataloader.no_workers:info
#   (on one CPU, workers could not run beside the step: the rule notes it, no warning)
# sopctl: --duration 3
# needs: torch torchvision PIL
"""torchvision_imagenet_j0.py — SOP §6.1/§6.2 written as the PyTorch ImageNet example is: argparse
with `-j/--workers` (run here as `-j 0`), full-size JPEGs (about 0.5-1 megapixel, as ImageNet's
photos) in an ImageFolder, RandomResizedCrop(224) + flip + ToTensor + Normalize, a ResNet-style
block, and the example's own timers: `data_time` (waiting for the loader) against `batch_time`.
The program prints the share of each step its own timer spends in data loading, then "ready".
The fetch runs through many distinct stacks (PIL's decoder, each transform, collate), none of
them dominant: the rule must count them all, not only the most sampled few. Exits after about
60 s and removes its images (a run killed before that is swept by the next one)."""
import argparse
import glob
import os
import shutil
import tempfile
import time

import numpy as np
import torch
from PIL import Image
from torch import nn
from torchvision import datasets, transforms

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1") or 1)  # the matrix's size: 1 or 2
PREFIX = "sop_imagenet_j0_"


def sweep_stale():
    for d in glob.glob(os.path.join(tempfile.gettempdir(), PREFIX + "*")):
        try:
            os.kill(int(os.path.basename(d)[len(PREFIX):].split("_")[0]), 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except (ValueError, PermissionError):
            pass


def make_images(root, n, w, h):
    """n JPEGs in 10 class folders: 24 distinct photo-like images, the rest hard links."""
    rng = np.random.default_rng(1)
    yy, xx = np.mgrid[0:h, 0:w]
    firsts = []
    for c in range(10):
        os.makedirs(os.path.join(root, "n%08d" % c))
    for i in range(n):
        path = os.path.join(root, "n%08d" % (i % 10), "img_%05d.JPEG" % i)
        if i < 24:
            base = np.stack([(xx * (i % 5 + 2) + yy) % 256, (yy * (i % 3 + 1)) % 256,
                             (xx * yy // (w // 4 + 1) + 7 * i) % 256], -1)
            img = np.clip(base + rng.integers(-32, 32, base.shape), 0, 255).astype(np.uint8)
            Image.fromarray(img).save(path, quality=92)
            firsts.append(path)
        else:
            os.link(firsts[i % len(firsts)], path)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())

    def forward(self, x):
        return x + self.conv(x)


def main(root, args):
    make_images(root, 200, 640 + 320 * INTENSITY, 480 + 240 * INTENSITY)
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_dataset = datasets.ImageFolder(root, transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        normalize,
    ]))
    train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=args.batch_size, shuffle=True,
                                               num_workers=args.workers, pin_memory=False)
    model = nn.Sequential(nn.Conv2d(3, 16, 7, stride=2, padding=3), nn.ReLU(), nn.MaxPool2d(2), Block(16),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9)
    deadline = time.time() + 60
    data_time = batch_time = 0.0
    steps = 0
    reported = False
    while time.time() < deadline:
        end = time.perf_counter()
        for images, target in train_loader:
            data_time += time.perf_counter() - end
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            batch_time += time.perf_counter() - end
            steps += 1
            if not reported and steps >= 5:
                print("measured: data loading %.0f%% of each step (data_time / batch_time over %d steps)"
                      % (100 * data_time / batch_time, steps), flush=True)
                print("ready", flush=True)
                reported = True
            if time.time() > deadline:
                break
            end = time.perf_counter()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="ImageNet-style training")
    parser.add_argument("-j", "--workers", default=4, type=int, help="data loading workers")
    parser.add_argument("-b", "--batch-size", default=16, type=int)
    sweep_stale()
    root = tempfile.mkdtemp(prefix="%s%d_" % (PREFIX, os.getpid()))
    try:
        main(root, parser.parse_args(["-j", "0"]))
    finally:
        shutil.rmtree(root, ignore_errors=True)
