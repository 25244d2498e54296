"""torch_attn.py: PyTorch models with attention for the ONNX import tests (onnx_check.py,
tests/cli/cli_onnx.sh): nanoGPT's GPT, with nn.MultiheadAttention or with its own
CausalSelfAttention, a block of attention among other layers on floats, and
nn.TransformerEncoder. Only torch:
the CLI test runs it without onnxruntime."""
import math

import torch
from torch import nn
from torch.nn import functional as F


class Attn(nn.Module):
    """Self-attention by nn.MultiheadAttention, with a mask -inf above diagonal `diag`
    (1: causal) or none."""

    def __init__(self, C, H, diag):
        super().__init__()
        self.mha, self.diag = nn.MultiheadAttention(C, H, batch_first=True), diag

    def forward(self, x):
        T = x.size(1)
        mask = None if self.diag is None else torch.triu(torch.full((T, T), float("-inf")), self.diag)
        return self.mha(x, x, x, attn_mask=mask, need_weights=False)[0]


class HandAttn(nn.Module):
    """nanoGPT's CausalSelfAttention, as written there."""

    def __init__(self, C, H, T):
        super().__init__()
        self.c_attn, self.c_proj, self.n_head = nn.Linear(C, 3 * C), nn.Linear(C, C), H
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))


class GptBlock(nn.Module):
    """A pre-norm block: attention and a GELU MLP of 4 C, each added to the stream."""

    def __init__(self, attn, C):
        super().__init__()
        self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(C), attn, nn.LayerNorm(C)
        self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt(nn.Module):
    """nanoGPT's model: token and position embeddings, blocks, a layer norm and the head
    tied to the token embedding (clgrad's gpt layer)."""

    def __init__(self, hand, V=256, T=16, C=32, H=4, L=2, tied=True):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.h = nn.ModuleList([GptBlock(HandAttn(C, H, T) if hand else Attn(C, H, 1), C) for _ in range(L)])
        self.ln_f, self.head = nn.LayerNorm(C), nn.Linear(C, V, bias=False)
        if tied:
            self.head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(0, idx.size(1), dtype=torch.long))
        for block in self.h:
            x = block(x)
        return self.head(self.ln_f(x))


class SeqNet(nn.Module):
    """Floats [T, 6] -> linear -> a block of attention of `heads` (mask above diagonal
    `diag`) -> layer norm -> flatten -> linear: attention as a layer among others."""

    def __init__(self, diag, heads=4):
        super().__init__()
        self.inp, self.block = nn.Linear(6, 32), GptBlock(Attn(32, heads, diag), 32)
        self.ln, self.out = nn.LayerNorm(32), nn.Linear(320, 5)

    def forward(self, x):
        return self.out(self.ln(self.block(self.inp(x))).flatten(1))


class EncNet(nn.Module):
    """Floats [T, 6] -> linear -> nn.TransformerEncoder of 2 post-norm layers -> flatten ->
    linear: PyTorch's encoder as clgrad's transformer_block of repeat 2."""

    def __init__(self):
        super().__init__()
        self.inp, self.out = nn.Linear(6, 32), nn.Linear(320, 5)
        layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x):
        return self.out(self.enc(self.inp(x)).flatten(1))
