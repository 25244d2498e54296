/* Gradient checks for conv2d (bias, stride, padding, dilation, groups, depthwise,
 * pointwise), max_pool2d (inputs without ties), avg_pool2d (padding counted or not)
 * and global_avg_pool2d; and the max pool's routing of ties to the first maximum, as
 * PyTorch. Inputs are tiny: the check runs the function twice per input element. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "optest.h"

#define IN(...) ((optest_input[]){__VA_ARGS__})
#define SH(...) CLG_SHAPE(__VA_ARGS__)

static clg_tensor *f_conv(clg_tensor **x, void *c) { return clg_conv2d(x[0], x[1], x[2], c); }
static clg_tensor *f_conv_nobias(clg_tensor **x, void *c) { return clg_conv2d(x[0], x[1], NULL, c); }

static clg_tensor *f_conv1d(clg_tensor **x, void *c) { return clg_conv1d(x[0], x[1], x[2], c); }
static clg_tensor *f_convt(clg_tensor **x, void *c) { return clg_conv_transpose2d(x[0], x[1], x[2], c); }
static clg_tensor *f_convt_nobias(clg_tensor **x, void *c) { return clg_conv_transpose2d(x[0], x[1], NULL, c); }
static clg_tensor *f_nearest(clg_tensor **x, void *c) { (void)c; return clg_upsample_nearest2d(x[0], 5, 7); }
static clg_tensor *f_nearest2(clg_tensor **x, void *c) { (void)c; return clg_upsample_nearest2d(x[0], 6, 8); }
static clg_tensor *f_bilinear(clg_tensor **x, void *c) { (void)c; return clg_upsample_bilinear2d(x[0], 5, 7); }
static clg_tensor *f_bilinear_aligned(clg_tensor **x, void *c)
{
    (void)c;
    return clg_upsample_bilinear2d_ex(x[0], 5, 7, true);
}
static clg_tensor *f_group_norm(clg_tensor **x, void *c) { (void)c; return clg_group_norm(x[0], 2, x[1], x[2], 1e-5); }

/* conv1d, conv_transpose2d (stride, padding, output padding, dilation, groups), the
 * upsamplings and group_norm. */
static void more_layer_checks(clg_device *dev)
{
    clg_conv1d_params c1 = {2, 1, 1, 2};
    optest_gradcheck(dev, "conv1d stride pad groups", f_conv1d, &c1, 3, IN({SH(2, 4, 7)}, {SH(4, 2, 3)}, {SH(4)}));
    clg_conv_transpose2d_params t1 = {{2, 1}, {1, 0}, {1, 0}, {1, 2}, 1};
    optest_gradcheck(dev, "conv_transpose2d stride pad outpad dilation", f_convt, &t1, 3,
                     IN({SH(2, 2, 3, 3)}, {SH(2, 3, 3, 2)}, {SH(3)}));
    clg_conv_transpose2d_params t2 = {{2, 2}, {0, 0}, {0, 0}, {1, 1}, 2};
    optest_gradcheck(dev, "conv_transpose2d groups 2", f_convt_nobias, &t2, 2, IN({SH(1, 4, 2, 3)}, {SH(4, 1, 2, 2)}));
    optest_gradcheck(dev, "upsample_nearest2d", f_nearest, NULL, 1, IN({SH(1, 2, 3, 4)}));
    optest_gradcheck(dev, "upsample_nearest2d x2", f_nearest2, NULL, 1, IN({SH(1, 2, 3, 4)}));
    optest_gradcheck(dev, "upsample_bilinear2d", f_bilinear, NULL, 1, IN({SH(1, 2, 3, 4)}));
    optest_gradcheck(dev, "upsample_bilinear2d align_corners", f_bilinear_aligned, NULL, 1, IN({SH(1, 2, 3, 4)}));
    optest_gradcheck(dev, "group_norm", f_group_norm, NULL, 3, IN({SH(2, 4, 3)}, {SH(4)}, {SH(4)}));
}

typedef struct pool_args { int kh, kw, sh, sw, ph, pw; bool include_pad; } pool_args;

