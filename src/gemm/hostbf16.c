/* hostbf16.c: bfloat16 products on the host CPU's dot-product instructions (issue 32:
 * "16-bit on CPUs that have it"), as commands of the device's queue (native.c), where
 * the device runs host functions (POCL on a CPU) and the device table's host_bf16 is on
 * (its default where the CPU has AVX512-BF16). The kernel is bf16dot.c; this file is the
 * engine: a `first` one, tried before the device's own for every bfloat16 product of
 * 2^20 multiply-adds or more (mixed-bf16 training's), which then reads and writes
 * bfloat16 in place, with no float32 copies (widen.c) around a float32 product. Smaller
 * products stay on the device's engine (the packed kernels' one-launch path), as the
 * host's BLAS leaves them (host.c).
 *
 * Products split over the host engine's threads (team.c) by C's rows in multiples of 8
 * or its columns in multiples of 32 (the kernel's micro-tiles), through host.c's split
 * helpers (engine.h). Before its first product on a device the engine is validated there: products of
 * small integers (exact in any order of sums) through the queue must equal the host's.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/bf16dot.h"
#include "gemm/engine.h"
#include "gemm/team.h"
#include "half.h"

extern const clg_gemm_engine clg__gemm_hostbf16_engine;

/* Below this many multiply-adds the device's engine keeps the product (host.c's bound). */
#define MIN_MACS ((size_t)1 << 20)

/* Arguments, in order: flags (ta | tb << 1 | c_f32 << 2), m, n, k, batch, alpha, beta,
 * (buffer, offset, ld, batch stride) of A, B and C, parts, and the packing's scratch: a
 * buffer of parts x per_part bytes (allocated with the command, not while it runs). */
enum { A_FLAGS, A_M, A_N, A_K, A_BATCH, A_ALPHA, A_BETA, A_A, A_AOFF, A_LDA, A_SA, A_B, A_BOFF, A_LDB, A_SB, A_C,
       A_COFF, A_LDC, A_SC, A_PARTS, A_SCRATCH, A_PER_PART, A_COUNT };

static int64_t L(const clg_arg *a, int i) { return a[i].v.i64; }

/* Part `part` of `parts`: C's rows (by_rows) or columns [lo, hi) of every batch entry. */
typedef struct split {
    const clg_arg *a;
    bool by_rows;
} split;

static void product_part(void *arg, int part, int parts)
{
    const split *sp = arg;
    const clg_arg *a = sp->a;
    int flags = a[A_FLAGS].v.i32;
    bool ta = flags & 1, tb = flags & 2, c_f32 = flags & 4;
    int64_t lda = L(a, A_LDA), ldb = L(a, A_LDB), ldc = L(a, A_LDC);
    clg_gemm_part pt;
    if (!clg__gemm_part(L(a, A_M), L(a, A_N), ta, tb, lda, ldb, ldc, sp->by_rows,
                        sp->by_rows ? CLG_BF16DOT_MR : CLG_BF16DOT_NR, part, parts, &pt))
        return;
    size_t cs = c_f32 ? sizeof(float) : sizeof(uint16_t), per = (size_t)L(a, A_PER_PART);
    for (int64_t b = 0; b < L(a, A_BATCH); b++) {
        clg_bf16dot p = {
            .ta = ta, .tb = tb, .c_f32 = c_f32, .m = pt.m, .n = pt.n, .k = L(a, A_K),
            .alpha = (float)a[A_ALPHA].v.f64, .beta = (float)a[A_BETA].v.f64,
            .a = (const uint16_t *)clg__native_ptr(&a[A_A]) + L(a, A_AOFF) + b * L(a, A_SA) + pt.da, .lda = lda,
            .b = (const uint16_t *)clg__native_ptr(&a[A_B]) + L(a, A_BOFF) + b * L(a, A_SB) + pt.db, .ldb = ldb,
            .c = (char *)clg__native_ptr(&a[A_C]) + (size_t)(L(a, A_COFF) + b * L(a, A_SC) + pt.dc) * cs, .ldc = ldc,
        };
        /* false only without the instructions (ready() validated them) or with scratch
         * smaller than clg__bf16dot_scratch, which run() sized: neither happens here */
        (void)clg__bf16dot_product(&p, (char *)clg__native_ptr(&a[A_SCRATCH]) + (size_t)part * per, per);
    }
}

/* By rows where B's packing is the smaller to repeat in every part: both packings run in
 * vectors (bf16dot.c), so no weight for a transposed operand (host.c weighs OpenBLAS's
 * strided reads twice). */
