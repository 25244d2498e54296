"""torch_check.py: the PyTorch side of test_io_torch. The models are those of
tests/io/io_models.h, built from torch.nn; weights cross in safetensors (tests/io/st.py,
json + NumPy: Debian's python3-torch has no safetensors package), inputs and outputs
in .npy.

    torch_check.py check DIR    load clgrad's DIR/<model>.safetensors into the torch model
                                (load_state_dict strict=True); its outputs on DIR/<model>_x.npy
                                must equal clgrad's DIR/<model>_y.npy to 1e-5
    torch_check.py export DIR   write torch weights DIR/<model>_torch.safetensors, an input
                                <model>_torch_x.npy and torch's output <model>_torch_y.npy;
                                for the MLP and the CNN also model.half() and .bfloat16()
                                state dicts, <model>_torch_{f16,bf16}.safetensors, and the
                                float32 outputs of those weights, <model>_torch_{f16,bf16}_y.npy
"""
import copy
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st  # noqa: E402

TOL = 1e-5


def mlp(out=10):
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 16), nn.GELU(), nn.Tanh(),
                         nn.Linear(16, 16, bias=False), nn.LeakyReLU(0.1), nn.Sigmoid(), nn.Dropout(0.25),
                         nn.Linear(16, out), nn.Softmax(1))


def cnn(classes=5):
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2, 2, 0),
                         nn.Conv2d(4, 6, 3, stride=2, padding=1, bias=False), nn.AvgPool2d(2, 1, 0),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.BatchNorm1d(6), nn.Linear(6, 8), nn.ReLU(),
                         nn.Linear(8, classes))


def embed():
    return nn.Sequential(nn.Embedding(20, 8), nn.LayerNorm(8), nn.Linear(8, 4))


def output_only(cls):
    """torch.nn's recurrent layers return (output, state); in a Sequential the next layer
    wants the output. A subclass keeps the parameter names (1.weight_ih_l0, ...)."""
    return type(cls.__name__, (cls,), {"forward": lambda self, x: cls.forward(self, x)[0]})


def lstm():
    return nn.Sequential(nn.Embedding(20, 8), output_only(nn.LSTM)(8, 6, num_layers=2, batch_first=True),
                         nn.Linear(6, 4))


def gru():
    return nn.Sequential(output_only(nn.GRU)(3, 5, num_layers=2), nn.Linear(5, 2))


def rnn():
    return nn.Sequential(output_only(nn.RNN)(3, 4, nonlinearity="relu", bias=False), nn.Linear(4, 2))


MODELS = {"mlp": mlp, "cnn": cnn, "embed": embed, "lstm": lstm, "gru": gru, "rnn": rnn}


def as_input(x):
    t = torch.from_numpy(x)
    return t.long() if x.dtype.kind == "i" else t


def check(d):
    failed = 0
    for name, make in MODELS.items():
        tensors, meta = st.load(os.path.join(d, name + ".safetensors"))
        model = make()
        model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=True)
        model.eval()
        x = np.load(os.path.join(d, name + "_x.npy"))
        want = np.load(os.path.join(d, name + "_y.npy"))
        with torch.no_grad():
            got = model(as_input(x)).numpy()
        diff = float(np.max(np.abs(got - want))) if got.shape == want.shape else float("inf")
        ok = diff <= TOL and meta.get("format") == "pt"
        print(f"{name}: clgrad weights in torch: max |torch - clgrad| = {diff:.3g} {'ok' if ok else 'FAIL'}")
        failed += not ok
    return failed


def export(d):
    torch.manual_seed(0)
    for name, make in MODELS.items():
        model = make()
        if name in ("embed", "lstm"):
            x = torch.randint(0, 20, (3, 5), dtype=torch.int32)
        elif name in ("gru", "rnn"):
            x = torch.randn(7, 3, 3)
        else:
            x = torch.randn((4, 3, 8, 8) if name == "cnn" else (4, 12))
        if name in ("mlp", "cnn"):
            model.train()
            with torch.no_grad():   # moves the batch-norm statistics and counters
                model(x * 2 + 1)
        model.eval()
        with torch.no_grad():
            y = model(as_input(x.numpy())).numpy()
        st.save(os.path.join(d, name + "_torch.safetensors"),
                {k: v.numpy() for k, v in model.state_dict().items()}, {"format": "pt"})
        np.save(os.path.join(d, name + "_torch_x.npy"), x.numpy())
        np.save(os.path.join(d, name + "_torch_y.npy"), y)
        if name in ("mlp", "cnn"):
            for tag, dt in (("f16", torch.float16), ("bf16", torch.bfloat16)):
                low = copy.deepcopy(model).to(dt)   # what model.half() saves
                state = {k: (v.view(torch.int16).numpy().view(np.uint16), "BF16") if v.dtype == torch.bfloat16
                         else v.numpy() for k, v in low.state_dict().items()}
                st.save(os.path.join(d, "%s_torch_%s.safetensors" % (name, tag)), state, {"format": "pt"})
                with torch.no_grad():   # those weights, widened, in float32
                    y = low.float()(as_input(x.numpy())).numpy()
                np.save(os.path.join(d, "%s_torch_%s_y.npy" % (name, tag)), y)
    return 0


if __name__ == "__main__":
    torch.set_num_threads(1)
    if len(sys.argv) != 3 or sys.argv[1] not in ("check", "export"):
        sys.exit(__doc__)
    sys.exit(1 if (check if sys.argv[1] == "check" else export)(sys.argv[2]) else 0)
