"""The scaling model of bench/RESULTS.md "Data-parallel training": step time and
efficiency of data-parallel training at N ranks over a network, from measured compute
times and the ring all-reduce's traffic. Usage: python3 bench/dist_model.py

Per step and rank, weak scaling (every rank keeps its batch):
  S       gradient bytes (float32)
  T_c     the measured compute time of one step on one device
  T_ar    ring all-reduce: 2 (N - 1) / N * S / bandwidth + 2 (N - 1) * latency
  T_copy  the gradients device -> host arena -> device (clgrad reduces in host memory):
          measured on POCL, PCIe 4 x16 at 25 GB/s each way on a GPU
  hidden  backward (2/3 of T_c) hides every bucket but the last (1 MiB buckets; a model
          whose largest layer fills the first bucket hides nothing)
  step    T_c + max(T_ar + T_copy - hidden, exposed part of the last bucket)
  efficiency = T_c / step
"""

MB = 1e6

# Parameter counts (bench/bench_dist.c lists the layers).
MODELS = {
    "MLP": {"params": 535_818, "first_bucket_share": 1.0},   # one layer (784x512) is 75%: one bucket
    "CNN": {"params": 215_370, "first_bucket_share": 1.0},   # 0.86 MB: one bucket
    "ResNet-18": {"params": 11_689_512, "first_bucket_share": 1.0 / 12},   # 12 buckets of about 1 MiB..4 MiB
}

# Measured compute time of one training step of one replica, seconds.
#   POCL: `clgrad train MODEL --steps 150`, 2-core AMD EPYC, batch 128 (this session);
#         ResNet-18 from the CNN's achieved rate (18.1 MFLOP per image for training at
#         2,900 images/s: 52 GFLOP/s) and 5.5 GFLOP per 224x224 image, batch 32.
#   H100: bench/RESULTS.md "NVIDIA H100 ... After lazy zero_grad", medians, batch 128;
#         ResNet-18 from clgrad's measured GEMM rate there (20 TFLOP/s at 4096^3), batch 32.
COMPUTE = {
    "POCL (2-core EPYC)": {"MLP": 128 / 28_000, "CNN": 128 / 2_900, "ResNet-18": 32 * 5.5e9 / 52e9},
    "H100 (NVIDIA OpenCL)": {"MLP": 128 / 276_400, "CNN": 128 / 143_700, "ResNet-18": 32 * 5.5e9 / 20e12},
}
# Host staging per byte of gradients (both directions together), seconds per byte.
#   POCL: bench_dist, ResNet-18: exchange 37.0 ms median, of which MPI 12.5 ms, 46.8 MB.
COPY = {"POCL (2-core EPYC)": (37.0e-3 - 12.5e-3) / (46.76 * MB), "H100 (NVIDIA OpenCL)": 2 / 25e9}

NETWORKS = {"10 Gbit/s": (10e9 / 8, 25e-6), "100 Gbit/s": (100e9 / 8, 5e-6)}
RANKS = (2, 8, 64)


def step(device, model, n, net):
    bw, lat = NETWORKS[net]
    m = MODELS[model]
    s = 4 * m["params"]
    tc = COMPUTE[device][model]
    t_ar = 2 * (n - 1) / n * s / bw + 2 * (n - 1) * lat
    comm = t_ar + COPY[device] * s
    last = comm * m["first_bucket_share"]          # the bucket reduced after backward ends
    exposed = max(comm - 2 / 3 * tc, last)
    return tc, comm, tc + exposed


def main():
    for device in COMPUTE:
        print("\n%s" % device)
        print("| model | compute ms | network | " + " | ".join("N=%d step ms (eff.)" % n for n in RANKS) + " |")
        print("| --- | ---: | --- | " + " | ".join("---:" for _ in RANKS) + " |")
        for model in MODELS:
            for net in NETWORKS:
                cells = []
                for n in RANKS:
                    tc, comm, total = step(device, model, n, net)
                    cells.append("%.2f (%.0f%%)" % (1e3 * total, 100 * tc / total))
                print("| %s | %.2f | %s | %s |" % (model, 1e3 * COMPUTE[device][model], net, " | ".join(cells)))


if __name__ == "__main__":
    main()
