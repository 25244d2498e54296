/* pool.c: max and average pooling in NCHW, and global average pooling, with their
 * backward passes. Kernels: cl_kernels/conv.cl (one program with the convolution's).
 *
 * Each forward kernel computes one output per work-item and reads x where it lies
 * (any strides). The max pool also writes, per output, where its maximum was (an
 * int32 tensor saved on the tape), so the backward routes each gradient to that
 * pixel without comparing values again: ties and NaNs go where the forward said.
 * Both backwards gather per input pixel over the windows that cover it, so no two
 * work-items write one element: no atomics, and the sums are deterministic. Disjoint max
 * windows scatter each gradient to its argmax over zeros instead, and the usual 2 x 2 / 2
 * window writes its four pixels itself (max_pool_2x2_bw: no zeroing pass first).
 *
 * Windows follow PyTorch (ceil_mode off): out = (in + 2 pad - kernel) / stride + 1,
 * padding at most half the kernel (so that every window holds a real pixel). */
#include <string.h>

#include "conv.h"

#define PROGRAM "conv"

typedef struct pool_geo {
    int64_t N, C, H, W, OH, OW;
    int64_t kh, kw, sh, sw, ph, pw;
    bool include_pad;
} pool_geo;

/* conv.cl's geometry vectors: geo = (C, H, W, OH, OW, KH, KW, -),
 * win = (SH, SW, PH, PW, DH, DW, count_include_pad, -). */
static clg_arg geo_arg(const pool_geo *g)
{
    const int64_t v[8] = {g->C, g->H, g->W, g->OH, g->OW, g->kh, g->kw, 1};
    return clg__arg_int8(v, 8);
}

static clg_arg win_arg(const pool_geo *g)
{
    const int64_t v[8] = {g->sh, g->sw, g->ph, g->pw, 1, 1, g->include_pad, 0};
    return clg__arg_int8(v, 8);
}

static clg_status launch(clg_device *dev, clg_dtype dtype, const char *kernel, const clg_arg *args, int nargs,
                         int64_t n)
{
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(dtype), kernel);
    return k ? clg__launch_1d(dev, k, args, nargs, (size_t)n) : dev->status;
}

static bool pool_check(const char *op, clg_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw, pool_geo *g)
{
    if (!clg__check_floating(op, x)) return false;
    if (sh == 0) sh = kh;   /* PyTorch's stride=None: the window's size */
    if (sw == 0) sw = kw;
    if (x->ndim != 4)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "want x [N, C, H, W], got %s", CLG_DESC(x)), false;
    if (kh < 1 || kw < 1 || sh < 1 || sw < 1 || ph < 0 || pw < 0 || 2 * ph > kh || 2 * pw > kw)
        return clg__op_fail(x->dev, CLG_ERR_INVALID_ARGUMENT, op,
                            "x %s: kernel (%d, %d), stride (%d, %d), padding (%d, %d): want kernel and stride >= 1, 0 <= padding <= kernel / 2",
                            CLG_DESC(x), kh, kw, sh, sw, ph, pw), false;
    *g = (pool_geo){x->shape[0], x->shape[1], x->shape[2], x->shape[3], 0, 0, kh, kw, sh, sw, ph, pw, true};
    if (kh > g->H + 2 * ph || kw > g->W + 2 * pw)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "x %s: kernel (%d, %d) larger than the padded input (%lld, %lld)",
                            CLG_DESC(x), kh, kw, (long long)(g->H + 2 * ph), (long long)(g->W + 2 * pw)), false;
    /* A work-item walks its window (kh rows of kw + 1 loop steps): some drivers end
     * longer loops silently. */
    size_t loops = clg__device_params(x->dev)->item_loops;
    if ((size_t)kh * ((size_t)kw + 1) > loops)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "x %s: a (%d, %d) window is over the device's item_loops (%zu)",
                            CLG_DESC(x), kh, kw, loops), false;
    g->OH = (g->H + 2 * ph - kh) / sh + 1;
    g->OW = (g->W + 2 * pw - kw) / sw + 1;
    return clg__check_numel(op, x->dev, x->numel) && clg__check_numel(op, x->dev, g->N * g->C * g->OH * g->OW);
}

