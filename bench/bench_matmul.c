/* bench_matmul: clgrad's GEMM (clg__gemm, float32) against NumPy's BLAS on the same
 * shapes in the same run: 1024^3 and the products of an MLP training step
 * (784-512-256-10, batch 128: forward x.W^T, backward dX = dY.W and dW = dY^T.X).
 * NumPy runs in a subprocess (bench/matmul_numpy.py) with 2 BLAS threads and OpenBLAS's
 * best core for the CPU's flags (bench/refblas.py); the table's header names the BLAS and
 * core that ran, and no ratio is printed against the reference BLAS. Then the first-call cost of each GEMM program, in fresh processes:
 * cold (empty clgrad and POCL caches) and warm (both filled).
 *
 *   ./build/bench/bench_matmul [--repeats N] [--stream N] [--engine E[,E...]] [--tiled CONFIG]... [--clblast]
 *                              [--no-numpy] [--no-compile] [--no-1024] [--shape "m n k ta tb"]...
 *                              [--type f32|f16|bf16]
 * --engine: the engines timed, one column each: auto (what clg__gemm uses on the device:
 * the parameter table's engine, or the tuner's choice), packed, tiled (the device's tiled
 * configuration), clblast, host (the host's CBLAS on the queue), mma (matrix units: 16-bit
 * types only): the names of the engine table (src/gemm/engines.c); default auto. --type f16
 * or bf16: A, B and C in 16 bits (float32 sums), no NumPy column. --tiled adds a column for the tiled kernel in
 * one configuration ("64x64x16/4x4/v4/m0", see src/gemm/tiled.h). --clblast is --engine auto,clblast
 * (on a CPU CLBlast's GEMM takes ~20 s to compile). --shape replaces the default shapes;
 * --no-1024 leaves out 1024^3 (slow devices: llvmpipe).
 * --stream N times N products enqueued back to back and waited for once (a training
 * step's way), where the default waits for each (NumPy's calls return done): the
 * difference is the queue's round trip and a helper thread's wake-up per call.
 * NumPy's column compares with the first engine. Environment: CLG_BENCH_PYTHON (the
 * interpreter with NumPy, default /usr/bin/python3); CLG_PROFILE=1 adds the per-kernel
 * device times (packing apart from the tiles).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "device_impl.h"
#include "gemm/engine.h"
#include "gemm/tune.h"

typedef struct shape {
    size_t m, n, k;
    int ta, tb;
    const char *what;
} shape;

static const shape default_shapes[] = {
    {1024, 1024, 1024, 0, 0, "square 1024^3"},
    {256, 256, 256, 0, 0, "square 256^3"},
    {128, 512, 784, 0, 1, "fc1 fwd  x.W1^T"},
    {128, 784, 512, 0, 0, "fc1 bwd  dX = dY.W1"},
    {512, 784, 128, 1, 0, "fc1 bwd  dW1 = dY^T.X"},
    {128, 256, 512, 0, 1, "fc2 fwd  h.W2^T"},
    {128, 512, 256, 0, 0, "fc2 bwd  dH = dY.W2"},
    {256, 512, 128, 1, 0, "fc2 bwd  dW2 = dY^T.H"},
    {128, 10, 256, 0, 1, "fc3 fwd  h.W3^T"},
    {10, 256, 128, 1, 0, "fc3 bwd  dW3 = dY^T.H"},
};

/* The element type timed (--type). */
static clg_gemm_type g_type = CLG_GEMM_F32;

#define MAX_SHAPES 32
#define MAX_ENGINES 12

/* A column: an engine, and for the tiled one maybe a configuration of its own. */
typedef struct column {
    const clg_gemm_engine *engine;   /* NULL: auto */
    bool has_cfg;
    clg_gemm_config cfg;
    char label[96];
} column;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct stats { double min, med, max; } stats;

static stats summarize(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    stats s = {v[0], n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v[n - 1]};
    return s;
}

