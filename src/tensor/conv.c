/* conv.c: 2-D convolution in NCHW (stride, padding, dilation, groups) with its
 * backward pass. Kernels: cl_kernels/conv.cl; products: clg__gemm (gemm.h).
 *
 * Forward: im2col writes the column matrix of the whole batch, [N, C*KH*KW, OH*OW],
 * with one kernel; then one GEMM per group, batched over the N images with the
 * weights shared (batch stride 0, so they are packed once), computes
 * y[n, group] = W[group] . col[n, group] straight into NCHW. The bias is written
 * into y first and the GEMM adds to it (beta = 1). A 1x1 convolution with stride 1
 * and no padding of a contiguous input needs no columns: x is its own column matrix.
 * Where the device table's conv_shift says so, other stride-1 convolutions need none
 * either: conv_shift.c reads their padded input shifted, in all three passes (strided
 * ones: the forward and the weight gradient, on the input's phases).
 *
 * Backward, for y = W . col:
 *   dW = sum over n of dy[n] . col[n]^T  (batched GEMM into [N, O, K], summed over N);
 *   dcol = W^T . dy[n]                    (batched GEMM), then col2im gathers it into dx;
 *   db = sum of dy over n, h, w.
 * The forward's columns are kept on the tape for dW where the device table says
 * conv_columns = keep (one im2col pass less per layer and step: 19% of the reference
 * CNN's step on POCL went to im2col); with rebuild, the backward makes them again and
 * every column buffer is freed as soon as its GEMMs are enqueued (at batch 128 they are
 * tens of MB per layer). dx's columns are always the backward's own.
 *
 * Why im2col + GEMM and not a direct kernel or CLBlast's convgemm: bench/RESULTS.md
 * ("Convolution") has the measurements; in short, on POCL the direct kernel is slower
 * for both layers of the reference CNN, and CLBlast is several times slower still. */
#include <string.h>

#include "conv.h"
#include "gemm/gemm.h"

#define PROGRAM "conv"


static int64_t rows_per_group(const conv_geo *g) { return g->C / g->G * g->KH * g->KW; }   /* K */
static int64_t pixels(const conv_geo *g) { return g->OH * g->OW; }                        /* P */

/* The kernels' geometry vectors (conv.cl). */
static clg_arg geo_arg(const conv_geo *g)
{
    const int64_t v[8] = {g->C, g->H, g->W, g->OH, g->OW, g->KH, g->KW, g->G};
    return clg__arg_int8(v, 8);
}

static clg_arg win_arg(const conv_geo *g, int64_t s6, int64_t s7)
{
    const int64_t v[8] = {g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, s6, s7};
    return clg__arg_int8(v, 8);
}

static clg_arg strides_arg(const clg_tensor *x) { return clg__arg_int8(x->strides, 4); }


static clg_status launch(clg_device *dev, clg_dtype dtype, const char *kernel, const clg_arg *args, int nargs,
                         int64_t n)
{
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(dtype), kernel);
    return k ? clg__launch_1d(dev, k, args, nargs, (size_t)n) : dev->status;
}

clg_status clg__conv_launch_grid(clg_device *dev, clg_dtype dtype, const char *kernel, const clg_arg *args,
                                 int nargs, const int64_t n[3])
{
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(dtype), kernel);
    if (!k) return dev->status;
    const clg_device_params *p = clg__device_params(dev);
    size_t cap = 1024, global[3], local[3];
    if (cap > k->wg_max) cap = k->wg_max;
    if (cap > p->max_group) cap = p->max_group;
    /* Each dimension has its own limit too (64 along the third on some GPUs). */
    const size_t *dim_max = p->max_item;
    for (int d = 0; d < 3; d++) {
        global[d] = (size_t)n[d];
        size_t c = cap < dim_max[d] ? cap : dim_max[d];
        local[d] = clg__divisor_at_most(global[d], c ? c : 1);
        cap /= local[d];
    }
    return clg__launch(dev, k, args, nargs, 3, global, local);
}

/* ---- checks ------------------------------------------------------------------------------- */

static int or_one(int v) { return v == 0 ? 1 : v; }

