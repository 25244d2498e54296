/* norm_layers.c: BatchNorm1d/2d (with statistics of this process's batch, or of a
 * group's: synchronised batch norm, src/dist/sync.c), LayerNorm, Dropout and Softmax layers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"

/* ---- batch norm: weight, bias; buffers running_mean, running_var, num_batches_tracked ---- */

typedef struct bn_data {
    int64_t c;
    double eps, momentum;
    int ndim;
    bool synced;             /* statistics over a group (nn_impl.h) */
    clg__nn_group group;
} bn_data;

/* The running averages moved towards the batch's mean and unbiased variance (var times
 * count / (count - 1)), as the batch_norm kernel does it. */
static clg_status bn_update_running(clg_module *m, clg_tensor *mean, clg_tensor *var, double count)
{
    const bn_data *d = m->data;
    clg_tensor *rm = clg_module_buffer(m, "running_mean"), *rv = clg_module_buffer(m, "running_var");
    clg_no_grad_begin(m->dev);
    clg_tensor *unbiased = clg_mul_scalar(var, count / (count - 1));
    clg_tensor *nm = clg_add(clg_mul_scalar(rm, 1 - d->momentum),
                             clg_cast(clg_mul_scalar(mean, d->momentum), rm->dtype));
    clg_tensor *nv = clg_add(clg_mul_scalar(rv, 1 - d->momentum),
                             clg_cast(clg_mul_scalar(unbiased, d->momentum), rv->dtype));
    clg_status st = nm && nv ? clg_copy_(rm, nm) : m->dev->status;
    if (st == CLG_OK) st = clg_copy_(rv, nv);
    clg_no_grad_end(m->dev);
    return st;
}

/* Training with the statistics of the whole group's batch: the count over the group,
 * then per-channel sums of this part summed over the group, then the squared
 * deviations from that mean the same way: two passes, as one process on the whole
 * batch computes them. This part's share of the loss is its share of the batch. A part
 * may be empty (a short last batch): its sums are zeros, its share 0. */
static clg_tensor *bn_sync_forward(clg_module *m, clg_tensor *x)
{
    const bn_data *d = m->data;
    const clg__nn_group *g = &d->group;
    int nd = x->ndim, axes[CLG_MAX_DIMS], na = 0;
    int64_t cshape[CLG_MAX_DIMS];   /* [1, C, 1, ...]: a [C] vector against x */
    for (int a = 0; a < nd; a++) {
        if (a != 1) axes[na++] = a;
        cshape[a] = a == 1 ? d->c : 1;
    }
    if (x->shape[1] != d->c)
        return clg__op_fail(m->dev, CLG_ERR_SHAPE, m->iface->type, "input %s (expected %lld channels)", CLG_DESC(x),
                            (long long)d->c);
    double mine = (double)(x->numel / d->c), total = mine;
    char why[400] = "";
    clg_status st = g->count(g->ctx, &total, 1, why, sizeof why);
    if (st) return clg__op_fail(m->dev, st, m->iface->type, "input %s: %s", CLG_DESC(x), why);
    if (total <= 1)   /* as clg_batch_norm: the unbiased variance of one value is undefined */
        return clg__op_fail(m->dev, CLG_ERR_SHAPE, m->iface->type, "training needs more than 1 value per channel "
                            "over the group, x is %s here and %g values in all", CLG_DESC(x), total);
    double share = mine / total;
    clg_tensor *xf = clg__is_half(x->dtype) ? clg_cast(x, CLG_F32) : x;
    if (!xf) return NULL;
    clg_tensor *mean = clg_div_scalar(g->sum(g->ctx, clg_sum(xf, na, axes, false), share), total);
    clg_tensor *xc = clg_sub(xf, clg_reshape(mean, nd, cshape));
    clg_tensor *var = clg_div_scalar(g->sum(g->ctx, clg_sum(clg_mul(xc, xc), na, axes, false), share), total);
    clg_tensor *y = clg_mul(xc, clg_reshape(clg_rsqrt(clg_add_scalar(var, d->eps)), nd, cshape));
    clg_tensor *w = clg_module_param(m, "weight"), *b = clg_module_param(m, "bias");
    y = clg_add(clg_mul(y, clg_reshape(clg_cast(w, xf->dtype), nd, cshape)),
                clg_reshape(clg_cast(b, xf->dtype), nd, cshape));
    if (!y || bn_update_running(m, mean, var, total)) return NULL;
    return xf != x ? clg_cast(y, x->dtype) : y;
}

