"""python_safetensors: clgrad.safetensors round trips every dtype with NumPy, and
clgrad's own validating reader (clg_safetensors_open through ctypes) accepts what it
writes with the same dtypes, shapes and bytes. Needs NumPy and libclgrad (CLGRAD_LIB):
without them it fails."""
import ctypes
import os
import struct
import sys

import numpy as np

import clgrad
from clgrad import _lib
from clgrad import safetensors as st
from common import CHECKS, check, tmpdir

rng = np.random.default_rng(7)

# One array per dtype NumPy holds, 0-d, empty and odd shapes among them.
ARRAYS = {
    "f64": rng.normal(size=(3, 5)),
    "f32": rng.normal(size=(2, 3, 4)).astype(np.float32),
    "f16": rng.normal(size=(7,)).astype(np.float16),
    "i64": np.array(-(2 ** 40) + 3, np.int64),                 # 0-d
    "i32": rng.integers(-2 ** 31, 2 ** 31, size=(4, 1), dtype=np.int32),
    "i16": rng.integers(-300, 300, size=(5,), dtype=np.int16),
    "i8": np.arange(-128, 128, dtype=np.int8).reshape(16, 16),
    "u8": np.arange(256, dtype=np.uint8),
    "u16": np.array([0, 65535, 1234], np.uint16),
    "u32": np.array([[0, 2 ** 32 - 1]], np.uint32),
    "u64": np.array([2 ** 64 - 1, 1], np.uint64),
    "bool": np.array([True, False, True]),
    "empty": np.zeros((0, 3), np.float32),
    "big_endian": np.arange(6, dtype=">f4").reshape(2, 3),     # written little-endian all the same
}
NAMES = {"f64": "F64", "f32": "F32", "f16": "F16", "i64": "I64", "i32": "I32", "i16": "I16", "i8": "I8", "u8": "U8",
         "u16": "U16", "u32": "U32", "u64": "U64", "bool": "BOOL", "empty": "F32", "big_endian": "F32"}


class Entry(ctypes.Structure):   # clg_safetensors_entry (io.h)
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * _lib.MAX_DIMS), ("numel", ctypes.c_int64), ("data", ctypes.c_void_p),
                ("bytes", ctypes.c_size_t)]


def c_reader():
    lib = clgrad.core.lib()
    lib.clg_safetensors_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                                         ctypes.c_size_t]
    lib.clg_safetensors_count.argtypes = [ctypes.c_void_p]
    lib.clg_safetensors_at.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.clg_safetensors_at.restype = ctypes.POINTER(Entry)
    lib.clg_safetensors_meta.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.clg_safetensors_meta.restype = ctypes.c_char_p
    lib.clg_safetensors_dtype_name.restype = ctypes.c_char_p
    lib.clg_safetensors_close.argtypes = [ctypes.c_void_p]
    return lib


def c_read(lib, path):
    """{name: (dtype name, shape, bytes)} and the metadata "format", as clgrad's reader sees them."""
    h, err = ctypes.c_void_p(), ctypes.create_string_buffer(512)
    if lib.clg_safetensors_open(path.encode(), ctypes.byref(h), err, len(err)) != 0:
        sys.exit("FAIL: clgrad refused %s: %s" % (path, err.value.decode()))
    out = {}
    for i in range(lib.clg_safetensors_count(h)):
        e = lib.clg_safetensors_at(h, i).contents
        out[e.name.decode()] = (lib.clg_safetensors_dtype_name(e.dtype).decode(), tuple(e.shape[:e.ndim]),
                                ctypes.string_at(e.data, e.bytes) if e.bytes else b"")
    fmt = lib.clg_safetensors_meta(h, b"format")
    lib.clg_safetensors_close(h)
    return out, fmt