static bool check_tensors(clg_tensor *x, clg_tensor *w, clg_tensor *b)
{
    const char *op = "conv2d";
    if (!clg__check_same_device(op, x, w) || !clg__check_floating(op, x) || !clg__check_same_dtype(op, x, w))
        return false;
    if (b && (!clg__check_same_device(op, x, b) || !clg__check_same_dtype(op, x, b))) return false;
    if (x->ndim == 4 && w->ndim == 4 && (!b || (b->ndim == 1 && b->shape[0] == w->shape[0]))) return true;
    clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "want x [N, C, H, W], weight [O, C/groups, kh, kw], bias [O]: x %s, weight %s, bias %s",
                 CLG_DESC(x), CLG_DESC(w), b ? CLG_DESC(b) : "none");
    return false;
}

static bool fill_params(clg_tensor *x, clg_tensor *w, const clg_conv2d_params *p, conv_geo *g)
{
    clg_conv2d_params d = p ? *p : (clg_conv2d_params){{1, 1}, {0, 0}, {1, 1}, 1};
    *g = (conv_geo){x->shape[0], x->shape[1], x->shape[2], x->shape[3], w->shape[0], w->shape[2], w->shape[3],
                    or_one(d.groups), 0, 0, or_one(d.stride[0]), or_one(d.stride[1]), d.padding[0], d.padding[1],
                    or_one(d.dilation[0]), or_one(d.dilation[1])};
    if (g->G > 0 && g->sh > 0 && g->sw > 0 && g->ph >= 0 && g->pw >= 0 && g->dh > 0 && g->dw > 0) return true;
    clg__op_fail(x->dev, CLG_ERR_INVALID_ARGUMENT, "conv2d",
                 "x %s, weight %s: stride (%d, %d), padding (%d, %d), dilation (%d, %d), groups %d", CLG_DESC(x),
                 CLG_DESC(w), d.stride[0], d.stride[1], d.padding[0], d.padding[1], d.dilation[0], d.dilation[1],
                 d.groups);
    return false;
}

/* Channels against groups, the window against the padded input; sets OH, OW. */
static bool check_geometry(clg_tensor *x, clg_tensor *w, conv_geo *g)
{
    const char *op = "conv2d";
    if (g->C % g->G || g->O % g->G || w->shape[1] * g->G != g->C)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "x %s, weight %s, groups %lld: want C and O divisible by groups and weight [O, C/groups, kh, kw]",
                            CLG_DESC(x), CLG_DESC(w), (long long)g->G), false;
    int64_t eh = g->dh * (g->KH - 1) + 1, ew = g->dw * (g->KW - 1) + 1;
    if (g->KH < 1 || g->KW < 1 || eh > g->H + 2 * g->ph || ew > g->W + 2 * g->pw)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "x %s, weight %s: the kernel (%lld x %lld, dilated) is larger than the padded input (%lld x %lld)",
                            CLG_DESC(x), CLG_DESC(w), (long long)eh, (long long)ew, (long long)(g->H + 2 * g->ph),
                            (long long)(g->W + 2 * g->pw)), false;
    g->OH = (g->H + 2 * g->ph - eh) / g->sh + 1;
    g->OW = (g->W + 2 * g->pw - ew) / g->sw + 1;
    int64_t col = g->N * g->C * g->KH * g->KW * pixels(g);
    return clg__check_numel(op, x->dev, col) && clg__check_numel(op, x->dev, g->N * g->O * pixels(g)) &&
           clg__check_numel(op, x->dev, x->numel);
}

/* ---- columns ---------------------------------------------------------------------------------- */

/* A column matrix [N, C*KH*KW, P]: its own tensor, or x itself (tensor NULL). */
typedef struct cols {
    clg_tensor *t;
    clg_buffer *buf;
    size_t off;
} cols;