/* A device buffer of n random floats (or doubles). */
static clg_buffer *random_buffer(clg_device *dev, size_t n, bool f64)
{
    bool half = !f64 && clg__gemm_type_is_half(g_type);
    size_t es = f64 ? sizeof(double) : half ? 2 : sizeof(float);
    clg_buffer *b = clg__buffer_alloc(dev, n * es);
    void *h = malloc(n * es);
    if (!b || !h) {
        free(h);
        clg__buffer_release(b);
        return NULL;
    }
    unsigned s = 7;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        double v = (double)(s >> 8) / (double)(1u << 24) - 0.5;
        if (f64) ((double *)h)[i] = v;
        else if (half) ((uint16_t *)h)[i] = g_type == CLG_GEMM_F16 ? clg_f32_to_f16((float)v) : clg_f32_to_bf16((float)v);
        else ((float *)h)[i] = (float)v;
    }
    clg_status st = clg__write(dev, b, 0, h, n * es);
    free(h);
    if (st) {
        clg__buffer_release(b);
        return NULL;
    }
    return b;
}

/* One product C = op(A).op(B) of shape s on column e, enqueued. */
static clg_status gemm_once(clg_device *dev, const column *e, bool f64, const shape *s, clg_buffer *a,
                            clg_buffer *b, clg_buffer *c)
{
    clg_gemm_args g = {
        .type = f64 ? CLG_GEMM_F64 : g_type, .trans_a = s->ta, .trans_b = s->tb, .m = s->m, .n = s->n,
        .k = s->k, .batch = 1, .alpha = 1.0, .beta = 0.0, .a = a, .b = b, .c = c, .lda = s->ta ? s->m : s->k,
        .ldb = s->tb ? s->k : s->n, .ldc = s->n,
    };
    return clg__gemm_run(dev, e->engine, e->has_cfg ? &e->cfg : NULL, &g);
}

/* Products per timing (--stream N): 1, each waited for (as NumPy's calls return), or N
 * enqueued back to back and waited for once, as a training step runs them: the queue's
 * round trip and a helper's wake-up per call, or not. */
static int g_stream = 1;

/* GFLOP/s of `repeats` timed products (each waited for), after one untimed warm-up. */
static int time_engine(clg_device *dev, const column *e, const shape *s, int repeats, stats *out)
{
    clg_buffer *a = random_buffer(dev, s->m * s->k, false), *b = random_buffer(dev, s->k * s->n, false);
    clg_buffer *c = clg__buffer_alloc(dev, s->m * s->n * (clg__gemm_type_is_half(g_type) ? 2 : sizeof(float)));
    double *rate = calloc((size_t)repeats, sizeof *rate);
    clg_status st = a && b && c && rate ? gemm_once(dev, e, false, s, a, b, c) : CLG_ERR_OUT_OF_MEMORY;
    if (!st) st = clg_device_finish(dev);
    for (int r = 0; r < repeats && !st; r++) {
        double t0 = now();
        for (int i = 0; i < g_stream && !st; i++) st = gemm_once(dev, e, false, s, a, b, c);
        if (!st) st = clg_device_finish(dev);
        rate[r] = 2.0 * (double)s->m * (double)s->n * (double)s->k * g_stream / (now() - t0) / 1e9;
    }
    if (!st) *out = summarize(rate, repeats);
    else fprintf(stderr, "bench_matmul: %s\n", clg_device_error(dev));
    free(rate);
    clg__buffer_release(a);
    clg__buffer_release(b);
    clg__buffer_release(c);
    return st ? -1 : 0;
}