static clg_tensor *f_max(clg_tensor **x, void *c)
{
    pool_args *a = c;
    return clg_max_pool2d(x[0], a->kh, a->kw, a->sh, a->sw, a->ph, a->pw);
}
static clg_tensor *f_avg(clg_tensor **x, void *c)
{
    pool_args *a = c;
    return clg_avg_pool2d(x[0], a->kh, a->kw, a->sh, a->sw, a->ph, a->pw, a->include_pad);
}
static clg_tensor *f_global(clg_tensor **x, void *c) { (void)c; return clg_global_avg_pool2d(x[0]); }

/* all: every geometry; else only those whose dx sums columns in col2im's two ways
 * differently (stride, dilation, padding, groups) and a 1x1 (no columns), to keep
 * Oclgrind's run short: there, where each pass's kernels are checked for what they
 * touch, every pass takes these (POCL and rusticl take all where all is asked). */
static void conv_checks(clg_device *dev, bool all)
{
    clg_conv2d_params pad1 = {{1, 1}, {1, 1}, {1, 1}, 1};
    clg_conv2d_params strided = {{2, 1}, {1, 0}, {1, 2}, 1};    /* stride (2,1), pad (1,0), dilation (1,2) */
    clg_conv2d_params dil2 = {{1, 2}, {2, 1}, {2, 2}, 1};
    clg_conv2d_params groups2 = {{1, 1}, {1, 1}, {1, 1}, 2};
    clg_conv2d_params depthwise = {{2, 2}, {1, 1}, {1, 1}, 3};
    clg_conv2d_params plain = {{0, 0}, {0, 0}, {0, 0}, 0};
    optest_gradcheck(dev, "conv2d stride pad dilation", f_conv, &strided, 3,
                     IN({SH(1, 2, 6, 5)}, {SH(2, 2, 3, 2)}, {SH(2)}));
    optest_gradcheck(dev, "conv2d groups 2", f_conv_nobias, &groups2, 2, IN({SH(1, 4, 4, 4)}, {SH(4, 2, 3, 3)}));
    /* x as its own column matrix: no im2col, no col2im */
    optest_gradcheck(dev, "conv2d 1x1", f_conv, &plain, 3, IN({SH(2, 3, 3, 4)}, {SH(2, 3, 1, 1)}, {SH(2)}));
    if (!all) return;
    optest_gradcheck(dev, "conv2d pad 1", f_conv, &pad1, 3, IN({SH(2, 2, 5, 5)}, {SH(3, 2, 3, 3)}, {SH(3)}));
    optest_gradcheck(dev, "conv2d dilation 2", f_conv_nobias, &dil2, 2, IN({SH(1, 2, 5, 6)}, {SH(2, 2, 3, 3)}));
    clg_conv2d_params uneven = {{1, 1}, {1, 2}, {2, 1}, 1};   /* stride 1: dx's padding (3, 0) */
    optest_gradcheck(dev, "conv2d pad (1,2) dilation (2,1)", f_conv, &uneven, 3,
                     IN({SH(2, 2, 6, 4)}, {SH(2, 2, 3, 3)}, {SH(2)}));
    optest_gradcheck(dev, "conv2d depthwise", f_conv, &depthwise, 3, IN({SH(2, 3, 5, 4)}, {SH(3, 1, 3, 3)}, {SH(3)}));
    optest_gradcheck(dev, "conv2d weight only", f_conv, &pad1, 3,
                     IN({SH(1, 2, 4, 4), .constant = true}, {SH(2, 2, 3, 3)}, {SH(2)}));
}

