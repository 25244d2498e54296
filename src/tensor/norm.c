/* norm.c: batch_norm, layer_norm and dropout, with their backward passes. Kernels:
 * cl_kernels/norm.cl.
 *
 * A float16 or bfloat16 x (and y, and their gradients) is stored in 16 bits and
 * computed in float32; its statistics, weight, bias, running averages and their
 * gradients are float32, as PyTorch's autocast keeps them. 16-bit weight and bias are
 * widened first (a taped cast: their gradients come back in 16 bits).
 *
 * Each runs as a few kernels each way (they run every training step): batch_norm in
 * training computes statistics per (channel, chunk) of its values, combines them per
 * channel (updating the running averages in place), then normalises elementwise; its
 * backward likewise gives dweight, dbias and dx. Chunks give a GPU many groups however
 * few the channels, and keep every work-item's loops short however long the channel.
 * The normalisations read x as contiguous memory; a non-contiguous x (or gradient) is
 * copied first.
 *
 * dropout keeps no mask: the node records the generator position the forward drew
 * from, and the backward draws the same bits again. */
#include <math.h>
#include <string.h>

#include "tensor_impl.h"

#define PROGRAM "norm"
/* Launch `kernel` with `groups` work-groups, each sized for `n` elements; the last
 * argument (local scratch of one T per work-item) is added here. */
static clg_status launch_groups(clg_device *dev, clg_dtype dtype, const char *kernel, clg_arg *args, int nargs,
                                int64_t groups, int64_t n)
{
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(dtype), kernel);
    if (!k) return dev->status;
    size_t wg = clg__reduce_group(dev, k, n), global = (size_t)groups * wg;
    args[nargs++] = CLG_ARG_LOCAL(wg * clg_dtype_size(clg__compute_dtype(dtype)));
    return clg__launch(dev, k, args, nargs, 1, &global, &wg);
}

static clg_status launch_items(clg_device *dev, clg_dtype dtype, const char *kernel, const clg_arg *args, int nargs,
                               int64_t n)
{
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(dtype), kernel);
    return k ? clg__launch_1d(dev, k, args, nargs, (size_t)n) : dev->status;
}

/* A failed launch: the device's message, prefixed with the op and its input. */
static clg_tensor *launch_fail(const char *op, const clg_tensor *in)
{
    clg_device *dev = in->dev;
    char err[CLG_ERROR_MAX];
    memcpy(err, dev->error, sizeof err);
    return clg__op_fail(dev, dev->status, op, "%s: %.7000s", CLG_DESC(in), err);
}

/* An optional [C] vector as kernel arguments (flag, buffer, offset, stride); `alt`
 * stands in for the buffer when v is absent. */
static int vec_args(clg_arg *a, const clg_tensor *v, const clg_tensor *alt)
{
    a[0] = CLG_ARG_I(v != NULL);
    a[1] = CLG_ARG_B(v ? v->buf : alt->buf);
    a[2] = CLG_ARG_I(v ? v->offset : 0);
    a[3] = CLG_ARG_I(v && v->ndim ? v->strides[0] : 0);
    return 4;
}

/* An optional output as (flag, buffer). */
static int out_args(clg_arg *a, const clg_tensor *v, const clg_tensor *alt)
{
    a[0] = CLG_ARG_I(v != NULL);
    a[1] = CLG_ARG_B(v ? v->buf : alt->buf);
    return 2;
}

/* An optional contiguous input vector v as (has, buffer, element offset). */
static int in_args(clg_arg *a, const clg_tensor *v, const clg_tensor *alt)
{
    a[0] = CLG_ARG_I(v != NULL);
    a[1] = CLG_ARG_B(v ? v->buf : alt->buf);
    a[2] = CLG_ARG_I(v ? v->offset : 0);
    return 3;
}

/* ---- batch_norm ---------------------------------------------------------------------------- */

typedef struct bn_dims { int64_t N, C, S; } bn_dims;

static bn_dims bn_dims_of(const clg_tensor *x)
{
    bn_dims d = {x->shape[0], x->shape[1], 1};
    for (int k = 2; k < x->ndim; k++) d.S *= x->shape[k];
    return d;
}

/* A per-channel or per-feature operand in the dtype of x's statistics. */
static bool check_param_dtype(const char *op, const clg_tensor *x, const clg_tensor *v, const char *name)
{
    if (v->dtype == clg__compute_dtype(x->dtype)) return true;
    return clg__op_fail(x->dev, CLG_ERR_DTYPE, op, "%s %s: want %s for x %s", name, CLG_DESC(v),
                        clg_dtype_name(clg__compute_dtype(x->dtype)), CLG_DESC(x)), false;
}

/* A 16-bit weight or bias of a 16-bit x, widened (taped); otherwise v itself. */
static clg_tensor *widen_param(const clg_tensor *x, clg_tensor *v)
{
    return v && clg__is_half(x->dtype) && v->dtype == x->dtype ? clg_cast(v, CLG_F32) : v;
}

/* A [C] operand of batch_norm: absent, or 1-D of C elements in the statistics' dtype. */
static bool bn_check_vec(const char *op, const clg_tensor *x, const clg_tensor *v, const char *name)
{
    if (!v) return true;
    if (!check_param_dtype(op, x, v, name)) return false;
    if (v->ndim != 1 || v->shape[0] != x->shape[1])
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "%s %s does not match the %lld channels of x %s", name,
                            CLG_DESC(v), (long long)x->shape[1], CLG_DESC(x)), false;
    return true;
}

