/* model_kind_residual.c: torchvision's residual blocks (basic_block, bottleneck) on
 * [C, H, W], `repeat` of them as its _make_layer: the first with the stride (and a
 * downsample where the shapes change), the rest stride 1; out: planes (a bottleneck
 * gives 4 out channels). */
#include "model_kind.h"

/* -> [planes * e, ceil(H / s), ceil(W / s)] (3x3 convolutions of padding 1); parameters:
 * convolutions without bias, batch norms' weight and bias, the downsample (1x1 conv and
 * norm) where the first block changes the shape. */
static bool residual_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    if (!model_need_axes(c, l, ndim, in, 3, 3, "[C, H, W] inputs")) return false;
    bool bottle = l->kind == &mk_bottleneck;
    int64_t p = l->out, e = bottle ? 4 : 1, s = l->stride[0], total = 0, cin = in[0];
    if (p > (1 << 16) || cin > (1 << 20)) return model_fail(c, false, "too many parameters");
    for (int64_t b = 0; b < l->repeat; b++) {
        int64_t w = bottle ? cin * p + 9 * p * p + p * e * p + 2 * (p + p + e * p) : 9 * cin * p + 9 * p * p + 4 * p;
        if (cin != p * e || (b == 0 && s != 1)) w += cin * p * e + 2 * p * e;   /* downsample */
        if ((total += w) > MODEL_MAX_NUMEL) return model_fail(c, false, "too many parameters");
        cin = p * e;
    }
    l->params = total;
    l->shape[0] = p * e;
    l->shape[1] = (in[1] + s - 1) / s;
    l->shape[2] = (in[2] + s - 1) / s;
    return true;
}

/* Block i on *in channels, updated to its output's: the first with the stride. */
static clg_module *block(clg_device *dev, const model_layer *l, int64_t i, int64_t *in)
{
    bool bottle = l->kind == &mk_bottleneck;
    int stride = i ? 1 : (int)l->stride[0];
    int64_t cin = *in;
    *in = l->out * (bottle ? 4 : 1);
    return bottle ? clg_nn_bottleneck(dev, cin, l->out, stride, false) : clg_nn_basic_block(dev, cin, l->out, stride, false);
}

static clg_module *residual_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim;
    return model_repeat(dev, l, in[0], block);
}

#define RESIDUAL {MK_OUT, {"stride", OPT_INT, MK_F(stride), 1, 1, 64}, {"repeat", OPT_INT, MK_F(repeat), 1, 1, 1024}}

const model_kind mk_basic_block = {.name = "basic_block", .settings = RESIDUAL, .shape = residual_shape,
                                   .build = residual_build, .onnx = MODEL_ONNX(ox_layer_residual)};
const model_kind mk_bottleneck = {.name = "bottleneck", .settings = RESIDUAL, .shape = residual_shape,
                                  .build = residual_build, .onnx = MODEL_ONNX(ox_layer_residual)};
