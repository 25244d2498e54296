/* batch_norm, layer_norm, dropout and the losses l1, smooth_l1, bce_with_logits, nll and
 * cross_entropy_smooth forward against plain-C double references: 2-D and 4-D batch
 * norm over several training steps (running statistics included) and in evaluation,
 * alone and as batch_norm_add_relu (with and without z),
 * layer norm over one and two axes, dropout's statistics and its generator, losses at
 * sizes 1, 7, 33 and 1000 (300 with CLG_TEST_SMALL) on contiguous, permuted and sliced
 * inputs with every reduction; NaN propagation; errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "optest.h"

#define SH(...) CLG_SHAPE(__VA_ARGS__)

static double tol_of(clg_dtype dt) { return dt == CLG_F64 ? 1e-10 : 2e-5; }

static int64_t prod(int n, const int64_t *s)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= s[i];
    return p;
}

static double *dalloc(int64_t n) { return calloc((size_t)(n ? n : 1), sizeof(double)); }

/* ---- batch_norm ---------------------------------------------------------------------------- */

typedef struct bn_ref {
    int64_t N, C, S;
    const double *w, *b;   /* NULL: none */
    double eps, momentum;
} bn_ref;

static int64_t bn_at(const bn_ref *r, int64_t c, int64_t m) { return ((m / r->S) * r->C + c) * r->S + m % r->S; }

/* Normalise channel c with (mean, var) into y. */
static void bn_channel(const bn_ref *r, const double *x, int64_t c, double mean, double var, double *y)
{
    double invstd = 1.0 / sqrt(var + r->eps);
    for (int64_t m = 0; m < r->N * r->S; m++) {
        int64_t i = bn_at(r, c, m);
        y[i] = (x[i] - mean) * invstd * (r->w ? r->w[c] : 1) + (r->b ? r->b[c] : 0);
    }
}

/* Training: batch statistics, and the running averages updated with the unbiased variance. */
static void bn_train_ref(const bn_ref *r, const double *x, double *rm, double *rv, double *y)
{
    int64_t M = r->N * r->S;
    for (int64_t c = 0; c < r->C; c++) {
        double mean = 0, var = 0;
        for (int64_t m = 0; m < M; m++) mean += x[bn_at(r, c, m)];
        mean /= (double)M;
        for (int64_t m = 0; m < M; m++) var += (x[bn_at(r, c, m)] - mean) * (x[bn_at(r, c, m)] - mean);
        var /= (double)M;
        bn_channel(r, x, c, mean, var, y);
        rm[c] = (1 - r->momentum) * rm[c] + r->momentum * mean;
        rv[c] = (1 - r->momentum) * rv[c] + r->momentum * var * (double)M / (double)(M - 1);
    }
}

static void bn_eval_ref(const bn_ref *r, const double *x, const double *rm, const double *rv, double *y)
{
    for (int64_t c = 0; c < r->C; c++) bn_channel(r, x, c, rm[c], rv[c], y);
}

/* What follows the normalisation: nothing (clg_batch_norm), or batch_norm_add_relu's
 * ReLU, with z (in the case's layout) added first or not. */
typedef enum bn_act { BN_PLAIN, BN_RELU, BN_ADD_RELU } bn_act;
static const char *const bn_act_names[] = {"", " +relu", " +z +relu"};

/* y = act(y) with z's values (BN_ADD_RELU) */
static void bn_act_ref(bn_act act, const double *z, int64_t n, double *y)
{
    for (int64_t i = 0; act != BN_PLAIN && i < n; i++) {
        double v = y[i] + (act == BN_ADD_RELU ? z[i] : 0);
        y[i] = v < 0 ? 0 : v;
    }
}

static clg_tensor *bn_op(bn_act act, clg_tensor *x, clg_tensor *z, clg_tensor *rm, clg_tensor *rv, clg_tensor *w,
                         clg_tensor *b, bool training, double momentum, double eps)
{
    if (act == BN_PLAIN) return clg_batch_norm(x, rm, rv, w, b, training, momentum, eps);
    return clg_batch_norm_add_relu(x, act == BN_ADD_RELU ? z : NULL, rm, rv, w, b, training, momentum, eps);
}

/* Three training steps on different batches, then evaluation with what they left. */
static void bn_case(clg_device *dev, clg_dtype dt, int ndim, const int64_t *shape, bool affine, optest_layout lay,
                    bn_act act)
{
    int64_t n = prod(ndim, shape), C = shape[1];
    double *x = dalloc(n), *y = dalloc(n), *w = dalloc(C), *b = dalloc(C), *rm = dalloc(C), *rv = dalloc(C);
    double *z = dalloc(n);
    optest_fill(z, n, -1, 1, 5);
    optest_fill(w, C, 0.5, 1.5, 3);
    optest_fill(b, C, -0.5, 0.5, 4);
    for (int64_t c = 0; c < C; c++) rv[c] = 1;
    bn_ref r = {shape[0], C, n / (shape[0] * C), affine ? w : NULL, affine ? b : NULL, 1e-5, 0.1};
    char what[160];
    snprintf(what, sizeof what, "batch_norm %s %dD C=%lld %s%s%s", clg_dtype_name(dt), ndim, (long long)C,
             optest_layout_names[lay], affine ? " affine" : "", bn_act_names[act]);
    clg_scope_begin(dev);
    clg_tensor *tw = affine ? optest_tensor(dev, dt, 1, &C, w, lay) : NULL;
    clg_tensor *tb = affine ? optest_tensor(dev, dt, 1, &C, b, OPTEST_SLICED) : NULL;
    clg_tensor *trm = optest_tensor(dev, dt, 1, &C, rm, OPTEST_CONTIGUOUS);
    clg_tensor *trv = optest_tensor(dev, dt, 1, &C, rv, lay);   /* sliced: updated through a stride */
    clg_tensor *tz = optest_tensor(dev, dt, ndim, shape, z, lay);
    double tol = tol_of(dt);
    for (int step = 0; step < 3; step++) {
        optest_fill(x, n, -1.0 + step, 2.0 + 2 * step, 100 + (uint64_t)step);
        bn_train_ref(&r, x, rm, rv, y);
        bn_act_ref(act, z, n, y);
        clg_tensor *tx = optest_tensor(dev, dt, ndim, shape, x, lay);
        optest_close(what, bn_op(act, tx, tz, trm, trv, tw, tb, true, r.momentum, r.eps), y, n, tol, 10 * tol);
    }
    optest_close("running_mean after 3 steps", trm, rm, C, tol, 10 * tol);
    optest_close("running_var after 3 steps", trv, rv, C, tol, 10 * tol);
    CHECK(!clg_tensor_requires_grad(trm) && !clg_tensor_has_history(trv));
    optest_fill(x, n, -3, 3, 200);
    bn_eval_ref(&r, x, rm, rv, y);
    bn_act_ref(act, z, n, y);
    clg_tensor *tx = optest_tensor(dev, dt, ndim, shape, x, lay);
    optest_close(act == BN_PLAIN ? "batch_norm eval" : "batch_norm_add_relu eval",
                 bn_op(act, tx, tz, trm, trv, tw, tb, false, r.momentum, r.eps), y, n, tol, 10 * tol);
    optest_close("running_mean unchanged by eval", trm, rm, C, tol, 10 * tol);
    clg_scope_end(dev);
    free(x), free(y), free(w), free(b), free(rm), free(rv), free(z);
}

