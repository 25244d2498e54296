/* onnx_export_blocks.c: torchvision's residual blocks (basic_block, bottleneck) as the
 * nodes of their forward: convolutions with batch norm and ReLU on the main path, the
 * shortcut (x, or downsample's 1x1 convolution and batch norm), their sum, a ReLU. */
#include <stdio.h>

#include "onnx_impl.h"

static const char *conv_bn(ox_graph *g, clg_module *net, const char *block, const char *conv, const char *bn,
                           const char *x, int64_t k, int64_t stride, int64_t pad)
{
    char cp[320], bp[320];
    snprintf(cp, sizeof cp, "%s.%s", block, conv);
    snprintf(bp, sizeof bp, "%s.%s", block, bn);
    int64_t kk[2] = {k, k}, s[2] = {stride, stride}, p[2] = {pad, pad}, d[2] = {1, 1};
    return ox_batch_norm(g, net, bp, ox_conv(g, net, cp, x, 2, kk, s, p, d, 1, false), 1e-5);
}

static const char *relu(ox_graph *g, const char *x, const char *hint) { return ox_op(g, "Relu", 1, &x, hint); }

static const char *one_block(ox_graph *g, clg_module *net, const char *b, bool bottle, int64_t stride, const char *x)
{
    const char *y;
    if (bottle) {
        y = relu(g, conv_bn(g, net, b, "conv1", "bn1", x, 1, 1, 0), b);
        y = relu(g, conv_bn(g, net, b, "conv2", "bn2", y, 3, stride, 1), b);
        y = conv_bn(g, net, b, "conv3", "bn3", y, 1, 1, 0);
    } else {
        y = relu(g, conv_bn(g, net, b, "conv1", "bn1", x, 3, stride, 1), b);
        y = conv_bn(g, net, b, "conv2", "bn2", y, 3, 1, 1);
    }
    char dn[320];
    snprintf(dn, sizeof dn, "%s.downsample.0.weight", b);
    const char *id = clg_module_find(net, dn) ? conv_bn(g, net, b, "downsample.0", "downsample.1", x, 1, stride, 0) : x;
    const char *in[2] = {y, id};
    return relu(g, ox_op(g, "Add", 2, in, b), b);
}

const char *ox_layer_residual(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                              const int64_t *in)
{
    (void)ndim, (void)in;
    const char *y = x[0];
    for (int64_t i = 0; y && i < l->repeat; i++) {
        char b[256];
        if (l->repeat == 1) snprintf(b, sizeof b, "%s", l->name);
        else snprintf(b, sizeof b, "%s.%lld", l->name, (long long)i);
        y = one_block(g, net, b, l->kind == &mk_bottleneck, i ? 1 : l->stride[0], y);
    }
    return y;
}
