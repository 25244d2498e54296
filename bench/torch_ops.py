"""PyTorch's side of bench/bench_ops.c: the same cases (names, shapes, arguments), timed the
same way, printed the same way ("case NAME/CLASS fwd|fwdbwd MIN MEDIAN MAX", ms per call).

    python3 bench/torch_ops.py [--repeats R] [--only SUBSTRING] [--device cpu|cuda]

bench/run.py --ops-only runs it alternating with bench_ops and prints the ratios. Threads:
2 on the CPU, OpenBLAS's core from the CPU's flags (refblas.py), as every reference here."""
import argparse, math, os, re, statistics, sys, time

import refblas  # noqa: F401  (sets OPENBLAS_CORETYPE before torch loads OpenBLAS)
import torch
import torch.nn.functional as F

CLASSES = [("rows", 16384, 64), ("square", 1024, 1024), ("long", 16, 65536)]
A1 = 1


def table_rows(file, mark):
    """(name, kind, PyTorch's expression) of each row of src/tensor/FILE (its second and
    last fields), the table bench_ops.c takes the same names from."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "tensor", file)
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"/\*.*?\*/", " ", f.read(), flags=re.S)
    rows = re.findall(r'^' + mark + r'\(\s*(\w+),\s*(\w+),.*?"([^"]*)"\s*\)', text, flags=re.S | re.M)
    if not rows:
        sys.exit(f"torch_ops: no {mark} row in {path}")
    return rows


def unary_rows():
    """name -> PyTorch's function of x, from src/tensor/unary_ops.def."""
    scope = {"torch": torch, "F": F}
    return {name: eval("lambda x: " + expr, scope) for name, _, expr in table_rows("unary_ops.def", "CLG_UNARY")}


def binary_rows():
    """name -> PyTorch's function of a and b, from src/tensor/binary_ops.def's
    differentiable rows (bench_ops.c measures those)."""
    scope = {"torch": torch, "F": F}
    return {name: eval("lambda a, b: " + expr, scope)
            for name, kind, expr in table_rows("binary_ops.def", "CLG_BINARY") if kind.startswith("DIFF")}


def class_cases():
    """name -> (number of tensor inputs, f(inputs, t))."""
    u = unary_rows()
    u.update({
        "leaky_relu": lambda x: F.leaky_relu(x, 0.01), "softplus": lambda x: F.softplus(x, 1, 20),
        "elu": lambda x: F.elu(x, 1.0), "clamp": lambda x: torch.clamp(x, 0.2, 0.8),
        "add_scalar": lambda x: x + 2, "mul_scalar": lambda x: x * 2, "rsub_scalar": lambda x: 2 - x,
        "rdiv_scalar": lambda x: 2 / x, "pow_scalar": lambda x: x ** 3, "cast_f16": lambda x: x.half(),
        "sum": lambda x: x.sum(A1), "sum_all": lambda x: x.sum(), "sum_cols": lambda x: x.sum(0), "mean": lambda x: x.mean(A1),
        "max": lambda x: x.amax(A1), "min": lambda x: x.amin(A1), "var": lambda x: x.var(A1),
        "prod": lambda x: x.prod(A1), "norm": lambda x: torch.linalg.vector_norm(x, 2, dim=A1),
        "logsumexp": lambda x: torch.logsumexp(x, A1), "cumsum": lambda x: torch.cumsum(x, A1),
        "sort": lambda x: torch.sort(x, A1)[0], "topk": lambda x: torch.topk(x, 8, A1)[0],
        "softmax": lambda x: torch.softmax(x, A1), "log_softmax": lambda x: torch.log_softmax(x, A1),
        "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:], eps=1e-5),
        "flip": lambda x: torch.flip(x, (A1,)), "tril": lambda x: torch.tril(x, 0), "triu": lambda x: torch.triu(x, 1),
        "transpose": lambda x: x.t().contiguous(), "dropout": lambda x: F.dropout(x, 0.1, True),
    })
    cases = {k: (1, (lambda f: lambda inp, t: f(t[0]))(f)) for k, f in u.items()}
    b = binary_rows()
    b.update({"mse": F.mse_loss, "l1_loss": F.l1_loss,
         "smooth_l1_loss": lambda a, b: F.smooth_l1_loss(a, b, beta=1.0),
         "bce_with_logits": F.binary_cross_entropy_with_logits,
         "concat": lambda a, b: torch.cat((a, b), A1), "stack": lambda a, b: torch.stack((a, b), 0)})
    cases.update({k: (2, (lambda f: lambda inp, t: f(t[0], t[1]))(f)) for k, f in b.items()})
    cases.update({
        "add_bcast": (2, lambda inp, t: t[0] + inp["bias"]),
        "where": (2, lambda inp, t: torch.where(inp["mask"], t[0], t[1])),
        "cross_entropy": (1, lambda inp, t: F.cross_entropy(t[0], inp["lab"])),
        "nll_loss": (1, lambda inp, t: F.nll_loss(t[0], inp["lab"])),
        "cross_entropy_ex": (1, lambda inp, t: F.cross_entropy(t[0], inp["lab"], weight=inp["bias"], label_smoothing=0.1)),
        "nll_loss_ex": (1, lambda inp, t: F.nll_loss(t[0], inp["lab"], weight=inp["bias"])),
        "gather": (1, lambda inp, t: torch.gather(t[0], A1, inp["idx"])),
        "index_add": (2, lambda inp, t: torch.index_add(t[0], A1, inp["cidx"], t[1])),
        "scatter_add": (2, lambda inp, t: torch.scatter_add(t[0], A1, inp["idx"], t[1])),
    })
    return cases


