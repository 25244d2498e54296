/* Gradient checks for the ops of one operand, the activations and where
 * (src/tensor/unary.c), and the gradients at kinks and saturation, where finite
 * differences cannot look. */
#include <math.h>

#include "optest.h"

#define IN(...) ((optest_input[]){__VA_ARGS__})
#define SH(...) CLG_SHAPE(__VA_ARGS__)

static clg_tensor *f_neg(clg_tensor **x, void *c) { (void)c; return clg_neg(x[0]); }
static clg_tensor *f_exp(clg_tensor **x, void *c) { (void)c; return clg_exp(x[0]); }
static clg_tensor *f_log(clg_tensor **x, void *c) { (void)c; return clg_log(x[0]); }
static clg_tensor *f_sqrt(clg_tensor **x, void *c) { (void)c; return clg_sqrt(x[0]); }
static clg_tensor *f_abs(clg_tensor **x, void *c) { (void)c; return clg_abs(x[0]); }
static clg_tensor *f_clamp(clg_tensor **x, void *c) { (void)c; return clg_clamp(x[0], -0.5, 0.7); }
static clg_tensor *f_relu(clg_tensor **x, void *c) { (void)c; return clg_relu(x[0]); }
static clg_tensor *f_leaky(clg_tensor **x, void *c) { (void)c; return clg_leaky_relu(x[0], 0.1); }
static clg_tensor *f_sigmoid(clg_tensor **x, void *c) { (void)c; return clg_sigmoid(x[0]); }
static clg_tensor *f_tanh(clg_tensor **x, void *c) { (void)c; return clg_tanh(x[0]); }
static clg_tensor *f_gelu(clg_tensor **x, void *c) { (void)c; return clg_gelu(x[0]); }
static clg_tensor *f_softplus(clg_tensor **x, void *c) { (void)c; return clg_softplus(x[0], 1.0, 20.0); }
static clg_tensor *f_softplus_b(clg_tensor **x, void *c) { (void)c; return clg_softplus(x[0], 2.0, 3.0); }
static clg_tensor *f_gelu_tanh(clg_tensor **x, void *c) { (void)c; return clg_gelu_tanh(x[0]); }
static clg_tensor *f_silu(clg_tensor **x, void *c) { (void)c; return clg_silu(x[0]); }
static clg_tensor *f_elu(clg_tensor **x, void *c) { (void)c; return clg_elu(x[0], 0.7); }
static clg_tensor *f_sin(clg_tensor **x, void *c) { (void)c; return clg_sin(x[0]); }
static clg_tensor *f_cos(clg_tensor **x, void *c) { (void)c; return clg_cos(x[0]); }
static clg_tensor *f_tan(clg_tensor **x, void *c) { (void)c; return clg_tan(x[0]); }
static clg_tensor *f_log1p(clg_tensor **x, void *c) { (void)c; return clg_log1p(x[0]); }
static clg_tensor *f_expm1(clg_tensor **x, void *c) { (void)c; return clg_expm1(x[0]); }
static clg_tensor *f_rsqrt(clg_tensor **x, void *c) { (void)c; return clg_rsqrt(x[0]); }
static clg_tensor *f_erf(clg_tensor **x, void *c) { (void)c; return clg_erf(x[0]); }
/* Flat ops times a smooth one, so that the check sees their zero gradient next to a
 * nonzero one: d/dx (x * floor(x)) = floor(x) away from the integers. */