static void pool_checks(clg_device *dev)
{
    /* distinct values 0.02 apart (37 is prime to 100): no ties within eps */
    double v[100];
    for (int i = 0; i < 100; i++) v[i] = (double)(i * 37 % 100) / 50.0 - 1.0;
    pool_args s2p1 = {3, 3, 2, 2, 1, 1, true}, s1 = {3, 3, 1, 1, 0, 0, true}, k2 = {2, 2, 2, 2, 0, 0, true};
    pool_args rect = {3, 2, 2, 1, 1, 1, false}, s2p1x = {3, 3, 2, 2, 1, 1, false};
    optest_gradcheck(dev, "max_pool2d 3x3 s2 pad 1", f_max, &s2p1, 1, IN({SH(2, 2, 5, 5), .values = v}));
    optest_gradcheck(dev, "max_pool2d 3x3 s1 overlapping", f_max, &s1, 1, IN({SH(1, 2, 5, 5), .values = v}));
    /* 2 x 2 / 2 (max_pool_2x2_bw): dx written window by window; an odd side's last column
     * or row zeroed first */
    optest_gradcheck(dev, "max_pool2d 2x2 s2", f_max, &k2, 1, IN({SH(1, 2, 4, 5), .values = v}));
    optest_gradcheck(dev, "max_pool2d 2x2 s2 even sides", f_max, &k2, 1, IN({SH(2, 2, 4, 6), .values = v}));
    optest_gradcheck(dev, "max_pool2d 2x2 s2 odd height", f_max, &k2, 1, IN({SH(1, 2, 5, 4), .values = v}));
    optest_gradcheck(dev, "avg_pool2d 3x3 s2 pad 1 incl", f_avg, &s2p1, 1, IN({SH(2, 2, 5, 5)}));
    optest_gradcheck(dev, "avg_pool2d 3x3 s2 pad 1 excl", f_avg, &s2p1x, 1, IN({SH(2, 2, 5, 5)}));
    optest_gradcheck(dev, "avg_pool2d 3x2 s(2,1) excl", f_avg, &rect, 1, IN({SH(1, 2, 5, 4)}));
    /* disjoint windows (stride >= kernel): pool.c's loop-free kernel, uncovered pixels 0
     * (the simulators take the first two and the quotient's correction) */
    pool_args s3 = {2, 2, 3, 3, 0, 0, true}, k3p1 = {3, 3, 3, 3, 1, 1, true}, k3p1x = {3, 3, 3, 3, 1, 1, false};
    pool_args col = {2, 1, 2, 1, 0, 0, false};
    optest_gradcheck(dev, "avg_pool2d 2x2 s2 odd sides", f_avg, &k2, 1, IN({SH(1, 1, 5, 5)}));
    optest_gradcheck(dev, "avg_pool2d 3x3 s3 pad 1 excl", f_avg, &k3p1x, 1, IN({SH(1, 1, 5, 4)}));
    if (!optest_small()) {
        optest_gradcheck(dev, "avg_pool2d 2x2 s3 gaps", f_avg, &s3, 1, IN({SH(1, 2, 5, 7)}));
        optest_gradcheck(dev, "max_pool2d 2x2 s3 gaps", f_max, &s3, 1, IN({SH(1, 2, 5, 7), .values = v}));
        optest_gradcheck(dev, "avg_pool2d 3x3 s3 pad 1 incl", f_avg, &k3p1, 1, IN({SH(2, 1, 7, 5)}));
        optest_gradcheck(dev, "avg_pool2d 2x1 s(2,1) excl", f_avg, &col, 1, IN({SH(1, 1, 6, 3)}));
    }
    /* a long window and a stride that is no power of two (the kernel's quotient by
     * clg_udiv), pixel 41 the first of the second window */
    pool_args w41 = {1, 41, 1, 41, 0, 0, false};
    optest_gradcheck(dev, "avg_pool2d 1x41 s41", f_avg, &w41, 1, IN({SH(1, 1, 1, 83)}));
    optest_gradcheck(dev, "global_avg_pool2d", f_global, NULL, 1, IN({SH(2, 3, 3, 4)}));
}

/* All-equal windows: each window's gradient goes to its first (top-left) pixel. */
static void max_tie_check(clg_device *dev, int k, int s, const double *want)
{
    clg_scope_begin(dev);
    clg_tensor *x = clg_ones(dev, CLG_F32, CLG_SHAPE(1, 1, 4, 4));
    CHECK_OK(dev, clg_tensor_set_requires_grad(x, true));
    clg_tensor *y = clg_sum(clg_max_pool2d(x, k, k, s, s, 0, 0), 0, NULL, false);
    CHECK_OK(dev, clg_backward(y, NULL));
    optest_close(k == 2 ? "max_pool2d ties 2x2 s2" : "max_pool2d ties 3x3 s1", clg_tensor_grad(x), want, 16, 0, 0);
    clg_scope_end(dev);   /* x and its gradient go with the scope */
}

