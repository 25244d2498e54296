/* clgrad conformance: every op, forward and backward, and every optimizer's step,
 * against plain-C references on the host, on every OpenCL device there is (or the one
 * --device / CLG_DEVICE names): one table per device, with the GEMM engine and its
 * rate. Exit status 1 when any case fails on any device.
 *
 * The cases and their references are in conformance_ops.c, conformance_copies.c,
 * conformance_nn.c and conformance_rnn.c, the checking in conformance_check.c
 * (conformance_cases.h says how a case is made).
 * Hidden self-check: --inject-fault OP perturbs OP's reference, so its rows must fail
 * (tests/cli: cli_conformance_fault). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "conformance_cases.h"
/* The GEMM engine a device uses is internal (src/gemm/gemm.h; the tool links the
 * static library, tools/CMakeLists.txt). */

#define CMD "conformance"
#define MAX_DEVICES 64

typedef struct options {
    cf_options cf;
    const char *spec;
    const char *only;
    bool bench;
    bool list;
} options;

static int usage(void)
{
    printf("Usage: clgrad conformance [--device SPEC] [--dtype f32|f64] [--size small|normal] [--verbose]\n"
           "                          [--long N] [--only TEXT] [--no-bench]\n"
           "       clgrad conformance --list\n"
           "Runs every op forward and backward, and every optimizer's step, against plain-C\n"
           "references computed in double on the host, on every OpenCL device (or the one\n"
           "--device SPEC / $CLG_DEVICE names), and prints one table per device: each case's\n"
           "largest forward and backward error, max |device - reference| / (1 + |reference|),\n"
           "pass or fail; then the counts, the largest errors, the device, and the GEMM engine\n"
           "with its rate at 256^3 float32. A first row checks that every differentiable op\n"
           "(src/tensor/ops.def) has a case.\n"
           "Backward: the gradient of sum(w * output) (w random) from clg_backward against\n"
           "central differences of the host reference.\n"
           "  --dtype f32|f64     tensors' type on the device (default f32; f64 falls back to f32\n"
           "                      on a device without fp64). Tolerances: f32 1e-5 forward, 1e-4\n"
           "                      backward; f64 1e-12, 1e-7 (times 4 for long sums and norms)\n"
           "  --size small|normal small shapes (default, fast), contiguous inputs; or shapes spanning\n"
           "                      many work-groups, with inputs also sliced (every other element)\n"
           "                      and transposed (rows: the worst of the three layouts)\n"
           "  --long N            the long-axis cases' length (default 70001): scans, sorts,\n"
           "                      index lists and sums past what one work-item may loop over\n"
           "                      (products' inner size 3N/7, index repeats 2N/7)\n"
           "  --only TEXT         only the cases whose name contains TEXT\n"
           "  --no-bench          skip the GEMM timing\n"
           "  --verbose           the worst element of every case, and times\n"
           "  --list              print the cases' names, one a line, and open no device (an\n"
           "                      op's cases are named by it: tests/conformance_coverage.c)\n"
           "Exit status 0 when every case passes on every device, 1 otherwise.\n");
    return 0;
}

/* The case tables, in report order. */
static const struct { const cf_case *cases; const int *count; } tables[] = {
    {cf_ops_cases, &cf_ops_count}, {cf_copies_cases, &cf_copies_count}, {cf_nn_cases, &cf_nn_count},
    {cf_rnn_cases, &cf_rnn_count}};
#define NTABLES ((int)(sizeof tables / sizeof *tables))

/* Every differentiable op, from the library's list. */
static const char *const differentiable[] = {
#define X(name) #name,
#include "ops.def"
#undef X
};

static bool known_op(const char *op)
{
    char name[64];
    for (int t = 0; t < NTABLES; t++) {
        const cf_case *cs = tables[t].cases;
        for (int i = 0; i < *tables[t].count; i++) {
            cf_op_name(&cs[i], name, sizeof name);
            if (!strcmp(name, op)) return true;
        }
    }
    return false;
}

