/* model_kind_conv.c: convolutions and pooling over [C, H, W] (conv1d: [C, L]), and
 * upsampling. */
#include "model_kind.h"

/* Output length along one axis of a window (conv2d's dilated, a pool's square). */
static bool window(model_ctx *c, const model_layer *l, int64_t in, int axis, int64_t *out)
{
    int64_t k = l->kernel[axis], s = l->stride[axis], p = l->padding[axis];
    int64_t d = l->kind == &mk_conv2d ? l->dilation[axis] : 1;
    int64_t span = d * (k - 1) + 1;
    if (in + 2 * p < span)
        return model_fail(c, false, "a %s window of %lld (kernel %lld, dilation %lld) does not fit the input's %lld "
                          "(+ 2 x %lld padding)", axis ? "width" : "height", (long long)span, (long long)k,
                          (long long)d, (long long)in, (long long)p);
    *out = (in + 2 * p - span) / s + 1;
    return true;
}

static bool conv_or_pool(model_ctx *c, model_layer *l, const int64_t *in)
{
    bool conv = l->kind == &mk_conv2d;
    if (!conv) {   /* square windows; stride 0: the kernel size */
        l->kernel[1] = l->kernel[0];
        l->stride[0] = l->stride[1] = l->stride[0] ? l->stride[0] : l->kernel[0];
        l->padding[1] = l->padding[0];
        if (2 * l->padding[0] > l->kernel[0])
            return model_fail(c, false, "padding %lld is more than half the kernel %lld", (long long)l->padding[0],
                              (long long)l->kernel[0]);
    }
    int64_t ch = conv ? l->out : in[0];
    if (conv && (in[0] % l->groups || l->out % l->groups))
        return model_fail(c, false, "groups %lld must divide the input's %lld channels and out %lld",
                          (long long)l->groups, (long long)in[0], (long long)l->out);
    int64_t h = 0, w = 0;
    if (!window(c, l, in[1], 0, &h) || !window(c, l, in[2], 1, &w)) return false;
    l->ndim = 3;
    l->shape[0] = ch, l->shape[1] = h, l->shape[2] = w;
    if (!conv) return true;
    int64_t f[4] = {l->out, in[0] / l->groups, l->kernel[0], l->kernel[1]};
    if (!model_product(&l->params, 4, f)) return model_fail(c, false, "too many parameters");
    l->params += l->bias ? l->out : 0;
    return true;
}

static bool conv_or_pool_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    return model_need_axes(c, l, ndim, in, 3, 3, "[C, H, W] inputs") && conv_or_pool(c, l, in);
}

static clg_conv2d_params conv2d_params(const model_layer *l)
{
    return (clg_conv2d_params){{(int)l->stride[0], (int)l->stride[1]}, {(int)l->padding[0], (int)l->padding[1]},
                               {(int)l->dilation[0], (int)l->dilation[1]}, (int)l->groups};
}

static clg_module *conv2d_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim;
    clg_conv2d_params p = conv2d_params(l);
    return clg_nn_conv2d(dev, in[0], l->out, (int)l->kernel[0], (int)l->kernel[1], &p, l->bias);
}

const model_kind mk_conv2d = {
    .name = "conv2d",
    .settings = {MK_OUT, {"kernel", OPT_PAIR, MK_F(kernel), NAN, 1, 1024}, {"stride", OPT_PAIR, MK_F(stride), 1, 1, 1024},
                 {"padding", OPT_PAIR, MK_F(padding), 0, 0, 1024}, {"dilation", OPT_PAIR, MK_F(dilation), 1, 1, 1024},
                 {"groups", OPT_INT, MK_F(groups), 1, 1, MODEL_MAX_DIM}, MK_BIAS},
    .shape = conv_or_pool_shape, .build = conv2d_build, .onnx = MODEL_ONNX(ox_layer_conv2d)};

/* Square windows only, as clg_nn_max_pool2d takes them; stride 0 means the kernel size. */
#define POOL {"kernel", OPT_INT, MK_F(kernel), NAN, 1, 1024}, {"stride", OPT_INT, MK_F(stride), 0, 0, 1024}, \
             {"padding", OPT_INT, MK_F(padding), 0, 0, 512}

static clg_module *max_pool2d_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim, (void)in;
    return clg_nn_max_pool2d(dev, (int)l->kernel[0], (int)l->stride[0], (int)l->padding[0]);
}

static clg_module *avg_pool2d_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim, (void)in;
    return clg_nn_avg_pool2d(dev, (int)l->kernel[0], (int)l->stride[0], (int)l->padding[0]);
}

const model_kind mk_max_pool2d = {.name = "max_pool2d", .settings = {POOL}, .shape = conv_or_pool_shape,
                                  .build = max_pool2d_build, .onnx = MODEL_ONNX(ox_layer_max_pool2d)};
const model_kind mk_avg_pool2d = {.name = "avg_pool2d", .settings = {POOL}, .shape = conv_or_pool_shape,
                                  .build = avg_pool2d_build, .onnx = MODEL_ONNX(ox_layer_avg_pool2d)};

static bool global_pool_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    l->shape[1] = l->shape[2] = 1;
    return model_need_axes(c, l, ndim, in, 3, 3, "[C, H, W] inputs");
}

static clg_module *global_pool_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)l, (void)ndim, (void)in;
    return clg_nn_global_avg_pool2d(dev);
}

const model_kind mk_global_avg_pool2d = {.name = "global_avg_pool2d", .shape = global_pool_shape,
                                         .build = global_pool_build, .onnx = MODEL_ONNX(ox_layer_global_avg_pool2d)};

