/* summary.c: a model's layers, output shapes and parameter counts, as Keras'
 * model.summary() prints them, from one forward pass of zeros (token 0 for a model
 * that starts with an Embedding), in evaluation mode. */
#include <stdio.h>
#include <string.h>

#include "nn_impl.h"

static void row(FILE *out, const char *name, const clg_module *m, const clg_tensor *y)
{
    char desc[160] = "", shape[96] = "?";
    if (m->iface->describe) m->iface->describe(m, desc, sizeof desc);
    char layer[256];
    snprintf(layer, sizeof layer, "%s %s(%s)", name, m->iface->type, desc);
    if (y) clg_shape_str(y->ndim, y->shape, shape, sizeof shape);
    fprintf(out, "  %-64.64s %-18s %12lld\n", layer, shape, (long long)clg_module_numel(m, false));
}

/* The first layer data meets: an Embedding takes tokens (int32), everything else floats. */
static clg_dtype input_dtype(const clg_module *m)
{
    while (!strcmp(m->iface->type, "Sequential") && m->nchildren > 0) m = m->children[0];
    return !strcmp(m->iface->type, "Embedding") ? CLG_I32 : CLG_F32;
}

clg_status clg_module_summary(clg_module *m, int ndim, const int64_t *input_shape, FILE *out)
{
    if (!m || !out) return CLG_ERR_INVALID_ARGUMENT;
    clg_device *dev = m->dev;
    bool training = m->training;
    clg_module_train(m, false);
    clg_scope_begin(dev);
    clg_no_grad_begin(dev);
    clg_tensor *x = clg_zeros(dev, input_dtype(m), ndim, input_shape);
    fprintf(out, "  %-64s %-18s %12s\n", "layer", "output shape", "parameters");
    bool seq = !strcmp(m->iface->type, "Sequential");
    for (int i = 0; seq && x && i < m->nchildren; i++) {
        x = clg_module_forward(m->children[i], x);
        row(out, m->children[i]->name, m->children[i], x);
    }
    if (!seq) {
        x = clg_module_forward(m, x);
        row(out, "", m, x);
    }
    clg_status st = x ? CLG_OK : dev->status;
    fprintf(out, "  total parameters: %lld (trainable %lld)\n", (long long)clg_module_numel(m, false),
            (long long)clg_module_numel(m, true));
    clg_no_grad_end(dev);
    clg_scope_end(dev);
    clg_module_train(m, training);
    return st;
}
