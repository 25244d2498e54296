/* conv_more.c: the layers built on conv2d and the other ops: conv1d (a conv2d of height
 * 1), conv_transpose2d (conv2d's input gradient as a forward, conv.h), the nearest and
 * bilinear upsampling (index_select and weights), and group_norm (layer_norm over the
 * groups, then a per-channel affine). Only conv_transpose2d has a backward of its own;
 * the others' gradients come from the ops they are made of. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conv.h"

/* ---- conv1d ---------------------------------------------------------------------------------------- */

clg_tensor *clg_conv1d(clg_tensor *x, clg_tensor *w, clg_tensor *b, const clg_conv1d_params *p)
{
    if (!x || !w) return NULL;
    if (x->ndim != 3 || w->ndim != 3)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, "conv1d", "want x [N, C, L], weight [O, C/groups, k]: x %s, weight %s",
                            CLG_DESC(x), CLG_DESC(w));
    clg_conv1d_params d = p ? *p : (clg_conv1d_params){0};
    clg_conv2d_params p2 = {{1, d.stride}, {0, d.padding}, {1, d.dilation}, d.groups};
    return clg_squeeze(clg_conv2d(clg_unsqueeze(x, 2), clg_unsqueeze(w, 2), b, &p2), 2);
}

/* ---- conv_transpose2d ------------------------------------------------------------------------------------ */

/* The geometry of the conv2d whose input gradient this is: input [N, Cout, outH, outW],
 * weight w as [O = Cin, Cout/G, kh, kw], output x's [N, Cin, H, W]. */
static conv_geo transpose_geo(const clg_tensor *x, const clg_tensor *w, const int64_t *v, int64_t oh, int64_t ow)
{
    return (conv_geo){x->shape[0], w->shape[1] * v[6], oh, ow, w->shape[0], w->shape[2], w->shape[3], v[6],
                      x->shape[2], x->shape[3], v[0], v[1], v[2], v[3], v[4], v[5]};
}

static clg_status conv_transpose2d_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *x = n->inputs[0], *w = n->inputs[1];
    conv_geo geo = transpose_geo(x, w, n->i, n->i[7], n->i[8]);
    clg_tensor *gy = clg_contiguous(g);
    if (!gy) return g->dev->status;
    if (clg__wants_grad(n, 0) && !(gin[0] = clg__conv_forward(gy, w, NULL, &geo, CLG_CONV_GEMM, NULL)))
        return g->dev->status;
    if (clg__wants_grad(n, 1)) {
        clg_tensor *xc = clg_contiguous(x);
        if (!xc || !(gin[1] = clg__conv_grad_weight(gy, w, xc, &geo, NULL, NULL))) return g->dev->status;
    }
    return CLG_OK;
}

static int or_one(int v) { return v ? v : 1; }

