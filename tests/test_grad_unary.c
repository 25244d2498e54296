/* Gradient checks for the ops of one operand, the activations and where
 * (src/tensor/unary.c), and the gradients at kinks and saturation, where finite
 * differences cannot look. */
#include <math.h>

#include "optest.h"

#define IN(...) ((optest_input[]){__VA_ARGS__})
#define SH(...) CLG_SHAPE(__VA_ARGS__)

static clg_tensor *f_clamp(clg_tensor **x, void *c) { (void)c; return clg_clamp(x[0], -0.5, 0.7); }
static clg_tensor *f_leaky(clg_tensor **x, void *c) { (void)c; return clg_leaky_relu(x[0], 0.1); }
static clg_tensor *f_softplus(clg_tensor **x, void *c) { (void)c; return clg_softplus(x[0], 1.0, 20.0); }
static clg_tensor *f_softplus_b(clg_tensor **x, void *c) { (void)c; return clg_softplus(x[0], 2.0, 3.0); }
static clg_tensor *f_elu(clg_tensor **x, void *c) { (void)c; return clg_elu(x[0], 0.7); }
/* The rows of src/tensor/unary_ops.def: op(x), or for a flat op x * op(x), so that the
 * check sees its zero gradient next to a nonzero one: d/dx (x * floor(x)) = floor(x)
 * away from the integers. */
#define CHECKED_FROM_INPUT(name, x) clg_##name(x)
#define CHECKED_FROM_OUTPUT(name, x) clg_##name(x)
#define CHECKED_SELF(name, x) clg_##name(x)
#define CHECKED_FLAT(name, x) clg_mul(x, clg_##name(x))
#define CLG_UNARY(name, grad, lo, hi, glo, ghi, gsign, ...) \
    static clg_tensor *f_##name(clg_tensor **x, void *c) { (void)c; return CHECKED_##grad(name, x[0]); }
#include "unary_ops.def"
#undef CLG_UNARY

typedef struct row_check {
    const char *name;
    optest_fn f;
    double lo, hi;
    int sign;   /* 1: magnitudes in [lo, hi], of either sign */
} row_check;
static const row_check rows[] = {
#define CLG_UNARY(name, grad, lo, hi, glo, ghi, gsign, ...) {#name, f_##name, glo, ghi, gsign},
#include "unary_ops.def"
#undef CLG_UNARY
};

/* One gradient check per row, over [2, 3] inputs in its range; with sign, six
 * magnitudes spread over the range with alternating signs. */
static void check_rows(clg_device *dev)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const row_check *r = &rows[i];
        double v[6];
        for (int k = 0; k < 6; k++) v[k] = (k % 2 ? 1 : -1) * (r->lo + (r->hi - r->lo) * k / 5);
        if (r->sign) optest_gradcheck(dev, r->name, r->f, NULL, 1, IN({SH(2, 3), .values = v}));
        else optest_gradcheck(dev, r->name, r->f, NULL, 1, IN({SH(2, 3), r->lo, r->hi}));
    }
}
static clg_tensor *f_where(clg_tensor **x, void *c) { (void)c; return clg_where(x[0], x[1], x[2]); }
/* The same input through where twice: both sides' gradients add up in one leaf. */
static clg_tensor *f_where_same(clg_tensor **x, void *c)
{
    (void)c;
    return clg_where(x[0], clg_exp(x[1]), clg_mul_scalar(x[1], 3.0));
}
/* A small network's worth of activations in a chain. */
static clg_tensor *f_chain(clg_tensor **x, void *c)
{
    (void)c;
    return clg_gelu(clg_tanh(clg_sigmoid(clg_softplus(clg_neg(x[0]), 1.0, 20.0))));
}

/* The gradient of sum(op(x)) at given points, compared with exact values. */
typedef clg_tensor *(*op1)(clg_tensor *);
static clg_tensor *op_relu(clg_tensor *a) { return clg_relu(a); }
static clg_tensor *op_abs(clg_tensor *a) { return clg_abs(a); }
static clg_tensor *op_leaky(clg_tensor *a) { return clg_leaky_relu(a, 0.1); }
static clg_tensor *op_clamp(clg_tensor *a) { return clg_clamp(a, -0.5, 0.7); }
static clg_tensor *op_sigmoid(clg_tensor *a) { return clg_sigmoid(a); }
static clg_tensor *op_tanh(clg_tensor *a) { return clg_tanh(a); }
static clg_tensor *op_softplus(clg_tensor *a) { return clg_softplus(a, 1.0, 20.0); }
static clg_tensor *op_sqrt(clg_tensor *a) { return clg_sqrt(a); }
static clg_tensor *op_gelu(clg_tensor *a) { return clg_gelu(a); }

