/* model_kind_join.c: the layers that join the outputs of 2 or more layers named by
 * "inputs" (graph-shaped model files): their sum (add, one shape) or their concatenation
 * along a sample axis (concat). */
#include "model_kind.h"

/* add: inputs of one shape; concat: the same shape but along axis, whose sizes add up. */
static bool join_shape(model_ctx *c, model_layer *l, int n, const model_layer *const *ins, int in_ndim,
                       const int64_t *in)
{
    char a[160], b[160];
    bool concat = l->kind == &mk_concat;
    int nd = ins[0] ? ins[0]->ndim : in_ndim;
    const int64_t *first = ins[0] ? ins[0]->shape : in;
    if (n < 2) return model_fail(c, false, "%s joins 2 to %d inputs, got %d", l->kind->name, MODEL_MAX_INPUTS, n);
    if (concat && l->axis >= nd)
        return model_fail(c, false, "axis %lld is not an axis of the inputs' %d-axis samples", (long long)l->axis, nd);
    l->ndim = nd;
    for (int d = 0; d < nd; d++) l->shape[d] = first[d];
    for (int k = 1; k < n; k++) {
        int kd = ins[k] ? ins[k]->ndim : in_ndim;
        const int64_t *s = ins[k] ? ins[k]->shape : in;
        bool ok = kd == nd;
        for (int d = 0; ok && d < nd; d++) ok = s[d] == first[d] || (concat && d == l->axis);
        if (!ok)
            return model_fail(c, false, "%s: input %d is %s, input 0 is %s%s", l->kind->name, k,
                              model_shape_text(kd, s, a, sizeof a), model_shape_text(nd, first, b, sizeof b),
                              concat ? " (they may differ along the axis alone)" : " (want one shape)");
        if (concat && (l->shape[l->axis] += s[l->axis]) > MODEL_MAX_DIM)
            return model_fail(c, false, "the joined axis is over %d long", MODEL_MAX_DIM);
    }
    l->params = 0;
    return true;
}

static clg_module *add_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)l, (void)ndim, (void)in;
    return clg_nn_add(dev);
}

static clg_module *concat_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim, (void)in;
    return clg_nn_concat(dev, (int)l->axis + 1);   /* after the batch axis */
}

const model_kind mk_add = {.name = "add", .join = join_shape, .build = add_build, .onnx = MODEL_ONNX(ox_layer_add)};
const model_kind mk_concat = {.name = "concat", .settings = {{"axis", OPT_INT, MK_F(axis), 0, 0, CLG_MAX_DIMS - 2}},
                              .join = join_shape, .build = concat_build, .onnx = MODEL_ONNX(ox_layer_concat)};