static void batch_norm_forward(clg_device *dev)
{
    clg_dtype dts[2];
    for (int d = 0, n = optest_float_dtypes(dev, dts); d < n; d++) {
        clg_dtype dt = dts[d];
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++)
            for (int a = BN_PLAIN; a <= BN_ADD_RELU; a++) {
                bn_case(dev, dt, 2, (const int64_t[]){6, 3}, l != 1, (optest_layout)l, (bn_act)a);
                bn_case(dev, dt, 4, (const int64_t[]){4, 3, 5, 7}, l != 2, (optest_layout)l, (bn_act)a);
            }
        for (int a = BN_PLAIN; a <= BN_ADD_RELU; a++)   /* 1296 per channel */
            bn_case(dev, dt, 3, (const int64_t[]){16, 2, 81}, true, OPTEST_CONTIGUOUS, (bn_act)a);
        bn_case(dev, dt, 2, (const int64_t[]){2, 33}, false, OPTEST_PERMUTED, BN_PLAIN);
        bn_case(dev, dt, 2, (const int64_t[]){2, 33}, false, OPTEST_PERMUTED, BN_ADD_RELU);
    }
}

/* The running statistics of a batch norm in training are written even when x is on the
 * tape, and stay plain tensors. */
static void batch_norm_tape(clg_device *dev)
{
    double xv[8] = {1, 2, 3, 4, 5, 6, 7, 8}, rm[2] = {0.1 * 4, 0.1 * 5}, rv[2];
    /* channels {1,3,5,7} and {2,4,6,8}: mean 4 and 5, unbiased var 20/3 */
    rv[0] = rv[1] = 0.9 + 0.1 * 20.0 / 3.0;
    clg_dtype dt = optest_precise(dev);
    double tol = optest_tol(dt, 1e-12, 1e-6);
    clg_scope_begin(dev);
    clg_tensor *x = optest_tensor(dev, dt, SH(4, 2), xv, OPTEST_CONTIGUOUS);
    clg_tensor *m = clg_zeros(dev, dt, SH(2)), *v = clg_ones(dev, dt, SH(2));
    clg_tensor_set_requires_grad(x, true);
    clg_tensor *y = clg_batch_norm(x, m, v, NULL, NULL, true, 0.1, 1e-5);
    CHECK(y && clg_tensor_has_history(y));
    optest_close("running_mean with x on the tape", m, rm, 2, tol, tol);
    optest_close("running_var with x on the tape", v, rv, 2, tol, tol);
    CHECK(!clg_tensor_has_history(m) && !clg_tensor_requires_grad(v));
    clg_scope_end(dev);
}

/* ---- layer_norm ------------------------------------------------------------------------------ */

static void ln_ref(const double *x, int64_t rows, int64_t D, const double *w, const double *b, double eps, double *y)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * D;
        double mean = 0, var = 0;
        for (int64_t d = 0; d < D; d++) mean += xr[d];
        mean /= (double)D;
        for (int64_t d = 0; d < D; d++) var += (xr[d] - mean) * (xr[d] - mean);
        double invstd = 1 / sqrt(var / (double)D + eps);
        for (int64_t d = 0; d < D; d++) y[r * D + d] = (xr[d] - mean) * invstd * (w ? w[d] : 1) + (b ? b[d] : 0);
    }
}

/* dx of sum(y * g) for y = layer_norm(x): invstd (gw - mean(gw) - xhat mean(gw xhat)),
 * gw = g w, row by row. */
static void ln_ref_dx(const double *x, const double *g, int64_t rows, int64_t D, const double *w, double eps,
                      double *dx)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * D, *gr = g + r * D;
        double mean = 0, var = 0, a = 0, c = 0;
        for (int64_t d = 0; d < D; d++) mean += xr[d];
        mean /= (double)D;
        for (int64_t d = 0; d < D; d++) var += (xr[d] - mean) * (xr[d] - mean);
        double invstd = 1 / sqrt(var / (double)D + eps);
        for (int64_t d = 0; d < D; d++) {
            double gw = gr[d] * (w ? w[d] : 1);
            a += gw;
            c += gw * (xr[d] - mean) * invstd;
        }
        for (int64_t d = 0; d < D; d++) {
            double gw = gr[d] * (w ? w[d] : 1);
            dx[r * D + d] = invstd * (gw - a / (double)D - (xr[d] - mean) * invstd * c / (double)D);
        }
    }
}