def main():
    tmp = tmpdir()
    path = os.path.join(tmp, "all.safetensors")
    floats = rng.normal(size=(3, 4)).astype(np.float32)
    tensors = dict(ARRAYS, bf16=floats)
    st.save(path, tensors, {"format": "pt", "note": "é ünïcode"}, dtypes={"bf16": "BF16"})

    # the header: padded to 8, data aligned, the metadata as given
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    check(n % 8 == 0, "header length %d is not a multiple of 8" % n)
    check(st.load_metadata(path) == {"format": "pt", "note": "é ünïcode"}, "metadata round trip")
    dtypes = st.file_dtypes(path)
    for k, name in NAMES.items():
        check(dtypes[k] == name, "%s stored as %s, want %s" % (k, dtypes[k], name))
    check(dtypes["bf16"] == "BF16", "bf16 stored as %s" % dtypes["bf16"])

    # NumPy round trip: the same values, shapes and kinds (native byte order back)
    back = st.load(path)
    check(list(back) == list(tensors), "load keeps the file order")
    for k, a in ARRAYS.items():
        b = back[k]
        check(b.shape == a.shape and b.dtype == a.dtype.newbyteorder("=") and np.array_equal(a, b),
              "%s: %s %s back as %s %s" % (k, a.dtype, a.shape, b.dtype, b.shape))
    # BF16: widened to float32, each value the nearest bfloat16 (rounded to nearest even)
    b = back["bf16"]
    want = ((floats.view(np.uint32) + 0x7FFF + ((floats.view(np.uint32) >> 16) & 1)) & 0xFFFF0000).view(np.float32)
    check(b.dtype == np.float32 and np.array_equal(b, want), "bf16 back: %s" % b)
    check(np.abs(b - floats).max() <= np.abs(floats).max() * 2 ** -8, "bf16 values far from the floats")
    # clgrad's own bf16 rounding agrees (clg_f32_to_bf16)
    lib = c_reader()
    lib.clg_f32_to_bf16.argtypes, lib.clg_f32_to_bf16.restype = [ctypes.c_float], ctypes.c_uint16
    check([lib.clg_f32_to_bf16(float(v)) for v in floats.ravel()] == st.f32_to_bf16(floats).ravel().tolist(),
          "bfloat16 rounding differs from clg_f32_to_bf16")

    # clgrad's validating reader: every tensor with the same dtype, shape and bytes
    seen, fmt = c_read(lib, path)
    check(fmt == b"pt", "clgrad read the metadata as %r" % fmt)
    for k, a in ARRAYS.items():
        le = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()
        check(seen[k] == (NAMES[k], a.shape, le), "clgrad reads %s as %s" % (k, seen[k][:2]))
    check(seen["bf16"][2] == st.f32_to_bf16(floats).astype("<u2").tobytes(), "clgrad reads other bf16 bits")

    # F8 from a hand-made file: widened exactly (e5m2 = the top byte of a float16; e4m3fn)
    e5 = np.array([0x3C, 0xBC, 0x7B, 0x01], np.uint8)      # 1, -1, 57344, the smallest subnormal
    e4 = np.array([0x38, 0xB8, 0x7E, 0x01, 0x7F], np.uint8)   # 1, -1, 448, 2^-9, NaN
    f8 = os.path.join(tmp, "f8.safetensors")
    st.write_items(f8, [("a", "F8_E5M2", (4,), e5.tobytes()), ("b", "F8_E4M3", (5,), e4.tobytes())])
    got = st.load(f8)
    check(got["a"].tolist() == [1.0, -1.0, 57344.0, 2.0 ** -16], "F8_E5M2 widened to %s" % got["a"])
    check(got["b"][:4].tolist() == [1.0, -1.0, 448.0, 2.0 ** -9] and np.isnan(got["b"][4]),
          "F8_E4M3 widened to %s" % got["b"])
    check(c_read(lib, f8)[0]["b"][0] == "F8_E4M3", "clgrad reads the F8 file otherwise")

    # malformed files are refused with the reason, as clgrad refuses them
    bad = os.path.join(tmp, "bad.safetensors")
    for blob, why in ((raw[:-1], "the tensors end at"), (raw[:4], "too short"),
                      (struct.pack("<Q", 10 ** 9) + raw[8:], "does not fit")):
        open(bad, "wb").write(blob)
        try:
            st.load(bad)
            check(False, "a malformed file (%s) loaded" % why)
        except ValueError as e:
            check(why in str(e), "malformed file: %s" % e)
    for args, exc in (((bad, {"x": np.zeros(2, np.complex64)}), TypeError),
                      ((bad, {"x": np.zeros(2, np.int32)}, None, {"x": "BF16"}), TypeError),
                      ((bad, {"x": np.zeros(2)}, None, {"x": "F8_E4M3"}), ValueError),
                      ((bad, {"x": np.zeros(2)}, {"k": 1}), TypeError)):
        try:
            st.save(*args)
            check(False, "save accepted %s" % (args[1:],))
        except exc:
            pass
    print("python_safetensors: %d checks passed" % CHECKS[0])


main()