static int parse(int argc, char **argv, options *o)
{
    static const struct option longs[] = {
        {"device", required_argument, 0, 'd'}, {"dtype", required_argument, 0, 't'},
        {"size", required_argument, 0, 's'},   {"verbose", no_argument, 0, 'v'},
        {"only", required_argument, 0, 'o'},   {"no-bench", no_argument, 0, 'B'},
        {"long", required_argument, 0, 'L'},   {"list", no_argument, 0, 'l'},
        {"inject-fault", required_argument, 0, 'F'},   /* hidden: the self-check */
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    *o = (options){.cf = {.dtype = CLG_F32}, .spec = getenv("CLG_DEVICE"), .bench = true};
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, ":d:vh", longs, NULL)) != -1;) {
        switch (c) {
        case 'd': o->spec = optarg; break;
        case 't':
            if (strcmp(optarg, "f32") && strcmp(optarg, "f64")) return cli_usage_error(CMD, "--dtype takes f32 or f64");
            o->cf.dtype = strcmp(optarg, "f64") ? CLG_F32 : CLG_F64;
            break;
        case 's':
            if (strcmp(optarg, "small") && strcmp(optarg, "normal"))
                return cli_usage_error(CMD, "--size takes small or normal");
            o->cf.big = o->cf.layouts = !strcmp(optarg, "normal");
            break;
        case 'v': o->cf.verbose = true; break;
        case 'L': {
            char *end;
            long long v = strtoll(optarg, &end, 10);
            if (*end || end == optarg || v < 64 || v > 10000000)
                return cli_usage_error(CMD, "--long takes a length from 64 to 10000000");
            o->cf.long_n = v;
            break;
        }
        case 'o': o->only = optarg; break;
        case 'B': o->bench = false; break;
        case 'l': o->list = true; break;
        case 'F':
            if (!known_op(optarg)) return cli_usage_error(CMD, "--inject-fault: no case of that op");
            o->cf.inject = optarg;
            break;
        case 'h': return -1;
        default: return cli_bad_option(CMD, c, argv);
        }
    }
    if (optind != argc) return cli_usage_error(CMD, "no arguments besides options");
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- GEMM --------------------------------------------------------------------------------------- */

/* The engine the device's matmuls use, and where that choice came from (the parameter
 * table's "tune" chooses by timing on first use, or reads an earlier choice from disk). */
static void gemm_engine(clg_device *dev, char *buf, size_t len)
{
    static const char *const origins[] = {"not chosen", "set by the device parameter table",
                                          "tuned in this run", "tuned earlier, from the tuning cache"};
    double tuned = 0;
    int origin = 0;
    const char *choice = clg_matmul_engine(dev, &tuned, &origin);
    int n = snprintf(buf, len, "%s (%s", choice, origin >= 0 && origin < 4 ? origins[origin] : "?");
    if (tuned > 0 && n > 0 && (size_t)n < len) n += snprintf(buf + n, len - (size_t)n, ", the tuner measured %.3g GFLOP/s", tuned);
    if (n > 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, ")");
    clg_device_clear_error(dev);
}

/* GFLOP/s of float32 [n, n] x [n, n] matmuls (median of up to 5 timed after a warm-up);
 * n is 256 unless the device is too slow for it (a simulator), then 64. 0 on failure. */
static double gemm_rate(clg_device *dev, int *size)
{
    double rate = 0, times[5];
    int runs = 0;
    clg_scope_begin(dev);
    clg_no_grad_begin(dev);
    for (int n = 64; n <= 256; n *= 4) {
        clg_tensor *a = clg_rand(dev, CLG_F32, CLG_SHAPE(n, n), -1, 1), *b = clg_rand(dev, CLG_F32, CLG_SHAPE(n, n), -1, 1);
        if (!clg_matmul(a, b) || clg_device_finish(dev) != CLG_OK) break;   /* warm-up: builds, tunes */
        runs = 0;
        double budget = n == 64 ? 0.5 : 2.0, start = now();
        while (runs < 5 && (runs == 0 || now() - start < budget)) {
            double t = now();
            if (!clg_matmul(a, b) || clg_device_finish(dev) != CLG_OK) break;
            times[runs++] = now() - t;
        }
        if (runs == 0) break;
        for (int i = 1; i < runs; i++)   /* insertion sort, for the median */
            for (int j = i; j > 0 && times[j] < times[j - 1]; j--) {
                double s = times[j];
                times[j] = times[j - 1], times[j - 1] = s;
            }
        rate = 2.0 * n * n * n / times[runs / 2] * 1e-9;
        *size = n;
        if (n == 64 && times[runs / 2] * 64 > 3.0) break;   /* 256^3 would take minutes */
    }
    clg_no_grad_end(dev);
    clg_scope_end(dev);
    clg_device_clear_error(dev);
    return rate;
}