static void grad_at(clg_device *dev, clg_dtype dt, const char *what, op1 op, const double *x, const double *want, int n)
{
    clg_scope_begin(dev);
    clg_tensor *t = optest_tensor(dev, dt, 1, (const int64_t[]){n}, x, OPTEST_CONTIGUOUS);
    clg_tensor_set_requires_grad(t, true);
    clg_tensor *y = clg_sum(op(t), 0, NULL, false);
    CHECK_OK(dev, y ? clg_backward(y, NULL) : clg_device_last_status(dev));
    char name[128];
    snprintf(name, sizeof name, "%s %s", what, clg_dtype_name(dt));
    optest_close(name, clg_tensor_grad(t), want, n, 1e-6, 1e-5);
    clg_scope_end(dev);
}

static void test_kinks(clg_device *dev, clg_dtype dt)
{
    grad_at(dev, dt, "relu at -1, 0, 1", op_relu, (double[]){-1, 0, 1}, (double[]){0, 0, 1}, 3);
    grad_at(dev, dt, "abs at -1, 0, 1", op_abs, (double[]){-1, 0, 1}, (double[]){-1, 0, 1}, 3);
    grad_at(dev, dt, "leaky_relu at -1, 0, 1", op_leaky, (double[]){-1, 0, 1}, (double[]){0.1, 0.1, 1}, 3);
    /* the bounds themselves pass the gradient, as PyTorch */
    grad_at(dev, dt, "clamp at its bounds", op_clamp, (double[]){-0.5, 0.7, -0.6, 0.8, 0},
            (double[]){1, 1, 0, 0, 1}, 5);
    grad_at(dev, dt, "sigmoid saturated", op_sigmoid, (double[]){1e4, -1e4, 0}, (double[]){0, 0, 0.25}, 3);
    grad_at(dev, dt, "tanh saturated", op_tanh, (double[]){1e4, -1e4, 0}, (double[]){0, 0, 1}, 3);
    grad_at(dev, dt, "softplus far out", op_softplus, (double[]){1e4, 30, -1e4, 0}, (double[]){1, 1, 0, 0.5}, 4);
    grad_at(dev, dt, "gelu far out", op_gelu, (double[]){1e4, -1e4, 0}, (double[]){1, 0, 0.5}, 3);
    grad_at(dev, dt, "sqrt at 0", op_sqrt, (double[]){0, 4}, (double[]){INFINITY, 0.25}, 2);
}

int main(void)
{
    clg_device *dev = check_open_device();
    /* inputs kept off kinks: both signs, but never within 0.1 of 0 or a clamp bound */
    const double signs[6] = {-1.3, 0.4, -0.2, 0.9, 1.7, -0.6};
    const double around_bounds[6] = {-1.2, -0.3, 0.2, 0.9, 1.5, 0.55};
    check_rows(dev);
    optest_gradcheck(dev, "clamp", f_clamp, NULL, 1, IN({SH(2, 3), .values = around_bounds}));
    optest_gradcheck(dev, "leaky_relu", f_leaky, NULL, 1, IN({SH(2, 3), .values = signs}));
    optest_gradcheck(dev, "softplus", f_softplus, NULL, 1, IN({SH(2, 3), -5, 5}));
    /* beta 2, threshold 3: both sides of the threshold (beta x = 3 at x = 1.5) */
    const double across[6] = {-2, -0.4, 0.5, 1.2, 1.8, 2.5};
    optest_gradcheck(dev, "softplus beta threshold", f_softplus_b, NULL, 1, IN({SH(2, 3), .values = across}));
    optest_gradcheck(dev, "elu", f_elu, NULL, 1, IN({SH(2, 3), .values = signs}));
    /* where: the mask constant, int32 and float, broadcast three ways */
    const double mask8[8] = {1, 0, 3, 0, 0, 1, -2, 0};
    optest_gradcheck(dev, "where int32 mask", f_where, NULL, 3,
                     IN({SH(2, 3), .constant = true, .values = mask8, .dtype = CLG_I32}, {SH(2, 3)}, {SH(2, 3)}));
    optest_gradcheck(dev, "where broadcast", f_where, NULL, 3,
                     IN({SH(2, 1, 4), .constant = true, .values = mask8}, {SH(3, 1)}, {SH(4)}));
    optest_gradcheck(dev, "where broadcast mask", f_where, NULL, 3,
                     IN({SH(4), .constant = true, .values = mask8, .dtype = CLG_I32}, {SH(2, 3, 4)}, {SH(1, 4)}));
    optest_gradcheck(dev, "where same input", f_where_same, NULL, 2,
                     IN({SH(2, 4), .constant = true, .values = mask8}, {SH(2, 4)}));
    optest_gradcheck(dev, "activation chain", f_chain, NULL, 1, IN({SH(3, 4), -3, 3}));

    test_kinks(dev, CLG_F32);
    if (optest_fp64(dev)) test_kinks(dev, CLG_F64);
    clg_device_close(dev);
    return check_report("test_grad_unary");
}
