#!/usr/bin/env python3
"""The benchmark suite: clgrad beside what a user would otherwise pick, measured side by
side in one run on the same data, repeats interleaved so that the machine's drift hits
both alike. Prints a Markdown table of ratios with min/median/max over the repeats.

    python3 bench/run.py [--build build] [--repeats 3] [--quick]

Needs Debian's python3-torch and python3-numpy for the reference columns. PyTorch and
NumPy run at their best: OPENBLAS_CORETYPE unset (the machines set Haswell, which holds
OpenBLAS to AVX2), OMP_WAIT_POLICY=PASSIVE, 2 threads."""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
# Debian's interpreter, where python3-torch and python3-numpy live
PYTHON = os.environ.get("CLG_BENCH_PYTHON", "/usr/bin/python3")

def ref_env():
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.update(OMP_WAIT_POLICY="PASSIVE", OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2")
    return env

def run(cmd, env=None):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("bench: %s failed:\n%s%s" % (" ".join(cmd), out.stdout, out.stderr))
    return out.stdout

def stats(values):
    return min(values), statistics.median(values), max(values)

def fmt(v, unit=""):
    return "%.3g%s" % (v, unit) if abs(v) < 1000 else "{:,.0f}{}".format(v, unit)

def row(name, ours, theirs, unit, ref_name):
    """One table row; ratios are ours/theirs per interleaved repeat."""
    ratios = [a / b for a, b in zip(ours, theirs)]
    lo, med, hi = stats(ratios)
    return "| %s | %s | %s (%s) | %.2f / %.2f / %.2f |" % (
        name, fmt(statistics.median(ours), unit), fmt(statistics.median(theirs), unit), ref_name, lo, med, hi)

def training(build, model, repeats, steps):
    ours, theirs, extra = [], [], None
    for _ in range(repeats):
        out = run([os.path.join(build, "bench", "bench_train"), "--model", model, "--steps", str(steps), "--repeats", "1"])
        fields = out.split()
        ours.append(float(fields[1]))
        extra = dict(zip(fields[0::2], fields[1::2]))
        out = run([PYTHON, os.path.join(HERE, "torch_train.py"), "--model", model, "--steps", str(steps),
                   "--repeats", "1"], env=ref_env())
        theirs.append(float(out.split()[1]))
    return ours, theirs, extra

def startup(build, model, repeats):
    cold, warm = [], []
    base = tempfile.mkdtemp(prefix="clgrad-bench-")
    exe = [os.path.join(build, "bench", "bench_train"), "--model", model, "--startup"]
    for i in range(repeats + 1):
        for kind, dest in (("cold", cold), ("warm", warm)):
            env = dict(os.environ)
            tag = "%s%d" % (kind, i) if kind == "cold" else "warm"
            env.update(CLG_CACHE_DIR=os.path.join(base, tag + "-clg"), POCL_CACHE_DIR=os.path.join(base, tag + "-pocl"))
            t0 = time.perf_counter()
            run(exe, env)
            if i > 0 or kind == "cold":   # the first warm run fills the caches
                dest.append(time.perf_counter() - t0)
    shutil.rmtree(base, ignore_errors=True)
    return cold[:repeats], warm

def elementwise(build, repeats):
    out = run([os.path.join(build, "bench", "bench_elementwise"), "--repeats", str(repeats)])
    res = {}
    for line in out.splitlines():
        name, dev, host = line.split()
        res.setdefault(name, ([], []))
        res[name][0].append(float(dev))
        res[name][1].append(float(host))
    return res

def matmul(build, repeats):
    out = run([os.path.join(build, "bench", "bench_matmul"), "--repeats", str(max(repeats, 3)), "--no-compile"],
              env=ref_env())
    return out

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    a = ap.parse_args()
    steps = 20 if a.quick else 100
    print("| benchmark | clgrad | reference | ratio min / median / max |")
    print("| --- | ---: | ---: | ---: |")
    extras = {}
    for model in ("mlp", "cnn"):
        ours, theirs, extra = training(a.build, model, a.repeats, steps if model == "mlp" else steps // 2)
        extras[model] = extra
        print(row("train %s, images/s (steps 6 on)" % model.upper(), ours, theirs, "", "PyTorch 1.13"), flush=True)
    for name, (dev, host) in elementwise(a.build, a.repeats).items():
        print(row("%s, GB/s (16M floats)" % name, dev, host, "", "plain C loop, 1 thread"), flush=True)
    for model in ("mlp", "cnn"):
        e = extras[model]
        print("| %s step: bytes host->device / device->host | %s / %s | %s / 4 (ideal) | %.2f |" % (
            model.upper(), fmt(float(e["h2d"])), fmt(float(e["d2h"])), fmt(float(e["ideal_h2d"])),
            float(e["h2d"]) / float(e["ideal_h2d"])))
        print("| %s peak device memory in use | %.1f MiB | | |" % (model.upper(), int(e["peak"]) / 2**20))
    for model in ("mlp", "cnn"):
        cold, warm = startup(a.build, model, a.repeats)
        lo, med, hi = stats(cold)
        lo2, med2, hi2 = stats(warm)
        print("| %s start-up to the first step done, s: cold / warm | %.2f / %.2f | min %.2f / %.2f, max %.2f / %.2f | |"
              % (model.upper(), med, med2, lo, lo2, hi, hi2), flush=True)
    print("\nmatmul against NumPy's OpenBLAS (bench_matmul):\n")
    print(matmul(a.build, a.repeats))

if __name__ == "__main__":
    main()
