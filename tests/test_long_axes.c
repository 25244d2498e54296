/* Long axes: every op whose kernels once walked a whole axis in one work-item, at sizes
 * past what such a loop survives on Mesa's llvmpipe (65,535 iterations in all, then the
 * loop ends silently): 70,000-element scans and sorts, 20,000 repeats of one index,
 * products with k = 30,000, weight gradients over 70,000 rows. Counts of ones make the
 * expected values exact in float32. Under CLG_TEST_SMALL (Oclgrind) the sizes shrink and
 * the oclgrind entry lowers the device's item_loops instead, so that the same splitting
 * runs at sizes the simulator can afford. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optest.h"

static int64_t N_SCAN = 70000, N_REPEAT = 20000, N_ADD = 70001, N_SORT = 70001, K_DOT = 30000, N_ROWS = 70000,
               N_SIGNAL = 40000, W_UP = 70000;

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

int main(void)
{
    clg_device *dev = check_open_device();
    if (optest_small()) {   /* past item_loops as the oclgrind entry sets it, within Oclgrind's patience */
        N_SCAN = 3000, N_REPEAT = 2000, N_ADD = 2001, N_SORT = 3001, K_DOT = 1500, N_ROWS = 3000, N_SIGNAL = 2000,
        W_UP = 1500;
    }
    test_cumsum(dev);
    test_index_select_repeats(dev);
    test_add_at(dev);
    test_sort(dev);
    test_matmul(dev);
    test_linear(dev);
    test_conv1d(dev);
    test_upsample(dev);
    CHECK_MSG(clg_tensor_live_count(dev) == 0, "%lld tensors leaked", (long long)clg_tensor_live_count(dev));
    clg_device_close(dev);
    return check_report("test_long_axes");
}