static bool bn_check(const char *op, const clg_tensor *x, const clg_tensor *rm, const clg_tensor *rv,
                     const clg_tensor *w, const clg_tensor *b, bool training)
{
    if (!clg__check_floating(op, x) || !clg__check_numel(op, x->dev, x->numel)) return false;
    if (x->ndim < 2)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "x must be [N, C] or [N, C, *], got %s", CLG_DESC(x)), false;
    if (!bn_check_vec(op, x, rm, "running_mean") || !bn_check_vec(op, x, rv, "running_var") ||
        !bn_check_vec(op, x, w, "weight") || !bn_check_vec(op, x, b, "bias"))
        return false;
    if (!rm != !rv)
        return clg__op_fail(x->dev, CLG_ERR_INVALID_ARGUMENT, op, "running_mean and running_var go together"), false;
    if (!training && !rm)
        return clg__op_fail(x->dev, CLG_ERR_INVALID_ARGUMENT, op,
                            "evaluation normalises with running_mean and running_var, which are NULL"), false;
    /* They are written in place, off the tape: a tensor on the tape must not change. */
    if (training && rm && clg_grad_enabled(x->dev) && (rm->requires_grad || rv->requires_grad))
        return clg__op_fail(x->dev, CLG_ERR_INVALID_ARGUMENT, op,
                            "the running statistics are updated in place and must not require a gradient"), false;
    bn_dims d = bn_dims_of(x);
    /* The unbiased variance of one value is undefined, as PyTorch refuses. */
    if (training && d.N * d.S <= 1)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "training needs more than 1 value per channel, x is %s",
                            CLG_DESC(x)), false;
    return true;
}

/* How a channel's M values split into chunks (norm.cl, "batch_norm in chunks"): groups
 * of wg work-items, P chunks of L values. Enough (channel, chunk) groups for 4 per
 * compute unit, chunks of at least 4 groups' worth, and none longer than a work-item
 * may walk in two passes (loop and index: 4 trips per wg values, under item_loops), nor
 * more chunks than the combining work-item may loop over. */
typedef struct bn_split { size_t wg; int64_t L, P; } bn_split;

static clg_status bn_split_of(clg_device *dev, clg_kernel *k, bn_dims d, bn_split *out)
{
    int64_t M = d.N * d.S, loops = (int64_t)clg__device_params(dev)->item_loops;
    size_t wg = clg__reduce_group(dev, k, M);
    int64_t cu = clg_device_get_info(dev)->compute_units, want = 4 * (cu > 0 ? cu : 1);
    int64_t per_channel = (want + d.C - 1) / d.C, L = (M + per_channel - 1) / per_channel;
    int64_t lmin = 4 * (int64_t)wg, lmax = loops / 4 * (int64_t)wg;
    if (L < lmin) L = lmin;
    if (L > lmax) L = lmax;
    if (L > M) L = M;
    if ((M + L - 1) / L > loops / 2) {
        L = (M + loops / 2 - 1) / (loops / 2);
        if (L > lmax)
            return clg__fail(dev, CLG_ERR_SHAPE, "%lld values per channel: over what the device's item_loops (%lld) "
                             "allows in chunks", (long long)M, (long long)loops);
    }
    *out = (bn_split){wg, L, (M + L - 1) / L};
    return CLG_OK;
}

static clg_kernel *norm_kernel(clg_device *dev, clg_dtype dtype, const char *name)
{
    return clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(dtype), name);
}

/* Whether the chunks are x's rows of S (bn_row_stats_vec, bn_row_grad_vec): float32
 * and 16-bit x (the same bits) where the table says row_reduce = items, rows of at least 16 values whose two passes
 * (S / 16 steps plus the tail, 2 trips each) stay within item_loops, and few enough rows
 * per channel for the combining work-item's two loops. */
static bool bn_by_rows(const clg_device *dev, clg_dtype dtype, bn_dims d)
{
    const clg_device_params *p = clg__device_params(dev);
    int64_t loops = (int64_t)p->item_loops;
    return clg__compute_dtype(dtype) == CLG_F32 && p->row_items && d.S >= 16 && 4 * (d.S / 16 + 16) <= loops && 2 * d.N <= loops;
}

/* A chunk kernel (bn_part_stats, or bn_part_grad with g and stats, after a ReLU g
 * masked by y > 0 and written to gm; the _vec row kernels where bn_by_rows): a group per
 * (channel, chunk), or a work-item per row, writes its two partial results into *part
 * [C, P, 2], which the caller frees; *sp gets the split. */
