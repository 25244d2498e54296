/* layers.c: Linear and the layers without parameters that only wrap an op. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "nn_impl.h"

/* ---- Linear: y = x W^T + b, W [out, in] ---------------------------------------------------- */

typedef struct linear_data { int64_t in, out; bool bias; } linear_data;

static clg_tensor *linear_forward(clg_module *m, clg_tensor *x)
{
    return clg_linear(x, clg_module_param(m, "weight"), clg_module_param(m, "bias"));
}

static void linear_describe(const clg_module *m, char *buf, size_t len)
{
    const linear_data *d = m->data;
    snprintf(buf, len, "in_features=%lld, out_features=%lld, bias=%s", (long long)d->in, (long long)d->out,
             d->bias ? "True" : "False");
}

static const clg_module_i linear_i = {"Linear", linear_forward, linear_describe, free};

clg_module *clg_nn_linear(clg_device *dev, int64_t in, int64_t out, bool bias)
{
    if (!dev) return NULL;
    if (in <= 0 || out <= 0) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_nn_linear: %lld inputs, %lld outputs", (long long)in, (long long)out);
        return NULL;
    }
    linear_data *d = malloc(sizeof *d);
    clg_module *m = d ? clg_module_new(dev, &linear_i, d) : NULL;
    if (!m) {
        free(d);
        return NULL;
    }
    *d = (linear_data){in, out, bias};
    /* PyTorch: kaiming_uniform_(a=sqrt(5)) is U(-1/sqrt(in), 1/sqrt(in)), the bias too */
    double bound = 1.0 / sqrt((double)in);
    clg_tensor *w = clg__nn_uniform_param(dev, CLG_SHAPE(out, in), bound);
    clg_status st = clg_module_add_param(m, "weight", w);
    if (st == CLG_OK && bias) {
        clg_tensor *b = clg__nn_uniform_param(dev, CLG_SHAPE(out), bound);
        st = clg_module_add_param(m, "bias", b);
        if (st != CLG_OK) clg__tensor_release(b);
    } else if (st != CLG_OK) {
        clg__tensor_release(w);
    }
    if (st != CLG_OK) {
        clg_module_free(m);
        return NULL;
    }
    return m;
}

/* ---- layers that apply one op ----------------------------------------------------------------- */

typedef struct op_data { double a; int axis; } op_data;

static clg_tensor *flatten_forward(clg_module *m, clg_tensor *x) { (void)m; return clg_flatten(x, 1, -1); }

static const clg_module_i flatten_i = {"Flatten", flatten_forward, NULL, free};

static clg_module *op_layer(clg_device *dev, const clg_module_i *iface, double a, int axis)
{
    if (!dev) return NULL;
    op_data *d = malloc(sizeof *d);
    clg_module *m = d ? clg_module_new(dev, iface, d) : NULL;
    if (!m) {
        free(d);
        if (!d) clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "%s: out of host memory", iface->type);
        return NULL;
    }
    *d = (op_data){a, axis};
    return m;
}

clg_module *clg_nn_flatten(clg_device *dev) { return op_layer(dev, &flatten_i, 0, 1); }

static clg_tensor *relu_forward(clg_module *m, clg_tensor *x) { (void)m; return clg_relu(x); }
static clg_tensor *sigmoid_forward(clg_module *m, clg_tensor *x) { (void)m; return clg_sigmoid(x); }
static clg_tensor *tanh_forward(clg_module *m, clg_tensor *x) { (void)m; return clg_tanh(x); }
static clg_tensor *gelu_forward(clg_module *m, clg_tensor *x) { (void)m; return clg_gelu(x); }
static clg_tensor *leaky_relu_forward(clg_module *m, clg_tensor *x)
{
    return clg_leaky_relu(x, ((op_data *)m->data)->a);
}

static void slope_describe(const clg_module *m, char *buf, size_t len)
{
    snprintf(buf, len, "negative_slope=%g", ((const op_data *)m->data)->a);
}

static const clg_module_i relu_i = {"ReLU", relu_forward, NULL, free};
static const clg_module_i leaky_relu_i = {"LeakyReLU", leaky_relu_forward, slope_describe, free};
static const clg_module_i sigmoid_i = {"Sigmoid", sigmoid_forward, NULL, free};
static const clg_module_i tanh_i = {"Tanh", tanh_forward, NULL, free};
static const clg_module_i gelu_i = {"GELU", gelu_forward, NULL, free};

clg_module *clg_nn_relu(clg_device *dev) { return op_layer(dev, &relu_i, 0, 0); }
clg_module *clg_nn_leaky_relu(clg_device *dev, double slope) { return op_layer(dev, &leaky_relu_i, slope, 0); }
clg_module *clg_nn_sigmoid(clg_device *dev) { return op_layer(dev, &sigmoid_i, 0, 0); }
clg_module *clg_nn_tanh(clg_device *dev) { return op_layer(dev, &tanh_i, 0, 0); }
clg_module *clg_nn_gelu(clg_device *dev) { return op_layer(dev, &gelu_i, 0, 0); }

