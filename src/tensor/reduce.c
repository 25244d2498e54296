/* reduce.c: sum, mean, prod, max and min over any set of axes, the norms and
 * logsumexp made of them, and the sum back to a broadcast input's shape that the
 * autograd engine needs.
 *
 * Every reduction is run on x viewed as [M, R, K]: M kept elements before the
 * reduced axes, R reduced, K kept after. When x is contiguous and its reduced axes
 * are adjacent (the usual case: a batch axis, a feature axis), that view is free;
 * otherwise x is first copied with the reduced axes moved last. */
#include <math.h>
#include <stdio.h>
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

/* Whether kernel has the float32 (16-bit storage) vector kernels: NAME_vec along rows
 * (K = 1), NAME_cols16 down 16 columns at a time (K a multiple of 16), where the
 * device's items are SIMD threads. */
static bool has_vec(const clg_device *dev, const char *kernel, clg_dtype dtype)
{
    return (dtype == CLG_F32 || clg__is_half(dtype)) && clg__device_params(dev)->row_items &&
           (!strcmp(kernel, "reduce_sum") || !strcmp(kernel, "reduce_sumsq") || !strcmp(kernel, "reduce_prod") ||
            !strcmp(kernel, "reduce_max") || !strcmp(kernel, "reduce_min"));
}

static bool cols16(const clg_device *dev, const char *kernel, clg_dtype dtype, int64_t K)
{
    return K > 1 && K % 16 == 0 && strcmp(kernel, "reduce_prod") && has_vec(dev, kernel, dtype);
}

/* Products of M short rows of R (K = 1) 16 rows a work-item (reduce_prod_rows16): rows of
 * up to 1024, within the device's loop count, enough of them that 16 a work-item still
 * fills the device (two work-items for each of its units). */
static bool prod_rows16(clg_device *dev, int64_t M, int64_t R)
{
    int64_t cu = (int64_t)clg_device_get_info(dev)->compute_units;
    return R >= 1 && R <= 1024 && 16 * R <= (int64_t)clg__device_params(dev)->item_loops &&
           M >= 32 * (cu > 0 ? cu : 1);
}

/* One pass of kernel over src as [M, R, K] in C chunks into out [M, C, K]: `in16` when
 * src holds 16-bit values (else the compute type), `out16` when out does. */
static clg_status mrk_pass(clg_device *dev, const char *kernel, clg_dtype dtype, bool in16, bool out16,
                           clg_tensor *src, int64_t M, int64_t R, int64_t K, int64_t C, clg_tensor *out, double scale)
{
    bool half = clg__is_half(dtype);
    char opts[96];
    snprintf(opts, sizeof opts, "%s%s%s", clg__dtype_options_ew(dtype), half && !out16 ? " -DCLG_RED_PARTIAL" : "",
             half && !in16 ? " -DCLG_RED_FINAL" : "");
    /* rows side by side (K = 1) in float32 or 16-bit: reduced along each row in vectors;
     * columns 16 at a time */
    bool vec = K == 1 && has_vec(dev, kernel, dtype), cols = cols16(dev, kernel, dtype, K);
    if (vec && C == 1 && !strcmp(kernel, "reduce_prod") && prod_rows16(dev, M, R)) {
        clg_kernel *k = clg__kernel_get(dev, "reduce", opts, "reduce_prod_rows16");
        if (!k) return dev->status;
        clg_arg a[] = {CLG_ARG_I(M), CLG_ARG_I(R), CLG_ARG_B(src->buf), CLG_ARG_I(src->offset), CLG_ARG_B(out->buf),
                       CLG_ARG_I(out->offset), clg__arg_scalar(dtype, scale)};
        return clg__launch_1d(dev, k, a, 7, (size_t)((M + 15) / 16));
    }
    char vname[32];
    snprintf(vname, sizeof vname, "%s%s", kernel, vec ? "_vec" : cols ? "_cols16" : "");
    clg_kernel *k = clg__kernel_get(dev, "reduce", opts, vname);
    if (!k) return dev->status;
    int64_t L = (R + C - 1) / C;
    clg_arg a[] = {CLG_ARG_I(M), CLG_ARG_I(R), CLG_ARG_I(K), CLG_ARG_I(C), CLG_ARG_I(L), CLG_ARG_B(src->buf),
                   CLG_ARG_I(src->offset), CLG_ARG_B(out->buf), CLG_ARG_I(out->offset),
                   clg__arg_scalar(dtype, scale)};
    return clg__launch_1d(dev, k, a, 10, (size_t)(M * C * (cols ? K / 16 : K)));
}

