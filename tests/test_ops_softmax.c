/* Forward tests of softmax, log_softmax, var, argmax, cross_entropy and mse against
 * plain-C double references: every axis, contiguous, permuted and sliced inputs, row
 * lengths from 1 to past a work-group (1000, 1300), extreme logits, NaN, empty
 * batches and bad arguments. Gradients: test_grad_softmax.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optest.h"
#include "tensor_impl.h"

#define SH(...) CLG_SHAPE(__VA_ARGS__)

static int64_t numel_of(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* x as [outer, R, inner] around axis ax. */
static void split_axis(int ndim, const int64_t *shape, int ax, int64_t *outer, int64_t *R, int64_t *inner)
{
    *outer = *inner = 1;
    *R = ndim ? shape[ax] : 1;
    for (int d = 0; d < ndim; d++) {
        if (d < ax) *outer *= shape[d];
        if (d > ax) *inner *= shape[d];
    }
}

static void ref_softmax(const double *x, int ndim, const int64_t *shape, int ax, bool log_mode, double *y)
{
    int64_t O, R, I;
    split_axis(ndim, shape, ax, &O, &R, &I);
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            const double *p = x + o * R * I + i;
            double m = -INFINITY, s = 0;
            for (int64_t r = 0; r < R; r++) m = (isnan(p[r * I]) || p[r * I] > m) ? p[r * I] : m;
            for (int64_t r = 0; r < R; r++) s += exp(p[r * I] - m);
            for (int64_t r = 0; r < R; r++) {
                double d = p[r * I] - m;
                y[o * R * I + r * I + i] = log_mode ? d - log(s) : exp(d) / s;
            }
        }
}

/* The backward from the forward's output y and the incoming gradient g: softmax
 * dx = y (g - sum(g y)), log_softmax dx = g - exp(y) sum(g), along each row. */
static void ref_softmax_bwd(const double *y, const double *g, int ndim, const int64_t *shape, int ax, bool log_mode,
                            double *dx)
{
    int64_t O, R, I;
    split_axis(ndim, shape, ax, &O, &R, &I);
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            int64_t b = o * R * I + i;
            double dot = 0;
            for (int64_t r = 0; r < R; r++) dot += log_mode ? g[b + r * I] : g[b + r * I] * y[b + r * I];
            for (int64_t r = 0; r < R; r++) {
                double yv = y[b + r * I], gv = g[b + r * I];
                dx[b + r * I] = log_mode ? gv - exp(yv) * dot : yv * (gv - dot);
            }
        }
}

static clg_tensor *make(clg_device *dev, clg_dtype dt, int ndim, const int64_t *shape, const double *v,
                        optest_layout l)
{
    return optest_tensor(dev, dt, ndim, shape, v, l);
}

static bool shape_is(clg_tensor *t, int ndim, const int64_t *shape)
{
    if (!t || clg_tensor_ndim(t) != ndim) return false;
    return ndim == 0 || !memcmp(clg_tensor_shape(t), shape, (size_t)ndim * sizeof *shape);   /* shape may be NULL */
}

/* The values the device holds: references start from the same (rounded) inputs. */
static void round_to(clg_dtype dt, double *x, int64_t n)
{
    for (int64_t i = 0; dt == CLG_F32 && i < n; i++) x[i] = (float)x[i];
}

static double tol(clg_dtype dt) { return dt == CLG_F64 ? 1e-12 : 2e-6; }

/* Lengths past a work-group of 256: 1000 and 1300 (not a multiple of 256), or 300 and
 * 520 with CLG_TEST_SMALL (still more than one group, and than two). */
#define L1000 (optest_small() ? 300 : 1000)
#define L1300 (optest_small() ? 520 : 1300)

/* ---- softmax / log_softmax -------------------------------------------------------------------- */

