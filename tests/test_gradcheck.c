/* The gradient checker itself (tests/helpers/optest.c), in float32: the mode of every
 * gradient check on a device without float64, so it must still catch a wrong backward.
 * Run on any device (float32 exists everywhere): a correct op passes, and backward
 * passes that are wrong by a scale of 5%, by a sign, by a forgotten chain-rule factor
 * or by a missing term fail. float64 too where the device has it. Not a test_grad_*
 * file: the ops here must not count as covered for grad_coverage. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "optest.h"
#include "tensor_impl.h"

#define IN(...) ((optest_input[]){__VA_ARGS__})
#define SH(...) CLG_SHAPE(__VA_ARGS__)

/* ---- a custom op: sigmoid with a backward chosen by the test ------------------------------------ */

typedef enum bw_kind { BW_RIGHT, BW_SIGN, BW_NO_CHAIN, BW_NO_TERM } bw_kind;
static bw_kind bw_mode;

/* d sigmoid = y (1 - y) times the incoming gradient g; the wrong variants: its negative,
 * without g (the chain rule forgotten), and y alone (the - y^2 term dropped). Runs in
 * the engine's no-grad scope, as every backward. */
static clg_status sigmoid_custom_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *y = n->out, *d = clg_mul(y, clg_rsub_scalar(1.0, y));
    switch (bw_mode) {
    case BW_RIGHT: gin[0] = clg_mul(g, d); break;
    case BW_SIGN: gin[0] = clg_neg(clg_mul(g, d)); break;
    case BW_NO_CHAIN: gin[0] = clg_contiguous(d); break;
    case BW_NO_TERM: gin[0] = clg_mul(g, y); break;
    }
    return gin[0] ? CLG_OK : g->dev->status;
}

static clg_tensor *f_custom(clg_tensor **x, void *c)
{
    (void)c;
    clg_device *dev = clg_tensor_device(x[0]);
    clg_no_grad_begin(dev);
    clg_tensor *y = clg_sigmoid(x[0]);   /* the value, off the tape */
    clg_no_grad_end(dev);
    return clg__taped(y, CLG_OP_sigmoid, sigmoid_custom_bw, 1, x, NULL);
}

/* ---- public ops with a gradient scaled by (1 + s): value f, gradient (1 + s) f' -------------------- */

/* f + s (f - detach(f)): the same value (f - f is exactly 0), the gradient scaled. */
static clg_tensor *scaled(clg_tensor *f, double s) { return clg_add(f, clg_mul_scalar(clg_sub(f, clg_detach(f)), s)); }

typedef struct scale_ctx { double s; } scale_ctx;
static clg_tensor *f_tanh_scaled(clg_tensor **x, void *c) { return scaled(clg_tanh(x[0]), ((scale_ctx *)c)->s); }
static clg_tensor *f_mm_scaled(clg_tensor **x, void *c) { return scaled(clg_matmul(x[0], x[1]), ((scale_ctx *)c)->s); }
/* The scale on one input only: x[1]'s gradient right, x[0]'s wrong. */
static clg_tensor *f_mul_one_scaled(clg_tensor **x, void *c)
{
    return clg_mul(scaled(clg_mul_scalar(x[0], 1.0), ((scale_ctx *)c)->s), x[1]);
}

/* ---- running the checker where it must fail ------------------------------------------------------ */

/* The check must fail in every layout; the failures it records are the expected
 * outcome, not the test's, and its report (kept off stderr, so that a passing run shows
 * no "CHECK failed") is summed up in one line. */
static void expect_caught(clg_device *dev, clg_dtype dt, const char *what, optest_fn f, void *ctx, int n,
                          const optest_input *in)
{
    int failures = check_failures;
    FILE *log = tmpfile();
    int saved = dup(2);
    fflush(stderr);
    if (log && saved >= 0) dup2(fileno(log), 2);
    bool ok = optest_gradcheck_as(dev, dt, what, f, ctx, n, in);
    fflush(stderr);
    if (log && saved >= 0) dup2(saved, 2);
    if (saved >= 0) close(saved);
    int caught = check_failures - failures;
    check_failures = failures;
    char first[256] = "";
    if (log) {
        rewind(log);
        if (!fgets(first, sizeof first, log)) first[0] = 0;
        fclose(log);
    }
    CHECK_MSG(!ok && caught == OPTEST_LAYOUT_COUNT, "%s %s: the wrong gradient was caught in %d of %d layouts", what,
              clg_dtype_name(dt), caught, OPTEST_LAYOUT_COUNT);
    printf("%s checker caught it, as it must: %s", clg_dtype_name(dt), first[0] ? first : "(no report)\n");
}

