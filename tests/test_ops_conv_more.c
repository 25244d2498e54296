/* conv1d, conv_transpose2d, upsample_nearest2d, upsample_bilinear2d and group_norm
 * (src/tensor/conv_more.c) against plain-C loops in double, in every layout and float
 * dtype, with their output shapes and refusals. Gradients: test_grad_conv. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optest.h"

static clg_dtype dtypes[2];
static int ndtypes;

static double tol_of(clg_dtype dt) { return dt == CLG_F32 ? 2e-5 : 1e-10; }

/* y [N, Co, OL] = conv1d(x [N, C, L], w [Co, C/G, K], b) */
static void ref_conv1d(const double *x, const double *w, const double *b, int N, int C, int L, int Co, int K, int s,
                       int p, int d, int G, int OL, double *y)
{
    int cg = C / G, og = Co / G;
    for (int n = 0; n < N; n++)
        for (int o = 0; o < Co; o++)
            for (int l = 0; l < OL; l++) {
                double acc = b ? b[o] : 0;
                for (int c = 0; c < cg; c++)
                    for (int k = 0; k < K; k++) {
                        int at = l * s - p + k * d;
                        if (at >= 0 && at < L) acc += x[(n * C + (o / og) * cg + c) * L + at] * w[(o * cg + c) * K + k];
                    }
                y[(n * Co + o) * OL + l] = acc;
            }
}

static void test_conv1d(clg_device *dev)
{
    enum { N = 2, C = 4, L = 11, Co = 6, K = 3, G = 2 };
    const int s = 2, p = 1, d = 2, OL = (L + 2 * p - d * (K - 1) - 1) / s + 1;
    double x[N * C * L], w[Co * (C / G) * K], b[Co], want[N * Co * 8];
    optest_fill(x, N * C * L, -1, 1, 1), optest_fill(w, Co * (C / G) * K, -1, 1, 2), optest_fill(b, Co, -1, 1, 3);
    ref_conv1d(x, w, b, N, C, L, Co, K, s, p, d, G, OL, want);
    clg_conv1d_params cp = {s, p, d, G};
    for (int di = 0; di < ndtypes; di++)
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            clg_scope_begin(dev);
            char what[96];
            snprintf(what, sizeof what, "conv1d %s %s", clg_dtype_name(dtypes[di]), optest_layout_names[l]);
            clg_tensor *y = clg_conv1d(optest_tensor(dev, dtypes[di], CLG_SHAPE(N, C, L), x, (optest_layout)l),
                                       optest_tensor(dev, dtypes[di], CLG_SHAPE(Co, C / G, K), w, (optest_layout)l),
                                       optest_tensor(dev, dtypes[di], CLG_SHAPE(Co), b, OPTEST_CONTIGUOUS), &cp);
            CHECK_MSG(y && clg_tensor_ndim(y) == 3 && clg_tensor_dim(y, 2) == OL, "%s: shape: %s", what,
                      clg_device_error(dev));
            optest_close(what, y, want, N * Co * OL, tol_of(dtypes[di]), 1e-5);
            clg_scope_end(dev);
        }
    clg_scope_begin(dev);
    CHECK(clg_conv1d(clg_zeros(dev, CLG_F32, CLG_SHAPE(2, 4)), clg_zeros(dev, CLG_F32, CLG_SHAPE(3, 4, 1)), NULL,
                     NULL) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_conv1d"), "%s", clg_device_error(dev));
    clg_scope_end(dev);
}