static clg_tensor *f_sign(clg_tensor **x, void *c) { (void)c; return clg_mul(x[0], clg_sign(x[0])); }
static clg_tensor *f_floor(clg_tensor **x, void *c) { (void)c; return clg_mul(x[0], clg_floor(x[0])); }
static clg_tensor *f_ceil(clg_tensor **x, void *c) { (void)c; return clg_mul(x[0], clg_ceil(x[0])); }
static clg_tensor *f_round(clg_tensor **x, void *c) { (void)c; return clg_mul(x[0], clg_round(x[0])); }
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
    const double pos_lo = 0.3, pos_hi = 3.0;
    optest_gradcheck(dev, "neg", f_neg, NULL, 1, IN({SH(2, 3)}));
    optest_gradcheck(dev, "exp", f_exp, NULL, 1, IN({SH(2, 3), -2, 2}));
    optest_gradcheck(dev, "log", f_log, NULL, 1, IN({SH(2, 3), pos_lo, pos_hi}));
    optest_gradcheck(dev, "sqrt", f_sqrt, NULL, 1, IN({SH(2, 3), pos_lo, pos_hi}));
    optest_gradcheck(dev, "abs", f_abs, NULL, 1, IN({SH(2, 3), .values = signs}));
    optest_gradcheck(dev, "clamp", f_clamp, NULL, 1, IN({SH(2, 3), .values = around_bounds}));
    optest_gradcheck(dev, "relu", f_relu, NULL, 1, IN({SH(2, 3), .values = signs}));
    optest_gradcheck(dev, "leaky_relu", f_leaky, NULL, 1, IN({SH(2, 3), .values = signs}));
    optest_gradcheck(dev, "sigmoid", f_sigmoid, NULL, 1, IN({SH(2, 3), -4, 4}));
    optest_gradcheck(dev, "tanh", f_tanh, NULL, 1, IN({SH(2, 3), -2, 2}));
    optest_gradcheck(dev, "gelu", f_gelu, NULL, 1, IN({SH(2, 3), -3, 3}));
    optest_gradcheck(dev, "softplus", f_softplus, NULL, 1, IN({SH(2, 3), -5, 5}));
    /* beta 2, threshold 3: both sides of the threshold (beta x = 3 at x = 1.5) */
    const double across[6] = {-2, -0.4, 0.5, 1.2, 1.8, 2.5};
    optest_gradcheck(dev, "softplus beta threshold", f_softplus_b, NULL, 1, IN({SH(2, 3), .values = across}));
    optest_gradcheck(dev, "gelu_tanh", f_gelu_tanh, NULL, 1, IN({SH(2, 3), -3, 3}));
    optest_gradcheck(dev, "silu", f_silu, NULL, 1, IN({SH(2, 3), -4, 4}));
    optest_gradcheck(dev, "elu", f_elu, NULL, 1, IN({SH(2, 3), .values = signs}));
    optest_gradcheck(dev, "sin", f_sin, NULL, 1, IN({SH(2, 3), -3, 3}));
    optest_gradcheck(dev, "cos", f_cos, NULL, 1, IN({SH(2, 3), -3, 3}));
    optest_gradcheck(dev, "tan", f_tan, NULL, 1, IN({SH(2, 3), -1.2, 1.2}));
    optest_gradcheck(dev, "log1p", f_log1p, NULL, 1, IN({SH(2, 3), -0.7, 3}));
    optest_gradcheck(dev, "expm1", f_expm1, NULL, 1, IN({SH(2, 3), -2, 2}));
    optest_gradcheck(dev, "rsqrt", f_rsqrt, NULL, 1, IN({SH(2, 3), pos_lo, pos_hi}));
    optest_gradcheck(dev, "erf", f_erf, NULL, 1, IN({SH(2, 3), -2, 2}));
    /* off the steps: never within 0.1 of an integer or (round) a half */
    const double off_steps[6] = {-1.3, 0.35, -0.2, 0.85, 1.7, -2.65};
    optest_gradcheck(dev, "sign", f_sign, NULL, 1, IN({SH(2, 3), .values = signs}));
    optest_gradcheck(dev, "floor", f_floor, NULL, 1, IN({SH(2, 3), .values = off_steps}));
    optest_gradcheck(dev, "ceil", f_ceil, NULL, 1, IN({SH(2, 3), .values = off_steps}));
    optest_gradcheck(dev, "round", f_round, NULL, 1, IN({SH(2, 3), .values = off_steps}));
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
