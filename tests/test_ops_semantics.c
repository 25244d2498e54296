/* What a port from PyTorch meets at the edges, each case checked against what PyTorch
 * 1.13 gives: gradients at zero spread (std, var, norm, the normalisations of a
 * constant input) are 0, not NaN; a NaN operand of maximum/minimum sends the whole
 * gradient to both, so that the NaN reaches the backward pass; reductions of 16-bit
 * tensors compute in float32 and round once (logsumexp, norm); logsumexp over an empty
 * axis is -inf; concat promotes mixed dtypes as torch.cat; cross_entropy_ex takes class
 * weights, ignore_index and label smoothing as torch's cross_entropy. */
#include <math.h>
#include <string.h>

#include "optest.h"

/* Every element of t's gradient finite and equal to want. */
static void grad_is(const char *what, clg_tensor *t, double want)
{
    double *g = optest_read(clg_tensor_grad(t));
    int64_t n = clg_tensor_numel(t), bad = 0;
    for (int64_t i = 0; g && i < n; i++) bad += !(g[i] == want);
    CHECK_MSG(g && bad == 0, "%s: %lld of %lld gradient elements are not %g (first %g)", what, (long long)bad,
              (long long)n, want, g ? g[0] : NAN);
    free(g);
}

static clg_tensor *leaf(clg_device *dev, clg_dtype dt, int nd, const int64_t *shape, const double *v)
{
    clg_tensor *t = optest_tensor(dev, dt, nd, shape, v, OPTEST_CONTIGUOUS);
    CHECK_OK(dev, clg_tensor_set_requires_grad(t, true));
    return t;
}

static void test_zero_spread(clg_device *dev)
{
    const double two[6] = {2, 2, 2, 2, 2, 2}, zero[6] = {0};
    clg_dtype dts[2];
    int nd = optest_float_dtypes(dev, dts);
    for (int i = 0; i < nd; i++) {
        clg_scope_begin(dev);
        clg_tensor *x = leaf(dev, dts[i], 1, (int64_t[]){3}, two);
        CHECK_OK(dev, clg_backward(clg_std(x, 0, NULL, 1, false), NULL));
        grad_is("std of [2, 2, 2]", x, 0);
        x = leaf(dev, dts[i], 2, (int64_t[]){2, 3}, two);
        CHECK_OK(dev, clg_backward(clg_sum(clg_std(x, CLG_AXES(1), 0, true), 0, NULL, false), NULL));
        grad_is("std of constant rows", x, 0);
        x = leaf(dev, dts[i], 1, (int64_t[]){3}, two);
        CHECK_OK(dev, clg_backward(clg_var(x, 0, NULL, 1, false), NULL));
        grad_is("var of [2, 2, 2]", x, 0);
        x = leaf(dev, dts[i], 1, (int64_t[]){3}, zero);
        CHECK_OK(dev, clg_backward(clg_norm(x, 2, 0, NULL, false), NULL));
        grad_is("norm of zeros", x, 0);
        /* layer norm and batch norm over a constant feature: finite, 0 for the input */
        x = leaf(dev, dts[i], 2, (int64_t[]){2, 3}, two);
        clg_tensor *w = clg_ones(dev, dts[i], 1, (int64_t[]){3});
        CHECK_OK(dev, clg_backward(clg_sum(clg_mul(clg_layer_norm(x, 1, w, NULL, 1e-5), x), 0, NULL, false), NULL));
        grad_is("layer_norm of constant rows (times x)", x, 0);
        clg_scope_end(dev);
    }
}

static void test_nan_extremum(clg_device *dev)
{
    clg_scope_begin(dev);
    clg_tensor *a = leaf(dev, CLG_F32, 1, (int64_t[]){3}, (const double[]){NAN, 1, 5});
    clg_tensor *b = leaf(dev, CLG_F32, 1, (int64_t[]){3}, (const double[]){2, NAN, 3});
    CHECK_OK(dev, clg_backward(clg_sum(clg_maximum(a, b), 0, NULL, false), NULL));
    optest_close("maximum with NaN: a's gradient", clg_tensor_grad(a), (const double[]){1, 1, 1}, 3, 0, 0);
    optest_close("maximum with NaN: b's gradient", clg_tensor_grad(b), (const double[]){1, 1, 0}, 3, 0, 0);
    clg_tensor_clear_grad(a), clg_tensor_clear_grad(b);
    CHECK_OK(dev, clg_backward(clg_sum(clg_minimum(a, b), 0, NULL, false), NULL));
    optest_close("minimum with NaN: a's gradient", clg_tensor_grad(a), (const double[]){1, 1, 0}, 3, 0, 0);
    optest_close("minimum with NaN: b's gradient", clg_tensor_grad(b), (const double[]){1, 1, 1}, 3, 0, 0);
    clg_tensor_clear_grad(a), clg_tensor_clear_grad(b);
    CHECK_OK(dev, clg_backward(clg_sum(clg_maximum(a, a), 0, NULL, false), NULL));
    /* ties halve and add up to 1; NaN (no tie: NaN != NaN) gives the whole to both, 2 */
    optest_close("maximum(a, a)", clg_tensor_grad(a), (const double[]){2, 1, 1}, 3, 0, 0);
    clg_scope_end(dev);
}

