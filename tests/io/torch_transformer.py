"""torch_transformer.py DIR: the PyTorch side of test_nn_transformer.

For each model of the test (torch.nn.MultiheadAttention, TransformerEncoderLayer, and a
GPT written as nanoGPT's model.py is: the same modules and parameter names, attention
composed from matmul and softmax since PyTorch 1.13 has no fused one):
  1. load clgrad's weights DIR/<m>.safetensors (load_state_dict strict=True), run the
     inputs DIR/<m>_*.npy, and compare the output with clgrad's DIR/<m>_y.npy and the
     gradients of sum(y * DIR/<m>_w.npy) with clgrad's DIR/<m>_grads.safetensors;
  2. initialise the model in PyTorch, save its state dict DIR/<m>_torch.safetensors and
     its output on the same inputs DIR/<m>_torch_y.npy, for clgrad to load and compare.
Exit status 1 when a comparison fails.
"""
import math
import os
import sys

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st  # noqa: E402

TOL_Y = 1e-5
TOL_G = 1e-4


class LayerNorm(nn.Module):
    """nanoGPT's: a layer norm whose bias is optional."""

    def __init__(self, n, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.bias = nn.Parameter(torch.zeros(n)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, c, h, bias):
        super().__init__()
        self.c_attn = nn.Linear(c, 3 * c, bias=bias)
        self.c_proj = nn.Linear(c, c, bias=bias)
        self.h = h

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in self.c_attn(x).split(c, dim=2))
        att = q @ k.transpose(-2, -1) / math.sqrt(c // self.h)
        att = att.masked_fill(torch.ones(t, t, device=x.device).tril() == 0, float("-inf")).softmax(-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))


class MLP(nn.Module):
    def __init__(self, c, bias):
        super().__init__()
        self.c_fc = nn.Linear(c, 4 * c, bias=bias)
        self.c_proj = nn.Linear(4 * c, c, bias=bias)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, c, h, bias):
        super().__init__()
        self.ln_1, self.attn = LayerNorm(c, bias), CausalSelfAttention(c, h, bias)
        self.ln_2, self.mlp = LayerNorm(c, bias), MLP(c, bias)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, block, layers, heads, c, bias):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, c), wpe=nn.Embedding(block, c), drop=nn.Dropout(0.0),
            h=nn.ModuleList([Block(c, heads, bias) for _ in range(layers)]), ln_f=LayerNorm(c, bias)))
        self.lm_head = nn.Linear(c, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight   # tied, as nanoGPT

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for blk in self.transformer.h:
            x = blk(x)
        return self.lm_head(self.transformer.ln_f(x))


def mha(d, m, model, ins):
    kpm = ins.get("kpm")
    am = ins.get("am")
    return model(ins["x"], ins.get("k", ins["x"]), ins.get("v", ins["x"]), need_weights=False,
                 key_padding_mask=None if kpm is None else kpm.bool(),
                 attn_mask=None if am is None else am.bool() if am.dtype == torch.int32 else am)[0]


def enc(d, m, model, ins):
    kpm = ins.get("kpm")
    return model(ins["x"], src_mask=ins.get("am"), src_key_padding_mask=None if kpm is None else kpm.bool())


def gpt(d, m, model, ins):
    return model(ins["x"].long())


# name -> (constructor, forward); the shapes match tests/test_nn_transformer.c
MODELS = {
    "mha": (lambda: nn.MultiheadAttention(16, 4, batch_first=True), mha),
    "mha_cross": (lambda: nn.MultiheadAttention(16, 4, batch_first=False), mha),
    "enc": (lambda: nn.TransformerEncoderLayer(16, 4, 32, 0.0, batch_first=True), enc),
    "enc_pre": (lambda: nn.TransformerEncoderLayer(16, 4, 32, 0.0, activation="gelu", norm_first=True), enc),
    "gpt": (lambda: GPT(29, 8, 2, 2, 16, True), gpt),
    "gpt_nobias": (lambda: GPT(29, 8, 2, 2, 16, False), gpt),
}


def inputs(d, m):
    ins = {}
    for key in ("x", "k", "v", "kpm", "am"):
        p = os.path.join(d, "%s_%s.npy" % (m, key))
        if os.path.exists(p):
            ins[key] = torch.from_numpy(np.load(p))
    return ins


def diff(a, b):
    return float(np.max(np.abs(a - b))) if a.shape == b.shape else float("inf")


def check(d, m):
    make, fwd = MODELS[m]
    model = make()
    tensors, _ = st.load(os.path.join(d, m + ".safetensors"))
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=True)
    model.train()   # dropout 0: no fast path, the same arithmetic as training
    ins = inputs(d, m)
    y = fwd(d, m, model, ins)
    dy = diff(y.detach().numpy(), np.load(os.path.join(d, m + "_y.npy")))
    (y * torch.from_numpy(np.load(os.path.join(d, m + "_w.npy")))).sum().backward()
    grads, _ = st.load(os.path.join(d, m + "_grads.safetensors"))
    named = dict(model.named_parameters(remove_duplicate=False)) if "remove_duplicate" in \
        model.named_parameters.__code__.co_varnames else dict(model.state_dict(keep_vars=True))
    dg = 0.0
    for k, g in grads.items():
        p = named[k]
        dg = max(dg, diff(p.grad.numpy(), g) / (1 + float(np.max(np.abs(g)))))
    ok = dy <= TOL_Y and dg <= TOL_G and len(grads) == sum(1 for k, v in named.items() if v.requires_grad)
    print(f"{m}: clgrad weights in torch: output {dy:.3g}, gradients {dg:.3g} ({len(grads)}) {'ok' if ok else 'FAIL'}")
    return ok


def export(d, m):
    make, fwd = MODELS[m]
    torch.manual_seed(1)
    model = make()
    model.train()
    with torch.no_grad():
        y = fwd(d, m, model, inputs(d, m)).numpy()
    st.save(os.path.join(d, m + "_torch.safetensors"), {k: v.numpy() for k, v in model.state_dict().items()},
            {"format": "pt"})
    np.save(os.path.join(d, m + "_torch_y.npy"), y)


if __name__ == "__main__":
    torch.set_num_threads(1)
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    bad = 0
    for name in MODELS:
        bad += not check(sys.argv[1], name)
        export(sys.argv[1], name)
    sys.exit(1 if bad else 0)
