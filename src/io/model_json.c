/* model_json.c: the canonical text of a model: every setting explicit, in a fixed
 * order, so that a checkpoint's copy rebuilds the network and its transforms alone,
 * and parsing the text again gives the same text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"

static json_t *shape_json(int ndim, const int64_t *s)
{
    json_t *a = json_array();
    for (int i = 0; i < ndim; i++) json_array_append_new(a, json_integer(s[i]));
    return a;
}

static json_t *reals(int n, const double *v)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_real(v[i]));
    return a;
}

static json_t *optim_fields(const clg_model_optim *o)
{
    const char *t = o->type;
    if (!strcmp(t, "sgd"))
        return json_pack("{ss sf sf sf sf sb ss}", "type", t, "lr", o->lr, "momentum", o->momentum, "dampening",
                         o->dampening, "weight_decay", o->weight_decay, "nesterov", o->nesterov, "schedule", o->schedule);
    if (!strcmp(t, "adam") || !strcmp(t, "adamw"))
        return json_pack("{ss sf sf sf sf sf ss}", "type", t, "lr", o->lr, "beta1", o->beta1, "beta2", o->beta2, "eps",
                         o->eps, "weight_decay", o->weight_decay, "schedule", o->schedule);
    if (!strcmp(t, "rmsprop"))
        return json_pack("{ss sf sf sf sf sf sb ss}", "type", t, "lr", o->lr, "alpha", o->alpha, "eps", o->eps,
                         "weight_decay", o->weight_decay, "momentum", o->momentum, "centered", o->centered,
                         "schedule", o->schedule);
    return json_pack("{ss sf sf sf sf sf ss}", "type", t, "lr", o->lr, "lr_decay", o->lr_decay, "weight_decay",
                     o->weight_decay, "initial_accumulator_value", o->initial_accumulator_value, "eps", o->eps,
                     "schedule", o->schedule);
}

/* Every optimizer's fields, then clipping (the same for all). */
static json_t *optim_json(const clg_model_optim *o)
{
    json_t *j = optim_fields(o);
    if (j) json_object_set_new(j, "clip_grad_norm", json_real(o->clip_grad_norm));
    if (j && o->schedule_steps) json_object_set_new(j, "schedule_unit", json_string("step"));
    return j;
}

static json_t *loss_json(const clg_model_lossfn *l)
{
    if (!strcmp(l->type, "cross_entropy"))
        return json_pack("{ss sf}", "type", l->type, "label_smoothing", l->label_smoothing);
    if (!strcmp(l->type, "smooth_l1")) return json_pack("{ss sf}", "type", l->type, "beta", l->beta);
    return json_pack("{ss}", "type", l->type);
}

static json_t *data_json(const clg_model_data *d)
{
    json_t *o = json_pack("{ss ss si sf}", "dataset", d->dataset, "test", d->test, "label_column", d->label_column,
                          "scale", d->scale);
    if (o && d->norm_channels)
        json_object_set_new(o, "normalize", json_pack("{so so}", "mean", reals(d->norm_channels, d->mean), "std",
                                                      reals(d->norm_channels, d->std)));
    if (o) json_object_set_new(o, "crop_padding", json_integer(d->crop_padding));
    if (o) json_object_set_new(o, "hflip", json_boolean(d->hflip));
    if (o) json_object_set_new(o, "text", json_string(d->text));
    if (o) json_object_set_new(o, "holdout", json_real(d->holdout));
    return o;
}

static json_t *model_tree(const clg_model *m)
{
    json_t *root = json_object(), *layers = json_array(), *classes = m->nclasses ? json_array() : NULL;
    for (int i = 0; i < m->nlayers; i++) {
        const model_layer *l = &m->layers[i];
        json_t *o = model_layer_json(l), *ins = l->ninputs ? json_array() : NULL;
        for (int k = 0; k < l->ninputs; k++)
            json_array_append_new(ins, json_string(l->inputs[k] < 0 ? "input" : m->layers[l->inputs[k]].name));
        if (ins) json_object_set_new(o, "inputs", ins);
        json_array_append_new(layers, o);
    }
    for (int i = 0; i < m->nclasses; i++) json_array_append_new(classes, json_string(m->classes[i]));
    if (m->comment) json_object_set_new(root, "comment", json_string(m->comment));
    json_object_set_new(root, "input", shape_json(m->in_ndim, m->input));
    if (classes) json_object_set_new(root, "classes", classes);
    json_object_set_new(root, "layers", layers);
    json_object_set_new(root, "loss", loss_json(&m->loss));
    json_object_set_new(root, "optimizer", optim_json(&m->optim));
    json_t *train = json_pack("{sI sI sI sI}", "batch", (json_int_t)m->train.batch, "epochs",
                              (json_int_t)m->train.epochs, "seed", (json_int_t)m->train.seed, "workers",
                              (json_int_t)m->train.workers);
    /* float32, the default, unwritten: earlier files and checkpoints keep their text */
    if (train && m->train.precision != CLG_F32)
        json_object_set_new(train, "precision", json_string(clg_precision_name(m->train.precision)));
    json_object_set_new(root, "train", train);
    json_object_set_new(root, "data", data_json(&m->data));
    return root;
}

/* The fewest digits that read back as v: 0.05, not 0.050000000000000003. */
static int digits(double v)
{
    char buf[64];
    for (int p = 1; p < 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, v);
        if (strtod(buf, NULL) == v) return p;
    }
    return 17;
}

/* The most digits any real in the tree needs: one precision for the whole dump
 * (jansson takes one), exact for every value. */
static int max_digits(json_t *v)
{
    int p = 1;
    size_t i;
    const char *k;
    json_t *x;
    if (json_is_real(v)) return digits(json_real_value(v));
    if (json_is_array(v)) json_array_foreach(v, i, x) p = p > max_digits(x) ? p : max_digits(x);
    if (json_is_object(v)) json_object_foreach(v, k, x) p = p > max_digits(x) ? p : max_digits(x);
    return p;
}

char *clg_model_json(const clg_model *m)
{
    if (!m) return NULL;
    json_t *root = model_tree(m);
    char *s = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(max_digits(root)))
                   : NULL;
    json_decref(root);
    return s;
}
