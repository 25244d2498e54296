"""onnx_check.py: the Python side of test_io_onnx, with onnxruntime (from PyPI, in the
build tree's venv: tests/io/onnx_venv.sh), python3-onnx and python3-torch as oracles.

    onnx_check.py ort DIR NAME...  each DIR/NAME.onnx (clgrad's export) must pass
                                   onnx.checker.check_model(full_check=True), and
                                   onnxruntime on DIR/NAME_x.npy must give DIR/NAME_y.npy
                                   (clgrad's outputs) to 1e-5 relative to the largest
    onnx_check.py edit DIR NAME    DIR/NAME.onnx saved again unchanged (NAME_same.onnx), with
                                   a LayerNormalization's epsilon changed (NAME_eps.onnx), and
                                   with its embedded model file's "heads": 2 made 4 (NAME_meta.onnx)
    onnx_check.py mutate DIR NAME N  N variants of DIR/NAME.onnx, each one change within its
                                   attention (an attribute, a constant, operands swapped, an
                                   input rewired), kept where onnxruntime runs them, as
                                   DIR/mut_K.onnx with onnxruntime's outputs on DIR/NAME_x.npy
                                   as mut_K_y.npy, the others as mut_bad_K.onnx; prints
                                   "mutants: KEPT REFUSED"
    onnx_check.py torch DIR        PyTorch equivalents of the example models (small) exported
                                   by torch.onnx.export (opset 17, dynamic batch) as
                                   DIR/t_NAME.onnx, with inputs t_NAME_x.npy (tokens as int32)
                                   and PyTorch's outputs t_NAME_y.npy (onnxruntime's:
                                   t_NAME_ort.npy); onnxruntime must agree with PyTorch to
                                   1e-5 relative. resnet_bn: a ResNet of
                                   BasicBlocks exported with its batch norms. The GPTs: nanoGPT's model
                                   with nn.MultiheadAttention (gpt) and with its own
                                   attention (gpt_hand); mha: a non-causal block of one head on
                                   floats; encoder: nn.TransformerEncoder.
                                   Also graphs import must refuse: t_bad.onnx, with an op it
                                   does not read (LogSoftmax); t_attn_mask.onnx, attention with
                                   a mask that is not causal; t_attn_axis.onnx, t_mha.onnx
                                   with its Softmax on the queries' axis; t_gpt_untied.onnx,
                                   a GPT whose head is not its token embedding.
"""
import os
import sys
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import onnxruntime as ort
import torch
from torch import nn
from torch_attn import EncNet, Gpt, SeqNet

TOL = 1e-5


def close(got, want, what):
    scale = max(1.0, float(np.abs(want).max()))
    diff = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max())
    print(f"{what}: max |diff| {diff:.3g} (scale {scale:.3g})")
    if got.shape != want.shape or not diff <= TOL * scale:
        print(f"{what}: MISMATCH, shapes {got.shape} and {want.shape}")
        return False
    return True


def run_ort(path, x):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    if x.dtype.kind == "i":
        x = x.astype(np.int64)
    return s.run(None, {s.get_inputs()[0].name: x})[0]


def cmd_ort(d, names):
    ok = True
    for name in names:
        path = os.path.join(d, name + ".onnx")
        onnx.checker.check_model(onnx.load(path), full_check=True)
        x = np.load(os.path.join(d, name + "_x.npy"))
        ok = close(run_ort(path, x), np.load(os.path.join(d, name + "_y.npy")), "onnxruntime vs clgrad " + name) and ok
    return ok


