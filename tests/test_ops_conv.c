/* conv2d, max_pool2d, avg_pool2d and global_avg_pool2d forward against plain-C
 * double references: strides, padding, dilation, groups (depthwise too), kernel
 * sizes, non-square shapes, odd sizes, inputs in every optest layout, bias or none,
 * float64, NaN in a max window, zero batches, and the errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optest.h"
#include "tensor/conv.h"

typedef struct conv_case {
    const char *name;
    int64_t N, C, H, W, O, KH, KW;
    clg_conv2d_params p;   /* zeros: the defaults (stride 1, dilation 1, groups 1) */
    bool bias;
} conv_case;

static int64_t one(int v) { return v ? v : 1; }
static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

/* y[n][o][i][j] = b[o] + sum over c in o's group, ki, kj of x[n][c][i*s - p + ki*d][...] w[o][c][ki][kj] */
static void ref_conv(const conv_case *c, const double *x, const double *w, const double *b, double *y)
{
    int64_t G = one(c->p.groups), sh = one(c->p.stride[0]), sw = one(c->p.stride[1]);
    int64_t dh = one(c->p.dilation[0]), dw = one(c->p.dilation[1]), ph = c->p.padding[0], pw = c->p.padding[1];
    int64_t OH = out_size(c->H, c->KH, sh, ph, dh), OW = out_size(c->W, c->KW, sw, pw, dw);
    int64_t cg = c->C / G, og = c->O / G;
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t o = 0; o < c->O; o++)
            for (int64_t i = 0; i < OH; i++)
                for (int64_t j = 0; j < OW; j++) {
                    double s = b ? b[o] : 0;
                    for (int64_t ci = 0; ci < cg; ci++)
                        for (int64_t ki = 0; ki < c->KH; ki++)
                            for (int64_t kj = 0; kj < c->KW; kj++) {
                                int64_t ih = i * sh - ph + ki * dh, iw = j * sw - pw + kj * dw;
                                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                                int64_t ch = o / og * cg + ci;
                                s += x[((n * c->C + ch) * c->H + ih) * c->W + iw] *
                                     w[((o * cg + ci) * c->KH + ki) * c->KW + kj];
                            }
                    y[((n * c->O + o) * OH + i) * OW + j] = s;
                }
}

static void check_conv(clg_device *dev, const conv_case *c, clg_dtype dtype, optest_layout layout, clg_conv_algo algo)
{
    int64_t G = one(c->p.groups);
    int64_t OH = out_size(c->H, c->KH, one(c->p.stride[0]), c->p.padding[0], one(c->p.dilation[0]));
    int64_t OW = out_size(c->W, c->KW, one(c->p.stride[1]), c->p.padding[1], one(c->p.dilation[1]));
    int64_t nx = c->N * c->C * c->H * c->W, nw = c->O * (c->C / G) * c->KH * c->KW, ny = c->N * c->O * OH * OW;
    double *x = malloc((size_t)(nx + 1) * sizeof *x), *w = malloc((size_t)nw * sizeof *w);
    double *b = malloc((size_t)c->O * sizeof *b), *y = malloc((size_t)(ny + 1) * sizeof *y);
    optest_fill(x, nx, -1, 1, 11);
    optest_fill(w, nw, -1, 1, 12);
    optest_fill(b, c->O, -1, 1, 13);
    ref_conv(c, x, w, c->bias ? b : NULL, y);
    clg_scope_begin(dev);
    clg_tensor *tx = optest_tensor(dev, dtype, CLG_SHAPE(c->N, c->C, c->H, c->W), x, layout);
    clg_tensor *tw = optest_tensor(dev, dtype, CLG_SHAPE(c->O, c->C / G, c->KH, c->KW), w, layout);
    clg_tensor *tb = c->bias ? optest_tensor(dev, dtype, CLG_SHAPE(c->O), b, layout) : NULL;
    char what[160];
    snprintf(what, sizeof what, "conv2d %s %s %s%s", c->name, clg_dtype_name(dtype), optest_layout_names[layout],
             algo == CLG_CONV_DIRECT ? " direct" : "");
    clg_tensor *out = algo == CLG_CONV_GEMM ? clg_conv2d(tx, tw, tb, &c->p) : clg__conv2d_with(tx, tw, tb, &c->p, algo);
    if (!out) fprintf(stderr, "%s: %s\n", what, clg_device_error(dev));
    optest_close(what, out, y, ny, 1e-4, 1e-4);
    if (out) {
        const int64_t *s = clg_tensor_shape(out);
        CHECK_MSG(s[0] == c->N && s[1] == c->O && s[2] == OH && s[3] == OW, "%s: shape", what);
    }
    clg_scope_end(dev);
    free(x);
    free(w);
    free(b);
    free(y);
}