def special_cases(dev):
    """name -> (inputs, f(t)): the GPT's and ResNet's shapes, as bench_ops.c's make_special."""
    r = lambda *s, std=1.0: (torch.randn(*s, device=dev) * std)
    tok = torch.tensor([(i * 2654435761) % 2**32 % 256 for i in range(4096)], device=dev)
    return {
        "batch_norm": ([r(128, 16, 28, 28)], lambda t: F.batch_norm(t[0], None, None, training=True, eps=1e-5)),
        "batch_norm_add_relu": ([r(128, 16, 28, 28), r(128, 16, 28, 28)],
                                lambda t: F.relu(F.batch_norm(t[0], None, None, training=True, eps=1e-5) + t[1])),
        "matmul": ([r(4096, 128), r(128, 512)], lambda t: t[0] @ t[1]),
        "linear": ([r(4096, 128), r(512, 128), r(512)], lambda t: F.linear(t[0], t[1], t[2])),
        "conv2d": ([r(128, 16, 28, 28), r(16, 16, 3, 3, std=0.1), r(16)], lambda t: F.conv2d(t[0], t[1], t[2], padding=1)),
        "conv_transpose2d": ([r(128, 16, 14, 14), r(16, 16, 2, 2, std=0.1), r(16)],
                             lambda t: F.conv_transpose2d(t[0], t[1], t[2], stride=2)),
        "max_pool2d": ([r(128, 16, 28, 28)], lambda t: F.max_pool2d(t[0], 2, 2)),
        "avg_pool2d": ([r(128, 16, 28, 28)], lambda t: F.avg_pool2d(t[0], 2, 2)),
        # PyTorch 1.13 has no fused attention: composed, as a 1.13 user writes it
        "attention": ([r(32, 4, 64, 32) for _ in range(3)], lambda t: attention(t[0], t[1], t[2])),
        "embedding": ([r(256, 128)], lambda t: F.embedding(tok, t[0])),
        "upsample_bilinear2d_ex": ([r(128, 16, 14, 14)],
                                   lambda t: F.interpolate(t[0], size=(28, 28), mode="bilinear", align_corners=True)),
    }


def attention(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    t = q.shape[-2]
    s = s.masked_fill(torch.ones(t, t, device=q.device).tril() == 0, float("-inf"))
    return torch.softmax(s, -1) @ v


NO_GRAD = {"sign", "floor", "ceil", "round"}


def time_case(name, cls, f, tensors, repeats, sync):
    for mode in (["fwd"] if name in NO_GRAD else ["fwd", "fwdbwd"]):
        for x in tensors:
            x.requires_grad_(mode == "fwdbwd")
            x.grad = None

        def call():
            y = f(tensors)
            if mode == "fwdbwd":
                y.backward(torch.ones_like(y))

        def once(calls):
            sync()
            t0 = time.perf_counter()
            for _ in range(calls):
                call()
            sync()
            return (time.perf_counter() - t0) * 1e3 / calls

        once(1)
        one = once(1)  # warm, as bench_ops.c: its CALLS rule
        calls = 200 if one < 0.05 else 10 if one < 5 else 3 if one < 50 else 1
        ms = sorted(once(calls) for _ in range(repeats))
        print("case %s/%s %s %.4f %.4f %.4f" % (name, cls, mode, ms[0], ms[len(ms) // 2], ms[-1]), flush=True)
    for x in tensors:
        x.requires_grad_(False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only")
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    torch.set_num_threads(2)
    torch.manual_seed(1)
    cases = class_cases()
    for cls, r, c in CLASSES:
        x = torch.rand(r, c, device=dev) * 0.8 + 0.1
        y = torch.rand(r, c, device=dev) * 0.8 + 0.1
        flat = torch.tensor([(i * 2654435761) % 2**32 % c for i in range(r * c)], device=dev)
        inp = {"mask": x > y, "lab": torch.tensor([(i * 7919) % c for i in range(r)], device=dev),
               "idx": flat.reshape(r, c), "cidx": flat[:c].clone(), "bias": torch.rand(c, device=dev) * 0.8 + 0.1}
        for name, (n, f) in cases.items():
            if a.only and a.only not in "%s/%s" % (name, cls):
                continue
            time_case(name, cls, (lambda f: lambda t: f(inp, t))(f), [x, y][:n], a.repeats, sync)
    for name, (tensors, f) in special_cases(dev).items():
        if a.only and a.only not in "%s/gpt" % name:
            continue
        time_case(name, "gpt", f, tensors, a.repeats, sync)
    print("blas", refblas.describe())


if __name__ == "__main__":
    main()
