/* Gradient checks for batch_norm (training and evaluation) and batch_norm_add_relu
 * (against the three ops too), layer_norm, dropout and the
 * losses l1, smooth_l1, nll, cross_entropy_smooth and bce_with_logits; and for
 * dist_all_reduce and synchronised batch norm in a group of one process (their
 * 2-rank runs: tests/mpi/dist_sync.c). */
#include <math.h>
#include <stdlib.h>

#include "clgrad/dist.h"
#include "nn_impl.h"
#include "device_impl.h"
#include "optest.h"

#define IN(...) ((optest_input[]){__VA_ARGS__})
#define SH(...) CLG_SHAPE(__VA_ARGS__)

/* What a function under test varies: reduction, a parameter (beta, smoothing, p). */
typedef struct gctx { clg_reduction red; double param; } gctx;
static const gctx MEAN = {CLG_REDUCE_MEAN, 0}, SUM = {CLG_REDUCE_SUM, 0}, NONE = {CLG_REDUCE_NONE, 0};

/* inputs: x, weight, bias, running_mean, running_var (the last four may be absent) */
static clg_tensor *f_bn_train(clg_tensor **x, void *c)
{
    (void)c;
    return clg_batch_norm(x[0], x[3], x[4], x[1], x[2], true, 0.1, 1e-5);
}
static clg_tensor *f_bn_train_plain(clg_tensor **x, void *c)
{
    (void)c;
    return clg_batch_norm(x[0], NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
}
static clg_tensor *f_bn_eval(clg_tensor **x, void *c)
{
    (void)c;
    return clg_batch_norm(x[0], x[3], x[4], x[1], x[2], false, 0.1, 1e-5);
}
/* A sum downstream sends batch_norm a broadcast (stride 0) gradient. */
static clg_tensor *f_bn_sum(clg_tensor **x, void *c)
{
    (void)c;
    return clg_sum(clg_mul(clg_batch_norm(x[0], NULL, NULL, x[1], NULL, true, 0.1, 1e-5), x[0]), CLG_AXES(0), false);
}
/* inputs: x, weight, bias, z, running_mean, running_var; c: whether training, or NULL
 * for the plain op (x alone, no z) */
static clg_tensor *f_bnr(clg_tensor **x, void *c)
{
    if (!c) return clg_batch_norm_add_relu(x[0], NULL, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
    return clg_batch_norm_add_relu(x[0], x[3], x[4], x[5], x[1], x[2], *(const bool *)c, 0.1, 1e-5);
}
static clg_tensor *f_ln1(clg_tensor **x, void *c) { (void)c; return clg_layer_norm(x[0], 1, x[1], x[2], 1e-5); }
static clg_tensor *f_ln2(clg_tensor **x, void *c) { (void)c; return clg_layer_norm(x[0], 2, x[1], x[2], 1e-5); }
static clg_tensor *f_ln_plain(clg_tensor **x, void *c) { (void)c; return clg_layer_norm(x[0], 1, NULL, NULL, 1e-5); }
static clg_tensor *f_ln_bias(clg_tensor **x, void *c) { (void)c; return clg_layer_norm(x[0], 1, NULL, x[1], 1e-5); }
/* The same mask at every evaluation: the generator is put back where it was first. */
static clg_tensor *f_dropout(clg_tensor **x, void *c)
{
    clg_rng_set_state(clg_tensor_device(x[0]), 1234, 77);
    return clg_dropout(x[0], ((const gctx *)c)->param, true);
}
static clg_tensor *f_dropout_eval(clg_tensor **x, void *c)
{
    (void)c;
    return clg_mul(clg_dropout(x[0], 0.5, false), x[0]);
}
static clg_tensor *f_l1(clg_tensor **x, void *c) { return clg_l1_loss(x[0], x[1], ((const gctx *)c)->red); }
static clg_tensor *f_smooth_l1(clg_tensor **x, void *c)
{
    const gctx *g = c;
    return clg_smooth_l1_loss(x[0], x[1], g->red, g->param);
}
static clg_tensor *f_nll(clg_tensor **x, void *c) { return clg_nll_loss(x[0], x[1], ((const gctx *)c)->red); }
static clg_tensor *f_ce_smooth(clg_tensor **x, void *c)
{
    const gctx *g = c;
    return clg_cross_entropy_smooth(x[0], x[1], g->red, g->param);
}
static clg_tensor *f_bce(clg_tensor **x, void *c) { return clg_bce_with_logits(x[0], x[1], ((const gctx *)c)->red); }

/* The float32 backward by row kernels (row_reduce = items) and by chunk groups, which
 * the float64 gradient checks above verify: dx, dw and db within float32 rounding, over
 * rows of 35 (two vectors of 16 and a tail of 3). */
static void bn_rows_agree(clg_device *dev)
{
    enum { N = 4 * 3 * 5 * 7, L = N + 6 };
    float got[2][L];
    bool items = clg__device_params(dev)->row_items;
    for (int v = 0; v < 2; v++) {
        CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", v ? "groups" : "items"));
        clg_scope_begin(dev);
        clg_manual_seed(dev, 11);
        clg_tensor *x = clg_rand(dev, CLG_F32, SH(4, 3, 5, 7), -2, 3), *w = clg_rand(dev, CLG_F32, SH(3), 0.5, 2);
        clg_tensor *b = clg_rand(dev, CLG_F32, SH(3), -1, 1), *gy = clg_rand(dev, CLG_F32, SH(4, 3, 5, 7), -1, 1);
        CHECK_OK(dev, clg_tensor_set_requires_grad(x, true) || clg_tensor_set_requires_grad(w, true) ||
                          clg_tensor_set_requires_grad(b, true));
        CHECK_OK(dev, clg_backward(clg_batch_norm(x, NULL, NULL, w, b, true, 0.1, 1e-5), gy));
        CHECK_OK(dev, clg_tensor_to_host(clg_tensor_grad(x), got[v], N * sizeof(float)) ||
                          clg_tensor_to_host(clg_tensor_grad(w), got[v] + N, 3 * sizeof(float)) ||
                          clg_tensor_to_host(clg_tensor_grad(b), got[v] + N + 3, 3 * sizeof(float)));
        clg_scope_end(dev);
    }
    double worst = 0, big = 0;
    for (int i = 0; i < L; i++) {
        worst = fmax(worst, fabs((double)got[0][i] - got[1][i]));
        big = fmax(big, fabs((double)got[1][i]));
    }
    CHECK_MSG(big > 0 && worst <= 2e-5 * big, "batch_norm backward: row kernels and groups differ by %g of %g", worst,
              big);
    CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", items ? "items" : "groups"));
}

/* batch_norm_add_relu's gradient check needs every pre-activation value away from
 * ReLU's kink (a central difference across it is no derivative): fixed x [2, 3, 2, 2],
 * weight and bias, and z moved off any value whose relu input comes within 0.3 of 0,
 * with x's normalisation computed here as the op does. Evaluation normalises with
 * running statistics (0, 1): x itself. */
typedef struct bnr_values { double x[24], w[3], b[3], z[24]; } bnr_values;

static void bnr_values_for(bnr_values *v, bool training)
{
    static const double ramp[8] = {-1.5, -1, -0.5, -0.2, 0.2, 0.5, 1, 1.5};
    for (int c = 0; c < 3; c++) {
        v->w[c] = 1 + 0.4 * c;
        v->b[c] = 0.1 - 0.15 * c;
        double mean = 0, var = 0;
        for (int m = 0; m < 8; m++) v->x[(m / 4 * 3 + c) * 4 + m % 4] = ramp[(m * 3 + c) % 8] + 0.3 * c;
        for (int m = 0; m < 8; m++) mean += v->x[(m / 4 * 3 + c) * 4 + m % 4] / 8;
        for (int m = 0; m < 8; m++) var += pow(v->x[(m / 4 * 3 + c) * 4 + m % 4] - mean, 2) / 8;
        if (!training) mean = 0, var = 1;
        for (int m = 0; m < 8; m++) {
            int i = (m / 4 * 3 + c) * 4 + m % 4;
            double pre = (v->x[i] - mean) / sqrt(var + 1e-5) * v->w[c] + v->b[c];
            v->z[i] = (m % 3 - 1) * 0.45;
            if (fabs(pre + v->z[i]) < 0.3) v->z[i] += pre + v->z[i] < 0 ? -0.6 : 0.6;
        }
    }
}

/* relu(batch_norm + z) composed of the three ops, which their own checks verify, against
 * batch_norm_add_relu: y, the running averages and every gradient within the type's
 * rounding (the composed path rounds 16-bit values twice more), by row kernels and by
 * chunk groups, training and evaluation, with and without z. */
static void bnr_agrees(clg_device *dev, clg_dtype dt, int ndim, const int64_t *shape, bool training, bool with_z)
{
    int64_t n = 1, C = shape[1];
    for (int k = 0; k < ndim; k++) n *= shape[k];
    double *hx = malloc((size_t)n * sizeof *hx), *hz = malloc((size_t)n * sizeof *hz),
           *hg = malloc((size_t)n * sizeof *hg), hw[64], hb[64], hv[64];
    optest_fill(hx, n, -2, 3, 31);
    optest_fill(hz, n, -1, 1, 32);
    optest_fill(hg, n, -1, 1, 33);
    optest_fill(hw, C, 0.5, 2, 34);
    optest_fill(hb, C, -0.5, 0.5, 35);
    optest_fill(hv, C, 0.5, 2, 36);
    optest_round(dt, hx, n);
    /* z off the kink: a sum within a 16-bit rounding of 0 has its sign from the rounding
     * (the composed ops round batch_norm's output first, the fused op does not) */
    int64_t S = n / (shape[0] * C);
    for (int64_t c = 0; c < C; c++) {
        double mean = 0, var = 0, M = (double)(shape[0] * S);
        for (int64_t i = c * S; i < n; i += (C - 1) * S)
            for (int64_t e = 0; e < S; e++, i++) mean += hx[i] / M;
        for (int64_t i = c * S; i < n; i += (C - 1) * S)
            for (int64_t e = 0; e < S; e++, i++) var += (hx[i] - mean) * (hx[i] - mean) / M;
        if (!training) mean = hb[c], var = hv[c];
        for (int64_t i = c * S; i < n; i += (C - 1) * S)
            for (int64_t e = 0; e < S; e++, i++) {
                double pre = (hx[i] - mean) / sqrt(var + 1e-5) * hw[c] + hb[c] + hz[i];
                if (fabs(pre) < 0.1) hz[i] += pre < 0 ? -0.25 : 0.25;
            }
    }
    optest_round(dt, hz, n);
    double *got[2][6] = {{0}};
    for (int path = 0; path < 2; path++) {
        clg_scope_begin(dev);
        clg_dtype st = clg__is_half(dt) ? CLG_F32 : dt;   /* the statistics' and parameters' type */
        clg_tensor *t[4] = {optest_tensor(dev, dt, ndim, shape, hx, OPTEST_CONTIGUOUS),
                            optest_tensor(dev, st, 1, &C, hw, OPTEST_CONTIGUOUS),
                            optest_tensor(dev, st, 1, &C, hb, OPTEST_CONTIGUOUS),
                            with_z ? optest_tensor(dev, dt, ndim, shape, hz, OPTEST_PERMUTED) : NULL};
        clg_tensor *rm = optest_tensor(dev, st, 1, &C, hb, OPTEST_CONTIGUOUS);
        clg_tensor *rv = optest_tensor(dev, st, 1, &C, hv, OPTEST_CONTIGUOUS);
        for (int k = 0; k < 4; k++)
            if (t[k]) CHECK_OK(dev, clg_tensor_set_requires_grad(t[k], true));
        clg_tensor *y = path ? clg_batch_norm_add_relu(t[0], t[3], rm, rv, t[1], t[2], training, 0.1, 1e-5)
                             : clg_relu(with_z ? clg_add(clg_batch_norm(t[0], rm, rv, t[1], t[2], training, 0.1, 1e-5),
                                                         t[3])
                                               : clg_batch_norm(t[0], rm, rv, t[1], t[2], training, 0.1, 1e-5));
        CHECK_OK(dev, clg_backward(y, optest_tensor(dev, dt, ndim, shape, hg, OPTEST_CONTIGUOUS)));
        got[path][0] = optest_read(y);
        for (int k = 0; k < 4; k++) got[path][1 + k] = t[k] ? optest_read(clg_tensor_grad(t[k])) : NULL;
        got[path][5] = optest_read(rv);
        clg_scope_end(dev);
    }
    static const char *names[6] = {"y", "dx", "dweight", "dbias", "dz", "running_var"};
    double rel = dt == CLG_BF16 ? 6e-2 : dt == CLG_F16 ? 8e-3 : dt == CLG_F32 ? 2e-5 : 1e-10;
    for (int k = 0; k < 6; k++) {
        int64_t len = k == 2 || k == 3 || k == 5 ? C : n;
        if (!got[0][k] || !got[1][k]) {
            CHECK_MSG(k == 4 && !with_z && !got[1][k], "batch_norm_add_relu: %s missing", names[k]);
            continue;
        }
        double worst = 0, big = 0;
        for (int64_t i = 0; i < len; i++) {
            worst = fmax(worst, fabs(got[0][k][i] - got[1][k][i]));
            big = fmax(big, fabs(got[0][k][i]));
        }
        CHECK_MSG(worst <= rel * fmax(big, 1e-3), "batch_norm_add_relu %s %s %s%s: %s differs from the composed "
                  "ops' by %g of %g", clg_dtype_name(dt), training ? "training" : "eval", with_z ? "with z" : "no z",
                  clg__device_params(dev)->row_items ? " (items)" : " (groups)", names[k], worst, big);
    }
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < 6; k++) free(got[p][k]);
    free(hx), free(hz), free(hg);
}

static void batch_norm_add_relu_checks(clg_device *dev)
{
    static const bool train = true, eval = false;
    bnr_values v;
    bnr_values_for(&v, true);
    optest_gradcheck(dev, "batch_norm_add_relu train with z", f_bnr, (void *)&train, 6,
                     IN({SH(2, 3, 2, 2), .values = v.x}, {SH(3), .values = v.w}, {SH(3), .values = v.b},
                        {SH(2, 3, 2, 2), .values = v.z}, {SH(3), .constant = true}, {SH(3), 0.5, 2, true}));
    optest_gradcheck(dev, "batch_norm_add_relu train plain", f_bnr, NULL, 1,
                     IN({SH(2, 3, 2, 2), .values = v.x}));
    bnr_values_for(&v, false);
    optest_gradcheck(dev, "batch_norm_add_relu eval with z", f_bnr, (void *)&eval, 6,
                     IN({SH(2, 3, 2, 2), .values = v.x}, {SH(3), .values = v.w}, {SH(3), .values = v.b},
                        {SH(2, 3, 2, 2), .values = v.z}, {SH(3), .values = (const double[]){0, 0, 0}, .constant = true},
                        {SH(3), .values = (const double[]){1, 1, 1}, .constant = true}));
    bool items = clg__device_params(dev)->row_items;
    clg_dtype dts[4] = {CLG_F32, CLG_F16, CLG_BF16, CLG_F64};
    for (int r = 0; r < 2; r++) {
        CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", r ? "groups" : "items"));
        for (int d = 0; d < 4; d++) {
            if (dts[d] == CLG_F64 && !optest_fp64(dev)) continue;
            /* rows of 35 (two vectors and a tail), and [N, C] (rows of 1: groups) */
            bnr_agrees(dev, dts[d], SH(4, 3, 5, 7), true, true);
            bnr_agrees(dev, dts[d], SH(4, 3, 5, 7), false, true);
            bnr_agrees(dev, dts[d], SH(9, 5), true, false);
        }
    }
    CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", items ? "items" : "groups"));
}

static void batch_norm_checks(clg_device *dev)
{
    /* running statistics as constants: updated in place by each evaluation, which
     * rebuilds them, and they do not enter the training output */
    optest_gradcheck(dev, "batch_norm train 2-D affine", f_bn_train, NULL, 5,
                     IN({SH(4, 3)}, {SH(3)}, {SH(3)}, {SH(3), .constant = true}, {SH(3), 0.5, 2, true}));
    optest_gradcheck(dev, "batch_norm train 4-D affine", f_bn_train, NULL, 5,
                     IN({SH(2, 3, 2, 2)}, {SH(3)}, {SH(3)}, {SH(3), .constant = true}, {SH(3), 0.5, 2, true}));
    optest_gradcheck(dev, "batch_norm train 3-D plain", f_bn_train_plain, NULL, 1, IN({SH(3, 2, 3)}));
    optest_gradcheck(dev, "batch_norm train broadcast gradient", f_bn_sum, NULL, 2, IN({SH(5, 2)}, {SH(2)}));
    optest_gradcheck(dev, "batch_norm eval 4-D affine", f_bn_eval, NULL, 5,
                     IN({SH(2, 3, 2, 1)}, {SH(3)}, {SH(3)}, {SH(3), .constant = true}, {SH(3), 0.5, 2, true}));
    /* rows of 20 (a vector of 16 and a tail), by row kernels and by chunk groups */
    bool items = clg__device_params(dev)->row_items;
    for (int v = 0; v < 2; v++) {
        CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", v ? "groups" : "items"));
        optest_gradcheck(dev, v ? "batch_norm train rows of 20 (groups)" : "batch_norm train rows of 20 (items)",
                         f_bn_train, NULL, 5,
                         IN({SH(2, 3, 4, 5)}, {SH(3)}, {SH(3)}, {SH(3), .constant = true}, {SH(3), 0.5, 2, true}));
    }
    CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", items ? "items" : "groups"));
    bn_rows_agree(dev);
}

static void layer_norm_checks(clg_device *dev)
{
    optest_gradcheck(dev, "layer_norm 1 axis affine", f_ln1, NULL, 3, IN({SH(3, 5)}, {SH(5)}, {SH(5)}));
    optest_gradcheck(dev, "layer_norm 2 axes affine", f_ln2, NULL, 3, IN({SH(2, 3, 4)}, {SH(3, 4)}, {SH(3, 4)}));
    optest_gradcheck(dev, "layer_norm plain", f_ln_plain, NULL, 1, IN({SH(4, 6)}));
    optest_gradcheck(dev, "layer_norm bias only", f_ln_bias, NULL, 2, IN({SH(2, 3)}, {SH(3)}));
}

static void dropout_checks(clg_device *dev)
{
    gctx p3 = {CLG_REDUCE_NONE, 0.3}, p1 = {CLG_REDUCE_NONE, 1.0};
    optest_gradcheck(dev, "dropout p=0.3", f_dropout, &p3, 1, IN({SH(4, 9)}));
    optest_gradcheck(dev, "dropout p=1", f_dropout, &p1, 1, IN({SH(2, 3)}));
    optest_gradcheck(dev, "dropout eval", f_dropout_eval, NULL, 1, IN({SH(2, 3)}));
}

/* a - b = +-(0.3 .. 1.2): away from l1's kink at 0 and smooth_l1's at +-beta = 0.5. */
static void diff_pairs(double *a, double *b, int n)
{
    optest_fill(a, n, -1, 1, 5);
    static const double d[] = {0.3, -0.2, 1.2, -0.8, 0.1, -1.1, 0.7, -0.4};
    for (int i = 0; i < n; i++) b[i] = a[i] - d[i % 8];
}

static void elementwise_loss_checks(clg_device *dev)
{
    double a[12], b[12];
    diff_pairs(a, b, 12);
    const gctx *reds[3] = {&MEAN, &SUM, &NONE};
    for (int r = 0; r < 3; r++) {
        optest_gradcheck(dev, "l1_loss", f_l1, (void *)reds[r], 2, IN({SH(3, 4), .values = a}, {SH(3, 4), .values = b}));
        gctx s = {reds[r]->red, 0.5};
        optest_gradcheck(dev, "smooth_l1_loss beta 0.5", f_smooth_l1, &s, 2,
                         IN({SH(3, 4), .values = a}, {SH(3, 4), .values = b}));
        optest_gradcheck(dev, "bce_with_logits", f_bce, (void *)reds[r], 2,
                         IN({SH(3, 4), -3, 3}, {SH(3, 4), 0, 1}));
    }
    /* broadcast target; beta 0 is l1 */
    double bb[4] = {-2, 2, -2, 2};
    optest_gradcheck(dev, "l1_loss broadcast", f_l1, (void *)&MEAN, 2, IN({SH(3, 4)}, {SH(4), .values = bb}));
    gctx s0 = {CLG_REDUCE_SUM, 0};
    optest_gradcheck(dev, "smooth_l1_loss beta 0", f_smooth_l1, &s0, 2,
                     IN({SH(3, 4), .values = a}, {SH(3, 4), .values = b}));
}

static void class_loss_checks(clg_device *dev)
{
    const double labels[5] = {2, 0, 3, 3, 1};
    const gctx *reds[3] = {&MEAN, &SUM, &NONE};
    for (int r = 0; r < 3; r++) {
        optest_gradcheck(dev, "nll_loss", f_nll, (void *)reds[r], 2,
                         IN({SH(5, 4), -3, 0}, {SH(5), .constant = true, .values = labels, .dtype = CLG_I32}));
        gctx s = {reds[r]->red, 0.1};
        optest_gradcheck(dev, "cross_entropy_smooth 0.1", f_ce_smooth, &s, 2,
                         IN({SH(5, 4), -2, 2}, {SH(5), .constant = true, .values = labels, .dtype = CLG_I32}));
    }
    gctx s1 = {CLG_REDUCE_MEAN, 1.0};
    optest_gradcheck(dev, "cross_entropy_smooth 1", f_ce_smooth, &s1, 2,
                     IN({SH(5, 4), -2, 2}, {SH(5), .constant = true, .values = labels, .dtype = CLG_I32}));
}

/* ---- data-parallel ops in a group of one process (clgrad/dist.h) ---------------------------- */

static clg_dist *group1;   /* clg_dist_new without a transport: a group of one */

static clg_tensor *f_all_reduce(clg_tensor **x, void *c)
{
    return clg_mul(clg_dist_all_reduce(group1, x[0], ((const gctx *)c)->param), x[1]);
}

/* Synchronised batch norm's group: the dist's all-reduce, and counts summed over one. */
static clg_tensor *g_sum(void *ctx, clg_tensor *t, double share) { return clg_dist_all_reduce(ctx, t, share); }
static clg_status g_count(void *ctx, double *v, int n, char *err, size_t errlen)
{
    (void)ctx, (void)v, (void)n, (void)err, (void)errlen;
    return CLG_OK;
}

/* A BatchNorm module (1d for 2 or 3 axes, else 2d) of C channels with weight and bias
 * from values, synchronised or not. */
static clg_module *bn_module(clg_device *dev, int ndim, int64_t c, bool sync, const double *wb)
{
    clg_module *m = ndim == 4 ? clg_nn_batch_norm2d(dev, c, 1e-5, 0.1) : clg_nn_batch_norm1d(dev, c, 1e-5, 0.1);
    if (!m) return NULL;
    float w[8], b[8];
    for (int i = 0; i < c; i++) w[i] = (float)wb[i], b[i] = (float)wb[8 + i];
    clg_no_grad_begin(dev);
    CHECK_OK(dev, clg_copy_(clg_module_param(m, "weight"), clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(c), w)));
    CHECK_OK(dev, clg_copy_(clg_module_param(m, "bias"), clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(c), b)));
    clg_no_grad_end(dev);
    const clg__nn_group g = {g_sum, g_count, group1};
    CHECK(!sync || clg__nn_batch_norm_sync(m, &g));
    clg_module_train(m, true);
    return m;
}