static void check_softmax(clg_device *dev, clg_dtype dt, int ndim, const int64_t *shape, int axis, double lo,
                          double hi)
{
    int64_t n = numel_of(ndim, shape);
    size_t bytes = (size_t)(n + 1) * sizeof(double);
    double *x = malloc(bytes), *want = malloc(bytes), *g = malloc(bytes), *dx = malloc(bytes);
    optest_fill(x, n, lo, hi, (uint64_t)(n + 31 * axis));
    optest_fill(g, n, -1, 1, (uint64_t)(n + 7));
    round_to(dt, x, n);
    round_to(dt, g, n);
    int ax = ndim ? (axis < 0 ? axis + ndim : axis) : 0;
    for (int log_mode = 0; log_mode < 2; log_mode++) {
        ref_softmax(x, ndim, shape, ax, log_mode, want);
        ref_softmax_bwd(want, g, ndim, shape, ax, log_mode, dx);
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            clg_scope_begin(dev);
            char what[160], sh[64];
            snprintf(what, sizeof what, "%s %s %s axis %d %s", log_mode ? "log_softmax" : "softmax",
                     clg_dtype_name(dt), clg_shape_str(ndim, shape, sh, sizeof sh), axis, optest_layout_names[l]);
            clg_tensor *t = make(dev, dt, ndim, shape, x, (optest_layout)l);
            clg_tensor_set_requires_grad(t, true);
            clg_tensor *y = log_mode ? clg_log_softmax(t, axis) : clg_softmax(t, axis);
            CHECK_MSG(shape_is(y, ndim, shape), "%s: shape: %s", what, clg_device_error(dev));
            /* log_softmax values reach |hi - lo| + log R: a relative bound as well */
            optest_close(what, y, want, n, tol(dt), log_mode ? tol(dt) * 4 : tol(dt) * 8);
            /* the backward, with the incoming gradient in the same layout (under Oclgrind,
             * CLG_TEST_SMALL, contiguous and permuted only: the simulator's time) */
            if (optest_small() && l > OPTEST_PERMUTED) {
                clg_scope_end(dev);
                continue;
            }
            clg_tensor *gt = make(dev, dt, ndim, shape, g, (optest_layout)l);
            CHECK_OK(dev, y && gt ? clg_backward(y, gt) : CLG_ERR_INVALID_ARGUMENT);
            strncat(what, " backward", sizeof what - strlen(what) - 1);
            optest_close(what, clg_tensor_grad(t), dx, n, tol(dt) * 4, tol(dt) * 8);
            clg_scope_end(dev);
        }
    }
    free(x);
    free(want);
    free(g);
    free(dx);
}

static void test_softmax(clg_device *dev, clg_dtype dt)
{
    /* row lengths 1, 7, 33, 1000, 1300 (not a multiple of 256) along the last axis */
    const int64_t lens[] = {1, 7, 33, L1000, L1300};
    for (int i = 0; i < 5; i++) check_softmax(dev, dt, 2, (int64_t[]){3, lens[i]}, -1, -5, 5);
    check_softmax(dev, dt, SH(L1000), 0, -20, 20);
    /* every axis of a 3-D tensor, counted from the end and from the start (the
     * simulator, CLG_TEST_SMALL: from the end only; the same kernels, 17 of its 42 s),
     * and a long non-last axis */
    for (int ax = -3; ax < 3; ax++)
        if (ax < 0 || !optest_small()) check_softmax(dev, dt, SH(4, 7, 33), ax, -3, 3);
    check_softmax(dev, dt, SH(L1300, 3), 0, -5, 5);
    /* rows past what a work-item takes element by element (item_loops / 12, 2730) but not
     * 16 at a time: softmax_fwd_vec's range on CPUs, the group kernels elsewhere */
    check_softmax(dev, dt, SH(2, optest_small() ? 700 : 40000), -1, -5, 5);
    check_softmax(dev, dt, SH(5, 1, 4), 1, -5, 5);   /* rows of length 1: softmax 1, log 0 */
    check_softmax(dev, dt, 0, NULL, 0, -5, 5);           /* a 0-d tensor is one row of one */
}