/* A conv2d backward under both values of a device parameter: the gradient of x (dx) or
 * of w gives the same bits (tol 0), or agrees within tol of its largest value (sums in
 * another order). The parameter is left at its first value. */
static void variants_agree_tol(clg_device *dev, const char *param, const char *const values[2], int64_t n,
                               const clg_conv2d_params *geo, bool dx, const char *what, double tol)
{
    size_t len = (size_t)(dx ? n * 4 * 9 * 8 : 6 * 2 * 3 * 3);
    float *got[2] = {calloc(len, sizeof(float)), calloc(len, sizeof(float))};
    for (int v = 0; v < 2; v++) {
        CHECK_OK(dev, clg_device_set_param(dev, param, values[v]));
        clg_scope_begin(dev);
        clg_manual_seed(dev, 7);   /* the same numbers for both */
        clg_tensor *x = clg_rand(dev, CLG_F32, SH(n, 4, 9, 8), -1, 1);
        clg_tensor *w = clg_rand(dev, CLG_F32, SH(6, 2, 3, 3), -1, 1);
        CHECK_OK(dev, clg_tensor_set_requires_grad(dx ? x : w, true));
        clg_tensor *y = clg_conv2d(x, w, NULL, geo);
        clg_tensor *gy = clg_rand(dev, CLG_F32, 4, y ? clg_tensor_shape(y) : (int64_t[]){1, 1, 1, 1}, -1, 1);
        CHECK_OK(dev, clg_backward(y, gy));
        CHECK_OK(dev, clg_tensor_to_host(clg_tensor_grad(dx ? x : w), got[v], len * sizeof(float)));
        clg_scope_end(dev);
    }
    double worst = 0, big = 0;
    for (size_t i = 0; i < len; i++) {
        worst = fmax(worst, fabs((double)got[0][i] - got[1][i]));
        big = fmax(big, fabs((double)got[0][i]));
    }
    if (tol == 0)
        CHECK_MSG(!memcmp(got[0], got[1], len * sizeof(float)), "%s: %s %s and %s differ", what, param, values[0],
                  values[1]);
    else
        CHECK_MSG(big > 0 && worst <= tol * big, "%s: %s %s and %s differ by %g of %g", what, param, values[0],
                  values[1], worst, big);
    CHECK_OK(dev, clg_device_set_param(dev, param, values[0]));
    free(got[0]);
    free(got[1]);
}

/* The forward with a bias, y = conv2d(x, w, b) over [3, 16, 9, 8] (2 groups: k = 72, in
 * slices where item_loops is 64), under two values of a parameter: within tol of the
 * larger |y| (a product in slices of k adds the bias after the last one: gemm.cl
 * store_grid). */
static void forward_agree(clg_device *dev, const char *param, const char *const values[2],
                          const clg_conv2d_params *geo, const char *what, double tol)
{
    float *got[2] = {NULL, NULL};
    size_t len = 0;
    for (int v = 0; v < 2; v++) {
        CHECK_OK(dev, clg_device_set_param(dev, param, values[v]));
        clg_scope_begin(dev);
        clg_manual_seed(dev, 11);
        clg_tensor *x = clg_rand(dev, CLG_F32, SH(3, 16, 9, 8), -1, 1);
        clg_tensor *w = clg_rand(dev, CLG_F32, SH(6, 8, 3, 3), -1, 1);
        clg_tensor *b = clg_rand(dev, CLG_F32, SH(6), -1, 1);
        clg_tensor *y = clg_conv2d(x, w, b, geo);
        CHECK_OK(dev, y ? CLG_OK : CLG_ERR_INVALID_ARGUMENT);
        len = y ? (size_t)clg_tensor_numel(y) : 0;
        got[v] = calloc(len ? len : 1, sizeof(float));
        if (y) CHECK_OK(dev, clg_tensor_to_host(y, got[v], len * sizeof(float)));
        clg_scope_end(dev);
    }
    double worst = 0, big = 0;
    for (size_t i = 0; i < len; i++) {
        worst = fmax(worst, fabs((double)got[0][i] - got[1][i]));
        big = fmax(big, fabs((double)got[0][i]));
    }
    CHECK_MSG(big > 0 && worst <= tol * big, "%s: %s %s and %s differ by %g of %g", what, param, values[0], values[1],
              worst, big);
    CHECK_OK(dev, clg_device_set_param(dev, param, values[0]));
    free(got[0]);
    free(got[1]);
}