static void checker(clg_device *dev, clg_dtype dt)
{
    char what[96];
    /* the right gradients pass: a failure below is the wrong gradient's, not noise */
    bw_mode = BW_RIGHT;
    snprintf(what, sizeof what, "custom sigmoid, right backward %s", clg_dtype_name(dt));
    CHECK_MSG(optest_gradcheck_as(dev, dt, what, f_custom, NULL, 1, IN({SH(2, 3), -3, 3})), "%s", what);
    scale_ctx none = {0}, five = {0.05}, minus3 = {-0.03};
    snprintf(what, sizeof what, "tanh, unscaled %s", clg_dtype_name(dt));
    CHECK_MSG(optest_gradcheck_as(dev, dt, what, f_tanh_scaled, &none, 1, IN({SH(3, 4), -2, 2})), "%s", what);
    snprintf(what, sizeof what, "matmul, unscaled %s", clg_dtype_name(dt));
    CHECK_MSG(optest_gradcheck_as(dev, dt, what, f_mm_scaled, &none, 2, IN({SH(3, 4)}, {SH(4, 5)})), "%s", what);

    /* the wrong ones fail */
    const bw_kind wrong[] = {BW_SIGN, BW_NO_CHAIN, BW_NO_TERM};
    const char *names[] = {"custom sigmoid, backward of the wrong sign", "custom sigmoid, chain rule forgotten",
                           "custom sigmoid, - y^2 term dropped"};
    for (int i = 0; i < 3; i++) {
        bw_mode = wrong[i];
        expect_caught(dev, dt, names[i], f_custom, NULL, 1, IN({SH(2, 3), -3, 3}));
    }
    expect_caught(dev, dt, "tanh, gradient 5% too large", f_tanh_scaled, &five, 1, IN({SH(3, 4), -2, 2}));
    expect_caught(dev, dt, "matmul, gradient 3% too small", f_mm_scaled, &minus3, 2, IN({SH(3, 4)}, {SH(4, 5)}));
    expect_caught(dev, dt, "mul, one input's gradient 5% too large", f_mul_one_scaled, &five, 2,
                  IN({SH(2, 3)}, {SH(2, 3), 0.5, 2}));
}

/* Kept numeric derivatives (optest_gradcheck_keep: the same check again under other
 * kernels) and the simulators' sampled ones (CLG_TEST_SMALL: 8 of the 15 elements) still
 * catch a wrong backward. */
static void kept_and_sampled(clg_device *dev, clg_dtype dt)
{
    const char *what = "custom sigmoid, kept derivatives", *small = getenv("CLG_TEST_SMALL");
    char was[16];
    snprintf(was, sizeof was, "%s", small ? small : "");
    optest_gradcheck_keep(true);
    bw_mode = BW_RIGHT;
    CHECK_MSG(optest_gradcheck_as(dev, dt, what, f_custom, NULL, 1, IN({SH(3, 5), -3, 3})), "%s", what);
    bw_mode = BW_NO_TERM;   /* the same name, function and inputs: the kept derivatives */
    expect_caught(dev, dt, what, f_custom, NULL, 1, IN({SH(3, 5), -3, 3}));
    optest_gradcheck_keep(false);
    setenv("CLG_TEST_SMALL", "1", 1);
    bw_mode = BW_RIGHT;
    CHECK_MSG(optest_gradcheck_as(dev, dt, "custom sigmoid, sampled", f_custom, NULL, 1, IN({SH(3, 5), -3, 3})),
              "sampled");
    bw_mode = BW_NO_TERM;
    expect_caught(dev, dt, "custom sigmoid, sampled", f_custom, NULL, 1, IN({SH(3, 5), -3, 3}));
    if (small) setenv("CLG_TEST_SMALL", was, 1);
    else unsetenv("CLG_TEST_SMALL");
}

int main(void)
{
    clg_device *dev = check_open_device();
    kept_and_sampled(dev, CLG_F32);
    checker(dev, CLG_F32);
    if (optest_fp64(dev)) checker(dev, CLG_F64);
    clg_device_close(dev);
    return check_report("test_gradcheck");
}
