"""python_openblas: importing clgrad sets OpenBLAS's settings before NumPy loads it.
In a fresh interpreter with neither set, `import clgrad` then NumPy's OpenBLAS (the
libopenblas.so.0 libclgrad takes its products to) runs the core the CPU's flags name
(SkylakeX with avx512f, Haswell with avx2 and fma: OpenBLAS 0.3.21 took a model-207 Xeon
for Prescott) and OPENBLAS_THREAD_TIMEOUT is 4; a user's own settings are kept; and
nothing is set when NumPy came first. Needs NumPy on OpenBLAS (Debian: python3-numpy,
libopenblas0-pthread), else fails."""
import json
import os
import subprocess
import sys

from common import check, CHECKS

PROBE = r"""
import ctypes, json, os, sys
if sys.argv[1] == "numpy-first":
    import numpy
import clgrad, numpy
blas = ctypes.CDLL("libopenblas.so.0", mode=os.RTLD_NOLOAD)
blas.openblas_get_corename.restype = ctypes.c_char_p
print(json.dumps({"core": blas.openblas_get_corename().decode(),
                  "timeout": os.environ.get("OPENBLAS_THREAD_TIMEOUT"),
                  "coretype": os.environ.get("OPENBLAS_CORETYPE")}))
"""


def probe(order, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    e.update(env)
    out = subprocess.run([sys.executable, "-c", PROBE, order], env=e, capture_output=True, text=True)
    check(out.returncode == 0, "probe (%s) failed: %s" % (order, out.stderr))
    return json.loads(out.stdout)


def wanted_core():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                if "avx512f" in flags:
                    return "SkylakeX"
                if {"avx2", "fma"} <= flags:
                    return "Haswell"
                return None
    return None


def main():
    want = wanted_core()
    got = probe("clgrad-first")
    check(got["timeout"] == "4", "OPENBLAS_THREAD_TIMEOUT %r, want 4" % got["timeout"])
    if want:
        check(got["coretype"] == want and got["core"] == want,
              "OpenBLAS runs %s (OPENBLAS_CORETYPE %r), want %s" % (got["core"], got["coretype"], want))
    else:
        check(got["coretype"] is None, "OPENBLAS_CORETYPE %r on a CPU without AVX2" % got["coretype"])
    # The user's settings win.
    got = probe("clgrad-first", OPENBLAS_CORETYPE="Sandybridge", OPENBLAS_THREAD_TIMEOUT="7")
    check(got["timeout"] == "7" and got["coretype"] == "Sandybridge",
          "user settings replaced: %r" % got)
    # NumPy first: too late to change anything, so nothing is set.
    got = probe("numpy-first")
    check(got["timeout"] is None and got["coretype"] is None, "settings made after NumPy: %r" % got)
    print("python_openblas: %d checks passed" % CHECKS[0])


if __name__ == "__main__":
    main()
