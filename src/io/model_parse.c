/* model_parse.c: a model file's top level: the document (jansson, duplicate keys
 * refused), then its sections in the order they depend on each other: the input
 * shape, the layers (each inferred from the one before), the class names (one per
 * output), then loss, optimizer, training and data settings. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "last_error.h"
#include "model_kind.h"

static bool parse_input(model_ctx *c, json_t *root, clg_model *m)
{
    json_t *in = json_object_get(root, "input");
    model_push_key(c, "input");
    char got[64];
    bool ok = json_is_array(in) && json_array_size(in) >= 1 && json_array_size(in) < CLG_MAX_DIMS;
    int64_t n = 1;
    for (size_t i = 0; ok && i < json_array_size(in); i++) {
        json_t *d = json_array_get(in, i);
        ok = json_is_integer(d) && json_integer_value(d) >= 1 && json_integer_value(d) <= MODEL_MAX_DIM;
        if (ok) m->input[i] = json_integer_value(d), n *= m->input[i];
        ok = ok && n <= MODEL_MAX_NUMEL;
    }
    if (!ok)
        model_fail(c, false, "must be the sample shape, 1 to %d integers in [1, %d] with at most %lld values, got %s",
                   CLG_MAX_DIMS - 1, MODEL_MAX_DIM, (long long)MODEL_MAX_NUMEL, model_show(in, got, sizeof got));
    m->in_ndim = ok ? (int)json_array_size(in) : 0;
    model_pop(c);
    return ok;
}

/* Layer names are unique, user names and indices alike (they are state_dict prefixes). */
static bool unique_name(model_ctx *c, const clg_model *m, int i)
{
    for (int j = 0; j < i; j++)
        if (!strcmp(m->layers[j].name, m->layers[i].name))
            return model_fail(c, false, "name \"%s\" is already layer %d's", m->layers[i].name, j);
    return true;
}

/* Integer tokens are the input's alone: the layers in between give floats. */
static bool embedding_first(model_ctx *c, const model_layer *l, int i)
{
    if (!l->kind->tokens || i == 0) return true;
    return model_fail(c, false, "%s must be the first layer (it looks up the input's integer tokens)", l->kind->name);
}

/* "inputs": names of earlier layers, or "input" (the model's), into l->inputs. */
static bool parse_inputs(model_ctx *c, json_t *v, const clg_model *m, int i, model_layer *l)
{
    json_t *ins = json_is_object(v) ? json_object_get(v, "inputs") : NULL;
    if (!ins) return true;
    model_push_key(c, "inputs");
    char got[64];
    bool ok = json_is_array(ins) && json_array_size(ins) >= 1 && json_array_size(ins) <= MODEL_MAX_INPUTS;
    if (!ok) model_fail(c, false, "must be an array of 1 to %d names of earlier layers (or \"input\"), got %s",
                        MODEL_MAX_INPUTS, model_show(ins, got, sizeof got));
    for (size_t k = 0; ok && k < json_array_size(ins); k++) {
        const char *name = json_string_value(json_array_get(ins, k));
        int at = name && !strcmp(name, "input") ? -1 : -2;
        for (int j = 0; name && at == -2 && j < i; j++)
            if (!strcmp(m->layers[j].name, name)) at = j;
        if (at == -2) {
            model_push_index(c, (int)k);
            ok = model_fail(c, false, "%s is not an earlier layer's name (nor \"input\")",
                            model_show(json_array_get(ins, k), got, sizeof got));
            model_pop(c);
        }
        l->inputs[l->ninputs++] = at;
    }
    model_pop(c);
    return ok;
}

/* Shapes of layer i from its inputs: the layer before (or the input), the one named, or
 * several for add and concat. */
