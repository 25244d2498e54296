/* model_kind_act.c: the elementwise activations (and softmax over the last axis): the
 * input's shape, no parameters. */
#include "model_kind.h"

/* The build of an activation without settings: clg_nn_<fn>(dev). */
#define PLAIN_BUILD(fn)                                                                        \
    static clg_module *fn##_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in) \
    {                                                                                          \
        (void)l, (void)ndim, (void)in;                                                         \
        return clg_nn_##fn(dev);                                                               \
    }

PLAIN_BUILD(relu)
PLAIN_BUILD(sigmoid)
PLAIN_BUILD(tanh)
PLAIN_BUILD(gelu)
PLAIN_BUILD(gelu_tanh)
PLAIN_BUILD(silu)

const model_kind mk_relu = {.name = "relu", .build = relu_build, .onnx = MODEL_ONNX(ox_layer_relu)};
const model_kind mk_sigmoid = {.name = "sigmoid", .build = sigmoid_build, .onnx = MODEL_ONNX(ox_layer_sigmoid)};
const model_kind mk_tanh = {.name = "tanh", .build = tanh_build, .onnx = MODEL_ONNX(ox_layer_tanh)};
const model_kind mk_gelu = {.name = "gelu", .build = gelu_build, .onnx = MODEL_ONNX(ox_layer_gelu)};
const model_kind mk_gelu_tanh = {.name = "gelu_tanh", .build = gelu_tanh_build, .onnx = MODEL_ONNX(ox_layer_gelu_tanh)};
const model_kind mk_silu = {.name = "silu", .build = silu_build, .onnx = MODEL_ONNX(ox_layer_silu)};

static clg_module *softmax_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)l, (void)ndim, (void)in;
    return clg_nn_softmax(dev, -1);
}

const model_kind mk_softmax = {.name = "softmax", .build = softmax_build, .onnx = MODEL_ONNX(ox_layer_softmax)};

static clg_module *leaky_relu_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim, (void)in;
    return clg_nn_leaky_relu(dev, l->slope);
}

const model_kind mk_leaky_relu = {.name = "leaky_relu",
                                  .settings = {{"slope", OPT_REAL, MK_F(slope), 0.01, -1000, 1000}},
                                  .build = leaky_relu_build, .onnx = MODEL_ONNX(ox_layer_leaky_relu)};

static clg_module *elu_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim, (void)in;
    return clg_nn_elu(dev, l->alpha);
}

const model_kind mk_elu = {.name = "elu", .settings = {{"alpha", OPT_REAL, MK_F(alpha), 1, -1000, 1000}},
                           .build = elu_build, .onnx = MODEL_ONNX(ox_layer_elu)};

static clg_module *softplus_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim, (void)in;
    return clg_nn_softplus(dev, l->beta, l->threshold);
}

const model_kind mk_softplus = {.name = "softplus",
                                .settings = {{"beta", OPT_REAL, MK_F(beta), 1, 1e-6, 1000},
                                             {"threshold", OPT_REAL, MK_F(threshold), 20, -1e6, 1e6}},
                                .build = softplus_build, .onnx = MODEL_ONNX(ox_layer_softplus)};
