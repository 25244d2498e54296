/* Long axes: every op whose kernels once walked a whole axis in one work-item, at sizes
 * past what such a loop survives on Mesa's llvmpipe (65,535 iterations in all, then the
 * loop ends silently): 70,000-element scans and sorts, 20,000 repeats of one index,
 * products with k = 30,000, weight gradients over 70,000 rows. Counts of ones make the
 * expected values exact in float32. test_long_axes_kernels runs the cases whose kernels
 * a device table chooses (products, convolutions) again with the packed GEMM engine and
 * col2im by planes (`--kernels`: engine-dependent loops; the scans, sorts, scatters and
 * row reductions run the same kernels whatever the engine, so they run once). Under
 * CLG_TEST_SMALL (Oclgrind) the sizes shrink and
 * the oclgrind entry lowers the device's item_loops instead, so that the same splitting
 * runs at sizes the simulator can afford. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "optest.h"

static int64_t N_SCAN = 70000, N_REPEAT = 20000, N_ADD = 70001, N_SORT = 70001, K_DOT = 30000, N_ROWS = 70000,
               N_SIGNAL = 40000, W_UP = 70000, N_COLS_SUM = 66000, N_ROW = 200000, N_PLANE = 1000, N_CLASSES = 70000,
               N_PACKED = 384, N_CE_ROWS = 2200000, N_WIDE = 1000000;

static double *filled(int64_t n, double v)
{
    double *x = malloc((size_t)n * sizeof *x);
    CHECK(x != NULL);
    for (int64_t i = 0; i < n; i++) x[i] = v;
    return x;
}

static clg_tensor *ones_grad(clg_device *dev, int ndim, const int64_t *shape)
{
    clg_tensor *t = clg_ones(dev, CLG_F32, ndim, shape);
    CHECK_OK(dev, clg_tensor_set_requires_grad(t, true));
    return t;
}

/* cumsum over N ones, forward (1 .. N) and backward (N .. 1), along the last axis and
 * along a middle one. */
static void test_cumsum(clg_device *dev)
{
    int64_t n = N_SCAN;
    double *up = malloc((size_t)n * sizeof *up), *down = malloc((size_t)n * sizeof *down);
    for (int64_t i = 0; i < n; i++) up[i] = (double)(i + 1), down[i] = (double)(n - i);
    clg_scope_begin(dev);
    clg_tensor *x = ones_grad(dev, 1, (int64_t[]){n});
    clg_tensor *y = clg_cumsum(x, 0);
    optest_close("cumsum over a long axis", y, up, n, 0, 0);
    CHECK_OK(dev, clg_backward(clg_sum(y, 0, NULL, false), NULL));
    optest_close("cumsum backward over a long axis", clg_tensor_grad(x), down, n, 0, 0);
    clg_tensor *m = clg_ones(dev, CLG_F32, 3, (int64_t[]){2, n, 3});
    clg_tensor *col = clg_narrow(clg_narrow(clg_cumsum(m, 1), 0, 1, 1), 2, 2, 1);
    optest_close("cumsum over a long middle axis", col, up, n, 0, 0);
    clg_scope_end(dev);
    free(up), free(down);
}

/* An embedding's backward: a [4, 3] table looked up N_REPEAT times, each row as often. */
static void test_index_select_repeats(clg_device *dev)
{
    int64_t k = N_REPEAT;
    double *idx = malloc((size_t)k * sizeof *idx), want[12];
    for (int64_t m = 0; m < k; m++) idx[m] = (double)(m % 4);
    for (int i = 0; i < 12; i++) want[i] = (double)(k / 4);
    clg_scope_begin(dev);
    clg_tensor *a = ones_grad(dev, 2, (int64_t[]){4, 3});
    clg_tensor *ti = optest_tensor(dev, CLG_I32, 1, (int64_t[]){k}, idx, OPTEST_CONTIGUOUS);
    CHECK_OK(dev, clg_backward(clg_sum(clg_index_select(a, 0, ti), 0, NULL, false), NULL));
    optest_close("index_select backward, each row picked k / 4 times", clg_tensor_grad(a), want, 12, 0, 0);
    /* one row picked every time, along the last axis of a [2, 5] */
    for (int64_t m = 0; m < k; m++) idx[m] = 3;
    clg_tensor *b = ones_grad(dev, 2, (int64_t[]){2, 5});
    ti = optest_tensor(dev, CLG_I32, 1, (int64_t[]){k}, idx, OPTEST_SLICED);
    CHECK_OK(dev, clg_backward(clg_sum(clg_index_select(b, 1, ti), 0, NULL, false), NULL));
    optest_close("index_select backward, one column picked every time", clg_tensor_grad(b),
                 (double[]){0, 0, 0, (double)k, 0, 0, 0, 0, (double)k, 0}, 10, 0, 0);
    clg_scope_end(dev);
    free(idx);
}

