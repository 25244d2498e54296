"""python_decls: every C function the binding declares (python/clgrad/_lib.py) matches
its prototype in include/clgrad/*.h: it exists, with as many parameters, each and the
result of the same kind (pointer, integer of that width, bool, double, void), and the
ctypes clg_model_train mirrors the struct's fields. ctypes cannot check these itself: a
wrong declaration would pass garbage silently. Usage: test_decls.py INCLUDE_DIR"""
import ctypes
import glob
import os
import re
import sys

from clgrad import _lib

C_KINDS = {"int": "i32", "clg_status": "i32", "clg_dtype": "i32", "clg_elem_type": "i32", "int64_t": "i64",
           "uint64_t": "u64", "size_t": "u64", "bool": "bool", "double": "f64", "float": "f32", "void": "void"}


def c_kind(decl):
    """The kind of a C parameter or result type ("const char *s" -> "ptr"; a type the
    binding never passes, such as a callback typedef, -> "other <type>")."""
    decl = re.sub(r"\bconst\b", "", decl)
    if "*" in decl or "[" in decl:
        return "ptr"
    words = decl.split()
    if len(words) == 2:   # a parameter: type then name
        words = words[:1]
    return C_KINDS.get(words[0], "other " + " ".join(words)) if len(words) == 1 else "other " + decl.strip()


def py_kind(t):
    if t is None:
        return "void"
    if t in (ctypes.c_void_p, ctypes.c_char_p) or hasattr(t, "contents") or issubclass(t, ctypes._Pointer):
        return "ptr"
    return {ctypes.c_int: "i32", ctypes.c_int64: "i64", ctypes.c_uint64: "u64", ctypes.c_size_t: "u64",
            ctypes.c_bool: "bool", ctypes.c_double: "f64", ctypes.c_float: "f32"}[t]


def prototypes(include):
    text = ""
    for h in sorted(glob.glob(os.path.join(include, "clgrad", "*.h"))):
        text += re.sub(r"/\*.*?\*/", "", open(h).read(), flags=re.S)
    protos = {}
    for m in re.finditer(r"CLG_API\s+([^;(]*?)\b(clg_\w+)\s*\(([^;]*?)\)\s*;", text):
        ret, name, args = m.group(1).strip(), m.group(2), m.group(3).strip()
        if "(" in args:
            continue   # a function-pointer parameter: none of the binding's
        params = [] if args in ("", "void") else [a.strip() for a in args.split(",")]
        protos[name] = (c_kind(ret + " x") if "*" in ret else c_kind(ret), [c_kind(p) for p in params])
    return protos


def main():
    if len(sys.argv) != 2:
        sys.exit("FAIL: usage: test_decls.py INCLUDE_DIR")
    protos = prototypes(sys.argv[1])
    if len(protos) < 100:
        sys.exit("FAIL: read only %d prototypes from %s" % (len(protos), sys.argv[1]))
    for name, (res, args) in _lib._DECLS.items():
        if name not in protos:
            sys.exit("FAIL: %s is declared in _lib.py but not in include/clgrad" % name)
        want = protos[name]
        got = (py_kind(res), [py_kind(a) for a in args])
        if got != want:
            sys.exit("FAIL: %s: _lib.py declares %s, the header %s" % (name, got, want))
    body = open(os.path.join(sys.argv[1], "clgrad", "model.h")).read()
    m = re.search(r"typedef struct clg_model_train \{(.*?)\} clg_model_train;", body, re.S)
    fields = [(f.split()[-1], c_kind(" ".join(f.split()[:-1]))) for f in
              (re.sub(r"/\*.*?\*/", "", line).strip().rstrip(";") for line in m.group(1).splitlines()) if f]
    mine = [(n, py_kind(t)) for n, t in _lib.ModelTrain._fields_]
    if fields != mine:
        sys.exit("FAIL: clg_model_train is %s in model.h, %s in _lib.py" % (fields, mine))
    print("python_decls: %d declarations and clg_model_train match the headers" % len(_lib._DECLS))


main()