/* The input's check and the batch count, before either forward. */
static bool bn_begin(clg_module *m, clg_tensor *x)
{
    const bn_data *d = m->data;
    if (x->ndim != d->ndim && !(d->ndim == 2 && x->ndim == 3))
        return clg__op_fail(m->dev, CLG_ERR_SHAPE, m->iface->type, "input %s (expected %d axes)", CLG_DESC(x),
                            d->ndim), false;
    if (m->training) {   /* PyTorch counts the batches it has seen (int32 here, int64 there) */
        clg_tensor *n = clg_module_buffer(m, "num_batches_tracked");
        if (clg_copy_(n, clg_add_scalar(n, 1.0)) != CLG_OK) return false;
    }
    return true;
}

static clg_tensor *bn_forward(clg_module *m, clg_tensor *x)
{
    const bn_data *d = m->data;
    if (!bn_begin(m, x)) return NULL;
    if (m->training && d->synced) return bn_sync_forward(m, x);
    return clg_batch_norm(x, clg_module_buffer(m, "running_mean"), clg_module_buffer(m, "running_var"),
                          clg_module_param(m, "weight"), clg_module_param(m, "bias"), m->training, d->momentum,
                          d->eps);
}

static void bn_describe(const clg_module *m, char *buf, size_t len)
{
    const bn_data *d = m->data;
    snprintf(buf, len, "%lld, eps=%g, momentum=%g%s", (long long)d->c, d->eps, d->momentum,
             d->synced ? ", synchronised" : "");
}

static const clg_module_i bn1_i = {"BatchNorm1d", bn_forward, bn_describe, free};
static const clg_module_i bn2_i = {"BatchNorm2d", bn_forward, bn_describe, free};

bool clg__nn_is_batch_norm(const clg_module *m) { return m && (m->iface == &bn1_i || m->iface == &bn2_i); }

clg_tensor *clg__nn_batch_norm_relu(clg_module *m, clg_tensor *x, clg_tensor *z)
{
    if (!x || !m) return NULL;
    const bn_data *d = m->data;
    if (!clg__nn_is_batch_norm(m) || (m->training && d->synced)) {
        clg_tensor *y = clg_module_forward(m, x);
        return clg_relu(z ? clg_add(y, z) : y);
    }
    if (!bn_begin(m, x)) return NULL;
    return clg_batch_norm_add_relu(x, z, clg_module_buffer(m, "running_mean"), clg_module_buffer(m, "running_var"),
                                   clg_module_param(m, "weight"), clg_module_param(m, "bias"), m->training,
                                   d->momentum, d->eps);
}

bool clg__nn_batch_norm_sync(clg_module *m, const clg__nn_group *g)
{
    if (!m || (m->iface != &bn1_i && m->iface != &bn2_i)) return false;
    bn_data *d = m->data;
    d->synced = g != NULL;
    d->group = g ? *g : (clg__nn_group){0};
    return true;
}

bool clg__nn_has_group_layers(const clg_module *m)
{
    if ((m->iface == &bn1_i || m->iface == &bn2_i) && ((const bn_data *)m->data)->synced) return true;
    for (int i = 0; i < m->nchildren; i++)
        if (clg__nn_has_group_layers(m->children[i])) return true;
    return false;
}

static clg_module *batch_norm(clg_device *dev, const clg_module_i *iface, int ndim, int64_t c, double eps,
                              double momentum)
{
    if (!dev) return NULL;
    if (c <= 0 || eps < 0 || momentum < 0 || momentum > 1) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: %lld features, eps %g, momentum %g", iface->type, (long long)c,
                  eps, momentum);
        return NULL;
    }
    bn_data *d = malloc(sizeof *d);
    clg_module *m = d ? clg_module_new(dev, iface, d) : NULL;
    if (!m) {
        free(d);
        return NULL;
    }
    *d = (bn_data){c, eps ? eps : 1e-5, momentum ? momentum : 0.1, ndim, false, {0}};
    clg_tensor *t[5] = {clg_ones(dev, CLG_F32, CLG_SHAPE(c)), clg_zeros(dev, CLG_F32, CLG_SHAPE(c)),
                        clg_zeros(dev, CLG_F32, CLG_SHAPE(c)), clg_ones(dev, CLG_F32, CLG_SHAPE(c)),
                        clg_zeros(dev, CLG_I32, 0, NULL)};
    const char *names[5] = {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"};
    clg_status st = CLG_OK;
    for (int i = 0; i < 5; i++) {
        if (st == CLG_OK) st = !t[i] ? m->dev->status
                             : i < 2 ? clg_module_add_param(m, names[i], t[i]) : clg_module_add_buffer(m, names[i], t[i]);
        if (st != CLG_OK) clg_tensor_free(t[i]);
    }
    if (st != CLG_OK) {
        clg_module_free(m);
        return NULL;
    }
    return m;
}