/* Huge logits stay finite (the max is taken out); NaN spreads over its row only. */
static void test_softmax_extremes(clg_device *dev, clg_dtype dt)
{
    clg_scope_begin(dev);
    const double big[8] = {1e4, -1e4, 1e4 - 1, 0, -1e4, -1e4, -1e4 + 2, -1e4};
    double want[8];
    for (int log_mode = 0; log_mode < 2; log_mode++) {
        ref_softmax(big, SH(2, 4), 1, log_mode, want);
        clg_tensor *t = make(dev, dt, SH(2, 4), big, OPTEST_CONTIGUOUS);
        optest_close(log_mode ? "log_softmax 1e4" : "softmax 1e4", log_mode ? clg_log_softmax(t, 1) : clg_softmax(t, 1),
                     want, 8, 1e-6, 1e-6);
    }
    const double withnan[6] = {1, NAN, 2, 3, 4, 5};
    double nanwant[6];
    ref_softmax(withnan, SH(2, 3), 1, false, nanwant);
    CHECK(isnan(nanwant[0]) && !isnan(nanwant[3]));
    clg_tensor *t = make(dev, dt, SH(2, 3), withnan, OPTEST_SLICED);
    optest_close("softmax NaN row", clg_softmax(t, 1), nanwant, 6, 1e-6, 1e-6);
    ref_softmax(withnan, SH(2, 3), 1, true, nanwant);
    optest_close("log_softmax NaN row", clg_log_softmax(t, -1), nanwant, 6, 1e-6, 1e-6);
    /* empty batch: an empty result, no launch */
    clg_tensor *e = clg_softmax(clg_zeros(dev, dt, SH(0, 5)), 1);
    CHECK_MSG(shape_is(e, 2, (int64_t[]){0, 5}), "softmax of [0, 5]: %s", clg_device_error(dev));
    e = clg_log_softmax(clg_zeros(dev, dt, SH(4, 0)), 1);
    CHECK_MSG(shape_is(e, 2, (int64_t[]){4, 0}), "log_softmax of [4, 0]: %s", clg_device_error(dev));
    /* errors: bad axis, int32, NULL */
    CHECK(clg_softmax(clg_zeros(dev, dt, SH(2, 3)), 2) == NULL);
    CHECK(strstr(clg_device_error(dev), "clg_softmax") && strstr(clg_device_error(dev), "[2, 3]"));
    CHECK(clg_log_softmax(clg_zeros(dev, CLG_I32, SH(2, 3)), 0) == NULL);
    CHECK(strstr(clg_device_error(dev), "clg_log_softmax") != NULL);
    CHECK(clg_softmax(NULL, 0) == NULL && clg_log_softmax(NULL, 0) == NULL);
    clg_scope_end(dev);
}

/* ---- var --------------------------------------------------------------------------------------- */

static void ref_var(const double *x, int ndim, const int64_t *shape, const bool *mask, int correction,
                    double *y, int64_t nout)
{
    double *sum = calloc((size_t)nout + 1, sizeof *sum);
    int64_t n = numel_of(ndim, shape), R = 1, *oidx = malloc((size_t)(n + 1) * sizeof *oidx);
    for (int d = 0; d < ndim; d++) R *= mask[d] ? shape[d] : 1;
    for (int64_t i = 0; i < n; i++) {   /* the output each element goes to: its kept coordinates */
        int64_t rem = i, o = 0, mul = 1;
        for (int d = ndim - 1; d >= 0; d--) {
            int64_t c = rem % shape[d];
            rem /= shape[d];
            if (!mask[d]) o += c * mul, mul *= shape[d];
        }
        oidx[i] = o;
        sum[o] += x[i];
    }
    for (int64_t o = 0; o < nout; o++) y[o] = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = x[i] - sum[oidx[i]] / (double)R;
        y[oidx[i]] += d * d;
    }
    double div = (double)R - correction > 0 ? (double)R - correction : 0;
    for (int64_t o = 0; o < nout; o++) y[o] /= div;
    free(sum);
    free(oidx);
}

static void check_var(clg_device *dev, clg_dtype dt, int ndim, const int64_t *shape, int naxes, const int *axes,
                      int correction, bool keepdim, double lo, double hi)
{
    bool mask[CLG_MAX_DIMS] = {false};
    int64_t out[CLG_MAX_DIMS], nout = 1;
    int on = 0;
    for (int i = 0; i < naxes; i++) mask[axes[i] < 0 ? axes[i] + ndim : axes[i]] = true;
    for (int d = 0; d < ndim; d++) {
        if (naxes == 0) mask[d] = true;
        if (!mask[d]) nout *= shape[d];
        if (keepdim || !mask[d]) out[on++] = mask[d] ? 1 : shape[d];
    }
    int64_t n = numel_of(ndim, shape);
    double *x = malloc((size_t)(n + 1) * sizeof *x), *want = malloc((size_t)(nout + 1) * sizeof *x);
    optest_fill(x, n, lo, hi, (uint64_t)(n + naxes));
    round_to(dt, x, n);
    ref_var(x, ndim, shape, mask, correction, want, nout);
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
        clg_scope_begin(dev);
        char what[160], sh[64];
        snprintf(what, sizeof what, "var %s %s naxes %d correction %d keepdim %d %s", clg_dtype_name(dt),
                 clg_shape_str(ndim, shape, sh, sizeof sh), naxes, correction, keepdim, optest_layout_names[l]);
        clg_tensor *y = clg_var(make(dev, dt, ndim, shape, x, (optest_layout)l), naxes, axes, correction, keepdim);
        CHECK_MSG(shape_is(y, on, out), "%s: shape: %s", what, clg_device_error(dev));
        optest_close(what, y, want, nout, tol(dt), dt == CLG_F64 ? 1e-10 : 1e-4);
        clg_scope_end(dev);
    }
    free(x);
    free(want);
}