static clg_tensor *f_sync_bn(clg_tensor **x, void *c) { return clg_module_forward(c, x[0]); }

/* The synchronised layer's composite forward against the batch_norm kernel's, both
 * ways, and its gradient against central differences (x; weight and bias go the way
 * of x's gradient through the same ops, and match the kernel's). */
static void sync_bn_case(clg_device *dev, int ndim, const int64_t *shape)
{
    double wb[16];
    optest_fill(wb, 16, 0.5, 1.5, 7);
    clg_module *m[2] = {bn_module(dev, ndim, shape[1], false, wb), bn_module(dev, ndim, shape[1], true, wb)};
    int64_t n = 1;
    for (int a = 0; a < ndim; a++) n *= shape[a];
    double *xv = malloc((size_t)n * sizeof *xv), *gv = malloc((size_t)n * sizeof *gv);
    optest_fill(xv, n, -2, 3, 11);
    optest_fill(gv, n, -1, 1, 12);
    double *got[2][6] = {{NULL}};
    for (int k = 0; k < 2 && m[k] && xv && gv; k++) {
        clg_scope_begin(dev);
        clg_tensor *x = optest_tensor(dev, CLG_F32, ndim, shape, xv, OPTEST_PERMUTED);
        clg_tensor_set_requires_grad(x, true);
        clg_tensor *y = clg_module_forward(m[k], x);
        CHECK_OK(dev, clg_backward(clg_sum(clg_mul(y, optest_tensor(dev, CLG_F32, ndim, shape, gv, 0)), 0, NULL,
                                           false), NULL));
        clg_tensor *t[6] = {y, clg_tensor_grad(x), clg_tensor_grad(clg_module_param(m[k], "weight")),
                            clg_tensor_grad(clg_module_param(m[k], "bias")), clg_module_buffer(m[k], "running_mean"),
                            clg_module_buffer(m[k], "running_var")};
        for (int i = 0; i < 6; i++) got[k][i] = t[i] ? optest_read(t[i]) : NULL;
        clg_scope_end(dev);
    }
    static const char *what[6] = {"y", "x's gradient", "weight's gradient", "bias's gradient", "running_mean",
                                  "running_var"};
    int64_t len[6] = {n, n, shape[1], shape[1], shape[1], shape[1]};
    for (int i = 0; i < 6; i++) {
        CHECK_MSG(got[0][i] && got[1][i], "synchronised batch norm %d-D: no %s", ndim, what[i]);
        for (int64_t j = 0; got[0][i] && got[1][i] && j < len[i]; j++)
            CHECK_MSG(fabs(got[0][i][j] - got[1][i][j]) <= 2e-5 + 2e-4 * fabs(got[0][i][j]),
                      "synchronised batch norm %d-D: %s[%lld] %g, the kernel's %g", ndim, what[i], (long long)j,
                      got[1][i][j], got[0][i][j]);
        free(got[0][i]);
        free(got[1][i]);
    }
    optest_gradcheck(dev, "synchronised batch norm", f_sync_bn, m[1], 1, (optest_input[]){{ndim, shape}});
    free(xv);
    free(gv);
    clg_module_free(m[0]);
    clg_module_free(m[1]);
}

