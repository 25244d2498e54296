/* onnx_shapes.c: the host side of an attention region, evaluated: every size is known
 * but the batch's, which stays a symbol (B, 3 B, ...), so that the shapes torch.onnx.export
 * computes at run time (Shape, Gather, Unsqueeze, Concat, Div, Cast, ...) and the masks
 * it builds from them (ConstantOfShape, Trilu, Range, Equal, Where, Expand) come out as
 * numbers. A value that would need the batch's size itself fails naming its node. Here:
 * the region's values, the sizes of activations, and evaluation on demand (a value made
 * from its node when something reads it); the ops are in onnx_shapes_ops.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_attn.h"

typedef const Onnx__NodeProto node;

ax_val *ax_get(ax_ctx *a, const char *name)
{
    for (int i = a->nvals - 1; i >= 0; i--)
        if (!strcmp(a->vals[i]->name, name)) return a->vals[i];
    if (a->nvals == a->capvals) {
        int cap = a->capvals ? 2 * a->capvals : 128;
        ax_val **v = realloc(a->vals, (size_t)cap * sizeof *v);
        if (!v) return ix_fail(a->c, NULL, "out of host memory"), NULL;
        a->vals = v;
        a->capvals = cap;
    }
    /* one allocation each: a value's address stays while later ones are added */
    ax_val *v = calloc(1, sizeof *v);
    if (!v) return ix_fail(a->c, NULL, "out of host memory"), NULL;
    a->vals[a->nvals++] = v;
    v->name = name;
    return v;
}

void ax_free(ax_ctx *a)
{
    for (int i = 0; i < a->nvals; i++) free(a->vals[i]->i), free(a->vals[i]->f), free(a->vals[i]);
    free(a->vals);
    a->vals = NULL;
    a->nvals = a->capvals = 0;
}

ax_val *ax_new_static(ax_ctx *a, node *n, const char *name, bool ints, int ndim, const int64_t *dims)
{
    int64_t numel = 1;
    for (int d = 0; d < ndim && ndim <= AX_MAX_AXES + 2; d++)
        numel = dims[d] < 0 || (dims[d] && numel > ((int64_t)1 << 26) / dims[d]) ? -1 : numel * dims[d];
    if (ndim > AX_MAX_AXES + 2 || numel < 0 || numel > ((int64_t)1 << 26))
        return ix_fail(a->c, n, "a host tensor of %d axes, %lld values: not read", ndim, (long long)numel), NULL;
    ax_val *v = ax_get(a, name);
    if (!v) return NULL;
    free(v->i), free(v->f);
    memset(v, 0, sizeof *v);
    v->name = name;
    v->kind = ints ? AV_INT : AV_FLOAT;
    v->ndim = ndim;
    memcpy(v->dims, dims, (size_t)ndim * sizeof *dims);
    v->numel = numel;
    if (ints) v->i = calloc((size_t)(numel ? numel : 1), sizeof *v->i);
    else v->f = calloc((size_t)(numel ? numel : 1), sizeof *v->f);
    if (!v->i && !v->f) return ix_fail(a->c, n, "out of host memory"), NULL;
    return v;
}

/* The layers so far as a model file that parses: one of floats must end in scores [C],
 * so a flatten and a linear layer go after them (the shapes before are the same). */
static char *shapes_text(ix_ctx *c)
{
    char *text = ix_model_text(c);
    json_t *root = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    json_t *layers = root ? json_object_get(root, "layers") : NULL;
    bool tokens = false;
    for (size_t i = 0; i < c->g->n_input; i++) {
        const ix_value *v = ix_value_find(c, c->g->input[i]->name);
        if (v && v->kind == IX_ACT && v->layer < 0) tokens = v->tokens;
    }
    if (layers && !tokens) {
        json_array_append_new(layers, json_pack("{s:s}", "type", "flatten"));
        json_array_append_new(layers, json_pack("{s:s,s:i}", "type", "linear", "out", 1));
    }
    text = layers ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    return text;
}

bool ix_act_dims(ix_ctx *c, node *n, const ix_value *v, int *ndim, ix_sym *dims)
{
    int64_t d[CLG_MAX_DIMS];
    int nd;
    if (v->layer < 0) {
        nd = c->in_ndim;
        memcpy(d, c->in_dims, (size_t)nd * sizeof *d);
    } else {   /* the model file of the layers so far, shaped as any model file */
        char *text = shapes_text(c), err[512];
        clg_model *m = NULL;
        if (!text || clg_model_parse(text, strlen(text), c->path, &m, err, sizeof err) != CLG_OK) {
            free(text);
            return ix_fail(c, n, "the sizes of \"%s\" are not known (%s)", v->name, text ? err : "out of host memory");
        }
        free(text);
        nd = m->layers[v->layer].ndim;
        memcpy(d, m->layers[v->layer].shape, (size_t)nd * sizeof *d);
        clg_model_free(m);
    }
    *ndim = nd + 1;
    dims[0] = (ix_sym){1, 1};
    for (int i = 0; i < nd; i++) dims[i + 1] = (ix_sym){d[i], 0};
    if (v->tmajor) {
        ix_sym t = dims[0];
        dims[0] = dims[1], dims[1] = t;
    }
    return true;
}

/* An import constant as a region value. */
ax_val *ax_from_import(ax_ctx *a, const ix_value *iv)
{
    ax_val *v = ax_new_static(a, NULL, iv->name, iv->is_int, iv->ndim, iv->dims);
    for (int64_t k = 0; v && k < iv->numel; k++) {
        if (iv->is_int) v->i[k] = (ix_sym){iv->i[k], 0};
        else v->f[k] = iv->f[k];
    }
    return v;
}

ax_val *ax_static(ax_ctx *a, const char *name)
{
    ax_val *v = ax_get(a, name);
    if (!v || v->kind != AV_NONE) return v;
    const ix_value *iv = ix_value_find(a->c, name);
    if (iv && iv->kind == IX_CONST && !iv->symbolic) return ax_from_import(a, iv);
    if (iv && iv->kind == IX_ACT) return ix_fail(a->c, NULL, "\"%s\" is an activation where a host value is expected", name), NULL;
    for (size_t i = 0; i < a->c->g->n_node; i++) {
        node *p = a->c->g->node[i];
        for (size_t k = 0; k < p->n_output; k++)
            if (!strcmp(p->output[k], name)) return ax_static_node(a, p) ? ax_get(a, name) : NULL;
    }
    return ix_fail(a->c, NULL, "value \"%s\" is made by no node", name), NULL;
}

/* The inputs an op reads at least. */
static size_t arity(const char *op)
{
    static const char *const two = " Gather Reshape Add Sub Mul Div Equal Expand Unsqueeze Squeeze ";
    char key[40];
    snprintf(key, sizeof key, " %.36s ", op);
    if (!strcmp(op, "Where") || !strcmp(op, "Range") || !strcmp(op, "Slice")) return 3;
    if (!strcmp(op, "Constant")) return 0;
    return strstr(two, key) ? 2 : 1;
}

bool ax_static_node(ax_ctx *a, node *n)
{
    const char *op = n->op_type;
    if (n->n_input < arity(op) || !n->n_output) return ix_fail(a->c, n, "%zu inputs, %zu outputs", n->n_input, n->n_output);
    if (a->depth > 256) return ix_fail(a->c, n, "host arithmetic over 256 nodes deep (or a cycle)");
    a->depth++;
    bool ok = ax_static_op(a, n, op);
    a->depth--;
    return ok;
}