/* y [N, Co, OH, OW] = conv_transpose2d(x [N, C, H, W], w [C, Co/G, KH, KW], b) by scattering. */
static void ref_convt(const double *x, const double *w, const double *b, const int *dim, const int *q, double *y)
{
    int N = dim[0], C = dim[1], H = dim[2], W = dim[3], Co = dim[4], KH = dim[5], KW = dim[6], G = dim[7];
    int OH = dim[8], OW = dim[9], sh = q[0], sw = q[1], ph = q[2], pw = q[3], dh = q[4], dw = q[5];
    int cg = C / G, og = Co / G;
    for (int i = 0; i < N * Co * OH * OW; i++) y[i] = b ? b[i / (OH * OW) % Co] : 0;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < H; i++)
                for (int j = 0; j < W; j++)
                    for (int o = 0; o < og; o++)
                        for (int ki = 0; ki < KH; ki++)
                            for (int kj = 0; kj < KW; kj++) {
                                int oi = i * sh - ph + ki * dh, oj = j * sw - pw + kj * dw, co = (c / cg) * og + o;
                                if (oi < 0 || oi >= OH || oj < 0 || oj >= OW) continue;
                                y[((n * Co + co) * OH + oi) * OW + oj] +=
                                    x[((n * C + c) * H + i) * W + j] * w[((c * og + o) * KH + ki) * KW + kj];
                            }
}

static void test_conv_transpose(clg_device *dev)
{
    /* {N, C, H, W, Co, KH, KW, G}, {stride h w, padding h w, dilation h w, output padding h w} */
    const int cases[][12] = {
        {2, 3, 4, 5, 2, 3, 3, 1, 1, 1, 0, 0},  /* stride 1, no padding */
        {1, 4, 3, 4, 6, 3, 2, 2, 2, 2, 1, 0},  /* stride 2, padding, groups 2 */
        {2, 2, 3, 3, 3, 2, 3, 1, 2, 3, 0, 1},  /* output padding, uneven strides */
    };
    const int dil[][2] = {{1, 1}, {1, 2}, {2, 1}};
    const int opad[][2] = {{0, 0}, {1, 0}, {1, 2}};
    for (int k = 0; k < 3; k++) {
        const int *c = cases[k];
        int N = c[0], C = c[1], H = c[2], W = c[3], Co = c[4], KH = c[5], KW = c[6], G = c[7];
        int sh = c[8], sw = c[9], ph = c[10], pw = c[11], dh = dil[k][0], dw = dil[k][1];
        int OH = (H - 1) * sh - 2 * ph + dh * (KH - 1) + opad[k][0] + 1;
        int OW = (W - 1) * sw - 2 * pw + dw * (KW - 1) + opad[k][1] + 1;
        int nx = N * C * H * W, nw = C * (Co / G) * KH * KW, ny = N * Co * OH * OW;
        double *x = malloc(sizeof(double) * (size_t)nx), *w = malloc(sizeof(double) * (size_t)nw), b[8];
        double *want = malloc(sizeof(double) * (size_t)ny);
        optest_fill(x, nx, -1, 1, 10 + (uint64_t)k), optest_fill(w, nw, -1, 1, 20 + (uint64_t)k);
        optest_fill(b, Co, -1, 1, 30);
        ref_convt(x, w, b, (const int[]){N, C, H, W, Co, KH, KW, G, OH, OW}, (const int[]){sh, sw, ph, pw, dh, dw},
                  want);
        clg_conv_transpose2d_params cp = {{sh, sw}, {ph, pw}, {opad[k][0], opad[k][1]}, {dh, dw}, G};
        for (int di = 0; di < ndtypes; di++)
            for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
                clg_scope_begin(dev);
                char what[96];
                snprintf(what, sizeof what, "conv_transpose2d case %d %s %s", k, clg_dtype_name(dtypes[di]),
                         optest_layout_names[l]);
                clg_tensor *y = clg_conv_transpose2d(
                    optest_tensor(dev, dtypes[di], CLG_SHAPE(N, C, H, W), x, (optest_layout)l),
                    optest_tensor(dev, dtypes[di], CLG_SHAPE(C, Co / G, KH, KW), w, (optest_layout)l),
                    optest_tensor(dev, dtypes[di], CLG_SHAPE(Co), b, OPTEST_CONTIGUOUS), &cp);
                CHECK_MSG(y && clg_tensor_dim(y, 1) == Co && clg_tensor_dim(y, 2) == OH && clg_tensor_dim(y, 3) == OW,
                          "%s: shape: %s", what, clg_device_error(dev));
                optest_close(what, y, want, ny, tol_of(dtypes[di]), 1e-5);
                clg_scope_end(dev);
            }
        free(x), free(w), free(want);
    }
    clg_scope_begin(dev);
    clg_tensor *x = clg_zeros(dev, CLG_F32, CLG_SHAPE(1, 3, 4, 4)), *w = clg_zeros(dev, CLG_F32, CLG_SHAPE(2, 2, 3, 3));
    CHECK(clg_conv_transpose2d(x, w, NULL, NULL) == NULL);   /* weight's first axis is not C */
    CHECK_MSG(strstr(clg_device_error(dev), "clg_conv_transpose2d"), "%s", clg_device_error(dev));
    clg_conv_transpose2d_params bad = {{2, 2}, {0, 0}, {2, 0}, {1, 1}, 1};   /* output padding >= stride */
    CHECK(clg_conv_transpose2d(x, clg_zeros(dev, CLG_F32, CLG_SHAPE(3, 2, 3, 3)), NULL, &bad) == NULL);
    clg_scope_end(dev);
}

