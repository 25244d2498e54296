"""The references' BLAS, at its best and named: import this module before NumPy or PyTorch.

OpenBLAS picks its kernels from the CPU's model at load time, and on some virtual CPUs
(model name "Intel(R) Xeon(R) Processor") it picks its SSE3 "Prescott" kernels although
the CPU has AVX-512: three to five times slower, and every ratio against it inflated.
Some machines also preset OPENBLAS_CORETYPE=Haswell, which holds OpenBLAS to AVX2 on an
AVX-512 CPU. So the core comes from /proc/cpuinfo's flags, whatever the environment says:
SkylakeX with avx512f, Haswell with avx2 and fma, else OpenBLAS's own detection.
CLG_BENCH_OPENBLAS_CORETYPE overrides the choice (for trying another core by hand).

Without libopenblas0-pthread, NumPy and PyTorch run Debian's reference BLAS (about 4
GFLOP/s at 1024^3): describe() says so, and bench/run.py then prints no ratio.

Setting the variable here works because OpenBLAS reads it in its constructor, when NumPy
or PyTorch loads it, after this module has run."""
import ctypes
import os


def core_from_flags(path="/proc/cpuinfo"):
    """OpenBLAS's best core for this CPU by its flags, or None (let OpenBLAS detect)."""
    try:
        with open(path) as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return None
    if "avx512f" in flags:
        return "SkylakeX"
    if "avx2" in flags and "fma" in flags:
        return "Haswell"
    return None


def setup():
    """Set OPENBLAS_CORETYPE (before the BLAS loads) and 2 threads; returns the core set."""
    core = os.environ.get("CLG_BENCH_OPENBLAS_CORETYPE") or core_from_flags()
    if core:
        os.environ["OPENBLAS_CORETYPE"] = core
    else:
        os.environ.pop("OPENBLAS_CORETYPE", None)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "2")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return core


def describe():
    """What this process's BLAS is, from the libraries it has mapped: 'OpenBLAS 0.3.21
    (pthread) core Haswell', or 'reference BLAS (...)'. Call after NumPy/PyTorch ran a
    product. The word 'reference' in the answer means: no ratio against it."""
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f if "/" in line and "blas" in line.lower()})
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
            corename = lib.openblas_get_corename
        except (OSError, AttributeError):
            continue
        corename.restype = ctypes.c_char_p
        config = getattr(lib, "openblas_get_config", None)
        version = ""
        if config is not None:  # "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64"
            config.restype = ctypes.c_char_p
            words = config().decode().split()
            version = " " + words[1] if len(words) > 1 else ""
        kind = "pthread" if "pthread" in path else "openmp" if "openmp" in path else "serial"
        return "OpenBLAS%s (%s) core %s" % (version, kind, corename().decode())
    return "reference BLAS (%s)" % (", ".join(os.path.basename(p) for p in libs) or "none mapped")


setup()