/* The kernel that reduces kernel's partial results further: the same, but sums of
 * squares add their partial sums. */
static const char *then_kernel(const char *kernel)
{
    return strcmp(kernel, "reduce_sumsq") ? kernel : "reduce_sum";
}

/* Launch kernel over src as [M, R, K] into dst (numel M*K): passes over chunks of the
 * reduced axis until one result is left per (m, k). A few long reductions spread over
 * chunks to use the whole device; and no work-item walks more than item_loops rows
 * (some drivers end longer loops silently), however long R. 16-bit values accumulate
 * in float32, and the partial results stay float32, so that only the end rounds. */
static clg_status run_mrk(clg_device *dev, const char *kernel, clg_tensor *src, int64_t M, int64_t R, int64_t K,
                          clg_tensor *dst, double scale)
{
    clg_dtype dtype = src->dtype;
    int64_t cap = (int64_t)clg__device_params(dev)->item_loops;
    clg_tensor *cur = src;
    bool first = true;
    /* Work-items enough to fill the device: where each is a SIMD thread of a core
     * (row_items) walking a contiguous row, two groups for each compute unit (a group
     * runs on one core there: 256 items were one group, and the sum of all of
     * [1024, 1024] ran on one core of two, 0.144 ms against 0.078 for its rows' sums;
     * four groups a unit chunked [1024, 1024]'s rows too, a launch more for nothing);
     * else thousands (lanes, or columns that POCL's vectorized items read a row apart:
     * sum over the 2048 rows of [2048, 512] took 3.5 ms in 256 work-items, 2.2 in 4096). */
    const clg_device_params *prm = clg__device_params(dev);
    int64_t cu = (int64_t)clg_device_get_info(dev)->compute_units;
    int64_t groups = 2 * (cu > 0 ? cu : 1) * (int64_t)prm->group_1d;
    bool rows = prm->row_items && K == 1;
    int64_t fill = groups > 256 ? groups : 256, spread = rows ? fill : 4096;
    clg_status st = CLG_OK;
    for (;;) {
        int64_t C = 1;
        /* Columns 16 at a time: chunks of 16 rows or more, items enough to fill the
         * device; one pass under 65,536 elements. */
        if (cols16(dev, kernel, dtype, K)) {
            int64_t items = M * (K / 16);
            if (items < fill && R >= 32 && M * K * R >= 65536) {
                C = fill / items;
                if (C > R / 16) C = R / 16;
                if (C < 1) C = 1;
            }
        } else if (M * K < spread && R >= 128 && M * K * R >= 65536) {
            /* Few results over long rows (a bias's gradient: [2048, 128] summed over its
             * rows) leave most of the device idle: chunks of 64 rows or more, up to
             * `spread` work-items in all, and a second pass adds the chunks; not for
             * fewer than 65,536 elements, where a launch more costs more than it spreads. */
            C = spread / (M * K);
            if (C > R / 64) C = R / 64;
            if (C > 256 && !rows) C = 256;
            if (C < 1) C = 1;
        }
        /* Many results over rows far apart (a convolution's per-image weight gradients
         * summed over the batch: [128, 36864] over its rows): a work-item walking all R
         * rows reads R streams at once, past what the CPU's prefetchers follow; chunks of
         * 16 rows, then a pass over the chunks. (With K = 1 each work-item reads one
         * contiguous row: one pass.) */
        else if (K > 1 && M * K >= 4096 && R >= 64) C = R / 16;
        /* Rows 1 KiB apart or more (K >= 256 floats) walked far down alias in the caches
         * (sum over the rows of [2048, 512]: 1.1-2.2 ms as above, against 0.3 for
         * [2048, 384]): chunks of 16 rows there too, where the device's items are SIMD
         * threads (row_items). */
        if (K >= 256 && R >= 64 && prm->row_items && C < R / 16) C = R / 16;
        if (C * cap < R) C = (R + cap - 1) / cap;
        /* No chunk empty: the chunks of L = ceil(R / C) rows that reach R (the same L).
         * The scalar max and min start from their chunk's first element, which an empty
         * chunk would read past its row (the next row's, or past the buffer: softmax over
         * [2, 40000] in float64, chunked in 512, failed now and then). */
        if (C > 1) C = (R + (R + C - 1) / C - 1) / ((R + C - 1) / C);
        if (C == 1) {
            st = mrk_pass(dev, kernel, dtype, first, true, cur, M, R, K, 1, dst, scale);
            break;
        }
        clg_tensor *part = clg__tensor_new(dev, clg__compute_dtype(dtype), 1, (const int64_t[]){M * C * K});
        st = part ? mrk_pass(dev, kernel, dtype, first, false, cur, M, R, K, C, part, 1.0) : dev->status;
        if (cur != src) clg_tensor_free(cur);
        cur = part, R = C, first = false;
        kernel = then_kernel(kernel);
        if (st) break;
    }
    if (cur != src) clg_tensor_free(cur);
    return st;
}