static clg_tensor *gelu_tanh_forward(clg_module *m, clg_tensor *x) { (void)m; return clg_gelu_tanh(x); }
static clg_tensor *silu_forward(clg_module *m, clg_tensor *x) { (void)m; return clg_silu(x); }
static clg_tensor *elu_forward(clg_module *m, clg_tensor *x) { return clg_elu(x, ((op_data *)m->data)->a); }
static void alpha_describe(const clg_module *m, char *buf, size_t len)
{
    snprintf(buf, len, "alpha=%g", ((const op_data *)m->data)->a);
}
static void tanh_describe(const clg_module *m, char *buf, size_t len)
{
    (void)m;
    snprintf(buf, len, "approximate='tanh'");
}
static const clg_module_i gelu_tanh_i = {"GELU", gelu_tanh_forward, tanh_describe, free};
static const clg_module_i silu_i = {"SiLU", silu_forward, NULL, free};
static const clg_module_i elu_i = {"ELU", elu_forward, alpha_describe, free};
clg_module *clg_nn_gelu_tanh(clg_device *dev) { return op_layer(dev, &gelu_tanh_i, 0, 0); }
clg_module *clg_nn_silu(clg_device *dev) { return op_layer(dev, &silu_i, 0, 0); }
clg_module *clg_nn_elu(clg_device *dev, double alpha) { return op_layer(dev, &elu_i, alpha, 0); }

/* Softplus keeps beta and the threshold: the second in op_data's axis field would lose
 * its fraction, so it has a struct of its own. */
typedef struct softplus_data { double beta, threshold; } softplus_data;
static clg_tensor *softplus_forward(clg_module *m, clg_tensor *x)
{
    const softplus_data *d = m->data;
    return clg_softplus(x, d->beta, d->threshold);
}
static void softplus_describe(const clg_module *m, char *buf, size_t len)
{
    const softplus_data *d = m->data;
    snprintf(buf, len, "beta=%g, threshold=%g", d->beta, d->threshold);
}
static const clg_module_i softplus_i = {"Softplus", softplus_forward, softplus_describe, free};
clg_module *clg_nn_softplus(clg_device *dev, double beta, double threshold)
{
    if (!dev) return NULL;
    softplus_data *d = malloc(sizeof *d);
    clg_module *m = d ? clg_module_new(dev, &softplus_i, d) : NULL;
    if (!m) {
        free(d);
        if (!d) clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "Softplus: out of host memory");
        return NULL;
    }
    *d = (softplus_data){beta, threshold};
    return m;
}

/* ---- Embedding: rows of weight [num, dim] picked by int32 indices of any shape ------------------ */

static clg_tensor *embedding_forward(clg_module *m, clg_tensor *idx)
{
    clg_tensor *w = clg_module_param(m, "weight");
    int64_t shape[CLG_MAX_DIMS];
    if (idx->ndim >= CLG_MAX_DIMS)
        return clg__op_fail(m->dev, CLG_ERR_SHAPE, "Embedding", "indices %s have too many axes", CLG_DESC(idx));
    for (int d = 0; d < idx->ndim; d++) shape[d] = idx->shape[d];
    shape[idx->ndim] = w->shape[1];
    clg_tensor *flat = clg_reshape(idx, CLG_SHAPE(-1));
    return clg_reshape(clg_index_select(w, 0, flat), idx->ndim + 1, shape);
}

static void embedding_describe(const clg_module *m, char *buf, size_t len)
{
    const clg_tensor *w = clg_module_param(m, "weight");
    snprintf(buf, len, "%lld, %lld", (long long)w->shape[0], (long long)w->shape[1]);
}

static const clg_module_i embedding_i = {"Embedding", embedding_forward, embedding_describe, NULL};

clg_module *clg_nn_embedding(clg_device *dev, int64_t num, int64_t dim)
{
    if (!dev) return NULL;
    if (num <= 0 || dim <= 0) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_nn_embedding: %lld x %lld", (long long)num, (long long)dim);
        return NULL;
    }
    clg_module *m = clg_module_new(dev, &embedding_i, NULL);
    clg_tensor *w = m ? clg_randn(dev, CLG_F32, CLG_SHAPE(num, dim), 0.0, 1.0) : NULL;   /* PyTorch: N(0, 1) */
    if (!w || clg_module_add_param(m, "weight", w) != CLG_OK) {
        clg_tensor_free(w);
        clg_module_free(m);
        return NULL;
    }
    return m;
}

/* ---- joins: several inputs into one (clg_module_forward_n) ------------------------------- */

static clg_tensor *add_forward_n(clg_module *m, int n, clg_tensor *const *in)
{
    if (n < 1 || !in)
        return clg__op_fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "Add", "%d inputs: want at least one", n);
    clg_tensor *y = in[0];
    for (int i = 1; i < n && y; i++) y = clg_add(y, in[i]);
    return y;
}

static clg_tensor *concat_forward_n(clg_module *m, int n, clg_tensor *const *in)
{
    const op_data *d = m->data;
    return clg_concat(n, in, d->axis);
}

static clg_tensor *join_forward(clg_module *m, clg_tensor *x) { return m->forward_n(m, 1, &x); }

static void concat_describe(const clg_module *m, char *buf, size_t len)
{
    snprintf(buf, len, "dim=%d", ((const op_data *)m->data)->axis);
}

static const clg_module_i add_i = {"Add", join_forward, NULL, free};
static const clg_module_i concat_i = {"Concat", join_forward, concat_describe, free};

clg_module *clg_nn_add(clg_device *dev)
{
    clg_module *m = op_layer(dev, &add_i, 0, 0);
    if (m) clg_module_set_forward_n(m, add_forward_n);
    return m;
}

clg_module *clg_nn_concat(clg_device *dev, int axis)
{
    clg_module *m = op_layer(dev, &concat_i, 0, axis);
    if (m) clg_module_set_forward_n(m, concat_forward_n);
    return m;
}