static void variants_agree(clg_device *dev, const char *param, const char *const values[2], int64_t n,
                           const clg_conv2d_params *geo, bool dx, const char *what)
{
    variants_agree_tol(dev, param, values, n, geo, dx, what, 0);
}

/* The bias's gradient by row sums (row_reduce = items) and in one launch of a group per
 * channel (groups, conv.c grad_bias_groups), against the sums of dy computed here:
 * written into .grad (its first contribution), then added to it (the second), float32
 * and float64, over 63 pixels a channel (not a power of two: a group's last walk is short). */
static void bias_grad_ways(clg_device *dev)
{
    enum { N = 3, O = 5, H = 9, W = 7 };
    bool items = clg__device_params(dev)->row_items;
    static double gy[N * O * H * W], want[O];
    for (int i = 0; i < N * O * H * W; i++) gy[i] = (double)((i * 29) % 23) / 8.0 - 1.0;
    for (int c = 0; c < O; c++) {
        want[c] = 0;
        for (int n = 0; n < N; n++)
            for (int p = 0; p < H * W; p++) want[c] += 2 * gy[(n * O + c) * H * W + p];
    }
    clg_dtype dts[2] = {CLG_F32, CLG_F64};
    for (int d = 0; d < 1 + optest_fp64(dev); d++)
        for (int v = 0; v < 2; v++) {
            CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", v ? "groups" : "items"));
            clg_scope_begin(dev);
            clg_tensor *x = clg_rand(dev, dts[d], SH(N, 2, H, W), -1, 1), *w = clg_rand(dev, dts[d], SH(O, 2, 3, 3), -1, 1);
            clg_tensor *b = clg_zeros(dev, dts[d], SH(O)), *g = optest_tensor(dev, dts[d], SH(N, O, H, W), gy, OPTEST_CONTIGUOUS);
            CHECK_OK(dev, clg_tensor_set_requires_grad(b, true));
            clg_conv2d_params pad1 = {{1, 1}, {1, 1}, {1, 1}, 1};
            for (int k = 0; k < 2; k++) CHECK_OK(dev, clg_backward(clg_conv2d(x, w, b, &pad1), g));
            char what[96];
            snprintf(what, sizeof what, "conv2d bias gradient %s, row_reduce %s", clg_dtype_name(dts[d]),
                     v ? "groups" : "items");
            optest_close(what, clg_tensor_grad(b), want, O, 1e-5, 1e-5);
            clg_scope_end(dev);
        }
    CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", items ? "items" : "groups"));
}

/* col2im = planes and = gather: the same bits (the taps are added in the same order). */
static void col2im_variants_agree(clg_device *dev)
{
    clg_conv2d_params geo = {{2, 1}, {2, 1}, {1, 2}, 2};
    variants_agree(dev, "col2im", (const char *const[]){"planes", "gather"}, 2, &geo, true, "conv2d dx");
}

/* The weight gradient from the forward's kept columns and from rebuilt ones: the same
 * bits (the same columns, the same products). */
static void kept_columns_agree(clg_device *dev)
{
    clg_conv2d_params geo = {{2, 1}, {1, 1}, {1, 1}, 2};
    variants_agree(dev, "conv_columns", (const char *const[]){"keep", "rebuild"}, 3, &geo, false, "conv2d dW");
}

/* The batch whole and in chunks of images (conv_chunk bytes of columns per chunk: 1 is
 * an image each; 10368 is two of these images, so three images go as 2 + 1): the same
 * bits for dx (the same products, summed in the same order); dW within float32
 * rounding (where the engine sums over images in its products, a chunk's sum is added
 * to the last: another order). */