static bool infer_wired(model_ctx *c, const clg_model *m, int i, model_layer *l)
{
    bool join = l->kind->join != NULL;
    if (join != (l->ninputs > 1))
        return model_fail(c, false, join ? "%s needs \"inputs\": the names of 2 or more layers to join"
                                         : "%s takes one input; only add and concat join several",
                          l->kind->name);
    const model_layer *ins[MODEL_MAX_INPUTS];
    for (int k = 0; k < l->ninputs; k++) ins[k] = l->inputs[k] < 0 ? NULL : &m->layers[l->inputs[k]];
    if (join) return model_infer_join(c, l, l->ninputs, ins, m->in_ndim, m->input);
    const model_layer *from = l->ninputs ? ins[0] : i ? &m->layers[i - 1] : NULL;
    return model_infer_layer(c, l, from ? from->ndim : m->in_ndim, from ? from->shape : m->input);
}

static bool parse_layers(model_ctx *c, json_t *root, clg_model *m)
{
    json_t *ls = json_object_get(root, "layers");
    model_push_key(c, "layers");
    char got[64];
    if (!json_is_array(ls) || json_array_size(ls) < 1 || json_array_size(ls) > MODEL_MAX_LAYERS) {
        model_fail(c, false, "must be an array of 1 to %d layers, got %s", MODEL_MAX_LAYERS,
                   model_show(ls, got, sizeof got));
        return false;
    }
    m->layers = calloc(json_array_size(ls), sizeof *m->layers);
    if (!m->layers) return model_fail(c, false, "out of host memory");
    bool ok = true;
    for (size_t i = 0; ok && i < json_array_size(ls); i++) {
        model_layer *l = &m->layers[i];
        model_push_index(c, (int)i);
        snprintf(l->name, sizeof l->name, "%zu", i);
        json_t *v = json_array_get(ls, i);
        ok = model_parse_layer(c, v, l) && embedding_first(c, l, (int)i) && parse_inputs(c, v, m, (int)i, l) &&
             infer_wired(c, m, (int)i, l) && unique_name(c, m, (int)i);
        model_pop(c);
        m->nlayers = (int)i + 1;
    }
    model_pop(c);
    return ok;
}

/* Scores per sample [C]; a model of tokens gives them per token: [..., C] over the
 * input's token axes (a language model's next-token scores). */
static bool check_outputs(model_ctx *c, const clg_model *m)
{
    const model_layer *last = &m->layers[m->nlayers - 1];
    bool tokens = model_takes_tokens(m), ok = last->ndim == (tokens ? m->in_ndim + 1 : 1);
    for (int i = 0; ok && tokens && i < m->in_ndim; i++) ok = last->shape[i] == m->input[i];
    if (ok) return true;
    model_push_key(c, "layers");
    model_push_index(c, m->nlayers - 1);
    if (tokens)
        model_fail(c, false, "the last layer of a model of tokens must give scores per token (the input's axes and "
                   "one more, [T, C] for a sequence); this one gives %d axes", last->ndim);
    else
        model_fail(c, false, "the last layer must give one score per class ([C]); this one gives %d axes "
                   "(end with flatten and linear)", last->ndim);
    model_pop(c), model_pop(c);
    return false;
}

static bool parse_classes(model_ctx *c, json_t *root, clg_model *m)
{
    json_t *cl = json_object_get(root, "classes");
    if (!cl) return true;
    model_push_key(c, "classes");
    int64_t want = clg_model_outputs(m);
    bool ok = json_is_array(cl) && (int64_t)json_array_size(cl) == want;
    for (size_t i = 0; ok && i < json_array_size(cl); i++) {
        json_t *s = json_array_get(cl, i);
        ok = json_is_string(s) && json_string_length(s) < 256 && strlen(json_string_value(s)) == json_string_length(s);
    }
    m->classes = ok ? calloc(json_array_size(cl), sizeof *m->classes) : NULL;
    for (size_t i = 0; m->classes && i < json_array_size(cl); i++)
        if (!(m->classes[i] = strdup(json_string_value(json_array_get(cl, i))))) ok = false;
    m->nclasses = m->classes ? (int)json_array_size(cl) : 0;
    char got[64];
    if (!ok)
        model_fail(c, false, "must be %lld strings (one per output of the last layer, under 256 bytes each), got %s",
                   (long long)want, model_show(cl, got, sizeof got));
    model_pop(c);
    return ok;
}

