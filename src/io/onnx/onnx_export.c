/* onnx_export.c: a model file's network as an ONNX graph. Each layer becomes the nodes
 * that compute what its module computes in evaluation mode, on the value its input
 * layer gave; weights are read from the network as they are now. */
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

/* gelu_tanh: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), node for node as
 * torch.onnx.export writes GELU(approximate="tanh") (which import reads back). */
static const char *gelu_tanh(ox_graph *g, const char *x, const char *p)
{
    const char *x3 = binary(g, "Mul", x, binary(g, "Mul", x, x, p), p);
    const char *u = binary(g, "Add", x, binary(g, "Mul", ox_scalar(g, 0.044715f), x3, p), p);
    const char *t = unary(g, "Tanh", binary(g, "Mul", ox_scalar(g, 0.7978845608028654f), u, p), p);
    return binary(g, "Mul", ox_scalar(g, 0.5f), binary(g, "Mul", x, binary(g, "Add", ox_scalar(g, 1), t, p), p), p);
}

/* softplus(x) = log(1 + exp(beta x)) / beta, x itself where beta x > threshold. */
static const char *softplus(ox_graph *g, const model_layer *l, const char *x)
{
    /* beta 1 and a threshold of 15 or more: ONNX's Softplus, the same float32 values
     * (past the threshold log(1 + e^x) - x < e^-15 x, under half an ulp), and imported back */
    if (l->beta == 1 && l->threshold >= 15) return unary(g, "Softplus", x, l->name);
    const char *bx = binary(g, "Mul", x, ox_scalar(g, (float)l->beta), l->name);
    const char *sp = binary(g, "Div", unary(g, "Softplus", bx, l->name), ox_scalar(g, (float)l->beta), l->name);
    const char *in[3] = {binary(g, "Greater", bx, ox_scalar(g, (float)l->threshold), l->name), x, sp};
    return ox_op(g, "Where", 3, in, l->name);
}

/* group_norm as torch.onnx.export writes it below opset 18: InstanceNormalization of
 * [N, G, rest] (scale 1, bias 0), back to x's shape, then the per-channel affine. */
static const char *group_norm(ox_graph *g, clg_module *net, const model_layer *l, const char *x, int ndim,
                              const int64_t *in)
{
    const char *p = l->name;
    char name[256];
    float *ones = malloc((size_t)l->groups * sizeof *ones), *zeros = calloc((size_t)l->groups, sizeof *zeros);
    for (int64_t i = 0; ones && i < l->groups; i++) ones[i] = 1;
    snprintf(name, sizeof name, "%s.onnx_groups_shape", p);
    const char *shape = ox_init_i64(g, name, 1, (int64_t[]){3}, (int64_t[]){0, l->groups, -1});
    snprintf(name, sizeof name, "%s.onnx_ones", p);
    const char *s = ones && zeros ? ox_init_f32(g, name, 1, &l->groups, ones) : NULL;
    snprintf(name, sizeof name, "%s.onnx_zeros", p);
    const char *z = ones && zeros ? ox_init_f32(g, name, 1, &l->groups, zeros) : NULL;
    free(ones);
    free(zeros);
    if (!s || !z) g->oom = true;
    const char *in3[3] = {binary(g, "Reshape", x, shape, p), s, z};
    const char *y = ox_op(g, "InstanceNormalization", 3, in3, p);
    ox_attr_f(g, "epsilon", (float)l->eps);
    y = binary(g, "Reshape", y, unary(g, "Shape", x, p), p);
    /* weight and bias [C] as [C, 1, ...] against [N, C, ...] */
    int64_t dims[CLG_MAX_DIMS] = {in[0]};
    for (int i = 1; i < ndim; i++) dims[i] = 1;
    const char *wb[2];
    for (int k = 0; k < 2; k++) {
        snprintf(name, sizeof name, "%s.%s", p, k ? "bias" : "weight");
        float *w = ox_weight(net, name, NULL, 1, NULL);
        snprintf(name, sizeof name, "%s.onnx_%s", p, k ? "bias" : "weight");
        wb[k] = w ? ox_init_f32(g, name, ndim, dims, w) : NULL;
        free(w);
    }
    return binary(g, "Add", binary(g, "Mul", y, wb[0], p), wb[1], p);
}