/* ---- one device --------------------------------------------------------------------------------- */

typedef struct worst {
    double err, abs;
    char err_where[96], abs_where[96];
} worst;

static void track(worst *w, const char *name, const char *dir, double err, double abs)
{
    if (err > w->err) {
        w->err = err;
        snprintf(w->err_where, sizeof w->err_where, "%.60s, %s", name, dir);
    }
    if (abs > w->abs) {
        w->abs = abs;
        snprintf(w->abs_where, sizeof w->abs_where, "%.60s, %s", name, dir);
    }
}

static bool selected(const options *o, const cf_case *c)
{
    char op[64];
    cf_op_name(c, op, sizeof op);
    if (o->only) return strstr(c->name, o->only) != NULL;
    return !o->cf.inject || !strcmp(op, o->cf.inject);   /* the self-check: the faulty op alone */
}

/* Returns the number of failed cases (or -1 when the device would not open). */
static int run_device(const options *o, int index, const clg_device_info *info)
{
    char spec[16];
    snprintf(spec, sizeof spec, "%d", index);
    clg_device *dev;
    if (clg_device_open(spec, &dev) != CLG_OK) {
        printf("device %d: %s (%s): cannot open: %s\n\n", index, info->name, info->platform,
               dev ? clg_device_error(dev) : "out of host memory");
        clg_device_close(dev);
        return -1;
    }
    cf_options cf = o->cf;
    const char *fallback = "";
    if (cf.dtype == CLG_F64 && !info->fp64) {
        cf.dtype = CLG_F32;
        fallback = " (no fp64 on this device: float32)";
    }
    printf("device %d: %s (%s), %s%s, size %s, %s\n", index, info->name, info->platform, clg_dtype_name(cf.dtype),
           fallback, cf.big ? "normal" : "small",
           cf.layouts ? "inputs contiguous, sliced and transposed" : "contiguous inputs");
    printf("  %-50s %9s %9s  %s\n", "op", "forward", "backward", "result");
    double t0 = now();
    int passed = 0, failed = 0;
    if (!o->only && !o->cf.inject) {   /* the cases cover ops.def */
        char missing[512] = "";
        int n = (int)(sizeof differentiable / sizeof *differentiable), gaps = 0;
        for (int i = 0; i < n; i++)
            if (!known_op(differentiable[i]) && ++gaps)
                snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %s", differentiable[i]);
        char name[64];
        snprintf(name, sizeof name, "(every op of ops.def has a case: %d ops)", n);
        printf("  %-50s %9s %9s  %s\n", name, "-", "-", gaps ? "FAIL" : "pass");
        if (gaps) printf("      ^ no case for:%s\n", missing);
        passed += !gaps;
        failed += gaps > 0;
    }
    worst w = {0};
    double tol_f = 0, tol_b = 0;
    for (int t = 0; t < NTABLES; t++) {
        const cf_case *cs = tables[t].cases;
        for (int i = 0; i < *tables[t].count; i++) {
            const cf_case *c = &cs[i];
            if (!selected(o, c)) continue;
            cf_result r;
            cf_check(dev, c, &cf, &r);
            char fb[16] = "-", bb[16] = "-";
            if (r.ran_forward) snprintf(fb, sizeof fb, "%.1e", r.fwd_err);
            if (r.ran_backward) snprintf(bb, sizeof bb, "%.1e", r.bwd_err);
            printf("  %-50s %9s %9s  %s", c->name, fb, bb, r.pass ? "pass" : "FAIL");
            if (o->cf.verbose) printf("  %.3f s", r.seconds);
            printf("\n");
            if (!r.pass) printf("      ^ %s\n", r.note);
            fflush(stdout);
            passed += r.pass;
            failed += !r.pass;
            track(&w, c->name, "forward", r.fwd_err, r.fwd_abs);
            track(&w, c->name, "backward", r.bwd_err, r.bwd_abs);
            if (r.tol_fwd > 0 && (tol_f == 0 || r.tol_fwd < tol_f)) tol_f = r.tol_fwd, tol_b = r.tol_bwd;
        }
    }
    double seconds = now() - t0;
    clg_program_stats ps = clg_device_program_stats(dev);
    printf("  %s\n", "----");
    printf("  %d passed / %d failed\n", passed, failed);
    printf("  largest error: %.2e (%s) relative to 1 + |reference|; largest absolute: %.2e (%s)\n", w.err,
           w.err_where[0] ? w.err_where : "-", w.abs, w.abs_where[0] ? w.abs_where : "-");
    printf("  tolerances (%s): forward %.0e, backward %.0e (x4 for long sums and norms)\n", clg_dtype_name(cf.dtype),
           tol_f, tol_b);
    printf("  device: %s | platform %s | driver %s | %s\n", info->name, info->platform, info->driver, info->c_version);
    char engine[256];
    if (o->bench) {
        int n = 0;
        double rate = gemm_rate(dev, &n);
        gemm_engine(dev, engine, sizeof engine);
        if (rate > 0) printf("  GEMM: %s; %.3g GFLOP/s at %d^3 float32%s\n", engine, rate, n,
                             n < 256 ? " (the device is too slow for 256^3)" : "");
        else printf("  GEMM: %s; timing failed\n", engine);
    } else {
        gemm_engine(dev, engine, sizeof engine);
        printf("  GEMM: %s; not timed (--no-bench)\n", engine);
    }
    printf("  time: %.1f s for the cases, %.1f s of it building programs (%llu compiled, %llu from the cache)\n\n",
           seconds, ps.compile_seconds, (unsigned long long)ps.built_from_source, (unsigned long long)ps.loaded_from_cache);
    fflush(stdout);
    clg_device_close(dev);
    return failed;
}