static clg_status bn_chunks(clg_tensor *x, const char *kernel, clg_tensor *g, clg_tensor *y, clg_tensor *gm,
                            clg_tensor *stats, bn_split *sp, clg_tensor **part)
{
    clg_device *dev = x->dev;
    bn_dims d = bn_dims_of(x);
    bool rows = bn_by_rows(dev, x->dtype, d);
    const char *name = !rows ? kernel : !g ? "bn_row_stats_vec" : y ? "bn_row_grad_relu_vec" : "bn_row_grad_vec";
    clg_kernel *k = norm_kernel(dev, x->dtype, name);
    clg_status st = !k ? dev->status : rows ? CLG_OK : bn_split_of(dev, k, d, sp);
    if (rows) *sp = (bn_split){1, d.S, d.N};
    clg_dtype pt = clg__compute_dtype(x->dtype);
    *part = st ? NULL : clg__tensor_new(dev, pt, 1, (const int64_t[]){2 * d.C * sp->P});
    if (!*part) return dev->status;
    clg_arg a[14];
    int n = 0;
    a[n++] = CLG_ARG_I(d.N);
    a[n++] = CLG_ARG_I(d.C);
    a[n++] = CLG_ARG_I(d.S);
    if (!rows) {
        a[n++] = CLG_ARG_I(sp->L);
        a[n++] = CLG_ARG_I(sp->P);
    }
    a[n++] = CLG_ARG_B(x->buf);
    if (g) {
        a[n++] = CLG_ARG_B(g->buf);
        a[n++] = CLG_ARG_B(stats->buf);
        if (!rows) a[n++] = CLG_ARG_I(y != NULL);
        if (!rows || y) {   /* the groups' kernel takes them in any case, some buffer where absent */
            a[n++] = CLG_ARG_B((y ? y : x)->buf);
            a[n++] = CLG_ARG_B((y ? gm : x)->buf);
        }
    }
    a[n++] = CLG_ARG_B((*part)->buf);
    if (rows) return clg__launch_1d(dev, k, a, n, (size_t)(d.N * d.C));
    a[n++] = CLG_ARG_LOCAL(sp->wg * clg_dtype_size(pt));
    size_t global[2] = {(size_t)d.C * sp->wg, (size_t)sp->P}, local[2] = {sp->wg, 1};
    return clg__launch(dev, k, a, n, 2, global, local);
}

/* What batch_norm_add_relu applies after the normalisation: z added (NULL: nothing;
 * contiguous at 0 as x), then ReLU where relu. */
typedef struct bn_act {
    clg_tensor *z;
    bool relu;
} bn_act;

/* y = act((x - mean) invstd w + b) from stats, as rows of S. */
static clg_status bn_apply(clg_tensor *x, clg_tensor *y, clg_tensor *stats, clg_tensor *w, clg_tensor *b, bn_act act)
{
    bn_dims d = bn_dims_of(x);
    clg_kernel *k = norm_kernel(x->dev, x->dtype, "bn_apply_rows");
    if (!k) return x->dev->status;
    clg_arg a[16];
    int n = 0;
    a[n++] = CLG_ARG_I(d.C);
    a[n++] = CLG_ARG_I(d.S);
    a[n++] = CLG_ARG_B(x->buf);
    a[n++] = CLG_ARG_B(y->buf);
    a[n++] = CLG_ARG_B(stats->buf);
    n += vec_args(a + n, w, x);
    n += vec_args(a + n, b, x);
    a[n++] = CLG_ARG_I(act.z != NULL);
    a[n++] = CLG_ARG_B((act.z ? act.z : x)->buf);
    a[n++] = CLG_ARG_I(act.relu);
    return clg__launch_rows(x->dev, k, a, n, (size_t)d.S, (size_t)(d.N * d.C));
}

/* The training forward: chunk statistics, their combination (stats, running averages
 * in place), then y. */
static clg_status bn_train(clg_tensor *x, clg_tensor *y, clg_tensor *stats, clg_tensor *rm, clg_tensor *rv,
                           clg_tensor *w, clg_tensor *b, bn_act act, double momentum, double eps)
{
    clg_device *dev = x->dev;
    bn_dims d = bn_dims_of(x);
    clg_kernel *kc = norm_kernel(dev, x->dtype, "bn_combine");
    bn_split sp;
    clg_tensor *part = NULL;
    clg_status st = kc ? bn_chunks(x, "bn_part_stats", NULL, NULL, NULL, NULL, &sp, &part) : dev->status;
    if (!part) return st;
    clg_arg a[24];
    int n = 0;
    a[n++] = CLG_ARG_I(d.N);
    a[n++] = CLG_ARG_I(d.C);
    a[n++] = CLG_ARG_I(d.S);
    a[n++] = CLG_ARG_I(sp.L);
    a[n++] = CLG_ARG_I(sp.P);
    a[n++] = CLG_ARG_B(part->buf);
    a[n++] = CLG_ARG_B(stats->buf);
    n += vec_args(a + n, rm, x);   /* has_run, then running_mean */
    clg_arg rva[4];
    vec_args(rva, rv, x);            /* running_var without a flag of its own */
    for (int k = 1; k < 4; k++) a[n++] = rva[k];
    a[n++] = clg__arg_scalar(x->dtype, momentum);   /* float32 for 16-bit x */
    a[n++] = clg__arg_scalar(x->dtype, eps);
    if (!st) st = clg__launch_1d(dev, kc, a, n, (size_t)d.C);
    clg_tensor_free(part);
    return st ? st : bn_apply(x, y, stats, w, b, act);
}

