#!/usr/bin/env python3
"""The folders of src/ as layers: which folder calls functions defined in which (from the
object files' symbols, `nm`), and which includes headers of which (from `#include "..."`
lines). Prints both graphs and any cycle between folders.

    python3 scripts/layers.py BUILD_DIR [--check]

With --check it exits 1 when the call graph or the include graph has a cycle between
folders (the `layers` test), so that a lower layer never comes to depend on a higher one,
or when a folder other than device/ calls a capture hook (clg__cap_*): capture and
replay belong to the runtime, which records what an op passes with its launches
(issue 34), or when a file outside device/ includes one of its private headers
(DEVICE_PRIVATE), or a file outside device/opencl/ includes OpenCL's headers or names an
OpenCL type: the OpenCL implementation is that one folder; or when a generator position
can reach a kernel other than through a CLG_ARG_RNG argument (generator_positions): a
kernel that takes one must take it as the four arguments that argument sets, every
source that launches such a kernel must pass one, and no folder but device/ (which
keeps the position), io/ (checkpoints) and train/ (evaluation that restores it) reads
the generator's state, so that no op can pass a position as plain integers, which a graph
replay would repeat."""
import os, re, subprocess, sys
from collections import defaultdict

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def objects(build):
    """folder -> object files of the library's sources in that folder (the sources that
    are there now: a build folder keeps the objects of files since moved)."""
    root = os.path.join(build, "src", "CMakeFiles", "clgrad_objects.dir")
    found = defaultdict(list)
    for dirpath, _, files in os.walk(SRC):
        rel = os.path.relpath(dirpath, SRC)
        folder = rel.split(os.sep)[0]
        for f in files:
            obj = os.path.join(root, rel, f + ".o")
            if f.endswith(".c") and folder not in (".", "mpi") and os.path.exists(obj):
                found[folder].append(obj)
    return found


def symbols(objs):
    """object file -> (defined, undefined) global symbols, from one run of nm."""
    out = subprocess.run(["nm", "-P", "-A"] + objs, check=True, capture_output=True, text=True).stdout
    table = {o: (set(), set()) for o in objs}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2] in "UTDBR":
            table[parts[0].rstrip(":")][parts[2] == "U"].add(parts[1])
    return table


def call_graph(build):
    """{(from, to): sorted symbols} over clg_ functions defined in one folder, used in another."""
    objs = objects(build)
    if not objs:
        sys.exit(f"layers: no object files under {build}/src/CMakeFiles/clgrad_objects.dir (build first)")
    syms = symbols([o for files in objs.values() for o in files])
    home, uses = {}, defaultdict(set)
    for folder, files in objs.items():
        for o in files:
            d, u = syms[o]
            for s in d:
                home[s] = folder
            uses[folder] |= {s for s in u if s.startswith("clg_")}
    edges = defaultdict(set)
    for folder, used in uses.items():
        for s in used:
            if s in home and home[s] != folder:
                edges[(folder, home[s])].add(s)
    return edges


def capture_hooks(calls):
    """(folder, hook) pairs of clg__cap_* functions called from outside device/."""
    return sorted((a, s) for (a, b), syms in calls.items() for s in syms if a != "device" and s.startswith("clg__cap_"))


# Headers of src/device/ that no other folder includes: the recording hooks, the
# capture's internals and what src/device/ asks of its OpenCL implementation. The layers
# above see runtime.h and device_impl.h.
DEVICE_PRIVATE = {"capture.h", "capture_impl.h", "backend.h", "layer.h"}
# What only the OpenCL implementation, src/device/opencl/, includes or names.
OPENCL_HEADERS = {"device_cl.h", "clblast_c.h"}
OPENCL_TYPES = re.compile(r"\b(cl_mem|cl_event|cl_int|cl_uint|cl_kernel|cl_command_queue|cl_device_id|cl_context|"
                          r"cl_program|cl_ulong|cl_bool|cl_platform_id)\b")


def private_includes():
    """(file, what) pairs: a file outside src/device/ that includes a private header of
    src/device/, or a file outside src/device/opencl/ that includes OpenCL's headers or
    names an OpenCL type."""
    found = []
    for dirpath, _, files in os.walk(SRC):
        rel = os.path.relpath(dirpath, SRC)
        parts = rel.split(os.sep)
        device, opencl = parts[0] == "device", parts[:2] == ["device", "opencl"]
        for f in files:
            if opencl or not f.endswith((".c", ".h", ".def")):
                continue
            name = os.path.normpath(os.path.join(rel, f))
            with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                text = fh.read()
            for m in re.finditer(r'^\s*#\s*include\s+["<]([^">]+)[">]', text, re.M):
                h = m.group(1)
                if (os.path.basename(h) in DEVICE_PRIVATE and not device) or os.path.basename(h) in OPENCL_HEADERS \
                        or h.startswith("CL/"):
                    found.append((name, f"includes {h}"))
            for t in sorted(set(OPENCL_TYPES.findall(text))):
                found.append((name, f"names OpenCL's {t}"))
    return sorted(found)


KERNELS = os.path.join(SRC, "..", "cl_kernels")
# The four kernel arguments a CLG_ARG_RNG argument sets (src/device/opencl/kernel.c).
RNG_PARAMS = ["uint seed_lo", "uint seed_hi", "uint ctr_lo", "uint ctr_hi"]
RNG_NAME = re.compile(r"\b(seed\w*|ctr\w*|rng\w*|philox\w*)$")
RNG_READERS = {"device", "io", "train"}


