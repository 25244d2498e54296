/* dispatch.c: one product on a named engine, through the table's fields alone: the
 * call is checked once, then the engine (or the one it sends the product to) runs it,
 * with k in slices past its loop budget and 16-bit operands widened where it computes
 * only float32. No engine is named here. */
#include <stdint.h>

#include "gemm/dispatch.h"
#include "gemm/widen.h"

/* ---- checking the call ----------------------------------------------------------------- */

static size_t elem_size(clg_gemm_type type)
{
    return type == CLG_GEMM_F64 ? sizeof(double) : clg__gemm_type_is_half(type) ? 2 : sizeof(float);
}

/* The number of elements from the first to one past the last an operand touches:
 * (batch-1)*stride + (rows-1)*ld + cols; false on overflow. */
static bool extent(size_t rows, size_t cols, size_t ld, size_t stride, size_t batch, size_t *out)
{
    size_t last_row, last_batch, e;
    if (__builtin_mul_overflow(rows - 1, ld, &last_row) ||
        __builtin_mul_overflow(batch - 1, stride, &last_batch) ||
        __builtin_add_overflow(last_row, cols, &e) || __builtin_add_overflow(e, last_batch, &e))
        return false;
    *out = e;
    return true;
}

/* An operand stored as rows x cols with leading dimension ld: ld must cover a row and the
 * whole strided batch must lie inside the buffer. */
static clg_status check_operand(clg_device *dev, const char *name, const clg_buffer *buf, size_t off,
                                size_t rows, size_t cols, size_t ld, size_t stride, size_t batch,
                                size_t esize)
{
    if (!buf || !buf->mem)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm: matrix %s is NULL", name);
    if (ld < cols || ld == 0)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                         "clg__gemm: ld%s = %zu is less than the %zu columns %s is stored with", name, ld,
                         cols, name);
    size_t e, end;
    if (!extent(rows, cols, ld, stride, batch, &e) || __builtin_add_overflow(e, off, &end) ||
        end > buf->size / esize)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                         "clg__gemm: matrix %s (%zu x %zu, ld %zu, offset %zu, batch %zu, stride %zu) "
                         "runs past its buffer of %zu elements", name, rows, cols, ld, off, batch, stride,
                         buf->size / esize);
    return CLG_OK;
}

clg_status clg__gemm_check(clg_device *dev, const clg_gemm_args *g)
{
    if (g->type != CLG_GEMM_F32 && g->type != CLG_GEMM_F64 && !clg__gemm_type_is_half(g->type))
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm: unknown element type %d", (int)g->type);
    if (g->type == CLG_GEMM_F64 && !clg_device_get_info(dev)->fp64)
        return clg__fail(dev, CLG_ERR_DTYPE, "clg__gemm: %s has no double precision (cl_khr_fp64)",
                         clg_device_get_info(dev)->name);
    if (g->b_rows)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm: B's row offsets are for clg__gemm_rows and clg__gemm_sum");
    if (g->grid.cols || g->bias)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm: C as a grid and a bias are for clg__gemm_rows");
    size_t es = elem_size(g->type);
    if (g->col_bias && g->beta != 0 && clg__gemm_type_is_half(g->type) && !g->c_f32)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm: a column bias with beta %g on a 16-bit C "
                         "(its results would be rounded twice: the product's, then the bias's sum)", g->beta);
    if (g->col_bias) {
        size_t end, bes = g->c_f32 ? sizeof(float) : es;
        if (!g->col_bias->mem || __builtin_add_overflow(g->col_bias_off, g->n, &end) || end > g->col_bias->size / bes)
            return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm: the column bias (%zu values at offset %zu) runs "
                             "past its buffer of %zu elements", g->n, g->col_bias_off,
                             g->col_bias->mem ? g->col_bias->size / bes : 0);
    }
    if (g->c_f32 && !clg__gemm_type_is_half(g->type))
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm: a float32 C is for 16-bit A and B");
    clg_status st = check_operand(dev, "C", g->c, g->c_off, g->m, g->n, g->ldc, g->stride_c, g->batch,
                                  g->c_f32 ? sizeof(float) : es);
    if (st || g->k == 0) return st; /* with k == 0, A and B are not read */
    /* Batches of C are written at once: they must not overlap. */
    if (g->batch > 1 && g->stride_c < (g->m - 1) * g->ldc + g->n)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                         "clg__gemm: stride_c = %zu makes the %zu x %zu (ld %zu) results of a batch overlap",
                         g->stride_c, g->m, g->n, g->ldc);
    st = g->trans_a ? check_operand(dev, "A", g->a, g->a_off, g->k, g->m, g->lda, g->stride_a, g->batch, es)
                    : check_operand(dev, "A", g->a, g->a_off, g->m, g->k, g->lda, g->stride_a, g->batch, es);
    if (st) return st;
    return g->trans_b ? check_operand(dev, "B", g->b, g->b_off, g->n, g->k, g->ldb, g->stride_b, g->batch, es)
                      : check_operand(dev, "B", g->b, g->b_off, g->k, g->n, g->ldb, g->stride_b, g->batch, es);
}

