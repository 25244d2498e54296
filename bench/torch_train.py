"""PyTorch 1.13 twin of bench_train: the same models, optimizer, batch and data
(Fashion-MNIST read from the same IDX files), timed from step 6 on.

    python3 bench/torch_train.py --model mlp|cnn [--steps N] [--repeats R] [--device cuda]

--device cuda (on a GPU machine whose PyTorch has CUDA; issue 12): the model on the GPU,
each batch copied there per step as bench_train does, the GPU drained at both ends of
the timing, float32 without TF32; "conv" then names cuDNN and its version. Default: the CPU.

At its best on a 2-core machine: refblas sets OpenBLAS's core from the CPU's flags, 2
threads, OMP_WAIT_POLICY=PASSIVE. Prints one "rate <images/s>" line per repeat, then
"blas <what ran>" and "conv <engine>" (PyTorch's convolutions run on oneDNN when it has
it, not on the BLAS)."""
import argparse, gzip, os, time
import refblas  # before NumPy and PyTorch: it sets OpenBLAS's core
import numpy as np
import torch
import torch.nn as nn

def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    nd = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)

def model(kind):
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                             nn.Linear(256, 10))
    return nn.Sequential(nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(1568, 128), nn.ReLU(), nn.Linear(128, 10))

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    # float32 as clgrad computes it: no TF32 (PyTorch's cuDNN convolutions default to it)
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_num_threads(2)
    torch.manual_seed(1)
    d = os.environ.get("CLG_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    x = torch.from_numpy(idx(d + "/train-images-idx3-ubyte.gz").astype(np.float32) / 255.0)
    x = ((x - 0.2860) / 0.3530).unsqueeze(1)
    y = torch.from_numpy(idx(d + "/train-labels-idx1-ubyte.gz").astype(np.int64))
    m = model(a.model).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(1)
    for _ in range(a.repeats):
        perm = torch.randperm(x.shape[0], generator=g)
        t0, images = 0.0, 0
        for s in range(a.steps + 5):
            if s == 5:
                sync()
                t0, images = time.perf_counter(), 0
            i = perm[(s * 128) % (x.shape[0] - 128):][:128]
            xb, yb = x[i].to(dev), y[i].to(dev)
            opt.zero_grad()
            loss = loss_fn(m(xb), yb)
            loss.backward()
            opt.step()
            images += xb.shape[0]
        loss.item()
        sync()
        print("rate %.1f" % (images / (time.perf_counter() - t0)), flush=True)
    print("blas", refblas.describe())
    print("conv", "cuDNN %d on %s" % (torch.backends.cudnn.version(), torch.cuda.get_device_name())
          if dev.type == "cuda" else conv_engine())

def conv_engine():
    if torch.backends.mkldnn.is_available():
        return "oneDNN %s" % ".".join(str(v) for v in torch._C._onednn_version()) \
            if hasattr(torch._C, "_onednn_version") else "oneDNN"
    return "im2col + BLAS"

if __name__ == "__main__":
    main()
