/* host.c: the host's BLAS as a GEMM engine ("host"), for devices that run host
 * functions as commands of their queue (native.c; POCL on a CPU, whose buffers are host
 * memory). cblas_sgemm / cblas_dgemm run on the buffers in queue order, one call per
 * batch entry, like a kernel: nothing waits. The engine a CPU's BLAS library took years
 * to tune (OpenBLAS: per-core kernels, cache blocking, its own threads) then serves
 * every product, where the packed kernels reach a fraction of it.
 *
 * The library is found at run time (no build dependency): libopenblas.so.0, else
 * libblas.so.3 (Debian's alternative: OpenBLAS, BLIS or the reference), with
 * cblas_sgemm and cblas_dgemm. Like every engine, the tuner (tune.c) times it
 * and validates its results against a host reference before it is chosen. 16-bit
 * operands run on float32 copies (widen.c: on the 2-core AVX-512 Xeon the MLP's
 * --precision mixed trained at 21-23k images/s against 9-10k on the packed kernels,
 * mixed-bf16 23-25k against 19-21k); small products, convolutions' sums and row offsets
 * stay on the packed kernels (gemm.c).
 *
 * The library runs one thread (openblas_set_num_threads(1) where the engine loads it) and the
 * engine splits each product over its own threads instead (team.c says why): the rows
 * of C or its columns (split_rows), in parts of whole 16-row (column) blocks.
 * Each element of C is the same call's sum as without the split: the same bits.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/engine.h"
#include "gemm/team.h"

/* CBLAS's enums and the two functions, as the CBLAS interface fixes them. */
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                         float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *, int, double,
                         double *, int);

static struct {
    pthread_once_t once;
    sgemm_fn sgemm;
    dgemm_fn dgemm;
    char name[64];
    bool split;  /* the library runs one thread: the engine splits products (team.c) */
    bool weak;   /* OpenBLAS runs kernels older than the CPU's vectors (below) */
} blas = {.once = PTHREAD_ONCE_INIT};

/* OpenBLAS's kernels for this CPU by its vector instructions (bench/refblas.py picks the
 * references' the same way), or NULL: OpenBLAS's own detection. */
static const char *core_for_cpu(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
    return NULL;
}

/* The cores OpenBLAS falls back to for CPUs it does not know (SSE2/SSE3 kernels). */
static bool old_core(const char *core)
{
    static const char *const old[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom",
                                      "Katmai", "Coppermine", "Northwood", "Banias", "Athlon", "Opteron",
                                      "Opteron_SSE3", "Barcelona", "Nano", "Bobcat"};
    for (size_t i = 0; i < sizeof old / sizeof *old; i++)
        if (core && !strcmp(core, old[i])) return true;
    return false;
}

static void load(void)
{
    static const char *const libs[] = {"libopenblas.so.0", "libblas.so.3"};
    /* Two settings OpenBLAS reads when it is loaded, each set here for the load unless
     * the user set it or the library is loaded already, and taken out of the environment
     * again after it (the processes the program starts, a NumPy say, get the user's):
     * - OPENBLAS_THREAD_TIMEOUT: its threads spin for 2^28 cycles (~0.1 s) after each
     *   call before they sleep, on the cores the device's threads need for the kernels
     *   after the product: the tiny GPT trained at 25k tokens/s with the spin and 29k
     *   with 2^4 cycles (2-core AVX-512 Xeon, bench/RESULTS.md, session 31).
     * - OPENBLAS_CORETYPE: OpenBLAS 0.3.21 takes CPUs newer than it for old ones (that
     *   Xeon, model 207, as "Prescott", SSE3): the MLP trained at 10k images/s on those
     *   kernels against 34k on SkylakeX's. Where the library was loaded before with such
     *   a core, the engine is not ready (the packed kernels run instead).
     * Then, where the engine loaded it and the user did not set OPENBLAS_NUM_THREADS,
     * the library runs one thread (openblas_set_num_threads) and the engine splits the
     * products over its own (team.c). (The environment variable instead reached the
     * processes started after: bench_matmul's NumPy ran on one thread.) A program that
     * calls the same library itself then gets one thread too, unless it set
     * OPENBLAS_NUM_THREADS or loaded the library first.
     * This runs once, at the first product's choice of engine: glibc does not guard a
     * setenv against another thread's getenv, so a program with threads that read the
     * environment then sets both variables itself before it starts them. */
    const char *want = core_for_cpu();
    bool user_core = getenv("OPENBLAS_CORETYPE") != NULL, user_threads = getenv("OPENBLAS_NUM_THREADS") != NULL;
    bool set_timeout = false, set_core = false;
    void *loaded = dlopen(libs[0], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (loaded) dlclose(loaded);
    else {
        set_timeout = !getenv("OPENBLAS_THREAD_TIMEOUT") && setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1) == 0;
        set_core = want && !user_core && setenv("OPENBLAS_CORETYPE", want, 1) == 0;
    }
    for (size_t i = 0; i < sizeof libs / sizeof *libs && !blas.sgemm; i++) {
        void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) continue;
        sgemm_fn s = (sgemm_fn)(uintptr_t)dlsym(h, "cblas_sgemm");
        dgemm_fn d = (dgemm_fn)(uintptr_t)dlsym(h, "cblas_dgemm");
        if (!s || !d) {
            dlclose(h);
            continue;
        }
        blas.sgemm = s;   /* the library stays open for the process's life */
        blas.dgemm = d;
        typedef char *(*core_fn)(void);
        core_fn corename = (core_fn)(uintptr_t)dlsym(h, "openblas_get_corename");
        const char *core = corename ? corename() : NULL;
        blas.weak = want && !user_core && old_core(core);
        typedef int (*get_fn)(void);
        typedef void (*set_fn)(int);
        get_fn get_threads = (get_fn)(uintptr_t)dlsym(h, "openblas_get_num_threads");
        set_fn set_threads = (set_fn)(uintptr_t)dlsym(h, "openblas_set_num_threads");
        if (!loaded && !user_threads && get_threads && set_threads) set_threads(1);
        blas.split = get_threads && get_threads() == 1;
        if (core) snprintf(blas.name, sizeof blas.name, "%s (%s)", libs[i], core);
        else snprintf(blas.name, sizeof blas.name, "%s", libs[i]);
    }
    if (set_timeout) unsetenv("OPENBLAS_THREAD_TIMEOUT");
    if (set_core) unsetenv("OPENBLAS_CORETYPE");
}

