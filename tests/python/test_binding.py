"""python_binding: the ctypes binding (clgrad.core) against the clgrad command. A
checkpoint's forward equals `clgrad predict` on the same raw inputs; a model file's
network, trained by train_step, lowers its loss; a step from a checkpoint continues its
Adam state as NumPy's Adam does, and clips as the model file says; the library's errors arrive as
clgrad.Error with its message; nothing leaks and closing frees in order. Usage:
test_binding.py CLGRAD (CLGRAD_LIB names the library)."""
import os
import subprocess
import sys

import numpy as np

import clgrad
from common import fail, run, samples, tmpdir, trained


def expect_error(fn, *needles):
    try:
        fn()
    except clgrad.Error as e:
        if not all(n in str(e) for n in needles):
            fail("error %r lacks %s" % (str(e), needles))
        return e
    fail("no clgrad.Error (want one mentioning %s)" % (needles,))


def forward_matches_predict(dev, tmp, ckpt):
    x, _ = samples(7, 1)
    np.save(os.path.join(tmp, "x.npy"), x)
    run("predict", ckpt, os.path.join(tmp, "x.npy"), "--out", os.path.join(tmp, "p.npy"))
    p = np.load(os.path.join(tmp, "p.npy"))
    with clgrad.Model.load(dev, ckpt) as m:
        if m.input_shape != (4,) or m.outputs != 3 or m.takes_tokens:
            fail("model from the checkpoint: input %s, outputs %d" % (m.input_shape, m.outputs))
        got = m(m.transform(x))
        if got.shape != (7, 3) or got.dtype != np.float32 or not np.allclose(got, p, rtol=1e-6, atol=1e-6):
            fail("forward %s, clgrad predict %s" % (got, p))
        if np.allclose(m(x), p, atol=1e-3):
            fail("untransformed inputs gave predict's logits: the transform did nothing")


def training_lowers_loss(dev, model_file):
    x, y = samples(64, 2)
    with clgrad.Model.load(dev, model_file) as m:
        xt = m.transform(x)
        before = m(xt)
        live = dev.live_tensors()
        losses = [m.train_step(xt, y) for _ in range(30)]
        # the first step adds a gradient and adam's two state tensors to each of the 4 parameters
        if dev.live_tensors() != live + 12:
            fail("train steps leak tensors: %d live before, %d after" % (live, dev.live_tensors()))
        steady = dev.live_tensors()
        m.train_step(xt, y)
        m(xt)
        if dev.live_tensors() != steady:
            fail("a step or a forward leaks: %d -> %d live tensors" % (steady, dev.live_tensors()))
        if not (losses[-1] < 0.7 * losses[0]) or not all(np.isfinite(losses)):
            fail("30 steps did not lower the loss: %s" % losses)
        if np.array_equal(before, m(xt)):
            fail("training changed nothing in the forward")
        # the same file and seed build the same network
        with clgrad.Model.load(dev, model_file) as again:
            if not np.array_equal(again(xt), before):
                fail("a model file built twice with its seed gives two networks")
    print("python_binding: loss %.4f -> %.4f in 30 steps" % (losses[0], losses[-1]))