static void ln_case(clg_device *dev, clg_dtype dt, int ndim, const int64_t *shape, int naxes, bool affine,
                    optest_layout lay)
{
    int64_t n = prod(ndim, shape), D = prod(naxes, shape + ndim - naxes), rows = n / D;
    double *x = dalloc(n), *y = dalloc(n), *w = dalloc(D), *b = dalloc(D);
    optest_fill(x, n, -2, 5, 21);
    optest_fill(w, D, 0.5, 1.5, 22);
    optest_fill(b, D, -1, 1, 23);
    ln_ref(x, rows, D, affine ? w : NULL, affine ? b : NULL, 1e-5, y);
    char what[160];
    snprintf(what, sizeof what, "layer_norm %s %dD over %d axes D=%lld %s%s", clg_dtype_name(dt), ndim, naxes,
             (long long)D, optest_layout_names[lay], affine ? " affine" : "");
    clg_scope_begin(dev);
    clg_tensor *tx = optest_tensor(dev, dt, ndim, shape, x, lay);
    clg_tensor *tw = affine ? optest_tensor(dev, dt, naxes, shape + ndim - naxes, w, lay) : NULL;
    clg_tensor *tb = affine ? optest_tensor(dev, dt, naxes, shape + ndim - naxes, b, OPTEST_CONTIGUOUS) : NULL;
    optest_close(what, clg_layer_norm(tx, naxes, tw, tb, 1e-5), y, n, tol_of(dt), 10 * tol_of(dt));
    /* the input's gradient under an incoming gradient g */
    double *g = dalloc(n), *dx = dalloc(n);
    optest_fill(g, n, -1, 1, 24);
    optest_round(dt, g, n);
    ln_ref_dx(x, g, rows, D, affine ? w : NULL, 1e-5, dx);
    clg_tensor_set_requires_grad(tx, true);
    if (affine) clg_tensor_set_requires_grad(tw, true), clg_tensor_set_requires_grad(tb, true);
    clg_tensor *ly = clg_layer_norm(tx, naxes, tw, tb, 1e-5), *tg = optest_tensor(dev, dt, ndim, shape, g, lay);
    CHECK_OK(dev, ly && tg ? clg_backward(ly, tg) : clg_device_last_status(dev));
    char gwhat[176];
    snprintf(gwhat, sizeof gwhat, "%s dx", what);
    optest_close(gwhat, clg_tensor_grad(tx), dx, n, 10 * tol_of(dt), 100 * tol_of(dt));
    if (affine) {   /* dw = sum over rows of g xhat, db = sum of g (ln_bwd_wb, ln_bwd_wb_vec) */
        double *dw = calloc((size_t)D, sizeof *dw), *db = calloc((size_t)D, sizeof *db);
        for (int64_t r = 0; r < rows; r++) {
            double mean = 0, var = 0;
            for (int64_t d = 0; d < D; d++) mean += x[r * D + d] / (double)D;
            for (int64_t d = 0; d < D; d++) var += (x[r * D + d] - mean) * (x[r * D + d] - mean) / (double)D;
            for (int64_t d = 0; d < D; d++) {
                dw[d] += g[r * D + d] * (x[r * D + d] - mean) / sqrt(var + 1e-5);
                db[d] += g[r * D + d];
            }
        }
        /* float32 sums of `rows` terms of magnitude 1 or less: 1e-6 each is ~10 ulps */
        double tol = 1e-6 * (double)rows;
        snprintf(gwhat, sizeof gwhat, "%s dw", what);
        optest_close(gwhat, clg_tensor_grad(tw), dw, D, tol, 1e-5);
        snprintf(gwhat, sizeof gwhat, "%s db", what);
        optest_close(gwhat, clg_tensor_grad(tb), db, D, tol, 1e-5);
        free(dw), free(db);
    }
    clg_scope_end(dev);
    free(x), free(y), free(w), free(b), free(g), free(dx);
}

static void layer_norm_forward(clg_device *dev)
{
    clg_dtype dts[2];
    for (int d = 0, n = optest_float_dtypes(dev, dts); d < n; d++) {
        clg_dtype dt = dts[d];
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            ln_case(dev, dt, 2, (const int64_t[]){5, 33}, 1, l != 1, (optest_layout)l);
            ln_case(dev, dt, 3, (const int64_t[]){3, 4, 7}, 2, l != 2, (optest_layout)l);
        }
        ln_case(dev, dt, 2, (const int64_t[]){3, optest_small() ? 300 : 1000}, 1, true, OPTEST_CONTIGUOUS);   /* D past a work-group */
        ln_case(dev, dt, 1, (const int64_t[]){7}, 1, true, OPTEST_SLICED);
        /* many rows: the weight gradients' rows in chunks (16 features an item in float32
         * where items are SIMD threads) */
        ln_case(dev, dt, 2, (const int64_t[]){optest_small() ? 300 : 2048, 32}, 1, true, OPTEST_CONTIGUOUS);
        ln_case(dev, dt, 2, (const int64_t[]){optest_small() ? 40 : 300, 48}, 1, true, OPTEST_CONTIGUOUS);
        ln_case(dev, dt, 3, (const int64_t[]){4, 10, 16}, 1, true, OPTEST_CONTIGUOUS);
        ln_case(dev, dt, 3, (const int64_t[]){2, 3, 5}, 3, false, OPTEST_PERMUTED);
    }
}

/* ---- dropout ----------------------------------------------------------------------------------- */

static float *read_f32(clg_tensor *t)
{
    int64_t n = clg_tensor_numel(t);
    float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!t || clg_tensor_to_host(t, v, (size_t)n * sizeof *v) != CLG_OK) {
        free(v);
        return NULL;
    }
    return v;
}

/* 100k ones (20k with CLG_TEST_SMALL): the dropped fraction is p within 5 standard
 * deviations, the rest 1/(1-p). */