/* The evaluation forward: stats from the running averages, then y elementwise. */
static clg_status bn_eval(clg_tensor *x, clg_tensor *y, clg_tensor *stats, clg_tensor *rm, clg_tensor *rv,
                          clg_tensor *w, clg_tensor *b, bn_act act, double eps)
{
    bn_dims d = bn_dims_of(x);
    clg_arg s[] = {CLG_ARG_I(d.C), CLG_ARG_B(rm->buf), CLG_ARG_I(rm->offset), CLG_ARG_I(rm->strides[0]),
                   CLG_ARG_B(rv->buf), CLG_ARG_I(rv->offset), CLG_ARG_I(rv->strides[0]),
                   CLG_ARG_B(stats->buf), clg__arg_scalar(x->dtype, eps)};
    clg_status st = launch_items(x->dev, x->dtype, "bn_eval_stats", s, 9, d.C);
    return st ? st : bn_apply(x, y, stats, w, b, act);
}

/* The backward in chunks: sums of g and g xhat per (channel, chunk), per channel dw, db
 * and dx's coefficients, then dx as rows. dx, dw, db: NULL where not wanted. After a
 * ReLU (batch_norm_add_relu) y is its output and g counts where y > 0: the chunks write
 * that masked g to gm (contiguous as x), and dx reads it in g's place. */
static clg_status bn_backward(clg_tensor *x, clg_tensor *g, clg_tensor *y, clg_tensor *gm, clg_tensor *stats,
                              clg_tensor *w, bool training, clg_tensor *dx, clg_tensor *dw, clg_tensor *db)
{
    clg_device *dev = x->dev;
    bn_dims d = bn_dims_of(x);
    clg_kernel *kc = norm_kernel(dev, x->dtype, "bn_grad_combine");
    clg_kernel *kx = dx ? norm_kernel(dev, x->dtype, "bn_dx_rows") : NULL;
    bn_split sp;
    clg_tensor *part = NULL;
    clg_status st = kc && (kx || !dx) ? bn_chunks(x, "bn_part_grad", g, y, gm, stats, &sp, &part) : dev->status;
    if (!part) return st;
    clg_tensor *coef = clg__tensor_new(dev, stats->dtype, 1, (const int64_t[]){3 * d.C});
    if (!coef) {
        clg_tensor_free(part);
        return dev->status;
    }
    clg_arg a[24];
    int n = 0;
    a[n++] = CLG_ARG_I(d.N);
    a[n++] = CLG_ARG_I(d.C);
    a[n++] = CLG_ARG_I(d.S);
    a[n++] = CLG_ARG_I(sp.P);
    a[n++] = CLG_ARG_B(part->buf);
    a[n++] = CLG_ARG_B(stats->buf);
    n += vec_args(a + n, w, x);
    a[n++] = CLG_ARG_I(training);
    n += out_args(a + n, dw, x);
    n += out_args(a + n, db, x);
    a[n++] = CLG_ARG_B(coef->buf);
    if (!st) st = clg__launch_1d(dev, kc, a, n, (size_t)d.C);
    if (!st && dx) {
        clg_arg b[] = {CLG_ARG_I(d.C), CLG_ARG_I(d.S), CLG_ARG_B(x->buf), CLG_ARG_B((y ? gm : g)->buf),
                       CLG_ARG_B(stats->buf), CLG_ARG_B(coef->buf), CLG_ARG_B(dx->buf)};
        st = clg__launch_rows(dev, kx, b, 7, (size_t)d.S, (size_t)(d.N * d.C));
    }
    clg_tensor_free(part);
    clg_tensor_free(coef);
    return st;
}

/* inputs: x, weight, bias (and z, batch_norm_add_relu's); saved: stats [2, C] (mean,
 * invstd), the contiguous x; f[0]: training, f[1]: a ReLU applied (node->out, y, masks g;
 * the masked g is z's gradient as it is). */
static clg_status batch_norm_bw(clg_node *node, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *x = node->saved[1], *stats = node->saved[0], *w = node->inputs[1];
    clg_device *dev = x->dev;
    bn_dims d = bn_dims_of(x);
    bool relu = node->f[1] != 0, want_z = node->ninputs > 3 && clg__wants_grad(node, 3);
    clg_tensor *gc = clg__contiguous_at0(g);
    clg_tensor *dx = clg__wants_grad(node, 0) ? clg__tensor_new(dev, x->dtype, x->ndim, x->shape) : NULL;
    clg_tensor *gm = relu ? clg__tensor_new(dev, x->dtype, x->ndim, x->shape) : NULL;
    clg_dtype pt = clg__compute_dtype(x->dtype);
    clg_tensor *dw = clg__wants_grad(node, 1) ? clg__tensor_new(dev, pt, 1, &d.C) : NULL;
    clg_tensor *db = clg__wants_grad(node, 2) ? clg__tensor_new(dev, pt, 1, &d.C) : NULL;
    clg_status st = dev->status;
    if (gc && (dx || !clg__wants_grad(node, 0)) && (gm || !relu) && (dw || !clg__wants_grad(node, 1)) &&
        (db || !clg__wants_grad(node, 2)))
        st = bn_backward(x, gc, relu ? node->out : NULL, gm, stats, w, node->f[0] != 0, dx, dw, db);
    clg__release_copy(gc, g);
    gin[0] = dx;
    gin[1] = dw;
    gin[2] = db;
    if (node->ninputs > 3) gin[3] = want_z ? gm : NULL;
    if (!want_z) clg_tensor_free(gm);
    return st;
}