static const conv_case conv_cases[] = {
    {"3x3", 1, 3, 7, 7, 4, 3, 3, {{0, 0}, {0, 0}, {0, 0}, 0}, true},
    {"3x3 pad 1 batch 3", 3, 2, 6, 5, 3, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, true},
    {"5x5 pad 2 no bias", 2, 1, 9, 8, 5, 5, 5, {{1, 1}, {2, 2}, {1, 1}, 1}, false},
    {"stride 2 odd", 2, 3, 11, 9, 4, 3, 3, {{2, 2}, {1, 1}, {0, 0}, 0}, true},
    {"stride 2x1 pad 2x0", 1, 2, 8, 7, 3, 3, 2, {{2, 1}, {2, 0}, {0, 0}, 0}, true},
    {"dilation 2", 2, 2, 9, 10, 3, 3, 3, {{1, 1}, {2, 2}, {2, 2}, 1}, true},
    {"dilation 2x1 stride 2", 1, 3, 12, 9, 2, 3, 3, {{2, 2}, {1, 0}, {2, 1}, 1}, false},
    {"1x1", 2, 4, 5, 6, 3, 1, 1, {{0, 0}, {0, 0}, {0, 0}, 0}, true},
    {"1x1 stride 2", 2, 4, 5, 6, 3, 1, 1, {{2, 2}, {0, 0}, {0, 0}, 0}, true},
    {"groups 2", 3, 4, 7, 6, 6, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 2}, true},
    {"groups 4 depthwise", 2, 4, 6, 7, 4, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 4}, true},
    {"depthwise x2 stride 2", 1, 4, 9, 9, 8, 3, 3, {{2, 2}, {1, 1}, {1, 1}, 4}, false},
    {"non-square 3x5", 2, 3, 8, 11, 4, 3, 5, {{1, 2}, {1, 2}, {1, 1}, 1}, true},
    {"kernel = input", 2, 3, 4, 5, 2, 4, 5, {{0, 0}, {0, 0}, {0, 0}, 0}, true},
    /* gemm_tiles_rows' micro-tiles three panels wide (RMR 8) reaching the last, partial
     * panel, with rows past M: a grid of 20 x 21 = 420 columns (27 panels) on a device of
     * one compute unit (Oclgrind); below, 2 x 15 x 43 = 1,290 (81) on two (POCL here) */
    {"wide tiles 3x3 pad 1", 1, 1, 19, 20, 5, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, false},
    {"wide tiles 13 outputs", 2, 2, 14, 42, 13, 3, 3, {{1, 1}, {1, 1}, {1, 1}, 1}, false},
    {"cnn layer 2 shape", 2, 16, 14, 14, 32, 5, 5, {{1, 1}, {2, 2}, {1, 1}, 1}, true},
};
#define LARGE_CASES 2   /* the last ones: not with CLG_TEST_SMALL (the CNN's 5M-product layer) */

static void test_conv(clg_device *dev)
{
    size_t n = sizeof conv_cases / sizeof conv_cases[0];
    if (optest_small()) n -= LARGE_CASES;
    for (size_t i = 0; i < n; i++)
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            check_conv(dev, &conv_cases[i], CLG_F32, (optest_layout)l, CLG_CONV_GEMM);
            /* the measured alternative (bench_conv) computes the same */
            check_conv(dev, &conv_cases[i], CLG_F32, (optest_layout)l, CLG_CONV_DIRECT);
        }
    /* The batch in chunks of one image each (conv_chunk: bytes of columns per chunk),
     * whatever the device's default: every image its own im2col and GEMM; stride-1
     * convolutions too (conv_shift off: above, they read their input shifted, with no
     * columns, where the device table says so). */
    bool shift = clg__device_params(dev)->conv_shift;
    CHECK_OK(dev, clg_device_set_param(dev, "conv_shift", "off"));
    char was[32];
    snprintf(was, sizeof was, "%zu", clg__device_params(dev)->conv_chunk);
    CHECK_OK(dev, clg_device_set_param(dev, "conv_chunk", "1"));
    for (size_t i = 0; i < n; i++) check_conv(dev, &conv_cases[i], CLG_F32, OPTEST_SLICED, CLG_CONV_GEMM);
    CHECK_OK(dev, clg_device_set_param(dev, "conv_chunk", "0"));
    for (size_t i = 0; i < n; i++) check_conv(dev, &conv_cases[i], CLG_F32, OPTEST_CONTIGUOUS, CLG_CONV_GEMM);
    CHECK_OK(dev, clg_device_set_param(dev, "conv_chunk", was));
    /* and the other way of stride-1 convolutions than the device's own */
    CHECK_OK(dev, clg_device_set_param(dev, "conv_shift", shift ? "off" : "on"));
    for (size_t i = 0; i < n; i++) check_conv(dev, &conv_cases[i], CLG_F32, OPTEST_PERMUTED, CLG_CONV_GEMM);
    CHECK_OK(dev, clg_device_set_param(dev, "conv_shift", shift ? "on" : "off"));
    if (optest_fp64(dev)) {
        check_conv(dev, &conv_cases[1], CLG_F64, OPTEST_CONTIGUOUS, CLG_CONV_GEMM);
        check_conv(dev, &conv_cases[9], CLG_F64, OPTEST_PERMUTED, CLG_CONV_GEMM);
        check_conv(dev, &conv_cases[7], CLG_F64, OPTEST_CONTIGUOUS, CLG_CONV_GEMM);
        check_conv(dev, &conv_cases[11], CLG_F64, OPTEST_SLICED, CLG_CONV_DIRECT);
    }
}