def rng_kernels():
    """(kernels taking a generator position, problems): a kernel parameter named like a
    position (seed*, ctr*, rng*, philox*) that is not in the run of RNG_PARAMS."""
    takes, bad = set(), []
    for f in sorted(os.listdir(KERNELS)):
        if not f.endswith(".cl"):
            continue
        with open(os.path.join(KERNELS, f), encoding="utf-8") as fh:
            text = re.sub(r"//[^\n]*|/\*.*?\*/", "", fh.read(), flags=re.S)
        for m in re.finditer(r"__kernel\s+void\s+(\w+)\s*\(([^)]*)\)", text):
            name, params = m.group(1), [" ".join(p.split()) for p in m.group(2).split(",")]
            named = [p for p in params if RNG_NAME.search(p)]
            if not named:
                continue
            at = next((i for i in range(len(params)) if params[i:i + 4] == RNG_PARAMS), -1)
            if at < 0 or len(named) != 4:
                bad.append(f"cl_kernels/{f}: kernel {name} takes a generator position other than as "
                           f"'{', '.join(RNG_PARAMS)}' (the four arguments of a CLG_ARG_RNG argument)")
            takes.add(name)
    return takes, bad


def generator_positions(calls):
    """Problems: rng_kernels' ones; a source outside device/ that names a kernel taking a
    position (a string literal that is its name: attention.c adds suffixes to names that
    are kernels' too) and passes no CLG_ARG_RNG_ argument; a folder outside RNG_READERS that reads the
    generator's state (clg_rng_get_state, or the device's rng field)."""
    takes, bad = rng_kernels()
    for dirpath, _, files in os.walk(SRC):
        rel = os.path.relpath(dirpath, SRC)
        folder = rel.split(os.sep)[0]
        for f in files:
            if folder == "device" or not f.endswith(".c"):
                continue
            with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                text = fh.read()
            named = sorted(set(re.findall(r'"(\w+)"', text)) & takes)
            if named and "CLG_ARG_RNG_" not in text:
                bad.append(f"src/{os.path.join(rel, f)} launches {', '.join(named)} (a generator position) without "
                           "a CLG_ARG_RNG_ argument")
            if folder not in RNG_READERS and re.search(r"->rng\.|\brng\.(seed|offset)\b", text):
                bad.append(f"src/{os.path.join(rel, f)} reads the device generator's position: ops get it only "
                           "through CLG_ARG_RNG_DRAW / CLG_ARG_RNG_AT")
    for (a, b), syms in sorted(calls.items()):
        if a not in RNG_READERS and "clg_rng_get_state" in syms:
            bad.append(f"src/{a}/ calls clg_rng_get_state: ops get the generator's position only through "
                       "CLG_ARG_RNG_DRAW / CLG_ARG_RNG_AT")
    return bad


def include_graph():
    """{(from, to): headers}: a file in folder `from` includes a header that lies in `to`."""
    headers, edges = {}, defaultdict(set)
    for dirpath, _, files in os.walk(SRC):
        for f in files:
            if f.endswith((".h", ".def")):
                headers.setdefault(f, os.path.relpath(dirpath, SRC).split(os.sep)[0])
    for dirpath, _, files in os.walk(SRC):
        folder = os.path.relpath(dirpath, SRC).split(os.sep)[0]
        for f in files:
            if not f.endswith((".c", ".h", ".def")):
                continue
            with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                for m in re.finditer(r'^\s*#\s*include\s+"([^"]+)"', fh.read(), re.M):
                    h = os.path.basename(m.group(1))
                    if h in headers and headers[h] != folder:
                        edges[(folder, headers[h])].add(h)
    return edges


def cycles(edges):
    """Pairs of folders that reach each other (each pair once)."""
    graph = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)

    def reach(a):
        seen, todo = set(), [a]
        while todo:
            for n in graph[todo.pop()] - seen:
                seen.add(n)
                todo.append(n)
        return seen

    r = {a: reach(a) for a in list(graph)}
    return sorted({tuple(sorted((a, b))) for a in r for b in r[a] if a != b and a in r.get(b, ())})


def show(title, edges, limit):
    print(title)
    for (a, b), what in sorted(edges.items()):
        names = sorted(what)
        more = f" (+{len(names) - limit})" if len(names) > limit else ""
        print(f"  {a:9} -> {b:9} {len(names):4}: {' '.join(names[:limit])}{more}")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit(__doc__)
    calls, incs = call_graph(args[0]), include_graph()
    show("calls (folder -> folder defining the function, count: functions):", calls, 6)
    show("includes (folder -> folder holding the header):", incs, 6)
    bad = [("calls", c) for c in cycles(calls)] + [("includes", c) for c in cycles(incs)]
    for kind, (a, b) in bad:
        print(f"cycle in the {kind}: {a} and {b} depend on each other")
    if not bad:
        print("no cycle between folders")
    hooks = capture_hooks(calls)
    for folder, hook in hooks:
        print(f"capture hook outside src/device/: {folder} calls {hook} (fold it into the runtime call it belongs to: runtime.h, device_impl.h)")
    private = private_includes()
    for f, what in private:
        print(f"src/{f} {what}: private to src/device/ (the layers above see runtime.h and device_impl.h) or to its "
              "OpenCL implementation, src/device/opencl/ (the rest of src/device/ goes through backend.h)")
    rng = generator_positions(calls)
    for what in rng:
        print(what)
    if not rng:
        print("generator positions reach kernels only through CLG_ARG_RNG arguments")
    return 1 if (bad or hooks or private or rng) and "--check" in sys.argv else 0


if __name__ == "__main__":
    sys.exit(main())