/* batch_norm, then act; taped as `op` (batch_norm, or batch_norm_add_relu with z as a
 * fourth input). */
static clg_tensor *batch_norm(clg_tensor *x, clg_tensor *running_mean, clg_tensor *running_var, clg_tensor *weight,
                              clg_tensor *bias, bool training, double momentum, double eps, bn_act act, int op)
{
    if (!bn_check(clg__op_name(op), x, running_mean, running_var, weight, bias, training)) return NULL;
    clg_device *dev = x->dev;
    bn_dims d = bn_dims_of(x);
    clg_tensor *xc = clg__contiguous_at0(x), *z = act.z;
    bn_act a = {z ? clg__contiguous_at0(z) : NULL, act.relu};
    clg_tensor *y = clg__tensor_new(dev, x->dtype, x->ndim, x->shape);
    clg_tensor *stats = clg__tensor_new(dev, clg__compute_dtype(x->dtype), 2, (const int64_t[]){2, d.C});
    clg_status st = xc && y && stats && (a.z || !z) ? CLG_OK : dev->status;
    if (st == CLG_OK && !training) st = bn_eval(xc, y, stats, running_mean, running_var, weight, bias, a, eps);
    else if (st == CLG_OK && x->numel)
        st = bn_train(xc, y, stats, running_mean, running_var, weight, bias, a, momentum, eps);
    if (st == CLG_OK && training && running_mean) {   /* updated in place */
        clg__tensor_written(running_mean);
        clg__tensor_written(running_var);
    }
    clg_node *node = NULL;
    if (st == CLG_OK)
        y = clg__taped(y, op, batch_norm_bw, op == CLG_OP_batch_norm ? 3 : 4,
                       (clg_tensor *const[]){x, weight, bias, z}, &node);
    if (node) {
        clg__node_save(node, 0, stats);
        clg__node_save(node, 1, xc);
        node->f[0] = training;
        node->f[1] = act.relu;
    }
    clg_tensor_free(stats);   /* the node, if any, holds what it needs */
    clg__release_copy(xc, x);
    if (z) clg__release_copy(a.z, z);
    if (st != CLG_OK) {
        clg_tensor_free(y);
        return launch_fail(clg__op_name(op), x);
    }
    return y;
}

/* batch_norm's op with its 16-bit weight and bias widened. */
static clg_tensor *batch_norm_widened(clg_tensor *x, clg_tensor *running_mean, clg_tensor *running_var,
                                      clg_tensor *weight, clg_tensor *bias, bool training, double momentum,
                                      double eps, bn_act act, int op)
{
    clg_tensor *w = widen_param(x, weight), *b = widen_param(x, bias);
    clg_tensor *y = (w || !weight) && (b || !bias)
                        ? batch_norm(x, running_mean, running_var, w, b, training, momentum, eps, act, op)
                        : NULL;
    clg__drop_cast(w, weight);
    clg__drop_cast(b, bias);
    return y;
}

clg_tensor *clg_batch_norm(clg_tensor *x, clg_tensor *running_mean, clg_tensor *running_var, clg_tensor *weight,
                           clg_tensor *bias, bool training, double momentum, double eps)
{
    if (!x) return NULL;
    return batch_norm_widened(x, running_mean, running_var, weight, bias, training, momentum, eps,
                              (bn_act){NULL, false}, CLG_OP_batch_norm);
}

clg_tensor *clg_batch_norm_add_relu(clg_tensor *x, clg_tensor *z, clg_tensor *running_mean, clg_tensor *running_var,
                                    clg_tensor *weight, clg_tensor *bias, bool training, double momentum, double eps)
{
    if (!x) return NULL;
    const char *op = "batch_norm_add_relu";
    if (z && (z->dtype != x->dtype || z->ndim != x->ndim ||
              memcmp(z->shape, x->shape, (size_t)x->ndim * sizeof *x->shape)))
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "z %s must have the shape and dtype of x %s", CLG_DESC(z),
                            CLG_DESC(x));
    return batch_norm_widened(x, running_mean, running_var, weight, bias, training, momentum, eps,
                              (bn_act){z, true}, CLG_OP_batch_norm_add_relu);
}

/* ---- layer_norm ---------------------------------------------------------------------------- */

static bool ln_check_vec(const clg_tensor *x, int naxes, const clg_tensor *v, const char *name)
{
    const char *op = "layer_norm";
    if (!v) return true;
    if (!check_param_dtype(op, x, v, name)) return false;
    bool ok = v->ndim == naxes;
    for (int k = 0; ok && k < naxes; k++) ok = v->shape[k] == x->shape[x->ndim - naxes + k];
    if (!ok)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "%s %s does not match the last %d axes of x %s", name,
                            CLG_DESC(v), naxes, CLG_DESC(x)), false;
    return true;
}

/* dw and db (either may be NULL) of layer norm's backward: the rows in chunks of L, no
 * longer than item_loops, and halved while they leave fewer than 1,024 work-items; then
 * the chunks' sums per feature. In float32 with D a multiple of 16, where items are SIMD
 * threads, 16 features an item (ln_bwd_wb_vec), chunks down to 16 rows. */
