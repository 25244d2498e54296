#!/usr/bin/env python3
"""The benchmark suite: clgrad beside what a user would otherwise pick, measured side by
side in one run on the same data, repeats interleaved so that the machine's drift hits
both alike. Prints a Markdown table of ratios with min/median/max over the repeats.

    python3 bench/run.py [--build build] [--repeats 3] [--quick] [--graph-only] [--precision-only]
                         [--models-only] [--ops-only [--only NAME/CLASS]]

First it installs what the references need (scripts/install-deps.sh --test: PyTorch,
NumPy, and libopenblas0-pthread, without which both run the reference BLAS). PyTorch and
NumPy run at their best: OpenBLAS's core chosen from the CPU's flags (bench/refblas.py:
SkylakeX with avx512f, Haswell with avx2 and fma), OMP_WAIT_POLICY=PASSIVE, 2 threads.
The header names the BLAS and core each reference ran; against the reference BLAS no
ratio is printed."""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
# Debian's interpreter, where python3-torch and python3-numpy live
PYTHON = os.environ.get("CLG_BENCH_PYTHON", "/usr/bin/python3")

def ref_env():
    """The references' environment; refblas.py sets OPENBLAS_CORETYPE in the process itself."""
    env = dict(os.environ)
    env.update(OMP_WAIT_POLICY="PASSIVE", OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2")
    return env

# What each reference ran on, from its own "blas ..." / "conv ..." lines; checked by row().
REFS = {}

def setup():
    """Install what the references need, then print which BLAS and core they will run."""
    root = os.path.join(HERE, "..")
    if subprocess.run(["sh", os.path.join(root, "scripts", "install-deps.sh"), "--test"]).returncode != 0:
        sys.exit("bench: the references' packages are missing (see above)")
    probe = ("import refblas, numpy, torch\n"
             "numpy.ones((64, 64), numpy.float32) @ numpy.ones((64, 64), numpy.float32)\n"
             "print(refblas.core_from_flags() or 'its own detection', '|', refblas.describe(), '|',\n"
             "      numpy.__version__, '|', torch.__version__)")
    core, blas, np_ver, torch_ver = (f.strip() for f in run([PYTHON, "-c", probe], env=dict(ref_env(), PYTHONPATH=HERE)).split("|"))
    REFS["numpy"] = REFS["torch"] = blas
    print("References: NumPy %s and PyTorch %s on %s (OpenBLAS core from the CPU's flags: %s), 2 threads."
          % (np_ver, torch_ver, blas, core))
    if "reference" in blas:
        print("**The references run the reference BLAS: no ratios are printed.**")
    print()

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
    if "reference" in REFS.get(ref_name, ""):
        text = "none: %s" % REFS[ref_name]
    else:
        text = "%.2f / %.2f / %.2f" % (lo, med, hi)
    label = {"torch": "PyTorch", "plain C loop": "plain C loop, 1 thread"}.get(ref_name, ref_name)
    return "| %s | %s | %s (%s) | %s |" % (
        name, fmt(statistics.median(ours), unit), fmt(statistics.median(theirs), unit), label, text)

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
        for line in out.splitlines():   # what this run's PyTorch used, not what the probe saw
            if line.startswith("blas ") and line[5:] != REFS["torch"]:
                REFS["torch"] = "%s (probe: %s)" % (line[5:], REFS["torch"])
            if line.startswith("conv ") and model == "cnn":
                REFS["torch conv"] = line[5:]
    return ours, theirs, extra

GRAPH_MODES = {"eager": ([], {}), "graph": (["--graph"], {}),
               "graph_copies": (["--graph"], {"CLG_GRAPH_SKIP": "copies"}),   # without leaving copies out
               "graph_relu": (["--graph"], {"CLG_GRAPH_SKIP": "relu"})}       # without folding ReLUs into GEMMs

def graph_vs_eager(exe, args, repeats, env=None):
    """A benchmark (bench_train or bench_char: `rate` or `chars_per_s`, and `host_us`)
    with the library's step captured and replayed (--graph), the same with the graph's
    redundant copies kept, and the step eager, interleaved: rate, the calling thread's
    CPU time per step and the peak memory."""
    res = {m: {"rate": [], "host": [], "peak": 0} for m in GRAPH_MODES}
    for _ in range(repeats):
        for mode, (flags, extra) in GRAPH_MODES.items():
            out = run([exe] + args + flags, env=dict(env or os.environ, **extra))
            line = next(l for l in out.splitlines() if "host_us" in l)
            tok = line.split()
            f = {k: v for k, v in zip(tok, tok[1:])}   # "key value" pairs, wherever they start
            res[mode]["rate"].append(float(f.get("rate", f.get("chars_per_s", "nan"))))
            res[mode]["host"].append(float(f["host_us"]))
            res[mode]["peak"] = int(f["peak"])
    return res

def print_graph(device, name, unit, r):
    print(row("%s: %s step replayed (--graph) vs eager, %s" % (device, name, unit), r["graph"]["rate"],
              r["eager"]["rate"], "", "eager"), flush=True)
    print(row("%s: %s, graph with its redundant copies left out vs kept, %s" % (device, name, unit), r["graph"]["rate"],
              r["graph_copies"]["rate"], "", "graph, copies kept"), flush=True)
    print(row("%s: %s, graph with ReLUs folded into GEMMs vs not, %s" % (device, name, unit), r["graph"]["rate"],
              r["graph_relu"]["rate"], "", "graph, ReLUs apart"), flush=True)
    host = [e / g for e, g in zip(r["eager"]["host"], r["graph"]["host"])]
    print("| %s: %s host CPU time per step, us: graph / eager | %.0f / %.0f | peak MiB %.1f / %.1f | cut %.2f / %.2f / %.2f |"
          % (device, name, statistics.median(r["graph"]["host"]), statistics.median(r["eager"]["host"]),
             r["graph"]["peak"] / 2**20, r["eager"]["peak"] / 2**20, *stats(host)), flush=True)

def graph_rows(build, repeats, steps, device="POCL", env=None, char_steps=0):
    exe = os.path.join(build, "bench", "bench_train")
    for model in ("mlp", "cnn"):
        args = ["--model", model, "--steps", str(steps if model == "mlp" else steps // 2), "--repeats", "1"]
        print_graph(device, model.upper(), "images/s", graph_vs_eager(exe, args, repeats, env))
    if char_steps:
        args = ["--cell", "lstm", "--steps", str(char_steps)]
        print_graph(device, "char_lstm", "chars/s", graph_vs_eager(os.path.join(build, "bench", "bench_char"), args,
                                                                   repeats, env))

PRECISIONS = ("float32", "mixed", "mixed-bf16")

def precision_rows(build, repeats, steps, device="POCL", env=None):
    """bench_train in float32 and in mixed precision (float16 with loss scaling, and
    bfloat16), interleaved: images/s and peak device memory, as ratios to float32's."""
    exe = os.path.join(build, "bench", "bench_train")
    for model in ("mlp", "cnn"):
        rate = {p: [] for p in PRECISIONS}
        peak = {}
        for _ in range(repeats):
            for p in PRECISIONS:
                out = run([exe, "--model", model, "--steps", str(steps if model == "mlp" else steps // 2), "--repeats", "1",
                           "--precision", p], env)
                tok = out.split()
                f = dict(zip(tok[0::2], tok[1::2]))
                rate[p].append(float(f["rate"]))
                peak[p] = int(f["peak"])
        for p in PRECISIONS[1:]:
            print(row("%s: %s --precision %s vs float32, images/s" % (device, model.upper(), p), rate[p], rate["float32"],
                      "", "float32"), flush=True)
            print("| %s: %s --precision %s vs float32, peak device memory | %.1f MiB | %.1f MiB | %.2f |"
                  % (device, model.upper(), p, peak[p] / 2**20, peak["float32"] / 2**20, peak[p] / peak["float32"]),
                  flush=True)

def char_lm(build, cell, repeats, steps):
    """The character model char_lstm (an LSTM or GRU of 256, 2 layers), batch 32,
    sequence 128: clgrad's bench_char and PyTorch's bench/torch_char_lm.py, the same
    model, step and text, interleaved."""
    ours, theirs = [], []
    for _ in range(repeats):
        out = run([os.path.join(build, "bench", "bench_char"), "--cell", cell, "--steps", str(steps)])
        ours.append(float(out.split()[4]))
        out = run([PYTHON, os.path.join(HERE, "torch_char_lm.py"), "--throughput", "--cell", cell,
                   "--steps", str(steps)], env=ref_env())
        line = next(l for l in out.splitlines() if l.startswith("throughput"))
        theirs.append(float(line.split()[4]))
    return ours, theirs

def models(build, model, repeats, steps):
    """The GPT and the ResNet (bench_models) against PyTorch's twins (bench/torch_models.py),
    interleaved."""
    ours, theirs = [], []
    for _ in range(repeats):
        out = run([os.path.join(build, "bench", "bench_models"), "--model", model, "--steps", str(steps),
                   "--repeats", "1"])
        ours.append(float(out.split()[1]))
        out = run([PYTHON, os.path.join(HERE, "torch_models.py"), "--model", model, "--steps", str(steps),
                   "--repeats", "1"], env=ref_env())
        theirs.append(float(out.split()[1]))
    return ours, theirs

MODEL_ROWS = (("gpt_tiny", "train the issue's tiny GPT (2 x 128, 4 heads, batch 32 x 64), tokens/s"),
              ("gpt", "train gpt_fortunes (4 x 128, 4 heads, batch 32 x 128), tokens/s"),
              ("resnet", "train resnet_fashion (ResNet-20, batch 128), images/s"))

def model_rows(build, repeats, quick):
    for model, label in MODEL_ROWS:
        ours, theirs = models(build, model, repeats, 3 if quick else 10)
        print(row(label, ours, theirs, "", "torch"), flush=True)

def parse_cases(out, moved=None):
    """bench_ops / torch_ops.py output: {(case, mode): median ms}; bench_ops's bytes each
    case moves at the least into `moved`."""
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) in (6, 7) and f[0] == "case":
            res[(f[1], f[2])] = float(f[4])
            if len(f) == 7 and moved is not None:
                moved[(f[1], f[2])] = float(f[6])
    return res

def memory_bandwidth(build):
    """The best of bench_peak's memory rows on every CPU, GB/s (median), and its line;
    (0, '') without it."""
    exe = os.path.join(build, "bench", "bench_peak")
    if not os.path.exists(exe):
        return 0.0, ""
    best = (0.0, "")
    for line in run([exe, "--repeats", "3"]).splitlines():
        if "GB/s" in line and "threads" in line:
            best = max(best, (float(line.split("|")[2].split("/")[1]), line))
    return best

def op_rows(build, repeats, only=None):
    """The per-op table: bench_ops against bench/torch_ops.py, whole runs alternating; the
    ratio is PyTorch's time over clgrad's (above 1: clgrad faster), per round."""
    extra = ["--only", only] if only else []
    ours, theirs, moved = [], [], {}
    bw, bw_line = memory_bandwidth(build)
    for _ in range(repeats):
        out = run([os.path.join(build, "bench", "bench_ops"), "--repeats", "3"] + extra)
        skipped = [l[5:] for l in out.splitlines() if l.startswith("skip ")]
        ours.append(parse_cases(out, moved))
        theirs.append(parse_cases(run([PYTHON, os.path.join(HERE, "torch_ops.py"), "--repeats", "3"] + extra,
                                      env=ref_env())))
    if bw:
        print("memory bandwidth (bench_peak): %s\n" % bw_line.strip())
    print("| op / shape class | pass | clgrad ms | PyTorch ms | speed ratio min / median / max | clgrad GB/s (share of bench_peak's) |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    slow = []
    for key in ours[0]:
        ms = statistics.median(o[key] for o in ours)
        gbs = moved.get(key, 0) / ms / 1e6 if ms > 0 else 0
        mem = "%.1f (%.0f%%)" % (gbs, 100 * gbs / bw) if bw and gbs else ""
        if not all(key in o for o in ours) or not all(key in t for t in theirs):
            print("| %s | %s | %.3g | (no case) | | %s |" % (key[0], key[1], ours[0][key], mem))
            continue
        r = [t[key] / o[key] for o, t in zip(ours, theirs)]
        lo, med, hi = stats(r)
        slow.append((med, key))
        print("| %s | %s | %.3g | %.3g | %.2f / %.2f / %.2f | %s |" % (key[0], key[1], ms,
              statistics.median(t[key] for t in theirs), lo, med, hi, mem), flush=True)
    slow.sort()
    for line in skipped:
        name, why = line.split(" ", 1)
        print("| %s | not run: %s | | | | |" % (name.rstrip(":"), why))
    print("\nslowest against PyTorch (median ratio): " + ", ".join("%s %s %.3f" % (k[0], k[1], m) for m, k in slow[:15]))

def startup(build, model, repeats):
    """Seconds from process start to the first step done: cold (empty clgrad and POCL
    caches), warm (the caches a first run left: on POCL its own kernel cache, since
    clgrad stores no binaries there) and after `clgrad warmup` (clgrad's cache filled
    ahead of time)."""
    times = {"cold": [], "warm": [], "warmup": []}
    base = tempfile.mkdtemp(prefix="clgrad-bench-")
    exe = [os.path.join(build, "bench", "bench_train"), "--model", model, "--startup"]
    json = os.path.join(HERE, "..", "examples", "models", "fashion_%s.json" % model)
    for i in range(repeats):
        for kind in ("cold", "warmup"):
            env = dict(os.environ)
            tag = "%s%d" % (kind, i)
            env.update(CLG_CACHE_DIR=os.path.join(base, tag + "-clg"), POCL_CACHE_DIR=os.path.join(base, tag + "-pocl"))
            if kind == "warmup":
                run([os.path.join(build, "tools", "clgrad"), "warmup", json], env)
            for what in ((kind, "warm") if kind == "cold" else (kind,)):
                t0 = time.perf_counter()
                run(exe, env)
                times[what].append(time.perf_counter() - t0)
    shutil.rmtree(base, ignore_errors=True)
    return times

def elementwise(build, repeats):
    out = run([os.path.join(build, "bench", "bench_elementwise"), "--repeats", str(repeats)])
    res = {}
    for line in out.splitlines():
        name, dev, host = line.split()
        res.setdefault(name, ([], []))
        res[name][0].append(float(dev))
        res[name][1].append(float(host))
    return res

def matmul(build, repeats, stream=1):
    """bench_matmul's table: each product waited for (as NumPy's calls return), or with
    `stream` products enqueued back to back and waited for once (as a step runs them)."""
    args = [os.path.join(build, "bench", "bench_matmul"), "--repeats", str(max(repeats, 3)), "--no-compile"]
    if stream > 1:
        args += ["--stream", str(stream)]
    return run(args, env=ref_env())

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    ap.add_argument("--graph-only", action="store_true", help="only the graph-against-eager rows")
    ap.add_argument("--precision-only", action="store_true", help="only the mixed-precision rows")
    ap.add_argument("--models-only", action="store_true", help="only the GPT and ResNet rows")
    ap.add_argument("--ops-only", action="store_true", help="only the per-op table (bench_ops, torch_ops.py)")
    ap.add_argument("--only", help="with --ops-only: the cases whose NAME/CLASS contains this")
    a = ap.parse_args()
    steps = 20 if a.quick else 100
    rusticl = dict(os.environ, RUSTICL_ENABLE="swrast", CLG_DEVICE="llvmpipe")
    if a.precision_only:
        print("| benchmark | mixed | float32 | ratio min / median / max |")
        print("| --- | ---: | ---: | ---: |")
        precision_rows(a.build, a.repeats, 3 * steps)
        precision_rows(a.build, a.repeats, 10 if a.quick else 20, "rusticl", rusticl)
        return
    if a.graph_only:
        print("| benchmark | graph | eager | ratio min / median / max |")
        print("| --- | ---: | ---: | ---: |")
        graph_rows(a.build, a.repeats, 3 * steps, char_steps=5 if a.quick else 20)
        graph_rows(a.build, a.repeats, 10 if a.quick else 20, "rusticl", rusticl)
        return
    setup()
    if a.ops_only:
        op_rows(a.build, a.repeats, a.only)
        return
    print("| benchmark | clgrad | reference | ratio min / median / max |")
    print("| --- | ---: | ---: | ---: |")
    if a.models_only:
        model_rows(a.build, a.repeats, a.quick)
        return
    extras = {}
    for model in ("mlp", "cnn"):
        ours, theirs, extra = training(a.build, model, a.repeats, steps if model == "mlp" else steps // 2)
        extras[model] = extra
        print(row("train %s, images/s (steps 6 on)" % model.upper(), ours, theirs, "", "torch"), flush=True)
    graph_rows(a.build, a.repeats, steps, char_steps=5 if a.quick else 20)
    graph_rows(a.build, a.repeats, 10 if a.quick else 20, "rusticl", rusticl)
    precision_rows(a.build, a.repeats, steps)
    precision_rows(a.build, a.repeats, 10 if a.quick else 20, "rusticl", rusticl)
    model_rows(a.build, a.repeats, a.quick)
    for cell in ("lstm", "gru"):
        ours, theirs = char_lm(a.build, cell, a.repeats, 5 if a.quick else 20)
        print(row("train char_%s (2 x 256, batch 32 x 128), chars/s" % cell, ours, theirs, "", "torch"), flush=True)
    for name, (dev, host) in elementwise(a.build, a.repeats).items():
        print(row("%s, GB/s (16M floats)" % name, dev, host, "", "plain C loop"), flush=True)
    for model in ("mlp", "cnn"):
        e = extras[model]
        print("| %s step: bytes host->device / device->host | %s / %s | %s / 4 (ideal) | %.2f |" % (
            model.upper(), fmt(float(e["h2d"])), fmt(float(e["d2h"])), fmt(float(e["ideal_h2d"])),
            float(e["h2d"]) / float(e["ideal_h2d"])))
        print("| %s peak device memory in use | %.1f MiB | | |" % (model.upper(), int(e["peak"]) / 2**20))
    for model in ("mlp", "cnn"):
        t = startup(a.build, model, a.repeats)
        cells = ["%.2f" % statistics.median(t[k]) for k in ("cold", "warm", "warmup")]
        spread = ", ".join("%s %.2f-%.2f" % (k, min(t[k]), max(t[k])) for k in ("cold", "warm", "warmup"))
        print("| %s start-up to the first step done, s: cold / warm / after `clgrad warmup` | %s | %s | |"
              % (model.upper(), " / ".join(cells), spread), flush=True)
    if "torch conv" in REFS:
        print("\nPyTorch's convolutions ran on %s, its linear layers on %s." % (REFS["torch conv"], REFS["torch"]))
    print("\nmatmul against NumPy's OpenBLAS (bench_matmul), each product waited for:\n")
    print(matmul(a.build, a.repeats))
    print("\nthe same, 20 products back to back a timing (bench_matmul --stream 20):\n")
    print(matmul(a.build, a.repeats, 20))

if __name__ == "__main__":
    main()
