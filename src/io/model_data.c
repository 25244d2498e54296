/* model_data.c: the data section of a model file: where the samples come from and the
 * transforms the loader applies (scale, normalise; crops and flips while training), or
 * the text a model of tokens learns from, and the held-out tail it is measured on. */
#include <stdio.h>
#include <string.h>

#include "model_kind.h"

/* An array of 1..cap numbers in [lo, hi]. */
static bool real_array(model_ctx *c, json_t *o, const char *key, double lo, double hi, double *out, int cap, int *n)
{
    json_t *a = json_object_get(o, key);
    model_push_key(c, key);
    bool ok = json_is_array(a) && json_array_size(a) >= 1 && json_array_size(a) <= (size_t)cap;
    for (size_t i = 0; ok && i < json_array_size(a); i++) {
        json_t *x = json_array_get(a, i);
        ok = json_is_number(x) && json_number_value(x) >= lo && json_number_value(x) <= hi;
        out[i] = json_number_value(x);
    }
    char got[64];
    if (!ok)
        model_fail(c, false, "must be an array of 1 to %d numbers in [%g, %g], got %s", cap, lo, hi,
                   a ? model_show(a, got, sizeof got) : "nothing");
    *n = ok ? (int)json_array_size(a) : 0;
    model_pop(c);
    return ok;
}

static bool parse_normalize(model_ctx *c, json_t *v, clg_model *m)
{
    char got[64];
    if (!json_is_object(v)) return model_fail(c, false, "must be {\"mean\": [...], \"std\": [...]}, got %s",
                                              model_show(v, got, sizeof got));
    int nm = 0, ns = 0;
    clg_model_data *d = &m->data;
    if (!model_check_keys(c, v, "mean, std") ||
        !real_array(c, v, "mean", -1e6, 1e6, d->mean, CLG_MODEL_MAX_CHANNELS, &nm) ||
        !real_array(c, v, "std", 1e-12, 1e6, d->std, CLG_MODEL_MAX_CHANNELS, &ns))
        return false;
    int64_t channels = m->in_ndim == 3 ? m->input[0] : 1;
    if (nm != ns || (nm != 1 && nm != channels)) {
        model_push_key(c, "std");
        model_fail(c, false, "mean and std need the same length, 1 or the input's %lld channels; got %d and %d",
                   (long long)channels, nm, ns);
        model_pop(c);
        return false;
    }
    d->norm_channels = nm;
    return true;
}

bool model_takes_tokens(const clg_model *m)
{
    return m->nlayers > 0 && m->layers[0].kind && m->layers[0].kind->tokens;
}

const char *model_text_misfit(const clg_model *m, char *buf, size_t len)
{
    const model_layer *first = &m->layers[0], *last = &m->layers[m->nlayers - 1];
    if (!model_takes_tokens(m))
        snprintf(buf, len, "the model does not take tokens: a model of text starts with an embedding layer "
                 "(byte values -> vectors), this one with %s", first->kind->name);
    else if (m->in_ndim != 1)
        snprintf(buf, len, "input: text comes in windows of T bytes, so the input must be [T]; this one has %d axes",
                 m->in_ndim);
    else if (first->num < 256)
        snprintf(buf, len, "layers[0] (embedding): num %lld cannot look up the 256 byte values (give num 256)",
                 (long long)first->num);
    else if (last->shape[last->ndim - 1] != 256)
        snprintf(buf, len, "layers[%d] (%s): %lld scores per position; the next byte takes 256", m->nlayers - 1,
                 last->kind->name, (long long)last->shape[last->ndim - 1]);
    else
        return NULL;
    return buf;
}

/* Text or samples, whichever the model takes, and never both. */
static bool check_source(model_ctx *c, const clg_model *m)
{
    const clg_model_data *d = &m->data;
    char why[256];
    const char *key = "text", *bad = NULL;
    if (d->text[0] && d->dataset[0]) bad = "give \"dataset\" or \"text\", not both";
    else if (d->text[0]) bad = model_text_misfit(m, why, sizeof why);
    else if (d->dataset[0] && model_takes_tokens(m))
        key = "dataset", bad = "a model of tokens (its first layer is an embedding) learns from \"text\", not from "
                               "a dataset of samples";
    if (!bad) return true;
    model_push_key(c, key);
    model_fail(c, false, "%s", bad);
    model_pop(c);
    return false;
}

bool model_parse_data(model_ctx *c, json_t *v, clg_model *m)
{
    clg_model_data *d = &m->data;
    char got[64];
    if (!json_is_object(v)) return model_fail(c, false, "must be an object, got %s", model_show(v, got, sizeof got));
    int64_t col = d->label_column, crop = d->crop_padding;
    bool ok = model_check_keys(c, v, "dataset, test, label_column, scale, normalize, crop_padding, hflip, text, "
                                     "holdout") &&
              model_get_string(c, v, "text", d->text, sizeof d->text) &&
              model_get_real(c, v, "holdout", 0, 0.9, &d->holdout) &&
              model_get_string(c, v, "dataset", d->dataset, sizeof d->dataset) &&
              model_get_string(c, v, "test", d->test, sizeof d->test) &&
              model_get_int(c, v, "label_column", -1024, 1024, &col) &&
              model_get_real(c, v, "scale", 1e-12, 1e6, &d->scale) &&
              model_get_int(c, v, "crop_padding", 0, 64, &crop) && model_get_bool(c, v, "hflip", &d->hflip);
    d->label_column = (int)col, d->crop_padding = (int)crop;
    json_t *norm = json_object_get(v, "normalize");
    if (ok && norm) {
        model_push_key(c, "normalize");
        ok = parse_normalize(c, norm, m);
        model_pop(c);
    }
    return ok && check_source(c, m);
}

void model_sync_floats(clg_model *m)
{
    for (int i = 0; i < CLG_MODEL_MAX_CHANNELS; i++) {
        m->meanf[i] = (float)m->data.mean[i];
        m->stdf[i] = (float)m->data.std[i];
    }
}
