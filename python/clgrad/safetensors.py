"""safetensors files with json and NumPy alone (Debian ships no python3-safetensors).

The format: 8 bytes, the little-endian length N of a JSON header; N bytes of header
{"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
"__metadata__": {str: str}}; then the tensors' raw little-endian row-major bytes, offsets
relative to the end of the header.

    tensors = load("model.safetensors")               # {name: numpy.ndarray}
    meta = load_metadata("model.safetensors")         # {str: str}
    save("out.safetensors", tensors, {"format": "pt"}, dtypes={"0.weight": "BF16"})

NumPy has no bfloat16 nor float8: load() widens BF16, F8_E4M3 and F8_E5M2 to float32
(exactly: every such value is a float32), so a loaded array's dtype is not always the
file's (file_dtypes() tells). save() writes BF16 from floats when `dtypes` asks for it
(rounded to nearest even, as clgrad and PyTorch round). load_torch() / save_torch() keep
every dtype as it is, bfloat16 included, when torch is importable.
"""
import json
import struct

import numpy as np

# The dtypes NumPy holds as they are stored.
_NUMPY = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
          "U8": "u1", "U16": "<u2", "U32": "<u4", "U64": "<u8", "BOOL": "?"}
# Stored as 16 or 8 bits that NumPy lacks a type for: read as raw bits, widened to float32.
_WIDENED = {"BF16": "<u2", "F8_E4M3": "u1", "F8_E5M2": "u1"}
SIZES = {k: np.dtype(v).itemsize for k, v in {**_NUMPY, **_WIDENED}.items()}
_NAMES = {np.dtype(v).str.replace(">", "<").replace("|", "<"): k for k, v in _NUMPY.items()}
# clgrad's reader refuses larger headers (CLG_SAFETENSORS_MAX_HEADER), as the reference does.
MAX_HEADER = 100000000


def _dtype_name(dt):
    dt = np.dtype(dt)
    key = dt.newbyteorder("<").str.replace("|", "<") if dt.itemsize > 1 else dt.str.replace("|", "<")
    if key not in _NAMES:
        raise TypeError("safetensors: NumPy dtype %s has no safetensors name" % dt)
    return _NAMES[key]


def _e4m3_table():
    """The 256 float8 e4m3fn values (no infinities; S.1111.111 is NaN)."""
    b = np.arange(256)
    sign = np.where(b & 0x80, -1.0, 1.0)
    exp, man = (b >> 3) & 0xF, b & 7
    val = np.where(exp == 0, man / 8.0 * 2.0 ** -6, (1 + man / 8.0) * 2.0 ** (exp - 7))
    val = np.where((exp == 15) & (man == 7), np.nan, val)
    return (sign * val).astype(np.float32)


def bf16_to_f32(bits):
    """uint16 bfloat16 bits -> float32, exactly."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):
    """float32 -> uint16 bfloat16 bits, rounded to nearest even (NaN stays NaN)."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(u.view(np.float32)), np.uint16(0x7FC0), rounded)


def _widen(name, raw):
    if name == "BF16":
        return bf16_to_f32(raw)
    if name == "F8_E5M2":   # the top byte of a float16
        return (raw.astype(np.uint16) << 8).view(np.float16).astype(np.float32)
    return _e4m3_table()[raw]


