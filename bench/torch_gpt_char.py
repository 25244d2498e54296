"""PyTorch 1.13 twin of examples/gpt_char.c: the same corpus, windows, model (nanoGPT's GPT,
tests/io/torch_transformer.py: 4 layers, 4 heads, width 128, context 128; attention
composed from matmul and softmax, as 1.13 has no fused one), optimizer (AdamW 0.9 / 0.99,
weight decay 0.1, warm-up over 100 steps then cosine to a tenth over the planned steps,
gradients clipped to 1) and held-out loss.

    python3 bench/torch_gpt_char.py --minutes 5 [--seed 1] [--data /usr/share/games/fortunes]

Training: the first 95% of the corpus (bench/torch_char_lm.py's) cut into 32 contiguous
streams, window w of each a batch row; every byte of a window predicted from those before
it in the window. Held-out: the last 5% the same way, each window on its own, mean nats
per byte; printed as "minutes M steps N heldout_bits X train_bits Y" at the end (the
budget counts training only). 2 threads, OpenBLAS's core from the CPU's flags."""
import argparse
import math
import os
import sys
import time

import refblas  # noqa: F401  (before NumPy and PyTorch: it sets OpenBLAS's core)
import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "io"))
from torch_char_lm import load_corpus, streams  # noqa: E402
from torch_transformer import GPT  # noqa: E402

BATCH, T = 32, 128


def heldout_nats(model, held):
    rows = streams(held, BATCH)
    n, total = rows.shape[1], 0.0
    model.eval()
    with torch.no_grad():
        for lo in range(0, n - 1, T):
            hi = min(lo + T, n - 1)
            total += F.cross_entropy(model(rows[:, lo:hi]).reshape(-1, 256), rows[:, lo + 1:hi + 1].reshape(-1),
                                     reduction="sum").item()
    model.train()
    return total / (rows.shape[0] * (n - 1))


def lr_at(step, t_max, lr=1e-3, warmup=100):
    if step < warmup:
        return lr * (0.01 + 0.99 * step / warmup)
    t = min(step, t_max)
    return lr / 10 + (lr - lr / 10) * (1 + math.cos(math.pi * t / t_max)) / 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data", default="/usr/share/games/fortunes")
    a = ap.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(a.seed)
    data, _ = load_corpus(a.data)
    split = len(data) - len(data) // 20
    rows, held = streams(data[:split], BATCH), data[split:]
    windows = (rows.shape[1] - 1) // T
    model = GPT(256, T, 4, 4, 128, True)
    for name, p in model.named_parameters():   # nanoGPT's initialisation
        if name.endswith("c_proj.weight"):
            nn.init.normal_(p, 0, 0.02 / math.sqrt(2 * 4))
        elif p.dim() == 2:
            nn.init.normal_(p, 0, 0.02)
        elif name.endswith("bias"):
            nn.init.zeros_(p)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
    budget, elapsed, step, t_max, losses = a.minutes * 60, 0.0, 0, 10 ** 6, []
    while elapsed < budget:
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr_at(step, t_max)
        lo = (step % windows) * T
        x, y = rows[:, lo:lo + T], rows[:, lo + 1:lo + T + 1]
        loss = F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses = (losses + [loss.item()])[-100:]
        step += 1
        elapsed += time.perf_counter() - t0
        if step == 100:   # the cosine's length from the warm-up's pace, as gpt_char
            t_max = step + int((budget - elapsed) / (elapsed / step))
    print("minutes %g steps %d heldout_bits %.4f train_bits %.4f tokens_per_s %.0f" % (
        a.minutes, step, heldout_nats(model, held) / math.log(2), sum(losses) / len(losses) / math.log(2),
        step * BATCH * T / elapsed), flush=True)


if __name__ == "__main__":
    main()
