/* resnet_blocks.c: torchvision's residual blocks, BasicBlock and Bottleneck, made of
 * Conv2d and BatchNorm2d children so that their state_dict names are torchvision's. */
#include <stdio.h>
#include <stdlib.h>

#include "nn_impl.h"

typedef struct block_data {
    int64_t in_planes, planes;
    int stride;
    int expansion;   /* 1: BasicBlock, 4: Bottleneck */
} block_data;

/* conv -> bn, then relu (as one op with the batch norm: clg__nn_batch_norm_relu) */
static clg_tensor *conv_bn_relu(clg_module *m, const char *conv, const char *bn, clg_tensor *x)
{
    return clg__nn_batch_norm_relu(clg_module_child(m, bn), clg_module_forward(clg_module_child(m, conv), x), NULL);
}

static clg_tensor *block_forward(clg_module *m, clg_tensor *x)
{
    const block_data *d = m->data;
    if (x->ndim != 4 || x->shape[1] != d->in_planes)
        return clg__op_fail(m->dev, CLG_ERR_SHAPE, m->iface->type, "input %s (expected [N, %lld, H, W])", CLG_DESC(x),
                            (long long)d->in_planes);
    clg_tensor *y = conv_bn_relu(m, "conv1", "bn1", x);
    if (d->expansion == 4) y = conv_bn_relu(m, "conv2", "bn2", y);
    const char *last = d->expansion == 1 ? "2" : "3";
    char conv[8], bn[8];
    snprintf(conv, sizeof conv, "conv%s", last);
    snprintf(bn, sizeof bn, "bn%s", last);
    y = clg_module_forward(clg_module_child(m, conv), y);
    clg_module *down = clg_module_child(m, "downsample");
    clg_tensor *shortcut = down ? clg_module_forward(down, x) : x;
    /* relu(bn(y) + shortcut) as one op; differentiable in both operands: the gradient
     * reaches x through the main path and through the shortcut, and the two add up at x */
    return clg__nn_batch_norm_relu(clg_module_child(m, bn), y, shortcut);
}

static void block_describe(const clg_module *m, char *buf, size_t len)
{
    const block_data *d = m->data;
    snprintf(buf, len, "%lld, %lld, stride=%d, out=%lld%s", (long long)d->in_planes, (long long)d->planes, d->stride,
             (long long)(d->planes * d->expansion), clg_module_child(m, "downsample") ? ", downsample" : "");
}

static const clg_module_i basic_i = {"BasicBlock", block_forward, block_describe, free};
static const clg_module_i bottleneck_i = {"Bottleneck", block_forward, block_describe, free};

/* A bias-free k x k conv of the given stride and padding, Kaiming-normal (fan_out, relu)
 * as torchvision's ResNet initialises its convs (the default Kaiming-uniform
 * clg_nn_conv2d drew is overwritten). */
static clg_module *conv(clg_device *dev, int64_t in, int64_t out, int k, int stride, int pad)
{
    clg_conv2d_params p = {{stride, stride}, {pad, pad}, {1, 1}, 1};
    clg_module *c = clg_nn_conv2d(dev, in, out, k, k, &p, false);
    if (c && clg_init_kaiming_normal(clg_module_param(c, "weight"), 0, CLG_FAN_OUT, CLG_GAIN_RELU) != CLG_OK) {
        clg_module_free(c);
        return NULL;
    }
    return c;
}

/* Adopts child as `name` of m; false when it could not be made or added (then freed). */
static bool adopt(clg_module *m, const char *name, clg_module *child)
{
    if (child && clg_module_add_child(m, name, child) == CLG_OK) return true;
    clg_module_free(child);
    return false;
}

/* downsample = Sequential(1x1 conv of stride s, BatchNorm2d) onto out channels. */
static clg_module *downsample(clg_device *dev, int64_t in, int64_t out, int stride)
{
    clg_module *layers[2] = {conv(dev, in, out, 1, stride, 0), clg_nn_batch_norm2d(dev, out, 0, 0)};
    return clg_nn_sequential(dev, 2, layers);
}

/* The children in torchvision's order (its state_dict order). BatchNorm2d starts at
 * weight 1, bias 0, what torchvision's ResNet sets with constant_. */
static bool block_children(clg_module *m, const block_data *d, bool want_down)
{
    clg_device *dev = m->dev;
    int64_t in = d->in_planes, w = d->planes, out = d->planes * d->expansion;
    bool basic = d->expansion == 1, ok;
    /* BasicBlock: 3x3 (stride s), 3x3; Bottleneck: 1x1, 3x3 (stride s), 1x1 to out */
    ok = adopt(m, "conv1", basic ? conv(dev, in, w, 3, d->stride, 1) : conv(dev, in, w, 1, 1, 0)) &&
         adopt(m, "bn1", clg_nn_batch_norm2d(dev, w, 0, 0)) &&
         adopt(m, "conv2", conv(dev, w, w, 3, basic ? 1 : d->stride, 1)) &&
         adopt(m, "bn2", clg_nn_batch_norm2d(dev, w, 0, 0));
    if (ok && !basic)
        ok = adopt(m, "conv3", conv(dev, w, out, 1, 1, 0)) && adopt(m, "bn3", clg_nn_batch_norm2d(dev, out, 0, 0));
    /* the sum needs the shortcut in the main path's shape: a strided or widening block
     * cannot add x itself */
    if (ok && (want_down || d->stride != 1 || in != out))
        ok = adopt(m, "downsample", downsample(dev, in, out, d->stride));
    return ok;
}

static clg_module *block(clg_device *dev, const clg_module_i *iface, int expansion, int64_t in_planes, int64_t planes,
                         int stride, bool want_down)
{
    if (!dev) return NULL;
    if (in_planes <= 0 || planes <= 0 || stride <= 0 || planes > INT64_MAX / expansion) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: in_planes %lld, planes %lld, stride %d (positive ones wanted)",
                  expansion == 1 ? "clg_nn_basic_block" : "clg_nn_bottleneck", (long long)in_planes, (long long)planes,
                  stride);
        return NULL;
    }
    block_data *d = malloc(sizeof *d);
    clg_module *m = d ? clg_module_new(dev, iface, d) : NULL;
    if (!m) {
        free(d);
        return NULL;
    }
    *d = (block_data){in_planes, planes, stride, expansion};
    if (!block_children(m, d, want_down)) {
        clg_module_free(m);
        return NULL;
    }
    return m;
}

clg_module *clg_nn_basic_block(clg_device *dev, int64_t in_planes, int64_t planes, int stride, bool downsample)
{
    return block(dev, &basic_i, 1, in_planes, planes, stride, downsample);
}

clg_module *clg_nn_bottleneck(clg_device *dev, int64_t in_planes, int64_t planes, int stride, bool downsample)
{
    return block(dev, &bottleneck_i, 4, in_planes, planes, stride, downsample);
}