/* upsample to [floor(H scale), floor(W scale)]: Resize to those sizes, so that the
 * source coordinates use out / in as clgrad does (nearest: floor(j in / out); bilinear:
 * (j + 0.5) in / out - 0.5). The sizes take the batch and channels from x's shape. */
static const char *upsample(ox_graph *g, const model_layer *l, const char *x, const int64_t *in)
{
    const char *p = l->name;
    char name[256];
    if (l->scale == floor(l->scale)) {   /* a whole scale: by scales, as torch.onnx.export writes it */
        snprintf(name, sizeof name, "%s.onnx_scales", p);
        float sc[4] = {1, 1, (float)l->scale, (float)l->scale};
        const char *y = ox_op(g, "Resize", 3, (const char *[]){x, "", ox_init_f32(g, name, 1, (int64_t[]){4}, sc)}, p);
        ox_attr_s(g, "mode", l->bilinear ? "linear" : "nearest");
        ox_attr_s(g, "coordinate_transformation_mode", l->bilinear ? "half_pixel" : "asymmetric");
        if (!l->bilinear) ox_attr_s(g, "nearest_mode", "floor");
        return y;
    }
    int64_t hw[2] = {(int64_t)floor((double)in[1] * l->scale), (int64_t)floor((double)in[2] * l->scale)};
    snprintf(name, sizeof name, "%s.onnx_out_hw", p);
    const char *out_hw = ox_init_i64(g, name, 1, (int64_t[]){2}, hw);
    snprintf(name, sizeof name, "%s.onnx_0", p);
    const char *zero = ox_init_i64(g, name, 1, (int64_t[]){1}, (int64_t[]){0});
    snprintf(name, sizeof name, "%s.onnx_2", p);
    const char *two = ox_init_i64(g, name, 1, (int64_t[]){1}, (int64_t[]){2});
    const char *nc = ox_op(g, "Slice", 3, (const char *[]){ox_unary(g, "Shape", x, p), zero, two}, p);
    const char *sizes = ox_binary(g, "Concat", nc, out_hw, p);
    ox_attr_i(g, "axis", 0);
    const char *y = ox_op(g, "Resize", 4, (const char *[]){x, "", "", sizes}, p);
    ox_attr_s(g, "mode", l->bilinear ? "linear" : "nearest");
    ox_attr_s(g, "coordinate_transformation_mode", l->bilinear ? "half_pixel" : "asymmetric");
    if (!l->bilinear) ox_attr_s(g, "nearest_mode", "floor");
    return y;
}

static const char *pool(ox_graph *g, const char *op, const model_layer *l, const char *x)
{
    const char *y = unary(g, op, x, l->name);
    ox_attr_ints(g, "kernel_shape", 2, (int64_t[]){l->kernel[0], l->kernel[0]});
    ox_attr_ints(g, "strides", 2, (int64_t[]){l->stride[0], l->stride[0]});
    ox_attr_ints(g, "pads", 4, (int64_t[]){l->padding[0], l->padding[0], l->padding[0], l->padding[0]});
    if (!strcmp(op, "AveragePool")) ox_attr_i(g, "count_include_pad", 1);
    return y;
}

/* n inputs summed (add) or joined on a sample axis (concat). */
static const char *join(ox_graph *g, const model_layer *l, const char *const *ins)
{
    if (l->kind == LK_CONCAT) {
        const char *y = ox_op(g, "Concat", l->ninputs, ins, l->name);
        ox_attr_i(g, "axis", l->axis + 1);
        return y;
    }
    const char *y = ins[0];
    for (int k = 1; k < l->ninputs; k++) y = binary(g, "Add", y, ins[k], l->name);
    return y;
}