static clg_tensor *conv_transpose2d(clg_tensor *x, clg_tensor *w, clg_tensor *b, const clg_conv_transpose2d_params *p)
{
    static const char op[] = "conv_transpose2d";
    if (!clg__check_same_device(op, x, w) || !clg__check_floating(op, x) || !clg__check_same_dtype(op, x, w)) return NULL;
    clg_conv_transpose2d_params d = p ? *p : (clg_conv_transpose2d_params){0};
    int64_t G = or_one(d.groups), v[7] = {or_one(d.stride[0]), or_one(d.stride[1]), d.padding[0], d.padding[1],
                                          or_one(d.dilation[0]), or_one(d.dilation[1]), G};
    if (x->ndim != 4 || w->ndim != 4 || w->shape[0] != x->shape[1] || x->shape[1] % G || G < 1)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "want x [N, C, H, W], weight [C, Cout/groups, kh, kw], C "
                            "divisible by groups %lld: x %s, weight %s", (long long)G, CLG_DESC(x), CLG_DESC(w));
    int64_t out[2];
    for (int a = 0; a < 2; a++) {
        int64_t s = v[a], pd = v[2 + a], dl = v[4 + a], op_ = d.output_padding[a];
        out[a] = (x->shape[2 + a] - 1) * s - 2 * pd + dl * (w->shape[2 + a] - 1) + op_ + 1;
        if (s < 1 || pd < 0 || dl < 1 || op_ < 0 || (op_ >= s && op_ >= dl) || out[a] < 1)
            return clg__op_fail(x->dev, CLG_ERR_INVALID_ARGUMENT, op, "x %s, weight %s: stride %lld, padding %lld, "
                                "output_padding %lld, dilation %lld along axis %d give an output of %lld",
                                CLG_DESC(x), CLG_DESC(w), (long long)s, (long long)pd, (long long)op_, (long long)dl,
                                2 + a, (long long)out[a]);
    }
    conv_geo geo = transpose_geo(x, w, v, out[0], out[1]);
    if (!clg__check_numel(op, x->dev, geo.N * geo.C * geo.H * geo.W) ||
        !clg__check_numel(op, x->dev, geo.N * geo.C * geo.KH * geo.KW * geo.OH * geo.OW))
        return NULL;
    clg_tensor *xc = clg_tensor_is_contiguous(x) ? x : clg__copy_as(x, x->dtype);
    clg_tensor *y = xc ? clg__conv_grad_input(w, xc, &geo) : NULL;
    if (xc != x) clg_tensor_free(xc);
    if (!y) return clg__op_fail(x->dev, x->dev->status, op, "x %s, weight %s: %.7000s", CLG_DESC(x), CLG_DESC(w),
                                x->dev->error);
    clg_node *node = NULL;
    y = clg__taped(y, CLG_OP_conv_transpose2d, conv_transpose2d_bw, 2, (clg_tensor *const[]){x, w}, &node);
    if (node) {
        memcpy(node->i, v, sizeof v);
        node->i[7] = out[0];
        node->i[8] = out[1];
    }
    if (!b || !y) return y;
    if (b->ndim != 1 || b->shape[0] != geo.C)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "bias %s: want [%lld]", CLG_DESC(b), (long long)geo.C);
    return clg_add(y, clg_reshape(b, CLG_SHAPE(1, geo.C, 1, 1)));
}

clg_tensor *clg_conv_transpose2d(clg_tensor *x, clg_tensor *w, clg_tensor *b, const clg_conv_transpose2d_params *p)
{
    if (!x || !w) return NULL;
    clg_tensor *x16 = clg__autocast(x), *w16 = x16 ? clg__autocast(w) : NULL, *b16 = w16 ? clg__autocast(b) : NULL;
    clg_tensor *y = w16 && (b16 || !b) ? conv_transpose2d(x16, w16, b16, p) : NULL;
    clg__drop_cast(x16, x);
    clg__drop_cast(w16, w);
    clg__drop_cast(b16, b);
    return y;
}

/* ---- upsampling ------------------------------------------------------------------------------------- */

static clg_tensor *host_index(clg_device *dev, const int32_t *v, int64_t n)
{
    return clg_tensor_from_host(dev, CLG_I32, 1, &n, v);
}

static bool check_upsample(const char *op, clg_tensor *x, int64_t oh, int64_t ow)
{
    if (x->ndim == 4 && oh > 0 && ow > 0 && oh <= INT32_MAX && ow <= INT32_MAX &&
        (x->shape[2] > 0 || !oh) && (x->shape[3] > 0 || !ow))
        return true;
    clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "want x [N, C, H, W] (H, W > 0) and an output size above 0: x %s, %lld x %lld",
                 CLG_DESC(x), (long long)oh, (long long)ow);
    return false;
}

/* Nearest, as torch's 'nearest': output j reads input floor(j * in / out). Whole
 * scales (the usual 2x) are views: [N, C, H, 1, W, 1] expanded and copied, no index
 * tensor to upload; other sizes pick rows and columns by host-made indices. */
clg_tensor *clg_upsample_nearest2d(clg_tensor *x, int64_t oh, int64_t ow)
{
    if (!x || !check_upsample("upsample_nearest2d", x, oh, ow)) return NULL;
    int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    if (H && W && oh % H == 0 && ow % W == 0) {
        clg_tensor *v = clg_reshape(x, CLG_SHAPE(N, C, H, 1, W, 1));
        clg_tensor *e = clg_expand(v, CLG_SHAPE(N, C, H, oh / H, W, ow / W));
        return clg_reshape(e, CLG_SHAPE(N, C, oh, ow));
    }
    clg_tensor *y = x;
    for (int a = 0; a < 2 && y; a++) {
        int64_t in = x->shape[2 + a], out = a ? ow : oh;
        int32_t *idx = malloc((size_t)out * sizeof *idx);
        if (!idx) return clg__op_fail(x->dev, CLG_ERR_OUT_OF_MEMORY, "upsample_nearest2d", "out of host memory");
        for (int64_t j = 0; j < out; j++) idx[j] = (int32_t)(j * in / out);
        clg_tensor *t = host_index(x->dev, idx, out);
        free(idx);
        y = t ? clg_index_select(y, 2 + a, t) : NULL;
    }
    return y;
}