static bool by_rows(int64_t m, int64_t n) { return clg__gemm_split_rows(m, n, 1, 1); }

static void hostbf16(const clg_arg *a, int nargs)
{
    if (nargs != A_COUNT) return;
    split sp = {a, by_rows(L(a, A_M), L(a, A_N))};
    clg__team_run(product_part, &sp, a[A_PARTS].v.i32);
}

static clg_status run(clg_device *dev, const clg_gemm_args *g, const clg_gemm_config *cfg)
{
    (void)cfg;
    clg_kernel *k = clg__native_kernel(dev, "gemm_hostbf16", hostbf16);
    if (!k) return dev->status;
    bool rows = by_rows((int64_t)g->m, (int64_t)g->n);
    int parts = clg__gemm_split_parts(dev, g, rows, rows ? CLG_BF16DOT_MR : CLG_BF16DOT_NR);
    size_t per = clg__bf16dot_scratch((int64_t)g->n, (int64_t)g->k);   /* either split's part: at most n columns */
    clg_buffer *scratch = clg__buffer_alloc(dev, per * (size_t)parts);
    if (!scratch) return dev->status;
    clg_arg a[A_COUNT] = {
        [A_FLAGS] = CLG_ARG_I(g->trans_a | g->trans_b << 1 | g->c_f32 << 2), [A_M] = CLG_ARG_L(g->m),
        [A_N] = CLG_ARG_L(g->n), [A_K] = CLG_ARG_L(g->k), [A_BATCH] = CLG_ARG_L(g->batch),
        [A_ALPHA] = CLG_ARG_D(g->alpha), [A_BETA] = CLG_ARG_D(g->beta),
        [A_A] = CLG_ARG_B(g->a), [A_AOFF] = CLG_ARG_L(g->a_off), [A_LDA] = CLG_ARG_L(g->lda),
        [A_SA] = CLG_ARG_L(g->stride_a), [A_B] = CLG_ARG_B(g->b), [A_BOFF] = CLG_ARG_L(g->b_off),
        [A_LDB] = CLG_ARG_L(g->ldb), [A_SB] = CLG_ARG_L(g->stride_b), [A_C] = CLG_ARG_B(g->c),
        [A_COFF] = CLG_ARG_L(g->c_off), [A_LDC] = CLG_ARG_L(g->ldc), [A_SC] = CLG_ARG_L(g->stride_c),
        [A_PARTS] = CLG_ARG_I(parts), [A_SCRATCH] = CLG_ARG_B(scratch), [A_PER_PART] = CLG_ARG_L(per),
    };
    clg_status st = clg__launch_native(dev, k, a, A_COUNT);
    clg__buffer_release(scratch);   /* the in-order queue runs whoever gets it next after this command */
    return st;
}

/* ---- validation before first use -------------------------------------------------------- */

/* One product of small integers through the queue, against the host's sums: m x k by
 * k x n with k odd (the last pair half zero), partial micro-tiles along both sides, a
 * float32 C or a bfloat16 one (integers up to 256 are exact there). */
static clg_status check_product(clg_device *dev, bool ta, bool tb, bool c_f32, bool *same)
{
    enum { M = 21, N = 45, K = 37 };
    uint16_t ha[M * K], hb[K * N], got16[M * N];
    float want[M * N], got[M * N];
    for (int i = 0; i < M * K; i++) ha[i] = clg__half_from_double(CLG_BF16, (double)((i * 7 + 3) % 9 - 4));
    for (int i = 0; i < K * N; i++) hb[i] = clg__half_from_double(CLG_BF16, (double)((i * 5 + 1) % 7 - 3));
    for (int r = 0; r < M; r++)
        for (int col = 0; col < N; col++) {
            double s = 0;
            for (int x = 0; x < K; x++)
                s += clg__half_to_double(CLG_BF16, ha[ta ? x * M + r : r * K + x]) *
                     clg__half_to_double(CLG_BF16, hb[tb ? col * K + x : x * N + col]);
            want[r * N + col] = (float)s;
        }
    size_t cbytes = c_f32 ? sizeof got : sizeof got16;
    clg_buffer *a = clg__buffer_alloc(dev, sizeof ha), *b = a ? clg__buffer_alloc(dev, sizeof hb) : NULL;
    clg_buffer *cb = b ? clg__buffer_alloc(dev, cbytes) : NULL;
    clg_status st = cb ? CLG_OK : dev->status;
    clg_gemm_args g = {
        .type = CLG_GEMM_BF16, .trans_a = ta, .trans_b = tb, .m = M, .n = N, .k = K, .batch = 1, .alpha = 1.0,
        .a = a, .b = b, .c = cb, .lda = ta ? M : K, .ldb = tb ? K : N, .ldc = N, .c_f32 = c_f32,
    };
    if (!st) st = clg__write(dev, a, 0, ha, sizeof ha);
    if (!st) st = clg__write(dev, b, 0, hb, sizeof hb);
    if (!st) st = run(dev, &g, NULL);
    if (!st) st = clg__read(dev, cb, 0, c_f32 ? (void *)got : (void *)got16, cbytes);
    if (!st && !c_f32)
        for (int i = 0; i < M * N; i++) got[i] = (float)clg__half_to_double(CLG_BF16, got16[i]);
    *same = !st && !memcmp(want, got, sizeof got);
    clg__buffer_release(a);
    clg__buffer_release(b);
    clg__buffer_release(cb);
    return st;
}

