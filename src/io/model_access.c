/* model_access.c: what a parsed model says, and the overrides the command line makes
 * (checked as strictly as the file's own values). */
#include <stdio.h>
#include <string.h>

#include "last_error.h"
#include "model_kind.h"

const char *clg_model_comment(const clg_model *m) { return m && m->comment ? m->comment : ""; }

int clg_model_input(const clg_model *m, int64_t *shape)
{
    for (int i = 0; m && shape && i < m->in_ndim; i++) shape[i] = m->input[i];
    return m ? m->in_ndim : 0;
}

int64_t clg_model_input_numel(const clg_model *m)
{
    int64_t n = m ? 1 : 0;
    for (int i = 0; m && i < m->in_ndim; i++) n *= m->input[i];
    return n;
}

int64_t clg_model_outputs(const clg_model *m)
{
    const model_layer *last = m ? &m->layers[m->nlayers - 1] : NULL;
    return last ? last->shape[last->ndim - 1] : 0;
}

bool clg_model_takes_tokens(const clg_model *m) { return m && model_takes_tokens(m); }

clg_status clg_model_check_text(const clg_model *m, char *err, size_t errlen)
{
    char why[256];
    const char *bad = m ? model_text_misfit(m, why, sizeof why) : "no model";
    return bad ? clg__report(err, errlen, CLG_ERR_INVALID_ARGUMENT, "%s", bad) : CLG_OK;
}

const char *clg_model_class_name(const clg_model *m, int i)
{
    return m && i >= 0 && i < m->nclasses ? m->classes[i] : NULL;
}

int clg_model_layer_count(const clg_model *m) { return m ? m->nlayers : 0; }

bool clg_model_layer(const clg_model *m, int i, clg_model_layer_info *out)
{
    if (!m || !out || i < 0 || i >= m->nlayers) return false;
    const model_layer *l = &m->layers[i];
    out->name = l->name;
    out->type = l->kind->name;
    model_layer_settings(l, out->settings, sizeof out->settings);
    out->ndim = l->ndim;
    memcpy(out->shape, l->shape, sizeof l->shape);
    out->params = l->params;
    return true;
}

int64_t clg_model_param_count(const clg_model *m)
{
    int64_t n = 0;
    for (int i = 0; m && i < m->nlayers; i++) n += m->layers[i].params;
    return n;
}

const clg_model_lossfn *clg_model_get_loss(const clg_model *m) { return m ? &m->loss : NULL; }
const clg_model_optim *clg_model_get_optim(const clg_model *m) { return m ? &m->optim : NULL; }
const clg_model_train *clg_model_get_train(const clg_model *m) { return m ? &m->train : NULL; }
const clg_model_data *clg_model_get_data(const clg_model *m) { return m ? &m->data : NULL; }

clg_status clg_model_set_train(clg_model *m, const clg_model_train *t, char *err, size_t errlen)
{
    if (!m || !t) return CLG_ERR_INVALID_ARGUMENT;
    if (!model_check_train(err, errlen, t)) return CLG_ERR_INVALID_ARGUMENT;
    m->train = *t;
    return CLG_OK;
}

clg_status clg_model_set_lr(clg_model *m, double lr, char *err, size_t errlen)
{
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    if (!(lr >= 1e-12 && lr <= 100)) {
        return clg__report(err, errlen, CLG_ERR_INVALID_ARGUMENT, "the learning rate must be in [1e-12, 100], got %g",
                           lr);
    }
    m->optim.lr = lr;
    return CLG_OK;
}

clg_status clg_model_set_data(clg_model *m, const char *dataset, const char *test, char *err, size_t errlen)
{
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    if ((dataset && strlen(dataset) >= sizeof m->data.dataset) || (test && strlen(test) >= sizeof m->data.test)) {
        return clg__report(err, errlen, CLG_ERR_INVALID_ARGUMENT, "a data path must be shorter than %zu bytes",
                           sizeof m->data.test);
    }
    if (dataset) snprintf(m->data.dataset, sizeof m->data.dataset, "%s", dataset);
    if (dataset) m->data.text[0] = '\0';   /* one source: samples or text */
    if (test) snprintf(m->data.test, sizeof m->data.test, "%s", test);
    return CLG_OK;
}

clg_status clg_model_set_text(clg_model *m, const char *path, char *err, size_t errlen)
{
    if (!m || !path) return CLG_ERR_INVALID_ARGUMENT;
    if (strlen(path) >= sizeof m->data.text)
        return clg__report(err, errlen, CLG_ERR_INVALID_ARGUMENT, "a data path must be shorter than %zu bytes",
                           sizeof m->data.text);
    clg_status st = clg_model_check_text(m, err, errlen);
    if (st != CLG_OK) return st;
    snprintf(m->data.text, sizeof m->data.text, "%s", path);
    m->data.dataset[0] = '\0';
    return CLG_OK;
}