static const char *layer(ox_graph *g, clg_module *net, const model_layer *l, const char *x, int ndim, const int64_t *in)
{
    const char *p = l->name;
    switch (l->kind) {
    case LK_LINEAR: return ox_linear(g, net, p, x, ndim == 1);
    case LK_CONV2D: return ox_conv(g, net, p, x, 2, l->kernel, l->stride, l->padding, l->dilation, l->groups, l->bias);
    case LK_CONV1D: return ox_conv(g, net, p, x, 1, l->kernel, l->stride, l->padding, l->dilation, l->groups, l->bias);
    case LK_CONV_T2D: {
        const char *ins[3] = {x, ox_weight_init(g, net, p, "weight"), l->bias ? ox_weight_init(g, net, p, "bias") : ""};
        const char *y = ox_op(g, "ConvTranspose", l->bias ? 3 : 2, ins, p);
        ox_attr_ints(g, "kernel_shape", 2, l->kernel);
        ox_attr_ints(g, "strides", 2, l->stride);
        ox_attr_ints(g, "pads", 4, (int64_t[]){l->padding[0], l->padding[1], l->padding[0], l->padding[1]});
        ox_attr_ints(g, "output_padding", 2, l->output_padding);
        ox_attr_ints(g, "dilations", 2, l->dilation);
        ox_attr_i(g, "group", l->groups);
        return y;
    }
    case LK_MAX_POOL: return pool(g, "MaxPool", l, x);
    case LK_AVG_POOL: return pool(g, "AveragePool", l, x);
    case LK_GLOBAL_POOL: return unary(g, "GlobalAveragePool", x, p);
    case LK_BN1: case LK_BN2: return ox_batch_norm(g, net, p, x, l->eps);
    case LK_LAYER_NORM: return ox_layer_norm(g, net, p, x, l->dims, l->eps);
    case LK_DROPOUT:   /* the identity in inference (training_mode false); kept for import and fine-tuning */
        return l->p > 0 ? binary(g, "Dropout", x, ox_scalar(g, (float)l->p), p) : x;
    case LK_FLATTEN: {
        const char *y = unary(g, "Flatten", x, p);
        ox_attr_i(g, "axis", 1);
        return y;
    }
    case LK_RELU: return unary(g, "Relu", x, p);
    case LK_SIGMOID: return unary(g, "Sigmoid", x, p);
    case LK_TANH: return unary(g, "Tanh", x, p);
    case LK_LEAKY_RELU: case LK_ELU: {
        const char *y = unary(g, l->kind == LK_ELU ? "Elu" : "LeakyRelu", x, p);
        ox_attr_f(g, "alpha", (float)(l->kind == LK_ELU ? l->alpha : l->slope));
        return y;
    }
    case LK_GELU: return ox_gelu(g, x, p);
    case LK_GELU_TANH: return gelu_tanh(g, x, p);
    case LK_SILU: return binary(g, "Mul", x, unary(g, "Sigmoid", x, p), p);
    case LK_SOFTPLUS: return softplus(g, l, x);
    case LK_SOFTMAX: {
        const char *y = unary(g, "Softmax", x, p);
        ox_attr_i(g, "axis", -1);
        return y;
    }
    case LK_EMBEDDING: return binary(g, "Gather", ox_weight_init(g, net, p, "weight"), x, p);
    case LK_GROUP_NORM: return group_norm(g, net, l, x, ndim, in);
    case LK_UPSAMPLE: return upsample(g, l, x, in);
    case LK_MHA: return ox_attention(g, net, p, x, in[ndim - 1], l->heads, l->causal, false);
    case LK_TRANSFORMER: return ox_export_transformer(g, net, l, x, in[ndim - 1]);
    case LK_GPT: return ox_export_gpt(g, net, l, x, in[0]);
    case LK_RNN: case LK_LSTM: case LK_GRU: return ox_export_rnn(g, net, l, p, x, in[ndim - 1]);
    case LK_BASIC_BLOCK: case LK_BOTTLENECK: return ox_export_blocks(g, net, l, x, in[0]);
    default:
        clg__fail(g->dev, CLG_ERR_UNSUPPORTED, "clg_module_export_onnx: layer \"%s\" (%s) has no ONNX export", l->name,
                  model_kind_name(l->kind));
        return NULL;
    }
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
        y = vals[i] = l->kind == LK_ADD || l->kind == LK_CONCAT ? join(g, l, ins) : layer(g, net, l, ins[0], ndim, shape);
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