/* The library found ("libopenblas.so.0"), or NULL. */
static const char *library(void)
{
    pthread_once(&blas.once, load);
    return blas.sgemm ? blas.name : NULL;
}

/* A library on kernels for the CPU's vectors, and a device that runs host functions as
 * commands; float32 and float64, and 16-bit operands widened to float32 (the dispatcher
 * does that for engines that do not store 16-bit values). */
static bool ready(clg_device *dev, clg_gemm_type type)
{
    return (type == CLG_GEMM_F32 || type == CLG_GEMM_F64 || clg__gemm_type_is_half(type)) && library() &&
           !blas.weak && clg__native_supported(dev);
}

/* Sizes within CBLAS's int (a capture records the command like a launch). */
static bool takes(clg_device *dev, const clg_gemm_args *g)
{
    (void)dev;
    return (g->type == CLG_GEMM_F32 || g->type == CLG_GEMM_F64 || clg__gemm_type_is_half(g->type)) &&
           g->m <= INT_MAX && g->n <= INT_MAX && g->k <= INT_MAX && g->lda <= INT_MAX && g->ldb <= INT_MAX &&
           g->ldc <= INT_MAX;
}

/* Below this many multiply-adds (each of a batch's products) a product costs the library
 * more in its call and its threads' wake-up than it computes: as the device's engine, it
 * leaves them to the packed kernels (their one-launch path for small products). On the
 * 2-core AVX-512 Xeon, GFLOP/s medians packed / host: 128x10x256 14.3 / 7.2, 128x64x128
 * 28 / 27, 128x128x128 29 / 57, 128x256x256 54 / 79 (bench_matmul, session 31). */
#define HOST_MIN_MACS ((size_t)1 << 20)

static bool leaves(clg_device *dev, const clg_gemm_args *g)
{
    (void)dev;
    size_t macs;
    if (__builtin_mul_overflow(g->m, g->n, &macs) || __builtin_mul_overflow(macs, g->k, &macs)) return false;
    return macs < HOST_MIN_MACS;
}

/* Arguments, in order: type, trans_a, trans_b, m, n, k, batch, alpha, beta, then
 * (buffer, offset, ld, batch stride) for A, B and C, then the parts to split it in. */
enum { A_TYPE, A_TA, A_TB, A_M, A_N, A_K, A_BATCH, A_ALPHA, A_BETA, A_A, A_AOFF, A_LDA, A_SA, A_B, A_BOFF, A_LDB,
       A_SB, A_C, A_COFF, A_LDC, A_SC, A_PARTS, A_RELU, A_COUNT };

/* Whether a product splits by C's rows (else its columns). Each part packs the whole of
 * the operand the split does not cut (B by rows, A by columns), so the split duplicates the
 * cheaper packing: the smaller of B's n and A's m columns' worth, a transposed operand
 * (packed from strided reads) counted twice. bench_matmul, host engine, medians of 7 in
 * 3 alternating rounds, GFLOP/s by rows / by columns: 512x784x128 A^T 143-178 / 126-130,
 * 256x512x128 A^T 93-140 / 75-77, 384x512x2048 A^T 178-182 / 161-167; 128x512x784 B^T
 * by columns 167-173 / 162-167 by rows. */