static bool groups_divide(model_ctx *c, const model_layer *l, int64_t in)
{
    if (in % l->groups == 0 && l->out % l->groups == 0) return true;
    return model_fail(c, false, "groups %lld must divide the input's %lld channels and out %lld", (long long)l->groups,
                      (long long)in, (long long)l->out);
}

/* conv1d on [C, L] */
static bool conv1d_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    if (!model_need_axes(c, l, ndim, in, 2, 2, "[C, L] inputs")) return false;
    int64_t span = l->dilation[0] * (l->kernel[0] - 1) + 1;
    if (!groups_divide(c, l, in[0])) return false;
    if (in[1] + 2 * l->padding[0] < span)
        return model_fail(c, false, "a window of %lld does not fit the input's %lld (+ 2 x %lld padding)",
                          (long long)span, (long long)in[1], (long long)l->padding[0]);
    l->shape[0] = l->out;
    l->shape[1] = (in[1] + 2 * l->padding[0] - span) / l->stride[0] + 1;
    int64_t f[3] = {l->out, in[0] / l->groups, l->kernel[0]};
    if (!model_product(&l->params, 3, f)) return model_fail(c, false, "too many parameters");
    l->params += l->bias ? l->out : 0;
    return true;
}

static clg_module *conv1d_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim;
    clg_conv1d_params p = {(int)l->stride[0], (int)l->padding[0], (int)l->dilation[0], (int)l->groups};
    return clg_nn_conv1d(dev, in[0], l->out, (int)l->kernel[0], &p, l->bias);
}

const model_kind mk_conv1d = {
    .name = "conv1d",
    .settings = {MK_OUT, {"kernel", OPT_INT, MK_F(kernel), NAN, 1, 1024}, {"stride", OPT_INT, MK_F(stride), 1, 1, 1024},
                 {"padding", OPT_INT, MK_F(padding), 0, 0, 1024}, {"dilation", OPT_INT, MK_F(dilation), 1, 1, 1024},
                 {"groups", OPT_INT, MK_F(groups), 1, 1, MODEL_MAX_DIM}, MK_BIAS},
    .shape = conv1d_shape, .build = conv1d_build, .onnx = MODEL_ONNX(ox_layer_conv1d)};

/* conv_transpose2d on [C, H, W]: (in - 1) s - 2 p + d (k - 1) + output_padding + 1 */
static bool conv_transpose_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    if (!model_need_axes(c, l, ndim, in, 3, 3, "[C, H, W] inputs") || !groups_divide(c, l, in[0])) return false;
    l->shape[0] = l->out;
    for (int a = 0; a < 2; a++) {
        int64_t op = l->output_padding[a], s = l->stride[a], d = l->dilation[a];
        if (op >= s && op >= d)
            return model_fail(c, false, "output_padding %lld must be below the stride %lld or the dilation %lld",
                              (long long)op, (long long)s, (long long)d);
        l->shape[1 + a] = (in[1 + a] - 1) * s - 2 * l->padding[a] + d * (l->kernel[a] - 1) + op + 1;
        if (l->shape[1 + a] < 1)
            return model_fail(c, false, "the padding %lld leaves no output along %s", (long long)l->padding[a],
                              a ? "the width" : "the height");
    }
    int64_t f[4] = {in[0], l->out / l->groups, l->kernel[0], l->kernel[1]};
    if (!model_product(&l->params, 4, f)) return model_fail(c, false, "too many parameters");
    l->params += l->bias ? l->out : 0;
    return true;
}

static clg_module *conv_transpose_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim;
    clg_conv_transpose2d_params t = {{(int)l->stride[0], (int)l->stride[1]}, {(int)l->padding[0], (int)l->padding[1]},
                                     {(int)l->output_padding[0], (int)l->output_padding[1]},
                                     {(int)l->dilation[0], (int)l->dilation[1]}, (int)l->groups};
    return clg_nn_conv_transpose2d(dev, in[0], l->out, (int)l->kernel[0], (int)l->kernel[1], &t, l->bias);
}

const model_kind mk_conv_transpose2d = {
    .name = "conv_transpose2d",
    .settings = {MK_OUT, {"kernel", OPT_PAIR, MK_F(kernel), NAN, 1, 1024}, {"stride", OPT_PAIR, MK_F(stride), 1, 1, 1024},
                 {"padding", OPT_PAIR, MK_F(padding), 0, 0, 1024},
                 {"output_padding", OPT_PAIR, MK_F(output_padding), 0, 0, 1024},
                 {"dilation", OPT_PAIR, MK_F(dilation), 1, 1, 1024},
                 {"groups", OPT_INT, MK_F(groups), 1, 1, MODEL_MAX_DIM}, MK_BIAS},
    .shape = conv_transpose_shape, .build = conv_transpose_build, .onnx = MODEL_ONNX(ox_layer_conv_transpose2d)};

static bool upsample_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    if (!model_need_axes(c, l, ndim, in, 3, 3, "[C, H, W] inputs")) return false;
    l->shape[1] = (int64_t)floor((double)in[1] * l->scale);
    l->shape[2] = (int64_t)floor((double)in[2] * l->scale);
    if (l->shape[1] < 1 || l->shape[2] < 1)
        return model_fail(c, false, "scale %g leaves no output of %lld x %lld", l->scale, (long long)in[1],
                          (long long)in[2]);
    return true;
}

static clg_module *upsample_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim, (void)in;
    return clg_nn_upsample(dev, l->scale, l->bilinear);
}

const model_kind mk_upsample = {.name = "upsample",
                                .settings = {{"scale", OPT_REAL, MK_F(scale), NAN, 1e-3, 1024},
                                             {"bilinear", OPT_BOOL, MK_F(bilinear), 0, 0, 1}},
                                .shape = upsample_shape, .build = upsample_build, .onnx = MODEL_ONNX(ox_layer_upsample)};