static void dropout_statistics(clg_device *dev, double p)
{
    const int64_t n = optest_small() ? 20000 : 100000;
    clg_scope_begin(dev);
    clg_manual_seed(dev, 42);
    float *v = read_f32(clg_dropout(clg_ones(dev, CLG_F32, 1, &n), p, true));
    CHECK(v != NULL);
    int64_t zeros = 0, bad = 0;
    float scale = (float)(1.0 / (1.0 - p));
    for (int64_t i = 0; v && i < n; i++) {
        if (v[i] == 0) zeros++;
        else if (fabsf(v[i] - scale) > 1e-6f * scale) bad++;
    }
    double frac = (double)zeros / (double)n, sd = sqrt(p * (1 - p) / (double)n);
    CHECK_MSG(fabs(frac - p) <= 5 * sd, "dropout p=%g: %.5f dropped", p, frac);
    CHECK_MSG(bad == 0, "dropout p=%g: %lld kept values are not 1/(1-p) = %g", p, (long long)bad, scale);
    uint64_t seed, off;
    clg_rng_get_state(dev, &seed, &off);
    CHECK_MSG(seed == 42 && off == (uint64_t)(n + 3) / 4, "dropout advanced the generator to %llu",
              (unsigned long long)off);
    free(v);
    clg_scope_end(dev);
}

/* Equal float arrays (NaN equal to NaN). */
static bool same(const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (a[i] != b[i] && !(a[i] != a[i] && b[i] != b[i])) return false;
    return a && b;
}

static void dropout_generator(clg_device *dev)
{
    const int64_t n = 4099;
    double *x = dalloc(n);
    optest_fill(x, n, 0.5, 2, 9);
    clg_scope_begin(dev);
    clg_tensor *tx = optest_tensor(dev, CLG_F32, 1, &n, x, OPTEST_CONTIGUOUS);
    clg_rng_set_state(dev, 7, 1000);
    float *a = read_f32(clg_dropout(tx, 0.3, true));
    float *b = read_f32(clg_dropout(tx, 0.3, true));          /* the generator moved on */
    clg_rng_set_state(dev, 7, 1000);
    float *c = read_f32(clg_dropout(tx, 0.3, true));          /* back where a was drawn */
    clg_rng_set_state(dev, 7, 1000);
    float *u = read_f32(clg_rand(dev, CLG_F32, 1, &n, 0, 1)); /* the same bits as uniforms */
    CHECK_MSG(same(a, c, n), "dropout: the same generator state gave another mask");
    CHECK_MSG(!same(a, b, n), "dropout: two draws in a row gave the same mask");
    int64_t mismatch = 0;
    for (int64_t i = 0; a && u && i < n; i++)
        mismatch += (a[i] != 0) != ((double)u[i] >= 0.3);
    CHECK_MSG(a && u && mismatch == 0, "dropout: %lld elements disagree with clg_rand's draws", (long long)mismatch);
    /* float64 (where the device has it) draws the same mask */
    if (optest_fp64(dev)) {
        clg_rng_set_state(dev, 7, 1000);
        clg_tensor *d64 = clg_dropout(optest_tensor(dev, CLG_F64, 1, &n, x, OPTEST_CONTIGUOUS), 0.3, true);
        float *e = read_f32(clg_cast(d64, CLG_F32));
        int64_t diff = 0;
        for (int64_t i = 0; a && e && i < n; i++) diff += (a[i] == 0) != (e[i] == 0);
        CHECK_MSG(e && diff == 0, "dropout: float64 mask differs from float32 in %lld places", (long long)diff);
        free(e);
    }
    free(a), free(b), free(c), free(u);
    clg_scope_end(dev);
    free(x);
}

static void dropout_layouts_and_modes(clg_device *dev)
{
    double x[6 * 7];
    optest_fill(x, 42, -1, 1, 31);
    x[5] = NAN;
    clg_scope_begin(dev);
    clg_tensor *ref = NULL;
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
        clg_tensor *t = optest_tensor(dev, CLG_F32, SH(6, 7), x, (optest_layout)l);
        clg_rng_set_state(dev, 3, 0);
        clg_tensor *y = clg_dropout(t, 0.5, true);
        if (!ref) {
            ref = y;
            continue;
        }
        float *a = read_f32(ref), *b = read_f32(y);
        CHECK_MSG(same(a, b, 42), "dropout %s differs from contiguous", optest_layout_names[l]);
        free(a), free(b);
    }
    float *r = read_f32(ref);
    bool nan_ok = r && (r[5] == 0 || isnan(r[5]));   /* dropped or kept, never a number */
    CHECK_MSG(nan_ok, "dropout: NaN became %g", r ? r[5] : 0.0);
    free(r);
    /* the identity is exact in any dtype: x as float32 holds it */
    optest_round(CLG_F32, x, 42);
    clg_tensor *t = optest_tensor(dev, optest_precise(dev), SH(6, 7), x, OPTEST_PERMUTED);
    uint64_t s0, o0, s1, o1;
    clg_rng_get_state(dev, &s0, &o0);
    optest_close("dropout eval is the identity", clg_dropout(t, 0.5, false), x, 42, 0, 0);
    optest_close("dropout p=0 is the identity", clg_dropout(t, 0.0, true), x, 42, 0, 0);
    clg_rng_get_state(dev, &s1, &o1);
    CHECK_MSG(s0 == s1 && o0 == o1, "dropout's identity used the generator");
    double zeros[42] = {0};
    x[5] = 1;
    t = optest_tensor(dev, CLG_F32, SH(6, 7), x, OPTEST_SLICED);
    optest_close("dropout p=1 gives zeros", clg_dropout(t, 1.0, true), zeros, 42, 0, 0);
    clg_scope_end(dev);
}

/* ---- elementwise losses ---------------------------------------------------------------------- */