/* NumPy's rates for every shape, from one subprocess. */
static int numpy_rates(const shape *shapes, int n, int repeats, stats *out, char *blas, size_t blaslen)
{
    char script[1024];
    snprintf(script, sizeof script, "%s", __FILE__);
    char *slash = strrchr(script, '/');
    snprintf(slash ? slash + 1 : script, sizeof script - (size_t)(slash ? slash + 1 - script : 0),
             "matmul_numpy.py");
    const char *py = getenv("CLG_BENCH_PYTHON");
    if (!py) py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    char cmd[8192];
    int len = snprintf(cmd, sizeof cmd, "%s '%s' %d", py, script, repeats);
    for (int i = 0; i < n && len < (int)sizeof cmd - 64; i++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " '%zu %zu %zu %d %d'", shapes[i].m, shapes[i].n,
                        shapes[i].k, shapes[i].ta, shapes[i].tb);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[512];
    int got = 0;
    while (fgets(line, sizeof line, p)) {
        stats s;
        if (got < n && sscanf(line, "%*u %*u %*u %*d %*d %lf %lf %lf", &s.min, &s.med, &s.max) == 3)
            out[got++] = s;
        else if (!strncmp(line, "blas ", 5))
            snprintf(blas, blaslen, "%.*s", (int)strcspn(line + 5, "\n"), line + 5);
    }
    return pclose(p) == 0 && got == n ? 0 : -1;
}

/* ---- first-call (compile) cost, in child processes ------------------------------------ */

/* Child: open the device, time the first product (compile or cache load, then run) and
 * print the seconds. */
static int first_call_child(const char *engine, const char *type)
{
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) return fprintf(stderr, "%s\n", clg_device_error(dev)), 1;
    column e = {.engine = clg__gemm_engine_find(engine)};
    bool f64 = !strcmp(type, "f64");
    shape s = {128, 512, 784, 0, 1, ""};
    clg_buffer *a = random_buffer(dev, s.m * s.k, f64), *b = random_buffer(dev, s.k * s.n, f64);
    clg_buffer *c = clg__buffer_alloc(dev, s.m * s.n * (f64 ? 8 : 4));
    clg_status st = a && b && c ? clg_device_finish(dev) : CLG_ERR_OUT_OF_MEMORY;
    double t0 = now();
    if (!st) st = gemm_once(dev, &e, f64, &s, a, b, c);
    if (!st) st = clg_device_finish(dev);
    double first = now() - t0;
    t0 = now();
    if (!st) st = gemm_once(dev, &e, f64, &s, a, b, c);
    if (!st) st = clg_device_finish(dev);
    double second = now() - t0;
    if (!st) printf("%.6f %.6f\n", first, second);
    else fprintf(stderr, "bench_matmul: %s\n", clg_device_error(dev));
    clg__buffer_release(a);
    clg__buffer_release(b);
    clg__buffer_release(c);
    clg_device_close(dev);
    return st ? 1 : 0;
}

/* Seconds of the first call minus a steady-state call, in a child with these caches. */
static double first_call(const char *engine, const char *type, const char *clg_cache, const char *pocl_cache)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "CLG_CACHE_DIR='%s' POCL_CACHE_DIR='%s' /proc/%ld/exe --first-call %s %s",
             clg_cache, pocl_cache, (long)getpid(), engine, type);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    double first = -1, second = 0;
    if (fscanf(p, "%lf %lf", &first, &second) != 2) first = -1;
    if (pclose(p) != 0) return -1;
    return first < 0 ? -1 : first - second;
}