clg_tensor *clg_upsample_bilinear2d(clg_tensor *x, int64_t oh, int64_t ow)
{
    return clg_upsample_bilinear2d_ex(x, oh, ow, false);
}

/* Where output j of an axis of `in` values samples the input, as torch's bilinear: with
 * align_corners false (the default) at (j + 0.5) * in / out - 0.5, clamped at 0; with it
 * true at j * (in - 1) / (out - 1) (the corners' pixels on the corners; 0 for one
 * output); between neighbours i0[j] and i1[j] by lam[j]. */
static void bilinear_axis(int64_t in, int64_t out, bool align_corners, int32_t *i0, int32_t *i1, double *lam)
{
    for (int64_t j = 0; j < out; j++) {
        double src = align_corners ? (out > 1 ? (double)j * (double)(in - 1) / (double)(out - 1) : 0)
                                   : ((double)j + 0.5) * (double)in / (double)out - 0.5;
        if (src < 0) src = 0;
        int64_t lo = (int64_t)src;
        if (lo > in - 1) lo = in - 1;
        i0[j] = (int32_t)lo;
        i1[j] = (int32_t)(lo + 1 < in ? lo + 1 : in - 1);
        lam[j] = src - (double)lo;
    }
}

/* r[i] = the first output whose index in idx (non-decreasing) is i or more, for i in
 * [0, in]; returns the longest run of outputs on one input. */
static int64_t bilinear_runs(const int32_t *idx, int64_t out, int64_t in, int32_t *r)
{
    int64_t j = 0, longest = 0;
    for (int64_t i = 0; i <= in; i++) {
        while (j < out && idx[j] < i) j++;
        r[i] = (int32_t)j;
        if (i > 0 && r[i] - r[i - 1] > longest) longest = r[i] - r[i - 1];
    }
    return longest;
}

/* The weights as a tensor of x's dtype (float32 made on the host: a device without
 * float64 has no float64 tensors). */
static clg_tensor *weights_of(clg_tensor *x, int ndim, const int64_t *shape, const double *lam, int64_t n)
{
    if (x->dtype == CLG_F64) return clg_tensor_from_host(x->dev, CLG_F64, ndim, shape, lam);
    float *f = malloc((size_t)n * sizeof *f);
    if (!f) return clg__op_fail(x->dev, CLG_ERR_OUT_OF_MEMORY, "upsample_bilinear2d", "out of host memory");
    for (int64_t j = 0; j < n; j++) f[j] = (float)lam[j];
    clg_tensor *t = clg_tensor_from_host(x->dev, CLG_F32, ndim, shape, f);
    free(f);
    return t;
}

/* The composed form (index_select, sub, mul, add per axis): for runs longer than a
 * work-item may walk (item_loops), where the kernels' backward would loop too long. */
static clg_tensor *bilinear_composed(clg_tensor *x, const int32_t *idx, const double *lam, int64_t oh, int64_t ow)
{
    clg_tensor *y = x;
    const int32_t *i0s[2] = {idx, idx + 2 * oh}, *i1s[2] = {idx + oh, idx + 2 * oh + ow};
    const double *ls[2] = {lam, lam + oh};
    for (int a = 0; a < 2 && y; a++) {
        int64_t out = a ? ow : oh, wshape[4] = {1, 1, 1, 1};
        wshape[2 + a] = out;
        clg_tensor *t0 = host_index(x->dev, i0s[a], out), *t1 = host_index(x->dev, i1s[a], out);
        clg_tensor *lw = weights_of(x, 4, wshape, ls[a], out);
        clg_tensor *lo = t0 ? clg_index_select(y, 2 + a, t0) : NULL, *hi = t1 ? clg_index_select(y, 2 + a, t1) : NULL;
        y = lw ? clg_add(lo, clg_mul(clg_sub(hi, lo), lw)) : NULL;   /* lo + (hi - lo) * lambda */
    }
    return y;
}