static void test_var(clg_device *dev, clg_dtype dt)
{
    for (int c = 0; c < 2; c++) {
        check_var(dev, dt, SH(3, L1000), CLG_AXES(-1), c, false, -2, 2);
        check_var(dev, dt, SH(L1300, 2), CLG_AXES(0), c, true, -2, 2);
        check_var(dev, dt, SH(4, 5, 6), CLG_AXES(0, 2), c, true, -2, 2);
        check_var(dev, dt, SH(4, 5, 6), CLG_AXES(1), c, false, -2, 2);
        check_var(dev, dt, SH(4, 7, 33), 0, NULL, c, false, -2, 2);
    }
    /* two passes: a large mean does not cancel the variance away in float32 */
    check_var(dev, dt, SH(2, 33), CLG_AXES(1), 1, false, 1e4, 1e4 + 1);
    /* R = 1: correction 1 divides 0 by 0 (NaN, as PyTorch), correction 0 gives 0 */
    clg_scope_begin(dev);
    const double one[3] = {1, 2, 3};
    clg_tensor *col = make(dev, dt, SH(3, 1), one, OPTEST_CONTIGUOUS);
    optest_close("var R=1 correction 1", clg_var(col, CLG_AXES(1), 1, false), (double[]){NAN, NAN, NAN}, 3, 0, 0);
    optest_close("var R=1 correction 0", clg_var(col, CLG_AXES(1), 0, false), (double[]){0, 0, 0}, 3, 0, 0);
    /* correction past R: 1 / max(0, 2 - 2) = inf, as PyTorch */
    optest_close("var correction 2 of 2", clg_var(make(dev, dt, SH(2), one, OPTEST_CONTIGUOUS), 0, NULL, 2, false),
                 (double[]){INFINITY}, 1, 0, 0);
    /* empty reduction: NaN; empty batch: empty */
    optest_close("var of no elements", clg_var(clg_zeros(dev, dt, SH(2, 0)), CLG_AXES(1), 1, false),
                 (double[]){NAN, NAN}, 2, 0, 0);
    CHECK(shape_is(clg_var(clg_zeros(dev, dt, SH(0, 3)), CLG_AXES(1), 1, false), 1, (int64_t[]){0}));
    CHECK(clg_var(clg_zeros(dev, dt, SH(2, 3)), CLG_AXES(3), 1, false) == NULL);
    CHECK(strstr(clg_device_error(dev), "clg_var") != NULL);
    CHECK(clg_var(clg_zeros(dev, CLG_I32, SH(2, 3)), CLG_AXES(1), 1, false) == NULL);
    CHECK(clg_var(NULL, 0, NULL, 1, false) == NULL);
    clg_scope_end(dev);
}

/* ---- argmax ------------------------------------------------------------------------------------- */

static void ref_argmax(const double *x, int ndim, const int64_t *shape, int ax, double *y)
{
    int64_t O, R, I;
    split_axis(ndim, shape, ax, &O, &R, &I);
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            const double *p = x + o * R * I + i;
            int64_t best = 0;
            for (int64_t r = 1; r < R && !isnan(p[best * I]); r++)
                if (isnan(p[r * I]) || p[r * I] > p[best * I]) best = r;
            y[o * I + i] = (double)best;
        }
}