static bool split_rows(int64_t m, int64_t n, bool ta, bool tb)
{
    return clg__gemm_split_rows(m, n, ta ? 2 : 1, tb ? 2 : 1);
}

bool clg__gemm_split_rows(int64_t m, int64_t n, int64_t wa, int64_t wb) { return n * wb <= m * wa; }

bool clg__gemm_part(int64_t m, int64_t n, bool ta, bool tb, int64_t lda, int64_t ldb, int64_t ldc, bool by_rows,
                    int64_t unit, int part, int parts, clg_gemm_part *out)
{
    int64_t full = by_rows ? m : n, blocks = (full + unit - 1) / unit;
    int64_t lo = blocks * part / parts * unit, hi = blocks * (part + 1) / parts * unit;
    if (hi > full) hi = full;
    if (lo >= hi) return false;
    /* rows lo.. of C: A's rows (columns of a transposed A); columns: B's columns */
    *out = (clg_gemm_part){
        .m = by_rows ? hi - lo : m, .n = by_rows ? n : hi - lo, .da = by_rows ? (ta ? lo : lo * lda) : 0,
        .db = by_rows ? 0 : (tb ? lo * ldb : lo), .dc = by_rows ? lo * ldc : lo,
    };
    return true;
}

/* C = relu(C) over an m x n block (ldc), as relu.cl computes it (NaN and -0 kept), while
 * the part's results are still in its core's cache. */
static void relu_f32(float *c, int64_t m, int64_t n, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++, c += ldc)
        for (int64_t j = 0; j < n; j++) c[j] = c[j] < 0 ? 0.0f : c[j];
}

static void relu_f64(double *c, int64_t m, int64_t n, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++, c += ldc)
        for (int64_t j = 0; j < n; j++) c[j] = c[j] < 0 ? 0.0 : c[j];
}

/* A product split over the engine's threads: by C's rows, or by its columns. */
typedef struct split {
    const clg_arg *a;
    bool by_rows;
} split;

/* Part `part` of `parts`: the product's rows (columns) [lo, hi) of C, from A's rows (B's
 * columns) of the same range, in every batch entry. */
static void gemm_part(void *arg, int part, int parts)
{
    const split *sp = arg;
    const clg_arg *a = sp->a;
    bool ta = a[A_TA].v.i32, tb = a[A_TB].v.i32;
    int64_t k = a[A_K].v.i64, lda = a[A_LDA].v.i64, ldb = a[A_LDB].v.i64, ldc = a[A_LDC].v.i64;
    clg_gemm_part pt;
    if (!clg__gemm_part(a[A_M].v.i64, a[A_N].v.i64, ta, tb, lda, ldb, ldc, sp->by_rows, 16, part, parts, &pt)) return;
    int64_t mm = pt.m, nn = pt.n;
    int cta = ta ? TRANS : NO_TRANS, ctb = tb ? TRANS : NO_TRANS;
    for (int64_t b = 0; b < a[A_BATCH].v.i64; b++) {
        int64_t oa = a[A_AOFF].v.i64 + b * a[A_SA].v.i64 + pt.da, ob = a[A_BOFF].v.i64 + b * a[A_SB].v.i64 + pt.db;
        int64_t oc = a[A_COFF].v.i64 + b * a[A_SC].v.i64 + pt.dc;
        if (a[A_TYPE].v.i32 == CLG_GEMM_F64) {
            double *c = (double *)clg__native_ptr(&a[A_C]) + oc;
            blas.dgemm(ROW_MAJOR, cta, ctb, (int)mm, (int)nn, (int)k, a[A_ALPHA].v.f64,
                       (const double *)clg__native_ptr(&a[A_A]) + oa, (int)lda,
                       (const double *)clg__native_ptr(&a[A_B]) + ob, (int)ldb, a[A_BETA].v.f64, c, (int)ldc);
            if (a[A_RELU].v.i32) relu_f64(c, mm, nn, ldc);
        } else {
            float *c = (float *)clg__native_ptr(&a[A_C]) + oc;
            blas.sgemm(ROW_MAJOR, cta, ctb, (int)mm, (int)nn, (int)k, (float)a[A_ALPHA].v.f64,
                       (const float *)clg__native_ptr(&a[A_A]) + oa, (int)lda,
                       (const float *)clg__native_ptr(&a[A_B]) + ob, (int)ldb, (float)a[A_BETA].v.f64, c, (int)ldc);
            if (a[A_RELU].v.i32) relu_f32(c, mm, nn, ldc);
        }
    }
}