static void chunks_agree(clg_device *dev)
{
    clg_conv2d_params geo = {{2, 1}, {2, 1}, {1, 2}, 2};   /* 6 x 6 outputs: 4*9*36 floats per image */
    char was[32];
    snprintf(was, sizeof was, "%zu", clg__device_params(dev)->conv_chunk);
    variants_agree(dev, "conv_chunk", (const char *const[]){"0", "1"}, 3, &geo, true, "conv2d dx");
    variants_agree(dev, "conv_chunk", (const char *const[]){"0", "10368"}, 3, &geo, true, "conv2d dx");
    variants_agree_tol(dev, "conv_chunk", (const char *const[]){"0", "10368"}, 3, &geo, false, "conv2d dW", 1e-6);
    /* 40 images summed in launches of 21 where item_loops is 256 (gemm_dot's loops), or in one */
    variants_agree_tol(dev, "item_loops", (const char *const[]){"32768", "256"}, 40, &geo, false, "conv2d dW", 1e-6);
    /* and against the references, on the geometries that differ as the col2im-gather and
     * rebuilt-columns passes (splitting the batch does not depend on the geometry; all
     * of them took 18 s of test_grad_conv's 70 on rusticl) */
    CHECK_OK(dev, clg_device_set_param(dev, "conv_chunk", "1"));
    conv_checks(dev, false);
    CHECK_OK(dev, clg_device_set_param(dev, "conv_chunk", was));
}

/* Stride-1 convolutions with and without columns (conv_shift, src/tensor/conv_shift.c):
 * dx and dW within float32 rounding (sums in another order); with item_loops 256 the
 * shifted products go in slices of k (gemm_tiles_rows' steps, the weight gradient's dot
 * products over the images' planes; the tiled engine's launches, its weight gradient's
 * slices side by side), against whole ones. Padding (1, 2), dilation (2, 1)
 * and 2 groups: the input gradient's own padding (3, 0) differs from the forward's. */
static void shift_agree(clg_device *dev)
{
    clg_conv2d_params geo = {{1, 1}, {1, 2}, {2, 1}, 2};
    const char *const on_off[2] = {"on", "off"}, *const loops[2] = {"32768", "256"};
    variants_agree_tol(dev, "conv_shift", on_off, 3, &geo, true, "conv2d dx", 1e-6);
    variants_agree_tol(dev, "conv_shift", on_off, 3, &geo, false, "conv2d dW", 1e-6);
    variants_agree_tol(dev, "item_loops", loops, 3, &geo, true, "conv2d dx", 1e-6);
    /* the forward stores y cropped, its bias added (after the last slice of k, where sliced) */
    forward_agree(dev, "conv_shift", on_off, &geo, "conv2d y", 1e-6);
    CHECK_OK(dev, clg_device_set_param(dev, "conv_shift", "on"));
    forward_agree(dev, "item_loops", (const char *const[]){"32768", "64"}, &geo, "conv2d y", 1e-6);
    CHECK_OK(dev, clg_device_set_param(dev, "conv_shift", on_off[0]));
    /* 40 images: 150 launches of 64 steps; 3 (CLG_TEST_SMALL: Oclgrind) still take 6 */
    variants_agree_tol(dev, "item_loops", loops, optest_small() ? 3 : 40, &geo, false, "conv2d dW", 1e-6);
    /* strided: the forward and dW on phases (conv_phases, both kernels: stride 2 along w
     * takes conv_phases_w1s2), dx by the columns either way */
    clg_conv2d_params s21 = {{2, 2}, {1, 1}, {1, 1}, 2}, s32 = {{3, 1}, {2, 0}, {1, 2}, 2};
    variants_agree_tol(dev, "conv_shift", on_off, 3, &s21, false, "conv2d stride 2 dW", 1e-6);
    variants_agree_tol(dev, "conv_shift", on_off, 3, &s32, true, "conv2d stride 3x1 dx", 1e-6);
    variants_agree_tol(dev, "conv_shift", on_off, 3, &s32, false, "conv2d stride 3x1 dW", 1e-6);
}

