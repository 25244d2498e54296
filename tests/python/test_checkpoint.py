"""python_checkpoint: clgrad.checkpoint reads what `clgrad train` writes (the weights,
the optimizer state, the model file and the train state, against `clgrad info`), and
clgrad reads what Python writes: a checkpoint whose weights Python changed predicts
what NumPy computes from those weights. Usage: test_checkpoint.py CLGRAD"""
import json
import os
import re

import numpy as np

from clgrad import checkpoint, safetensors
from common import fail, run, samples, tmpdir, trained


def mlp(w, x, model):
    """The model file's network in NumPy, after its input transform (scale, normalize)."""
    d = model["data"]
    x = (x * d["scale"] - d["normalize"]["mean"][0]) / d["normalize"]["std"][0]
    h = np.maximum(x @ w["0.weight"].T + w["0.bias"], 0)
    return h @ w["head.weight"].T + w["head.bias"]


def main():
    tmp = tmpdir()
    _, ckpt = trained(tmp)
    ck = checkpoint.load(ckpt)
    info = run("info", ckpt)

    # what clgrad info reports, read by Python
    shapes = {"0.weight": (16, 4), "0.bias": (16,), "head.weight": (3, 16), "head.bias": (3,)}
    if {k: v.shape for k, v in ck.weights.items()} != shapes:
        fail("weights %s" % {k: v.shape for k, v in ck.weights.items()})
    params = sum(v.size for v in ck.weights.values())
    if "%d parameters" % params not in info:
        fail("clgrad info says otherwise than %d parameters: %s" % (params, info))
    m = re.search(r"tensors: (\d+) \((\d+) of optimizer state\)", info)
    if not m or (int(m.group(1)), int(m.group(2))) != (len(ck.tensors()), len(ck.optimizer)):
        fail("clgrad info: %s; Python: %d tensors, %d of optimizer state" % (m and m.group(0), len(ck.tensors()),
                                                                             len(ck.optimizer)))
    m = re.search(r"step (\d+) \| next epoch (\d+), batch (\d+)", info)
    if not m or (ck.train["step"], ck.train["epoch"] + 1, ck.train["batch"]) != tuple(map(int, m.groups())):
        fail("train state %s, clgrad info: %s" % (ck.train, m and m.group(0)))
    if ck.version != 1 or ck.metadata["optim.name"] != "adam" or ck.train["step"] != 12:
        fail("metadata: %s" % ck.metadata)
    if ck.model["layers"][2]["name"] != "head" or ck.model["data"]["scale"] != 0.5:
        fail("the model file inside: %s" % ck.model_text)
    steps = ck.optimizer["optim.state.head.weight.step"]
    if steps.dtype != np.int64 or steps.shape != () or int(steps) != 12:
        fail("optimizer step tensor %r" % steps)
    if ck.optimizer["optim.state.0.weight.exp_avg_sq"].shape != (16, 4):
        fail("adam state shapes")

    # clgrad's predictions are NumPy's on the weights Python read
    x, _ = samples(5, 1)
    np.save(os.path.join(tmp, "x.npy"), x)
    run("predict", ckpt, os.path.join(tmp, "x.npy"), "--out", os.path.join(tmp, "p.npy"))
    p = np.load(os.path.join(tmp, "p.npy"))
    if not np.allclose(p, mlp(ck.weights, x, ck.model), rtol=1e-5, atol=1e-5):
        fail("clgrad predict %s, NumPy %s" % (p, mlp(ck.weights, x, ck.model)))

    # Python changes the weights and writes the checkpoint; clgrad reads it back
    ck.weights["head.bias"] = ck.weights["head.bias"] + np.array([5, 0, -5], np.float32)
    ck.weights["0.weight"] = ck.weights["0.weight"] * 2
    edited = os.path.join(tmp, "edited.ckpt")
    checkpoint.save(edited, ck)
    if "tensors: %d (%d of optimizer state)" % (len(ck.tensors()), len(ck.optimizer)) not in run("info", edited):
        fail("clgrad info on the edited checkpoint")
    run("predict", edited, os.path.join(tmp, "x.npy"), "--out", os.path.join(tmp, "q.npy"))
    q = np.load(os.path.join(tmp, "q.npy"))
    if np.allclose(q, p, atol=0.1) or not np.allclose(q, mlp(ck.weights, x, ck.model), rtol=1e-5, atol=1e-5):
        fail("clgrad predict on the edited checkpoint: %s, NumPy %s" % (q, mlp(ck.weights, x, ck.model)))
    # the optimizer state and metadata came through unchanged: the run resumes from it
    again = checkpoint.load(edited)
    if again.metadata != ck.metadata or any(not np.array_equal(again.optimizer[k], v) for k, v in ck.optimizer.items()):
        fail("the edited checkpoint lost metadata or optimizer state")
    run("train", os.path.join(tmp, "m.json"), "--data", os.path.join(tmp, "d.csv"), "--epochs", "3", "--resume", edited,
        "--out", os.path.join(tmp, "r.ckpt"))
    if checkpoint.load(os.path.join(tmp, "r.ckpt")).train["step"] != 18:
        fail("the resumed run did not continue from step 12")

    # and with torch tensors: the same file, byte for byte
    tck = checkpoint.load(edited, torch=True)
    torch_path = os.path.join(tmp, "torch.ckpt")
    checkpoint.save(torch_path, tck)
    if open(torch_path, "rb").read() != open(edited, "rb").read():
        fail("torch tensors written back differ from the NumPy file")
    if json.loads(safetensors.load_metadata(torch_path)["model"]) != ck.model:
        fail("the model file through torch")
    print("python_checkpoint: clgrad info, predict and resume agree with Python's reading and writing")


main()
