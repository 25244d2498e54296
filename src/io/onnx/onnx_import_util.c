/* onnx_import_util.c: what the import rules share: inputs read as activations or
 * constants (with the message when they are not), attributes, a layer on a node's input,
 * aliases, and constants that come later in the node list. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

typedef const Onnx__NodeProto node;

/* A float read from a file as the double it was written from (1e-5, not 9.99999974e-06). */
double ix_tidy(float f)
{
    char s[32];
    snprintf(s, sizeof s, "%.7g", (double)f);
    return strtod(s, NULL);
}

ix_value *ix_act_in(ix_ctx *c, node *n, size_t k)
{
    ix_value *v = ix_in(c, n, k);
    if (!v) return NULL;
    if (v->kind != IX_ACT) return ix_fail(c, n, "input \"%s\" must be computed from the model's input, not a constant", v->name), NULL;
    if (v->tmajor) return ix_fail(c, n, "input \"%s\" is time-major ([T, B, F]: transposed for a recurrent node); "
                                  "only batch-first layers are read", v->name), NULL;
    if (v->tokens) return ix_fail(c, n, "input \"%s\" holds integer tokens: only a Gather of an embedding table reads them", v->name), NULL;
    return v;
}

ix_value *ix_const_in(ix_ctx *c, node *n, size_t k, bool want_float)
{
    ix_value *v = ix_in(c, n, k);
    if (!v) return NULL;
    if (v->kind != IX_CONST || v->symbolic || v->is_int == want_float)
        return ix_fail(c, n, "input \"%s\" must be a constant %s tensor (an initializer)", v->name, want_float ? "float" : "integer"), NULL;
    return v;
}

/* Output k must not be read by anything (what import does not make). */
bool ix_unused_output(ix_ctx *c, node *n, size_t k, const char *what)
{
    if (k < n->n_output && *n->output[k] && ix_uses(c, n->output[k]))
        return ix_fail(c, n, "its output %zu (%s) is used: not supported", k, what);
    return true;
}

bool ix_ints(ix_ctx *c, node *n, const char *name, size_t want, int64_t def, int64_t *out)
{
    const Onnx__AttributeProto *a = ix_attr(n, name);
    for (size_t i = 0; i < want; i++) out[i] = a && i < a->n_ints ? a->ints[i] : def;
    if (a && a->n_ints != want) return ix_fail(c, n, "attribute %s has %zu values, %zu expected", name, a->n_ints, want);
    return true;
}

bool ix_no_auto_pad(ix_ctx *c, node *n)
{
    const Onnx__AttributeProto *a = ix_attr(n, "auto_pad");
    if (a && a->has_s && !(a->s.len == 6 && !memcmp(a->s.data, "NOTSET", 6)))
        return ix_fail(c, n, "auto_pad %.*s: only explicit pads are read", (int)a->s.len, (const char *)a->s.data);
    return true;
}

/* A layer on input 0 whose output 0 keeps (or gets) `rank` axes. */
ix_layer *ix_on_input(ix_ctx *c, node *n, const model_kind *kind, json_t *spec, int rank)
{
    ix_value *x = ix_act_in(c, n, 0);
    if (!x) return json_decref(spec), NULL;
    const ix_value *ins[1] = {x};
    int r = rank ? rank : x->rank;
    ix_layer *l = ix_layer_new(c, n, kind, spec, 1, ins);
    return l && ix_set_act(c, n, 0, c->nlayers - 1, r) ? l : NULL;
}

json_t *ix_typed(const char *type) { return json_pack("{s:s}", "type", type); }


/* out (output k) is the same value as v. */
bool ix_alias(ix_ctx *c, node *n, size_t k, const ix_value *v)
{
    ix_value *o = ix_value_get(c, n->output[k]);
    if (!o) return false;
    const char *name = o->name;
    *o = *v;
    o->name = name;
    o->f = NULL, o->i = NULL;
    if (v->kind != IX_CONST) return true;
    size_t bytes = (size_t)(v->numel ? v->numel : 1) * (v->is_int ? sizeof *v->i : sizeof *v->f);
    void *d = malloc(bytes);
    if (!d) return ix_fail(c, n, "out of host memory");
    memcpy(d, v->is_int ? (void *)v->i : (void *)v->f, bytes);
    if (v->is_int) o->i = d;
    else o->f = d;
    return true;
}

bool ix_scalar_is(const ix_value *v, double want)
{
    return v && v->kind == IX_CONST && !v->is_int && v->numel == 1 && fabs(v->f[0] - want) <= 1e-6 * fabs(want);
}


/* A value that may be a Constant later in the node list (torch.onnx.export puts a
 * formula's constants beside the nodes that use them, after the first of its nodes). */
ix_value *ix_constant_ahead(ix_ctx *c, const char *name)
{
    ix_value *v = ix_value_find(c, name);
    if (v && v->kind != IX_NONE) return v;
    for (size_t i = 0; i < c->g->n_node; i++) {
        node *k = c->g->node[i];
        if (k->op_type && !strcmp(k->op_type, "Constant") && k->n_output == 1 && !strcmp(k->output[0], name))
            return ix_op_constant(c, k) ? ix_value_find(c, name) : NULL;
    }
    return NULL;
}

/* The other input of a two-input node than the value named `name`. */
ix_value *ix_other(ix_ctx *c, node *n, const char *name)
{
    if (n->n_input != 2) return NULL;
    return ix_constant_ahead(c, !strcmp(n->input[0], name) ? n->input[1] : n->input[0]);
}

/* Layers [lo, hi] become g (at lo); the later layers and the values move down. */
void ix_replace_layers(ix_ctx *c, int lo, int hi, const ix_layer *g)
{
    for (int i = lo; i <= hi; i++) {
        json_decref(c->layers[i].spec);
        for (int k = 0; k < c->layers[i].nw; k++) free(c->layers[i].w[k].data);
    }
    c->layers[lo] = *g;
    memmove(&c->layers[lo + 1], &c->layers[hi + 1], (size_t)(c->nlayers - hi - 1) * sizeof *c->layers);
    c->nlayers -= hi - lo;
    int gone = hi - lo;
    for (int i = lo + 1; i < c->nlayers; i++)
        for (int k = 0; k < c->layers[i].ninputs; k++) {
            int *in = &c->layers[i].inputs[k];
            *in = *in > hi ? *in - gone : *in >= lo ? lo : *in;
        }
    for (int i = 0; i < c->nvals; i++) {
        ix_value *v = c->vals[i];
        if (v->kind == IX_ACT && v->layer >= lo) v->layer = v->layer > hi ? v->layer - gone : v->layer == hi ? lo : -1;
    }
    for (int i = lo + 1; i < c->nlayers; i++)   /* a default name is the layer's index */
        if (isdigit((unsigned char)c->layers[i].name[0])) snprintf(c->layers[i].name, sizeof c->layers[i].name, "%d", i);
}
