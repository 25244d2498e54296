/* Gradient checks for batch_norm (training and evaluation), layer_norm, dropout and the
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
    layer_norm_checks(dev);
    dropout_checks(dev);
    elementwise_loss_checks(dev);
    class_loss_checks(dev);
    clg_device_close(dev);
    return check_report("test_grad_norm");
}