/* ---- running it ------------------------------------------------------------------------ */

/* g as products over slices of k of at most `slice`, each adding into C (the first with
 * g's beta): sums in a different order than one launch's, none past the loop limit. */
static clg_status k_slices(clg_device *dev, const clg_gemm_engine *e, const clg_gemm_config *cfg,
                           const clg_gemm_args *g, size_t slice)
{
    for (size_t k0 = 0; k0 < g->k; k0 += slice) {
        clg_gemm_args s = *g;
        s.k = g->k - k0 < slice ? g->k - k0 : slice;
        s.a_off += g->trans_a ? k0 * g->lda : k0;
        s.b_off += g->trans_b ? k0 : k0 * g->ldb;
        if (k0) s.beta = 1.0;
        clg_status st = clg__gemm_dispatch(dev, e, cfg, &s);
        if (st) return st;
    }
    return CLG_OK;
}

/* A pass of gemm.cl over g's C (m x n of every batch entry) in C's own type: `kernel`
 * with C's arguments (m, n, C, offset, ldc, batch stride), then `more`. */
static clg_status c_pass(clg_device *dev, const clg_gemm_args *g, const char *kernel, const clg_arg *more, int nmore)
{
    clg_gemm_args shape = *g;
    shape.type = g->c_f32 ? CLG_GEMM_F32 : g->type, shape.c_f32 = false;   /* C's own type */
    clg_kernel *k = clg__kernel_get(dev, "gemm", clg__gemm_cl_options(dev, &shape), kernel);
    if (!k) return dev->status;
    clg_arg args[9] = {
        CLG_ARG_I((int)g->m), CLG_ARG_I((int)g->n), CLG_ARG_B(g->c), CLG_ARG_L(g->c_off), CLG_ARG_I((int)g->ldc),
        CLG_ARG_L(g->stride_c),
    };
    for (int i = 0; i < nmore && i < 3; i++) args[6 + i] = more[i];
    return clg__launch_rows3(dev, k, args, 6 + nmore, g->n, g->m, g->batch);
}

/* C = bias on every row (add false) or C += bias, for g's C and column bias. */
static clg_status col_bias_pass(clg_device *dev, const clg_gemm_args *g, bool add)
{
    clg_arg more[] = {CLG_ARG_B(g->col_bias), CLG_ARG_L(g->col_bias_off), CLG_ARG_I(add)};
    return c_pass(dev, g, "gemm_col_bias", more, 3);
}

/* C = relu(C) over g's C (every batch entry). */
static clg_status relu_pass(clg_device *dev, const clg_gemm_args *g) { return c_pass(dev, g, "gemm_relu", NULL, 0); }

clg_status clg__gemm_empty_k(clg_device *dev, const clg_gemm_args *g)
{
    clg_status st = clg__gemm_scale(dev, g);
    if (!st && g->col_bias) st = col_bias_pass(dev, g, true);
    return st || !g->relu ? st : relu_pass(dev, g);
}

/* g's ReLU on an engine that does not apply it as it stores: the product without it,
 * then a pass over C. */
static clg_status relu_around(clg_device *dev, const clg_gemm_engine *e, const clg_gemm_config *cfg,
                              const clg_gemm_args *g)
{
    clg_gemm_args p = *g;
    p.relu = false;
    clg_status st = clg__gemm_dispatch(dev, e, cfg, &p);
    return st ? st : relu_pass(dev, g);
}

/* g's column bias on an engine that does not add it as it stores: C filled with it and
 * the product added with beta 1 (beta 0: the sums as an addmm's), else the product then
 * the bias added. */