def read_header(path):
    """(header without __metadata__, metadata, the data's bytes), checked as clgrad checks
    them: every tensor's size matches its shape, and the ranges tile the data exactly."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s: %d bytes, too short for a safetensors file" % (path, len(raw)))
    (n,) = struct.unpack("<Q", raw[:8])
    if n > MAX_HEADER or 8 + n > len(raw):
        raise ValueError("%s: header length %d does not fit the file (%d bytes)" % (path, n, len(raw)))
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError("%s: the header is not a JSON object" % path)
    meta = header.pop("__metadata__", None) or {}
    data = memoryview(raw)[8 + n:]
    at = 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        dtype, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in SIZES:
            raise ValueError("%s: tensor %r: unknown dtype %r" % (path, name, dtype))
        if begin != at or end - begin != int(np.prod(shape, dtype=np.int64)) * SIZES[dtype]:
            raise ValueError("%s: tensor %r: data_offsets %s do not fit %s %s after offset %d"
                             % (path, name, [begin, end], dtype, shape, at))
        at = end
    if at != len(data):
        raise ValueError("%s: the tensors end at %d, the data at %d" % (path, at, len(data)))
    return header, meta, data


def _array(info, data):
    begin, end = info["data_offsets"]
    name = info["dtype"]
    arr = np.frombuffer(data[begin:end], dtype=np.dtype(_NUMPY.get(name) or _WIDENED[name]))
    arr = _widen(name, arr) if name in _WIDENED else arr.astype(arr.dtype.newbyteorder("="))
    return arr.reshape(info["shape"])


def load(path):
    """{name: numpy.ndarray} in file order; BF16 and float8 widened to float32."""
    header, _, data = read_header(path)
    return {name: _array(info, data) for name, info in header.items()}


def load_metadata(path):
    """The __metadata__ strings ({} when none)."""
    return dict(read_header(path)[1])


def file_dtypes(path):
    """{name: the dtype as stored ("F32", "BF16", ...)}."""
    return {name: info["dtype"] for name, info in read_header(path)[0].items()}


def write_items(path, items, metadata=None):
    """Write (name, dtype name, shape, little-endian bytes) items. The header is padded
    with spaces to a multiple of 8, as the reference writer pads it, so data is aligned."""
    header, at = {}, 0
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("safetensors: metadata must map str to str, got %r: %r" % (k, v))
        header["__metadata__"] = dict(metadata)
    for name, dtype, shape, blob in items:
        if name in header:
            raise ValueError("safetensors: tensor name %r given twice (or is __metadata__)" % name)
        header[name] = {"dtype": dtype, "shape": [int(d) for d in shape], "data_offsets": [at, at + len(blob)]}
        at += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, _, blob in items:
            f.write(blob)


def _numpy_item(name, arr, want):
    arr = np.asarray(arr)
    if want == "BF16":
        if arr.dtype.kind != "f":
            raise TypeError("safetensors: %r: BF16 from %s (give floats)" % (name, arr.dtype))
        return name, "BF16", arr.shape, f32_to_bf16(arr).astype("<u2").tobytes()
    if want in _WIDENED:
        raise ValueError("safetensors: %r: writing %s from NumPy is not supported (use save_torch)" % (name, want))
    if want:
        if want not in _NUMPY:
            raise ValueError("safetensors: %r: unknown dtype %r" % (name, want))
        arr = arr.astype(_NUMPY[want])
    name_of = _dtype_name(arr.dtype)
    le = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False)
    return name, name_of, arr.shape, le.tobytes()


def save(path, tensors, metadata=None, dtypes=None):
    """Write {name: array-like} (and the metadata strings) to path. dtypes: {name: "BF16",
    "F16", ...} stores those tensors in that dtype (NumPy's own dtype otherwise)."""
    dtypes = dtypes or {}
    unknown = set(dtypes) - set(tensors)
    if unknown:
        raise KeyError("safetensors: dtypes names tensors not given: %s" % sorted(unknown))
    write_items(path, [_numpy_item(k, v, dtypes.get(k)) for k, v in tensors.items()], metadata)


# ---- PyTorch (optional) ----------------------------------------------------------------------

def _torch_dtypes(torch):
    table = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
             "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
             "BOOL": torch.bool}
    for name, attr in (("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2"),
                       ("U16", "uint16"), ("U32", "uint32"), ("U64", "uint64")):
        if hasattr(torch, attr):
            table[name] = getattr(torch, attr)
    return table


def load_torch(path):
    """{name: torch.Tensor} with the file's dtypes (bfloat16 as torch.bfloat16)."""
    import torch
    table = _torch_dtypes(torch)
    header, _, data = read_header(path)
    out = {}
    for name, info in header.items():
        if info["dtype"] not in table:
            raise TypeError("safetensors: %s: tensor %r: this torch has no %s" % (path, name, info["dtype"]))
        begin, end = info["data_offsets"]
        blob = bytearray(data[begin:end])   # writable, so torch.frombuffer does not warn
        t = torch.frombuffer(blob, dtype=table[info["dtype"]]) if blob else torch.empty(0, dtype=table[info["dtype"]])
        out[name] = t.reshape(info["shape"]).clone()
    return out


def save_torch(path, tensors, metadata=None):
    """Write {name: torch.Tensor} in their own dtypes (any device or layout)."""
    import sys
    import torch
    names = {v: k for k, v in _torch_dtypes(torch).items()}
    if sys.byteorder != "little":
        raise OSError("safetensors: save_torch writes native bytes, which must be little-endian")
    items = []
    for name, t in tensors.items():
        if t.dtype not in names:
            raise TypeError("safetensors: %r: torch dtype %s has no safetensors name" % (name, t.dtype))
        flat = t.detach().to("cpu").contiguous().reshape(-1)
        raw = flat.view(torch.uint8) if flat.numel() else torch.empty(0, dtype=torch.uint8)
        items.append((name, names[t.dtype], tuple(t.shape), raw.numpy().tobytes()))
    write_items(path, items, metadata)
