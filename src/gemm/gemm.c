/* gemm.c: clg__gemm: check the call once, then hand it to the engine that takes it:
 * the table's `first` engines (the matrix units, for the 16-bit products they take),
 * else the device's own, the one its parameter table names or the tuner chose
 * (choice.c), where tuned the one chosen for the product's shape class. dispatch.c does the rest. */
#include <string.h>

#include "clgrad/ops.h"
#include "gemm/dispatch.h"

clg_status clg__gemm_run(clg_device *dev, const clg_gemm_engine *engine, const clg_gemm_config *cfg,
                         const clg_gemm_args *g)
{
    if (!dev) return CLG_ERR_INVALID_ARGUMENT;
    if (engine) return clg__gemm_dispatch(dev, engine, cfg, g);
    if (g->m == 0 || g->n == 0 || g->batch == 0) return CLG_OK;
    clg_status st = clg__gemm_check(dev, g);
    if (st) return st;
    if (g->k == 0) return clg__gemm_empty_k(dev, g);
    /* Before the device's engine is chosen (which may tune): a 16-bit product on the
     * matrix units does not wait for a float32 tuning. */
    for (int i = 0; i < clg__gemm_engine_count(); i++) {
        const clg_gemm_engine *e = clg__gemm_engine_at(i);
        if (e->first && e->takes(dev, g) && !(e->leaves && e->leaves(dev, g))) return clg__gemm_dispatch(dev, e, NULL, g);
    }
    const clg_gemm_config *own_cfg;
    int split;
    const clg_gemm_engine *own = clg__gemm_own_engine(dev, g, &own_cfg, &split);
    return split > 1 ? clg__gemm_split_k(dev, own, own_cfg, g, split) : clg__gemm_dispatch(dev, own, own_cfg, g);
}

const clg_gemm_engine *clg__gemm_own_engine(clg_device *dev, const clg_gemm_args *g, const clg_gemm_config **cfg,
                                            int *split)
{
    const clg_gemm_engine *own = clg__gemm_engine_for_args(dev, g, cfg, split), *next;
    if (own->leaves && own->leaves(dev, g) && (next = clg__gemm_engine_find(own->instead))) own = next, *cfg = NULL;
    return own;
}

bool clg__gemm_stores_relu(clg_device *dev, const clg_gemm_args *g)
{
    if (!dev || (g->type != CLG_GEMM_F32 && g->type != CLG_GEMM_F64) || !g->m || !g->n || !g->k || !g->batch)
        return false;
    /* as clg__gemm_run chooses (no `first` engine takes float32 or float64) */
    const clg_gemm_config *cfg;
    int split;
    const clg_gemm_engine *own = clg__gemm_own_engine(dev, g, &cfg, &split);
    if (split > 1 && clg__gemm_split_applies(g, split)) return true;   /* gemm_split_sum applies it */
    const clg_gemm_engine *e = clg__gemm_taker(dev, own, g, false);
    return e && clg__gemm_relu_inside(dev, e, g);
}

clg_status clg__gemm(clg_device *dev, clg_gemm_type type, bool trans_a, bool trans_b,
                     size_t m, size_t n, size_t k, double alpha,
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
    return clg__gemm_run(dev, NULL, NULL, &g);
}

/* The engine the device table names (not a tuned one: the sum is a choice made there;
 * where it says "tune", the engine for the device's kind: the tiled kernels where the
 * table times them, gemm_tiles, else the packed), or, where that one offers no sums or
 * row offsets (the host's BLAS), the engine it sends what it does not take (`instead`:
 * the packed kernels). The chain is short. */
static const clg_gemm_engine *named(clg_device *dev)
{
    const clg_device_params *p = clg__device_params(dev);
    const char *name = strcmp(p->gemm, "tune") ? p->gemm : p->gemm_tiles ? "tiled" : "packed";
    const clg_gemm_engine *e = clg__gemm_engine_find(name);
    for (int hops = 0; e && !e->sum && !e->rows && e->instead && hops < clg__gemm_engine_count(); hops++)
        e = clg__gemm_engine_find(e->instead);
    return e;
}

bool clg__gemm_sum_fits(clg_device *dev, const clg_gemm_args *g)
{
    const clg_gemm_engine *e = dev ? named(dev) : NULL;
    return e && e->sum_fits && e->sum_fits(dev, g);
}

clg_status clg__gemm_sum(clg_device *dev, const clg_gemm_args *g)
{
    if (!dev) return CLG_ERR_INVALID_ARGUMENT;
    const clg_gemm_engine *e = named(dev);
    if (!e || !e->sum)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm_sum: the engine the device table names (gemm = %s) "
                         "sums no batches", clg__device_params(dev)->gemm);
    return e->sum(dev, g);
}

bool clg__gemm_rows_fits(clg_device *dev, const clg_gemm_args *g)
{
    const clg_gemm_engine *e = dev ? named(dev) : NULL;
    return e && e->rows_fits && e->rows_fits(dev, g);
}

clg_status clg__gemm_rows(clg_device *dev, const clg_gemm_args *g)
{
    if (!dev) return CLG_ERR_INVALID_ARGUMENT;
    if (g->bias && !g->grid.cols)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm_rows: a row bias is stored with C as a grid only");
    if (!clg__gemm_rows_fits(dev, g))
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm_rows: the engine the device table names (gemm = %s) "
                         "does not take %zu x %zu x %zu with row offsets", clg__device_params(dev)->gemm, g->m, g->n, g->k);
    return g->m && g->n && g->batch ? named(dev)->rows(dev, g) : CLG_OK;
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