/* ---- pooling ------------------------------------------------------------------------------------------ */

typedef struct pool_case {
    const char *name;
    int64_t N, C, H, W;
    int kh, kw, sh, sw, ph, pw;
} pool_case;

/* max (NaN wins), or average with or without the padding counted */
static void ref_pool(const pool_case *c, const double *x, double *y, int mode)
{
    int64_t OH = (c->H + 2 * c->ph - c->kh) / c->sh + 1, OW = (c->W + 2 * c->pw - c->kw) / c->sw + 1;
    for (int64_t nc = 0; nc < c->N * c->C; nc++)
        for (int64_t i = 0; i < OH; i++)
            for (int64_t j = 0; j < OW; j++) {
                double m = -INFINITY, s = 0;
                int64_t cnt = 0, h0 = i * c->sh - c->ph, w0 = j * c->sw - c->pw;
                for (int64_t ih = h0; ih < h0 + c->kh; ih++)
                    for (int64_t iw = w0; iw < w0 + c->kw; iw++) {
                        if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W) continue;
                        double v = x[(nc * c->H + ih) * c->W + iw];
                        m = (isnan(v) || v > m) && !isnan(m) ? v : m;
                        s += v;
                        cnt++;
                    }
                int64_t full = (h0 + c->kh > c->H + c->ph ? c->H + c->ph - h0 : c->kh) *
                               (w0 + c->kw > c->W + c->pw ? c->W + c->pw - w0 : c->kw);
                y[(nc * OH + i) * OW + j] = mode == 0 ? m : s / (double)(mode == 1 ? full : cnt);
            }
}

static void check_pool(clg_device *dev, const pool_case *c, optest_layout layout, bool with_nan)
{
    int64_t nx = c->N * c->C * c->H * c->W;
    int64_t ny = c->N * c->C * ((c->H + 2 * c->ph - c->kh) / c->sh + 1) * ((c->W + 2 * c->pw - c->kw) / c->sw + 1);
    double *x = malloc((size_t)(nx + 1) * sizeof *x), *y = malloc((size_t)(ny + 1) * sizeof *y);
    optest_fill(x, nx, -2, 2, 21);
    if (with_nan) x[nx / 2] = NAN;
    char what[160];
    clg_scope_begin(dev);
    clg_tensor *tx = optest_tensor(dev, CLG_F32, CLG_SHAPE(c->N, c->C, c->H, c->W), x, layout);
    const char *names[3] = {"max_pool2d", "avg_pool2d incl pad", "avg_pool2d excl pad"};
    for (int mode = 0; mode < 3; mode++) {
        ref_pool(c, x, y, mode);
        snprintf(what, sizeof what, "%s %s %s%s", names[mode], c->name, optest_layout_names[layout],
                 with_nan ? " nan" : "");
        clg_tensor *out = mode == 0 ? clg_max_pool2d(tx, c->kh, c->kw, c->sh, c->sw, c->ph, c->pw)
                                    : clg_avg_pool2d(tx, c->kh, c->kw, c->sh, c->sw, c->ph, c->pw, mode == 1);
        optest_close(what, out, y, ny, 1e-5, 1e-5);
    }
    clg_scope_end(dev);
    free(x);
    free(y);
}