static void compile_table(bool with_clblast, bool with_tiled, bool fp64)
{
    char base[] = "/tmp/clgrad-bench-mm-XXXXXX";
    if (!mkdtemp(base)) return;
    printf("\nfirst call of each GEMM program (128x512x784, A.B^T), compile or cache load, seconds\n");
    printf("  %-34s %10s %10s\n", "program", "cold", "warm");
    struct { const char *engine, *type, *label; } v[] = {
        {"packed", "f32", "gemm.cl float (-DT=float)"},
        {"packed", "f64", "gemm.cl double (-DT=double)"},
        {"tiled", "f32", "gemm_tiled.cl float"},
        {"clblast", "f32", "CLBlast Sgemm"},
    };
    for (int i = 0; i < 4; i++) {
        if ((!with_clblast && !strcmp(v[i].engine, "clblast")) || (!with_tiled && !strcmp(v[i].engine, "tiled")) ||
            (!fp64 && !strcmp(v[i].type, "f64")))
            continue;
        char clg[1200], pocl[1200];
        snprintf(clg, sizeof clg, "%s/%d-clg", base, i);
        snprintf(pocl, sizeof pocl, "%s/%d-pocl", base, i);
        double cold = first_call(v[i].engine, v[i].type, clg, pocl);
        double warm = first_call(v[i].engine, v[i].type, clg, pocl);
        printf("  %-34s %10.3f %10.3f\n", v[i].label, cold, warm);
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
}

/* ---- main ------------------------------------------------------------------------------ */

static int parse_engine(const char *name, column *out)
{
    /* "auto", or an engine of the table (clg__gemm_engine_find) */
    const clg_gemm_engine *e = clg__gemm_engine_find(name);
    if (!e && strcmp(name, "auto")) return -1;
    *out = (column){.engine = e};
    snprintf(out->label, sizeof out->label, "%s", name);
    return 0;
}

static int usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [--repeats N] [--stream N] [--engine auto|packed|tiled|clblast|host|mma[,...]] [--tiled CONFIG]... "
            "[--clblast] [--no-numpy] [--no-compile] [--no-1024] [--shape \"m n k ta tb\"]... [--type f32|f16|bf16]\n", argv0);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--first-call")) return first_call_child(argv[2], argv[3]);
    int repeats = 10;
    bool with_numpy = true, with_compile = true, no_1024 = false;
    shape shapes[MAX_SHAPES];
    column cols[MAX_ENGINES];
    int nshapes = 0, ncols = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--stream") && i + 1 < argc) g_stream = atoi(argv[++i]) > 1 ? atoi(argv[i]) : 1;
        else if (!strcmp(argv[i], "--clblast")) {
            if (!ncols) parse_engine("auto", &cols[ncols++]);
            if (ncols < MAX_ENGINES) parse_engine("clblast", &cols[ncols++]);
        } else if (!strcmp(argv[i], "--engine") && i + 1 < argc) {
            char list[256];
            snprintf(list, sizeof list, "%s", argv[++i]);
            for (char *save = NULL, *e = strtok_r(list, ",", &save); e; e = strtok_r(NULL, ",", &save))
                if (ncols >= MAX_ENGINES || parse_engine(e, &cols[ncols++]))
                    return fprintf(stderr, "bench_matmul: unknown engine \"%s\"\n", e), 2;
        } else if (!strcmp(argv[i], "--tiled") && i + 1 < argc && ncols < MAX_ENGINES) {
            column *c = &cols[ncols++];
            *c = (column){.engine = clg__gemm_engine_find("tiled"), .has_cfg = true};
            if (!c->engine->parse(argv[++i], &c->cfg))
                return fprintf(stderr, "bench_matmul: --tiled wants a configuration like 64x64x16/4x4/v4/m0\n"), 2;
            snprintf(c->label, sizeof c->label, "tiled %s", argv[i]);
        } else if (!strcmp(argv[i], "--no-numpy")) with_numpy = false;
        else if (!strcmp(argv[i], "--no-compile")) with_compile = false;
        else if (!strcmp(argv[i], "--no-1024")) no_1024 = true;
        else if (!strcmp(argv[i], "--type") && i + 1 < argc) {
            const char *t = argv[++i];
            if (!strcmp(t, "f32")) g_type = CLG_GEMM_F32;
            else if (!strcmp(t, "f16")) g_type = CLG_GEMM_F16;
            else if (!strcmp(t, "bf16")) g_type = CLG_GEMM_BF16;
            else return fprintf(stderr, "bench_matmul: --type wants f32, f16 or bf16\n"), 2;
        }
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc && nshapes < MAX_SHAPES) {
            shape s = {0, 0, 0, 0, 0, "custom"};
            if (sscanf(argv[++i], "%zu %zu %zu %d %d", &s.m, &s.n, &s.k, &s.ta, &s.tb) != 5 || !s.m || !s.n || !s.k)
                return fprintf(stderr, "bench_matmul: --shape wants \"m n k ta tb\"\n"), 2;
            shapes[nshapes++] = s;
        } else {
            return usage(argv[0]);
        }
    }
    if (repeats < 1) repeats = 1;
    if (clg__gemm_type_is_half(g_type)) with_numpy = false;   /* NumPy has no 16-bit BLAS */
    if (!ncols) parse_engine("auto", &cols[ncols++]);
    bool defaults = nshapes == 0;
    for (size_t i = 0; defaults && i < sizeof default_shapes / sizeof default_shapes[0]; i++)
        if (!no_1024 || default_shapes[i].m < 1024) shapes[nshapes++] = default_shapes[i];
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) {
        fprintf(stderr, "bench_matmul: %s\n", clg_device_error(dev));
        clg_device_close(dev);
        return 1;
    }
    const clg_device_info *in = clg_device_get_info(dev);
    double tuned_rate = 0;
    const char *choice = clg__gemm_choice(dev, &tuned_rate); /* tunes here, if the table says so */
    char choice_text[128];
    snprintf(choice_text, sizeof choice_text, "%s", choice);
    for (int c = 0; c < ncols; c++) {
        if (cols[c].engine && cols[c].engine->config_for && !cols[c].has_cfg) {
            clg_gemm_config t;
            char cfg[64] = "(none fits)";
            if (cols[c].engine->config_for(dev, CLG_GEMM_F32, &t)) cols[c].engine->describe(&t, cfg, sizeof cfg);
            snprintf(cols[c].label, sizeof cols[c].label, "%s %s", cols[c].engine->name, cfg);
        } else if (!cols[c].engine) {
            snprintf(cols[c].label, sizeof cols[c].label, "auto: %.40s", choice_text);
        }
    }
    stats np[MAX_SHAPES] = {{0, 0, 0}};
    char blas[256] = "?";
    bool have_np = with_numpy && numpy_rates(shapes, nshapes, repeats, np, blas, sizeof blas) == 0;
    if (with_numpy && !have_np) fprintf(stderr, "bench_matmul: NumPy run failed (CLG_BENCH_PYTHON?)\n");
    /* A ratio against the reference BLAS (about 4 GFLOP/s) would flatter us 50-fold. */
    bool np_ratio = have_np && !strstr(blas, "reference");
    if (have_np && !np_ratio)
        fprintf(stderr, "bench_matmul: NumPy runs %s, not OpenBLAS: no ratios (install libopenblas0-pthread)\n", blas);
    printf("%s GEMM, GFLOP/s (min / median / max of %d%s); clgrad's choice on this device: %s",
           g_type == CLG_GEMM_F16 ? "float16 (float32 sums)" : g_type == CLG_GEMM_BF16 ? "bfloat16 (float32 sums)" : "float32",
           repeats, g_stream > 1 ? "; clgrad's timings each of products enqueued back to back, waited for once" : "",
           choice_text);
    if (g_stream > 1) printf(" (%d a timing)", g_stream);
    if (clg__gemm_type_is_half(g_type))
        printf("; matrix units (mma = %s): %s", clg__device_params(dev)->mma == CLG_MMA_PTX ? "ptx"
                                                : clg__device_params(dev)->mma == CLG_MMA_EMULATE ? "emulate" : "none",
               clg__gemm_engine_find("mma")->ready(dev, g_type) ? "validated" : "not used");
    if (g_type == CLG_GEMM_BF16)   /* a first engine too: the auto column's products of 2^20 multiply-adds and up */
        printf("; the CPU's bfloat16 dot products (host_bf16 = %s): %s", clg__device_params(dev)->host_bf16 ? "on" : "off",
               clg__gemm_engine_find("hostbf16")->ready(dev, g_type) ? "validated, from 2^20 multiply-adds" : "not used");
    if (tuned_rate > 0) printf(" (tuned: %.3g GFLOP/s)", tuned_rate);
    if (with_numpy) printf("; NumPy (%s, 2 threads)", blas);
    printf("\ndevice: %s | %s | driver %s | %u compute units\n\n", in->name, in->platform, in->driver,
           in->compute_units);
    printf("| %-24s | %-16s |", "product", "m x n x k");
    for (int c = 0; c < ncols; c++) printf(" %-24s |", cols[c].label);
    if (with_numpy) printf(" %-24s | %-7s |", "numpy", "ratio");
    printf("\n| --- | --- |");
    for (int c = 0; c < ncols; c++) printf(" ---: |");
    if (with_numpy) printf(" ---: | ---: |");
    printf("\n");
    int failed = 0;
    for (int i = 0; i < nshapes; i++) {
        const shape *s = &shapes[i];
        char dims[64];
        snprintf(dims, sizeof dims, "%zux%zux%zu%s%s", s->m, s->n, s->k, s->ta ? " A^T" : "", s->tb ? " B^T" : "");
        printf("| %-24s | %-16s |", s->what, dims);
        fflush(stdout);
        double first_med = 0;
        char ratio[32];
        for (int c = 0; c < ncols; c++) {
            stats r = {0, 0, 0};
            if (time_engine(dev, &cols[c], s, repeats, &r)) failed = 1;
            if (c == 0) first_med = r.med;
            printf(" %6.3g / %6.3g / %6.3g |", r.min, r.med, r.max);
            fflush(stdout);
        }
        if (with_numpy)
            printf(" %6.1f / %6.1f / %6.1f | %7s |", np[i].min, np[i].med, np[i].max,
                   np_ratio && np[i].med > 0 ? (snprintf(ratio, sizeof ratio, "%.2f", first_med / np[i].med), ratio)
                                             : "-");
        printf("\n");
        fflush(stdout);
    }
    /* Where the device's choice was tuned, auto runs each product on its shape class's
     * (tuned on the class's first product: the untimed warm-up above) */
    if (clg__gemm_choice_origin(dev) >= 2 && g_type == CLG_GEMM_F32) {
        printf("\nauto, per shape class (tuned on a class's first product, or read from the tuning cache):\n");
        for (int i = 0; i < nshapes; i++) {
            const shape *s = &shapes[i];
            clg_gemm_args g = {.type = CLG_GEMM_F32, .trans_a = s->ta, .trans_b = s->tb, .m = s->m, .n = s->n,
                               .k = s->k, .batch = 1};
            char key[24];
            double rate = 0;
            bool cached = false;
            clg__gemm_class_key(&g, key, sizeof key);
            const char *name = clg__gemm_class_choice(dev, &g, &rate, &cached);
            printf("  %-24s class %-13s %s (%.3g GFLOP/s at the class's shape%s)\n", s->what, key, name, rate,
                   cached ? ", cached" : "");
        }
    }
    bool fp64 = in->fp64, with_clblast = false, with_tiled = false;
    for (int c = 0; c < ncols; c++) {
        with_clblast |= cols[c].engine == clg__gemm_engine_find("clblast");
        with_tiled |= cols[c].engine == clg__gemm_engine_find("tiled");
    }
    if (clg_device_profiling(dev)) clg_device_profile_print(dev, stdout); /* CLG_PROFILE=1 */
    clg_device_close(dev);
    if (with_compile) compile_table(with_clblast, with_tiled, fp64);
    return failed;
}