typedef struct check_ref { clg_device *dev; bool *same; } check_ref;

static clg_status check_all(void *data)
{
    check_ref *r = data;
    clg_status st = check_product(r->dev, false, true, true, r->same);
    if (!st && *r->same) st = check_product(r->dev, true, false, false, r->same);
    return st;
}

/* 1 validated, -1 refused (logged), per device. */
static int validate(clg_device *dev)
{
    clg_saved_error saved = clg__error_save(dev);
    bool same = false;
    clg_status st = clg__uncaptured(dev, check_all, &(check_ref){dev, &same});   /* not part of a recorded step */
    int ready = !st && same ? 1 : -1;
    if (ready < 0)
        clg__log(dev, 1, "GEMM on %s: bfloat16 products on the CPU's dot-product instructions (host_bf16) refused: %s",
                 clg_device_get_info(dev)->name, st ? dev->error : "their results differ from the host's");
    else
        clg__log(dev, 2, "GEMM on %s: bfloat16 products on the CPU's dot-product instructions (host_bf16)",
                 clg_device_get_info(dev)->name);
    clg__error_restore(dev, &saved);
    clg__error_drop(&saved);
    return ready;
}

/* The table says on (it says so only where the CPU has the instructions and the device
 * runs host functions: params.c), and the validation passed. */
static bool ready(clg_device *dev, clg_gemm_type type)
{
    if (type != CLG_GEMM_BF16 || !clg__device_params(dev)->host_bf16 || !clg__bf16dot_cpu()) return false;
    int *r = clg__gemm_engine_data(dev, &clg__gemm_hostbf16_engine, sizeof(int), NULL);
    if (r && !*r) *r = validate(dev);
    return r && *r > 0;
}

/* bfloat16 products with sizes within int (the kernel indexes in 64 bits; the bound
 * keeps the multiply-add count from overflowing). */
static bool takes(clg_device *dev, const clg_gemm_args *g)
{
    size_t lim = INT_MAX;
    return g->type == CLG_GEMM_BF16 && g->m <= lim && g->n <= lim && g->k <= lim && g->batch <= lim &&
           g->lda <= lim && g->ldb <= lim && g->ldc <= lim && ready(dev, g->type);
}

/* Unless asked for by name: products under 2^20 multiply-adds stay on the device's engine. */
static bool leaves(clg_device *dev, const clg_gemm_args *g)
{
    (void)dev;
    size_t macs;
    return !__builtin_mul_overflow(g->m, g->n, &macs) && !__builtin_mul_overflow(macs, g->k, &macs) &&
           macs < MIN_MACS;
}

static clg_status refuse(clg_device *dev, const clg_gemm_args *g)
{
    return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                     "clg__gemm (hostbf16, m=%zu n=%zu k=%zu): the CPU's bfloat16 dot products do not take it on %s "
                     "(bfloat16 products only; device table host_bf16 = %s; AVX512-BF16 %s)",
                     g->m, g->n, g->k, clg_device_get_info(dev)->name, clg__device_params(dev)->host_bf16 ? "on" : "off",
                     clg__bf16dot_cpu() ? "present" : "absent");
}

const clg_gemm_engine clg__gemm_hostbf16_engine = {
    .name = "hostbf16",
    .first = true,
    .stores16 = true,
    .ready = ready,
    .takes = takes,
    .leaves = leaves,
    .run = run,
    .refuse = refuse,
};
