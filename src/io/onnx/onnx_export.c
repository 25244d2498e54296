/* onnx_export.c: a model file's network as an ONNX graph. Each layer becomes the nodes
 * that compute what its module computes in evaluation mode (its kind's onnx function,
 * onnx_export_layers.c and the others), on the values its input layers gave; weights are
 * read from the network as they are now. Here: the walk over the layers, the file, and
 * the nodes several kinds share. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "last_error.h"
#include "onnx_impl.h"

float *ox_weight(clg_module *net, const char *name, int64_t *numel, int ndim_want, int64_t *dims)
{
    clg_device *dev = clg_module_device(net);
    clg_tensor *t = clg_module_find(net, name);
    if (!t) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_module_export_onnx: the network has no tensor \"%s\" (was it built from this model?)", name);
        return NULL;
    }
    if (ndim_want >= 0 && clg_tensor_ndim(t) != ndim_want) {
        clg__fail(dev, CLG_ERR_SHAPE, "clg_module_export_onnx: %s has %d axes, %d expected", name, clg_tensor_ndim(t), ndim_want);
        return NULL;
    }
    if (dims) memcpy(dims, clg_tensor_shape(t), (size_t)clg_tensor_ndim(t) * sizeof *dims);
    int64_t n = clg_tensor_numel(t);
    float *h = malloc((size_t)(n ? n : 1) * sizeof *h);
    clg_scope_begin(dev);
    clg_tensor *f = clg_tensor_dtype(t) == CLG_F32 ? t : clg_cast(t, CLG_F32);
    clg_status st = h && f ? clg_tensor_to_host(f, h, (size_t)n * sizeof *h) : CLG_ERR_OUT_OF_MEMORY;
    clg_scope_end(dev);
    if (st != CLG_OK) {
        if (!h) clg__fail(dev, st, "clg_module_export_onnx: out of host memory reading %s", name);
        free(h);
        return NULL;
    }
    if (numel) *numel = n;
    return h;
}

const char *ox_weight_init(ox_graph *g, clg_module *net, const char *prefix, const char *what)
{
    char name[256];
    snprintf(name, sizeof name, "%s.%s", prefix, what);
    int64_t dims[CLG_MAX_DIMS];
    float *w = ox_weight(net, name, NULL, -1, dims);
    const char *r = w ? ox_init_f32(g, name, clg_tensor_ndim(clg_module_find(net, name)), dims, w) : NULL;
    free(w);
    return r;
}

const char *ox_conv(ox_graph *g, clg_module *net, const char *prefix, const char *x, int dims, const int64_t *kernel,
                    const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups, bool bias)
{
    const char *in[3] = {x, ox_weight_init(g, net, prefix, "weight"), bias ? ox_weight_init(g, net, prefix, "bias") : ""};
    const char *y = ox_op(g, "Conv", bias ? 3 : 2, in, prefix);
    int64_t pads[4] = {padding[0], dims > 1 ? padding[1] : 0, padding[0], dims > 1 ? padding[1] : 0};
    if (dims == 1) pads[1] = padding[0];
    ox_attr_ints(g, "kernel_shape", dims, kernel);
    ox_attr_ints(g, "strides", dims, stride);
    ox_attr_ints(g, "pads", 2 * dims, pads);
    ox_attr_ints(g, "dilations", dims, dilation);
    ox_attr_i(g, "group", groups);
    return y;
}

const char *ox_layer_norm(ox_graph *g, clg_module *net, const char *p, const char *x, int64_t dims, double eps)
{
    char name[256];
    snprintf(name, sizeof name, "%s.bias", p);
    bool bias = clg_module_find(net, name) != NULL;   /* nanoGPT's bias=False has none */
    const char *ins[3] = {x, ox_weight_init(g, net, p, "weight"), bias ? ox_weight_init(g, net, p, "bias") : ""};
    const char *y = ox_op(g, "LayerNormalization", bias ? 3 : 2, ins, p);
    ox_attr_i(g, "axis", -dims);
    ox_attr_f(g, "epsilon", (float)eps);
    return y;
}

const char *ox_batch_norm(ox_graph *g, clg_module *net, const char *prefix, const char *x, double eps)
{
    const char *in[5] = {x, ox_weight_init(g, net, prefix, "weight"), ox_weight_init(g, net, prefix, "bias"),
                         ox_weight_init(g, net, prefix, "running_mean"), ox_weight_init(g, net, prefix, "running_var")};
    const char *y = ox_op(g, "BatchNormalization", 5, in, prefix);
    ox_attr_f(g, "epsilon", (float)eps);
    return y;
}