static const pool_case pool_cases[] = {
    {"2x2 s2", 2, 3, 8, 8, 2, 2, 2, 2, 0, 0},
    {"2x2 s2 odd", 1, 2, 7, 9, 2, 2, 2, 2, 0, 0},
    {"3x3 s1 pad 1", 2, 2, 6, 5, 3, 3, 1, 1, 1, 1},
    {"3x3 s2 pad 1", 3, 1, 9, 7, 3, 3, 2, 2, 1, 1},
    {"3x2 s(2,1) pad(1,0)", 1, 3, 7, 6, 3, 2, 2, 1, 1, 0},
    {"2x4 pad(1,2) s3", 2, 2, 8, 10, 2, 4, 3, 3, 1, 2},
    {"whole plane", 2, 2, 5, 4, 5, 4, 1, 1, 0, 0},
};

static void test_pools(clg_device *dev)
{
    size_t n = sizeof pool_cases / sizeof pool_cases[0];
    for (size_t i = 0; i < n; i++)
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) check_pool(dev, &pool_cases[i], (optest_layout)l, false);
    check_pool(dev, &pool_cases[0], OPTEST_CONTIGUOUS, true);
    check_pool(dev, &pool_cases[2], OPTEST_PERMUTED, true);
}

static void test_global_avg(clg_device *dev)
{
    double x[2 * 3 * 5 * 4], want[6];
    optest_fill(x, 120, -1, 1, 31);
    for (int p = 0; p < 6; p++) {
        double s = 0;
        for (int k = 0; k < 20; k++) s += x[p * 20 + k];
        want[p] = s / 20;
    }
    clg_scope_begin(dev);
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
        clg_tensor *y = clg_global_avg_pool2d(optest_tensor(dev, CLG_F32, CLG_SHAPE(2, 3, 5, 4), x, (optest_layout)l));
        optest_close("global_avg_pool2d", y, want, 6, 1e-6, 1e-5);
        CHECK(y && clg_tensor_ndim(y) == 4 && clg_tensor_dim(y, 2) == 1 && clg_tensor_dim(y, 3) == 1);
    }
    if (optest_fp64(dev))
        optest_close("global_avg_pool2d f64",
                     clg_global_avg_pool2d(optest_tensor(dev, CLG_F64, CLG_SHAPE(2, 3, 5, 4), x, OPTEST_SLICED)), want,
                     6, 1e-12, 1e-12);
    clg_scope_end(dev);
}

/* ---- zero batch and errors ------------------------------------------------------------------------------ */

static void check_shape(const char *what, clg_tensor *t, int64_t n, int64_t c, int64_t h, int64_t w)
{
    const int64_t *s = t ? clg_tensor_shape(t) : NULL;
    CHECK_MSG(s && clg_tensor_ndim(t) == 4 && s[0] == n && s[1] == c && s[2] == h && s[3] == w, "%s", what);
}

static void test_zero_batch(clg_device *dev)
{
    clg_scope_begin(dev);
    clg_tensor *x = clg_zeros(dev, CLG_F32, CLG_SHAPE(0, 4, 6, 6));
    clg_tensor *w = clg_ones(dev, CLG_F32, CLG_SHAPE(2, 4, 3, 3)), *b = clg_ones(dev, CLG_F32, CLG_SHAPE(2));
    check_shape("conv2d batch 0", clg_conv2d(x, w, b, &(clg_conv2d_params){{1, 1}, {1, 1}, {1, 1}, 1}), 0, 2, 6, 6);
    check_shape("max_pool2d batch 0", clg_max_pool2d(x, 2, 2, 2, 2, 0, 0), 0, 4, 3, 3);
    check_shape("avg_pool2d batch 0", clg_avg_pool2d(x, 3, 3, 1, 1, 1, 1, false), 0, 4, 6, 6);
    check_shape("global_avg_pool2d batch 0", clg_global_avg_pool2d(x), 0, 4, 1, 1);
    clg_scope_end(dev);
}

/* f returned NULL and the message names the op and contains `shape`. */
static void expect_error(clg_device *dev, const char *what, clg_tensor *t, const char *op, const char *shape)
{
    const char *e = clg_device_error(dev);
    CHECK_MSG(t == NULL, "%s: expected an error", what);
    CHECK_MSG(strstr(e, op) && strstr(e, shape), "%s: message \"%s\" should name %s and %s", what, e, op, shape);
}

