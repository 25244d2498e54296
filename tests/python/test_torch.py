"""python_torch: clgrad.safetensors with PyTorch (python3-torch): every dtype round trips
through load_torch / save_torch, bfloat16 as torch.bfloat16, and the NumPy and torch
paths read each other's files to the same values. Fails without torch (install-deps.sh
--test installs it)."""
import os

import numpy as np
import torch

from clgrad import safetensors as st
from common import CHECKS, check, tmpdir


def main():
    torch.manual_seed(3)
    tmp = tmpdir()
    tensors = {
        "f64": torch.randn(3, 2, dtype=torch.float64),
        "f32": torch.randn(2, 3, 4),
        "f16": torch.randn(5).half(),
        "bf16": torch.randn(4, 4).bfloat16(),
        "i64": torch.tensor(-(2 ** 40)),                   # 0-d, as a PyTorch optimizer's step
        "i32": torch.randint(-1000, 1000, (6,), dtype=torch.int32),
        "i16": torch.randint(-1000, 1000, (2, 2), dtype=torch.int16),
        "i8": torch.arange(-128, 128, dtype=torch.int8),
        "u8": torch.arange(256, dtype=torch.uint8),
        "bool": torch.tensor([True, False]),
        "empty": torch.zeros(0, 2),
        "strided": torch.arange(12.0).reshape(3, 4).t(),    # not contiguous: written row-major
    }
    path = os.path.join(tmp, "t.safetensors")
    st.save_torch(path, tensors, {"format": "pt"})
    back = st.load_torch(path)
    check(list(back) == list(tensors), "load_torch keeps the order")
    for k, t in tensors.items():
        b = back[k]
        check(b.dtype == t.dtype and b.shape == t.shape and torch.equal(b, t), "%s: %s back as %s" % (k, t, b))
    check(st.file_dtypes(path)["bf16"] == "BF16" and st.load_metadata(path) == {"format": "pt"}, "bf16 header")

    # NumPy reads torch's file: bfloat16 widened to float32, the rest as stored
    arrays = st.load(path)
    for k, t in tensors.items():
        want = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
        check(arrays[k].dtype == want.dtype and np.array_equal(arrays[k], want), "NumPy reads %s otherwise" % k)

    # torch reads NumPy's file, BF16 written from floats included (the same rounding as torch's)
    x = np.random.default_rng(2).normal(size=(64,)).astype(np.float32)
    x[:3] = [1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8)]   # ties: to even
    np_path = os.path.join(tmp, "n.safetensors")
    st.save(np_path, {"x": x, "y": np.arange(5, dtype=np.int64)}, dtypes={"x": "BF16"})
    tb = st.load_torch(np_path)
    check(tb["x"].dtype == torch.bfloat16 and torch.equal(tb["x"], torch.from_numpy(x).bfloat16()),
          "BF16 from NumPy differs from torch's rounding")
    check(torch.equal(tb["y"], torch.arange(5)), "int64 from NumPy")
    # dtypes this torch may lack (float8 came in 2.1, uint16-64 in 2.3): its own, or a TypeError naming them
    f8 = os.path.join(tmp, "f8.safetensors")
    st.write_items(f8, [("a", "F8_E4M3", (3,), bytes([0x38, 0xB8, 0x7E])), ("u", "U16", (1,), b"\xff\xff")])
    if hasattr(torch, "float8_e4m3fn") and hasattr(torch, "uint16"):
        t8 = st.load_torch(f8)
        check(t8["a"].float().tolist() == [1.0, -1.0, 448.0] and int(t8["u"][0]) == 65535, "float8 through torch")
    else:
        try:
            st.load_torch(f8)
            check(False, "load_torch read a dtype this torch lacks")
        except TypeError as e:
            check("this torch has no" in str(e), "load_torch's error: %s" % e)
    print("python_torch: %d checks passed (torch %s)" % (CHECKS[0], torch.__version__))


main()
