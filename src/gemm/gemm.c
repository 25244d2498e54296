/* gemm.c: clg__gemm: check the call once, then hand it to the device's engine: the
 * one its parameter table names, or the one the tuner chose (gemm_tune.c). */
#include <stdint.h>

#include "clgrad/ops.h"
#include "gemm/gemm.h"

const char *clg__gemm_engine_name(clg_gemm_engine engine)
{
    switch (engine) {
    case CLG_GEMM_AUTO: return "auto";
    case CLG_GEMM_CLBLAST: return "clblast";
    case CLG_GEMM_PACKED: return "packed";
    case CLG_GEMM_TILED: return "tiled";
    case CLG_GEMM_HOST: return "host";
    case CLG_GEMM_MMA: return "mma";
    }
    return "unknown";
}

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

static clg_status check_call(clg_device *dev, const clg_gemm_args *g)
{
    if (g->type != CLG_GEMM_F32 && g->type != CLG_GEMM_F64 && !clg__gemm_type_is_half(g->type))
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm: unknown element type %d", (int)g->type);
    if (g->type == CLG_GEMM_F64 && !clg_device_get_info(dev)->fp64)
        return clg__fail(dev, CLG_ERR_DTYPE, "clg__gemm: %s has no double precision (cl_khr_fp64)",
                         clg_device_get_info(dev)->name);
    size_t es = elem_size(g->type);
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

/* ---- the entry points ------------------------------------------------------------------- */

/* The longest k one launch of engine may take: each work-item loops over all of k (with
 * a few loop iterations per k in the tiled kernel's tile loads; over several
 * micro-tiles in the packed engine), and some drivers end a work-item's loops silently
 * past a count (item_loops, device table). CLBlast's kernels are its own. */
static size_t k_slice(clg_device *dev, clg_gemm_engine engine, const clg_gemm_args *g)
{
    if (engine == CLG_GEMM_CLBLAST || engine == CLG_GEMM_HOST) return SIZE_MAX;
    if (engine != CLG_GEMM_TILED) return clg__gemm_kernel_k_limit(dev, g);
    size_t loops = clg__device_params(dev)->item_loops / 3 / 16 * 16;
    return loops > 16 ? loops : 16;
}

/* g as products over slices of k of at most `slice`, each adding into C (the first with
 * g's beta): sums in a different order than one launch's, none past the loop limit. */
static clg_status gemm_k_slices(clg_device *dev, clg_gemm_engine engine, const clg_gemm_tiled_config *tiled,
                                const clg_gemm_args *g, size_t slice)
{
    for (size_t k0 = 0; k0 < g->k; k0 += slice) {
        clg_gemm_args s = *g;
        s.k = g->k - k0 < slice ? g->k - k0 : slice;
        s.a_off += g->trans_a ? k0 * g->lda : k0;
        s.b_off += g->trans_b ? k0 : k0 * g->ldb;
        if (k0) s.beta = 1.0;
        clg_status st = clg__gemm_run(dev, engine, tiled, &s);
        if (st) return st;
    }
    return CLG_OK;
}

clg_status clg__gemm_run(clg_device *dev, clg_gemm_engine engine, const clg_gemm_tiled_config *tiled,
                         const clg_gemm_args *g)
{
    if (!dev) return CLG_ERR_INVALID_ARGUMENT;
    if (g->m == 0 || g->n == 0 || g->batch == 0) return CLG_OK;
    clg_status st = check_call(dev, g);
    if (st) return st;
    /* BLAS libraries reject k == 0 (CLBlast: CLBlastInvalidDimension), yet its meaning is
     * plain: an empty sum, so C = beta * C. */
    if (g->k == 0) return clg__gemm_scale(dev, g);
    /* 16-bit products go to the matrix units where the device has them (validated on
     * first use); asked for by name where they are not, an error. */
    bool mma = (engine == CLG_GEMM_AUTO || engine == CLG_GEMM_MMA) && clg__gemm_type_is_half(g->type) &&
               clg__gemm_mma_ready(dev, g->type) && clg__gemm_mma_fits(dev, g);
    if (!mma && engine == CLG_GEMM_MMA)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                         "clg__gemm (mma, %s, m=%zu n=%zu k=%zu): the matrix-unit engine does not take it on %s "
                         "(16-bit operands only; device table mma = %s, validated on first use; see the log)",
                         g->type == CLG_GEMM_F16 ? "float16" : g->type == CLG_GEMM_BF16 ? "bfloat16" : "float32/64",
                         g->m, g->n, g->k, clg_device_get_info(dev)->name,
                         clg__device_params(dev)->mma == CLG_MMA_NONE ? "none" : "ptx or emulate");
    if (mma) {
        size_t slice = clg__gemm_mma_k_limit(dev);
        return g->k > slice ? gemm_k_slices(dev, CLG_GEMM_MMA, NULL, g, slice) : clg__gemm_mma(dev, g);
    }
    if (engine == CLG_GEMM_AUTO) engine = clg__gemm_engine_for(dev);
    /* A graph records the launches clgrad enqueues; CLBlast enqueues its own, which no
     * capture sees (a replay without them silently skipped every product). While a
     * capture is open, products that would go to CLBlast run on the tiled kernels. */
    if (engine == CLG_GEMM_CLBLAST && clg__capturing(dev)) engine = CLG_GEMM_TILED;
    /* The host's BLAS takes float32 and float64 (a capture records it like a launch);
     * 16-bit operands stay on the packed kernels, which read 16-bit storage. */
    if (engine == CLG_GEMM_HOST) {
        if (clg__gemm_host_fits(g)) return clg__gemm_host(dev, g);
        engine = CLG_GEMM_PACKED;
    }
    /* Past the loop limit, slices of k; 16-bit results in float32 first, so that each
     * is still rounded once. */
    size_t slice = k_slice(dev, engine, g);
    if (g->k > slice && (!clg__gemm_type_is_half(g->type) || g->c_f32))
        return gemm_k_slices(dev, engine, tiled, g, slice);
    /* The packed kernels read and write 16-bit storage themselves; the others compute
     * on float32 copies. */
    if (clg__gemm_type_is_half(g->type) && !(engine == CLG_GEMM_PACKED && clg__gemm_kernel_fits(g) && g->k <= slice))
        return clg__gemm_widened(dev, engine, tiled, g);
    /* Sizes past the kernels' 32-bit indexing go to CLBlast, which indexes with size_t. */
    if (engine == CLG_GEMM_TILED && clg__gemm_tiled_fits(g)) {
        if (!tiled) tiled = clg__gemm_tiled_for(dev, g->type);
        return tiled ? clg__gemm_tiled(dev, g, tiled) : dev->status;
    }
    if ((engine == CLG_GEMM_PACKED || clg__capturing(dev)) && clg__gemm_kernel_fits(g)) return clg__gemm_kernel(dev, g);
    return clg__gemm_clblast(dev, g);
}