static clg_arg bilinear_geo(const int64_t *v5)
{
    const int64_t v[8] = {v5[0], v5[1], v5[2], v5[3], v5[4], 0, 0, 0};
    return clg__arg_int8(v, 8);
}

/* saved: the index table and the weights (conv.cl "bilinear upsampling"); i: C, H, W, OH, OW */
static clg_status bilinear_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *x = n->inputs[0], *tb = n->saved[0], *lam = n->saved[1];
    clg_device *dev = x->dev;
    int64_t NC = x->shape[0] * n->i[0], H = n->i[1], W = n->i[2], OH = n->i[3];
    clg_tensor *gc = clg_tensor_is_contiguous(g) && g->offset == 0 ? g : clg__copy_as(g, g->dtype);
    clg_tensor *t = gc ? clg__tensor_new(dev, x->dtype, 3, (const int64_t[]){NC, OH, W}) : NULL;
    clg_tensor *dx = t ? clg__tensor_new(dev, x->dtype, 4, x->shape) : NULL;
    clg_status st = dx ? CLG_OK : dev->status;
    if (st == CLG_OK) {
        clg_arg a[] = {CLG_ARG_B(gc->buf), bilinear_geo(n->i), CLG_ARG_B(tb->buf), CLG_ARG_B(lam->buf),
                       CLG_ARG_B(t->buf)};
        st = clg__conv_launch_grid(dev, x->dtype, "upsample_bilinear_bw_w", a, 5, (const int64_t[]){W, OH, NC});
    }
    if (st == CLG_OK) {
        clg_arg a[] = {CLG_ARG_B(t->buf), bilinear_geo(n->i), CLG_ARG_B(tb->buf), CLG_ARG_B(lam->buf),
                       CLG_ARG_B(dx->buf)};
        st = clg__conv_launch_grid(dev, x->dtype, "upsample_bilinear_bw_h", a, 5, (const int64_t[]){W, H, NC});
    }
    if (gc != g) clg_tensor_free(gc);
    clg_tensor_free(t);
    if (st == CLG_OK) gin[0] = dx;
    else clg_tensor_free(dx);
    return st;
}

/* y from the tables by one kernel (conv.cl upsample_bilinear), on the tape with its
 * own backward (two passes, one per axis, each a gather over runs of outputs). */
static clg_tensor *bilinear_kernel(clg_tensor *x, const int32_t *idx, int64_t nidx, const double *lam, int64_t oh,
                                   int64_t ow)
{
    clg_device *dev = x->dev;
    int64_t C = x->shape[1], NC = x->shape[0] * C, nl = oh + ow;
    clg_tensor *tb = host_index(dev, idx, nidx);
    clg_tensor *lt = tb ? weights_of(x, 1, &nl, lam, nl) : NULL;
    clg_tensor *y = lt ? clg__tensor_new(dev, x->dtype, 4, (const int64_t[]){x->shape[0], C, oh, ow}) : NULL;
    int64_t geo[5] = {C, x->shape[2], x->shape[3], oh, ow};
    clg_status st = y ? CLG_OK : dev->status;
    if (st == CLG_OK) {
        clg_arg a[] = {CLG_ARG_B(x->buf), CLG_ARG_I(x->offset), clg__arg_int8(x->strides, 4), bilinear_geo(geo),
                       CLG_ARG_B(tb->buf), CLG_ARG_B(lt->buf), CLG_ARG_B(y->buf)};
        st = clg__conv_launch_grid(dev, x->dtype, "upsample_bilinear", a, 7, (const int64_t[]){ow, oh, NC});
    }
    if (st != CLG_OK) {
        clg_tensor_free(tb), clg_tensor_free(lt), clg_tensor_free(y);
        return clg__op_fail(dev, dev->status, "upsample_bilinear2d", "x %s: %.7000s", CLG_DESC(x), dev->error);
    }
    clg_node *node = NULL;
    y = clg__taped(y, CLG_OP_upsample_bilinear2d, bilinear_bw, 1, &x, &node);
    if (node) {
        memcpy(node->i, geo, sizeof geo);
        clg__node_save(node, 0, tb);
        clg__node_save(node, 1, lt);
    }
    clg_tensor_free(tb);
    clg_tensor_free(lt);
    return y;
}