static clg_status ln_weight_grads(clg_tensor *x, clg_tensor *gc, clg_tensor *stats, int64_t rows, int64_t D,
                                  clg_tensor *dw, clg_tensor *db)
{
    clg_device *dev = x->dev;
    if (D == 0) return CLG_OK;
    bool vec = x->dtype == CLG_F32 && D % 16 == 0 && clg__device_params(dev)->row_items;
    int64_t cap = (int64_t)clg__device_params(dev)->item_loops, L = cap, chunks, per = vec ? D / 16 : D;
    while (L > (vec ? 16 : 64) && per * ((rows + L - 1) / L) < 1024) L /= 2;
    chunks = rows ? (rows + L - 1) / L : 1;
    if (chunks > cap)
        return clg__fail(dev, CLG_ERR_SHAPE, "clg_layer_norm: %lld rows: over the device's item_loops (%lld) squared",
                         (long long)rows, (long long)cap);
    clg_dtype ct = clg__compute_dtype(x->dtype);
    clg_tensor *pw = clg__tensor_new(dev, ct, 2, (int64_t[]){chunks, D});
    clg_tensor *pb = pw ? clg__tensor_new(dev, ct, 2, (int64_t[]){chunks, D}) : NULL;
    clg_kernel *k1 =
        pb ? clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(x->dtype), vec ? "ln_bwd_wb_vec" : "ln_bwd_wb") : NULL;
    clg_kernel *k2 = k1 ? clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(x->dtype), "ln_bwd_wb_sum") : NULL;
    clg_status st = k2 ? CLG_OK : dev->status;
    if (!st && rows == 0) st = clg_fill_(pw, 0.0) || clg_fill_(pb, 0.0) ? dev->status : CLG_OK;
    if (!st && rows > 0) {
        clg_arg a[] = {CLG_ARG_I(rows), CLG_ARG_I(D), CLG_ARG_I(L), CLG_ARG_B(x->buf), CLG_ARG_B(gc->buf),
                       CLG_ARG_B(stats->buf), CLG_ARG_B(pw->buf), CLG_ARG_B(pb->buf)};
        st = vec ? clg__launch_1d(dev, k1, a, 8, (size_t)(per * chunks))
                 : clg__launch_rows(dev, k1, a, 8, (size_t)D, (size_t)chunks);
    }
    if (!st) {
        clg_arg b[8] = {CLG_ARG_I(chunks), CLG_ARG_I(D), CLG_ARG_B(pw->buf), CLG_ARG_B(pb->buf)};
        int n = 4 + out_args(b + 4, dw, x);
        n += out_args(b + n, db, x);
        st = clg__launch_1d(dev, k2, b, n, (size_t)D);
    }
    clg_tensor_free(pw), clg_tensor_free(pb);
    return st;
}

/* Whether layer_norm over rows of D runs a work-item per row in vectors (ln_fwd_vec,
 * ln_bwd_x_vec): float32 where the table says row_reduce = items, and the row's 3 passes
 * of D / 16 steps plus the tails (2 trips each) within item_loops. */
static bool ln_by_vector(const clg_device *dev, clg_dtype dtype, int64_t D)
{
    const clg_device_params *p = clg__device_params(dev);
    return dtype == CLG_F32 && p->row_items && 6 * (D / 16 + 16) <= (int64_t)p->item_loops;
}

/* inputs: x, weight, bias; saved: stats [rows, 2], the contiguous x, the contiguous weight. */
static clg_status layer_norm_bw(clg_node *node, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *x = node->saved[1], *stats = node->saved[0], *w = node->saved[2];
    clg_device *dev = x->dev;
    int64_t D = node->i[0], rows = node->i[1];
    clg_tensor *gc = clg__contiguous_at0(g);
    clg_status st = gc ? CLG_OK : dev->status;
    if (st == CLG_OK && clg__wants_grad(node, 0)) {
        clg_tensor *dx = clg__tensor_new(dev, x->dtype, x->ndim, x->shape);
        clg_arg a[12] = {CLG_ARG_I(D), CLG_ARG_B(x->buf), CLG_ARG_B(gc->buf), CLG_ARG_B(stats->buf)};
        int n = 4 + in_args(a + 4, w, x);
        if (dx) a[n++] = CLG_ARG_B(dx->buf);
        if (!dx) st = dev->status;
        else if (rows > 0 && D > 0 && ln_by_vector(dev, x->dtype, D))
            st = launch_items(dev, x->dtype, "ln_bwd_x_vec", a, n, rows);
        else if (rows > 0 && D > 0) st = launch_groups(dev, x->dtype, "ln_bwd_x", a, n, rows, D);
        gin[0] = dx;
    }
    clg_tensor *pv = node->inputs[1] ? node->inputs[1] : node->inputs[2];   /* the parameters' shape */
    if (st == CLG_OK && pv) {
        clg_tensor *dw = clg__wants_grad(node, 1) ? clg__tensor_new(dev, pv->dtype, pv->ndim, pv->shape) : NULL;
        clg_tensor *db = clg__wants_grad(node, 2) ? clg__tensor_new(dev, pv->dtype, pv->ndim, pv->shape) : NULL;
        if ((clg__wants_grad(node, 1) && !dw) || (clg__wants_grad(node, 2) && !db)) st = dev->status;
        else if (dw || db) st = ln_weight_grads(x, gc, stats, rows, D, dw, db);
        gin[1] = dw;
        gin[2] = db;
    }
    clg__release_copy(gc, g);
    return st;
}

