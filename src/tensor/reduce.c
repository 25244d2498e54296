/* reduce.c: sum, mean, max and min over any set of axes, and the sum back to a
 * broadcast input's shape that the autograd engine needs.
 *
 * Every reduction is run on x viewed as [M, R, K]: M kept elements before the
 * reduced axes, R reduced, K kept after. When x is contiguous and its reduced axes
 * are adjacent (the usual case: a batch axis, a feature axis), that view is free;
 * otherwise x is first copied with the reduced axes moved last. */
#include <string.h>

#include "tensor_impl.h"

typedef struct reduce_plan {
    bool mask[CLG_MAX_DIMS];       /* reduced axes of the input */
    int out_ndim;                  /* the result's axes */
    int64_t out_shape[CLG_MAX_DIMS];
    int64_t keep_shape[CLG_MAX_DIMS]; /* the result with keepdim (input's ndim) */
    int64_t R;                     /* elements reduced into each result */
} reduce_plan;

static bool plan_axes(const char *op, const clg_tensor *t, int naxes, const int *axes, bool keepdim,
                      reduce_plan *p)
{
    memset(p, 0, sizeof *p);
    if (!clg__axes_mask(op, t, naxes, axes, p->mask)) return false;
    p->R = 1;
    for (int d = 0; d < t->ndim; d++) {
        p->keep_shape[d] = p->mask[d] ? 1 : t->shape[d];
        if (p->mask[d]) p->R *= t->shape[d];
        if (keepdim || !p->mask[d]) p->out_shape[p->out_ndim++] = p->keep_shape[d];
    }
    return true;
}

/* x as [M, R, K] without a copy, if it can be. */
static bool mrk_view(const clg_tensor *t, const bool *mask, int64_t *M, int64_t *K)
{
    if (!clg_tensor_is_contiguous(t)) return false;
    int phase = 0;   /* 0: kept before, 1: reduced, 2: kept after */
    *M = *K = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 1) continue;
        if (mask[d]) {
            if (phase == 2) return false;
            phase = 1;
        } else if (phase == 0) {
            *M *= t->shape[d];
        } else {
            phase = 2;
            *K *= t->shape[d];
        }
    }
    return true;
}

/* Launch kernel over src as [M, R, K] into dst (numel M*K), in one or two passes. */
static clg_status run_mrk(clg_device *dev, const char *kernel, clg_tensor *src, int64_t M, int64_t R, int64_t K,
                          clg_tensor *dst, double scale)
{
    const char *opts = clg__dtype_options(src->dtype);
    clg_kernel *k = clg__kernel_get(dev, "reduce", opts, kernel);
    if (!k) return dev->status;
    int64_t C = 1;
    if (M * K < 1024 && R >= 4096) C = R / 2048 < 256 ? R / 2048 : 256;   /* spread long reductions */
    int64_t L = (R + C - 1) / C;
    clg_tensor *part = dst;
    if (C > 1 && !(part = clg__tensor_new(dev, src->dtype, 1, (const int64_t[]){M * C * K}))) return dev->status;
    clg_arg a[] = {CLG_ARG_I(M), CLG_ARG_I(R), CLG_ARG_I(K), CLG_ARG_I(C), CLG_ARG_I(L), CLG_ARG_M(src->buf->mem),
                   CLG_ARG_I(src->offset), CLG_ARG_M(part->buf->mem), CLG_ARG_I(part->offset),
                   clg__arg_scalar(src->dtype, C > 1 ? 1.0 : scale)};
    clg_status st = clg__launch_1d(dev, k, a, 10, (size_t)(M * C * K));
    if (st == CLG_OK && C > 1) {
        clg_arg b[] = {CLG_ARG_I(M), CLG_ARG_I(C), CLG_ARG_I(K), CLG_ARG_I(1), CLG_ARG_I(C), CLG_ARG_M(part->buf->mem),
                       CLG_ARG_I(0), CLG_ARG_M(dst->buf->mem), CLG_ARG_I(dst->offset),
                       clg__arg_scalar(src->dtype, scale)};
        st = clg__launch_1d(dev, k, b, 10, (size_t)(M * K));
    }
    if (part != dst) clg_tensor_free(part);
    return st;
}