static void geo_save(clg_node *n, const pool_geo *g)
{
    const int64_t v[7] = {g->kh, g->kw, g->sh, g->sw, g->ph, g->pw, g->include_pad};
    memcpy(n->i, v, sizeof v);
}

static pool_geo geo_load(const clg_node *n)
{
    const clg_tensor *x = n->inputs[0], *y = n->out;
    return (pool_geo){x->shape[0], x->shape[1], x->shape[2], x->shape[3], y->shape[2], y->shape[3],
                      n->i[0], n->i[1], n->i[2], n->i[3], n->i[4], n->i[5], n->i[6] != 0};
}

static clg_tensor *new_output(clg_tensor *x, const pool_geo *g, clg_dtype dtype)
{
    return clg__tensor_new(x->dev, dtype, 4, (const int64_t[]){g->N, g->C, g->OH, g->OW});
}

/* Fails op with the device's message, freeing the partial results. */
static clg_tensor *fail(const char *op, clg_tensor *x, clg_tensor *a, clg_tensor *b)
{
    clg_tensor_free(a);
    clg_tensor_free(b);
    return clg__op_fail(x->dev, x->dev->status ? x->dev->status : CLG_ERR_OPENCL, op, "x %s: %.7000s", CLG_DESC(x),
                        x->dev->error);
}

/* dx (x's shape) from the backward kernel over g and, for max pooling, the saved
 * argmax. The kernels read g from element 0 of a contiguous buffer: a gradient in any
 * other layout (an expanded one from a sum's backward, say) is copied first. */
static clg_tensor *gather_grad(clg_node *n, clg_tensor *g, const char *kernel, clg_tensor *idx)
{
    clg_tensor *x = n->inputs[0];
    pool_geo geo = geo_load(n);
    bool direct = clg_tensor_is_contiguous(g) && g->offset == 0;
    clg_tensor *gy = direct ? g : clg__copy_as(g, g->dtype);
    clg_tensor *dx = gy ? clg__tensor_new(x->dev, x->dtype, 4, x->shape) : NULL;
    clg_status st = dx ? CLG_OK : x->dev->status;
    if (st == CLG_OK) {
        clg_arg a[6];
        int na = 0;
        a[na++] = CLG_ARG_I(dx->numel);
        a[na++] = CLG_ARG_B(gy->buf);
        if (idx) a[na++] = CLG_ARG_B(idx->buf);
        a[na++] = CLG_ARG_B(dx->buf);
        a[na++] = geo_arg(&geo);
        a[na++] = win_arg(&geo);
        st = launch(x->dev, x->dtype, kernel, a, na, dx->numel);
    }
    if (!direct) clg_tensor_free(gy);
    if (st == CLG_OK) return dx;
    clg_tensor_free(dx);
    return NULL;
}

/* ---- max pooling ------------------------------------------------------------------------------ */

/* Non-overlapping windows: each output's gradient routed to its argmax. The 2 x 2 / 2
 * window writes its four pixels of dx itself (max_pool_2x2_bw: the gradient at the argmax,
 * zeros at the others), dx zeroed first only where an odd H or W leaves a row or column
 * outside every window; other disjoint windows scatter onto zeros (max_pool_bw_scatter). */
static clg_tensor *argmax_grad(clg_node *n, clg_tensor *g, clg_tensor *idx, bool two)
{
    clg_tensor *x = n->inputs[0];
    pool_geo geo = geo_load(n);
    clg_tensor *gy = clg_contiguous(g);
    bool whole = two && geo.H % 2 == 0 && geo.W % 2 == 0;   /* every pixel written by the kernel */
    clg_tensor *dx = !gy ? NULL : whole ? clg__tensor_new(x->dev, x->dtype, 4, x->shape)
                                        : clg_zeros(x->dev, x->dtype, 4, x->shape);
    if (!dx) return NULL;
    clg_tensor *gc = gy->offset ? clg__copy_as(gy, gy->dtype) : gy;
    int64_t R = geo.N * geo.C * geo.OH;
    clg_arg a[] = {CLG_ARG_I(two ? R : idx->numel), CLG_ARG_B(gc ? gc->buf : NULL), CLG_ARG_B(idx->buf),
                   CLG_ARG_B(dx->buf), geo_arg(&geo), win_arg(&geo)};
    clg_status st = !gc ? x->dev->status
                    : two ? clg__conv_launch_grid(x->dev, x->dtype, "max_pool_2x2_bw", a, 5, (const int64_t[]){geo.OW, R, 1})
                          : launch(x->dev, x->dtype, "max_pool_bw_scatter", a, 6, idx->numel);
    if (gc != gy) clg_tensor_free(gc);
    if (st == CLG_OK) return dx;
    clg_tensor_free(dx);
    return NULL;
}

