/* nll_loss_ex (and through it cross_entropy_ex's last step) against a plain-C reference
 * written from PyTorch's definition: class weights, rows labelled ignore_index skipped,
 * label smoothing, each reduction, forward and gradient, in float32, by each of the
 * kernels' ways: one work-item or one work-group for a few rows (nll_sum), a work-item
 * per row and one group's sum (nll_rows, nll_total), and the device reductions where item_loops is
 * lowered below the rows one group would walk (groups made small, so that these ways
 * come at sizes Oclgrind runs quickly). Also nll_loss and the out-of-range label. */
#include <math.h>
#include <string.h>

#include "optest.h"

enum { IGNORE = -100, C_MAX = 32 };
/* classes: 5, or 32 (the float32 gradient's 16-class vectors, nll_bwd_vec) */
static int C = 5;
static double W[C_MAX];

/* Log-probabilities-like values (any reals do), labels in [0, C) with every 7th skipped. */
static double lp_at(int64_t i, int c) { return -0.1 - (double)((i * 7 + c * 3) % 11) / 4.0; }
static bool SKIP = true;   /* false: labels all in range, known so on the host (nll_rows_known) */
static int label_at(int64_t i) { return SKIP && i % 7 == 3 ? IGNORE : (int)((i * 3) % C); }

/* rows[i], the kept rows' weight sum, and the gradient of the reduced loss (of sum(rows)
 * for NONE) d[i * C + c]. */
static void nll_ref(int64_t N, const double *w, double eps, clg_reduction r, double *rows, double *red, double *d)
{
    double W_sum = 0, sum = 0;
    for (int64_t i = 0; i < N; i++) {
        int y = label_at(i);
        rows[i] = 0;
        if (y == IGNORE) continue;
        double wy = w ? w[y] : 1, smooth = 0;
        for (int c = 0; c < C; c++) smooth += (w ? w[c] : 1) * lp_at(i, c);
        rows[i] = -(1 - eps) * wy * lp_at(i, y) - eps / C * smooth;
        W_sum += wy, sum += rows[i];
    }
    *red = r == CLG_REDUCE_MEAN ? sum / W_sum : sum;
    double scale = r == CLG_REDUCE_MEAN ? 1 / W_sum : 1;
    for (int64_t i = 0; i < N; i++)
        for (int c = 0; c < C; c++) {
            int y = label_at(i);
            double t = y == IGNORE ? 0 : (c == y ? (1 - eps) * (w ? w[y] : 1) : 0) + eps / C * (w ? w[c] : 1);
            d[i * C + c] = -scale * t;
        }
}

static void check_case(clg_device *dev, int64_t N, bool weighted, double eps, clg_reduction r, const char *way)
{
    double *lp = malloc((size_t)(N * C) * sizeof *lp), *lab = malloc((size_t)N * sizeof *lab);
    double *rows = malloc((size_t)N * sizeof *rows), *d = malloc((size_t)(N * C) * sizeof *d), red;
    for (int64_t i = 0; i < N; i++) {
        lab[i] = label_at(i);
        for (int c = 0; c < C; c++) lp[i * C + c] = lp_at(i, c);
    }
    nll_ref(N, weighted ? W : NULL, eps, r, rows, &red, d);
    char what[160];
    snprintf(what, sizeof what, "nll_loss_ex [%lld, %d]%s%s, reduction %d (%s)", (long long)N, C,
             weighted ? " weighted" : "", eps ? " smoothing 0.1" : "", (int)r, way);
    clg_scope_begin(dev);
    /* permuted log-probabilities: the kernels read them where they lie */
    clg_tensor *x = optest_tensor(dev, CLG_F32, 2, (int64_t[]){N, C}, lp, N < 64 ? OPTEST_PERMUTED : OPTEST_CONTIGUOUS);
    CHECK_OK(dev, clg_tensor_set_requires_grad(x, true));
    clg_ce_options o = clg_ce_defaults();
    o.reduction = r, o.label_smoothing = eps;
    if (weighted) o.weight = optest_tensor(dev, CLG_F32, 1, (int64_t[]){C}, W, OPTEST_CONTIGUOUS);
    clg_tensor *y = clg_nll_loss_ex(x, optest_tensor(dev, CLG_I32, 1, (int64_t[]){N}, lab, OPTEST_CONTIGUOUS), &o);
    CHECK_MSG(y != NULL, "%s: %s", what, clg_device_error(dev));
    if (y) {
        optest_close(what, y, r == CLG_REDUCE_NONE ? rows : &red, r == CLG_REDUCE_NONE ? N : 1, 1e-5, 1e-4);
        CHECK_OK(dev, clg_backward(r == CLG_REDUCE_NONE ? clg_sum(y, 0, NULL, false) : y, NULL));
        snprintf(what + strlen(what), sizeof what - strlen(what), ": gradient");
        optest_close(what, clg_tensor_grad(x), d, N * C, 1e-6, 1e-4);
    }
    clg_scope_end(dev);
    free(lp), free(lab), free(rows), free(d);
}