/* The chunks clg__sumsq_chunks cuts n elements into: of 4096 elements or more, 256 at
 * most, and none longer than the device's item_loops. */
int64_t clg__sumsq_chunk_count(clg_device *dev, int64_t n)
{
    int64_t cap = (int64_t)clg__device_params(dev)->item_loops, C = n / 4096;
    C = C > 256 ? 256 : C < 1 ? 1 : C;
    if (C * cap < n) C = (n + cap - 1) / cap;
    return C;
}

/* The sums of the squares of the chunks of contiguous float32 or float64 t, written to
 * out[0 .. C) (out's buffer at its offset; C from clg__sumsq_chunk_count): one launch,
 * no tape. Many tensors' chunks side by side then take one reduction (clipping). */
clg_status clg__sumsq_chunks(clg_tensor *t, clg_tensor *out, int64_t C)
{
    if ((t->dtype != CLG_F32 && t->dtype != CLG_F64) || !clg_tensor_is_contiguous(t) || out->dtype != t->dtype ||
        out->numel < C || C < 1 || C * (int64_t)clg__device_params(t->dev)->item_loops < t->numel)
        return clg__fail(t->dev, CLG_ERR_INVALID_ARGUMENT, "sum of squares: %s in %lld chunks into %s", CLG_DESC(t),
                         (long long)C, CLG_DESC(out));
    return mrk_pass(t->dev, "reduce_sumsq", t->dtype, true, false, t, 1, t->numel, 1, C, out, 1.0);
}

/* A contiguous t whose reduced axes are not one block (as a batch norm's or a conv
 * bias's sum over N, H and W of [N, C, H, W]): the innermost run of reduced axes first,
 * t viewed in place as [M, R, K], into a tensor with those axes of size 1 (R taken out of
 * p->R). The caller repeats it until the rest is one block: no copy of t. A mean is the
 * mean of equal-sized means. */
static clg_tensor *reduce_inner_run(const char *kernel, clg_tensor *t, reduce_plan *p, bool mean)
{
    int b = t->ndim - 1;
    while (b >= 0 && !(p->mask[b] && t->shape[b] != 1)) b--;
    int a = b;
    while (a > 0 && p->mask[a - 1]) a--;
    int64_t M = 1, R = 1, K = 1, shape[CLG_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        shape[d] = d >= a && d <= b ? 1 : t->shape[d];
        if (d < a) M *= t->shape[d];
        else if (d <= b) R *= t->shape[d];
        else K *= t->shape[d];
    }
    clg_tensor *part = clg__tensor_new(t->dev, t->dtype, t->ndim, shape);
    if (part && run_mrk(t->dev, kernel, t, M, R, K, part, mean ? 1.0 / (double)R : 1.0) != CLG_OK) {
        clg_tensor_free(part);
        return NULL;
    }
    p->R /= R;
    return part;
}

clg_status clg__sum_rows_into(clg_tensor *x, int64_t R, int64_t K, clg_tensor *dst)
{
    return run_mrk(x->dev, "reduce_sum", x, 1, R, K, dst, 1.0);
}

