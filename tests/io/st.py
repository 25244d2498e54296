"""st.py: safetensors with json and NumPy alone (Debian's python3-torch has no
safetensors package). The format: 8-byte little-endian header length N, N bytes of
JSON header {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
{str: str}}, then the raw little-endian data, offsets relative to the end of the header.

    tensors, meta = st.load("model.safetensors")     # {name: np.ndarray}, {str: str}
    st.save("model.safetensors", {"0.weight": w}, {"format": "pt"})
    st.save("model.safetensors", {"0.weight": (bits, "BF16")})   # bfloat16 as uint16 bits
"""
import json
import struct

import numpy as np

DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
          "I8": "i1", "U8": "u1", "U16": "<u2", "U32": "<u4", "U64": "<u8", "BOOL": "?"}
NAMES = {(np.dtype(v).kind, np.dtype(v).itemsize): k for k, v in DTYPES.items()}


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    meta = header.pop("__metadata__", None) or {}
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        arr = np.frombuffer(data[begin:end], dtype=np.dtype(DTYPES[info["dtype"]]))
        tensors[name] = arr.reshape(info["shape"]).copy()
    return tensors, meta


def save(path, tensors, meta=None):
    header, chunks, at = {}, [], 0
    if meta:
        header["__metadata__"] = {str(k): str(v) for k, v in meta.items()}
    for name, arr in tensors.items():
        key = None
        if isinstance(arr, tuple):   # (bits, "BF16"): a type NumPy lacks
            arr, key = arr
        arr = np.asarray(arr, order="C")   # ascontiguousarray would make 0-d arrays 1-d
        le = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        key = key or NAMES[(le.dtype.kind, le.dtype.itemsize)]
        b = le.tobytes()
        header[name] = {"dtype": key, "shape": list(arr.shape), "data_offsets": [at, at + len(b)]}
        chunks.append(b)
        at += len(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)   # the reference writer pads to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in chunks:
            f.write(b)