typedef double (*elem_ref)(double a, double b, double param);
static double r_l1(double a, double b, double p) { (void)p; return fabs(a - b); }
static double r_huber(double a, double b, double beta)
{
    double d = fabs(a - b);
    return d < beta ? 0.5 * d * d / beta : d - 0.5 * beta;
}
static double r_bce(double x, double t, double p) { (void)p; return fmax(x, 0) - x * t + log1p(exp(-fabs(x))); }

static clg_tensor *call_l1(clg_tensor *a, clg_tensor *b, clg_reduction r, double p)
{
    (void)p;
    return clg_l1_loss(a, b, r);
}
static clg_tensor *call_huber(clg_tensor *a, clg_tensor *b, clg_reduction r, double p)
{
    return clg_smooth_l1_loss(a, b, r, p);
}
static clg_tensor *call_bce(clg_tensor *a, clg_tensor *b, clg_reduction r, double p)
{
    (void)p;
    return clg_bce_with_logits(a, b, r);
}

static const struct {
    const char *name;
    clg_tensor *(*op)(clg_tensor *, clg_tensor *, clg_reduction, double);
    elem_ref ref;
    double param, alo, ahi, blo, bhi;
} elem_losses[] = {
    {"l1", call_l1, r_l1, 0, -2, 2, -2, 2},
    {"smooth_l1 beta=0.5", call_huber, r_huber, 0.5, -1, 1, -1, 1},
    {"smooth_l1 beta=0", call_huber, r_huber, 0, -1, 1, -1, 1},
    {"smooth_l1 beta=3", call_huber, r_huber, 3, -3, 3, -3, 3},
    {"bce_with_logits", call_bce, r_bce, 0, -30, 30, 0, 1},
};

/* want[0..n) for NONE, then the SUM and the MEAN */
static void elem_refs(int o, const double *a, const double *b, int64_t n, double *want)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += want[i] = elem_losses[o].ref(a[i], b[i], elem_losses[o].param);
    want[n] = s;
    want[n + 1] = s / (double)n;
}

static void elem_loss_case(clg_device *dev, int o, int64_t n, clg_dtype dt)
{
    int64_t rows = n > 33 ? 3 : 1, m = rows * n;
    double *a = dalloc(m), *b = dalloc(m), *want = dalloc(m + 2);
    optest_fill(a, m, elem_losses[o].alo, elem_losses[o].ahi, 41);
    optest_fill(b, m, elem_losses[o].blo, elem_losses[o].bhi, 42);
    elem_refs(o, a, b, m, want);
    double tol = tol_of(dt);
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
        clg_scope_begin(dev);
        clg_tensor *ta = optest_tensor(dev, dt, SH(rows, n), a, (optest_layout)l);
        clg_tensor *tb = optest_tensor(dev, dt, SH(rows, n), b, (optest_layout)(OPTEST_LAYOUT_COUNT - 1 - l));
        char what[160];
        snprintf(what, sizeof what, "%s %s n=%lld %s", elem_losses[o].name, clg_dtype_name(dt), (long long)n,
                 optest_layout_names[l]);
        double p = elem_losses[o].param;
        optest_close(what, elem_losses[o].op(ta, tb, CLG_REDUCE_NONE, p), want, m, tol, 10 * tol);
        optest_close(what, elem_losses[o].op(ta, tb, CLG_REDUCE_SUM, p), want + m, 1, tol, 10 * tol);
        optest_close(what, elem_losses[o].op(ta, tb, CLG_REDUCE_MEAN, p), want + m + 1, 1, tol, 10 * tol);
        clg_scope_end(dev);
    }
    free(a), free(b), free(want);
}

static void elementwise_losses(clg_device *dev)
{
    const int64_t sizes[] = {1, 7, 33, optest_small() ? 300 : 1000};
    for (int o = 0; o < (int)(sizeof elem_losses / sizeof *elem_losses); o++)
        for (int s = 0; s < 4; s++) elem_loss_case(dev, o, sizes[s], s % 2 ? optest_precise(dev) : CLG_F32);
    /* l1 with the target broadcast over rows, as torch.nn.functional.l1_loss */
    double a[6] = {1, -2, 3, 4, 5, -6}, b[3] = {0.5, 0.5, -1}, want = 0;
    for (int i = 0; i < 6; i++) want += fabs(a[i] - b[i % 3]);
    clg_scope_begin(dev);
    clg_tensor *ta = optest_tensor(dev, CLG_F32, SH(2, 3), a, OPTEST_CONTIGUOUS);
    optest_close("l1 broadcast", clg_l1_loss(ta, optest_tensor(dev, CLG_F32, SH(3), b, OPTEST_SLICED), CLG_REDUCE_SUM),
                 &want, 1, 1e-6, 1e-6);
    clg_scope_end(dev);
}

/* ---- nll and cross-entropy with label smoothing ------------------------------------------------ */

static void log_softmax_ref(const double *x, int64_t N, int64_t C, double *lp)
{
    for (int64_t i = 0; i < N; i++) {
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < C; c++) m = fmax(m, x[i * C + c]);
        for (int64_t c = 0; c < C; c++) s += exp(x[i * C + c] - m);
        for (int64_t c = 0; c < C; c++) lp[i * C + c] = x[i * C + c] - m - log(s);
    }
}

/* Per-row losses, then SUM and MEAN, as PyTorch: (1 - eps) nll + eps mean_c(-logp). */
static void smooth_ref(const double *lp, const double *lab, int64_t N, int64_t C, double eps, double *want)
{
    double s = 0;
    for (int64_t i = 0; i < N; i++) {
        double all = 0;
        for (int64_t c = 0; c < C; c++) all -= lp[i * C + c];
        s += want[i] = -(1 - eps) * lp[i * C + (int64_t)lab[i]] + eps * all / (double)C;
    }
    want[N] = s;
    want[N + 1] = s / (double)N;
}