static void test_upsample(clg_device *dev)
{
    enum { N = 2, C = 3, H = 3, W = 4, OH = 7, OW = 6 };
    double x[N * C * H * W], near[N * C * OH * OW], bil[N * C * OH * OW];
    optest_fill(x, N * C * H * W, -1, 1, 5);
    for (int nc = 0; nc < N * C; nc++)
        for (int i = 0; i < OH; i++)
            for (int j = 0; j < OW; j++) {
                near[(nc * OH + i) * OW + j] = x[(nc * H + i * H / OH) * W + j * W / OW];
                double si = fmax(0, (i + 0.5) * H / OH - 0.5), sj = fmax(0, (j + 0.5) * W / OW - 0.5);
                int i0 = (int)si, j0 = (int)sj, i1 = i0 + 1 < H ? i0 + 1 : H - 1, j1 = j0 + 1 < W ? j0 + 1 : W - 1;
                double li = si - i0, lj = sj - j0;
                const double *p = x + nc * H * W;
                bil[(nc * OH + i) * OW + j] = (1 - li) * ((1 - lj) * p[i0 * W + j0] + lj * p[i0 * W + j1]) +
                                              li * ((1 - lj) * p[i1 * W + j0] + lj * p[i1 * W + j1]);
            }
    for (int di = 0; di < ndtypes; di++)
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            clg_scope_begin(dev);
            char what[96];
            clg_tensor *t = optest_tensor(dev, dtypes[di], CLG_SHAPE(N, C, H, W), x, (optest_layout)l);
            snprintf(what, sizeof what, "upsample_nearest2d %s %s", clg_dtype_name(dtypes[di]), optest_layout_names[l]);
            optest_close(what, clg_upsample_nearest2d(t, OH, OW), near, N * C * OH * OW, 0, 1e-7);   /* float32: x rounded */
            snprintf(what, sizeof what, "upsample_bilinear2d %s %s", clg_dtype_name(dtypes[di]), optest_layout_names[l]);
            optest_close(what, clg_upsample_bilinear2d(t, OH, OW), bil, N * C * OH * OW, tol_of(dtypes[di]), 1e-5);
            clg_scope_end(dev);
        }
    /* a whole scale (3 x 2): views, no index upload; the same values as the reference */
    static double near2[N * C * 3 * H * 2 * W];
    for (int nc = 0; nc < N * C; nc++)
        for (int i = 0; i < 3 * H; i++)
            for (int j = 0; j < 2 * W; j++) near2[(nc * 3 * H + i) * 2 * W + j] = x[(nc * H + i / 3) * W + j / 2];
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
        clg_scope_begin(dev);
        clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(N, C, H, W), x, (optest_layout)l);
        clg_device_transfers_reset(dev);
        clg_tensor *y = clg_upsample_nearest2d(t, 3 * H, 2 * W);
        CHECK_MSG(clg_device_transfers(dev).h2d_bytes == 0, "upsample by a whole scale uploaded an index");
        char what[64];
        snprintf(what, sizeof what, "upsample_nearest2d x3 x2 %s", optest_layout_names[l]);
        optest_close(what, y, near2, N * C * 3 * H * 2 * W, 0, 1e-7);
        clg_scope_end(dev);
    }
    clg_scope_begin(dev);
    CHECK(clg_upsample_nearest2d(clg_zeros(dev, CLG_F32, CLG_SHAPE(2, 3)), 4, 4) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_upsample_nearest2d"), "%s", clg_device_error(dev));
    CHECK(clg_upsample_bilinear2d(clg_zeros(dev, CLG_F32, CLG_SHAPE(1, 1, 2, 2)), 0, 4) == NULL);
    clg_scope_end(dev);
}