static bool is_pointwise(const conv_geo *g)
{
    return g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* Images per chunk: on devices whose table gives conv_chunk (bytes), the batch is
 * convolved a few images at a time so that a chunk's column matrix stays in cache
 * between im2col writing it and the GEMM reading it (and likewise dcol between the GEMM
 * and col2im): the whole batch's columns are 9x its input for a 3x3 convolution, and
 * moving them through memory and back cost more than the products (bench/RESULTS.md,
 * session 21). 0: the whole batch at once. */
static int64_t chunk_images(const clg_tensor *x, const conv_geo *g)
{
    size_t cap = clg__device_params(x->dev)->conv_chunk;
    size_t per = (size_t)(g->C * g->KH * g->KW * pixels(g)) * clg_dtype_size(x->dtype);
    if (!cap || !per || g->N == 0) return g->N;
    int64_t nb = (int64_t)(cap / per);
    return nb < 1 ? 1 : nb > g->N ? g->N : nb;
}

/* The column matrix of images [n0, n0 + nb) of x: [nb, C*KH*KW, OH*OW]. */
static bool im2col(clg_tensor *x, const conv_geo *g, int64_t n0, int64_t nb, cols *c)
{
    *c = (cols){0};
    if (is_pointwise(g) && clg_tensor_is_contiguous(x)) {
        c->buf = x->buf;
        c->off = (size_t)(x->offset + n0 * x->strides[0]);
        return true;
    }
    int64_t rows = nb * g->C * g->KH * g->KW;
    c->t = clg__tensor_new(x->dev, x->dtype, 3, (const int64_t[]){nb, g->C * g->KH * g->KW, pixels(g)});
    if (!c->t) return false;
    c->buf = c->t->buf;
    /* check_geometry bounds the column count by INT32_MAX: the kernel indexes with int. */
    bool w1 = g->sw == 1 && x->strides[3] == 1;
    clg_arg a[] = {CLG_ARG_I(rows), CLG_ARG_B(x->buf), CLG_ARG_I(x->offset + n0 * x->strides[0]),
                   strides_arg(x), geo_arg(g), win_arg(g, 0, 0), CLG_ARG_B(c->t->buf)};
    int64_t vw = clg__device_params(x->dev)->vector_float, ow = (g->OW + vw - 1) / vw * vw;
    if (clg__conv_launch_grid(x->dev, x->dtype, w1 ? "im2col_w1" : "im2col", a, 7,
                              (const int64_t[]){ow, g->OH, rows}) == CLG_OK)
        return true;
    clg_tensor_free(c->t);
    c->t = NULL;
    return false;
}

/* ---- grouped GEMMs ----------------------------------------------------------------------------- */

/* One GEMM operand: buffer, offset, leading dimension, stride between images, and the
 * step between groups (all in elements). */
typedef struct operand {
    clg_buffer *buf;
    size_t off, ld, stride, group_step;
    bool trans;
} operand;

/* For each group: C[n] = op(A[n]) . op(B[n]) + beta C[n] over nb images; C float32
 * when c_f32 (16-bit A and B, gemm.h). */
static clg_status grouped_gemm(clg_device *dev, clg_dtype dtype, const conv_geo *g, int64_t nb, size_t m, size_t n,
                               size_t k, operand a, operand b, double beta, operand c, bool c_f32)
{
    clg_status st = CLG_OK;
    for (int64_t gi = 0; st == CLG_OK && gi < g->G; gi++) {
        size_t s = (size_t)gi;
        clg_gemm_args ga = {
            .type = clg__gemm_type_of(dtype), .trans_a = a.trans, .trans_b = b.trans, .m = m, .n = n, .k = k,
            .batch = (size_t)nb, .alpha = 1.0, .beta = beta, .a = a.buf, .b = b.buf, .c = c.buf,
            .a_off = a.off + s * a.group_step, .lda = a.ld, .stride_a = a.stride, .b_off = b.off + s * b.group_step,
            .ldb = b.ld, .stride_b = b.stride, .c_off = c.off + s * c.group_step, .ldc = c.ld, .stride_c = c.stride,
            .c_f32 = c_f32,
        };
        st = clg__gemm_run(dev, NULL, NULL, &ga);
    }
    return st;
}

/* ---- forward ---------------------------------------------------------------------------------- */

/* y (contiguous [N, O, OH, OW]) starts as the bias broadcast over n and the pixels,
 * with a kernel of its own: the general strided copy costs ten times as much here. */
static clg_status fill_bias(clg_tensor *y, clg_tensor *b)
{
    int64_t P = y->shape[2] * y->shape[3], NO = y->shape[0] * y->shape[1];
    clg_arg a[] = {CLG_ARG_I(P), CLG_ARG_I(NO), CLG_ARG_B(y->buf), CLG_ARG_B(b->buf),
                   CLG_ARG_I(b->offset), CLG_ARG_I(b->strides[0]), CLG_ARG_I(y->shape[1])};
    return clg__conv_launch_grid(y->dev, y->dtype, "fill_bias", a, 7, (const int64_t[]){P, NO, 1});
}

/* keep: the column tensor is handed out in *kept (NULL when x is its own columns, or
 * when the batch went in chunks: the backward builds them again). */
static clg_status forward_gemm(clg_tensor *x, clg_tensor *w, clg_tensor *b, const conv_geo *g, clg_tensor *y,
                               clg_tensor **kept)
{
    clg_device *dev = x->dev;
    size_t K = (size_t)rows_per_group(g), P = (size_t)pixels(g), Og = (size_t)(g->O / g->G);
    if (b && fill_bias(y, b) != CLG_OK) return dev->status;
    clg_tensor *wm = clg__contiguous(w);   /* from its offset (an optimizer's arena too) */
    if (!wm) return dev->status;
    int64_t nb = chunk_images(x, g);
    clg_status st = CLG_OK;
    for (int64_t n0 = 0; st == CLG_OK && n0 < g->N; n0 += nb) {
        int64_t cnt = g->N - n0 < nb ? g->N - n0 : nb;
        cols c;
        if (!im2col(x, g, n0, cnt, &c)) {
            st = dev->status;
            break;
        }
        operand A = {wm->buf, (size_t)wm->offset, K, 0, Og * K, false};
        operand B = {c.buf, c.off, P, (size_t)g->C * g->KH * g->KW * P, K * P, false};
        operand C = {y->buf, (size_t)n0 * (size_t)g->O * P, P, (size_t)g->O * P, Og * P, false};
        st = grouped_gemm(dev, x->dtype, g, cnt, Og, P, K, A, B, b ? 1.0 : 0.0, C, false);
        if (kept && st == CLG_OK && cnt == g->N) *kept = c.t;   /* for the weight gradient */
        else clg_tensor_free(c.t);   /* enqueued: the pool may hand the buffer on */
    }
    clg__release_copy(wm, w);
    return st;
}

static clg_status forward_direct(clg_tensor *x, clg_tensor *w, clg_tensor *b, const conv_geo *g, clg_tensor *y)
{
    clg_tensor *wm = clg__contiguous(w);
    if (!wm) return x->dev->status;
    clg_arg a[] = {CLG_ARG_I(y->numel), CLG_ARG_B(x->buf), CLG_ARG_I(x->offset), strides_arg(x),
                   CLG_ARG_B(wm->buf), CLG_ARG_I(wm->offset), CLG_ARG_B(b ? b->buf : wm->buf),
                   CLG_ARG_I(b ? b->offset : 0), geo_arg(g), win_arg(g, g->O, b != NULL), CLG_ARG_B(y->buf)};
    clg_status st = launch(x->dev, x->dtype, "conv2d_direct", a, 11, y->numel);
    clg__release_copy(wm, w);
    return st;
}

clg_tensor *clg__conv_forward(clg_tensor *x, clg_tensor *w, clg_tensor *b, const conv_geo *g, clg_conv_algo algo,
                              clg_tensor **cols)
{
    if (cols) *cols = NULL;
    clg_tensor *y = clg__tensor_new(x->dev, x->dtype, 4, (const int64_t[]){g->N, g->O, g->OH, g->OW});
    if (!y || y->numel == 0) return y;
    /* The direct kernel reads the bias from its offset with unit stride. */
    /* the direct kernel's work-item walks C/G x KH x KW taps: within item_loops only */
    bool direct = algo == CLG_CONV_DIRECT && (!b || clg_tensor_is_contiguous(b)) &&
                  g->C / g->G * g->KH * g->KW <= (int64_t)clg__device_params(x->dev)->item_loops;
    bool shift = !direct && clg__conv_shift_ok(x->dev, x->dtype, g, CLG_CONV_PASS_FORWARD);
    /* without columns: its padded planes kept for a weight gradient that reads them too */
    bool planes = shift && cols && clg__conv_shift_ok(x->dev, x->dtype, g, CLG_CONV_PASS_WEIGHT);
    clg_status st = direct  ? forward_direct(x, w, b, g, y)
                    : shift ? clg__conv_shift_forward(x, w, b, g, y, planes ? cols : NULL)
                            : forward_gemm(x, w, b, g, y, cols);
    if (st == CLG_OK) return y;
    clg_tensor_free(y);
    return clg__op_fail(x->dev, x->dev->status, "conv2d", "x %s, weight %s: %.7000s", CLG_DESC(x), CLG_DESC(w),
                        x->dev->error);
}

/* ---- backward ---------------------------------------------------------------------------------- */

static void geo_save(clg_node *n, const conv_geo *g)
{
    const int64_t v[7] = {g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, g->G};
    memcpy(n->i, v, sizeof v);
}

static conv_geo geo_load(const clg_node *n)
{
    const clg_tensor *x = n->inputs[0], *w = n->inputs[1];
    conv_geo g = {x->shape[0], x->shape[1], x->shape[2], x->shape[3], w->shape[0], w->shape[2], w->shape[3],
                  n->i[6], 0, 0, n->i[0], n->i[1], n->i[2], n->i[3], n->i[4], n->i[5]};
    g.OH = (g.H + 2 * g.ph - g.dh * (g.KH - 1) - 1) / g.sh + 1;
    g.OW = (g.W + 2 * g.pw - g.dw * (g.KW - 1) - 1) / g.sw + 1;
    return g;
}

/* Whether the weight gradient runs without columns (conv_shift.c): from the forward's
 * padded planes when kept (a 1-D tensor: the forward's columns are [N, C*KH*KW, P]), or
 * where the device table and the engine take it. */
static bool weight_shifted(clg_tensor *x, const conv_geo *g, const clg_tensor *kept)
{
    return kept ? kept->ndim == 1 : clg__conv_shift_ok(x->dev, x->dtype, g, CLG_CONV_PASS_WEIGHT);
}

/* The columns' weight gradient as the engine sums it over the images (clg__gemm_sum). */
static clg_gemm_args summed_probe(clg_tensor *x, const conv_geo *g)
{
    size_t K = (size_t)rows_per_group(g), P = (size_t)pixels(g), Og = (size_t)(g->O / g->G);
    return (clg_gemm_args){.type = clg__gemm_type_of(x->dtype), .trans_b = true, .m = Og, .n = K, .k = P, .batch = 1,
                           .lda = P, .ldb = P, .ldc = K};
}

bool clg__conv_grad_weight_adds(clg_tensor *x, const conv_geo *g, const clg_tensor *kept)
{
    clg_gemm_args probe = summed_probe(x, g);
    return weight_shifted(x, g, kept) || clg__gemm_sum_fits(x->dev, &probe);
}

/* dW = sum over n of dy[n] . col[n]^T, per group, chunk by chunk of images (or without
 * columns, conv_shift.c, from the forward's padded planes when kept). Where the
 * engine takes it (clg__gemm_sum) the products sum the images themselves into
 * [O, K], each chunk added to the last; else they go per image into [N, O, K], summed
 * over N after. For 16-bit tensors the products and their sum are float32, rounded once
 * at the end. Into into->t where given (conv.h): the products' C, or the sum's result. */
clg_tensor *clg__conv_grad_weight(clg_tensor *x, clg_tensor *w, clg_tensor *gy, const conv_geo *g, clg_tensor *kept,
                                  const conv_into *into)
{
    if (weight_shifted(x, g, kept)) return clg__conv_shift_grad_weight(x, w, gy, g, kept, into);
    size_t K = (size_t)rows_per_group(g), P = (size_t)pixels(g), Og = (size_t)(g->O / g->G), CK = K * (size_t)g->G;
    bool half = clg__is_half(x->dtype), direct = into && into->t;
    clg_gemm_args probe = summed_probe(x, g);
    bool summed = clg__gemm_sum_fits(x->dev, &probe);
    clg_tensor *part = summed && direct ? into->t
                       : clg__tensor_new(x->dev, half ? CLG_F32 : x->dtype, summed ? 2 : 3,
                                         summed ? (const int64_t[]){g->O, (int64_t)K}
                                                : (const int64_t[]){g->N, g->O, (int64_t)K});
    if (!part) return NULL;
    int64_t nb = kept ? g->N : chunk_images(x, g);
    clg_status st = CLG_OK;
    for (int64_t n0 = 0; st == CLG_OK && n0 < g->N; n0 += nb) {
        int64_t cnt = g->N - n0 < nb ? g->N - n0 : nb;
        cols c = {NULL, kept ? kept->buf : NULL, kept ? (size_t)kept->offset : 0};   /* the forward's, if kept */
        if (!kept && !im2col(x, g, n0, cnt, &c)) {
            st = x->dev->status;
            break;
        }
        operand A = {gy->buf, (size_t)gy->offset + (size_t)n0 * (size_t)g->O * P, P, (size_t)g->O * P, Og * P, false};
        operand B = {c.buf, c.off, P, CK * P, K * P, true};
        operand C = {part->buf, (size_t)part->offset + (summed ? 0 : (size_t)n0 * (size_t)g->O * K), K,
                     (size_t)g->O * K, Og * K, false};
        for (int64_t gi = 0; summed && st == CLG_OK && gi < g->G; gi++) {
            size_t s = (size_t)gi;
            clg_gemm_args ga = {
                .type = probe.type, .trans_b = true, .m = Og, .n = K, .k = P, .batch = (size_t)cnt, .alpha = 1.0,
                .beta = n0 ? 1.0 : direct ? into->beta : 0.0, .a = A.buf, .b = B.buf, .c = C.buf,
                .a_off = A.off + s * A.group_step, .lda = P, .stride_a = A.stride, .b_off = B.off + s * B.group_step,
                .ldb = P, .stride_b = B.stride, .c_off = C.off + s * C.group_step, .ldc = K, .c_f32 = half,
            };
            st = clg__gemm_sum(x->dev, &ga);
        }
        if (!summed) st = grouped_gemm(x->dev, x->dtype, g, cnt, Og, K, P, A, B, 0.0, C, half);
        clg_tensor_free(c.t);
    }
    if (direct) {   /* summed into it, or the per-image products' sum written there (beta 0) */
        if (!summed && st == CLG_OK) st = clg__sum_rows_into(part, g->N, g->O * (int64_t)K, into->t);
        if (!summed) clg_tensor_free(part);
        return st == CLG_OK ? into->t : NULL;
    }
    clg_tensor *dw = st == CLG_OK && !summed ? clg_sum(part, CLG_AXES(0), false) : NULL;
    if (st == CLG_OK && summed) dw = part;
    else clg_tensor_free(part);
    if (dw && half) {
        clg_tensor *d16 = clg__copy_as(dw, x->dtype);
        clg_tensor_free(dw);
        dw = d16;
    }
    clg_tensor *r = dw ? clg_reshape(dw, w->ndim, w->shape) : NULL;
    clg_tensor_free(dw);
    return r;
}

/* dx = the sum of dcol's entries per input pixel: gathered (col2im), or accumulated
 * plane by plane (col2im_planes, where the device table says so, and where a plane's
 * work-item, which clears the plane and walks every window position, stays within
 * item_loops). The planes' sums are float32 for 16-bit tensors (conv.cl): into a
 * float32 scratch, then rounded. */
static bool col2im_planes(clg_device *dev, const conv_geo *g)
{
    int64_t plane_loops = g->H * g->W + g->KH * g->KW * (g->OH * g->OW + 1);
    return clg__device_params(dev)->col2im_planes && plane_loops <= (int64_t)clg__device_params(dev)->item_loops;
}

/* Images [n0, n0 + nb) of dx from their dcol (planes: dx is T, the float32 scratch). */
static clg_status col2im(clg_tensor *dcol, clg_tensor *dx, const conv_geo *g, int64_t n0, int64_t nb, bool planes)
{
    clg_device *dev = dx->dev;
    /* both built for dcol's dtype (the planes' scratch is float32 for 16-bit dcol) */
    clg_arg a[] = {CLG_ARG_B(dcol->buf), CLG_ARG_B(dx->buf), CLG_ARG_I(n0 * g->C * g->H * g->W), geo_arg(g),
                   win_arg(g, 0, 0)};
    if (planes) return launch(dev, dcol->dtype, "col2im_planes", a, 5, nb * g->C);
    return clg__conv_launch_grid(dev, dcol->dtype, "col2im", a, 5, (const int64_t[]){g->W, g->H, nb * g->C});
}

/* dx = col2im(W^T . dy[n]) ([N, C, H, W] of g); for a pointwise convolution the
 * columns are dx itself. */
clg_tensor *clg__conv_grad_input(clg_tensor *w, clg_tensor *gy, const conv_geo *g)
{
    clg_device *dev = w->dev;
    if (clg__conv_shift_ok(dev, w->dtype, g, CLG_CONV_PASS_INPUT)) return clg__conv_shift_grad_input(w, gy, g);
    size_t K = (size_t)rows_per_group(g), P = (size_t)pixels(g), Og = (size_t)(g->O / g->G), CK = K * (size_t)g->G;
    clg_tensor *dx = clg__tensor_new(dev, w->dtype, 4, (const int64_t[]){g->N, g->C, g->H, g->W});
    clg_tensor *wm = clg__contiguous(w);
    bool direct = is_pointwise(g), planes = !direct && col2im_planes(dev, g);
    /* col2im_planes accumulates: into a float32 scratch for 16-bit tensors, rounded once */
    clg_tensor *acc = dx && planes && clg__is_half(dx->dtype) ? clg__tensor_new(dev, CLG_F32, 4, dx->shape) : dx;
    clg_status st = dx && wm && acc ? CLG_OK : dev->status;
    int64_t nb = chunk_images(w, g);
    for (int64_t n0 = 0; st == CLG_OK && n0 < g->N; n0 += nb) {
        int64_t cnt = g->N - n0 < nb ? g->N - n0 : nb;
        clg_tensor *dcol = direct ? dx : clg__tensor_new(dev, w->dtype, 3, (const int64_t[]){cnt, (int64_t)CK, (int64_t)P});
        if (!dcol) {
            st = dev->status;
            break;
        }
        size_t at = direct ? (size_t)n0 * CK * P : 0;
        operand A = {wm->buf, (size_t)wm->offset, K, 0, Og * K, true};
        operand B = {gy->buf, (size_t)gy->offset + (size_t)n0 * (size_t)g->O * P, P, (size_t)g->O * P, Og * P, false};
        operand C = {dcol->buf, at, P, CK * P, K * P, false};
        st = grouped_gemm(dev, w->dtype, g, cnt, K, P, Og, A, B, 0.0, C, false);
        if (st == CLG_OK && !direct) st = col2im(dcol, acc, g, n0, cnt, planes);
        if (!direct) clg_tensor_free(dcol);
    }
    if (acc != dx) {
        if (st == CLG_OK) st = clg_copy_(dx, acc);   /* rounded once */
        clg_tensor_free(acc);
    }
    clg__release_copy(wm, w);
    if (st == CLG_OK) return dx;
    clg_tensor_free(dx);
    return NULL;
}

/* db in one launch (conv_bias_grad: a group per channel) where the device table reduces
 * rows by groups (row_reduce = groups: GPU-shaped devices, where a launch costs more
 * than the few groups lose), for float32 and float64 dy, each work-item's walk within
 * item_loops; written into `into` where given, else into a new *db. *done: whether it
 * ran (else nothing was done). */
static clg_status grad_bias_groups(clg_tensor *gy, const conv_geo *g, clg_tensor *into, clg_tensor **db, bool *done)
{
    clg_device *dev = gy->dev;
    const clg_device_params *p = clg__device_params(dev);
    *done = false;
    if (p->row_items || (gy->dtype != CLG_F32 && gy->dtype != CLG_F64)) return CLG_OK;
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(gy->dtype), "conv_bias_grad");
    if (!k) return dev->status;
    int64_t P = pixels(g);
    size_t wg = clg__reduce_group(dev, k, P);
    if (g->N * ((P + (int64_t)wg - 1) / (int64_t)wg) > (int64_t)p->item_loops) return CLG_OK;
    clg_tensor *out = into ? into : clg__tensor_new(dev, gy->dtype, 1, &g->O);
    if (!out) return dev->status;
    clg_arg a[] = {CLG_ARG_I(g->N), CLG_ARG_I(g->O), CLG_ARG_I(P), CLG_ARG_B(gy->buf), CLG_ARG_I(gy->offset),
                   CLG_ARG_B(out->buf), CLG_ARG_I(out->offset), CLG_ARG_LOCAL(wg * clg_dtype_size(gy->dtype))};
    size_t global = (size_t)g->O * wg;
    clg_status st = clg__launch(dev, k, a, 8, 1, &global, &wg);
    if (st == CLG_OK && !into) *db = out;
    else if (!into) clg_tensor_free(out);
    *done = st == CLG_OK;
    return st;
}

