/* Gradient checks for var, std, softmax, log_softmax, cross_entropy and mse: finite
 * differences against clg_backward over contiguous, permuted and sliced inputs. */
#include "optest.h"

#define IN(...) ((optest_input[]){__VA_ARGS__})
#define SH(...) CLG_SHAPE(__VA_ARGS__)

typedef struct axis_ctx { int axis; } axis_ctx;
typedef struct var_ctx { int naxes; const int *axes; int correction; bool keepdim; } var_ctx;

static clg_tensor *f_softmax(clg_tensor **x, void *c) { return clg_softmax(x[0], ((axis_ctx *)c)->axis); }
static clg_tensor *f_log_softmax(clg_tensor **x, void *c) { return clg_log_softmax(x[0], ((axis_ctx *)c)->axis); }
static clg_tensor *f_var(clg_tensor **x, void *c)
{
    var_ctx *v = c;
    return clg_var(x[0], v->naxes, v->axes, v->correction, v->keepdim);
}
/* The gradient reaching softmax is strided (a transpose) or broadcast (a mean). */
static clg_tensor *f_softmax_transposed(clg_tensor **x, void *c)
{
    (void)c;
    return clg_transpose(clg_softmax(x[0], 0), 0, 1);
}
static clg_tensor *f_log_softmax_mean(clg_tensor **x, void *c)
{
    (void)c;
    return clg_mean(clg_mul(clg_log_softmax(x[0], 1), x[0]), CLG_AXES(0), false);
}
static clg_tensor *f_std(clg_tensor **x, void *c)
{
    var_ctx *v = c;
    return clg_std(x[0], v->naxes, v->axes, v->correction, v->keepdim);
}

static clg_tensor *f_var_sum(clg_tensor **x, void *c)
{
    (void)c;
    return clg_mul(clg_var(x[0], CLG_AXES(1), 1, false), clg_sum(x[0], CLG_AXES(1), false));
}
static clg_tensor *f_ce(clg_tensor **x, void *c) { return clg_cross_entropy(x[0], x[1], *(clg_reduction *)c); }
/* cross_entropy_ex with class weights (x[2], no gradient), ignore_index 3 and smoothing */
static clg_tensor *f_ce_ex(clg_tensor **x, void *c)
{
    (void)c;
    clg_ce_options o = clg_ce_defaults();
    o.weight = x[2], o.ignore_index = 3, o.label_smoothing = 0.2;
    return clg_cross_entropy_ex(x[0], x[1], &o);
}
/* cross_entropy after other ops, the way a classifier uses it */
static clg_tensor *f_ce_chain(clg_tensor **x, void *c)
{
    (void)c;
    return clg_cross_entropy(clg_mul_scalar(clg_transpose(x[0], 0, 1), 2.0), x[1], CLG_REDUCE_MEAN);
}
static clg_tensor *f_mse(clg_tensor **x, void *c) { return clg_mse(x[0], x[1], *(clg_reduction *)c); }

int main(void)
{
    clg_device *dev = check_open_device();
    const int axes[3] = {0, 1, -1};
    for (int i = 0; i < 3; i++) {
        axis_ctx a = {axes[i]};
        char what[64];
        snprintf(what, sizeof what, "softmax axis %d", axes[i]);
        optest_gradcheck(dev, what, f_softmax, &a, 1, IN({SH(3, 4, 5), -2, 2}));
        snprintf(what, sizeof what, "log_softmax axis %d", axes[i]);
        optest_gradcheck(dev, what, f_log_softmax, &a, 1, IN({SH(3, 4, 5), -2, 2}));
    }
    axis_ctx last = {-1};
    optest_gradcheck(dev, "softmax row of one", f_softmax, &last, 1, IN({SH(4, 1)}));
    optest_gradcheck(dev, "log_softmax long row", f_log_softmax, &last, 1, IN({SH(2, 40), -3, 3}));
    optest_gradcheck(dev, "softmax strided gradient", f_softmax_transposed, NULL, 1, IN({SH(4, 3)}));
    optest_gradcheck(dev, "log_softmax broadcast gradient", f_log_softmax_mean, NULL, 1, IN({SH(3, 5)}));

    var_ctx v1 = {CLG_AXES(1), 1, false}, v02 = {CLG_AXES(0, 2), 0, true}, vall = {0, NULL, 1, false};
    var_ctx vneg = {CLG_AXES(-1), 0, true}, v0 = {CLG_AXES(0), 1, false};
    optest_gradcheck(dev, "var axis 1 unbiased", f_var, &v1, 1, IN({SH(3, 4)}));
    optest_gradcheck(dev, "var axes 0,2 keepdim", f_var, &v02, 1, IN({SH(2, 3, 4)}));
    optest_gradcheck(dev, "var all axes", f_var, &vall, 1, IN({SH(3, 5)}));
    optest_gradcheck(dev, "var axis -1 keepdim", f_var, &vneg, 1, IN({SH(2, 3, 4)}));
    optest_gradcheck(dev, "var axis 0", f_var, &v0, 1, IN({SH(5, 3)}));
    optest_gradcheck(dev, "std axis 1 unbiased", f_std, &v1, 1, IN({SH(3, 4)}));
    optest_gradcheck(dev, "std axes 0,2 keepdim", f_std, &v02, 1, IN({SH(2, 3, 4)}));
    optest_gradcheck(dev, "var times sum", f_var_sum, NULL, 1, IN({SH(3, 4)}));

    const double labels[5] = {2, 0, 4, 4, 1};
    const clg_reduction reds[3] = {CLG_REDUCE_MEAN, CLG_REDUCE_SUM, CLG_REDUCE_NONE};
    const char *red_names[3] = {"mean", "sum", "none"};
    for (int r = 0; r < 3; r++) {
        char what[64];
        clg_reduction red = reds[r];
        snprintf(what, sizeof what, "cross_entropy %s", red_names[r]);
        optest_gradcheck(dev, what, f_ce, &red, 2,
                         IN({SH(5, 5), -3, 3}, {SH(5), .constant = true, .values = labels, .dtype = CLG_I32}));
        snprintf(what, sizeof what, "mse %s broadcast", red_names[r]);
        optest_gradcheck(dev, what, f_mse, &red, 2, IN({SH(3, 4)}, {SH(4)}));
        snprintf(what, sizeof what, "mse %s column", red_names[r]);
        optest_gradcheck(dev, what, f_mse, &red, 2, IN({SH(3, 1)}, {SH(2, 3, 4)}));
    }
    clg_reduction mean = CLG_REDUCE_MEAN;
    optest_gradcheck(dev, "mse same shape", f_mse, &mean, 2, IN({SH(2, 3)}, {SH(2, 3)}));
    optest_gradcheck(dev, "cross_entropy one class", f_ce, &mean, 2,
                     IN({SH(3, 1)}, {SH(3), .constant = true, .values = (double[]){0, 0, 0}, .dtype = CLG_I32}));
    optest_gradcheck(dev, "cross_entropy_ex weights, ignore_index, smoothing", f_ce_ex, NULL, 3,
                     IN({SH(5, 4), -3, 3}, {SH(5), .constant = true, .values = (double[]){0, 3, 2, 1, 3}, .dtype = CLG_I32},
                        {SH(4), .constant = true, .values = (double[]){0.5, 2, 1, 1.5}}));
    optest_gradcheck(dev, "cross_entropy chain", f_ce_chain, NULL, 2,
                     IN({SH(6, 4)}, {SH(4), .constant = true, .values = (double[]){5, 0, 3, 1}, .dtype = CLG_I32}));
    clg_device_close(dev);
    return check_report("test_grad_softmax");
}
