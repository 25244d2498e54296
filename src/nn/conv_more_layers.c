/* conv_more_layers.c: Conv1d, ConvTranspose2d, Upsample and GroupNorm, with PyTorch's
 * parameter names, shapes and initialisation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "nn_impl.h"

static int or1(int v) { return v > 0 ? v : 1; }

/* A module with data d (freed with it) and uniform weight (and bias) of fan_in. */
static clg_module *with_params(clg_device *dev, const clg_module_i *iface, void *d, int wndim, const int64_t *wshape,
                               int64_t bias, int64_t fan_in)
{
    clg_module *m = d ? clg_module_new(dev, iface, d) : NULL;
    if (!m) {
        free(d);
        return NULL;
    }
    double bound = 1.0 / sqrt((double)fan_in);
    clg_tensor *w = clg__nn_uniform_param(dev, wndim, wshape, bound);
    clg_status st = clg_module_add_param(m, "weight", w);
    if (st != CLG_OK) clg__tensor_release(w);
    if (st == CLG_OK && bias) {
        clg_tensor *b = clg__nn_uniform_param(dev, 1, &bias, bound);
        if ((st = clg_module_add_param(m, "bias", b)) != CLG_OK) clg__tensor_release(b);
    }
    if (st == CLG_OK) return m;
    clg_module_free(m);
    return NULL;
}

/* ---- Conv1d ---------------------------------------------------------------------------------------- */

typedef struct conv1d_data { int64_t in, out; int k; clg_conv1d_params p; } conv1d_data;

static clg_tensor *conv1d_forward(clg_module *m, clg_tensor *x)
{
    return clg_conv1d(x, clg_module_param(m, "weight"), clg_module_param(m, "bias"), &((conv1d_data *)m->data)->p);
}

static void conv1d_describe(const clg_module *m, char *buf, size_t len)
{
    const conv1d_data *d = m->data;
    snprintf(buf, len, "%lld, %lld, kernel_size=(%d,), stride=(%d,), padding=(%d,)", (long long)d->in,
             (long long)d->out, d->k, or1(d->p.stride), d->p.padding);
}

static const clg_module_i conv1d_i = {"Conv1d", conv1d_forward, conv1d_describe, free};

clg_module *clg_nn_conv1d(clg_device *dev, int64_t in, int64_t out, int kernel, const clg_conv1d_params *p, bool bias)
{
    if (!dev) return NULL;
    clg_conv1d_params q = p ? *p : (clg_conv1d_params){0};
    int g = or1(q.groups);
    if (in <= 0 || out <= 0 || kernel <= 0 || in % g || out % g) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_nn_conv1d: %lld -> %lld channels, kernel %d, %d groups",
                  (long long)in, (long long)out, kernel, g);
        return NULL;
    }
    conv1d_data *d = malloc(sizeof *d);
    if (d) *d = (conv1d_data){in, out, kernel, q};
    return with_params(dev, &conv1d_i, d, CLG_SHAPE(out, in / g, kernel), bias ? out : 0, in / g * kernel);
}

/* ---- ConvTranspose2d: weight [in, out/groups, kh, kw], fan_in as PyTorch computes it ------------ */

typedef struct convt_data { int64_t in, out; int kh, kw; clg_conv_transpose2d_params p; } convt_data;

static clg_tensor *convt_forward(clg_module *m, clg_tensor *x)
{
    return clg_conv_transpose2d(x, clg_module_param(m, "weight"), clg_module_param(m, "bias"),
                                &((convt_data *)m->data)->p);
}

static void convt_describe(const clg_module *m, char *buf, size_t len)
{
    const convt_data *d = m->data;
    snprintf(buf, len, "%lld, %lld, kernel_size=(%d, %d), stride=(%d, %d), padding=(%d, %d)", (long long)d->in,
             (long long)d->out, d->kh, d->kw, or1(d->p.stride[0]), or1(d->p.stride[1]), d->p.padding[0],
             d->p.padding[1]);
}

static const clg_module_i convt_i = {"ConvTranspose2d", convt_forward, convt_describe, free};

