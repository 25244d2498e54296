"""Compares the tensors of two safetensors files whose names match a regex (default:
every tensor; each must be in both files): the same bytes, all different, or (close)
float32 tensors whose difference, as a whole, is at most TOL (default 1e-5) of their
norm, ||a - b|| / ||a||, and other tensors the same bytes. Usage:
st_compare.py A B same|differ|close [REGEX [TOL]]   exits 0 when the tensors are as asked."""
import json
import math
import re
import struct
import sys


def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    data = b[8 + n:]
    return {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items() if k != "__metadata__"}


def dtypes(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    return {k: v["dtype"] for k, v in json.loads(b[8:8 + n]).items() if k != "__metadata__"}


def floats(x):
    return struct.unpack("<%df" % (len(x) // 4), x)


def main(a, b, want, pattern=".*", tol="1e-5"):
    ta, tb = tensors(a), tensors(b)
    if want == "close":
        kinds = dtypes(a)
        names = sorted(k for k in ta if re.fullmatch(pattern, k))
        if not names or any(k not in tb for k in names):
            sys.exit("%s and %s: not the same tensors matching %s" % (a, b, pattern))
        exact = [k for k in names if kinds[k] != "F32" and ta[k] != tb[k]]
        diff = norm = 0.0
        for k in names:
            if kinds[k] == "F32":
                u, v = floats(ta[k]), floats(tb[k])
                diff += sum((p - q) ** 2 for p, q in zip(u, v))
                norm += sum(p * p for p in u)
        rel = math.sqrt(diff / norm) if norm > 0 else math.sqrt(diff)
        if exact or rel > float(tol):
            sys.exit("%s and %s: relative difference %.3g (at most %s), other tensors differing: %s"
                     % (a, b, rel, tol, exact[:5]))
        print("%s: %d tensors close, relative difference %.3g" % (pattern, len(names), rel))
        return
    names = sorted(k for k in set(ta) | set(tb) if re.fullmatch(pattern, k))
    if any(k not in ta or k not in tb for k in names):
        sys.exit("%s and %s hold different tensors: %s" % (a, b, [k for k in names if k not in ta or k not in tb]))
    if not names:
        sys.exit("no tensor matches %s" % pattern)
    differing = [k for k in names if ta[k] != tb[k]]
    if want == "same" and differing:
        sys.exit("%s and %s differ in %s" % (a, b, ", ".join(differing[:5])))
    if want == "differ" and len(differing) != len(names):
        sys.exit("%s and %s agree in %s" % (a, b, ", ".join(k for k in names if k not in differing)))
    print("%s: %d tensors %s" % (pattern, len(names), want))


if __name__ == "__main__":
    main(*sys.argv[1:])