clg_status clg__gemm_on(clg_device *dev, clg_gemm_engine engine, clg_gemm_type type, bool trans_a,
                        bool trans_b, size_t m, size_t n, size_t k, double alpha,
                        const clg_buffer *a, size_t a_off, size_t lda, size_t stride_a,
                        const clg_buffer *b, size_t b_off, size_t ldb, size_t stride_b,
                        double beta, clg_buffer *c, size_t c_off, size_t ldc, size_t stride_c,
                        size_t batch)
{
    clg_gemm_args g = {
        .type = type, .trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k, .batch = batch,
        .alpha = alpha, .beta = beta, .a = a, .b = b, .c = c, .a_off = a_off, .lda = lda,
        .stride_a = stride_a, .b_off = b_off, .ldb = ldb, .stride_b = stride_b, .c_off = c_off,
        .ldc = ldc, .stride_c = stride_c,
    };
    return clg__gemm_run(dev, engine, NULL, &g);
}

clg_status clg__gemm(clg_device *dev, clg_gemm_type type, bool trans_a, bool trans_b,
                     size_t m, size_t n, size_t k, double alpha,
                     const clg_buffer *a, size_t a_off, size_t lda, size_t stride_a,
                     const clg_buffer *b, size_t b_off, size_t ldb, size_t stride_b,
                     double beta, clg_buffer *c, size_t c_off, size_t ldc, size_t stride_c,
                     size_t batch)
{
    return clg__gemm_on(dev, CLG_GEMM_AUTO, type, trans_a, trans_b, m, n, k, alpha, a, a_off, lda,
                        stride_a, b, b_off, ldb, stride_b, beta, c, c_off, ldc, stride_c, batch);
}

const char *clg_matmul_engine(clg_device *dev, double *gflops, int *origin)
{
    if (gflops) *gflops = 0;
    if (origin) *origin = 0;
    if (!dev) return "none";
    const char *choice = clg__gemm_choice(dev, gflops);
    if (origin) *origin = clg__gemm_choice_origin(dev);
    return choice;
}