const char *ox_linear(ox_graph *g, clg_module *net, const char *p, const char *x, bool gemm)
{
    char name[256];
    snprintf(name, sizeof name, "%s.bias", p);
    bool bias = clg_module_find(net, name) != NULL;
    if (gemm) {
        const char *in[3] = {x, ox_weight_init(g, net, p, "weight"), bias ? ox_weight_init(g, net, p, "bias") : ""};
        const char *y = ox_op(g, "Gemm", bias ? 3 : 2, in, p);
        ox_attr_i(g, "transB", 1);
        return y;
    }
    snprintf(name, sizeof name, "%s.weight", p);
    int64_t d[2];
    float *w = ox_weight(net, name, NULL, 2, d), *wt = w ? malloc((size_t)(d[0] * d[1]) * sizeof *wt) : NULL;
    if (w && !wt) g->oom = true;
    for (int64_t i = 0; wt && i < d[0]; i++)
        for (int64_t j = 0; j < d[1]; j++) wt[j * d[0] + i] = w[i * d[1] + j];
    snprintf(name, sizeof name, "%s.weight_t", p);
    const char *in[2] = {x, wt ? ox_init_f32(g, name, 2, (int64_t[]){d[1], d[0]}, wt) : NULL};
    free(w);
    free(wt);
    const char *y = ox_op(g, "MatMul", 2, in, p);
    if (!bias) return y;
    const char *b[2] = {y, ox_weight_init(g, net, p, "bias")};
    return ox_op(g, "Add", 2, b, p);
}

#define unary ox_unary
#define binary ox_binary

/* gelu: x * 0.5 (1 + erf(x / sqrt 2)), in the order torch.onnx.export writes it. */
const char *ox_gelu(ox_graph *g, const char *x, const char *p)
{
    const char *e = unary(g, "Erf", binary(g, "Div", x, ox_scalar(g, (float)sqrt(2.0)), p), p);
    return binary(g, "Mul", binary(g, "Mul", x, binary(g, "Add", e, ox_scalar(g, 1), p), p), ox_scalar(g, 0.5f), p);
}

/* Each layer on the values its inputs gave ("input" for the model's); the last one's is
 * the output. */
static const char *export_layers(ox_graph *g, clg_module *net, const clg_model *m)
{
    const char **vals = calloc((size_t)m->nlayers, sizeof *vals);
    if (!vals) return g->oom = true, NULL;
    const char *y = NULL;
    for (int i = 0; i < m->nlayers; i++) {
        const model_layer *l = &m->layers[i];
        int n = l->ninputs ? l->ninputs : 1;
        const char *ins[MODEL_MAX_INPUTS];
        for (int k = 0; k < n; k++) {
            int from = l->ninputs ? l->inputs[k] : i - 1;
            ins[k] = from < 0 ? "input" : vals[from];
        }
        int from = l->ninputs ? l->inputs[0] : i - 1;
        int ndim = from < 0 ? m->in_ndim : m->layers[from].ndim;
        const int64_t *shape = from < 0 ? m->input : m->layers[from].shape;
        if (!l->kind->onnx) {
            clg__fail(g->dev, CLG_ERR_UNSUPPORTED, "clg_module_export_onnx: layer \"%s\" (%s) has no ONNX export", l->name,
                      l->kind->name);
            y = NULL;
            break;
        }
        y = vals[i] = l->kind->onnx(g, net, l, ins, ndim, shape);
        if (!y) break;
    }
    /* the output gets the name "output": an Identity of the last value */
    const char *out = y ? unary(g, "Identity", y, "output") : NULL;
    free(vals);
    return out;
}

clg_status ox_export_graph(ox_graph *g, clg_module *net, const clg_model *m)
{
    const char *y = export_layers(g, net, m);
    if (!y) return g->oom ? clg__fail(g->dev, CLG_ERR_OUT_OF_MEMORY, "clg_module_export_onnx: %s: out of host memory", g->path)
                          : clg_device_last_status(g->dev);
    char *out = ox_strdup(g, "output");   /* the last node's output is the graph's */
    if (!out) return clg__fail(g->dev, CLG_ERR_OUT_OF_MEMORY, "clg_module_export_onnx: %s: out of host memory", g->path);
    g->last->output[0] = out;
    return CLG_OK;
}

uint8_t *ox_export_bytes(ox_graph *g, const clg_model *m, size_t *len)
{
    const model_layer *last = &m->layers[m->nlayers - 1];
    return ox_graph_bytes(g, "input", model_takes_tokens(m) ? OX_INT64 : OX_FLOAT, m->in_ndim, m->input, "output",
                          last->ndim, last->shape, len);
}

clg_status clg_module_export_onnx(clg_module *net, const clg_model *m, const char *path)
{
    clg_device *dev = clg_module_device(net);
    if (!dev) return clg__last_error_set(CLG_ERR_INVALID_ARGUMENT, "clg_module_export_onnx: no network");
    if (!m || !path) return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_module_export_onnx: model %p, path %p", (void *)m, (void *)path);
    ox_graph g = {.dev = dev, .path = path, .seq_len = m->input[0]};
    char *json = clg_model_json(m);
    clg_status st = json ? ox_export_graph(&g, net, m)
                         : clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_module_export_onnx: %s: out of host memory", path);
    const model_layer *last = &m->layers[m->nlayers - 1];
    if (st == CLG_OK)
        st = ox_graph_write(&g, "input", model_takes_tokens(m) ? OX_INT64 : OX_FLOAT, m->in_ndim, m->input, "output",
                            last->ndim, last->shape, json);
    free(json);
    ox_graph_free(&g);
    return st;
}

bool clg_onnx_available(void) { return true; }