static void class_loss_case(clg_device *dev, int64_t N, int64_t C, clg_dtype dt)
{
    double *x = dalloc(N * C), *lp = dalloc(N * C), *lab = dalloc(N), *want = dalloc(N + 2);
    optest_fill(x, N * C, -4, 4, 51);
    for (int64_t i = 0; i < N; i++) lab[i] = (double)((i * 7 + 3) % C);
    log_softmax_ref(x, N, C, lp);
    const double eps_list[3] = {0, 0.1, 1};
    double tol = tol_of(dt);
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
        clg_scope_begin(dev);
        clg_tensor *tx = optest_tensor(dev, dt, SH(N, C), x, (optest_layout)l);
        clg_tensor *tlp = optest_tensor(dev, dt, SH(N, C), lp, (optest_layout)(OPTEST_LAYOUT_COUNT - 1 - l));
        clg_tensor *tl = optest_tensor(dev, CLG_I32, SH(N), lab, (optest_layout)l);
        char what[160];
        smooth_ref(lp, lab, N, C, 0, want);
        snprintf(what, sizeof what, "nll %s N=%lld C=%lld %s", clg_dtype_name(dt), (long long)N, (long long)C,
                 optest_layout_names[l]);
        /* the sum and the mean reduce the same losses: under Oclgrind (CLG_TEST_SMALL) in
         * the contiguous layout only (each loss's log_softmax, simulated, was most of the test) */
        bool reduced = l == OPTEST_CONTIGUOUS || !optest_small();
        optest_close(what, clg_nll_loss(tlp, tl, CLG_REDUCE_NONE), want, N, tol, 10 * tol);
        if (reduced) {
            optest_close(what, clg_nll_loss(tlp, tl, CLG_REDUCE_SUM), want + N, 1, tol, 10 * tol);
            optest_close(what, clg_nll_loss(tlp, tl, CLG_REDUCE_MEAN), want + N + 1, 1, tol, 10 * tol);
        }
        for (int e = 0; e < 3; e++) {
            smooth_ref(lp, lab, N, C, eps_list[e], want);
            snprintf(what, sizeof what, "cross_entropy_smooth eps=%g %s N=%lld C=%lld %s", eps_list[e],
                     clg_dtype_name(dt), (long long)N, (long long)C, optest_layout_names[l]);
            optest_close(what, clg_cross_entropy_smooth(tx, tl, CLG_REDUCE_NONE, eps_list[e]), want, N, tol, 10 * tol);
            if (!reduced) continue;
            optest_close(what, clg_cross_entropy_smooth(tx, tl, CLG_REDUCE_SUM, eps_list[e]), want + N, 1, tol,
                         10 * tol);
            optest_close(what, clg_cross_entropy_smooth(tx, tl, CLG_REDUCE_MEAN, eps_list[e]), want + N + 1, 1, tol,
                         10 * tol);
        }
        clg_scope_end(dev);
    }
    free(x), free(lp), free(lab), free(want);
}

static void class_losses(clg_device *dev)
{
    const int64_t sizes[] = {1, 7, 33, optest_small() ? 300 : 1000};
    for (int s = 0; s < 4; s++) class_loss_case(dev, sizes[s], 5, s % 2 ? CLG_F32 : optest_precise(dev));
    class_loss_case(dev, 3, optest_small() ? 300 : 1000, CLG_F32);
}

/* ---- NaN ------------------------------------------------------------------------------------------ */

static void nan_propagation(clg_device *dev)
{
    clg_scope_begin(dev);
    clg_dtype dt = optest_precise(dev);
    double x[8] = {1, 2, NAN, 4, 5, 6, 7, 8}, w;
    clg_tensor *t = optest_tensor(dev, dt, SH(4, 2), x, OPTEST_CONTIGUOUS);
    /* batch_norm: channel 0 (1, NaN, 5, 7) is NaN throughout, channel 1 is not */
    clg_tensor *m = clg_zeros(dev, dt, SH(2)), *v = clg_ones(dev, dt, SH(2));
    double *bn = optest_read(clg_batch_norm(t, m, v, NULL, NULL, true, 0.1, 1e-5));
    CHECK(bn && isnan(bn[0]) && isnan(bn[4]) && !isnan(bn[1]) && !isnan(bn[7]));
    free(bn);
    double *rm = optest_read(m);
    CHECK(rm && isnan(rm[0]) && !isnan(rm[1]));
    free(rm);
    /* batch_norm_add_relu: NaN through the ReLU as clg_relu's, and from z */
    double zv[8] = {0, 0, 0, 0, 0, 0, 0, NAN};
    clg_tensor *tz = optest_tensor(dev, dt, SH(4, 2), zv, OPTEST_CONTIGUOUS);
    double *br = optest_read(clg_batch_norm_add_relu(t, tz, NULL, NULL, NULL, NULL, true, 0.1, 1e-5));
    CHECK(br && isnan(br[0]) && isnan(br[4]) && isnan(br[7]) && !isnan(br[1]) && !isnan(br[5]));
    free(br);
    /* layer_norm: row 1 (NaN, 4) is NaN, the others are not */
    double *ln = optest_read(clg_layer_norm(t, 1, NULL, NULL, 1e-5));
    CHECK(ln && isnan(ln[2]) && isnan(ln[3]) && !isnan(ln[0]) && !isnan(ln[7]));
    free(ln);
    /* elementwise losses: NaN where it is, and in MEAN */
    clg_tensor *z = clg_zeros(dev, dt, SH(4, 2));
    double *l1 = optest_read(clg_l1_loss(t, z, CLG_REDUCE_NONE));
    CHECK(l1 && isnan(l1[2]) && l1[3] == 4);
    free(l1);
    CHECK(clg_tensor_item(clg_smooth_l1_loss(t, z, CLG_REDUCE_MEAN, 1.0), &w) == CLG_OK && isnan(w));
    CHECK(clg_tensor_item(clg_bce_with_logits(t, z, CLG_REDUCE_SUM), &w) == CLG_OK && isnan(w));
    /* nll: NaN at the label counts; NaN elsewhere in the row does not (eps 0), but
     * does with smoothing; a label out of range gives NaN */
    clg_tensor *la = clg_tensor_from_host(dev, CLG_I32, SH(4), (int32_t[]){0, 0, 0, 1});
    clg_tensor *lb = clg_tensor_from_host(dev, CLG_I32, SH(4), (int32_t[]){1, 1, 1, 1});
    clg_tensor *lc = clg_tensor_from_host(dev, CLG_I32, SH(4), (int32_t[]){0, 2, 0, 0});
    double *nl = optest_read(clg_nll_loss(t, la, CLG_REDUCE_NONE));
    CHECK(nl && nl[0] == -1 && isnan(nl[1]) && nl[3] == -8);
    free(nl);
    CHECK(clg_tensor_item(clg_nll_loss(t, lb, CLG_REDUCE_SUM), &w) == CLG_OK && w == -(2 + 4 + 6 + 8));
    CHECK(clg_tensor_item(clg_cross_entropy_smooth(t, lb, CLG_REDUCE_SUM, 0.1), &w) == CLG_OK && isnan(w));
    /* a label out of range: refused at once when it came from the host; from the device
     * (a cast), its row is NaN and the first read fails, naming the op */
    CHECK_MSG(!clg_nll_loss(t, lc, CLG_REDUCE_NONE) && strstr(clg_device_error(dev), "clg_nll_loss: label 2") &&
                  strstr(clg_device_error(dev), "out of range [0, 2)"), "%s", clg_device_error(dev));
    clg_device_clear_error(dev);
    clg_tensor *ld = clg_cast(clg_tensor_from_host(dev, CLG_F32, SH(4), (float[]){0, 2, 0, 0}), CLG_I32);
    clg_tensor *nd = clg_nll_loss(t, ld, CLG_REDUCE_NONE);
    CHECK_MSG(!optest_read(nd) && strstr(clg_device_error(dev), "clg_nll_loss: label 2 out of range [0, 2) (found on the device"),
              "%s", clg_device_error(dev));
    clg_device_clear_error(dev);
    nl = optest_read(nd);
    CHECK(nl && isnan(nl[1]) && nl[0] == -1);
    free(nl);
    clg_scope_end(dev);
}