/* db = sum of dy over n and the pixels, as two reductions over adjacent axes of the
 * contiguous dy ([N, O, P] over P, then over N): reducing axes (0, 2, 3) at once would
 * first copy dy with those axes moved last; or one launch (grad_bias_groups). Written
 * into `into` where given (b's .grad, its first contribution): *db is then NULL. */
static clg_status grad_bias(clg_tensor *gy, const conv_geo *g, clg_tensor *into, clg_tensor **db)
{
    bool done;
    *db = NULL;
    clg_status one = grad_bias_groups(gy, g, into, db, &done);
    if (one != CLG_OK || done) return one;
    clg_tensor *v = clg_reshape(gy, CLG_SHAPE(g->N, g->O, pixels(g)));
    clg_tensor *per_image = v ? clg_sum(v, CLG_AXES(2), false) : NULL;
    clg_status st = per_image ? CLG_OK : gy->dev->status;
    if (st == CLG_OK && into) st = clg__sum_rows_into(per_image, g->N, g->O, into);
    else if (st == CLG_OK && !(*db = clg_sum(per_image, CLG_AXES(0), false))) st = gy->dev->status;
    clg_tensor_free(v);
    clg_tensor_free(per_image);
    return st;
}

/* Whether a gradient of w's (b's) dtype may be written into its .grad (clg__grad_direct):
 * float32 and float64 (16-bit sums are float32 first, rounded once: returned as before). */