/* index_add of N_ADD ones into 5 rows; scatter_add and gather's backward over a long index line. */
static void test_add_at(clg_device *dev)
{
    int64_t k = N_ADD;
    double *idx = malloc((size_t)k * sizeof *idx), want[10];
    for (int64_t m = 0; m < k; m++) idx[m] = (double)(m % 5);
    for (int j = 0; j < 5; j++) want[2 * j] = want[2 * j + 1] = 1 + (double)(k / 5 + (j < k % 5));
    clg_scope_begin(dev);
    clg_tensor *a = clg_ones(dev, CLG_F32, 2, (int64_t[]){5, 2});
    clg_tensor *src = clg_ones(dev, CLG_F32, 2, (int64_t[]){k, 2});
    clg_tensor *ti = optest_tensor(dev, CLG_I32, 1, (int64_t[]){k}, idx, OPTEST_CONTIGUOUS);
    optest_close("index_add of a long index list", clg_index_add(a, 0, ti, src), want, 10, 0, 0);
    /* scatter_add along axis 1 of [2, 5] from a [2, k] index; gather's backward the same */
    double *lines = malloc((size_t)(2 * k) * sizeof *lines), want2[10];
    for (int64_t m = 0; m < 2 * k; m++) lines[m] = (double)((m % k) % 5);
    for (int j = 0; j < 10; j++) want2[j] = (double)(k / 5 + (j % 5 < k % 5));
    clg_tensor *tl = optest_tensor(dev, CLG_I32, 2, (int64_t[]){2, k}, lines, OPTEST_PERMUTED);
    clg_tensor *z = clg_zeros(dev, CLG_F32, 2, (int64_t[]){2, 5});
    optest_close("scatter_add along a long index line",
                 clg_scatter_add(z, 1, tl, clg_ones(dev, CLG_F32, 2, (int64_t[]){2, k})), want2, 10, 0, 0);
    clg_tensor *g = ones_grad(dev, 2, (int64_t[]){2, 5});
    CHECK_OK(dev, clg_backward(clg_sum(clg_gather(g, 1, tl), 0, NULL, false), NULL));
    optest_close("gather backward along a long index line", clg_tensor_grad(g), want2, 10, 0, 0);
    clg_scope_end(dev);
    free(idx), free(lines);
}

/* scatter_add along lines of N_ADD keys, lines enough for every compute unit (4 each:
 * index.c then walks each line's chunks one launch after another, into a copy of a), a
 * permuted a whose values the sums must start from. */
static void test_scatter_many_lines(clg_device *dev)
{
    int64_t k = N_ADD, Q = 4 * (int64_t)clg_device_get_info(dev)->compute_units;
    double *keys = malloc((size_t)(Q * k) * sizeof *keys), *a = malloc((size_t)(Q * 5) * sizeof *a);
    double *want = malloc((size_t)(Q * 5) * sizeof *want);
    for (int64_t m = 0; m < Q * k; m++) keys[m] = (double)((m % k + m / k) % 5);
    for (int64_t i = 0; i < Q * 5; i++) a[i] = (double)(i % 7) - 3;
    for (int64_t q = 0; q < Q; q++)
        for (int j = 0; j < 5; j++) {   /* line q's key j appears for m with (m + q) % 5 == j */
            int64_t first = ((j - q) % 5 + 5) % 5;
            want[q * 5 + j] = a[q * 5 + j] + (double)(first < k ? (k - 1 - first) / 5 + 1 : 0);
        }
    clg_scope_begin(dev);
    clg_tensor *ta = optest_tensor(dev, CLG_F32, 2, (int64_t[]){Q, 5}, a, OPTEST_PERMUTED);
    clg_tensor *tk = optest_tensor(dev, CLG_I32, 2, (int64_t[]){Q, k}, keys, OPTEST_CONTIGUOUS);
    optest_close("scatter_add along many long lines onto a",
                 clg_scatter_add(ta, 1, tk, clg_ones(dev, CLG_F32, 2, (int64_t[]){Q, k})), want, Q * 5, 0, 0);
    clg_scope_end(dev);
    free(keys), free(a), free(want);
}

