/* model_kind_dense.c: linear, embedding, dropout and flatten. */
#include "model_kind.h"

static bool linear_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    l->shape[ndim - 1] = l->out;
    int64_t f[2] = {l->out, in[ndim - 1]};
    if (!model_product(&l->params, 2, f)) return model_fail(c, false, "too many parameters");
    l->params += l->bias ? l->out : 0;
    return true;
}

static clg_module *linear_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    return clg_nn_linear(dev, in[ndim - 1], l->out, l->bias);
}

const model_kind mk_linear = {.name = "linear", .settings = {MK_OUT, MK_BIAS}, .shape = linear_shape,
                              .build = linear_build, .onnx = MODEL_ONNX(ox_layer_linear)};

/* integer tokens of any shape -> [..., dim]; the batch axis and dim must fit. */
static bool embedding_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    char s[160];
    if (ndim + 2 > CLG_MAX_DIMS)
        return model_fail(c, false, "embedding adds an axis to its input %s: at most %d axes of tokens",
                          model_shape_text(ndim, in, s, sizeof s), CLG_MAX_DIMS - 2);
    l->ndim = ndim + 1;
    l->shape[ndim] = l->out;
    int64_t f[2] = {l->num, l->out};
    return model_product(&l->params, 2, f) || model_fail(c, false, "too many parameters");
}

static clg_module *embedding_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim, (void)in;
    return clg_nn_embedding(dev, l->num, l->out);
}

const model_kind mk_embedding = {.name = "embedding",
                                 .settings = {{"num", OPT_INT, MK_F(num), NAN, 1, MODEL_MAX_DIM},
                                              {"dim", OPT_INT, MK_F(out), NAN, 1, MODEL_MAX_DIM}},
                                 .tokens = true, .shape = embedding_shape, .build = embedding_build,
                                 .onnx = MODEL_ONNX(ox_layer_embedding)};

static clg_module *dropout_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim, (void)in;
    return clg_nn_dropout(dev, l->p);
}

const model_kind mk_dropout = {.name = "dropout", .settings = {{"p", OPT_REAL, MK_F(p), 0.5, 0, 0.99}},
                               .build = dropout_build, .onnx = MODEL_ONNX(ox_layer_dropout)};

static bool flatten_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    (void)c;
    l->ndim = 1;
    l->shape[0] = model_numel(ndim, in);
    return true;
}

static clg_module *flatten_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)l, (void)ndim, (void)in;
    return clg_nn_flatten(dev);
}

const model_kind mk_flatten = {.name = "flatten", .shape = flatten_shape, .build = flatten_build,
                               .onnx = MODEL_ONNX(ox_layer_flatten)};