static clg_status max_pool_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    bool disjoint = n->i[2] >= n->i[0] && n->i[3] >= n->i[1];   /* stride >= kernel on both axes */
    bool two = n->i[0] == 2 && n->i[1] == 2 && n->i[2] == 2 && n->i[3] == 2 && n->i[4] == 0 && n->i[5] == 0;
    gin[0] = two || disjoint ? argmax_grad(n, g, n->saved[0], two) : gather_grad(n, g, "max_pool_bw", n->saved[0]);
    return gin[0] ? CLG_OK : g->dev->status;
}

clg_tensor *clg_max_pool2d(clg_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw)
{
    const char *op = "max_pool2d";
    pool_geo g;
    if (!x || !pool_check(op, x, kh, kw, sh, sw, ph, pw, &g)) return NULL;
    clg_tensor *y = new_output(x, &g, x->dtype), *idx = new_output(x, &g, CLG_I32);
    if (!y || !idx) return fail(op, x, y, idx);
    /* The usual 2x2 / 2 window over a contiguous input has a kernel of its own (conv.cl
     * max_pool_2x2, ~10x faster on POCL); every other window the general one. */
    bool two = kh == 2 && kw == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0 && clg_tensor_is_contiguous(x);
    clg_status st;
    if (two) {
        int64_t R = g.N * g.C * g.OH;
        clg_arg a[] = {CLG_ARG_I(R), CLG_ARG_B(x->buf), CLG_ARG_I(x->offset), geo_arg(&g),
                       CLG_ARG_B(y->buf), CLG_ARG_B(idx->buf)};
        st = clg__conv_launch_grid(x->dev, x->dtype, "max_pool_2x2", a, 6, (const int64_t[]){g.OW, R, 1});
    } else {
        clg_arg a[] = {CLG_ARG_I(y->numel), CLG_ARG_B(x->buf), CLG_ARG_I(x->offset), clg__arg_int8(x->strides, 4),
                       geo_arg(&g), win_arg(&g), CLG_ARG_B(y->buf), CLG_ARG_B(idx->buf)};
        st = launch(x->dev, x->dtype, "max_pool", a, 8, y->numel);
    }
    if (st != CLG_OK) return fail(op, x, y, idx);
    clg_node *node = NULL;
    y = clg__taped(y, CLG_OP_max_pool2d, max_pool_bw, 1, &x, &node);
    if (node) {
        geo_save(node, &g);
        clg__node_save(node, 0, idx);
    }
    clg_tensor_free(idx);   /* the node holds its own reference */
    return y;
}

/* ---- average pooling ---------------------------------------------------------------------------- */

/* Disjoint windows (stride >= kernel on both axes): one loop-free item per pixel over a
 * 3-D range (the gather's 1-D range divides per element and walks windows: ~5x slower). */
static clg_tensor *avg_grad_disjoint(clg_node *n, clg_tensor *g)
{
    clg_tensor *x = n->inputs[0];
    pool_geo geo = geo_load(n);
    bool direct = clg_tensor_is_contiguous(g) && g->offset == 0;
    clg_tensor *gc = direct ? g : clg__copy_as(g, g->dtype);
    clg_tensor *dx = gc ? clg__tensor_new(x->dev, x->dtype, 4, x->shape) : NULL;
    clg_kernel *k = dx ? clg__kernel_get(x->dev, PROGRAM, clg__dtype_options_ew(x->dtype), "avg_pool_bw_disjoint") : NULL;
    clg_status st = x->dev->status;
    if (k) {
        uint32_t mh, mw;
        int sh, sw;
        clg__udiv_magic(geo.sh, &mh, &sh);
        clg__udiv_magic(geo.sw, &mw, &sw);
        clg_arg a[] = {CLG_ARG_B(gc->buf), CLG_ARG_B(dx->buf), geo_arg(&geo), win_arg(&geo),
                       CLG_ARG_I(mh), CLG_ARG_I(sh), CLG_ARG_I(mw), CLG_ARG_I(sw)};
        st = clg__launch_rows3(x->dev, k, a, 8, (size_t)geo.W, (size_t)geo.H, (size_t)(geo.N * geo.C));
    }
    if (!direct) clg_tensor_free(gc);
    if (st == CLG_OK && k) return dx;
    clg_tensor_free(dx);
    return NULL;
}