static int cmp_pair(const void *p, const void *q)
{
    const double *a = p, *b = q;
    return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1];
}

/* sort of N_SORT values with many ties (stable: positions ascending within a tie), and
 * topk 5 of them. */
static void test_sort(clg_device *dev)
{
    int64_t n = N_SORT;
    double *x = malloc((size_t)n * sizeof *x), *pairs = malloc((size_t)n * 2 * sizeof *pairs);
    double *vals = malloc((size_t)n * sizeof *vals), *pos = malloc((size_t)n * sizeof *pos);
    for (int64_t i = 0; i < n; i++) x[i] = (double)((i * 7919) % 1009) - 500;
    for (int64_t i = 0; i < n; i++) pairs[2 * i] = x[i], pairs[2 * i + 1] = (double)i;
    qsort(pairs, (size_t)n, 2 * sizeof *pairs, cmp_pair);
    for (int64_t i = 0; i < n; i++) vals[i] = pairs[2 * i], pos[i] = pairs[2 * i + 1];
    clg_scope_begin(dev);
    clg_tensor *t = optest_tensor(dev, CLG_F32, 1, (int64_t[]){n}, x, OPTEST_CONTIGUOUS);
    clg_tensor *v, *ix;
    CHECK_OK(dev, clg_sort(t, 0, false, &v, &ix));
    optest_close("sort over a long axis: values", v, vals, n, 0, 0);
    optest_close("sort over a long axis: positions (stable)", ix, pos, n, 0, 0);
    /* the 5 largest, ties by position: the order of -x, stable */
    double top[5], at[5];
    for (int64_t i = 0; i < n; i++) pairs[2 * i] = -x[i], pairs[2 * i + 1] = (double)i;
    qsort(pairs, (size_t)n, 2 * sizeof *pairs, cmp_pair);
    for (int j = 0; j < 5; j++) top[j] = -pairs[2 * j], at[j] = pairs[2 * j + 1];
    CHECK_OK(dev, clg_topk(t, 5, 0, true, &v, &ix));
    optest_close("topk 5 of a long axis: values", v, top, 5, 0, 0);
    optest_close("topk 5 of a long axis: positions", ix, at, 5, 0, 0);
    clg_scope_end(dev);
    free(x), free(pairs), free(vals), free(pos);
}

/* ones(2, k) @ ones(k, 3) = k everywhere, whichever engine the device uses. */
static void test_matmul(clg_device *dev)
{
    int64_t k = K_DOT;
    double want[6];
    for (int i = 0; i < 6; i++) want[i] = (double)k;
    clg_scope_begin(dev);
    clg_tensor *a = ones_grad(dev, 2, (int64_t[]){2, k}), *b = ones_grad(dev, 2, (int64_t[]){k, 3});
    clg_tensor *y = clg_matmul(a, b);
    optest_close("matmul with a long inner size", y, want, 6, 0, 0);
    CHECK_OK(dev, clg_backward(clg_sum(y, 0, NULL, false), NULL));
    double *three = filled(2 * k, 3), *two = filled(k * 3, 2);
    optest_close("matmul backward with a long inner size: a", clg_tensor_grad(a), three, 2 * k, 0, 0);
    optest_close("matmul backward with a long inner size: b", clg_tensor_grad(b), two, 3 * k, 0, 0);
    clg_scope_end(dev);
    free(three), free(two);
}