/* y and stats of contiguous x as [rows, D]. */
static clg_status ln_forward(clg_tensor *xc, clg_tensor *y, clg_tensor *stats, clg_tensor *wc, clg_tensor *bc,
                             int64_t rows, int64_t D, double eps)
{
    clg_arg a[14] = {CLG_ARG_I(D), CLG_ARG_B(xc->buf), CLG_ARG_B(y->buf), CLG_ARG_B(stats->buf)};
    int n = 4 + in_args(a + 4, wc, xc);
    n += in_args(a + n, bc, xc);
    a[n++] = clg__arg_scalar(xc->dtype, eps);
    if (rows <= 0 || D <= 0) return CLG_OK;
    if (ln_by_vector(xc->dev, xc->dtype, D)) return launch_items(xc->dev, xc->dtype, "ln_fwd_vec", a, n, rows);
    return launch_groups(xc->dev, xc->dtype, "ln_fwd", a, n, rows, D);
}

/* Whether one work-group per row walks more than item_loops: the forward makes 3 passes
 * over the D normalised values, wg at a time (2 steps each, as batch norm's). */
static bool ln_too_long(clg_tensor *x, int naxes)
{
    int64_t D = 1;
    for (int k = x->ndim - naxes; k < x->ndim; k++) D *= x->shape[k];
    if (ln_by_vector(x->dev, x->dtype, D)) return false;
    clg_kernel *k = clg__kernel_get(x->dev, PROGRAM, clg__dtype_options_ew(x->dtype), "ln_fwd");
    if (!k) return false;   /* the launch reports the build error */
    int64_t wg = (int64_t)clg__reduce_group(x->dev, k, D);
    return 6 * ((D + wg - 1) / wg) > (int64_t)clg__device_params(x->dev)->item_loops;
}

/* Rows too long for that: mean and variance from reductions (which split long sums),
 * the rest elementwise, on the tape; in float32 for 16-bit x. */
static clg_tensor *ln_composed(clg_tensor *x, int naxes, clg_tensor *weight, clg_tensor *bias, double eps)
{
    int axes[CLG_MAX_DIMS];
    for (int k = 0; k < naxes; k++) axes[k] = x->ndim - naxes + k;
    clg_tensor *xf = clg__is_half(x->dtype) ? clg_cast(x, CLG_F32) : x;
    clg_tensor *d = clg_sub(xf, clg_mean(xf, naxes, axes, true));
    clg_tensor *y = clg_mul(d, clg_rsqrt(clg_add_scalar(clg_mean(clg_mul(d, d), naxes, axes, true), eps)));
    if (weight) y = clg_mul(y, weight->dtype == y->dtype ? weight : clg_cast(weight, y->dtype));
    if (bias) y = clg_add(y, bias->dtype == y->dtype ? bias : clg_cast(bias, y->dtype));
    return y && xf != x ? clg_cast(y, x->dtype) : y;
}

static clg_tensor *layer_norm(clg_tensor *x, int naxes, clg_tensor *weight, clg_tensor *bias, double eps)
{
    const char *op = "layer_norm";
    if (!clg__check_floating(op, x) || !clg__check_numel(op, x->dev, x->numel)) return NULL;
    if (naxes < 1 || naxes > x->ndim)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "cannot normalise over the last %d axes of %s", naxes,
                            CLG_DESC(x));
    if (!ln_check_vec(x, naxes, weight, "weight") || !ln_check_vec(x, naxes, bias, "bias")) return NULL;
    if (x->numel && ln_too_long(x, naxes)) return ln_composed(x, naxes, weight, bias, eps);
    clg_device *dev = x->dev;
    int64_t D = 1, rows = 1;
    for (int k = 0; k < x->ndim; k++) *(k < x->ndim - naxes ? &rows : &D) *= x->shape[k];
    /* the kernels read the weight and bias from their offsets (an optimizer's arena too) */
    clg_tensor *xc = clg__contiguous_at0(x), *wc = clg__contiguous(weight), *bc = clg__contiguous(bias);
    clg_tensor *y = clg__tensor_new(dev, x->dtype, x->ndim, x->shape);
    clg_tensor *stats = clg__tensor_new(dev, clg__compute_dtype(x->dtype), 2, (const int64_t[]){rows, 2});
    bool made = xc && y && stats && (wc || !weight) && (bc || !bias);
    clg_status st = made ? ln_forward(xc, y, stats, wc, bc, rows, D, eps) : dev->status;
    clg_node *node = NULL;
    if (st == CLG_OK)
        y = clg__taped(y, CLG_OP_layer_norm, layer_norm_bw, 3, (clg_tensor *const[]){x, weight, bias}, &node);
    if (node) {
        clg__node_save(node, 0, stats);
        clg__node_save(node, 1, xc);
        if (wc) clg__node_save(node, 2, wc);
        node->i[0] = D;
        node->i[1] = rows;
    }
    clg_tensor_free(stats);
    clg__release_copy(xc, x);
    clg__release_copy(wc, weight);
    clg__release_copy(bc, bias);
    if (st != CLG_OK) {
        clg_tensor_free(y);
        return launch_fail(op, x);
    }
    return y;
}