int cmd_conformance(int argc, char **argv)
{
    options o;
    int rc = parse(argc, argv, &o);
    if (rc < 0) return usage();
    if (rc) return rc;
    if (o.list) {
        for (int t = 0; t < NTABLES; t++)
            for (int i = 0; i < *tables[t].count; i++) printf("%s\n", tables[t].cases[i].name);
        return 0;
    }

    clg_device_info infos[MAX_DEVICES];
    int n = 0;
    char err[4096];
    if (clg_device_list(infos, MAX_DEVICES, &n, err, sizeof err) != CLG_OK) return cli_fail(CMD, "%s", err);
    if (n > MAX_DEVICES) n = MAX_DEVICES;
    int first = 0, last = n - 1;
    if (o.spec && *o.spec) {
        if (clg_device_find(o.spec, infos, n, &first, err, sizeof err) != CLG_OK) return cli_fail(CMD, "%s", err);
        last = first;
    }
    int bad_devices = 0, total_failed = 0;
    for (int i = first; i <= last; i++) {
        int failed = run_device(&o, i, &infos[i]);
        bad_devices += failed != 0;
        total_failed += failed > 0 ? failed : 0;
    }
    int devices = last - first + 1;
    if (bad_devices)
        printf("conformance: FAILED on %d of %d device%s (%d failed case%s)\n", bad_devices, devices,
               devices > 1 ? "s" : "", total_failed, total_failed == 1 ? "" : "s");
    else
        printf("conformance: passed on %d device%s\n", devices, devices > 1 ? "s" : "");
    return bad_devices ? 1 : 0;
}