static bool direct_type(const clg_tensor *t) { return t->dtype == CLG_F32 || t->dtype == CLG_F64; }

static clg_status conv2d_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *x = n->inputs[0], *w = n->inputs[1];
    conv_geo geo = geo_load(n);
    clg_tensor *gy = clg_contiguous(g);
    if (!gy) return g->dev->status;
    /* the bias's and the weight's gradients straight into their .grad where the engine
     * would only copy or add them there (a sum writes: the bias's first contribution only) */
    double beta = 0;
    clg_tensor *bg = n->ninputs > 2 && direct_type(gy) ? clg__grad_direct(n, 2, false, &beta) : NULL;
    if (n->ninputs > 2 && clg__wants_grad(n, 2) && grad_bias(gy, &geo, bg, &gin[2]) != CLG_OK) return g->dev->status;
    clg_tensor *kept = n->saved[0];
    conv_into into = {NULL, 0};
    if (direct_type(w) && clg__wants_grad(n, 1))
        into.t = clg__grad_direct(n, 1, clg__conv_grad_weight_adds(x, &geo, kept), &into.beta);
    if (clg__wants_grad(n, 0) && clg__wants_grad(n, 1) && (!kept || kept->ndim == 1) &&
        clg__conv_shift_ok(x->dev, x->dtype, &geo, CLG_CONV_PASS_WEIGHT) &&
        clg__conv_shift_ok(x->dev, x->dtype, &geo, CLG_CONV_PASS_INPUT)) {
        clg_status st = clg__conv_shift_backward(x, w, gy, &geo, kept, &into, &gin[1], &gin[0]);
        if (gin[1] == into.t) gin[1] = NULL;   /* written into .grad */
        return st;
    }
    if (clg__wants_grad(n, 1) && !(gin[1] = clg__conv_grad_weight(x, w, gy, &geo, kept, &into)))
        return g->dev->status;
    if (gin[1] == into.t) gin[1] = NULL;
    if (clg__wants_grad(n, 0) && !(gin[0] = clg__conv_grad_input(w, gy, &geo))) return g->dev->status;
    return CLG_OK;
}