/* Products of fewer multiply-adds per part than this run whole: a part's time (~85 us at
 * ~100 GFLOP/s a core) above a sleeping helper's wake-up (40-80 us on the 2-core EPYC).
 * With 2^20, products of 2-8 million multiply-adds (128^3 .. 200^3) ran at the same speed
 * or slower split than whole (bench_matmul, three alternating rounds). */
#define PART_MIN_MACS ((size_t)1 << 22)

int clg__gemm_split_parts(clg_device *dev, const clg_gemm_args *g, bool by_rows, int64_t unit)
{
    /* no more parts than the device has compute units: POCL runs as many threads, and a
     * machine whose CPUs outnumber what the process may use (a container's quota) gives
     * its device fewer */
    uint32_t cu = clg_device_get_info(dev)->compute_units;
    size_t full = by_rows ? g->m : g->n, macs, parts = (size_t)clg__team_size();
    if (__builtin_mul_overflow(g->m, g->n, &macs) || __builtin_mul_overflow(macs, g->k, &macs) ||
        __builtin_mul_overflow(macs, g->batch, &macs))
        macs = SIZE_MAX;
    if (cu > 0 && parts > cu) parts = cu;
    if (parts > (full + (size_t)unit - 1) / (size_t)unit) parts = (full + (size_t)unit - 1) / (size_t)unit;
    if (parts > macs / PART_MIN_MACS) parts = macs / PART_MIN_MACS;
    return parts < 1 ? 1 : (int)parts;
}

int clg__gemm_host_parts(clg_device *dev, const clg_gemm_args *g)
{
    if (!library() || !blas.split) return 1;
    return clg__gemm_split_parts(dev, g, split_rows((int64_t)g->m, (int64_t)g->n, g->trans_a, g->trans_b), 16);
}

static void gemm_host(const clg_arg *a, int nargs)
{
    if (nargs != A_COUNT) return;
    split sp = {a, split_rows(a[A_M].v.i64, a[A_N].v.i64, a[A_TA].v.i32, a[A_TB].v.i32)};
    clg__team_run(gemm_part, &sp, a[A_PARTS].v.i32);
}

static clg_status run(clg_device *dev, const clg_gemm_args *g, const clg_gemm_config *cfg)
{
    (void)cfg;
    if (!library())
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm (host): no CBLAS library found "
                                                        "(libopenblas.so.0 or libblas.so.3 with cblas_sgemm)");
    clg_kernel *k = clg__native_kernel(dev, "gemm_host", gemm_host);
    if (!k) return dev->status;
    clg_arg a[A_COUNT] = {
        [A_TYPE] = CLG_ARG_I(g->type), [A_TA] = CLG_ARG_I(g->trans_a), [A_TB] = CLG_ARG_I(g->trans_b),
        [A_M] = CLG_ARG_L(g->m), [A_N] = CLG_ARG_L(g->n), [A_K] = CLG_ARG_L(g->k), [A_BATCH] = CLG_ARG_L(g->batch),
        [A_ALPHA] = CLG_ARG_D(g->alpha), [A_BETA] = CLG_ARG_D(g->beta),
        [A_A] = CLG_ARG_B(g->a), [A_AOFF] = CLG_ARG_L(g->a_off), [A_LDA] = CLG_ARG_L(g->lda),
        [A_SA] = CLG_ARG_L(g->stride_a), [A_B] = CLG_ARG_B(g->b), [A_BOFF] = CLG_ARG_L(g->b_off),
        [A_LDB] = CLG_ARG_L(g->ldb), [A_SB] = CLG_ARG_L(g->stride_b), [A_C] = CLG_ARG_B(g->c),
        [A_COFF] = CLG_ARG_L(g->c_off), [A_LDC] = CLG_ARG_L(g->ldc), [A_SC] = CLG_ARG_L(g->stride_c),
        [A_PARTS] = CLG_ARG_I(clg__gemm_host_parts(dev, g)), [A_RELU] = CLG_ARG_I(g->relu),
    };
    return clg__launch_native(dev, k, a, A_COUNT);
}

/* A candidate of the tuner where it can run. */
static int candidates(clg_device *dev, int flags, bool fitting, clg_gemm_config *out, int cap)
{
    (void)flags, (void)fitting, (void)out;
    return ready(dev, CLG_GEMM_F32) && cap > 0;
}

static void version(char *buf, size_t len) { snprintf(buf, len, "%s", library() ? library() : "none"); }

const clg_gemm_engine clg__gemm_host_engine = {
    .name = "host",
    .instead = "packed",   /* small products, sizes past CBLAS's int; sums and row offsets */
    .relu = true,          /* after each part's call, on its block of C */
    .ready = ready,
    .takes = takes,
    .leaves = leaves,
    .run = run,
    .candidates = candidates,
    .version = version,
};
