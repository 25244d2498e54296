/* model_build.c: a parsed model made real on a device: the Sequential (or Graph) network
 * of each layer's module (its kind's build, sized from the shape inferred for its input),
 * the optimizer, the loss, and the loader's transforms. */
#include <stdlib.h>
#include <string.h>

#include "model_kind.h"
#include "clgrad/ops.h"

clg_module *model_repeat(clg_device *dev, const model_layer *l, int64_t in, model_block_fn *block)
{
    if (l->repeat == 1) return block(dev, l, 0, &in);
    clg_module *seq = clg_nn_sequential(dev, 0, NULL);
    for (int64_t i = 0; seq && i < l->repeat; i++) {
        clg_module *b = block(dev, l, i, &in);
        if (!b || clg_sequential_append(seq, NULL, b) != CLG_OK) {
            clg_module_free(b);
            clg_module_free(seq);
            return NULL;
        }
    }
    return seq;
}

/* ---- a model of wired layers: a Graph ------------------------------------------------------ */

/* Each layer's inputs (layer indices, -1 the model's input; none: the layer before). */
typedef struct graph_data {
    int n;
    struct { int n, in[MODEL_MAX_INPUTS]; } layer[];
} graph_data;

/* Layers in order, each on the outputs it names; the last one's output is the model's. */
static clg_tensor *graph_forward(clg_module *g, clg_tensor *x)
{
    const graph_data *d = clg_module_data(g);
    clg_tensor **out = calloc((size_t)d->n, sizeof *out), *y = NULL;
    if (!out) return NULL;
    for (int i = 0; i < d->n; i++) {
        clg_tensor *in[MODEL_MAX_INPUTS];
        int n = d->layer[i].n ? d->layer[i].n : 1;
        for (int k = 0; k < n; k++) {
            int from = d->layer[i].n ? d->layer[i].in[k] : i - 1;
            in[k] = from < 0 ? x : out[from];
        }
        out[i] = clg_module_forward_n(clg_module_child_at(g, i), n, in);
        if (!out[i]) break;
        y = out[i];
    }
    y = out[d->n - 1] ? y : NULL;
    free(out);
    return y;
}

static const clg_module_i graph_i = {"Graph", graph_forward, NULL, free};

static clg_module *new_container(clg_device *dev, const clg_model *m)
{
    bool wired = false;
    for (int i = 0; i < m->nlayers; i++) wired = wired || model_layer_wired(&m->layers[i], i);
    if (!wired) return clg_nn_sequential(dev, 0, NULL);
    graph_data *d = calloc(1, sizeof *d + (size_t)m->nlayers * sizeof d->layer[0]);
    clg_module *g = d ? clg_module_new(dev, &graph_i, d) : NULL;
    if (!g) {
        free(d);
        return NULL;
    }
    d->n = m->nlayers;
    for (int i = 0; i < m->nlayers; i++) {
        d->layer[i].n = m->layers[i].ninputs;
        memcpy(d->layer[i].in, m->layers[i].inputs, sizeof d->layer[i].in);
    }
    return g;
}

/* The shape layer i reads (its first input's). */
static void input_shape(const clg_model *m, int i, int *ndim, const int64_t **shape)
{
    const model_layer *l = &m->layers[i];
    int from = l->ninputs ? l->inputs[0] : i - 1;
    *ndim = from < 0 ? m->in_ndim : m->layers[from].ndim;
    *shape = from < 0 ? m->input : m->layers[from].shape;
}

clg_module *clg_model_build(const clg_model *m, clg_device *dev)
{
    if (!m || !dev) return NULL;
    clg_module *net = new_container(dev, m);
    for (int i = 0; net && i < m->nlayers; i++) {
        const model_layer *l = &m->layers[i];
        int ndim;
        const int64_t *shape;
        input_shape(m, i, &ndim, &shape);
        clg_module *layer = l->kind->build(dev, l, ndim, shape);
        if (!layer || clg_module_add_child(net, l->name, layer) != CLG_OK) {
            clg_module_free(layer);
            clg_module_free(net);
            return NULL;
        }
    }
    return net;
}