/* linear over N_ROWS rows: the weight's and bias's gradients sum over all of them. */
static void test_linear(clg_device *dev)
{
    int64_t n = N_ROWS;
    double want_w[16], want_b[4];
    for (int i = 0; i < 16; i++) want_w[i] = (double)n;
    for (int i = 0; i < 4; i++) want_b[i] = (double)n;
    clg_scope_begin(dev);
    clg_tensor *x = clg_ones(dev, CLG_F32, 2, (int64_t[]){n, 4});
    clg_tensor *w = ones_grad(dev, 2, (int64_t[]){4, 4}), *b = ones_grad(dev, 1, (int64_t[]){4});
    CHECK_OK(dev, clg_backward(clg_sum(clg_linear(x, w, b), 0, NULL, false), NULL));
    optest_close("linear weight gradient over many rows", clg_tensor_grad(w), want_w, 16, 0, 0);
    optest_close("linear bias gradient over many rows", clg_tensor_grad(b), want_b, 4, 0, 0);
    clg_scope_end(dev);
}

/* conv1d's weight gradient over a long signal: each tap sees L - 2 ones. */
static void test_conv1d(clg_device *dev)
{
    int64_t L = N_SIGNAL;
    double want[3] = {(double)(L - 2), (double)(L - 2), (double)(L - 2)};
    clg_scope_begin(dev);
    clg_tensor *x = clg_ones(dev, CLG_F32, 3, (int64_t[]){1, 1, L});
    clg_tensor *w = ones_grad(dev, 3, (int64_t[]){1, 1, 3});
    CHECK_OK(dev, clg_backward(clg_sum(clg_conv1d(x, w, NULL, NULL), 0, NULL, false), NULL));
    optest_close("conv1d weight gradient over a long signal", clg_tensor_grad(w), want, 3, 0, 0);
    clg_scope_end(dev);
}

/* A strided conv1d's weight gradient over a long signal (x[i] = i % 5, stride 2, 3 taps:
 * tap k sums x[2j + k]; with conv_shift on, the two phases of the signal). */
static void test_conv1d_strided(clg_device *dev)
{
    int64_t L = N_SIGNAL, OL = (L - 3) / 2 + 1;
    float *xs = malloc((size_t)L * sizeof *xs);
    double want[3] = {0, 0, 0};
    for (int64_t i = 0; i < L; i++) xs[i] = (float)(i % 5);
    for (int64_t j = 0; j < OL; j++)
        for (int k = 0; k < 3; k++) want[k] += xs[2 * j + k];
    clg_scope_begin(dev);
    clg_tensor *x = clg_tensor_from_host(dev, CLG_F32, 3, (int64_t[]){1, 1, L}, xs);
    clg_tensor *w = ones_grad(dev, 3, (int64_t[]){1, 1, 3});
    clg_conv1d_params p = {.stride = 2};
    CHECK_OK(dev, clg_backward(clg_sum(clg_conv1d(x, w, NULL, &p), 0, NULL, false), NULL));
    optest_close("strided conv1d weight gradient over a long signal", clg_tensor_grad(w), want, 3, 0, 0);
    clg_scope_end(dev);
    free(xs);
}

/* upsample_nearest2d's backward at a long width: every pixel gets its 2 x 2 copies. */
static void test_upsample(clg_device *dev)
{
    int64_t w = W_UP;
    double *four = filled(2 * w, 4);
    clg_scope_begin(dev);
    clg_tensor *x = ones_grad(dev, 4, (int64_t[]){1, 1, 2, w});
    CHECK_OK(dev, clg_backward(clg_sum(clg_upsample_nearest2d(x, 4, 2 * w), 0, NULL, false), NULL));
    optest_close("upsample_nearest2d backward at a long width", clg_tensor_grad(x), four, 2 * w, 0, 0);
    clg_scope_end(dev);
    free(four);
}

/* A sum over the long axis of [N, 1024]: 1,024 results, each over N rows (no spreading
 * over work-groups for lack of results). */
