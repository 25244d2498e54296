/* splitk.c: a product with a long inner size split over k. Where m x n is small against
 * k (a convolution's weight gradient: 16 x 144 outputs over 100,352 pixels), a GPU's
 * engine runs a handful of work-groups for the whole product and leaves the device idle;
 * split in `parts` slices of k, the slices run side by side as one strided batch into
 * float32 scratch [parts, m, n] (batch entry p reads A's and B's columns (rows) of slice
 * p: a batch stride along k), the remainder of an uneven split is added into the first
 * slice's, and one launch (gemm.cl's gemm_split_sum) sums the slices in order into C with
 * alpha and beta, and the column bias where there is one. Any engine that runs strided
 * batches runs the slices. The tuner tries splits for the shape classes with long k
 * (tune.c); clg__gemm runs a class's split; the tiled engine splits a convolution's
 * weight gradient so (clg__gemm_split_with, with B's rows at offsets). */
#include "gemm/dispatch.h"

/* The slices of a split as clg__gemm_dispatch runs them on e (cfg). */
typedef struct on_engine {
    const clg_gemm_engine *e;
    const clg_gemm_config *cfg;
} on_engine;

static clg_status dispatch_slices(clg_device *dev, const clg_gemm_args *g, void *ctx)
{
    const on_engine *o = ctx;
    return clg__gemm_dispatch(dev, o->e, o->cfg, g);
}

clg_status clg__gemm_split_k(clg_device *dev, const clg_gemm_engine *e, const clg_gemm_config *cfg,
                             const clg_gemm_args *g, int parts)
{
    if (!clg__gemm_split_applies(g, parts)) return clg__gemm_dispatch(dev, e, cfg, g);
    clg_status st = clg__gemm_check(dev, g);
    return st ? st : clg__gemm_split_with(dev, g, parts, dispatch_slices, &(on_engine){e, cfg});
}

bool clg__gemm_split_applies(const clg_gemm_args *g, int parts)
{
    /* one float32 product alone, slices of some length, at most 64 of them (the sum's loop) */
    return parts >= 2 && parts <= CLG_GEMM_SPLIT_MAX && g->k / (size_t)parts > 0 && g->batch == 1 &&
           g->type == CLG_GEMM_F32 && g->m && g->n;
}

clg_status clg__gemm_split_with(clg_device *dev, const clg_gemm_args *g, int parts, clg_gemm_slices_run run,
                                void *ctx)
{
    if (!clg__gemm_split_applies(g, parts))
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm: %zu x %zu x %zu (batch %zu) in %d slices of k",
                         g->m, g->n, g->k, g->batch, parts);
    size_t ks = g->k / (size_t)parts, mn, bytes;
    if (__builtin_mul_overflow(g->m, g->n, &mn) || __builtin_mul_overflow(mn, (size_t)parts * sizeof(float), &bytes))
        return clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg__gemm: %d slices of %zu x %zu overflow", parts, g->m, g->n);
    clg_kernel *k = clg__kernel_get(dev, "gemm", clg__gemm_cl_options(dev, g), "gemm_split_sum");
    if (!k) return dev->status;
    clg_buffer *p = clg__buffer_alloc(dev, bytes);
    if (!p) return dev->status;
    /* A's slice p: columns p*ks.. of A (rows of a transposed A); B's: rows (columns). */
    clg_gemm_args s = *g;
    s.k = ks, s.batch = (size_t)parts, s.alpha = 1.0, s.beta = 0.0;
    s.stride_a = g->trans_a ? ks * g->lda : ks;
    s.stride_b = g->trans_b ? ks : ks * g->ldb;
    s.c = p, s.c_off = 0, s.ldc = g->n, s.stride_c = mn;
    s.col_bias = NULL;   /* added once, by the sum, and the ReLU after it */
    s.relu = false;
    clg_status st = run(dev, &s, ctx);
    size_t done = ks * (size_t)parts;
    if (!st && done < g->k) {
        clg_gemm_args r = s;
        r.k = g->k - done, r.batch = 1, r.beta = 1.0, r.stride_a = r.stride_b = r.stride_c = 0;
        r.a_off = g->a_off + (g->trans_a ? done * g->lda : done);
        r.b_off = g->b_off + (g->trans_b ? done : done * g->ldb);
        st = run(dev, &r, ctx);
    }
    if (!st) {
        clg_arg a[] = {CLG_ARG_I((int)g->m), CLG_ARG_I((int)g->n), CLG_ARG_I(parts), CLG_ARG_B(p), CLG_ARG_B(g->c),
                       CLG_ARG_L(g->c_off), CLG_ARG_I((int)g->ldc), clg__gemm_scalar(g->type, g->alpha),
                       clg__gemm_scalar(g->type, g->beta), CLG_ARG_B(g->col_bias ? g->col_bias : g->c),
                       CLG_ARG_L(g->col_bias_off), CLG_ARG_I(g->col_bias != NULL), CLG_ARG_I(g->relu)};
        st = clg__launch_rows3(dev, k, a, (int)(sizeof a / sizeof *a), g->n, g->m, 1);
    }
    clg__buffer_release(p);   /* the in-order queue runs its next user after the kernels above */
    return st;
}