static bool parse_comment(model_ctx *c, json_t *root, clg_model *m)
{
    json_t *s = json_object_get(root, "comment");
    if (!s) return true;
    model_push_key(c, "comment");
    char got[64];
    bool ok = json_is_string(s) && json_string_length(s) < 65536 && strlen(json_string_value(s)) == json_string_length(s);
    if (!ok) model_fail(c, false, "must be a string (under 64 KiB, no NUL), got %s", model_show(s, got, sizeof got));
    else if (!(m->comment = strdup(json_string_value(s)))) ok = model_fail(c, false, "out of host memory");
    model_pop(c);
    return ok;
}

static bool parse_document(model_ctx *c, json_t *root, clg_model *m)
{
    char got[64];
    if (!json_is_object(root))
        return model_fail(c, false, "a model file is one JSON object, got %s", model_show(root, got, sizeof got));
    return model_check_keys(c, root, "comment, input, classes, layers, loss, optimizer, train, data") &&
           model_require(c, root, "input", "the sample shape, as [1, 28, 28]") &&
           model_require(c, root, "layers", "an array of layers") && parse_comment(c, root, m) &&
           parse_input(c, root, m) && parse_layers(c, root, m) && check_outputs(c, m) &&
           parse_classes(c, root, m) && model_parse_sections(c, root, m);
}

clg_status clg_model_parse(const char *text, size_t len, const char *file, clg_model **out, char *err,
                           size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    if (!out) return CLG_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!text) return CLG_ERR_INVALID_ARGUMENT;
    model_ctx c = {file ? file : "(model)", text, len, err, errlen, {0}};
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        clg__report(err, errlen, CLG_ERR_FORMAT, "%s:%d:%d: %s", c.file, je.line, je.column, je.text);
        if (err && errlen) model_one_line(err);
        return CLG_ERR_FORMAT;
    }
    clg_model *m = calloc(1, sizeof *m);
    bool ok = m != NULL;
    if (m) model_defaults(m);
    ok = ok && parse_document(&c, root, m);
    json_decref(root);
    if (!ok) {
        if (!m) clg__report(err, errlen, CLG_ERR_OUT_OF_MEMORY, "%s: out of host memory", c.file);
        clg_model_free(m);
        return m ? CLG_ERR_FORMAT : CLG_ERR_OUT_OF_MEMORY;
    }
    model_sync_floats(m);
    *out = m;
    return CLG_OK;
}

clg_status clg_model_read(const char *path, clg_model **out, char *err, size_t errlen)
{
    if (out) *out = NULL;
    if (!path || !out) return CLG_ERR_INVALID_ARGUMENT;
    /* A regular file: a FIFO would block the open (hence O_NONBLOCK), a device read on. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    bool regular = fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    FILE *f = regular ? fdopen(fd, "rb") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return clg__report(err, errlen, CLG_ERR_IO, "%s: %s", path,
                           fd >= 0 && !regular ? "not a regular file" : "cannot open the model file");
    }
    enum { CAP = 1 << 20 };
    char *buf = malloc(CAP + 1);
    size_t n = buf ? fread(buf, 1, CAP + 1, f) : 0;
    const char *bad = !buf ? "out of host memory" : ferror(f) ? "read error"
                    : n > CAP ? "larger than 1 MiB: not a model file" : NULL;
    fclose(f);
    if (bad) {
        clg_status st = clg__report(err, errlen, buf ? CLG_ERR_IO : CLG_ERR_OUT_OF_MEMORY, "%s: %s", path, bad);
        free(buf);
        return st;
    }
    clg_status st = clg_model_parse(buf, n, path, out, err, errlen);
    free(buf);
    return st;
}

void clg_model_free(clg_model *m)
{
    if (!m) return;
    for (int i = 0; i < m->nclasses; i++) free(m->classes[i]);
    free(m->classes);
    free(m->layers);
    free(m->comment);
    free(m);
}
