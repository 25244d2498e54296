/* clgrad devices: every OpenCL device, as a table; '*' marks the default device and
 * '>' the one CLG_DEVICE (or --device) picks when that differs. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <clgrad.h>

#include "commands.h"

#define MAX_DEVICES 64

static const char *type_name(clg_device_type t)
{
    return t == CLG_DEVICE_GPU ? "GPU" : t == CLG_DEVICE_CPU ? "CPU" : t == CLG_DEVICE_ACCELERATOR ? "ACC" : "other";
}

static const char *mib(uint64_t bytes, char *buf, size_t n)
{
    if (bytes >= (1ull << 30)) snprintf(buf, n, "%.1f GiB", bytes / (double)(1ull << 30));
    else if (bytes >= (1ull << 20)) snprintf(buf, n, "%.0f MiB", bytes / (double)(1ull << 20));
    else snprintf(buf, n, "%.0f KiB", bytes / 1024.0);
    return buf;
}

static int print_params(const char *spec)
{
    clg_device *dev;
    if (clg_device_open(spec, &dev) != CLG_OK) {
        fprintf(stderr, "clgrad devices: %s\n", clg_device_error(dev));
        clg_device_close(dev);
        return 1;
    }
    printf("\nparameters of %s (%s):\n", clg_device_get_info(dev)->name, clg_device_get_info(dev)->platform);
    clg_device_params_print(dev, stdout);
    clg_device_close(dev);
    return 0;
}

int cmd_devices(int argc, char **argv)
{
    static const struct option opts[] = {{"device", required_argument, 0, 'd'}, {"params", no_argument, 0, 'p'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *spec = getenv("CLG_DEVICE");
    bool params = false;
    int c;
    while ((c = getopt_long(argc, argv, "d:ph", opts, NULL)) != -1) {
        if (c == 'd') spec = optarg;
        else if (c == 'p') params = true;
        else if (c == 'h') {
            printf("Usage: clgrad devices [--device SPEC] [--params]\n"
                   "Lists every OpenCL platform and device. '*' marks the default (first GPU, else\n"
                   "first CPU); '>' marks the device SPEC (or $CLG_DEVICE) selects when it differs.\n"
                   "--params opens the selected device and prints its parameter table (GEMM engine,\n"
                   "work-group sizes, limits), after $CLG_PARAMS_FILE and $CLG_PARAMS overrides.\n");
            return 0;
        } else {
            fprintf(stderr, "clgrad devices: bad option (try --help)\n");
            return 2;
        }
    }
    clg_device_info infos[MAX_DEVICES];
    int n = 0;
    char err[4096];
    clg_status st = clg_device_list(infos, MAX_DEVICES, &n, err, sizeof err);
    if (st != CLG_OK) {
        fprintf(stderr, "clgrad devices: %s\n", err);
        return 1;
    }
    if (n > MAX_DEVICES) n = MAX_DEVICES;
    int def = clg_device_default(infos, n), sel = def;
    if (spec && *spec && clg_device_find(spec, infos, n, &sel, err, sizeof err) != CLG_OK) {
        fprintf(stderr, "clgrad devices: %s\n", err);
        return 1;
    }
    printf("   #  P:D  type  %-34s %4s %10s %10s %8s %6s %4s %4s\n", "device", "CUs", "memory",
           "max alloc", "local", "max WG", "fp64", "fp16");
    for (int i = 0; i < n; i++) {
        const clg_device_info *d = &infos[i];
        char a[32], b[32], l[32];
        printf(" %c%2d  %d:%d  %-5s %-34.34s %4u %10s %10s %8s %6zu %4s %4s\n",
               i == sel && sel != def ? '>' : i == def ? '*' : ' ', i, d->platform_index,
               d->device_index, type_name(d->type), d->name, d->compute_units,
               mib(d->global_mem, a, sizeof a), mib(d->max_alloc, b, sizeof b),
               mib(d->local_mem, l, sizeof l), d->max_work_group, d->fp64 ? "yes" : "no",
               d->fp16 ? "yes" : "no");
    }
    printf("\n");
    for (int i = 0; i < n; i++)
        printf("  %d: %s | vendor %s | %s | driver %s\n", i, infos[i].platform, infos[i].vendor,
               infos[i].c_version, infos[i].driver);
    printf("\n* default device%s. Choose another with CLG_DEVICE=gpu|cpu|N|P:D|name.\n",
           sel != def ? ", > selected by CLG_DEVICE/--device" : "");
    return params ? print_params(spec) : 0;
}

int cmd_selftest(int argc, char **argv)
{
    static const struct option opts[] = {{"device", required_argument, 0, 'd'}, {"size", required_argument, 0, 'n'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *spec = NULL;
    long n = 1 << 20;
    int c;
    while ((c = getopt_long(argc, argv, "d:n:h", opts, NULL)) != -1) {
        if (c == 'd') spec = optarg;
        else if (c == 'n') n = strtol(optarg, NULL, 10);
        else if (c == 'h') {
            printf("Usage: clgrad selftest [--device SPEC] [--size N]\n"
                   "Compiles (or loads from the cache) a small axpy kernel, runs it over N floats\n"
                   "(default 1048576) and checks every element against the host.\n");
            return 0;
        } else {
            fprintf(stderr, "clgrad selftest: bad option (try --help)\n");
            return 2;
        }
    }
    if (n <= 0) {
        fprintf(stderr, "clgrad selftest: --size must be a positive number\n");
        return 2;
    }
    clg_device *dev;
    clg_status st = clg_device_open(spec, &dev);
    if (st == CLG_OK) st = clg_device_selftest(dev, (size_t)n);
    if (st != CLG_OK) {
        fprintf(stderr, "clgrad selftest: %s\n", clg_device_error(dev));
        clg_device_close(dev);
        return 1;
    }
    clg_program_stats ps = clg_device_program_stats(dev);
    clg_transfer_stats ts = clg_device_transfers(dev);
    const char *cache = clg_device_cache_dir(dev);
    printf("selftest passed on %s (%s): axpy over %ld floats\n", clg_device_get_info(dev)->name,
           clg_device_get_info(dev)->platform, n);
    printf("  programs: %llu compiled, %llu from cache (%s), %.3f s\n",
           (unsigned long long)ps.built_from_source, (unsigned long long)ps.loaded_from_cache,
           cache ? cache : "cache off", ps.compile_seconds);
    printf("  transfers: %llu bytes to the device, %llu bytes back\n",
           (unsigned long long)ts.h2d_bytes, (unsigned long long)ts.d2h_bytes);
    if (clg_device_profiling(dev)) clg_device_profile_print(dev, stdout);
    clg_device_close(dev);
    return 0;
}