/* The reduction itself, off the tape. */
static clg_tensor *reduce(const char *op, const char *kernel, clg_tensor *t, const reduce_plan *p, bool mean)
{
    clg_device *dev = t->dev;
    if (!clg__check_float(op, t) || !clg__check_numel(op, dev, t->numel)) return NULL;
    if (p->R == 0 && strcmp(kernel, "reduce_sum") != 0)
        return clg__op_fail(dev, CLG_ERR_SHAPE, op, "reducing zero elements of %s", CLG_DESC(t));
    clg_tensor *y = clg__tensor_new(dev, t->dtype, p->out_ndim, p->out_shape);
    if (!y) return NULL;
    if (y->numel == 0) return y;
    if (p->R == 0) {   /* an empty sum is 0, an empty mean NaN */
        if (clg_fill_(y, mean ? 0.0 / 0.0 : 0.0) != CLG_OK) clg_tensor_free(y), y = NULL;
        return y;
    }
    int64_t M, K;
    clg_tensor *src = t, *tmp = NULL;
    if (!mrk_view(t, p->mask, &M, &K)) {
        /* Kept axes first, reduced last, copied contiguous: [M, R, 1]. */
        int ax[CLG_MAX_DIMS], n = 0;
        for (int d = 0; d < t->ndim; d++) if (!p->mask[d]) ax[n++] = d;
        for (int d = 0; d < t->ndim; d++) if (p->mask[d]) ax[n++] = d;
        clg_no_grad_begin(dev);
        clg_tensor *perm = clg_permute(t, t->ndim, ax);
        clg_no_grad_end(dev);
        tmp = src = clg__copy_as(perm, t->dtype);
        clg_tensor_free(perm);
        if (!src) {
            clg_tensor_free(y);
            return NULL;
        }
        M = y->numel;
        K = 1;
    }
    clg_status st = run_mrk(dev, kernel, src, M, p->R, K, y, mean ? 1.0 / (double)p->R : 1.0);
    clg_tensor_free(tmp);
    if (st != CLG_OK) {
        clg_tensor_free(y);
        return NULL;
    }
    return y;
}

/* ---- backward ---------------------------------------------------------------------------------- */

/* g (the result's shape) as the input's shape, by broadcasting over the reduced axes. */
static clg_tensor *spread(clg_node *n, clg_tensor *g)
{
    clg_tensor *in = n->inputs[0];
    int64_t keep[CLG_MAX_DIMS];
    for (int d = 0; d < in->ndim; d++) keep[d] = n->i[d];
    return clg_expand(clg_reshape(g, in->ndim, keep), in->ndim, in->shape);
}

static clg_status sum_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    return (gin[0] = spread(n, g)) ? CLG_OK : g->dev->status;
}

static clg_status mean_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    return (gin[0] = spread(n, clg_mul_scalar(g, n->f[0]))) ? CLG_OK : g->dev->status;
}

/* max/min: the gradient goes to the elements equal to the result, shared among ties. */
static clg_status extremum_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *in = n->inputs[0];
    clg_tensor *hit = clg_eq(in, spread(n, n->out));
    int axes[CLG_MAX_DIMS], na = 0;
    for (int d = 0; d < in->ndim; d++)
        if (n->i[d] == 1 && in->shape[d] != 1) axes[na++] = d;
    clg_tensor *count = na ? clg_sum(hit, na, axes, true) : NULL;
    clg_tensor *share = na ? clg_div(hit, count) : hit;
    return (gin[0] = clg_mul(share, spread(n, g))) ? CLG_OK : g->dev->status;
}

/* ---- the ops ------------------------------------------------------------------------------------- */

static clg_tensor *reduce_op(const char *op, const char *kernel, int id, clg_backward_fn bw, clg_tensor *t,
                             int naxes, const int *axes, bool keepdim, bool mean)
{
    if (!t) return NULL;
    reduce_plan p;
    if (!plan_axes(op, t, naxes, axes, keepdim, &p)) return NULL;
    clg_node *node = NULL;
    clg_tensor *y = clg__taped(reduce(op, kernel, t, &p, mean), id, bw, 1, &t, &node);
    if (node) {
        for (int d = 0; d < t->ndim; d++) node->i[d] = p.keep_shape[d];
        node->f[0] = p.R ? 1.0 / (double)p.R : 0.0;
    }
    return y;
}

clg_tensor *clg_sum(clg_tensor *a, int naxes, const int *axes, bool keepdim)
{
    return reduce_op("sum", "reduce_sum", CLG_OP_sum, sum_bw, a, naxes, axes, keepdim, false);
}

clg_tensor *clg_mean(clg_tensor *a, int naxes, const int *axes, bool keepdim)
{
    return reduce_op("mean", "reduce_sum", CLG_OP_mean, mean_bw, a, naxes, axes, keepdim, true);
}

clg_tensor *clg_max(clg_tensor *a, int naxes, const int *axes, bool keepdim)
{
    return reduce_op("max", "reduce_max", CLG_OP_max, extremum_bw, a, naxes, axes, keepdim, false);
}

clg_tensor *clg_min(clg_tensor *a, int naxes, const int *axes, bool keepdim)
{
    return reduce_op("min", "reduce_min", CLG_OP_min, extremum_bw, a, naxes, axes, keepdim, false);
}

clg_tensor *clg__sum_to_shape(clg_tensor *g, int ndim, const int64_t *shape)
{
    if (!g) return NULL;
    int lead = g->ndim - ndim, axes[CLG_MAX_DIMS], na = 0;
    if (lead < 0) return clg__op_fail(g->dev, CLG_ERR_SHAPE, "backward", "gradient %s has fewer axes than its input",
                                      CLG_DESC(g));
    for (int d = 0; d < g->ndim; d++)
        if (d < lead || (shape[d - lead] == 1 && g->shape[d] != 1)) axes[na++] = d;
    clg_tensor *s = na ? clg_sum(g, na, axes, true) : g;
    return clg_reshape(s, ndim, shape);
}
