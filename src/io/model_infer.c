/* model_infer.c: shape inference. Each layer's input is the previous layer's output
 * (or the outputs it names), so a file states only what layers produce; each kind's
 * shape function (model_kind_*.c) derives the rest (in_features, in_channels,
 * layer-norm shapes) and refuses inputs it does not fit, with the shapes in the
 * message. Here: what holds for every kind, the cap on an output's size. */
#include <stdio.h>

#include "model_kind.h"

bool model_infer_layer(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    l->ndim = ndim;
    for (int i = 0; i < ndim; i++) l->shape[i] = in[i];
    l->params = 0;
    if (l->kind->shape && !l->kind->shape(c, l, ndim, in)) return false;   /* none: elementwise */
    char s[160];
    if (model_numel(l->ndim, l->shape) > MODEL_MAX_NUMEL)
        return model_fail(c, false, "the output %s has more than %lld values",
                          model_shape_text(l->ndim, l->shape, s, sizeof s), (long long)MODEL_MAX_NUMEL);
    return true;
}

bool model_infer_join(model_ctx *c, model_layer *l, int n, const model_layer *const *ins, int in_ndim,
                      const int64_t *in)
{
    return l->kind->join(c, l, n, ins, in_ndim, in);
}

bool model_layer_wired(const model_layer *l, int i)
{
    return l->ninputs > 1 || (l->ninputs == 1 && l->inputs[0] != i - 1);
}
