/* sequential.c: layers applied one after another, named "0", "1", ... */
#include <stdio.h>
#include <string.h>

#include "nn_impl.h"

static bool is_a(const clg_module *m, const char *type) { return !strcmp(m->iface->type, type); }

/* A Linear followed by a ReLU runs as one product whose write-out applies the ReLU, where
 * the GEMM engine does that (clg__linear_relu: the same values and gradients, one launch
 * and one pass over the activations fewer); a batch norm followed by a ReLU as one op
 * (clg__nn_batch_norm_relu: two passes fewer forward, one backward). */
static clg_tensor *sequential_forward(clg_module *m, clg_tensor *x)
{
    for (int i = 0; x && i < m->nchildren; i++) {
        clg_module *c = m->children[i];
        if (i + 1 < m->nchildren && is_a(c, "Linear") && is_a(m->children[i + 1], "ReLU")) {
            x = clg__linear_relu(x, clg_module_param(c, "weight"), clg_module_param(c, "bias"));
            i++;
        } else if (i + 1 < m->nchildren && clg__nn_is_batch_norm(c) && is_a(m->children[i + 1], "ReLU")) {
            x = clg__nn_batch_norm_relu(c, x, NULL);
            i++;
        } else {
            x = clg_module_forward(c, x);
        }
    }
    return x;
}

static const clg_module_i sequential_i = {.type = "Sequential", .forward = sequential_forward};

clg_module *clg_nn_sequential(clg_device *dev, int n, clg_module *const *layers)
{
    clg_module *seq = clg_module_new(dev, &sequential_i, NULL);
    bool ok = seq != NULL && n >= 0 && (n == 0 || layers);
    if (seq && !ok) clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_nn_sequential: %d layers", n);
    for (int i = 0; ok && i < n; i++) {
        if (!layers[i]) {
            clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_nn_sequential: layer %d is NULL", i);
            ok = false;
        } else {
            ok = clg_sequential_append(seq, NULL, layers[i]) == CLG_OK;
        }
        if (!ok) /* the layers not yet adopted are freed with the container's */
            for (int j = i + (layers[i] ? 0 : 1); j < n; j++) clg_module_free(layers[j]);
    }
    if (!ok) {
        clg_module_free(seq);
        return NULL;
    }
    return seq;
}

clg_status clg_sequential_append(clg_module *seq, const char *name, clg_module *layer)
{
    if (!seq) return CLG_ERR_INVALID_ARGUMENT;
    char index[24];
    snprintf(index, sizeof index, "%d", seq->nchildren);
    return clg_module_add_child(seq, name ? name : index, layer);
}