static void test_half_reductions(clg_device *dev)
{
    const double x[6] = {0.5, -1, 2, 0.25, 3, -2};
    for (int h = 0; h < 2; h++) {
        clg_dtype dt = h ? CLG_BF16 : CLG_F16;
        clg_scope_begin(dev);
        clg_tensor *t = leaf(dev, dt, 2, (int64_t[]){2, 3}, x);
        clg_tensor *l = clg_logsumexp(t, CLG_AXES(1), false), *n = clg_norm(t, 2, CLG_AXES(1), false);
        CHECK_MSG(l && clg_tensor_dtype(l) == dt, "logsumexp of %s: %s", clg_dtype_name(dt), clg_device_error(dev));
        CHECK_MSG(n && clg_tensor_dtype(n) == dt, "norm of %s: %s", clg_dtype_name(dt), clg_device_error(dev));
        double want_l[2], want_n[2];
        for (int r = 0; r < 2; r++) {
            double s = 0, q = 0;
            for (int c = 0; c < 3; c++) s += exp(x[r * 3 + c]), q += x[r * 3 + c] * x[r * 3 + c];
            want_l[r] = log(s), want_n[r] = sqrt(q);
        }
        double tol = h ? 8e-3 : 1e-3;   /* one rounding to the 16-bit type */
        optest_close(h ? "logsumexp bfloat16" : "logsumexp float16", l, want_l, 2, 0, tol);
        optest_close(h ? "norm bfloat16" : "norm float16", n, want_n, 2, 0, tol);
        CHECK_OK(dev, clg_backward(clg_sum(l, 0, NULL, false), NULL));
        CHECK_MSG(clg_tensor_grad(t) && clg_tensor_dtype(clg_tensor_grad(t)) == dt, "logsumexp's gradient dtype");
        clg_scope_end(dev);
    }
    /* over an empty axis: -inf, as PyTorch's */
    clg_scope_begin(dev);
    clg_tensor *e = clg_logsumexp(clg_zeros(dev, CLG_F32, 2, (int64_t[]){2, 0}), CLG_AXES(1), false);
    CHECK_MSG(e != NULL, "logsumexp over an empty axis: %s", clg_device_error(dev));
    optest_close("logsumexp over an empty axis", e, (const double[]){-INFINITY, -INFINITY}, 2, 0, 0);
    clg_scope_end(dev);
}

/* concat of float32 and float64 is float64; each input's gradient in its own dtype */
static void test_concat_promotion(clg_device *dev)
{
    if (!optest_fp64(dev)) return;
    clg_scope_begin(dev);
    const double v[4] = {1, 2, 3, 4};
    clg_tensor *a = leaf(dev, CLG_F32, 1, (int64_t[]){4}, v), *b = leaf(dev, CLG_F64, 1, (int64_t[]){4}, v);
    clg_tensor *y = clg_concat(2, (clg_tensor *[]){a, b}, 0);
    CHECK_MSG(y && clg_tensor_dtype(y) == CLG_F64, "concat float32 + float64: %s", clg_device_error(dev));
    CHECK_OK(dev, clg_backward(clg_sum(clg_mul(y, y), 0, NULL, false), NULL));
    CHECK(clg_tensor_dtype(clg_tensor_grad(a)) == CLG_F32 && clg_tensor_dtype(clg_tensor_grad(b)) == CLG_F64);
    optest_close("concat promotion: float32 input's gradient", clg_tensor_grad(a), (const double[]){2, 4, 6, 8}, 4, 0, 0);
    clg_scope_end(dev);
}

/* cross_entropy_ex against its definition (PyTorch's): class weights, rows labelled
 * ignore_index skipped, label smoothing, each reduction; and its gradient. */
static void ce_ref(const double *x, const int *y, const double *w, int N, int C, int ignore, double eps, double *rows,
                   double *wsum)
{
    *wsum = 0;
    for (int i = 0; i < N; i++) {
        double m = x[i * C], s = 0;
        for (int c = 1; c < C; c++) m = fmax(m, x[i * C + c]);
        for (int c = 0; c < C; c++) s += exp(x[i * C + c] - m);
        double lse = m + log(s), smooth = 0;
        if (y[i] == ignore) {
            rows[i] = 0;
            continue;
        }
        for (int c = 0; c < C; c++) smooth += (w ? w[c] : 1) * (lse - x[i * C + c]);
        double wy = w ? w[y[i]] : 1;
        rows[i] = (1 - eps) * wy * (lse - x[i * C + y[i]]) + eps / C * smooth;
        *wsum += wy;
    }
}