/* upsample_bilinear2d by its kernels and, where item_loops (64) is shorter than twice
 * the 35 outputs met by one input row, by the composed ops: y and dx agree. */
static void bilinear_paths_agree(clg_device *dev)
{
    enum { NY = 2 * 3 * 70 * 5, NX = 2 * 3 * 2 * 3 };
    float got[2][NY + NX];
    for (int v = 0; v < 2; v++) {
        CHECK_OK(dev, clg_device_set_param(dev, "item_loops", v ? "64" : "32768"));
        clg_scope_begin(dev);
        clg_manual_seed(dev, 5);
        clg_tensor *x = clg_rand(dev, CLG_F32, SH(2, 3, 2, 3), -1, 1);
        CHECK_OK(dev, clg_tensor_set_requires_grad(x, true));
        clg_tensor *y = clg_upsample_bilinear2d(x, 70, 5);
        clg_tensor *gy = clg_rand(dev, CLG_F32, SH(2, 3, 70, 5), -1, 1);
        CHECK_OK(dev, clg_backward(y, gy));
        CHECK_OK(dev, clg_tensor_to_host(y, got[v], NY * sizeof(float)) ||
                          clg_tensor_to_host(clg_tensor_grad(x), got[v] + NY, NX * sizeof(float)));
        clg_scope_end(dev);
    }
    double worst = 0, big = 0;
    for (int i = 0; i < NY + NX; i++) {
        worst = fmax(worst, fabs((double)got[0][i] - got[1][i]));
        big = fmax(big, fabs((double)got[1][i]));
    }
    CHECK_MSG(big > 0 && worst <= 1e-5 * big, "upsample_bilinear2d: kernels and composed ops differ by %g of %g", worst,
              big);
    CHECK_OK(dev, clg_device_set_param(dev, "item_loops", "32768"));
}

int main(int argc, char **argv)
{
    clg_device *dev = check_open_device();
    if (argc > 1 && !strcmp(argv[1], "--shift-only")) {
        /* the products without columns alone: another engine's (CLG_PARAMS gemm=tiled) */
        shift_agree(dev);
        clg_device_close(dev);
        return check_report("test_grad_conv --shift-only");
    }
    /* Stride-1 geometries without columns where the device table says so (conv_shift);
     * then im2col's machinery (col2im both ways, kept and rebuilt columns, chunks) for
     * every geometry, conv_shift off. */
    bool shift = clg__device_params(dev)->conv_shift;
    /* conv_checks runs four times, under other kernels: the numeric derivatives once
     * (on rusticl they were 26 of the test's 71 s). */
    optest_gradcheck_keep(true);
    CHECK_OK(dev, clg_device_set_param(dev, "conv_shift", "on"));
    if (!optest_small()) conv_checks(dev, true);   /* Oclgrind: shift_agree's comparisons only */
    shift_agree(dev);
    CHECK_OK(dev, clg_device_set_param(dev, "conv_shift", "off"));
    kept_columns_agree(dev);
    /* Both ways of summing the input gradient, whatever the device's default. */
    CHECK_OK(dev, clg_device_set_param(dev, "col2im", "planes"));
    conv_checks(dev, !optest_small());   /* Oclgrind: the geometries that differ, as below */
    CHECK_OK(dev, clg_device_set_param(dev, "col2im", "gather"));
    conv_checks(dev, false);
    CHECK_OK(dev, clg_device_set_param(dev, "conv_columns", "rebuild"));   /* dW from rebuilt columns */
    conv_checks(dev, false);
    CHECK_OK(dev, clg_device_set_param(dev, "conv_columns", "keep"));
    col2im_variants_agree(dev);
    chunks_agree(dev);
    bias_grad_ways(dev);
    CHECK_OK(dev, clg_device_set_param(dev, "conv_shift", shift ? "on" : "off"));
    bilinear_paths_agree(dev);
    pool_checks(dev);
    more_layer_checks(dev);
    const double tie2[16] = {1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0};
    const double tie3[16] = {1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    max_tie_check(dev, 2, 2, tie2);
    max_tie_check(dev, 3, 1, tie3);
    optest_gradcheck_keep(false);
    clg_device_close(dev);
    return check_report("test_grad_conv");
}
