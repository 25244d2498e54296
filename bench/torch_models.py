"""PyTorch 1.13 twin of bench_models: the same models, optimizers, batches and step.

    python3 bench/torch_models.py --model gpt|gpt_tiny|resnet [--steps N] [--repeats R]

gpt / gpt_tiny: nanoGPT's model (tests/io/torch_transformer.py's GPT: attention composed from
matmul and softmax, as PyTorch 1.13 has no fused one), AdamW (0.9, 0.99, weight decay 0.1),
gradients clipped to 1, batch 32 of random bytes. resnet: the ResNet-20 of
examples/models/resnet_fashion.json (torchvision's BasicBlock), SGD momentum 0.9, weight
decay 5e-4, batch 128 of random images. 2 threads, OpenBLAS's core from the CPU's flags
(refblas). Prints one "rate <tokens or images per second>" line per repeat, then "blas ..."."""
import argparse
import collections
import os
import sys
import time

import refblas  # before NumPy and PyTorch: it sets OpenBLAS's core
import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "io"))
from torch_transformer import GPT  # noqa: E402


class BasicBlock(nn.Module):
    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or cin != planes:
            self.downsample = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (x if self.downsample is None else self.downsample(x)))


def resnet20():
    def stage(cin, planes, stride):
        return nn.Sequential(*[BasicBlock(cin if i == 0 else planes, planes, stride if i == 0 else 1) for i in range(3)])
    # named as examples/models/resnet_fashion.json's layers, so that state dicts cross unchanged
    return nn.Sequential(collections.OrderedDict([
        ("conv1", nn.Conv2d(1, 16, 3, 1, 1, bias=False)), ("bn1", nn.BatchNorm2d(16)), ("2", nn.ReLU()),
        ("layer1", stage(16, 16, 1)), ("layer2", stage(16, 32, 2)), ("layer3", stage(32, 64, 2)),
        ("6", nn.AdaptiveAvgPool2d(1)), ("7", nn.Flatten()), ("fc", nn.Linear(64, 10))]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="gpt")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu", help="cuda: on a GPU (float32, no TF32), the batches copied there")
    a = ap.parse_args()
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_num_threads(2)
    torch.manual_seed(1)
    tokens = a.model.startswith("gpt")
    T = 128 if a.model == "gpt" else 64
    if tokens:
        m = GPT(256, T, 4 if a.model == "gpt" else 2, 4, 128, True).to(dev)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
    else:
        m = resnet20().to(dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    m.to(dev).train()
    per_step = 32 * T if tokens else 128
    for _ in range(a.repeats):
        t0 = 0.0
        for s in range(a.steps + 3):
            if s == 3:
                sync()
                t0 = time.perf_counter()
            if tokens:
                b = torch.randint(0, 256, (32, T + 1))
                x, y = b[:, :-1].to(dev), b[:, 1:].to(dev)
                loss = F.cross_entropy(m(x).reshape(-1, 256), y.reshape(-1))
            else:
                x, y = torch.randn(128, 1, 28, 28).to(dev), torch.randint(0, 10, (128,)).to(dev)
                loss = F.cross_entropy(m(x), y)
            opt.zero_grad()
            loss.backward()
            if tokens:
                nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
        sync()
        print("rate %.1f" % (per_step * a.steps / (time.perf_counter() - t0)), flush=True)
    print("blas", refblas.describe())


if __name__ == "__main__":
    main()
