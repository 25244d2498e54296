"""Compares the tensors of two safetensors files whose names match a regex (default:
every tensor; each must be in both files): the same bytes, or all different. Usage:
st_compare.py A B same|differ [REGEX]   exits 0 when the tensors are as asked."""
import json
import re
import struct
import sys


def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    data = b[8 + n:]
    return {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items() if k != "__metadata__"}


def main(a, b, want, pattern=".*"):
    ta, tb = tensors(a), tensors(b)
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