static void check_all(clg_device *dev, int64_t N, const char *way)
{
    for (int nc = 0; nc < 2; nc++) {
        C = nc ? C_MAX : 5;
        for (int k = 0; k < 4; k++)
            /* the simulator (CLG_TEST_SMALL): past one group, weights and smoothing both
             * off or both on (what they change is per row; 12 of its 28 s) */
            for (int r = 0; r < 3 && (N <= 100 || !optest_small() || k == 0 || k == 3); r++)
                check_case(dev, N, k & 1, k & 2 ? 0.1 : 0, (clg_reduction)r, way);
    }
}

/* Every row skipped: the mean is NaN (0 / 0) and the gradient 0, as PyTorch's; the sum 0.
 * A label out of range fails the readout, naming the op. */
static void check_edges(clg_device *dev)
{
    clg_scope_begin(dev);
    const double x[6] = {-1, -2, -3, -4, -5, -6}, all[2] = {IGNORE, IGNORE}, bad[2] = {1, 3};
    clg_tensor *t = optest_tensor(dev, CLG_F32, 2, (int64_t[]){2, 3}, x, OPTEST_CONTIGUOUS);
    CHECK_OK(dev, clg_tensor_set_requires_grad(t, true));
    clg_tensor *skip = optest_tensor(dev, CLG_I32, 1, (int64_t[]){2}, all, OPTEST_CONTIGUOUS);
    clg_tensor *m = clg_nll_loss_ex(t, skip, NULL);
    optest_close("nll_loss_ex: every row skipped, mean", m, (const double[]){NAN}, 1, 0, 0);
    CHECK_OK(dev, clg_backward(m, NULL));
    optest_close("nll_loss_ex: every row skipped, gradient", clg_tensor_grad(t), (const double[]){0, 0, 0, 0, 0, 0}, 6,
                 0, 0);
    clg_ce_options o = clg_ce_defaults();
    o.reduction = CLG_REDUCE_SUM;
    optest_close("nll_loss_ex: every row skipped, sum", clg_nll_loss_ex(t, skip, &o), (const double[]){0}, 1, 0, 0);
    optest_close("nll_loss", clg_nll_loss(t, optest_tensor(dev, CLG_I32, 1, (int64_t[]){2}, (const double[]){2, 0},
                                                          OPTEST_CONTIGUOUS), CLG_REDUCE_MEAN),
                 (const double[]){(3 + 4) / 2.0}, 1, 0, 1e-6);
    /* no rows: the mean NaN, the sum 0, as PyTorch's; its gradient of no elements */
    clg_tensor *none = optest_tensor(dev, CLG_F32, 2, (int64_t[]){0, 3}, x, OPTEST_CONTIGUOUS);
    CHECK_OK(dev, clg_tensor_set_requires_grad(none, true));
    clg_tensor *nolab = optest_tensor(dev, CLG_I32, 1, (int64_t[]){0}, all, OPTEST_CONTIGUOUS);
    clg_tensor *m0 = clg_nll_loss_ex(none, nolab, NULL);
    optest_close("nll_loss_ex: no rows, mean", m0, (const double[]){NAN}, 1, 0, 0);
    CHECK_OK(dev, clg_backward(m0, NULL));
    optest_close("nll_loss_ex: no rows, sum", clg_nll_loss_ex(none, nolab, &o), (const double[]){0}, 1, 0, 0);
    /* a device-made label (not known on the host) out of range: the kernel reports it */
    clg_tensor *lab = clg_cast(optest_tensor(dev, CLG_F32, 1, (int64_t[]){2}, bad, OPTEST_CONTIGUOUS), CLG_I32);
    double v = 0;
    clg_status st = clg_tensor_item(clg_nll_loss_ex(t, lab, NULL), &v);
    CHECK_MSG(st != CLG_OK && strstr(clg_device_error(dev), "nll_loss_ex"), "label 3 of 3 classes: %s",
              clg_device_error(dev));
    clg_device_clear_error(dev);
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    for (int c = 0; c < C_MAX; c++) W[c] = 0.25 + (c * 7 % 9) / 4.0;
    check_edges(dev);
    check_all(dev, 9, "one group");
    /* groups of at most 32: more rows than one group sums (16 a work-item) ... */
    CHECK_OK(dev, clg_device_set_param(dev, "max_group", "32"));
    check_all(dev, 1100, "rows and one group's sum");
    SKIP = false;
    for (int r = 0; r < 3; r++) check_case(dev, 1100, r == 1, r ? 0.1 : 0, (clg_reduction)r, "labels known in range");
    SKIP = true;
    /* ... and past item_loops (32 a work-item): the rows, then the device reductions */
    CHECK_OK(dev, clg_device_set_param(dev, "item_loops", "64"));
    check_all(dev, 1100, "rows and reductions");
    check_all(dev, 100, "one group of several work-items");
    CHECK_MSG(clg_tensor_live_count(dev) == 0, "%lld tensors leaked", (long long)clg_tensor_live_count(dev));
    clg_device_close(dev);
    return check_report("test_ops_nll");
}
