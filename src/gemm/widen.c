/* widen.c: 16-bit GEMM on engines that compute only in float32 (the tiled kernels,
 * CLBlast). A and B are widened into compact float32 scratch (exactly: every float16
 * and bfloat16 is a float32), the product runs there, and each result is rounded once
 * into C: the same sums as the packed kernels, which convert while packing (gemm.cl).
 * The extra passes are O(mk + kn + mn) against the product's O(mnk). The dispatcher
 * runs the product between clg__gemm_widen and clg__gemm_narrow (this file calls no
 * engine). */
#include "gemm/widen.h"

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
    if (!widen) args[n++] = CLG_ARG_B(wide);
    args[n++] = CLG_ARG_B(s.half);
    args[n++] = CLG_ARG_L(s.off);
    args[n++] = CLG_ARG_L(s.ld);
    args[n++] = CLG_ARG_L(s.stride);
    if (widen) args[n++] = CLG_ARG_B(wide);
    args[n++] = CLG_ARG_L(s.rows);
    args[n++] = CLG_ARG_L(s.cols);
    /* exact groups from the device table, not the driver's pick: POCL compiles the kernel
     * anew for every group shape, and its pick follows the matrix's sides (68 shapes of
     * gemm_widen in test_gemm) */
    return clg__launch_rows3(dev, k, args, n, s.cols, s.rows, s.batch);
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

clg_status clg__gemm_widen(clg_device *dev, const clg_gemm_args *g, clg_gemm_widened *w)
{
    *w = (clg_gemm_widened){0};
    const char *opts = options(g->type);
    clg_kernel *kw = clg__kernel_get(dev, "gemm_widen", opts, "gemm_widen");
    /* Built now, so that a failure comes before the product. */
    clg_kernel *kn = kw ? clg__kernel_get(dev, "gemm_widen", opts, "gemm_narrow") : NULL;
    if (!kn) return dev->status;
    /* As stored: A is k x m when transposed, B n x k. A shared matrix (stride 0) once. */
    side a = {(clg_buffer *)g->a, g->a_off, g->lda, g->stride_a, g->trans_a ? g->k : g->m,
              g->trans_a ? g->m : g->k, g->stride_a ? g->batch : 1};
    side b = {(clg_buffer *)g->b, g->b_off, g->ldb, g->stride_b, g->trans_b ? g->n : g->k,
              g->trans_b ? g->k : g->n, g->stride_b ? g->batch : 1};
    side c = {g->c, g->c_off, g->ldc, g->stride_c, g->m, g->n, g->batch};
    /* A float32 C (c_f32) is written in place. */
    w->a = scratch(dev, a);
    w->b = w->a ? scratch(dev, b) : NULL;
    w->c = w->b && !g->c_f32 ? scratch(dev, c) : NULL;
    clg_status st = w->b && (w->c || g->c_f32) ? CLG_OK : dev->status;
    if (!st) st = convert(dev, kw, true, a, w->a);
    if (!st) st = convert(dev, kw, true, b, w->b);
    if (!st && g->beta != 0 && w->c) st = convert(dev, kw, true, c, w->c);
    if (st) {
        clg__gemm_narrow(dev, g, w, st);
        return st;
    }
    w->g = *g;
    w->g.type = CLG_GEMM_F32;
    w->g.c_f32 = false;
    w->g.a = w->a, w->g.a_off = 0, w->g.lda = a.cols, w->g.stride_a = g->stride_a ? a.rows * a.cols : 0;
    w->g.b = w->b, w->g.b_off = 0, w->g.ldb = b.cols, w->g.stride_b = g->stride_b ? b.rows * b.cols : 0;
    if (w->c) w->g.c = w->c, w->g.c_off = 0, w->g.ldc = c.cols, w->g.stride_c = c.rows * c.cols;
    return CLG_OK;
}

clg_status clg__gemm_narrow(clg_device *dev, const clg_gemm_args *g, clg_gemm_widened *w, clg_status st)
{
    if (!st && w->c) {
        clg_kernel *kn = clg__kernel_get(dev, "gemm_widen", options(g->type), "gemm_narrow");
        side c = {g->c, g->c_off, g->ldc, g->stride_c, g->m, g->n, g->batch};
        st = kn ? convert(dev, kn, false, c, w->c) : dev->status;
    }
    /* The in-order queue runs whoever gets these buffers next after the kernels above. */
    clg__buffer_release(w->a);
    clg__buffer_release(w->b);
    clg__buffer_release(w->c);
    *w = (clg_gemm_widened){0};
    return st;
}