static void check_argmax(clg_device *dev, clg_dtype dt, int ndim, const int64_t *shape, int axis, const double *v)
{
    int64_t n = numel_of(ndim, shape);
    double *x = malloc((size_t)(n + 1) * sizeof *x), *want = malloc((size_t)(n + 1) * sizeof *x);
    if (v) memcpy(x, v, (size_t)n * sizeof *x);
    else for (int64_t i = 0; i < n; i++) x[i] = (double)((i * 7919) % 13) - 6;   /* many ties */
    int ax = axis < 0 ? axis + ndim : axis;
    ref_argmax(x, ndim, shape, ax, want);
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++)
        for (int keep = 0; keep < 2; keep++) {
            /* keepdim changes the output's shape, not the kernel: under Oclgrind
             * (CLG_TEST_SMALL) in the contiguous layout only */
            if (keep && l != OPTEST_CONTIGUOUS && optest_small()) continue;
            clg_scope_begin(dev);
            char what[160], sh[64];
            snprintf(what, sizeof what, "argmax %s %s axis %d keepdim %d %s", clg_dtype_name(dt),
                     clg_shape_str(ndim, shape, sh, sizeof sh), axis, keep, optest_layout_names[l]);
            clg_tensor *y = clg_argmax(make(dev, dt, ndim, shape, x, (optest_layout)l), axis, keep);
            int64_t out[CLG_MAX_DIMS];
            int on = 0;
            for (int d = 0; d < ndim; d++)
                if (keep || d != ax) out[on++] = d == ax ? 1 : shape[d];
            CHECK_MSG(shape_is(y, on, out) && clg_tensor_dtype(y) == CLG_I32, "%s: shape or dtype: %s", what,
                      clg_device_error(dev));
            optest_close(what, y, want, n / shape[ax], 0, 0);
            clg_scope_end(dev);
        }
    free(x);
    free(want);
}

static void test_argmax(clg_device *dev, clg_dtype dt)
{
    check_argmax(dev, dt, SH(3, L1300), -1, NULL);
    check_argmax(dev, dt, SH(L1000, 3), 0, NULL);
    for (int ax = 0; ax < 3; ax++) check_argmax(dev, dt, SH(4, 7, 33), ax, NULL);
    /* ties: the first; NaN: the max (the first NaN); a row of one */
    const double ties[12] = {5, 1, 5, 5, 0, 0, 0, 0, -1, 7, 7, -2};
    check_argmax(dev, dt, SH(3, 4), 1, ties);
    check_argmax(dev, dt, SH(3, 4), 0, ties);
    if (dt != CLG_I32) {
        const double nans[12] = {1, NAN, 3, NAN, INFINITY, 2, NAN, 0, 0, 0, 0, NAN};
        check_argmax(dev, dt, SH(3, 4), 1, nans);
        check_argmax(dev, dt, SH(3, 4), 0, nans);
    }
    check_argmax(dev, dt, SH(5, 1), 1, NULL);
    clg_scope_begin(dev);
    CHECK(clg_argmax(clg_zeros(dev, dt, SH(3, 0)), 1, false) == NULL);   /* nothing to pick from */
    CHECK(strstr(clg_device_error(dev), "clg_argmax") && strstr(clg_device_error(dev), "[3, 0]"));
    CHECK(shape_is(clg_argmax(clg_zeros(dev, dt, SH(0, 4)), 1, false), 1, (int64_t[]){0}));
    CHECK(clg_argmax(clg_zeros(dev, dt, SH(3, 2)), -3, false) == NULL);
    CHECK(clg_argmax(NULL, 0, false) == NULL);
    clg_scope_end(dev);
}

/* ---- cross_entropy -------------------------------------------------------------------------------- */

static void ref_cross_entropy(const double *x, const double *lab, int64_t N, int64_t C, double *loss)
{
    for (int64_t i = 0; i < N; i++) {
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < C; c++) m = fmax(m, x[i * C + c]);
        for (int64_t c = 0; c < C; c++) s += exp(x[i * C + c] - m);
        int64_t k = (int64_t)lab[i];
        loss[i] = k >= 0 && k < C ? m + log(s) - x[i * C + k] : NAN;
    }
}