static clg_status avg_pool_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    bool disjoint = n->i[2] >= n->i[0] && n->i[3] >= n->i[1];   /* stride >= kernel on both axes */
    gin[0] = disjoint ? avg_grad_disjoint(n, g) : gather_grad(n, g, "avg_pool_bw", NULL);
    return gin[0] ? CLG_OK : g->dev->status;
}

static clg_tensor *avg_pool(const char *op, clg_tensor *x, const pool_geo *g)
{
    clg_tensor *y = new_output(x, g, x->dtype);
    if (!y) return fail(op, x, NULL, NULL);
    /* The usual 2x2 / 2 window over a contiguous input: a kernel of its own, as max_pool2d's
     * (the general one divides per element and walks clipped windows). */
    bool two = g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0 &&
               clg_tensor_is_contiguous(x);
    clg_status st;
    if (two) {
        int64_t R = g->N * g->C * g->OH;
        clg_arg a[] = {CLG_ARG_I(R), CLG_ARG_B(x->buf), CLG_ARG_I(x->offset), geo_arg(g), CLG_ARG_B(y->buf)};
        st = clg__conv_launch_grid(x->dev, x->dtype, "avg_pool_2x2", a, 5, (const int64_t[]){g->OW, R, 1});
    } else {
        clg_arg a[] = {CLG_ARG_I(y->numel), CLG_ARG_B(x->buf), CLG_ARG_I(x->offset),
                       clg__arg_int8(x->strides, 4), geo_arg(g), win_arg(g), CLG_ARG_B(y->buf)};
        st = launch(x->dev, x->dtype, "avg_pool", a, 7, y->numel);
    }
    if (st != CLG_OK) return fail(op, x, y, NULL);
    clg_node *node = NULL;
    y = clg__taped(y, CLG_OP_avg_pool2d, avg_pool_bw, 1, &x, &node);
    if (node) geo_save(node, g);
    return y;
}

clg_tensor *clg_avg_pool2d(clg_tensor *x, int kh, int kw, int sh, int sw, int ph, int pw, bool count_include_pad)
{
    pool_geo g;
    if (!x || !pool_check("avg_pool2d", x, kh, kw, sh, sw, ph, pw, &g)) return NULL;
    g.include_pad = count_include_pad;
    return avg_pool("avg_pool2d", x, &g);
}

/* One window over the whole plane: an average pool, on the tape as one. */
clg_tensor *clg_global_avg_pool2d(clg_tensor *x)
{
    const char *op = "global_avg_pool2d";
    if (!x || !clg__check_floating(op, x)) return NULL;
    if (x->ndim != 4 || x->shape[2] < 1 || x->shape[3] < 1 || x->shape[2] > INT32_MAX || x->shape[3] > INT32_MAX)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "want x [N, C, H, W] with H, W >= 1, got %s", CLG_DESC(x));
    pool_geo g;
    int h = (int)x->shape[2], w = (int)x->shape[3];
    /* A plane larger than one work-item may walk: the mean over both axes, whose
     * reduction splits long sums. */
    if ((size_t)h * ((size_t)w + 1) > clg__device_params(x->dev)->item_loops) return clg_mean(x, CLG_AXES(2, 3), true);
    /* stride = the window: the one window is the same, and the backward takes the
     * disjoint windows' kernel (one read per pixel) instead of the covering windows'
     * search (2.8 ms against ~0.1 for ResNet-20's [128, 64, 7, 7] on POCL) */
    if (!pool_check(op, x, h, w, h, w, 0, 0, &g)) return NULL;
    return avg_pool(op, x, &g);
}
