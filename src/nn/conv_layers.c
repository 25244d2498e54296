/* conv_layers.c: Conv2d and the pooling layers (NCHW). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "nn_impl.h"

typedef struct conv_data {
    int64_t in, out;
    int kh, kw;
    clg_conv2d_params p;
} conv_data;

static clg_tensor *conv_forward(clg_module *m, clg_tensor *x)
{
    const conv_data *d = m->data;
    return clg_conv2d(x, clg_module_param(m, "weight"), clg_module_param(m, "bias"), &d->p);
}

static int or1(int v) { return v > 0 ? v : 1; }

static void conv_describe(const clg_module *m, char *buf, size_t len)
{
    const conv_data *d = m->data;
    snprintf(buf, len, "%lld, %lld, kernel_size=(%d, %d), stride=(%d, %d), padding=(%d, %d)", (long long)d->in,
             (long long)d->out, d->kh, d->kw, or1(d->p.stride[0]), or1(d->p.stride[1]), d->p.padding[0],
             d->p.padding[1]);
}

static const clg_module_i conv_i = {"Conv2d", conv_forward, conv_describe, free};

clg_module *clg_nn_conv2d(clg_device *dev, int64_t in, int64_t out, int kh, int kw, const clg_conv2d_params *p,
                          bool bias)
{
    if (!dev) return NULL;
    clg_conv2d_params q = p ? *p : (clg_conv2d_params){{1, 1}, {0, 0}, {1, 1}, 1};
    int groups = or1(q.groups);
    if (in <= 0 || out <= 0 || kh <= 0 || kw <= 0 || in % groups || out % groups) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_nn_conv2d: %lld -> %lld channels, kernel %dx%d, %d groups",
                  (long long)in, (long long)out, kh, kw, groups);
        return NULL;
    }
    conv_data *d = malloc(sizeof *d);
    clg_module *m = d ? clg_module_new(dev, &conv_i, d) : NULL;
    if (!m) {
        free(d);
        return NULL;
    }
    *d = (conv_data){in, out, kh, kw, q};
    /* its program with a step's first ones, where they are built ahead (src/tensor/ahead.c) */
    clg__programs_ahead(dev, CLG_F32, "conv");
    /* PyTorch: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in/groups * kh * kw */
    double bound = 1.0 / sqrt((double)(in / groups * kh * kw));
    clg_tensor *w = clg__nn_uniform_param(dev, CLG_SHAPE(out, in / groups, kh, kw), bound);
    clg_status st = clg_module_add_param(m, "weight", w);
    if (st != CLG_OK) clg__tensor_release(w);
    if (st == CLG_OK && bias) {
        clg_tensor *b = clg__nn_uniform_param(dev, CLG_SHAPE(out), bound);
        if ((st = clg_module_add_param(m, "bias", b)) != CLG_OK) clg__tensor_release(b);
    }
    if (st != CLG_OK) {
        clg_module_free(m);
        return NULL;
    }
    return m;
}

/* ---- pooling ------------------------------------------------------------------------------------ */

typedef struct pool_data { int k, s, p; } pool_data;

static clg_tensor *max_pool_forward(clg_module *m, clg_tensor *x)
{
    const pool_data *d = m->data;
    return clg_max_pool2d(x, d->k, d->k, d->s, d->s, d->p, d->p);
}

static clg_tensor *avg_pool_forward(clg_module *m, clg_tensor *x)
{
    const pool_data *d = m->data;
    return clg_avg_pool2d(x, d->k, d->k, d->s, d->s, d->p, d->p, true);
}

static clg_tensor *global_pool_forward(clg_module *m, clg_tensor *x)
{
    (void)m;
    return clg_global_avg_pool2d(x);
}

static void pool_describe(const clg_module *m, char *buf, size_t len)
{
    const pool_data *d = m->data;
    snprintf(buf, len, "kernel_size=%d, stride=%d, padding=%d", d->k, d->s, d->p);
}

static const clg_module_i max_pool_i = {"MaxPool2d", max_pool_forward, pool_describe, free};
static const clg_module_i avg_pool_i = {"AvgPool2d", avg_pool_forward, pool_describe, free};
static const clg_module_i global_pool_i = {"AdaptiveAvgPool2d", global_pool_forward, NULL, free};

static clg_module *pool(clg_device *dev, const clg_module_i *iface, int k, int s, int p)
{
    if (!dev) return NULL;
    if (k <= 0 || s < 0 || p < 0 || 2 * p > k) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: kernel %d, stride %d, padding %d", iface->type, k, s, p);
        return NULL;
    }
    pool_data *d = malloc(sizeof *d);
    clg_module *m = d ? clg_module_new(dev, iface, d) : NULL;
    if (!m) {
        free(d);
        return NULL;
    }
    *d = (pool_data){k, s ? s : k, p};   /* PyTorch: stride defaults to the kernel size */
    return m;
}

clg_module *clg_nn_max_pool2d(clg_device *dev, int k, int s, int p) { return pool(dev, &max_pool_i, k, s, p); }
clg_module *clg_nn_avg_pool2d(clg_device *dev, int k, int s, int p) { return pool(dev, &avg_pool_i, k, s, p); }
clg_module *clg_nn_global_avg_pool2d(clg_device *dev) { return pool(dev, &global_pool_i, 1, 1, 0); }
