"""PyTorch's side of bench/bench_conv.c: the reference CNN's convolutions at batch 128
(forward; backward to dW, db and, for conv2, dx) and a whole training step, float32 on
the CPU. Prints "torch <version>" then "<what> <min> <median> <max>" in milliseconds.

    python3 bench/conv_torch.py REPEATS
"""
import statistics
import sys
import time

import refblas  # before PyTorch: it sets OpenBLAS's core
import torch
import torch.nn.functional as F

torch.set_num_threads(2)
REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 10


def timed(fn):
    fn()  # warm-up
    ms = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        ms.append(1e3 * (time.perf_counter() - t0))
    return min(ms), statistics.median(ms), max(ms)


def layer(c, h, o, input_grad):
    x = torch.randn(128, c, h, h, requires_grad=input_grad)
    w = (0.1 * torch.randn(o, c, 5, 5)).requires_grad_()
    b = (0.1 * torch.randn(o)).requires_grad_()
    gy = torch.randn(128, o, h, h)

    def fwd():
        with torch.no_grad():
            F.conv2d(x, w, b, padding=2)

    def bwd():
        y = F.conv2d(x, w, b, padding=2)
        y.backward(gy)  # only the backward is timed below

    def bwd_only():
        y = F.conv2d(x, w, b, padding=2)
        t0 = time.perf_counter()
        y.backward(gy)
        return time.perf_counter() - t0

    bwd()
    times = sorted(1e3 * bwd_only() for _ in range(REPEATS))
    return timed(fwd), (times[0], statistics.median(times), times[-1])


def cnn_step():
    p = [torch.randn(*s).mul_(0.05).requires_grad_() for s in
         [(16, 1, 5, 5), (16,), (32, 16, 5, 5), (32,), (128, 1568), (128,), (10, 128), (10,)]]
    x = torch.randn(128, 1, 28, 28)
    labels = torch.randint(0, 10, (128,))

    def step():
        h = F.max_pool2d(F.relu(F.conv2d(x, p[0], p[1], padding=2)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, p[2], p[3], padding=2)), 2)
        h = F.relu(F.linear(h.flatten(1), p[4], p[5]))
        F.cross_entropy(F.linear(h, p[6], p[7]), labels).backward()
        for t in p:
            t.grad = None

    return timed(step)


print("torch", torch.__version__, "blas", refblas.describe())
for name, (c, h, o, ig) in [("conv1", (1, 28, 16, False)), ("conv2", (16, 14, 32, True))]:
    f, b = layer(c, h, o, ig)
    print(name, "fwd", *("%.3f" % v for v in f))
    print(name, "bwd", *("%.3f" % v for v in b))
print("cnn step", *("%.3f" % v for v in cnn_step()))
