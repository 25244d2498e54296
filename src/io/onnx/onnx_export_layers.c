/* onnx_export_layers.c: the ONNX nodes of the dense, convolution, pooling, norm and
 * joining kinds (model_kind_dense.c, _conv, _norm, _join), on the value x[0] of the
 * layer's input (of sample shape ndim / in), or on x[0 .. ninputs) for a join. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

#define unary ox_unary
#define binary ox_binary

const char *ox_layer_linear(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                            const int64_t *in)
{
    (void)in;
    return ox_linear(g, net, l->name, x[0], ndim == 1);
}

const char *ox_layer_conv2d(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                            const int64_t *in)
{
    (void)ndim, (void)in;
    return ox_conv(g, net, l->name, x[0], 2, l->kernel, l->stride, l->padding, l->dilation, l->groups, l->bias);
}

const char *ox_layer_conv1d(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                            const int64_t *in)
{
    (void)ndim, (void)in;
    return ox_conv(g, net, l->name, x[0], 1, l->kernel, l->stride, l->padding, l->dilation, l->groups, l->bias);
}

const char *ox_layer_conv_transpose2d(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x,
                                      int ndim, const int64_t *in)
{
    (void)ndim, (void)in;
    const char *p = l->name;
    const char *ins[3] = {x[0], ox_weight_init(g, net, p, "weight"), l->bias ? ox_weight_init(g, net, p, "bias") : ""};
    const char *y = ox_op(g, "ConvTranspose", l->bias ? 3 : 2, ins, p);
    ox_attr_ints(g, "kernel_shape", 2, l->kernel);
    ox_attr_ints(g, "strides", 2, l->stride);
    ox_attr_ints(g, "pads", 4, (int64_t[]){l->padding[0], l->padding[1], l->padding[0], l->padding[1]});
    ox_attr_ints(g, "output_padding", 2, l->output_padding);
    ox_attr_ints(g, "dilations", 2, l->dilation);
    ox_attr_i(g, "group", l->groups);
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

const char *ox_layer_max_pool2d(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                                const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    return pool(g, "MaxPool", l, x[0]);
}

const char *ox_layer_avg_pool2d(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                                const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    return pool(g, "AveragePool", l, x[0]);
}

const char *ox_layer_global_avg_pool2d(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x,
                                       int ndim, const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    return unary(g, "GlobalAveragePool", x[0], l->name);
}

/* upsample to [floor(H scale), floor(W scale)]: Resize to those sizes, so that the
 * source coordinates use out / in as clgrad does (nearest: floor(j in / out); bilinear:
 * (j + 0.5) in / out - 0.5). The sizes take the batch and channels from x's shape. */
const char *ox_layer_upsample(ox_graph *g, clg_module *net, const model_layer *l, const char *const *xs, int ndim,
                              const int64_t *in)
{
    (void)net, (void)ndim;
    const char *p = l->name, *x = xs[0];
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

const char *ox_layer_batch_norm(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                                const int64_t *in)
{
    (void)ndim, (void)in;
    return ox_batch_norm(g, net, l->name, x[0], l->eps);
}

const char *ox_layer_layer_norm(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                                const int64_t *in)
{
    (void)ndim, (void)in;
    return ox_layer_norm(g, net, l->name, x[0], l->dims, l->eps);
}

/* group_norm as torch.onnx.export writes it below opset 18: InstanceNormalization of
 * [N, G, rest] (scale 1, bias 0), back to x's shape, then the per-channel affine. */
const char *ox_layer_group_norm(ox_graph *g, clg_module *net, const model_layer *l, const char *const *xs, int ndim,
                                const int64_t *in)
{
    const char *p = l->name, *x = xs[0];
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

/* the identity in inference (training_mode false); kept for import and fine-tuning */
const char *ox_layer_dropout(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                             const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    return l->p > 0 ? binary(g, "Dropout", x[0], ox_scalar(g, (float)l->p), l->name) : x[0];
}

const char *ox_layer_flatten(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                             const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    const char *y = unary(g, "Flatten", x[0], l->name);
    ox_attr_i(g, "axis", 1);
    return y;
}

const char *ox_layer_embedding(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                               const int64_t *in)
{
    (void)ndim, (void)in;
    return binary(g, "Gather", ox_weight_init(g, net, l->name, "weight"), x[0], l->name);
}

/* the sum of the inputs, in order */
const char *ox_layer_add(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                         const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    const char *y = x[0];
    for (int k = 1; k < l->ninputs; k++) y = binary(g, "Add", y, x[k], l->name);
    return y;
}

/* joined on a sample axis: the batch's comes first */
const char *ox_layer_concat(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                            const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    const char *y = ox_op(g, "Concat", l->ninputs, x, l->name);
    ox_attr_i(g, "axis", l->axis + 1);
    return y;
}