static void test_sum_columns(clg_device *dev)
{
    /* 1,024 columns; 300 in the simulator (CLG_TEST_SMALL: past a group of 256 with a
     * tail, 8 of its 12 s saved) */
    int64_t n = N_COLS_SUM, m = optest_small() ? 300 : 1024;
    double *want = filled(m, (double)n);
    clg_scope_begin(dev);
    clg_tensor *x = clg_ones(dev, CLG_F32, 2, (int64_t[]){n, m});
    optest_close("sum over many long columns", clg_sum(x, CLG_AXES(0), false), want, m, 0, 0);
    /* the bias gradient of a linear layer over as many rows is the same sum */
    clg_tensor *w = clg_zeros(dev, CLG_F32, 2, (int64_t[]){m, 1}), *b = ones_grad(dev, 1, (int64_t[]){m});
    clg_tensor *x1 = clg_ones(dev, CLG_F32, 2, (int64_t[]){n, 1});
    CHECK_OK(dev, clg_backward(clg_sum(clg_linear(x1, w, b), 0, NULL, false), NULL));
    optest_close("linear bias gradient over many long columns", clg_tensor_grad(b), want, m, 0, 0);
    clg_scope_end(dev);
    free(want);
}

/* Rows of the normalisations and softmax (float32 sums of 10^5 terms: relative 1e-3):
 * layer norm's weight and bias gradients over many rows, batch norm (and batch_norm_add_relu,
 * both ways) over a large plane, softmax, log_softmax and var over a long
 * row, global average pooling over a large plane, label smoothing over many classes. */
