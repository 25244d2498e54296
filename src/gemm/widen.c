/* gemm_widen.c: 16-bit GEMM on engines that compute only in float32 (the tiled kernels,
 * CLBlast). A and B are widened into compact float32 scratch (exactly: every float16
 * and bfloat16 is a float32), the product runs there, and each result is rounded once
 * into C: the same sums as the packed kernels, which convert while packing (gemm.cl).
 * The extra passes are O(mk + kn + mn) against the product's O(mnk). */
#include "gemm/gemm.h"

static const char *options(clg_gemm_type type)
{
    /* common.cl's 16-bit storage computed in float32: the options the elementwise ops
     * build with (tensor.c, clg__dtype_options_ew), so the program is shared with them. */
    return type == CLG_GEMM_BF16 ? "-DT=float -DCLG_BF16_STORE" : "-DT=float -DCLG_F16_STORE";
}

/* One operand: `batch` matrices of rows x cols (ld, stride) on the 16-bit side,
 * compact on the float32 side. */
typedef struct side {
    clg_buffer *half;
    size_t off, ld, stride, rows, cols, batch;
} side;

static clg_status convert(clg_device *dev, clg_kernel *k, bool widen, side s, clg_buffer *wide)
{
    clg_arg args[7];
    int n = 0;
    if (!widen) args[n++] = CLG_ARG_M(wide->mem);
    args[n++] = CLG_ARG_M(s.half->mem);
    args[n++] = CLG_ARG_L(s.off);
    args[n++] = CLG_ARG_L(s.ld);
    args[n++] = CLG_ARG_L(s.stride);
    if (widen) args[n++] = CLG_ARG_M(wide->mem);
    args[n++] = CLG_ARG_L(s.rows);
    args[n++] = CLG_ARG_L(s.cols);
    size_t global[3] = {s.cols, s.rows, s.batch};
    return clg__launch(dev, k, args, n, 3, global, NULL);
}

/* Scratch for s's matrices in float32; NULL (error recorded) when it cannot be had. */
static clg_buffer *scratch(clg_device *dev, side s)
{
    size_t n;
    if (__builtin_mul_overflow(s.rows, s.cols, &n) || __builtin_mul_overflow(n, s.batch, &n) ||
        __builtin_mul_overflow(n, sizeof(float), &n)) {
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg__gemm: float32 scratch for %zu x %zu x %zu overflows", s.rows,
                  s.cols, s.batch);
        return NULL;
    }
    return clg__buffer_alloc(dev, n);
}

clg_status clg__gemm_widened(clg_device *dev, clg_gemm_engine engine, const clg_gemm_tiled_config *tiled,
                             const clg_gemm_args *g)
{
    const char *opts = options(g->type);
    clg_kernel *kw = clg__kernel_get(dev, "gemm_widen", opts, "gemm_widen");
    clg_kernel *kn = kw ? clg__kernel_get(dev, "gemm_widen", opts, "gemm_narrow") : NULL;
    if (!kn) return dev->status;
    /* As stored: A is k x m when transposed, B n x k. A shared matrix (stride 0) once. */
    side a = {(clg_buffer *)g->a, g->a_off, g->lda, g->stride_a, g->trans_a ? g->k : g->m,
              g->trans_a ? g->m : g->k, g->stride_a ? g->batch : 1};
    side b = {(clg_buffer *)g->b, g->b_off, g->ldb, g->stride_b, g->trans_b ? g->n : g->k,
              g->trans_b ? g->k : g->n, g->stride_b ? g->batch : 1};
    side c = {g->c, g->c_off, g->ldc, g->stride_c, g->m, g->n, g->batch};
    /* A float32 C (c_f32) is written in place. */
    clg_buffer *wa = scratch(dev, a), *wb = wa ? scratch(dev, b) : NULL;
    clg_buffer *wc = wb && !g->c_f32 ? scratch(dev, c) : NULL;
    clg_status st = wb && (wc || g->c_f32) ? CLG_OK : dev->status;
    if (!st) st = convert(dev, kw, true, a, wa);
    if (!st) st = convert(dev, kw, true, b, wb);
    if (!st && g->beta != 0 && wc) st = convert(dev, kw, true, c, wc);
    if (!st) {
        clg_gemm_args w = *g;
        w.type = CLG_GEMM_F32;
        w.c_f32 = false;
        w.a = wa, w.a_off = 0, w.lda = a.cols, w.stride_a = g->stride_a ? a.rows * a.cols : 0;
        w.b = wb, w.b_off = 0, w.ldb = b.cols, w.stride_b = g->stride_b ? b.rows * b.cols : 0;
        if (wc) w.c = wc, w.c_off = 0, w.ldc = c.cols, w.stride_c = c.rows * c.cols;
        st = clg__gemm_run(dev, engine, tiled, &w);
    }
    if (!st && wc) st = convert(dev, kn, false, c, wc);
    /* The in-order queue runs whoever gets these buffers next after the kernels above. */
    clg__buffer_release(wa);
    clg__buffer_release(wb);
    clg__buffer_release(wc);
    return st;
}