clg_module *clg_nn_batch_norm1d(clg_device *dev, int64_t c, double eps, double momentum)
{
    return batch_norm(dev, &bn1_i, 2, c, eps, momentum);
}

clg_module *clg_nn_batch_norm2d(clg_device *dev, int64_t c, double eps, double momentum)
{
    return batch_norm(dev, &bn2_i, 4, c, eps, momentum);
}

/* ---- layer norm over the last axes ------------------------------------------------------------ */

typedef struct ln_data { int ndim; int64_t shape[CLG_MAX_DIMS]; double eps; } ln_data;

static clg_tensor *ln_forward(clg_module *m, clg_tensor *x)
{
    const ln_data *d = m->data;
    return clg_layer_norm(x, d->ndim, clg_module_param(m, "weight"), clg_module_param(m, "bias"), d->eps);
}

static void ln_describe(const clg_module *m, char *buf, size_t len)
{
    const ln_data *d = m->data;
    char shape[96];
    snprintf(buf, len, "%s, eps=%g", clg_shape_str(d->ndim, d->shape, shape, sizeof shape), d->eps);
}

static const clg_module_i ln_i = {"LayerNorm", ln_forward, ln_describe, free};

clg_module *clg_nn_layer_norm(clg_device *dev, int ndim, const int64_t *shape, double eps)
{
    if (!dev) return NULL;
    if (ndim <= 0 || ndim > CLG_MAX_DIMS || !shape || eps < 0) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_nn_layer_norm: %d axes, eps %g", ndim, eps);
        return NULL;
    }
    ln_data *d = malloc(sizeof *d);
    clg_module *m = d ? clg_module_new(dev, &ln_i, d) : NULL;
    if (!m) {
        free(d);
        return NULL;
    }
    d->ndim = ndim;
    memcpy(d->shape, shape, (size_t)ndim * sizeof *shape);
    d->eps = eps ? eps : 1e-5;
    return clg__nn_affine_params(m, ndim, shape);
}

clg_module *clg__nn_affine_params(clg_module *m, int ndim, const int64_t *shape)
{
    clg_tensor *w = clg_ones(m->dev, CLG_F32, ndim, shape), *b = clg_zeros(m->dev, CLG_F32, ndim, shape);
    clg_status st = w ? clg_module_add_param(m, "weight", w) : m->dev->status;
    if (st != CLG_OK) clg_tensor_free(w);
    if (st == CLG_OK && (st = b ? clg_module_add_param(m, "bias", b) : m->dev->status) != CLG_OK) clg_tensor_free(b);
    if (st != CLG_OK) {
        clg_module_free(m);
        return NULL;
    }
    return m;
}

/* ---- dropout and softmax ---------------------------------------------------------------------- */

typedef struct scalar_data { double p; int axis; } scalar_data;

static clg_tensor *dropout_forward(clg_module *m, clg_tensor *x)
{
    return clg_dropout(x, ((scalar_data *)m->data)->p, m->training);
}

static clg_tensor *softmax_forward(clg_module *m, clg_tensor *x)
{
    return clg_softmax(x, ((scalar_data *)m->data)->axis);
}

static void dropout_describe(const clg_module *m, char *buf, size_t len)
{
    snprintf(buf, len, "p=%g", ((const scalar_data *)m->data)->p);
}

static void softmax_describe(const clg_module *m, char *buf, size_t len)
{
    snprintf(buf, len, "dim=%d", ((const scalar_data *)m->data)->axis);
}

static const clg_module_i dropout_i = {"Dropout", dropout_forward, dropout_describe, free};
static const clg_module_i softmax_i = {"Softmax", softmax_forward, softmax_describe, free};

static clg_module *scalar_layer(clg_device *dev, const clg_module_i *iface, double p, int axis)
{
    if (!dev) return NULL;
    scalar_data *d = malloc(sizeof *d);
    clg_module *m = d ? clg_module_new(dev, iface, d) : NULL;
    if (!m) {
        free(d);
        return NULL;
    }
    *d = (scalar_data){p, axis};
    return m;
}

clg_module *clg_nn_dropout(clg_device *dev, double p)
{
    if (dev && !(p >= 0 && p <= 1)) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_nn_dropout: p = %g is not in [0, 1]", p);
        return NULL;
    }
    return scalar_layer(dev, &dropout_i, p, 0);
}

clg_module *clg_nn_softmax(clg_device *dev, int axis) { return scalar_layer(dev, &softmax_i, 0, axis); }

clg_module *clg__nn_layer_norm(clg_device *dev, int64_t C, double eps, bool bias)
{
    clg_module *m = clg_nn_layer_norm(dev, 1, &C, eps);
    if (m && !bias) clg__module_drop_param(m, "bias");
    return m;
}