def mlp_grads(w, x, y):
    """The gradients of the mean cross-entropy of the test model (linear, relu, linear)."""
    z1 = x @ w["0.weight"].T + w["0.bias"]
    h = np.maximum(z1, 0)
    z2 = h @ w["head.weight"].T + w["head.bias"]
    p = np.exp(z2 - z2.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    dz2 = (p - np.eye(3)[y]) / len(y)
    dz1 = (dz2 @ w["head.weight"]) * (z1 > 0)
    return {"head.weight": dz2.T @ h, "head.bias": dz2.sum(0), "0.weight": dz1.T @ x, "0.bias": dz1.sum(0)}


def weights(m, tmp):
    path = os.path.join(tmp, "weights.safetensors")
    m.save(path)
    return {k: v.astype(np.float64) for k, v in clgrad.safetensors.load(path).items()}


def resumed_optimizer(dev, tmp, ckpt):
    """A checkpoint's Adam state is restored: one step equals NumPy's Adam from it."""
    ck = clgrad.checkpoint.load(ckpt)
    w = {k: v.astype(np.float64) for k, v in ck.weights.items()}
    x, y = samples(16, 3)
    with clgrad.Model.load(dev, ckpt) as m:
        xt = m.transform(x)
        m.train_step(xt, y)
        got = weights(m, tmp)
    g = mlp_grads(w, xt.astype(np.float64), y)
    t = ck.train["optim.steps"] + 1
    lr, b1, b2, eps = ck.train["optim.lr"], 0.9, 0.999, 1e-8
    for k in w:
        st = "optim.state.%s." % k
        mom = b1 * ck.optimizer[st + "exp_avg"] + (1 - b1) * g[k]
        var = b2 * ck.optimizer[st + "exp_avg_sq"] + (1 - b2) * g[k] ** 2
        want = w[k] - lr * (mom / (1 - b1 ** t)) / (np.sqrt(var / (1 - b2 ** t)) + eps)
        if not np.allclose(got[k], want, rtol=1e-4, atol=1e-5):
            fail("%s after a step from the checkpoint's Adam state: off by %g" % (k, np.abs(got[k] - want).max()))
    with clgrad.Model.load(dev, ckpt, optimizer_state=False) as fresh:
        fresh.train_step(xt, y)
        if all(np.allclose(got[k], v, rtol=1e-4, atol=1e-5) for k, v in weights(fresh, tmp).items()):
            fail("a fresh optimizer stepped as the restored one: the state was not restored")


def clipped(dev, tmp):
    """The model file's clip_grad_norm applies: an SGD step moves the weights by lr * clip."""
    path = os.path.join(tmp, "clip.json")
    with open(path, "w") as f:
        f.write('{"input": [4], "layers": [{"type": "linear", "out": 3}], '
                '"optimizer": {"type": "sgd", "lr": 0.5, "clip_grad_norm": 0.01}}')
    x, y = samples(16, 4)
    with clgrad.Model.load(dev, path) as m:
        before = weights(m, tmp)
        m.train_step(x, y)
        after = weights(m, tmp)
    moved = np.sqrt(sum(((after[k] - before[k]) ** 2).sum() for k in before))
    if abs(moved - 0.5 * 0.01) > 1e-5:
        fail("an SGD step clipped to 0.01 at lr 0.5 moved the weights by %g, not 0.005" % moved)


def errors(dev, tmp, model_file):
    with clgrad.Model.load(dev, model_file) as m:
        e = expect_error(lambda: m(np.zeros((2, 5), np.float32)), "forward", "clg_linear", "[2, 5]")
        if e.status != "CLG_ERR_SHAPE":
            fail("status %s" % e.status)
        expect_error(lambda: m.train_step(np.zeros((2, 4), np.float32), np.array([0, 7], np.int32)),
                     "label 7", "out of range")
        m(np.zeros((2, 4), np.float32))   # the device is usable after an error
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"input": [4], "layers": [{"type": "linear", "out": 0}]}')
    expect_error(lambda: clgrad.Model.load(dev, bad), "bad.json:1:", "layers[0].out")
    ws = os.path.join(tmp, "w.safetensors")
    with clgrad.Model.load(dev, model_file) as m:
        m.save(ws)   # weights alone: no model description inside
        w = clgrad.safetensors.load(ws)
        if sorted(w) != ["0.bias", "0.weight", "head.bias", "head.weight"]:
            fail("Model.save wrote %s" % sorted(w))
    expect_error(lambda: clgrad.Model.load(dev, ws), "w.safetensors", "no model description inside")
    expect_error(lambda: clgrad.Device("no-such-device"), "no-such-device")


def tensors_and_closing(tmp, model_file):
    dev = clgrad.Device()
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = clgrad.Tensor(dev, a)
    if t.shape != (2, 3, 4) or t.dtype != np.float32 or not np.array_equal(t.numpy(), a):
        fail("tensor round trip")
    i = clgrad.Tensor(dev, [[1, -2]], np.int32)
    if i.numpy().tolist() != [[1, -2]] or i.dtype != np.int32:
        fail("int32 tensor")
    for bad, exc in (([2 ** 31], ValueError), ([0.5], TypeError)):   # never wrapped or truncated
        try:
            clgrad.Tensor(dev, np.array(bad), np.int32)
            fail("%s became an int32 tensor" % bad)
        except exc:
            pass
    m = clgrad.Model.load(dev, model_file)
    dev.close()   # closes the model and the tensors first
    expect_error(t.numpy, "freed")
    expect_error(lambda: m(np.zeros((1, 4), np.float32)), "closed")
    # a missing library is an error naming it, not a skip
    env = dict(os.environ, CLGRAD_LIB=os.path.join(tmp, "no-such-lib.so"))
    p = subprocess.run([sys.executable, "-c", "import clgrad; clgrad.Device()"], env=env, stderr=subprocess.PIPE)
    if p.returncode == 0 or b"no-such-lib.so" not in p.stderr:
        fail("CLGRAD_LIB naming no library: %s" % p.stderr.decode()[-300:])


def main():
    if not os.environ.get("CLGRAD_LIB"):
        fail("CLGRAD_LIB is not set: the test runs against the library it names")
    tmp = tmpdir()
    model_file, ckpt = trained(tmp)
    with clgrad.Device() as dev:
        forward_matches_predict(dev, tmp, ckpt)
        training_lowers_loss(dev, model_file)
        resumed_optimizer(dev, tmp, ckpt)
        clipped(dev, tmp)
        errors(dev, tmp, model_file)
    tensors_and_closing(tmp, model_file)
    print("python_binding: forward equals clgrad predict, training lowers the loss, errors carry clgrad's messages")


main()