static clg_status col_bias_around(clg_device *dev, const clg_gemm_engine *e, const clg_gemm_config *cfg,
                                  const clg_gemm_args *g)
{
    clg_gemm_args p = *g;
    p.col_bias = NULL;
    if (g->beta == 0) {   /* the ReLU, if any, stays with the product: after the bias it added */
        clg_status st = col_bias_pass(dev, g, false);
        p.beta = 1.0;
        return st ? st : clg__gemm_dispatch(dev, e, cfg, &p);
    }
    p.relu = false;   /* after the bias */
    clg_status st = clg__gemm_dispatch(dev, e, cfg, &p);
    if (!st) st = col_bias_pass(dev, g, true);
    return st || !g->relu ? st : relu_pass(dev, g);
}

bool clg__gemm_relu_inside(clg_device *dev, const clg_gemm_engine *e, const clg_gemm_args *g)
{
    size_t slice = e->k_limit ? e->k_limit(dev, g) : SIZE_MAX;
    return e->relu && (!e->fits || e->fits(dev, g)) && g->k <= slice && !clg__gemm_type_is_half(g->type);
}

/* An engine that does not take g sends it on (`instead`); one that sends it nowhere
 * refuses it. The chain is short (host -> packed, clblast -> tiled), never a loop. */
const clg_gemm_engine *clg__gemm_taker(clg_device *dev, const clg_gemm_engine *e, const clg_gemm_args *g,
                                        bool refuse)
{
    for (int hops = 0; e && e->takes && !e->takes(dev, g) && hops < clg__gemm_engine_count(); hops++) {
        const clg_gemm_engine *next = clg__gemm_engine_find(e->instead);
        if (!next) {
            if (!refuse) return NULL;
            if (e->refuse) e->refuse(dev, g);
            else
                clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm (%s, m=%zu n=%zu k=%zu): the engine does not take it on %s",
                          e->name, g->m, g->n, g->k, clg_device_get_info(dev)->name);
            return NULL;
        }
        e = next;
    }
    return e;
}

clg_status clg__gemm_dispatch(clg_device *dev, const clg_gemm_engine *e, const clg_gemm_config *cfg,
                              const clg_gemm_args *g)
{
    if (!dev || !e) return CLG_ERR_INVALID_ARGUMENT;
    if (g->m == 0 || g->n == 0 || g->batch == 0) return CLG_OK;
    clg_status st = clg__gemm_check(dev, g);
    if (st) return st;
    /* BLAS libraries reject k == 0 (CLBlast: CLBlastInvalidDimension), yet its meaning is
     * plain: an empty sum, so C = beta * C. */
    if (g->k == 0) return clg__gemm_empty_k(dev, g);
    const clg_gemm_engine *asked = e;
    if (!(e = clg__gemm_taker(dev, e, g, true))) return dev->status;
    if (e != asked) cfg = NULL;   /* a configuration is the asked engine's */
    /* Past the loop limit, slices of k; 16-bit results in float32 first, so that each
     * is still rounded once. */
    bool half = clg__gemm_type_is_half(g->type), fits = !e->fits || e->fits(dev, g);
    size_t slice = e->k_limit ? e->k_limit(dev, g) : SIZE_MAX;
    /* A ReLU and a column bias go into the write-out of an engine that applies them, in
     * one call on the operands as they are; else around the product (a 16-bit C's ReLU
     * after its rounding, as on the rounded values of a separate ReLU). */
    if (g->relu && !clg__gemm_relu_inside(dev, e, g)) return relu_around(dev, e, cfg, g);
    if (g->col_bias && !(e->col_bias && fits && g->k <= slice && !half)) return col_bias_around(dev, e, cfg, g);
    if (g->k > slice && (!half || g->c_f32)) return k_slices(dev, e, cfg, g, slice);
    /* Engines that store 16-bit values themselves read them; the others compute on
     * float32 copies. */
    if (half && !(e->stores16 && fits && g->k <= slice)) {
        clg_gemm_widened w;
        st = clg__gemm_widen(dev, g, &w);   /* on failure, nothing is left to free */
        if (!st) st = clg__gemm_dispatch(dev, e, cfg, &w.g);
        return clg__gemm_narrow(dev, g, &w, st);
    }
    /* Sizes past an engine's indexing go where it sends them (CLBlast, which indexes with
     * size_t). */
    if (!fits) {
        const clg_gemm_engine *next = clg__gemm_engine_find(e->instead);
        if (!next)
            return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm (%s, m=%zu n=%zu k=%zu): sizes beyond the engine's indexing",
                             e->name, g->m, g->n, g->k);
        return next->run(dev, g, NULL);
    }
    return e->run(dev, g, cfg);
}