clg_optimizer *clg_model_build_optimizer(const clg_model *m, clg_module *net)
{
    if (!m || !net) return NULL;
    int n = clg_module_parameters(net, NULL, 0, true);
    clg_tensor **p = malloc(((size_t)n + 1) * sizeof *p);
    if (!p) return NULL;
    n = clg_module_parameters(net, p, n, true);
    const clg_model_optim *o = &m->optim;
    clg_adam_options adam = {o->lr, o->beta1, o->beta2, o->eps, o->weight_decay};
    clg_optimizer *opt =
        !strcmp(o->type, "sgd") ? clg_sgd_new(n, p, &(clg_sgd_options){o->lr, o->momentum, o->dampening,
                                                                       o->weight_decay, o->nesterov})
        : !strcmp(o->type, "adam")  ? clg_adam_new(n, p, &adam)
        : !strcmp(o->type, "adamw") ? clg_adamw_new(n, p, &adam)
        : !strcmp(o->type, "rmsprop")
            ? clg_rmsprop_new(n, p, &(clg_rmsprop_options){o->lr, o->alpha, o->eps, o->weight_decay, o->momentum,
                                                           o->centered})
            : clg_adagrad_new(n, p, &(clg_adagrad_options){o->lr, o->lr_decay, o->weight_decay,
                                                           o->initial_accumulator_value, o->eps});
    free(p);
    return opt;
}

double clg_model_lr_at(const clg_model *m, int64_t epoch)
{
    clg_lr_schedule s;
    if (!m || !clg_lr_schedule_parse(m->optim.schedule, &s, NULL, 0)) return m ? m->optim.lr : 0;
    return clg_lr_schedule_at(&s, m->optim.lr, epoch);
}

/* Targets for the regression losses: one-hot rows of the labels, on the device. */
static clg_tensor *one_hot(clg_tensor *labels, int64_t classes)
{
    clg_tensor *y = clg_unsqueeze(clg_cast(labels, CLG_F32), 1);
    return clg_eq(y, clg_arange(clg_tensor_device(labels), CLG_F32, 0, (double)classes, 1));
}

clg_tensor *clg_model_loss(const clg_model *m, clg_tensor *out, clg_tensor *labels)
{
    if (!m || !out || !labels) return NULL;
    if (clg_tensor_ndim(out) > 2) {   /* scores per token: every token is a sample */
        out = clg_reshape(out, CLG_SHAPE(-1, clg_tensor_dim(out, -1)));
        labels = clg_reshape(labels, CLG_SHAPE(-1));
    }
    const clg_model_lossfn *l = &m->loss;
    if (!strcmp(l->type, "cross_entropy"))
        return l->label_smoothing > 0 ? clg_cross_entropy_smooth(out, labels, CLG_REDUCE_MEAN, l->label_smoothing)
                                      : clg_cross_entropy(out, labels, CLG_REDUCE_MEAN);
    clg_tensor *t = one_hot(labels, clg_tensor_dim(out, -1));
    if (!strcmp(l->type, "mse")) return clg_mse(out, t, CLG_REDUCE_MEAN);
    if (!strcmp(l->type, "l1")) return clg_l1_loss(out, t, CLG_REDUCE_MEAN);
    return clg_smooth_l1_loss(out, t, CLG_REDUCE_MEAN, l->beta);
}

clg_loader_config clg_model_loader_config(const clg_model *m, bool train)
{
    clg_loader_config cfg = clg_loader_defaults(m ? m->train.batch : 1);
    if (!m) return cfg;
    cfg.shuffle = train;
    cfg.seed = m->train.seed;
    cfg.workers = m->train.workers;
    cfg.scale = (float)m->data.scale;
    cfg.norm_channels = m->data.norm_channels;
    cfg.mean = m->meanf;
    cfg.std = m->stdf;
    cfg.crop_padding = train ? m->data.crop_padding : 0;
    cfg.hflip = train && m->data.hflip;
    return cfg;
}

void clg_model_transform(const clg_model *m, float *x, int64_t n)
{
    if (!m || !x) return;
    int64_t numel = clg_model_input_numel(m), per = m->data.norm_channels > 1 ? numel / m->data.norm_channels : numel;
    for (int64_t s = 0; s < n; s++)
        for (int64_t i = 0; i < numel; i++) {
            float *v = &x[s * numel + i];
            *v *= (float)m->data.scale;
            if (m->data.norm_channels) {
                int ch = m->data.norm_channels > 1 ? (int)(i / per) : 0;
                *v = (*v - m->meanf[ch]) / m->stdf[ch];
            }
        }
}