static void test_norms_and_rows(clg_device *dev)
{
    int64_t rows = N_ROWS, R = N_ROW, P = N_PLANE, C = N_CLASSES;
    clg_scope_begin(dev);
    /* layer norm of [rows, 4] with x = (0, 1, 2, 3) per row: db = rows, dw = rows * xhat */
    double *x4 = malloc((size_t)(rows * 4) * sizeof *x4);
    for (int64_t i = 0; i < rows * 4; i++) x4[i] = (double)(i % 4);
    clg_tensor *x = optest_tensor(dev, CLG_F32, 2, (int64_t[]){rows, 4}, x4, OPTEST_CONTIGUOUS);
    clg_tensor *w = ones_grad(dev, 1, (int64_t[]){4}), *b = ones_grad(dev, 1, (int64_t[]){4});
    CHECK_OK(dev, clg_backward(clg_sum(clg_layer_norm(x, 1, w, b, 1e-5), 0, NULL, false), NULL));
    double want_b[4] = {(double)rows, (double)rows, (double)rows, (double)rows}, want_w[4];
    for (int d = 0; d < 4; d++) want_w[d] = (double)rows * (d - 1.5) / sqrt(1.25 + 1e-5);
    optest_close("layer_norm bias gradient over many rows", clg_tensor_grad(b), want_b, 4, 0, 0);
    optest_close("layer_norm weight gradient over many rows", clg_tensor_grad(w), want_w, 4, 0, 1e-3);
    free(x4);
    /* batch norm in training over [1, 2, P, P]: channel 0 all 3 -> 0 out; channel 1 checkered +-1 -> +-1 */
    int64_t plane = P * P;
    double *xb = malloc((size_t)(2 * plane) * sizeof *xb), *yb = malloc((size_t)(2 * plane) * sizeof *yb);
    for (int64_t i = 0; i < plane; i++) xb[i] = 3, yb[i] = 0;
    for (int64_t i = 0; i < plane; i++) xb[plane + i] = (i % 2) ? 1 : -1, yb[plane + i] = xb[plane + i] / sqrt(1 + 1e-5);
    clg_tensor *xbt = optest_tensor(dev, CLG_F32, 4, (int64_t[]){1, 2, P, P}, xb, OPTEST_CONTIGUOUS);
    clg_tensor *rm = clg_zeros(dev, CLG_F32, 1, (int64_t[]){2}), *rv = clg_ones(dev, CLG_F32, 1, (int64_t[]){2});
    optest_close("batch_norm over a large plane", clg_batch_norm(xbt, rm, rv, NULL, NULL, true, 0.1, 1e-5), yb, 2 * plane,
                 1e-5, 1e-4);
    /* the same through batch_norm_add_relu with z = 0.5, and its backward from a sum:
     * channel 0 gives 0.5, channel 1 1.5 or 0; g passes where y > 0, which is dz; dbias
     * counts those places, dweight sums xhat there; dx is 0 (the batch's mean and
     * xhat's share of g cancel it) */
    double *zb = malloc((size_t)(2 * plane) * sizeof *zb), *mb = malloc((size_t)(2 * plane) * sizeof *mb);
    for (int64_t i = 0; i < 2 * plane; i++) {
        zb[i] = 0.5;
        yb[i] = i < plane ? 0.5 : xb[i] > 0 ? 1 / sqrt(1 + 1e-5) + 0.5 : 0;
        mb[i] = yb[i] > 0;
    }
    clg_tensor *xg = optest_tensor(dev, CLG_F32, 4, (int64_t[]){1, 2, P, P}, xb, OPTEST_CONTIGUOUS);
    clg_tensor *zg = optest_tensor(dev, CLG_F32, 4, (int64_t[]){1, 2, P, P}, zb, OPTEST_CONTIGUOUS);
    clg_tensor *wg = ones_grad(dev, 1, (int64_t[]){2}), *bg = clg_zeros(dev, CLG_F32, 1, (int64_t[]){2});
    CHECK_OK(dev, clg_tensor_set_requires_grad(xg, true) || clg_tensor_set_requires_grad(zg, true) ||
                      clg_tensor_set_requires_grad(bg, true));
    clg_tensor *yr = clg_batch_norm_add_relu(xg, zg, NULL, NULL, wg, bg, true, 0.1, 1e-5);
    optest_close("batch_norm_add_relu over a large plane", yr, yb, 2 * plane, 1e-5, 1e-4);
    CHECK_OK(dev, clg_backward(clg_sum(yr, 0, NULL, false), NULL));
    optest_close("batch_norm_add_relu dz over a large plane", clg_tensor_grad(zg), mb, 2 * plane, 0, 0);
    for (int64_t i = 0; i < 2 * plane; i++) mb[i] = 0;
    optest_close("batch_norm_add_relu dx over a large plane", clg_tensor_grad(xg), mb, 2 * plane, 1e-4, 0);
    optest_close("batch_norm_add_relu dbias over a large plane", clg_tensor_grad(bg),
                 (const double[]){(double)plane, (double)(plane / 2)}, 2, 0, 1e-5);
    optest_close("batch_norm_add_relu dweight over a large plane", clg_tensor_grad(wg),
                 (const double[]){0, (double)(plane / 2) / sqrt(1 + 1e-5)}, 2, 1e-3, 1e-4);
    free(zb), free(mb);
    clg_tensor *gp = clg_global_avg_pool2d(xbt);
    optest_close("global_avg_pool2d over a large plane", gp, (const double[]){3, 0}, 2, 1e-6, 0);
    free(xb), free(yb);
    /* softmax and var over one long row of ones: 1/R each, variance 0; of 0, 1, 0, 1...: 1/4 */
    clg_tensor *row = clg_ones(dev, CLG_F32, 2, (int64_t[]){1, R});
    double *sm = filled(R, 1.0 / (double)R), *lsm = filled(R, -log((double)R));
    optest_close("softmax over a long row", clg_softmax(row, 1), sm, R, 0, 1e-5);
    optest_close("log_softmax over a long row", clg_log_softmax(row, 1), lsm, R, 0, 1e-5);
    double *alt = malloc((size_t)R * sizeof *alt);
    for (int64_t i = 0; i < R; i++) alt[i] = (double)(i % 2);
    clg_tensor *ta = optest_tensor(dev, CLG_F32, 2, (int64_t[]){1, R}, alt, OPTEST_CONTIGUOUS);
    optest_close("var over a long row", clg_var(ta, CLG_AXES(1), 0, false), (const double[]){0.25}, 1, 0, 1e-5);
    free(sm), free(lsm), free(alt);
    /* cross-entropy with label smoothing over C classes of equal logits: log C */
    clg_tensor *logits = clg_zeros(dev, CLG_F32, 2, (int64_t[]){2, C});
    clg_tensor *labels = clg_zeros(dev, CLG_I32, 1, (int64_t[]){2});
    optest_close("cross_entropy with label smoothing over many classes",
                 clg_cross_entropy_smooth(logits, labels, CLG_REDUCE_MEAN, 0.1), (const double[]){log((double)C)}, 1, 0,
                 1e-3);
    /* argmax and argmin over a row of a million (the first of equal extremes; a NaN wins,
     * as PyTorch's), and layer norm over a million features */
    int64_t Wd = N_WIDE;
    double *v = malloc((size_t)(2 * Wd) * sizeof *v), *ln = malloc((size_t)(2 * Wd) * sizeof *ln);
    for (int64_t i = 0; i < 2 * Wd; i++) v[i] = (double)(i % 7);
    v[Wd - 3] = 9, v[Wd - 2] = 9, v[5] = -1;   /* row 0: max at Wd - 3, min at 5 */
    v[Wd + 10] = NAN;                           /* row 1: NaN at 10 */
    clg_tensor *tv = optest_tensor(dev, CLG_F32, 2, (int64_t[]){2, Wd}, v, OPTEST_CONTIGUOUS);
    optest_close("argmax over a long row", clg_argmax(tv, 1, false), (const double[]){(double)(Wd - 3), 10}, 2, 0, 0);
    optest_close("argmin over a long row", clg_argmin(tv, 1, false), (const double[]){5, 10}, 2, 0, 0);
    for (int64_t i = 0; i < 2 * Wd; i++) v[i] = (double)(i % 2), ln[i] = (v[i] - 0.5) / sqrt(0.25 + 1e-5);
    tv = optest_tensor(dev, CLG_F32, 2, (int64_t[]){2, Wd}, v, OPTEST_CONTIGUOUS);
    optest_close("layer_norm over a million features", clg_layer_norm(tv, 1, NULL, NULL, 1e-5), ln, 2 * Wd, 1e-4, 1e-4);
    free(v), free(ln);
    /* the mean cross-entropy over millions of rows (a language model's tokens): logits
     * (0, ln 3) labelled 0, ln 4 each */
    int64_t N = N_CE_ROWS;
    clg_tensor *two = clg_tensor_from_host(dev, CLG_F32, 2, (int64_t[]){1, 2}, (const float[]){0, (float)log(3.0)});
    clg_tensor *lg = clg_contiguous(clg_expand(two, 2, (int64_t[]){N, 2}));
    optest_close("cross_entropy mean over millions of rows",
                 clg_cross_entropy(lg, clg_zeros(dev, CLG_I32, 1, &N), CLG_REDUCE_MEAN), (const double[]){log(4.0)}, 1, 0,
                 1e-4);
    clg_scope_end(dev);
}

