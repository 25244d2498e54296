/* onnx_read.c: what import needs of a file's graph: its values by name, initializers
 * and Constants as host data, who reads a value, attributes with their defaults, and
 * messages that name the node. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "onnx_impl.h"

bool ix_fail(ix_ctx *c, const Onnx__NodeProto *n, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!c->failed) {   /* the first failure is the one to report */
        if (n) clg__fail(c->dev, CLG_ERR_UNSUPPORTED, "clg_module_import_onnx: %s: node \"%s\" (%s): %s", c->path,
                         n->name && *n->name ? n->name : "(unnamed)", n->op_type ? n->op_type : "?", msg);
        else clg__fail(c->dev, CLG_ERR_FORMAT, "clg_module_import_onnx: %s: %s", c->path, msg);
    }
    c->failed = true;
    return false;
}

ix_value *ix_value_find(ix_ctx *c, const char *name)
{
    for (int i = c->nvals - 1; i >= 0; i--)
        if (!strcmp(c->vals[i]->name, name)) return c->vals[i];
    return NULL;
}

ix_value *ix_value_get(ix_ctx *c, const char *name)
{
    ix_value *v = ix_value_find(c, name);
    if (v) return v;
    if (c->nvals == c->capvals) {
        int cap = c->capvals ? 2 * c->capvals : 256;
        ix_value **a = realloc(c->vals, (size_t)cap * sizeof *a);
        if (!a) {
            clg__fail(c->dev, CLG_ERR_OUT_OF_MEMORY, "clg_module_import_onnx: %s: out of host memory", c->path);
            c->failed = true;
            return NULL;
        }
        c->vals = a;
        c->capvals = cap;
    }
    /* one allocation each: a value's address stays while later ones are added */
    if (!(v = calloc(1, sizeof *v))) {
        clg__fail(c->dev, CLG_ERR_OUT_OF_MEMORY, "clg_module_import_onnx: %s: out of host memory", c->path);
        c->failed = true;
        return NULL;
    }
    c->vals[c->nvals++] = v;
    v->name = name;
    return v;
}

/* Element i of a tensor's values as a double, from raw_data or the typed fields. */
static bool element(const Onnx__TensorProto *t, int64_t i, double *out)
{
    size_t k = (size_t)i;
    switch (t->data_type) {
    case OX_FLOAT:
        if (t->has_raw_data) {
            float f;
            if ((k + 1) * sizeof f > t->raw_data.len) return false;
            memcpy(&f, t->raw_data.data + k * sizeof f, sizeof f);
            return *out = f, true;
        }
        return k < t->n_float_data ? (*out = t->float_data[k], true) : false;
    case OX_INT64:
        if (t->has_raw_data) {
            int64_t v;
            if ((k + 1) * sizeof v > t->raw_data.len) return false;
            memcpy(&v, t->raw_data.data + k * sizeof v, sizeof v);
            return *out = (double)v, true;
        }
        return k < t->n_int64_data ? (*out = (double)t->int64_data[k], true) : false;
    case OX_INT32:
        if (t->has_raw_data) {
            int32_t v;
            if ((k + 1) * sizeof v > t->raw_data.len) return false;
            memcpy(&v, t->raw_data.data + k * sizeof v, sizeof v);
            return *out = v, true;
        }
        return k < t->n_int32_data ? (*out = t->int32_data[k], true) : false;
    default: return false;
    }
}

bool ix_tensor_value(ix_ctx *c, const Onnx__NodeProto *n, const Onnx__TensorProto *t, ix_value *v)
{
    if (t->n_external_data || (t->has_data_location && t->data_location))
        return ix_fail(c, n, "tensor \"%s\" is stored outside the file (external data is not read)", t->name ? t->name : "");
    if (t->data_type != OX_FLOAT && t->data_type != OX_INT64 && t->data_type != OX_INT32)
        return ix_fail(c, n, "tensor \"%s\" has ONNX data type %d (float32, int32 and int64 are read)",
                       t->name ? t->name : "", (int)t->data_type);
    if (t->n_dims > CLG_MAX_DIMS) return ix_fail(c, n, "tensor \"%s\" has %zu axes", t->name ? t->name : "", t->n_dims);
    int64_t numel = 1;
    for (size_t d = 0; d < t->n_dims; d++) {
        if (t->dims[d] < 0 || (t->dims[d] && numel > INT64_MAX / 8 / t->dims[d]))
            return ix_fail(c, n, "tensor \"%s\" has a bad shape", t->name ? t->name : "");
        numel *= t->dims[d];
        v->dims[d] = t->dims[d];
    }
    v->kind = IX_CONST;
    v->ndim = (int)t->n_dims;
    v->numel = numel;
    v->is_int = t->data_type != OX_FLOAT;
    free(v->f), free(v->i);
    v->f = NULL, v->i = NULL;
    if (v->is_int) v->i = malloc((size_t)(numel ? numel : 1) * sizeof *v->i);
    else v->f = malloc((size_t)(numel ? numel : 1) * sizeof *v->f);
    if (!v->i && !v->f) return ix_fail(c, n, "out of host memory for tensor \"%s\"", t->name ? t->name : "");
    for (int64_t k = 0; k < numel; k++) {
        double x;
        if (!element(t, k, &x))
            return ix_fail(c, n, "tensor \"%s\" holds fewer than its %lld values", t->name ? t->name : "", (long long)numel);
        if (v->is_int) v->i[k] = (int64_t)x;
        else v->f[k] = (float)x;
    }
    return true;
}

int ix_uses(const ix_ctx *c, const char *name)
{
    int k = 0;
    for (size_t i = 0; i < c->g->n_node; i++)
        for (size_t j = 0; j < c->g->node[i]->n_input; j++) k += !strcmp(c->g->node[i]->input[j], name);
    for (size_t i = 0; i < c->g->n_output; i++) k += !strcmp(c->g->output[i]->name, name);
    return k;
}

Onnx__NodeProto *ix_consumer(const ix_ctx *c, const char *name, size_t *at)
{
    if (ix_uses(c, name) != 1) return NULL;
    for (size_t i = 0; i < c->g->n_node; i++)
        for (size_t j = 0; j < c->g->node[i]->n_input; j++)
            if (!strcmp(c->g->node[i]->input[j], name)) {
                if (at) *at = i;
                return c->g->node[i];
            }
    return NULL;   /* a graph output */
}

const Onnx__AttributeProto *ix_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name)) return n->attribute[i];
    return NULL;
}

int64_t ix_attr_i(const Onnx__NodeProto *n, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a = ix_attr(n, name);
    return a && a->has_i ? a->i : def;
}

float ix_attr_f(const Onnx__NodeProto *n, const char *name, float def)
{
    const Onnx__AttributeProto *a = ix_attr(n, name);
    return a && a->has_f ? a->f : def;
}

bool ix_no_input(const Onnx__NodeProto *n, size_t k) { return k >= n->n_input || !*n->input[k]; }

ix_value *ix_in(ix_ctx *c, const Onnx__NodeProto *n, size_t k)
{
    if (ix_no_input(n, k)) return ix_fail(c, n, "input %zu is missing", k), NULL;
    ix_value *v = ix_value_find(c, n->input[k]);
    if (!v || v->kind == IX_NONE)
        return ix_fail(c, n, "input \"%s\" is made by no node before it (nodes must be in order)", n->input[k]), NULL;
    return v;
}