clg_tensor *clg_layer_norm(clg_tensor *x, int naxes, clg_tensor *weight, clg_tensor *bias, double eps)
{
    if (!x) return NULL;
    clg_tensor *w = widen_param(x, weight), *b = widen_param(x, bias);
    clg_tensor *y = (w || !weight) && (b || !bias) ? layer_norm(x, naxes, w, b, eps) : NULL;
    clg__drop_cast(w, weight);
    clg__drop_cast(b, bias);
    return y;
}

/* ---- dropout --------------------------------------------------------------------------------- */

/* Launch a dropout kernel over the iteration (flat or strided, as clg__iter_launch
 * picks) with one work-item per Philox block of four elements. */
static clg_status dropout_launch(clg_device *dev, clg_dtype dtype, const clg_iter *it, const clg_arg *extra)
{
    if (it->numel == 0) return CLG_OK;
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(dtype), it->flat ? "dropout_flat"
                                                                                      : "dropout_strided");
    if (!k) return dev->status;
    clg_arg a[3 + 3 * 2 + 3];
    int n = 0;
    a[n++] = CLG_ARG_I(it->numel);
    if (!it->flat) {
        a[n++] = CLG_ARG_I(it->ndim);
        a[n++] = clg__arg_int8(it->shape, it->ndim);
    }
    for (int i = 0; i < 2; i++) {
        a[n++] = CLG_ARG_B(it->buf[i]);
        a[n++] = CLG_ARG_I(it->offset[i]);
        if (!it->flat) a[n++] = clg__arg_int8(it->strides[i], it->ndim);
    }
    for (int i = 0; i < 3; i++) a[n++] = extra[i];
    return clg__launch_1d(dev, k, a, n, (size_t)((it->numel + 3) / 4));
}

/* Apply the mask drawn at generator position `at` (the forward: CLG_ARG_RNG_DRAW, which
 * takes the position into *pos; the backward: CLG_ARG_RNG_AT the forward's) to src,
 * scaled, into a new tensor of src's shape. A graph replay draws the forward anew and
 * the backward at the forward's position then. */
static clg_tensor *dropout_apply(clg_tensor *src, double p, clg_arg at)
{
    clg_tensor *y = clg__tensor_new(src->dev, src->dtype, src->ndim, src->shape);
    if (!y) return NULL;
    /* keep where a 24-bit uniform (word >> 8) >= ceil(p 2^24); p == 1 keeps nothing. */
    uint32_t thr = (uint32_t)ceil(p * 16777216.0);
    double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
    clg_iter it;
    clg__iter_init(&it, 2, (clg_tensor *const[]){y, src});
    clg_arg a[3] = {at, CLG_ARG_I(thr), clg__arg_scalar(src->dtype, scale)};
    if (dropout_launch(src->dev, src->dtype, &it, a) != CLG_OK) {
        clg_tensor_free(y);
        return launch_fail("dropout", src);
    }
    return y;
}

/* f[0]: p (0 for the identity); i[0], i[1]: the generator position the forward drew at;
 * i[2]: the capture's registers holding it at replay (-1 outside a capture), which the
 * recording layer checks inside one. */
static clg_status dropout_bw(clg_node *node, clg_tensor *g, clg_tensor **gin)
{
    if (node->f[0] == 0) {
        gin[0] = g;
        return CLG_OK;
    }
    clg_rng_pos pos = {(uint64_t)node->i[0], (uint64_t)node->i[1], (int)node->i[2]};
    gin[0] = dropout_apply(g, node->f[0], CLG_ARG_RNG_AT(&pos));
    return gin[0] ? CLG_OK : g->dev->status;
}

clg_tensor *clg_dropout(clg_tensor *x, double p, bool training)
{
    if (!x) return NULL;
    if (!clg__check_floating("dropout", x)) return NULL;
    if (!(p >= 0 && p <= 1))
        return clg__op_fail(x->dev, CLG_ERR_INVALID_ARGUMENT, "dropout", "p = %g is not a probability (x %s)", p,
                            CLG_DESC(x));
    clg_node *node = NULL;
    if (!training || p == 0) {   /* the identity: a view of x, on the tape so gradients flow */
        clg_tensor *v = clg__tensor_view(x, x->ndim, x->shape, x->strides, x->offset);
        return clg__taped(v, CLG_OP_dropout, dropout_bw, 1, &x, NULL);
    }
    if (!clg__check_numel("dropout", x->dev, x->numel)) return NULL;
    uint64_t blocks = ((uint64_t)x->numel + 3) / 4;   /* four numbers per Philox block */
    clg_rng_pos pos = {0, 0, -1};
    clg_tensor *y = dropout_apply(x, p, CLG_ARG_RNG_DRAW(&pos, blocks));
    if (!y) return NULL;
    y = clg__taped(y, CLG_OP_dropout, dropout_bw, 1, &x, &node);
    if (node) {
        node->f[0] = p;
        node->i[0] = (int64_t)pos.seed;
        node->i[1] = (int64_t)pos.offset;
        node->i[2] = pos.reg;
    }
    return y;
}
