"""The reference trainers in PyTorch 1.13, for the accuracy comparison of issue 7: the
same models, optimizer, batch, transforms and epochs as examples/fashion_mlp.c and
examples/fashion_cnn.c (reference recipe), on the same IDX files.

    /usr/bin/python3 bench/torch_fashion.py --model mlp|cnn [--epochs 5] [--seed 1]

Prints the test accuracy after each epoch."""
import argparse, os, sys
import refblas  # before PyTorch: it sets OpenBLAS's core
import torch
import torch.nn as nn
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_train import idx, model

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(a.seed)
    d = os.environ.get("CLG_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    def load(split):
        x = torch.from_numpy(idx("%s/%s-images-idx3-ubyte.gz" % (d, split)).astype("float32") / 255.0)
        y = torch.from_numpy(idx("%s/%s-labels-idx1-ubyte.gz" % (d, split)).astype("int64"))
        return ((x - 0.2860) / 0.3530).unsqueeze(1), y
    xtr, ytr = load("train")
    xte, yte = load("t10k")
    m = model(a.model)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, a.epochs + 1):
        m.train()
        perm = torch.randperm(xtr.shape[0])
        for s in range(0, xtr.shape[0], 128):
            i = perm[s:s + 128]
            opt.zero_grad()
            loss_fn(m(xtr[i]), ytr[i]).backward()
            opt.step()
        m.eval()
        with torch.no_grad():
            acc = sum((m(xte[s:s + 1000]).argmax(1) == yte[s:s + 1000]).sum().item() for s in range(0, 10000, 1000))
        print("epoch %d test accuracy %.2f%%" % (epoch, acc / 100.0), flush=True)

if __name__ == "__main__":
    main()