/* ---- errors ------------------------------------------------------------------------------------------ */

/* The op failed (NULL) and its message names it. */
static void expect_fail(clg_device *dev, const char *what, clg_tensor *t, const char *op)
{
    CHECK_MSG(t == NULL, "%s: succeeded", what);
    CHECK_MSG(strstr(clg_device_error(dev), op) != NULL, "%s: error \"%s\" does not name %s", what,
              clg_device_error(dev), op);
}

static void errors(clg_device *dev)
{
    clg_scope_begin(dev);
    /* a dtype other than x's float32: float64 where the device has it, else int32 */
    clg_dtype other = optest_fp64(dev) ? CLG_F64 : CLG_I32;
    clg_tensor *x = clg_zeros(dev, CLG_F32, SH(4, 3)), *x64 = clg_zeros(dev, other, SH(4, 3));
    clg_tensor *c3 = clg_ones(dev, CLG_F32, SH(3)), *c4 = clg_ones(dev, CLG_F32, SH(4));
    clg_tensor *c3d = clg_ones(dev, other, SH(3)), *xi = clg_zeros(dev, CLG_I32, SH(4, 3));
    CHECK_MSG(x64 && c3d, "%s", clg_device_error(dev));
    clg_tensor *l4 = clg_zeros(dev, CLG_I32, SH(4)), *l3 = clg_zeros(dev, CLG_I32, SH(3));
    clg_tensor *lf = clg_zeros(dev, CLG_F32, SH(4)), *one = clg_zeros(dev, CLG_F32, SH(1, 3, 1));
    const char *bn = "clg_batch_norm";
    expect_fail(dev, "bn weight [4] for C=3", clg_batch_norm(x, NULL, NULL, c4, NULL, true, 0.1, 1e-5), bn);
    expect_fail(dev, "bn bias of another dtype", clg_batch_norm(x, NULL, NULL, NULL, c3d, true, 0.1, 1e-5), bn);
    expect_fail(dev, "bn 1-D x", clg_batch_norm(c3, NULL, NULL, NULL, NULL, true, 0.1, 1e-5), bn);
    expect_fail(dev, "bn int x", clg_batch_norm(xi, NULL, NULL, NULL, NULL, true, 0.1, 1e-5), bn);
    expect_fail(dev, "bn eval without stats", clg_batch_norm(x, NULL, NULL, NULL, NULL, false, 0.1, 1e-5), bn);
    expect_fail(dev, "bn running_mean alone", clg_batch_norm(x, c3, NULL, NULL, NULL, true, 0.1, 1e-5), bn);
    expect_fail(dev, "bn one value per channel", clg_batch_norm(one, NULL, NULL, NULL, NULL, true, 0.1, 1e-5), bn);
    expect_fail(dev, "bn running_var [4]", clg_batch_norm(x, c3, c4, NULL, NULL, true, 0.1, 1e-5), bn);
    const char *bnr = "clg_batch_norm_add_relu";
    expect_fail(dev, "bn_add_relu z [3]", clg_batch_norm_add_relu(x, c3, NULL, NULL, NULL, NULL, true, 0.1, 1e-5), bnr);
    expect_fail(dev, "bn_add_relu z of another dtype",
                clg_batch_norm_add_relu(x, x64, NULL, NULL, NULL, NULL, true, 0.1, 1e-5), bnr);
    expect_fail(dev, "bn_add_relu weight [4]", clg_batch_norm_add_relu(x, x, NULL, NULL, c4, NULL, true, 0.1, 1e-5), bnr);
    expect_fail(dev, "bn_add_relu eval without stats",
                clg_batch_norm_add_relu(x, NULL, NULL, NULL, NULL, NULL, false, 0.1, 1e-5), bnr);
    const char *ln = "clg_layer_norm";
    expect_fail(dev, "ln 0 axes", clg_layer_norm(x, 0, NULL, NULL, 1e-5), ln);
    expect_fail(dev, "ln 3 axes of 2-D", clg_layer_norm(x, 3, NULL, NULL, 1e-5), ln);
    expect_fail(dev, "ln weight [4]", clg_layer_norm(x, 1, c4, NULL, 1e-5), ln);
    expect_fail(dev, "ln bias of another dtype", clg_layer_norm(x, 1, NULL, c3d, 1e-5), ln);
    expect_fail(dev, "ln int x", clg_layer_norm(xi, 1, NULL, NULL, 1e-5), ln);
    expect_fail(dev, "dropout p < 0", clg_dropout(x, -0.1, true), "clg_dropout");
    expect_fail(dev, "dropout p > 1", clg_dropout(x, 1.5, true), "clg_dropout");
    expect_fail(dev, "dropout p NaN", clg_dropout(x, NAN, false), "clg_dropout");
    expect_fail(dev, "dropout int", clg_dropout(xi, 0.5, true), "clg_dropout");
    expect_fail(dev, "l1 shapes", clg_l1_loss(x, c4, CLG_REDUCE_MEAN), "clg_l1_loss");
    expect_fail(dev, "l1 dtypes", clg_l1_loss(x, x64, CLG_REDUCE_MEAN), "clg_l1_loss");
    expect_fail(dev, "l1 reduction", clg_l1_loss(x, x, (clg_reduction)7), "clg_l1_loss");
    expect_fail(dev, "smooth_l1 beta < 0", clg_smooth_l1_loss(x, x, CLG_REDUCE_MEAN, -1), "clg_smooth_l1_loss");
    expect_fail(dev, "smooth_l1 int", clg_smooth_l1_loss(xi, xi, CLG_REDUCE_MEAN, 1), "clg_smooth_l1_loss");
    expect_fail(dev, "bce broadcast target", clg_bce_with_logits(x, c3, CLG_REDUCE_MEAN), "clg_bce_with_logits");
    expect_fail(dev, "bce dtypes", clg_bce_with_logits(x, x64, CLG_REDUCE_MEAN), "clg_bce_with_logits");
    expect_fail(dev, "nll float labels", clg_nll_loss(x, lf, CLG_REDUCE_MEAN), "clg_nll_loss");
    expect_fail(dev, "nll labels [3] for N=4", clg_nll_loss(x, l3, CLG_REDUCE_MEAN), "clg_nll_loss");
    expect_fail(dev, "nll 1-D input", clg_nll_loss(c4, l4, CLG_REDUCE_MEAN), "clg_nll_loss");
    expect_fail(dev, "nll reduction", clg_nll_loss(x, l4, (clg_reduction)-1), "clg_nll_loss");
    const char *ce = "clg_cross_entropy_smooth";
    expect_fail(dev, "ce smoothing 1.5", clg_cross_entropy_smooth(x, l4, CLG_REDUCE_MEAN, 1.5), ce);
    expect_fail(dev, "ce smoothing < 0", clg_cross_entropy_smooth(x, l4, CLG_REDUCE_MEAN, -0.1), ce);
    expect_fail(dev, "ce labels [3]", clg_cross_entropy_smooth(x, l3, CLG_REDUCE_MEAN, 0.1), ce);
    expect_fail(dev, "ce float labels", clg_cross_entropy_smooth(x, lf, CLG_REDUCE_MEAN, 0.1), ce);
    /* running statistics that require a gradient cannot be written in place */
    clg_tensor *rg = clg_zeros(dev, CLG_F32, SH(3));
    clg_tensor_set_requires_grad(rg, true);
    expect_fail(dev, "bn running_mean requires grad", clg_batch_norm(x, rg, c3, NULL, NULL, true, 0.1, 1e-5), bn);
    /* NULL in, NULL out */
    CHECK(!clg_batch_norm(NULL, NULL, NULL, NULL, NULL, true, 0.1, 1e-5) && !clg_layer_norm(NULL, 1, NULL, NULL, 0));
    CHECK(!clg_dropout(NULL, 0.5, true) && !clg_l1_loss(x, NULL, CLG_REDUCE_SUM) && !clg_l1_loss(NULL, x, 0));
    CHECK(!clg_smooth_l1_loss(NULL, x, CLG_REDUCE_SUM, 1) && !clg_bce_with_logits(x, NULL, CLG_REDUCE_SUM));
    CHECK(!clg_nll_loss(x, NULL, CLG_REDUCE_SUM) && !clg_nll_loss(NULL, l4, CLG_REDUCE_SUM));
    CHECK(!clg_cross_entropy_smooth(NULL, l4, CLG_REDUCE_SUM, 0) && !clg_cross_entropy_smooth(x, NULL, 0, 0));
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    int64_t live = clg_tensor_live_count(dev);
    /* per-row partial statistics (row_reduce = items) and per-chunk groups, whatever
     * the device's default */
    bool items = clg__device_params(dev)->row_items;
    CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", "items"));
    batch_norm_forward(dev);
    CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", "groups"));
    batch_norm_forward(dev);
    CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", items ? "items" : "groups"));
    batch_norm_tape(dev);
    layer_norm_forward(dev);
    dropout_statistics(dev, 0.3);
    dropout_statistics(dev, 0.9);
    dropout_generator(dev);
    dropout_layouts_and_modes(dev);
    elementwise_losses(dev);
    class_losses(dev);
    nan_propagation(dev);
    errors(dev);
    CHECK_MSG(clg_tensor_live_count(dev) == live, "%lld tensors leaked",
              (long long)(clg_tensor_live_count(dev) - live));
    clg_device_close(dev);
    return check_report("test_ops_norm");
}