static void test_group_norm(clg_device *dev)
{
    enum { N = 2, C = 6, P = 5, G = 3 };
    double x[N * C * P], w[C], b[C], want[N * C * P];
    optest_fill(x, N * C * P, -2, 2, 7), optest_fill(w, C, 0.5, 1.5, 8), optest_fill(b, C, -1, 1, 9);
    const double eps = 1e-5;
    int cg = C / G;
    for (int n = 0; n < N; n++)
        for (int g = 0; g < G; g++) {
            double m = 0, v = 0;
            const double *p = x + (n * C + g * cg) * P;
            for (int i = 0; i < cg * P; i++) m += p[i] / (cg * P);
            for (int i = 0; i < cg * P; i++) v += (p[i] - m) * (p[i] - m) / (cg * P);
            for (int i = 0; i < cg * P; i++) {
                int c = g * cg + i / P;
                want[(n * C + g * cg) * P + i] = (p[i] - m) / sqrt(v + eps) * w[c] + b[c];
            }
        }
    for (int di = 0; di < ndtypes; di++)
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            clg_scope_begin(dev);
            char what[96];
            snprintf(what, sizeof what, "group_norm %s %s", clg_dtype_name(dtypes[di]), optest_layout_names[l]);
            clg_tensor *y = clg_group_norm(optest_tensor(dev, dtypes[di], CLG_SHAPE(N, C, P), x, (optest_layout)l), G,
                                           optest_tensor(dev, dtypes[di], CLG_SHAPE(C), w, OPTEST_CONTIGUOUS),
                                           optest_tensor(dev, dtypes[di], CLG_SHAPE(C), b, OPTEST_CONTIGUOUS), eps);
            optest_close(what, y, want, N * C * P, dtypes[di] == CLG_F32 ? 1e-5 : 1e-10, 1e-5);
            clg_scope_end(dev);
        }
    clg_scope_begin(dev);
    clg_tensor *t = clg_zeros(dev, CLG_F32, CLG_SHAPE(2, 6, 5));
    CHECK(clg_group_norm(t, 4, NULL, NULL, 1e-5) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_group_norm") && strstr(clg_device_error(dev), "groups 4"), "%s",
              clg_device_error(dev));
    CHECK(clg_group_norm(t, 3, clg_zeros(dev, CLG_F32, CLG_SHAPE(5)), NULL, 1e-5) == NULL);
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    dtypes[ndtypes++] = CLG_F32;
    if (optest_fp64(dev)) dtypes[ndtypes++] = CLG_F64;
    test_conv1d(dev);
    test_conv_transpose(dev);
    test_upsample(dev);
    test_group_norm(dev);
    clg_device_close(dev);
    return check_report("test_ops_conv_more");
}
