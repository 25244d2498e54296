"""Small data for the CLI tests, cut from Debian's Fashion-MNIST: an IDX directory
(512 training and 256 test samples, uncompressed), a CSV file, and raw inputs for
`clgrad predict` as .npy and IDX. Usage: make_data.py OUTDIR [TEST_SAMPLES]: fewer test
samples for the few-step runs of slow devices (evaluation dominates them there)."""
import gzip
import os
import sys

import numpy as np

SRC = os.environ.get("CLG_FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist"


def idx_read(name):
    data = gzip.open(os.path.join(SRC, name + ".gz")).read()
    ndim = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(shape)


def idx_write(path, a):
    with open(path, "wb") as f:
        f.write(bytes([0, 0, 8, a.ndim]))
        for d in a.shape:
            f.write(int(d).to_bytes(4, "big"))
        f.write(a.astype(np.uint8).tobytes())


def main(out, n_test=256):
    os.makedirs(os.path.join(out, "data"), exist_ok=True)
    for split, n in (("train", 512), ("t10k", n_test)):
        x = idx_read(split + "-images-idx3-ubyte")[:n]
        y = idx_read(split + "-labels-idx1-ubyte")[:n]
        idx_write(os.path.join(out, "data", split + "-images-idx3-ubyte"), x)
        idx_write(os.path.join(out, "data", split + "-labels-idx1-ubyte"), y)
    x = idx_read("train-images-idx3-ubyte")[:256].reshape(256, -1)
    y = idx_read("train-labels-idx1-ubyte")[:256]
    rows = np.concatenate([y[:, None], x], axis=1)
    header = "label," + ",".join("p%d" % i for i in range(784))
    np.savetxt(os.path.join(out, "small.csv"), rows, fmt="%d", delimiter=",", header=header, comments="")
    test = idx_read("t10k-images-idx3-ubyte")
    np.save(os.path.join(out, "x.npy"), test[:5])
    idx_write(os.path.join(out, "x.idx"), test[:7])
    np.save(os.path.join(out, "one.npy"), test[0].astype(np.float32)[None])   # one sample [1, 28, 28]
    np.save(os.path.join(out, "one2d.npy"), test[0].astype(np.float32))       # the same as [28, 28]
    np.save(os.path.join(out, "scaled.npy"), test[:5].astype(np.float32) / 255)   # already in [0, 1]
    np.save(os.path.join(out, "bad_shape.npy"), np.zeros((3, 5), np.float32))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 256)