/* conv2d's input gradient over a 128 x 128 plane, 3 x 3 window with padding 1: 9 inside,
 * 6 on the edges, 4 in the corners (col2im by planes walks the whole plane per item). */
static void test_conv2d_plane(clg_device *dev)
{
    int64_t H = N_PLANE > 128 ? 128 : N_PLANE;
    double *want = malloc((size_t)(H * H) * sizeof *want);
    for (int64_t i = 0; i < H; i++)
        for (int64_t j = 0; j < H; j++)
            want[i * H + j] = (double)((1 + (i > 0) + (i < H - 1)) * (1 + (j > 0) + (j < H - 1)));
    clg_scope_begin(dev);
    clg_tensor *x = ones_grad(dev, 4, (int64_t[]){1, 1, H, H});
    clg_tensor *w = clg_ones(dev, CLG_F32, 4, (int64_t[]){1, 1, 3, 3});
    clg_conv2d_params p = {.padding = {1, 1}};
    CHECK_OK(dev, clg_backward(clg_sum(clg_conv2d(x, w, NULL, &p), 0, NULL, false), NULL));
    optest_close("conv2d input gradient over a large plane", clg_tensor_grad(x), want, H * H, 0, 0);
    /* the bias's gradient over planes of 512^2 and N_PLANE^2 pixels and 2 images, by row
     * sums and in one launch of a group per channel (row_reduce items and groups; the
     * larger plane's walk is past item_loops where groups are 16 wide: row sums again):
     * 2 P^2 ones each. Under Oclgrind (CLG_TEST_SMALL) a plane of 128^2 alone: the
     * convolution's passes over 2 x 10^6 pixels took it 80 s. */
    bool items = clg__device_params(dev)->row_items;
    for (int v = 0; v < (optest_small() ? 2 : 4); v++) {
        int64_t P = v < 2 ? (optest_small() ? 128 : 512) : N_PLANE;
        CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", v % 2 ? "groups" : "items"));
        clg_tensor *xb = clg_ones(dev, CLG_F32, 4, (int64_t[]){2, 1, P, P}), *b = ones_grad(dev, 1, (int64_t[]){2});
        clg_tensor *w1 = clg_ones(dev, CLG_F32, 4, (int64_t[]){2, 1, 1, 1});
        CHECK_OK(dev, clg_backward(clg_sum(clg_conv2d(xb, w1, b, NULL), 0, NULL, false), NULL));
        optest_close(v % 2 ? "conv2d bias gradient over a large plane (groups)"
                           : "conv2d bias gradient over a large plane (items)",
                     clg_tensor_grad(b), (const double[]){2.0 * P * P, 2.0 * P * P}, 2, 0, 0);
    }
    CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", items ? "items" : "groups"));
    clg_scope_end(dev);
    free(want);
}