static void test_errors(clg_device *dev)
{
    clg_scope_begin(dev);
    clg_tensor *x = clg_zeros(dev, CLG_F32, CLG_SHAPE(2, 4, 5, 5));
    clg_tensor *w = clg_zeros(dev, CLG_F32, CLG_SHAPE(3, 4, 3, 3));
    clg_conv2d_params g3 = {{1, 1}, {0, 0}, {1, 1}, 3}, g2 = {{1, 1}, {0, 0}, {1, 1}, 2};
    expect_error(dev, "channels not divisible by groups", clg_conv2d(x, w, NULL, &g3), "conv2d", "[2, 4, 5, 5]");
    expect_error(dev, "weight channels vs groups", clg_conv2d(x, w, NULL, &g2), "conv2d", "[3, 4, 3, 3]");
    expect_error(dev, "weight channels", clg_conv2d(x, clg_zeros(dev, CLG_F32, CLG_SHAPE(3, 2, 3, 3)), NULL, NULL),
                 "conv2d", "[3, 2, 3, 3]");
    expect_error(dev, "kernel larger than input",
                 clg_conv2d(x, clg_zeros(dev, CLG_F32, CLG_SHAPE(3, 4, 6, 3)), NULL, NULL), "conv2d", "[3, 4, 6, 3]");
    expect_error(dev, "dilated kernel larger than input",
                 clg_conv2d(x, w, NULL, &(clg_conv2d_params){{1, 1}, {0, 0}, {3, 1}, 1}), "conv2d", "[2, 4, 5, 5]");
    expect_error(dev, "3-D input", clg_conv2d(clg_zeros(dev, CLG_F32, CLG_SHAPE(4, 5, 5)), w, NULL, NULL), "conv2d",
                 "[4, 5, 5]");
    expect_error(dev, "bad bias", clg_conv2d(x, w, clg_zeros(dev, CLG_F32, CLG_SHAPE(4)), NULL), "conv2d", "[4]");
    expect_error(dev, "negative padding", clg_conv2d(x, w, NULL, &(clg_conv2d_params){{1, 1}, {-1, 0}, {1, 1}, 1}),
                 "conv2d", "[2, 4, 5, 5]");
    if (optest_fp64(dev))
        expect_error(dev, "dtype mismatch", clg_conv2d(x, clg_zeros(dev, CLG_F64, CLG_SHAPE(3, 4, 3, 3)), NULL, NULL),
                     "conv2d", "float64");
    expect_error(dev, "int32 input",
                 clg_conv2d(clg_zeros(dev, CLG_I32, CLG_SHAPE(2, 4, 5, 5)), clg_zeros(dev, CLG_I32, CLG_SHAPE(3, 4, 3, 3)),
                            NULL, NULL),
                 "conv2d", "int32");
    expect_error(dev, "max pool 3-D", clg_max_pool2d(clg_zeros(dev, CLG_F32, CLG_SHAPE(4, 5, 5)), 2, 2, 2, 2, 0, 0),
                 "max_pool2d", "[4, 5, 5]");
    expect_error(dev, "max pool kernel too big", clg_max_pool2d(x, 6, 2, 1, 1, 0, 0), "max_pool2d", "[2, 4, 5, 5]");
    expect_error(dev, "max pool padding over half", clg_max_pool2d(x, 2, 2, 2, 2, 2, 0), "max_pool2d", "[2, 4, 5, 5]");
    expect_error(dev, "avg pool stride -1", clg_avg_pool2d(x, 2, 2, -1, 2, 0, 0, true), "avg_pool2d", "[2, 4, 5, 5]");
    /* stride 0 is the window, as PyTorch's stride=None */
    clg_tensor *a = clg_avg_pool2d(x, 2, 3, 0, 0, 0, 0, true), *b = clg_avg_pool2d(x, 2, 3, 2, 3, 0, 0, true);
    CHECK_MSG(a && b && clg_tensor_dim(a, 2) == 2 && clg_tensor_dim(a, 3) == 1, "avg pool stride 0: %s",
              clg_device_error(dev));
    double *va = a ? optest_read(a) : NULL, *vb = b ? optest_read(b) : NULL;
    CHECK_MSG(va && vb && !memcmp(va, vb, sizeof(double) * (size_t)clg_tensor_numel(a)), "avg pool stride 0 != window");
    free(va), free(vb);
    expect_error(dev, "global pool 2-D", clg_global_avg_pool2d(clg_zeros(dev, CLG_F32, CLG_SHAPE(4, 5))),
                 "global_avg_pool2d", "[4, 5]");
    CHECK(clg_conv2d(NULL, w, NULL, NULL) == NULL && clg_max_pool2d(NULL, 2, 2, 2, 2, 0, 0) == NULL);
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    test_conv(dev);
    test_pools(dev);
    test_global_avg(dev);
    test_zero_batch(dev);
    test_errors(dev);
    CHECK(clg_tensor_live_count(dev) == 0);
    clg_device_close(dev);
    return check_report("test_ops_conv");
}
