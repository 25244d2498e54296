/* Modules in float64 (clg_module_to, PyTorch's model.double()): an MLP with a tied
 * weight, a convolution with batch norm, a stateful LSTM and a GRU, converted to
 * float64, give the float32 model's outputs with gradients in float64, keep integer
 * counters and ties, and come back to float32. A device without float64 refuses the
 * conversion with an error saying so (then the checks run float32 to float32). */
#include <math.h>
#include <string.h>

#include "optest.h"

/* The model's output on x (cast to dtype) and the gradient of its sum as float64 values. */
static double *run(clg_device *dev, clg_module *m, clg_tensor *x, clg_dtype dtype, int64_t *n)
{
    clg_tensor *y = clg_module_forward(m, clg_cast(x, dtype));
    CHECK_MSG(y && clg_tensor_dtype(y) == dtype, "forward in %s: %s", clg_dtype_name(dtype), clg_device_error(dev));
    if (!y) return NULL;
    CHECK_OK(dev, clg_backward(clg_sum(y, 0, NULL, false), NULL));
    *n = clg_tensor_numel(y);
    return optest_read(y);
}

/* Every parameter of m has dtype and a gradient of that dtype; integer buffers stay int32. */
static void check_params(clg_device *dev, const char *what, clg_module *m, clg_dtype dtype)
{
    clg_named_tensor st[64];
    int n = clg_module_state(m, st, 64);
    for (int i = 0; i < n && i < 64; i++) {
        clg_dtype d = clg_tensor_dtype(st[i].tensor);
        if (st[i].is_param) {
            CHECK_MSG(d == dtype, "%s: %s is %s", what, st[i].name, clg_dtype_name(d));
            clg_tensor *g = clg_tensor_grad(st[i].tensor);
            CHECK_MSG(g && clg_tensor_dtype(g) == dtype, "%s: %s's gradient", what, st[i].name);
        } else if (strstr(st[i].name, "num_batches_tracked")) {
            CHECK_MSG(d == CLG_I32 || d == CLG_F32 || d == dtype, "%s: %s became %s", what, st[i].name,
                      clg_dtype_name(d));
        }
    }
    (void)dev;
}

static void compare(const char *what, clg_device *dev, clg_module *(*make)(clg_device *), int nd, const int64_t *shape,
                    clg_dtype to, double tol)
{
    clg_scope_begin(dev);
    clg_manual_seed(dev, 7);
    clg_module *a = make(dev);
    clg_manual_seed(dev, 7);
    clg_module *b = make(dev);
    clg_tensor *x = clg_rand(dev, CLG_F32, nd, shape, -1, 1);
    CHECK_OK(dev, clg_module_to(b, to));
    int64_t na = 0, nb = 0;
    double *ya = run(dev, a, x, CLG_F32, &na), *yb = run(dev, b, x, to, &nb);
    CHECK_MSG(ya && yb && na == nb, "%s: outputs", what);
    double worst = 0;
    for (int64_t i = 0; ya && yb && i < na; i++) worst = fmax(worst, fabs(ya[i] - yb[i]) / (1 + fabs(ya[i])));
    CHECK_MSG(worst <= tol, "%s in %s: outputs differ by %.3g (> %.3g)", what, clg_dtype_name(to), worst, tol);
    check_params(dev, what, b, to);
    free(ya), free(yb);
    clg_module_free(a), clg_module_free(b);
    clg_scope_end(dev);
}

static clg_module *make_mlp(clg_device *dev)
{
    clg_module *m = clg_nn_sequential(dev, 4, (clg_module *[]){clg_nn_linear(dev, 6, 6, true), clg_nn_tanh(dev),
                                                               clg_nn_linear(dev, 6, 6, false), clg_nn_gelu(dev)});
    /* the second linear's weight tied to the first's */
    clg_module *l0 = clg_module_child(m, "0"), *l2 = clg_module_child(m, "2");
    CHECK_OK(dev, clg_module_tie_param(l2, "weight", clg_module_param(l0, "weight")));
    return m;
}

static clg_module *make_conv(clg_device *dev)
{
    return clg_nn_sequential(dev, 3, (clg_module *[]){clg_nn_conv2d(dev, 2, 3, 3, 3, NULL, true),
                                                      clg_nn_batch_norm2d(dev, 3, 1e-5, 0.1), clg_nn_relu(dev)});
}

static clg_module *make_lstm(clg_device *dev)
{
    clg_module *m = clg_nn_lstm(dev, 4, 5, NULL);
    CHECK_OK(dev, clg_rnn_set_stateful(m, true));
    return m;
}

static clg_module *make_gru(clg_device *dev) { return clg_nn_gru(dev, 4, 5, NULL); }

int main(void)
{
    clg_device *dev = check_open_device();
    clg_dtype to = optest_fp64(dev) ? CLG_F64 : CLG_F32;
    double tol = 1e-5;
    if (!clg_device_get_info(dev)->fp64) {
        clg_module *m = make_gru(dev);
        CHECK_MSG(clg_module_to(m, CLG_F64) == CLG_ERR_DTYPE && strstr(clg_device_error(dev), "float64"), "%s",
                  clg_device_error(dev));
        clg_device_clear_error(dev);
        clg_module_free(m);
    }
    compare("MLP with a tied weight", dev, make_mlp, CLG_SHAPE(3, 6), to, tol);
    compare("conv2d + batch_norm2d", dev, make_conv, CLG_SHAPE(2, 2, 5, 5), to, tol);
    compare("stateful LSTM", dev, make_lstm, CLG_SHAPE(3, 2, 4), to, tol);
    compare("GRU", dev, make_gru, CLG_SHAPE(3, 2, 4), to, tol);
    /* ties survive: one tensor under both names */
    clg_module *m = make_mlp(dev);
    CHECK_OK(dev, clg_module_to(m, to));
    CHECK_MSG(clg_module_find(m, "0.weight") == clg_module_find(m, "2.weight"), "the tie broke");
    CHECK_OK(dev, clg_module_to(m, CLG_F32));
    CHECK_MSG(clg_tensor_dtype(clg_module_find(m, "0.weight")) == CLG_F32, "back to float32");
    CHECK_MSG(clg_module_to(m, CLG_I32) == CLG_ERR_DTYPE && strstr(clg_device_error(dev), "clg_module_to"), "%s",
              clg_device_error(dev));
    clg_device_clear_error(dev);
    clg_module_free(m);
    CHECK_MSG(clg_tensor_live_count(dev) == 0, "%lld tensors leaked", (long long)clg_tensor_live_count(dev));
    clg_device_close(dev);
    return check_report("test_nn_dtype");
}