static void test_cross_entropy_ex(clg_device *dev)
{
    enum { N = 5, C = 3 };
    const double x[N * C] = {1, 2, 0.5, -1, 0, 3, 0.2, 0.1, -0.3, 2, -2, 1, 0, 0, 0};
    const int y[N] = {0, -100, 2, 1, 7};   /* 7: another ignore_index below */
    const double w[C] = {0.5, 1, 2};
    for (int k = 0; k < 4; k++) {
        bool weighted = k & 1;
        double eps = k & 2 ? 0.1 : 0;
        int yy[N];
        memcpy(yy, y, sizeof yy);
        yy[4] = 1;   /* in range for these */
        double rows[N], wsum, sum = 0;
        ce_ref(x, yy, weighted ? w : NULL, N, C, -100, eps, rows, &wsum);
        for (int i = 0; i < N; i++) sum += rows[i];
        for (int r = 0; r < 3; r++) {
            clg_scope_begin(dev);
            clg_tensor *tx = optest_tensor(dev, CLG_F32, 2, (int64_t[]){N, C}, x, OPTEST_PERMUTED);
            double yd[N];
            for (int i = 0; i < N; i++) yd[i] = yy[i];
            clg_tensor *ty = optest_tensor(dev, CLG_I32, 1, (int64_t[]){N}, yd, OPTEST_CONTIGUOUS);
            clg_ce_options o = clg_ce_defaults();
            o.reduction = (clg_reduction)r, o.label_smoothing = eps;
            if (weighted) o.weight = optest_tensor(dev, CLG_F32, 1, (int64_t[]){C}, w, OPTEST_CONTIGUOUS);
            char what[96];
            snprintf(what, sizeof what, "cross_entropy_ex %s%s, reduction %d", weighted ? "weighted" : "unweighted",
                     eps ? ", smoothing 0.1" : "", r);
            clg_tensor *l = clg_cross_entropy_ex(tx, ty, &o);
            if (r == CLG_REDUCE_NONE) optest_close(what, l, rows, N, 1e-6, 1e-5);
            else optest_close(what, l, (double[]){r == CLG_REDUCE_SUM ? sum : sum / wsum}, 1, 1e-6, 1e-5);
            clg_scope_end(dev);
        }
    }
    /* another ignore_index, and every row skipped: the mean is NaN (0 / 0), as PyTorch's */
    clg_scope_begin(dev);
    double yd[N];
    for (int i = 0; i < N; i++) yd[i] = y[i];
    yd[1] = 0;
    clg_tensor *tx = optest_tensor(dev, CLG_F32, 2, (int64_t[]){N, C}, x, OPTEST_CONTIGUOUS);
    clg_ce_options o = clg_ce_defaults();
    o.ignore_index = 7;
    double rows[N], wsum, sum = 0;
    int yi[N] = {0, 0, 2, 1, 7};
    ce_ref(x, yi, NULL, N, C, 7, 0, rows, &wsum);
    for (int i = 0; i < N; i++) sum += rows[i];
    optest_close("cross_entropy_ex ignore_index 7",
                 clg_cross_entropy_ex(tx, optest_tensor(dev, CLG_I32, 1, (int64_t[]){N}, yd, OPTEST_CONTIGUOUS), &o),
                 (double[]){sum / wsum}, 1, 1e-6, 1e-5);
    double all[N] = {-100, -100, -100, -100, -100};
    optest_close("cross_entropy_ex: every row ignored",
                 clg_cross_entropy_ex(tx, optest_tensor(dev, CLG_I32, 1, (int64_t[]){N}, all, OPTEST_CONTIGUOUS), NULL),
                 (double[]){NAN}, 1, 0, 0);
    clg_scope_end(dev);
}

/* bilinear upsampling with align_corners (PyTorch's values for [[1, 2, 3], [4, 5, 6]]
 * to 3 x 5: the corners stay, the rest interpolates on (in - 1) / (out - 1)) */
static void test_align_corners(clg_device *dev)
{
    const double x[6] = {1, 2, 3, 4, 5, 6};
    double want[15];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) want[i * 5 + j] = 1 + 3 * (i * 0.5) + j * 0.5;   /* linear in both axes */
    clg_scope_begin(dev);
    clg_tensor *t = optest_tensor(dev, CLG_F32, 4, (int64_t[]){1, 1, 2, 3}, x, OPTEST_CONTIGUOUS);
    optest_close("upsample_bilinear2d align_corners 2x3 to 3x5", clg_upsample_bilinear2d_ex(t, 3, 5, true), want, 15,
                 1e-6, 1e-6);
    /* one output sample per axis reads input 0 */
    optest_close("upsample_bilinear2d align_corners to 1x1", clg_upsample_bilinear2d_ex(t, 1, 1, true),
                 (const double[]){1}, 1, 0, 0);
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    test_zero_spread(dev);
    test_nan_extremum(dev);
    test_half_reductions(dev);
    test_concat_promotion(dev);
    test_cross_entropy_ex(dev);
    test_align_corners(dev);
    CHECK_MSG(clg_tensor_live_count(dev) == 0, "%lld tensors leaked", (long long)clg_tensor_live_count(dev));
    clg_device_close(dev);
    return check_report("test_ops_semantics");
}
