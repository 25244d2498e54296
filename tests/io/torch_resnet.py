"""torch_resnet.py: the PyTorch side of test_io_torch_resnet. torchvision is not
installed (Debian's python3-torch comes without it), so its BasicBlock and Bottleneck
are written out here with torchvision's structure and attribute names; the network is
tests/test_io_torch_resnet.c's: a stem (conv, batch norm, relu), BasicBlock(8, 16,
stride 2) with its downsample, Bottleneck(16, 4), Bottleneck(16, 8, stride 2) with its
downsample, global average pooling, flatten, Linear(32, 5).

    torch_resnet.py check DIR    clgrad's weights before a training pass, DIR/net.safetensors,
                                 load strictly; then on DIR/x.npy in training mode the outputs
                                 must equal DIR/y_train.npy, the gradients of sum(y * r)
                                 (r: DIR/r.npy) DIR/grads.safetensors, the state after the pass
                                 (running statistics, counters) DIR/net_after.safetensors, and
                                 in evaluation mode the outputs DIR/y_eval.npy
    torch_resnet.py export DIR   torchvision-initialised weights after a training pass,
                                 DIR/net_torch.safetensors, an input net_torch_x.npy and the
                                 evaluation-mode outputs net_torch_y.npy
"""
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st  # noqa: E402

TOL = 1e-5


def conv3x3(inplanes, planes, stride=1):
    return nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)


def conv1x1(inplanes, planes, stride=1):
    return nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    expansion = 4   # the stride on the 3x3 conv: ResNet v1.5

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv1x1(inplanes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = conv1x1(planes, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


def block(cls, inplanes, planes, stride=1):
    """As torchvision's ResNet._make_layer: a downsample where the shapes need one."""
    out = planes * cls.expansion
    down = None
    if stride != 1 or inplanes != out:
        down = nn.Sequential(conv1x1(inplanes, out, stride), nn.BatchNorm2d(out))
    return cls(inplanes, planes, stride, down)


def net():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                         block(BasicBlock, 8, 16, 2), block(Bottleneck, 16, 4), block(Bottleneck, 16, 8, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 5))


def torchvision_init(model):
    """torchvision's ResNet.__init__: Kaiming-normal fan_out convs, batch norms 1 and 0."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)


def load(model, path):
    tensors, meta = st.load(path)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=True)
    return meta


def compare(what, got, want, tol=TOL):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    diff = float(np.max(np.abs(got - want))) if got.shape == want.shape else float("inf")
    ok = diff <= tol
    print(f"{what}: max |torch - clgrad| = {diff:.3g} {'ok' if ok else 'FAIL'}")
    return ok


def check(d):
    model = net()
    meta = load(model, os.path.join(d, "net.safetensors"))
    ok = meta.get("format") == "pt"
    x = torch.from_numpy(np.load(os.path.join(d, "x.npy")))
    r = torch.from_numpy(np.load(os.path.join(d, "r.npy")))
    model.train()
    y = model(x)
    ok &= compare("training-mode outputs", y.detach().numpy(), np.load(os.path.join(d, "y_train.npy")))
    (y * r).sum().backward()
    grads, _ = st.load(os.path.join(d, "grads.safetensors"))
    params = dict(model.named_parameters())
    ok &= sorted(grads) == sorted(params)
    for name, p in params.items():   # sums over the batch and the pixels: a looser bound
        want = grads.get(name)
        ok &= want is not None and compare("d/d " + name, p.grad.numpy(), want, 1e-4 * max(1, np.abs(want).max()))
    after, _ = st.load(os.path.join(d, "net_after.safetensors"))
    state = model.state_dict()
    ok &= sorted(after) == sorted(state)
    for name, v in state.items():
        if name.endswith("num_batches_tracked"):
            same = int(v) == int(after[name]) == 1
            print(f"{name}: torch {int(v)}, clgrad {int(after[name])} {'ok' if same else 'FAIL'}")
            ok &= same
        elif "running" in name:
            ok &= compare(name + " after the pass", v.numpy(), after[name])
    model.eval()
    with torch.no_grad():
        ok &= compare("evaluation-mode outputs", model(x).numpy(), np.load(os.path.join(d, "y_eval.npy")))
    return 0 if ok else 1


def export(d):
    torch.manual_seed(0)
    model = net()
    torchvision_init(model)
    x = torch.randn(4, 3, 8, 8)
    model.train()
    with torch.no_grad():   # moves the running statistics and counters
        model(x * 2 + 1)
    model.eval()
    with torch.no_grad():
        y = model(x).numpy()
    st.save(os.path.join(d, "net_torch.safetensors"), {k: v.numpy() for k, v in model.state_dict().items()},
            {"format": "pt"})
    np.save(os.path.join(d, "net_torch_x.npy"), x.numpy())
    np.save(os.path.join(d, "net_torch_y.npy"), y)
    # the ResNet-20 of examples/models/resnet_fashion.json (bench/torch_models.py's, named as
    # the model file's layers), torchvision-initialised, statistics moved, in eval mode
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
    import torch_models  # noqa: E402
    r20 = torch_models.resnet20()
    torchvision_init(r20)
    x = torch.randn(3, 1, 28, 28)
    r20.train()
    with torch.no_grad():
        r20(x * 2 + 1)
    r20.eval()
    with torch.no_grad():
        y = r20(x).numpy()
    st.save(os.path.join(d, "r20_torch.safetensors"), {k: v.numpy() for k, v in r20.state_dict().items()},
            {"format": "pt"})
    np.save(os.path.join(d, "r20_torch_x.npy"), x.numpy())
    np.save(os.path.join(d, "r20_torch_y.npy"), y)
    return 0


if __name__ == "__main__":
    torch.set_num_threads(1)
    if len(sys.argv) != 3 or sys.argv[1] not in ("check", "export"):
        sys.exit(__doc__)
    sys.exit((check if sys.argv[1] == "check" else export)(sys.argv[2]))