static void check_cross_entropy(clg_device *dev, clg_dtype dt, int64_t N, int64_t C, double lo, double hi)
{
    double *x = malloc((size_t)(N * C + 1) * sizeof *x), *lab = malloc((size_t)(N + 1) * sizeof *x);
    double *loss = malloc((size_t)(N + 1) * sizeof *x);
    optest_fill(x, N * C, lo, hi, (uint64_t)(N * C));
    round_to(dt, x, N * C);
    for (int64_t i = 0; i < N; i++) lab[i] = (double)((i * 31 + 3) % C);
    ref_cross_entropy(x, lab, N, C, loss);
    double sum = 0;
    for (int64_t i = 0; i < N; i++) sum += loss[i];
    double mean = sum / (double)N, rtol = dt == CLG_F64 ? 1e-11 : 1e-5;
    double *dx = malloc((size_t)(N * C + 1) * sizeof *dx);
    for (int64_t i = 0; i < N; i++) {
        double m = -INFINITY, z = 0;
        for (int64_t c = 0; c < C; c++) m = fmax(m, x[i * C + c]);
        for (int64_t c = 0; c < C; c++) z += exp(x[i * C + c] - m);
        for (int64_t c = 0; c < C; c++) dx[i * C + c] = exp(x[i * C + c] - m) / z - (c == (int64_t)lab[i]);
    }
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
        clg_scope_begin(dev);
        char what[160];
        snprintf(what, sizeof what, "cross_entropy %s [%lld, %lld] %s", clg_dtype_name(dt), (long long)N, (long long)C,
                 optest_layout_names[l]);
        clg_tensor *xt = make(dev, dt, SH(N, C), x, (optest_layout)l);
        clg_tensor *lt = make(dev, CLG_I32, SH(N), lab, (optest_layout)l);
        clg_tensor *none = clg_cross_entropy(xt, lt, CLG_REDUCE_NONE);
        CHECK_MSG(shape_is(none, 1, (int64_t[]){N}), "%s: shape: %s", what, clg_device_error(dev));
        optest_close(what, none, loss, N, tol(dt), rtol);
        /* the mean and the sum reduce the same per-row kernel's losses: under Oclgrind
         * (CLG_TEST_SMALL) in the contiguous layout only */
        if (l == OPTEST_CONTIGUOUS || !optest_small()) {
            clg_tensor *m = clg_cross_entropy(xt, lt, CLG_REDUCE_MEAN), *s = clg_cross_entropy(xt, lt, CLG_REDUCE_SUM);
            CHECK(shape_is(m, 0, NULL) && shape_is(s, 0, NULL));
            optest_close(what, m, &mean, 1, tol(dt), rtol);
            optest_close(what, s, &sum, 1, tol(dt), rtol);
        }
        /* the gradient of the sum: softmax(x) - onehot(label), row by row */
        clg_tensor_set_requires_grad(xt, true);
        clg_tensor *s2 = clg_cross_entropy(xt, lt, CLG_REDUCE_SUM);
        CHECK_OK(dev, s2 ? clg_backward(s2, NULL) : clg_device_last_status(dev));
        char gwhat[176];
        snprintf(gwhat, sizeof gwhat, "%s gradient", what);
        optest_close(gwhat, clg_tensor_grad(xt), dx, N * C, tol(dt), rtol);
        clg_scope_end(dev);
    }
    free(x);
    free(lab);
    free(loss);
    free(dx);
}

static double sum_of(clg_tensor *t, bool *finite)
{
    int64_t n = clg_tensor_numel(t);
    double *v = optest_read(t), s = 0;
    *finite = v != NULL;
    for (int64_t i = 0; v && i < n; i++) {
        *finite = *finite && isfinite(v[i]);
        s += v[i];
    }
    free(v);
    return s;
}

