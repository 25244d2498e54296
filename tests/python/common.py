"""What the Python tests that run the clgrad command share: a small model file and a
CSV of 96 samples made here (no dataset needed), trained for a few steps."""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

MODEL = """{"input": [4], "classes": ["a", "b", "c"],
 "layers": [{"type": "linear", "out": 16}, "relu", {"type": "linear", "out": 3, "name": "head"}],
 "optimizer": {"type": "adam", "lr": 0.01}, "train": {"batch": 16, "epochs": 2, "seed": 3, "workers": 1},
 "data": {"scale": 0.5, "normalize": {"mean": [0.25], "std": [2]}}}"""


def fail(what):
    sys.exit("FAIL: " + what)


CHECKS = [0]


def check(cond, what):
    """One check: counted (CHECKS[0]), FAIL and exit when cond is false."""
    CHECKS[0] += 1
    if not cond:
        fail(what)


def run(*args):
    """The clgrad command (argv[1]) with args; its stdout, or FAIL with its output."""
    if len(sys.argv) < 2:
        fail("usage: %s CLGRAD" % sys.argv[0])
    p = subprocess.run([sys.argv[1]] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode:
        fail("clgrad %s exited %d: %s" % (" ".join(map(str, args)), p.returncode, p.stdout.decode()))
    return p.stdout.decode()


def samples(n, seed):
    """Raw inputs [n, 4] and labels [n] a small MLP learns quickly."""
    rng = np.random.default_rng(seed)
    x = rng.normal(scale=2.0, size=(n, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32) + (x[:, 2] > 1)
    return x, y.astype(np.int32)


def trained(tmp):
    """(model file, checkpoint) of a short clgrad train run in tmp."""
    x, y = samples(96, 0)
    csv = os.path.join(tmp, "d.csv")
    rows = np.concatenate([y[:, None], x], 1)
    np.savetxt(csv, rows, fmt=["%d"] + ["%.6f"] * 4, delimiter=",", header="label,a,b,c,d", comments="")
    model = os.path.join(tmp, "m.json")
    with open(model, "w") as f:
        f.write(MODEL)
    ckpt = os.path.join(tmp, "a.ckpt")
    run("train", model, "--data", csv, "--out", ckpt)
    return model, ckpt


def tmpdir():
    """A fresh directory, removed when the test ends (passed or failed)."""
    path = tempfile.mkdtemp(prefix="clgrad-py.")
    atexit.register(shutil.rmtree, path, True)
    return path
