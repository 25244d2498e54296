/* model_kind_norm.c: batch, layer and group normalisation: the input's shape, a weight
 * and a bias per channel (layer_norm: per value of the normalised axes). */
#include "model_kind.h"

#define MOMENTUM {"momentum", OPT_REAL, MK_F(momentum), 0.1, 0, 1}

static bool batch_norm1d_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    l->params = 2 * in[0];
    return model_need_axes(c, l, ndim, in, 1, 2, "[C] or [C, L] inputs");
}

static clg_module *batch_norm1d_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim;
    return clg_nn_batch_norm1d(dev, in[0], l->eps, l->momentum);
}

const model_kind mk_batch_norm1d = {.name = "batch_norm1d", .settings = {MK_EPS, MOMENTUM}, .shape = batch_norm1d_shape,
                                    .build = batch_norm1d_build, .onnx = MODEL_ONNX(ox_layer_batch_norm)};

static bool batch_norm2d_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    l->params = 2 * in[0];
    return model_need_axes(c, l, ndim, in, 3, 3, "[C, H, W] inputs");
}

static clg_module *batch_norm2d_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim;
    return clg_nn_batch_norm2d(dev, in[0], l->eps, l->momentum);
}

const model_kind mk_batch_norm2d = {.name = "batch_norm2d", .settings = {MK_EPS, MOMENTUM}, .shape = batch_norm2d_shape,
                                    .build = batch_norm2d_build, .onnx = MODEL_ONNX(ox_layer_batch_norm)};

/* over the last `dims` axes */
static bool layer_norm_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    if (l->dims > ndim) return model_need_axes(c, l, ndim, in, (int)l->dims, CLG_MAX_DIMS, "at least `dims` axes");
    l->params = 2 * model_numel((int)l->dims, in + ndim - l->dims);
    return true;
}

static clg_module *layer_norm_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    return clg_nn_layer_norm(dev, (int)l->dims, in + ndim - l->dims, l->eps);
}

const model_kind mk_layer_norm = {.name = "layer_norm",
                                  .settings = {MK_EPS, {"dims", OPT_INT, MK_F(dims), 1, 1, CLG_MAX_DIMS}},
                                  .shape = layer_norm_shape, .build = layer_norm_build,
                                  .onnx = MODEL_ONNX(ox_layer_layer_norm)};

static bool group_norm_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    if (!model_need_axes(c, l, ndim, in, 1, CLG_MAX_DIMS - 1, "[C, ...] inputs")) return false;
    if (in[0] % l->groups)
        return model_fail(c, false, "groups %lld must divide the input's %lld channels", (long long)l->groups,
                          (long long)in[0]);
    l->params = 2 * in[0];
    return true;
}

static clg_module *group_norm_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim;
    return clg_nn_group_norm(dev, l->groups, in[0], l->eps);
}

const model_kind mk_group_norm = {.name = "group_norm",
                                  .settings = {{"groups", OPT_INT, MK_F(groups), NAN, 1, MODEL_MAX_DIM}, MK_EPS},
                                  .shape = group_norm_shape, .build = group_norm_build,
                                  .onnx = MODEL_ONNX(ox_layer_group_norm)};