static void test_cross_entropy(clg_device *dev, clg_dtype dt)
{
    check_cross_entropy(dev, dt, 1, 1, -3, 3);
    check_cross_entropy(dev, dt, 7, 10, -3, 3);
    check_cross_entropy(dev, dt, 33, L1000, -3, 3);
    check_cross_entropy(dev, dt, 5, L1300, -3, 3);
    check_cross_entropy(dev, dt, L1000, 7, -3, 3);
    check_cross_entropy(dev, dt, 9, 37, -3, 3);   /* rows of 16-wide vectors and a tail */
    check_cross_entropy(dev, dt, 6, 10, -1e4, 1e4);   /* huge logits: finite and exact */

    clg_scope_begin(dev);
    /* logits 1e4: the loss and its gradient stay finite */
    const double big[6] = {1e4, -1e4, 0, -1e4, 1e4, 1e4};
    clg_tensor *x = make(dev, dt, SH(2, 3), big, OPTEST_CONTIGUOUS);
    clg_tensor_set_requires_grad(x, true);
    clg_tensor *lab = make(dev, CLG_I32, SH(2), (double[]){1, 2}, OPTEST_CONTIGUOUS);
    clg_tensor *loss = clg_cross_entropy(x, lab, CLG_REDUCE_SUM);
    double want = 2e4 + log(2.0);   /* row 0: 2e4; row 1: log 2 */
    optest_close("cross_entropy 1e4", loss, &want, 1, 1e-6, 1e-6);
    CHECK_OK(dev, clg_backward(loss, NULL));
    optest_close("cross_entropy 1e4 gradient", clg_tensor_grad(x), (double[]){1, -1, 0, 0, 0.5, -0.5}, 6, 1e-6, 0);
    bool finite;
    sum_of(clg_tensor_grad(x), &finite);
    CHECK(finite);

    /* labels out of range: refused at once when they came from the host */
    clg_tensor *x2 = make(dev, dt, SH(3, 4), (double[]){1, 2, 3, 4, 1, 2, 3, 4, 4, 3, 2, 1}, OPTEST_CONTIGUOUS);
    clg_tensor_set_requires_grad(x2, true);
    clg_tensor *hbad = make(dev, CLG_I32, SH(3), (double[]){0, 4, -1}, OPTEST_CONTIGUOUS);
    CHECK_MSG(!clg_cross_entropy(x2, hbad, CLG_REDUCE_NONE) &&
                  strstr(clg_device_error(dev), "clg_cross_entropy: label -1 (element 2") &&
                  strstr(clg_device_error(dev), "out of range [0, 4)"), "%s", clg_device_error(dev));
    clg_device_clear_error(dev);
    /* ... made on the device (as a loader's upload, here a cast): that row is NaN, forward
     * and backward, the others are not, and the first read fails, naming the op */
    clg_tensor *bad = clg_cast(make(dev, dt, SH(3), (double[]){0, 4, -1}, OPTEST_CONTIGUOUS), CLG_I32);
    clg_tensor *bn = clg_cross_entropy(x2, bad, CLG_REDUCE_NONE);
    clg_tensor *bm = clg_cross_entropy(x2, bad, CLG_REDUCE_MEAN);
    CHECK_OK(dev, clg_backward(bm, NULL));
    double *first = optest_read(bn);
    CHECK_MSG(!first && strstr(clg_device_error(dev), "clg_cross_entropy: label ") &&
                  strstr(clg_device_error(dev), "found on the device"), "%s", clg_device_error(dev));
    clg_device_clear_error(dev);   /* reported once: the reads below succeed */
    double ok0;
    ref_cross_entropy((double[]){1, 2, 3, 4}, (double[]){0}, 1, 4, &ok0);
    optest_close("cross_entropy bad labels", bn, (double[]){ok0, NAN, NAN}, 3, 1e-5, 1e-5);
    optest_close("cross_entropy bad labels mean", bm, (double[]){NAN}, 1, 0, 0);
    double *g = optest_read(clg_tensor_grad(x2));
    CHECK(g && isfinite(g[0]) && isfinite(g[3]) && isnan(g[4]) && isnan(g[7]) && isnan(g[8]) && isnan(g[11]));
    free(g);

    /* empty batch: MEAN is NaN (0 / 0), SUM 0, NONE empty */
    clg_tensor *e = clg_zeros(dev, dt, SH(0, 5));
    clg_tensor *el = clg_zeros(dev, CLG_I32, SH(0));
    optest_close("cross_entropy empty mean", clg_cross_entropy(e, el, CLG_REDUCE_MEAN), (double[]){NAN}, 1, 0, 0);
    optest_close("cross_entropy empty sum", clg_cross_entropy(e, el, CLG_REDUCE_SUM), (double[]){0}, 1, 0, 0);
    CHECK(shape_is(clg_cross_entropy(e, el, CLG_REDUCE_NONE), 1, (int64_t[]){0}));

    /* bad arguments: an error naming the op and the shapes, never a crash */
    clg_tensor *l4 = clg_zeros(dev, dt, SH(2, 4));
    CHECK(clg_cross_entropy(l4, clg_zeros(dev, dt, SH(2)), CLG_REDUCE_MEAN) == NULL);   /* float labels */
    CHECK(strstr(clg_device_error(dev), "clg_cross_entropy") && strstr(clg_device_error(dev), "int32"));
    CHECK(clg_cross_entropy(l4, clg_zeros(dev, CLG_I32, SH(3)), CLG_REDUCE_MEAN) == NULL);   /* N differs */
    CHECK(strstr(clg_device_error(dev), "[3]") && strstr(clg_device_error(dev), "[2, 4]"));
    CHECK(clg_cross_entropy(l4, clg_zeros(dev, CLG_I32, SH(2, 1)), CLG_REDUCE_MEAN) == NULL);   /* 2-D labels */
    CHECK(clg_cross_entropy(clg_zeros(dev, dt, SH(8)), clg_zeros(dev, CLG_I32, SH(8)), CLG_REDUCE_MEAN) == NULL);
    CHECK(clg_cross_entropy(clg_zeros(dev, CLG_I32, SH(2, 4)), clg_zeros(dev, CLG_I32, SH(2)), CLG_REDUCE_SUM) == NULL);
    CHECK(clg_cross_entropy(l4, clg_zeros(dev, CLG_I32, SH(2)), (clg_reduction)7) == NULL);
    CHECK(clg_cross_entropy(NULL, el, CLG_REDUCE_MEAN) == NULL && clg_cross_entropy(l4, NULL, CLG_REDUCE_MEAN) == NULL);
    clg_scope_end(dev);
}