/* A product the packed engine splits into many micro-tiles per work-item (64 of them for
 * 384 x 512 on up to 4 compute units), with k past a thousand: 64 x 1100 loop steps, past
 * llvmpipe's 65,535 (k slices alone did not bound them). Under Oclgrind 96 x 128 with k
 * 300, past the item_loops of 256 its entry sets, in a tenth of the simulated steps. */
static void test_packed_tiles(clg_device *dev)
{
    int64_t m = N_PACKED, n = optest_small() ? 128 : 512, k = optest_small() ? 300 : 1100;
    double *want = filled(m * n, (double)k);
    clg_scope_begin(dev);
    clg_tensor *y = clg_matmul(clg_ones(dev, CLG_F32, 2, (int64_t[]){m, k}), clg_ones(dev, CLG_F32, 2, (int64_t[]){k, n}));
    optest_close("matmul with many micro-tiles per work-item, k 1100", y, want, m * n, 0, 0);
    clg_scope_end(dev);
    free(want);
}

int main(int argc, char **argv)
{
    bool engines_only = argc > 1 && !strcmp(argv[1], "--kernels");
    clg_device *dev = check_open_device();
    if (optest_small()) {   /* past item_loops as the oclgrind entry sets it, within Oclgrind's patience */
        N_SCAN = 3000, N_REPEAT = 2000, N_ADD = 2001, N_SORT = 3001, K_DOT = 1500, N_ROWS = 3000, N_SIGNAL = 2000,
        W_UP = 1500, N_COLS_SUM = 300, N_ROW = 3000, N_PLANE = 40, N_CLASSES = 3000, N_PACKED = 96,
        N_CE_ROWS = 5000, N_WIDE = 4000;
    }
    if (!engines_only) {
        test_cumsum(dev);
        for (int mode = 0; mode < 2; mode++) {   /* both ways of adding at indices (device table: scatter) */
            printf("scatter = %s\n", mode ? "sorted" : "lines");
            CHECK_OK(dev, clg_device_set_param(dev, "scatter", mode ? "sorted" : "lines"));
            test_index_select_repeats(dev);
            test_add_at(dev);
            test_scatter_many_lines(dev);
        }
        test_sort(dev);
    }
    test_matmul(dev);
    test_linear(dev);
    for (int shift = 0; shift < 2; shift++) {   /* with im2col's columns and without (conv_shift.c) */
        CHECK_OK(dev, clg_device_set_param(dev, "conv_shift", shift ? "on" : "off"));
        test_conv1d(dev);
        test_conv1d_strided(dev);
        test_conv2d_plane(dev);
    }
    if (!engines_only) {
        test_upsample(dev);
        test_sum_columns(dev);
        test_norms_and_rows(dev);
    }
    test_packed_tiles(dev);
    CHECK_MSG(clg_tensor_live_count(dev) == 0, "%lld tensors leaked", (long long)clg_tensor_live_count(dev));
    clg_device_close(dev);
    return check_report("test_long_axes");
}