/* ---- the op ------------------------------------------------------------------------------------- */

clg_tensor *clg__conv2d_with(clg_tensor *x, clg_tensor *w, clg_tensor *b, const clg_conv2d_params *p,
                             clg_conv_algo algo)
{
    if (!x || !w) return NULL;
    conv_geo g;
    if (!check_tensors(x, w, b) || !fill_params(x, w, p, &g) || !check_geometry(x, w, &g)) return NULL;
    /* The columns are kept for the weight gradient when the device table says so and
     * the weight will get one (a frozen or no-grad convolution keeps nothing). */
    bool keep = clg__device_params(x->dev)->conv_keep_columns && clg_grad_enabled(x->dev) && w->requires_grad;
    clg_tensor *cols = NULL;
    clg_node *node = NULL;
    clg_tensor *y = clg__taped(clg__conv_forward(x, w, b, &g, algo, keep ? &cols : NULL), CLG_OP_conv2d, conv2d_bw,
                               b ? 3 : 2, (clg_tensor *const[]){x, w, b}, &node);
    if (node) {
        geo_save(node, &g);
        if (cols) clg__node_save(node, 0, cols);   /* the node's reference; the scope's goes now */
    }
    clg_tensor_free(cols);
    return y;
}

clg_tensor *clg_conv2d(clg_tensor *x, clg_tensor *w, clg_tensor *b, const clg_conv2d_params *p)
{
    if (!x || !w) return NULL;
    clg_tensor *x16 = clg__autocast(x), *w16 = x16 ? clg__autocast(w) : NULL, *b16 = w16 ? clg__autocast(b) : NULL;
    clg_tensor *y = w16 && (b16 || !b) ? clg__conv2d_with(x16, w16, b16, p, CLG_CONV_GEMM) : NULL;
    clg__drop_cast(x16, x);
    clg__drop_cast(w16, w);
    clg__drop_cast(b16, b);
    return y;
}
