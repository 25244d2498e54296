"""clgrad from Python: safetensors and checkpoints in pure Python (NumPy, optionally
PyTorch), and a ctypes binding of libclgrad (clgrad.core). Importing the package does
not load the library; the binding's first use does.

Importing it sets OPENBLAS_THREAD_TIMEOUT=4 and OPENBLAS_CORETYPE from the CPU's flags
(SkylakeX with avx512f, Haswell with avx2 and fma), each unless set, before it imports
NumPy: the same settings libclgrad makes before it loads OpenBLAS (src/gemm/host.c), which
would come too late here, NumPy having loaded OpenBLAS first. Without them OpenBLAS's
threads spin after each product on the cores the device's kernels need, and OpenBLAS
0.3.21 runs SSE3 kernels on some newer CPUs (where libclgrad then leaves the products to
its own kernels). Nothing is set when NumPy was imported before clgrad."""
import os as _os
import sys as _sys


def _openblas_settings():
    if "numpy" in _sys.modules:
        return
    core = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    if "avx512f" in flags:
                        core = "SkylakeX"
                    elif {"avx2", "fma"} <= flags:
                        core = "Haswell"
                    break
    except OSError:
        pass
    _os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    if core:
        _os.environ.setdefault("OPENBLAS_CORETYPE", core)


_openblas_settings()

from . import checkpoint, safetensors  # noqa: E402 (after the settings above)
from .core import Device, Error, Model, Tensor, version  # noqa: E402

__all__ = ["checkpoint", "safetensors", "Device", "Error", "Model", "Tensor", "version"]