/* ---- mse ---------------------------------------------------------------------------------------- */

static void test_mse(clg_device *dev, clg_dtype dt)
{
    double a[12], b[4];
    optest_fill(a, 12, -2, 2, 1);
    optest_fill(b, 4, -2, 2, 2);
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
        clg_scope_begin(dev);
        /* a [3, 4] and b [4] broadcast; b as [3, 1] too */
        clg_tensor *at = make(dev, dt, SH(3, 4), a, (optest_layout)l), *bt = make(dev, dt, SH(4), b, (optest_layout)l);
        double none[12], sum = 0;
        for (int i = 0; i < 12; i++) sum += none[i] = (a[i] - b[i % 4]) * (a[i] - b[i % 4]);
        double mean = sum / 12;
        clg_tensor *y = clg_mse(at, bt, CLG_REDUCE_NONE);
        CHECK(shape_is(y, 2, (int64_t[]){3, 4}));
        optest_close("mse none broadcast", y, none, 12, tol(dt), 1e-6);
        optest_close("mse sum broadcast", clg_mse(bt, at, CLG_REDUCE_SUM), &sum, 1, tol(dt), 1e-6);
        optest_close("mse mean broadcast", clg_mse(at, bt, CLG_REDUCE_MEAN), &mean, 1, tol(dt), 1e-6);
        clg_tensor *col = make(dev, dt, SH(3, 1), b, (optest_layout)l);
        for (int i = 0; i < 12; i++) none[i] = (a[i] - b[i / 4]) * (a[i] - b[i / 4]);
        optest_close("mse none column", clg_mse(at, col, CLG_REDUCE_NONE), none, 12, tol(dt), 1e-6);
        clg_scope_end(dev);
    }
    clg_scope_begin(dev);
    optest_close("mse empty mean", clg_mse(clg_zeros(dev, dt, SH(0)), clg_zeros(dev, dt, SH(0)), CLG_REDUCE_MEAN),
                 (double[]){NAN}, 1, 0, 0);
    CHECK(clg_mse(clg_zeros(dev, dt, SH(3, 4)), clg_zeros(dev, dt, SH(3)), CLG_REDUCE_MEAN) == NULL);
    CHECK(strstr(clg_device_error(dev), "clg_mse") && strstr(clg_device_error(dev), "[3, 4]"));
    CHECK(clg_mse(clg_zeros(dev, dt, SH(3)), clg_zeros(dev, dt, SH(3)), (clg_reduction)-1) == NULL);
    CHECK(clg_mse(NULL, clg_zeros(dev, dt, SH(3)), CLG_REDUCE_SUM) == NULL);
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    int64_t live0 = clg_tensor_live_count(dev);
    clg_dtype dts[2];
    int ndt = optest_float_dtypes(dev, dts);
    /* The simulator (CLG_TEST_SMALL) runs every kernel in one float type: the float64
     * builds index as the float32 ones do (T is the only difference). */
    if (optest_small()) ndt = 1;
    for (int i = 0; i < ndt; i++) {
        test_softmax(dev, dts[i]);
        test_softmax_extremes(dev, dts[i]);
        test_var(dev, dts[i]);
        test_argmax(dev, dts[i]);
        test_cross_entropy(dev, dts[i]);
        test_mse(dev, dts[i]);
    }
    test_argmax(dev, CLG_I32);
    CHECK_MSG(clg_tensor_live_count(dev) == live0, "%lld tensors leaked",
              (long long)(clg_tensor_live_count(dev) - live0));
    clg_device_close(dev);
    return check_report("test_ops_softmax");
}
