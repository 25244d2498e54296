// The README's training step written in C++ (install_consumer.sh builds it as C++17 and
// C++20, warnings as errors): the options from clg_sgd_defaults(), the layers from a
// named array, shapes from CLG_SHAPE, since C++ has no compound literals. It learns a
// fixed labelling of fixed inputs, so that its loss must fall.
#include <clgrad.h>

#include <cstdio>

int main()
{
    clg_device *dev;
    if (clg_device_open(nullptr, &dev) != CLG_OK) {
        std::fprintf(stderr, "consumer (C++): %s\n", clg_device_error(dev));
        clg_device_close(dev);
        return 1;
    }
    clg_module *layers[] = {clg_nn_flatten(dev), clg_nn_linear(dev, 16, 32, true), clg_nn_relu(dev),
                            clg_nn_linear(dev, 32, 4, true)};
    clg_module *model = clg_nn_sequential(dev, 4, layers);
    clg_tensor *params[4];
    int n = clg_module_parameters(model, params, 4, true);
    clg_sgd_options so = clg_sgd_defaults();
    so.lr = 0.05;
    so.momentum = 0.9;
    clg_optimizer *opt = clg_sgd_new(n, params, &so);

    clg_tensor *x = clg_tensor_keep(clg_randn(dev, CLG_F32, CLG_SHAPE(8, 2, 8), 0, 1));
    const int32_t labels[8] = {0, 1, 2, 3, 3, 2, 1, 0};
    clg_tensor *y = clg_tensor_keep(clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(8), labels));
    double first = 0, last = 0;
    int rc = 1;
    for (int step = 0; step < 30 && opt && x && y; step++) {
        clg_scope_begin(dev);
        clg_optimizer_zero_grad(opt);
        clg_tensor *loss = clg_cross_entropy(clg_module_forward(model, x), y, CLG_REDUCE_MEAN);
        clg_status st = clg_backward(loss, nullptr);
        if (st == CLG_OK) st = clg_optimizer_step(opt);
        if (st == CLG_OK) st = clg_tensor_item(loss, step == 0 ? &first : &last);
        clg_scope_end(dev);
        if (st != CLG_OK) break;
        rc = step == 29 ? 0 : 1;
    }
    if (rc == 0) {   /* CLG_AXES as C++ takes it: the sum over axes 1 and 2 of [8, 2, 8] */
        clg_scope_begin(dev);
        clg_tensor *s = clg_sum(x, CLG_AXES(1, 2), false);
        if (s && (clg_tensor_ndim(s) != 1 || clg_tensor_dim(s, 0) != 8)) {
            std::fprintf(stderr, "consumer (C++): the sum over CLG_AXES(1, 2) has %d axes\n", clg_tensor_ndim(s));
            s = nullptr;
        }
        if (!s) rc = 1;
        clg_scope_end(dev);
    }
    if (rc != 0)
        std::fprintf(stderr, "consumer (C++): %s\n", clg_device_error(dev));
    else if (!(last < 0.5 * first)) {
        std::fprintf(stderr, "consumer (C++): loss %g -> %g in 30 steps, not halved\n", first, last);
        rc = 1;
    } else {
        std::printf("consumer (C++ %ld): clgrad %s, loss %.3f -> %.3f in 30 steps\n", (long)__cplusplus,
                    clg_version(), first, last);
    }
    clg_tensor_free(x);
    clg_tensor_free(y);
    clg_optimizer_free(opt);
    clg_module_free(model);
    clg_device_close(dev);
    return rc;
}