clg_module *clg_nn_conv_transpose2d(clg_device *dev, int64_t in, int64_t out, int kh, int kw,
                                    const clg_conv_transpose2d_params *p, bool bias)
{
    if (!dev) return NULL;
    clg_conv_transpose2d_params q = p ? *p : (clg_conv_transpose2d_params){0};
    int g = or1(q.groups);
    if (in <= 0 || out <= 0 || kh <= 0 || kw <= 0 || in % g || out % g) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_nn_conv_transpose2d: %lld -> %lld channels, kernel %dx%d, %d groups",
                  (long long)in, (long long)out, kh, kw, g);
        return NULL;
    }
    convt_data *d = malloc(sizeof *d);
    if (d) *d = (convt_data){in, out, kh, kw, q};
    /* PyTorch's fan_in for a transposed convolution's weight: its dim 1 times the kernel */
    return with_params(dev, &convt_i, d, CLG_SHAPE(in, out / g, kh, kw), bias ? out : 0, out / g * kh * kw);
}

/* ---- Upsample (by an integer or fractional scale, nearest or bilinear) ---------------------------- */

typedef struct upsample_data { double scale; bool bilinear; } upsample_data;

static clg_tensor *upsample_forward(clg_module *m, clg_tensor *x)
{
    const upsample_data *d = m->data;
    if (!x) return NULL;
    if (clg_tensor_ndim(x) != 4)
        return clg__fail(m->dev, CLG_ERR_SHAPE, "Upsample: want x [N, C, H, W], got %s", CLG_DESC(x)), NULL;
    int64_t oh = (int64_t)floor((double)clg_tensor_dim(x, 2) * d->scale);
    int64_t ow = (int64_t)floor((double)clg_tensor_dim(x, 3) * d->scale);
    return d->bilinear ? clg_upsample_bilinear2d(x, oh, ow) : clg_upsample_nearest2d(x, oh, ow);
}

static void upsample_describe(const clg_module *m, char *buf, size_t len)
{
    const upsample_data *d = m->data;
    snprintf(buf, len, "scale_factor=%g, mode='%s'", d->scale, d->bilinear ? "bilinear" : "nearest");
}

static const clg_module_i upsample_i = {"Upsample", upsample_forward, upsample_describe, free};

clg_module *clg_nn_upsample(clg_device *dev, double scale, bool bilinear)
{
    if (!dev) return NULL;
    if (!(scale > 0) || scale > 1024) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_nn_upsample: scale %g (want above 0, at most 1024)", scale);
        return NULL;
    }
    upsample_data *d = malloc(sizeof *d);
    clg_module *m = d ? clg_module_new(dev, &upsample_i, d) : NULL;
    if (!m) {
        free(d);
        return NULL;
    }
    *d = (upsample_data){scale, bilinear};
    return m;
}

/* ---- GroupNorm: weight ones, bias zeros, [channels] ---------------------------------------------- */

typedef struct gn_data { int64_t groups, channels; double eps; } gn_data;

static clg_tensor *gn_forward(clg_module *m, clg_tensor *x)
{
    const gn_data *d = m->data;
    return clg_group_norm(x, d->groups, clg_module_param(m, "weight"), clg_module_param(m, "bias"), d->eps);
}

static void gn_describe(const clg_module *m, char *buf, size_t len)
{
    const gn_data *d = m->data;
    snprintf(buf, len, "%lld, %lld, eps=%g, affine=True", (long long)d->groups, (long long)d->channels, d->eps);
}

static const clg_module_i gn_i = {"GroupNorm", gn_forward, gn_describe, free};

clg_module *clg_nn_group_norm(clg_device *dev, int64_t groups, int64_t channels, double eps)
{
    if (!dev) return NULL;
    if (groups <= 0 || channels <= 0 || channels % groups || eps < 0) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_nn_group_norm: %lld groups of %lld channels, eps %g",
                  (long long)groups, (long long)channels, eps);
        return NULL;
    }
    gn_data *d = malloc(sizeof *d);
    clg_module *m = d ? clg_module_new(dev, &gn_i, d) : NULL;
    if (!m) {
        free(d);
        return NULL;
    }
    *d = (gn_data){groups, channels, eps ? eps : 1e-5};
    return clg__nn_affine_params(m, 1, &channels);
}