static void dist_checks(clg_device *dev)
{
    char err[256];
    CHECK_MSG(clg_dist_new(NULL, NULL, &group1, err, sizeof err) == CLG_OK, "clg_dist_new: %s", err);
    if (!group1) return;
    gctx one = {CLG_REDUCE_NONE, 1}, part = {CLG_REDUCE_NONE, 0.25};
    optest_gradcheck(dev, "dist_all_reduce share 1", f_all_reduce, &one, 2, IN({SH(3, 4)}, {SH(3, 4)}));
    optest_gradcheck(dev, "dist_all_reduce share 0.25", f_all_reduce, &part, 2, IN({SH(5)}, {SH(5)}));
    sync_bn_case(dev, SH(6, 3));
    sync_bn_case(dev, SH(3, 2, 4));
    sync_bn_case(dev, SH(2, 3, 3, 2));
    /* refused: 16-bit x, no dist, a share outside [0, 1] */
    clg_tensor *h = clg_zeros(dev, CLG_F16, SH(2));
    CHECK(clg_dist_all_reduce(group1, h, 1) == NULL);
    CHECK(clg_dist_all_reduce(NULL, clg_zeros(dev, CLG_F32, SH(2)), 1) == NULL);
    CHECK(clg_dist_all_reduce(group1, clg_zeros(dev, CLG_F32, SH(2)), 1.5) == NULL);
    clg_dist_free(group1);
}

int main(void)
{
    clg_device *dev = check_open_device();
    dist_checks(dev);
    batch_norm_checks(dev);
    batch_norm_add_relu_checks(dev);
    layer_norm_checks(dev);
    dropout_checks(dev);
    elementwise_loss_checks(dev);
    class_loss_checks(dev);
    clg_device_close(dev);
    return check_report("test_grad_norm");
}