/* The reduction itself, off the tape. */
static clg_tensor *reduce(const char *op, const char *kernel, clg_tensor *t, const reduce_plan *p, bool mean)
{
    clg_device *dev = t->dev;
    if (!clg__check_floating(op, t) || !clg__check_numel(op, dev, t->numel)) return NULL;
    bool is_prod = !strcmp(kernel, "reduce_prod"), is_sum = !strcmp(then_kernel(kernel), "reduce_sum");
    if (p->R == 0 && !is_sum && !is_prod)
        return clg__op_fail(dev, CLG_ERR_SHAPE, op, "reducing zero elements of %s", CLG_DESC(t));
    clg_tensor *y = clg__tensor_new(dev, t->dtype, p->out_ndim, p->out_shape);
    if (!y) return NULL;
    if (y->numel == 0) return y;
    if (p->R == 0) {   /* an empty sum is 0, an empty mean NaN, an empty product 1 */
        if (clg_fill_(y, is_prod ? 1.0 : mean ? 0.0 / 0.0 : 0.0) != CLG_OK) clg_tensor_free(y), y = NULL;
        return y;
    }
    int64_t M, K;
    clg_tensor *src = t, *tmp = NULL;
    reduce_plan cur = *p;
    /* 16-bit values keep the copy below: their partial results would round twice */
    while (!clg__is_half(t->dtype) && clg_tensor_is_contiguous(src) && !mrk_view(src, cur.mask, &M, &K)) {
        clg_tensor *part = reduce_inner_run(kernel, src, &cur, mean);
        clg_tensor_free(tmp);
        tmp = src = part;
        kernel = then_kernel(kernel);
        if (!part) {
            clg_tensor_free(y);
            return NULL;
        }
    }
    if (!mrk_view(src, cur.mask, &M, &K)) {
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
    clg_status st = run_mrk(dev, kernel, src, M, cur.R, K, y, mean ? 1.0 / (double)cur.R : 1.0);
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

/* prod: d/dx_i = the product of the others. Without zeros in the slice that is y / x_i;
 * with one zero, the product of the nonzero others at the zero and 0 elsewhere; with
 * two or more, 0 everywhere. Division is exact enough (PyTorch does the same). */
static clg_status prod_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *x = n->inputs[0];
    int axes[CLG_MAX_DIMS], na = 0;
    for (int d = 0; d < x->ndim; d++)
        if (n->i[d] == 1 && x->shape[d] != 1) axes[na++] = d;
    clg_tensor *zero = clg_zeros(x->dev, x->dtype, 0, NULL), *one = clg_ones(x->dev, x->dtype, 0, NULL);
    clg_tensor *is0 = clg_eq(x, zero);
    clg_tensor *zeros = na ? clg_sum(is0, na, axes, true) : is0;           /* zeros per slice */
    clg_tensor *nz = clg_where(is0, one, x);                                /* zeros read as 1 */
    clg_tensor *pnz = na ? clg_prod(nz, na, axes, true) : nz;             /* product of the rest */
    clg_tensor *y = spread(n, n->out);
    clg_tensor *none = clg_div(y, nz);                                      /* no zero: y / x */
    clg_tensor *single = clg_mul(is0, pnz);                                 /* one zero: at it */
    clg_tensor *d = clg_where(clg_eq(zeros, zero), none, clg_mul(clg_eq(zeros, one), single));
    return (gin[0] = clg_mul(d, spread(n, g))) ? CLG_OK : g->dev->status;
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

clg_tensor *clg_prod(clg_tensor *a, int naxes, const int *axes, bool keepdim)
{
    return reduce_op("prod", "reduce_prod", CLG_OP_prod, prod_bw, a, naxes, axes, keepdim, false);
}

clg_tensor *clg_max(clg_tensor *a, int naxes, const int *axes, bool keepdim)
{
    return reduce_op("max", "reduce_max", CLG_OP_max, extremum_bw, a, naxes, axes, keepdim, false);
}

clg_tensor *clg_min(clg_tensor *a, int naxes, const int *axes, bool keepdim)
{
    return reduce_op("min", "reduce_min", CLG_OP_min, extremum_bw, a, naxes, axes, keepdim, false);
}

/* ---- made of the above ---------------------------------------------------------------------- */

/* The 2-norm's own backward: g x / y, and 0 where y is 0 (PyTorch's subgradient; through
 * sqrt it would be 0 * inf = NaN). */
static clg_status norm2_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *x = n->inputs[0], *y = spread(n, n->out);
    clg_tensor *zero = clg_zeros(x->dev, x->dtype, 0, NULL);
    clg_tensor *d = clg_where(clg_eq(y, zero), zero, clg_div(x, y));
    return (gin[0] = clg_mul(d, spread(n, g))) ? CLG_OK : g->dev->status;
}

/* f(a) for a 16-bit a: computed in float32 and rounded once, as tensor.h promises of
 * reductions (the casts carry the gradient both ways). */
static clg_tensor *in_float32(clg_tensor *y32, clg_dtype dtype) { return y32 ? clg_cast(y32, dtype) : NULL; }

clg_tensor *clg_norm(clg_tensor *a, double p, int naxes, const int *axes, bool keepdim)
{
    if (a && clg__is_half(a->dtype)) return in_float32(clg_norm(clg_cast(a, CLG_F32), p, naxes, axes, keepdim), a->dtype);
    if (!a || !clg__check_float("norm", a)) return NULL;
    if (p == 1) return clg_sum(clg_abs(a), naxes, axes, keepdim);
    if (p == INFINITY) return clg_max(clg_abs(a), naxes, axes, keepdim);
    if (p != 2) return clg__op_fail(a->dev, CLG_ERR_INVALID_ARGUMENT, "norm", "p = %g: want 1, 2 or inf (input %s)", p,
                                    CLG_DESC(a));
    reduce_plan rp;
    if (!plan_axes("norm", a, naxes, axes, keepdim, &rp)) return NULL;
    clg_no_grad_begin(a->dev);
    clg_tensor *y = clg_sqrt(reduce("norm", "reduce_sumsq", a, &rp, false));
    clg_no_grad_end(a->dev);
    clg_node *node = NULL;
    y = clg__taped(y, CLG_OP_norm, norm2_bw, 1, &a, &node);
    if (node)
        for (int d = 0; d < a->ndim; d++) node->i[d] = rp.keep_shape[d];
    return y;
}

/* log(sum(exp(a))) = m + log(sum(exp(a - m))) with m the maximum (a constant: its
 * gradient cancels), taken as 0 where it is infinite, so that all -inf gives -inf
 * and any +inf gives +inf rather than NaN. The gradient is softmax(a), through the
 * ops it is made of. Over an empty axis it is log(0) = -inf, as PyTorch's (there is
 * no maximum to subtract). */
clg_tensor *clg_logsumexp(clg_tensor *a, int naxes, const int *axes, bool keepdim)
{
    if (!a) return NULL;
    if (clg__is_half(a->dtype))
        return in_float32(clg_logsumexp(clg_cast(a, CLG_F32), naxes, axes, keepdim), a->dtype);
    reduce_plan rp;
    if (!clg__check_float("logsumexp", a) || !plan_axes("logsumexp", a, naxes, axes, true, &rp)) return NULL;
    if (rp.R == 0) return clg_log(clg_sum(clg_exp(a), naxes, axes, keepdim));
    clg_device *dev = a->dev;
    clg_no_grad_begin(dev);
    clg_tensor *m = clg_max(a, naxes, axes, true);
    clg_tensor *inf = clg_full(dev, a->dtype, 0, NULL, INFINITY);
    clg_tensor *mf = m ? clg_where(clg_eq(clg_abs(m), inf), clg_zeros(dev, a->dtype, 0, NULL), m) : NULL;
    clg_no_grad_end(dev);
    clg_tensor *s = clg_log(clg_sum(clg_exp(clg_sub(a, mf)), naxes, axes, true));
    clg_tensor *y = clg_add(s, mf);
    if (keepdim || !y) return y;
    plan_axes("logsumexp", a, naxes, axes, false, &rp);
    return clg_reshape(y, rp.out_ndim, rp.out_shape);
}

/* sqrt's gradient g / 2y is g / 0 where var is 0: PyTorch takes 0 there (a constant
 * input has no spread to move; NaN would poison the whole backward pass of a
 * normalisation over a constant feature). var's backward does the rest. */
static clg_status std_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *y = n->out, *zero = clg_zeros(g->dev, g->dtype, 0, NULL);
    gin[0] = clg_where(clg_eq(y, zero), zero, clg_div(g, clg_mul_scalar(y, 2.0)));
    return gin[0] ? CLG_OK : g->dev->status;
}

/* The standard deviation, sqrt(var), with the gradient 0 where it is 0. */
clg_tensor *clg_std(clg_tensor *a, int naxes, const int *axes, int correction, bool keepdim)
{
    clg_tensor *v = clg_var(a, naxes, axes, correction, keepdim);
    if (!v) return NULL;
    clg_no_grad_begin(v->dev);
    clg_tensor *y = clg_sqrt(v);
    clg_no_grad_end(v->dev);
    return clg__taped(y, CLG_OP_std, std_bw, 1, &v, NULL);
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