class Seq(nn.Module):
    """Layers applied in turn, a recurrent layer's output taken from its tuple."""

    def __init__(self, *layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
            if isinstance(x, tuple):
                x = x[0]
        return x


class Block(nn.Module):
    """torchvision's BasicBlock."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    """resnet_fashion.json's shape, smaller: torchvision's names (conv1, bn1, layer1..2)."""

    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.layer1 = nn.Sequential(Block(8, 8, 1), Block(8, 8, 1))
        self.layer2 = nn.Sequential(Block(8, 16, 2), Block(16, 16, 1))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.layer2(self.layer1(torch.relu(self.bn1(self.conv1(x)))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class View(nn.Module):
    """x.view(x.size(0), -1), as many models flatten."""

    def forward(self, x):
        return x.view(x.size(0), -1)


def models():
    """name: (module, input); tokens as int64."""
    img = torch.rand(3, 1, 28, 28)
    tok = torch.randint(0, 256, (3, 12))
    seq = torch.randn(3, 10, 6)
    return {
        "mlp": (nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(),
                              nn.Linear(32, 10)), img),
        "cnn": (nn.Sequential(nn.Conv2d(1, 8, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(8, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10)), img),
        # batch norm after a pool and after a linear stays a node (after a conv it is folded)
        "cnn_bn": (nn.Sequential(nn.Conv2d(1, 8, 5, padding=2, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                                 nn.AvgPool2d(2), nn.BatchNorm2d(8), nn.Flatten(), nn.Linear(1568, 32, bias=False),
                                 nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 10)), img),
        "resnet": (nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                                 Block(8, 8, 1), Block(8, 16, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                 nn.Linear(16, 10)), img),
        "resnet_bn": (ResNet(), img),   # exported with its batch norms (PRESERVE)
        "act": (nn.Sequential(nn.Flatten(), nn.Linear(784, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 16),
                              nn.Tanh(), nn.Linear(16, 16), nn.Sigmoid(), nn.Linear(16, 16), nn.LeakyReLU(0.2),
                              nn.Linear(16, 16), nn.ELU(), nn.Linear(16, 16), nn.Softplus(), nn.Linear(16, 10),
                              nn.Softmax(-1)), img),
        "more": (nn.Sequential(nn.Conv2d(1, 4, 3, stride=2), nn.SiLU(), nn.GroupNorm(2, 4),
                               nn.ConvTranspose2d(4, 3, 2, stride=2, padding=1, output_padding=1), nn.Upsample(scale_factor=2),
                               nn.Upsample(scale_factor=2, mode="bilinear"), nn.MaxPool2d(4), View(),
                               nn.Linear(3 * 25 * 25, 8), nn.GELU(approximate="tanh"), nn.Linear(8, 10)), img),
        "lstm": (Seq(nn.Embedding(256, 16), nn.LSTM(16, 32, 2, batch_first=True), nn.Linear(32, 256)), tok),
        "gru": (Seq(nn.Embedding(256, 16), nn.GRU(16, 24, 1, batch_first=True), nn.Linear(24, 256)), tok),
        "rnn": (Seq(nn.Embedding(256, 16), nn.RNN(16, 24, 2, batch_first=True), nn.Linear(24, 256)), tok),
        "gpt": (Gpt(False), tok),
        "gpt_hand": (Gpt(True), tok),
        "mha": (SeqNet(None, heads=1), seq),   # one head: nn.MultiheadAttention never splits the columns
        "encoder": (EncNet(), seq),
        "bad": (nn.Sequential(nn.Flatten(), nn.Linear(784, 10), nn.LogSoftmax(-1)), img),
        "attn_mask": (SeqNet(2), seq),
        "gpt_untied": (Gpt(False, tied=False), tok),
    }


def cmd_torch(d):
    torch.manual_seed(0)
    ok = True
    for name, (m, x) in models().items():
        for mod in m.modules():   # batch norm with statistics of its own
            if isinstance(mod, nn.modules.batchnorm._BatchNorm):
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 2)
                mod.weight.data.uniform_(0.5, 1.5)
                mod.bias.data.uniform_(-0.5, 0.5)
        if name in ("gpt", "gpt_hand", "mha", "encoder", "attn_mask"):   # biases and norms away from 0 and 1
            for p in m.parameters():
                p.data.uniform_(-0.3, 0.3)
        m.eval()
        path = os.path.join(d, "t_" + name + ".onnx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(m, x, path, opset_version=17, input_names=["input"], output_names=["output"],
                              dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                              training=torch.onnx.TrainingMode.PRESERVE if name == "resnet_bn" else torch.onnx.TrainingMode.EVAL)
        with torch.no_grad():
            y = m(x).numpy()
        xs = x.numpy().astype(np.int32) if x.dtype == torch.int64 else x.numpy()
        np.save(os.path.join(d, "t_" + name + "_x.npy"), xs)
        np.save(os.path.join(d, "t_" + name + "_y.npy"), y)
        y_ort = run_ort(path, x.numpy())
        np.save(os.path.join(d, "t_" + name + "_ort.npy"), y_ort)
        ok = close(y_ort, y, "onnxruntime vs PyTorch " + name) and ok
    m = onnx.load(os.path.join(d, "t_mha.onnx"))   # softmax over the queries' axis of [B H, T, S]
    next(a for n in m.graph.node if n.op_type == "Softmax" for a in n.attribute if a.name == "axis").i = 1
    onnx.save(m, os.path.join(d, "t_attn_axis.onnx"))
    return ok


def cmd_edit(d, name):
    path = os.path.join(d, name + ".onnx")
    m = onnx.load(path)
    onnx.save(m, os.path.join(d, name + "_same.onnx"))
    ln = next(n for n in m.graph.node if n.op_type == "LayerNormalization")
    next(a for a in ln.attribute if a.name == "epsilon").f = 1e-3
    onnx.save(m, os.path.join(d, name + "_eps.onnx"))
    m = onnx.load(path)
    meta = next(p for p in m.metadata_props if p.key == "clgrad.model")
    assert '"heads": 2' in meta.value
    meta.value = meta.value.replace('"heads": 2', '"heads": 4')
    onnx.save(m, os.path.join(d, name + "_meta.onnx"))
    return True


def mutate(m, rng):
    """One change inside m's attention (nodes named .../attn/...); a description."""
    nodes = [n for n in m.graph.node if "/attn/" in n.name]
    n = nodes[int(rng.integers(len(nodes)))]
    kind = int(rng.integers(4))
    if kind == 0 and n.attribute:   # an integer attribute changed (perm, axis)
        a = n.attribute[int(rng.integers(len(n.attribute)))]
        if a.ints:
            i, j = (int(v) for v in rng.choice(len(a.ints), 2, replace=False)) if len(a.ints) > 1 else (0, 0)
            a.ints[i], a.ints[j] = a.ints[j], a.ints[i]
            return f"{n.name}: {a.name} permuted"
        if a.type == onnx.AttributeProto.INT:
            a.i += int(rng.choice([-2, -1, 1]))
            return f"{n.name}: {a.name} moved"
    if kind == 1 and n.op_type == "Constant" and n.attribute[0].t.data_type == onnx.TensorProto.FLOAT:
        t = onnx.numpy_helper.to_array(n.attribute[0].t).copy()
        t = t * np.float32(rng.choice([0.5, 2.0, -1.0]))
        n.attribute[0].t.CopyFrom(onnx.numpy_helper.from_array(t.astype(np.float32), n.attribute[0].t.name))
        return f"{n.name}: value scaled"
    if kind == 2 and len(n.input) >= 2 and n.input[0] and n.input[1]:
        n.input[0], n.input[1] = n.input[1], n.input[0]
        return f"{n.name}: operands swapped"
    values = [o for k in nodes for o in k.output if k is not n]
    if n.input:
        i = int(rng.integers(len(n.input)))
        n.input[i] = values[int(rng.integers(len(values)))]
        return f"{n.name}: input {i} rewired"
    return f"{n.name}: unchanged"


def cmd_mutate(d, name, count):
    rng = np.random.default_rng(5)
    x = np.load(os.path.join(d, name + "_x.npy"))
    x = x.astype(np.int64) if x.dtype.kind == "i" else x
    opts = ort.SessionOptions()
    opts.log_severity_level = 4   # the mutants it refuses are expected
    kept = refused = 0
    for _ in range(count):
        m = onnx.load(os.path.join(d, name + ".onnx"))
        what = mutate(m, rng)
        if what.endswith("unchanged"):
            continue
        try:
            s = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
            y = s.run(None, {s.get_inputs()[0].name: x})[0]
        except Exception:   # noqa: BLE001 (not a graph to compare: import must still not crash on it)
            onnx.save(m, os.path.join(d, f"mut_bad_{refused}.onnx"))
            refused += 1
            continue
        onnx.save(m, os.path.join(d, f"mut_{kept}.onnx"))
        np.save(os.path.join(d, f"mut_{kept}_y.npy"), y)
        print(f"mut_{kept}: {what}")
        kept += 1
    print(f"mutants: {kept} {refused}")
    return True


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "ort":
        return 0 if cmd_ort(sys.argv[2], sys.argv[3:]) else 1
    if len(sys.argv) == 4 and sys.argv[1] == "edit":
        return 0 if cmd_edit(sys.argv[2], sys.argv[3]) else 1
    if len(sys.argv) == 5 and sys.argv[1] == "mutate":
        return 0 if cmd_mutate(sys.argv[2], sys.argv[3], int(sys.argv[4])) else 1
    if len(sys.argv) == 3 and sys.argv[1] == "torch":
        return 0 if cmd_torch(sys.argv[2]) else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
