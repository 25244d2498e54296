#!/usr/bin/env python3
"""NumPy's matmul (its BLAS, OpenBLAS on Debian with libopenblas0) on the shapes that
bench_matmul passes, for the side-by-side table. refblas sets OpenBLAS's core from the
CPU's flags and 2 BLAS threads before NumPy loads it.

  matmul_numpy.py REPEATS "m n k ta tb" ...
prints one line per shape: "m n k ta tb min median max" in GFLOP/s, then "blas <what ran>"
(refblas.describe(): OpenBLAS's version and core, or "reference BLAS").
"""
import sys
import time

import refblas  # before NumPy: it sets OpenBLAS's core
import numpy as np


def run(m, n, k, ta, tb, repeats):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((k, m) if ta else (m, k), dtype=np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n), dtype=np.float32)
    a = a.T if ta else a   # a transposed view: BLAS gets a transpose flag, no copy
    b = b.T if tb else b
    c = np.empty((m, n), dtype=np.float32)
    np.matmul(a, b, out=c)  # warm up (threads, pages)
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.matmul(a, b, out=c)
        rates.append(2.0 * m * n * k / (time.perf_counter() - t0) / 1e9)
    rates.sort()
    return rates[0], rates[len(rates) // 2], rates[-1]


def main():
    repeats = int(sys.argv[1])
    for spec in sys.argv[2:]:
        m, n, k, ta, tb = (int(x) for x in spec.split())
        lo, med, hi = run(m, n, k, ta, tb, repeats)
        print(f"{m} {n} {k} {ta} {tb} {lo:.3f} {med:.3f} {hi:.3f}")
    print("blas", refblas.describe())


if __name__ == "__main__":
    main()