/* Bilinear, as torch's (bilinear_axis). The tables are made here, once per call: the
 * kernels' when every index fits an int and no input row or column is met by more
 * outputs than a work-item may walk, else the composed form. */
clg_tensor *clg_upsample_bilinear2d_ex(clg_tensor *x, int64_t oh, int64_t ow, bool align_corners)
{
    static const char op[] = "upsample_bilinear2d";
    if (!x || !check_upsample(op, x, oh, ow) || !clg__check_float(op, x)) return NULL;
    int64_t H = x->shape[2], W = x->shape[3], nidx = 2 * oh + 2 * ow + 2 * (H + 1) + 2 * (W + 1);
    int32_t *idx = malloc((size_t)nidx * sizeof *idx);
    double *lam = malloc((size_t)(oh + ow) * sizeof *lam);
    if (!idx || !lam) {
        free(idx), free(lam);
        return clg__op_fail(x->dev, CLG_ERR_OUT_OF_MEMORY, op, "out of host memory");
    }
    bilinear_axis(H, oh, align_corners, idx, idx + oh, lam);
    bilinear_axis(W, ow, align_corners, idx + 2 * oh, idx + 2 * oh + ow, lam + oh);
    int32_t *r = idx + 2 * oh + 2 * ow;
    int64_t run = bilinear_runs(idx, oh, H, r);
    int64_t run2 = bilinear_runs(idx + oh, oh, H, r + H + 1);
    int64_t run3 = bilinear_runs(idx + 2 * oh, ow, W, r + 2 * (H + 1));
    int64_t run4 = bilinear_runs(idx + 2 * oh + ow, ow, W, r + 2 * (H + 1) + W + 1);
    if (run2 > run) run = run2;
    if (run3 > run) run = run3;
    if (run4 > run) run = run4;
    /* the kernels index with int: x's last element, y's, and the backward's [N C, OH, W] */
    int64_t last = x->offset, NC = x->shape[0] * x->shape[1];
    for (int d = 0; d < 4; d++) last += (x->shape[d] - 1) * (x->strides[d] < 0 ? -x->strides[d] : x->strides[d]);
    bool kernel = 2 * run <= (int64_t)clg__device_params(x->dev)->item_loops && last < INT32_MAX &&
                  NC * oh * ow <= INT32_MAX && NC * oh * W <= INT32_MAX && NC * H * W <= INT32_MAX;
    clg_tensor *y = kernel ? bilinear_kernel(x, idx, nidx, lam, oh, ow) : bilinear_composed(x, idx, lam, oh, ow);
    free(idx), free(lam);
    return y;
}

/* ---- group_norm -------------------------------------------------------------------------------------- */

clg_tensor *clg_group_norm(clg_tensor *x, int64_t groups, clg_tensor *weight, clg_tensor *bias, double eps)
{
    static const char op[] = "group_norm";
    if (!x) return NULL;
    if (x->ndim < 2 || groups < 1 || x->shape[1] % groups)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "want x [N, C, ...] with C divisible by groups %lld: x %s",
                            (long long)groups, CLG_DESC(x));
    int64_t C = x->shape[1];
    if ((weight && (weight->ndim != 1 || weight->shape[0] != C)) || (bias && (bias->ndim != 1 || bias->shape[0] != C)))
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "weight %s, bias %s: want [%lld] for x %s",
                            weight ? CLG_DESC(weight) : "none", bias ? CLG_DESC(bias) : "none", (long long)C,
                            CLG_DESC(x));
    /* Each (sample, group) normalised over its channels and positions: layer_norm of the
     * last axis of x viewed as [N, G, C/G * ...]. */
    clg_tensor *n = clg_layer_norm(clg_reshape(x, CLG_SHAPE(x->shape[0], groups, -1)), 1, NULL, NULL, eps);
    clg_tensor *y = n ? clg_reshape(n, x->ndim, x->shape) : NULL;
    int64_t cshape[CLG_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) cshape[d] = d == 1 ? C : 1;
    if (y && weight) y = clg_mul(y, clg_reshape(weight, x->ndim, cshape));
    if (y && bias) y = clg_add(y, clg_reshape(bias, x->ndim, cshape));
    return y;
}
