/* onnx_import_shape.c: what torch.onnx.export computes on the host side of a graph,
 * followed without running it: Constants; Shape of an activation (its sizes unknown, the
 * batch axis's marked, so that a reshape to [batch, -1] is known for a flatten); Gather,
 * Unsqueeze, Squeeze and Concat of such integer vectors; ConstantOfShape of zeros and
 * what keeps zeros zeros (Slice, Expand, Tile, Cast), for a recurrent node's initial state;
 * Squeeze of a recurrent node's Y; a Pad of zero width. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_impl.h"

typedef const Onnx__NodeProto node;

static ix_value *new_const(ix_ctx *c, node *n, int64_t numel, bool is_int)
{
    ix_value *o = ix_value_get(c, n->output[0]);
    if (!o) return NULL;
    free(o->f), free(o->i);
    *o = (ix_value){.name = o->name, .kind = IX_CONST, .is_int = is_int, .numel = numel};
    if (is_int) o->i = calloc((size_t)(numel ? numel : 1), sizeof *o->i);
    else o->f = calloc((size_t)(numel ? numel : 1), sizeof *o->f);
    if (!o->i && !o->f) return ix_fail(c, n, "out of host memory"), NULL;
    return o;
}

bool ix_op_constant(ix_ctx *c, const Onnx__NodeProto *n)
{
    const Onnx__AttributeProto *a = ix_attr(n, "value");
    if (a && a->t) {
        ix_value *o = ix_value_get(c, n->output[0]);
        return o && ix_tensor_value(c, n, a->t, o);
    }
    if ((a = ix_attr(n, "value_ints"))) {
        ix_value *o = new_const(c, n, (int64_t)a->n_ints, true);
        if (!o) return false;
        o->ndim = 1, o->dims[0] = (int64_t)a->n_ints;
        memcpy(o->i, a->ints, a->n_ints * sizeof *o->i);
        return true;
    }
    bool i = (a = ix_attr(n, "value_int")) != NULL;
    if (!i && !(a = ix_attr(n, "value_float"))) return ix_fail(c, n, "only value, value_int(s) and value_float are read");
    ix_value *o = new_const(c, n, 1, i);
    if (o && i) o->i[0] = a->i;
    if (o && !i) o->f[0] = a->f;
    return o != NULL;
}

/* Shape of an activation: its axes' sizes are not followed, only their number. */
bool ix_shape(ix_ctx *c, node *n)
{
    ix_value *x = ix_in(c, n, 0);
    if (!x) return false;
    if (x->kind != IX_ACT || ix_attr(n, "start") || ix_attr(n, "end"))
        return ix_fail(c, n, "only the whole shape of an activation is read");
    ix_value *o = new_const(c, n, x->rank, true);
    if (!o) return false;
    o->ndim = 1, o->dims[0] = x->rank, o->symbolic = true;
    for (int k = 0; k < x->rank; k++) o->i[k] = k == (x->tmajor ? 1 : 0) ? IX_DIM_BATCH : IX_DIM_UNKNOWN;
    if (x->layer < 0 && !x->tmajor)   /* the model's input: its sample's sizes are fixed */
        for (int k = 1; k < x->rank; k++) o->i[k] = c->in_dims[k - 1];
    return true;
}

bool ix_fold_gather(ix_ctx *c, node *n, const ix_value *d)
{
    ix_value *idx = ix_in(c, n, 1);
    if (!idx || idx->kind != IX_CONST || !idx->is_int || idx->symbolic || d->ndim != 1 || ix_attr_i(n, "axis", 0))
        return ix_fail(c, n, "only constant indices into a 1-d integer vector are read");
    ix_value *o = new_const(c, n, idx->numel, true);
    if (!o) return false;
    o->ndim = idx->ndim;
    memcpy(o->dims, idx->dims, sizeof o->dims);
    for (int64_t k = 0; k < idx->numel; k++) {
        int64_t j = idx->i[k] < 0 ? idx->i[k] + d->numel : idx->i[k];
        if (j < 0 || j >= d->numel) return ix_fail(c, n, "index %lld out of range", (long long)idx->i[k]);
        o->i[k] = d->i[j];
        o->symbolic = o->symbolic || (d->symbolic && (o->i[k] == IX_DIM_BATCH || o->i[k] == IX_DIM_UNKNOWN));
    }
    return true;
}

bool ix_fold_concat(ix_ctx *c, node *n)
{
    int64_t total = 0;
    bool symbolic = false;
    for (size_t k = 0; k < n->n_input; k++) {
        ix_value *v = ix_in(c, n, k);
        if (!v || v->kind != IX_CONST || !v->is_int || v->ndim != 1)
            return v ? ix_fail(c, n, "a Concat of constants is read only on 1-d integer vectors") : false;
        total += v->numel;
        symbolic = symbolic || v->symbolic;
    }
    ix_value *o = new_const(c, n, total, true);
    if (!o) return false;
    o->ndim = 1, o->dims[0] = total, o->symbolic = symbolic;
    int64_t at = 0;
    for (size_t k = 0; k < n->n_input; k++) {
        const ix_value *v = ix_value_find(c, n->input[k]);
        memcpy(o->i + at, v->i, (size_t)v->numel * sizeof *o->i);
        at += v->numel;
    }
    return true;
}

/* Unsqueeze or Squeeze of a constant: the same values, other axes; of zeros: zeros. */
bool ix_squeeze(ix_ctx *c, node *n, bool un)
{
    ix_value *x = ix_in(c, n, 0);
    if (!x) return false;
    if (x->kind == IX_ZEROS) return ix_alias(c, n, 0, x);
    if (!un && x->kind == IX_RNN_Y) {   /* Y [T, 1, B, H] -> [T, B, H] */
        ix_value *ax = ix_no_input(n, 1) ? NULL : ix_in(c, n, 1);
        if (!ax || ax->kind != IX_CONST || !ax->is_int || ax->numel != 1 || ax->i[0] != 1)
            return ix_fail(c, n, "a recurrent node's output is read squeezed on axis 1 (its direction)");
        ix_value *o = ix_value_get(c, n->output[0]);
        if (!o) return false;
        *o = (ix_value){.name = o->name, .kind = IX_ACT, .layer = x->layer, .rank = 3, .tmajor = true};
        return true;
    }
    if (x->kind != IX_CONST || x->ndim > 1 || (un && x->ndim == 1))
        return ix_fail(c, n, "only a scalar unsqueezed to a vector, or the reverse, of constants is read (not activations)");
    if (!ix_alias(c, n, 0, x)) return false;
    ix_value *o = ix_value_find(c, n->output[0]);
    o->ndim = un ? 1 : 0;
    o->dims[0] = 1;
    return true;
}

bool ix_constant_of_shape(ix_ctx *c, node *n)
{
    const Onnx__AttributeProto *a = ix_attr(n, "value");
    if (a && a->t) {
        ix_value tmp = {0};
        bool ok = ix_tensor_value(c, n, a->t, &tmp);
        bool zero = ok && tmp.numel == 1 && (tmp.is_int ? tmp.i[0] == 0 : tmp.f[0] == 0);
        free(tmp.f), free(tmp.i);
        if (!ok) return false;
        if (!zero) return ix_fail(c, n, "only zeros (an initial recurrent state) are read");
    }
    ix_value *o = ix_value_get(c, n->output[0]);
    if (!o) return false;
    o->kind = IX_ZEROS;
    return true;
}

/* Slice, Expand, Reshape, Tile, Cast of zeros are zeros. */
bool ix_of_zeros(ix_ctx *c, node *n)
{
    ix_value *x = ix_in(c, n, 0);
    if (!x) return false;
    if (x->kind == IX_ZEROS) return ix_alias(c, n, 0, x);
    if (!strcmp(n->op_type, "Cast") && x->kind == IX_CONST && x->is_int && !x->symbolic) return ix_alias(c, n, 0, x);
    return ix_fail(c, n, "%s is read only on zeros (a recurrent node's initial state)", n->op_type);
}

/* Pad by zeros on no side (torch.onnx.export puts one before AveragePool): an alias. */
bool ix_pad(ix_ctx *c, node *n)
{
    ix_value *x = ix_in(c, n, 0), *p = x && !ix_no_input(n, 1) ? ix_in(c, n, 1) : NULL;
    if (!p) return false;
    bool none = p->kind == IX_CONST && p->is_int && !p->symbolic;
    for (int64_t k = 0; none && k < p->numel; k++) none = p->i[k] == 0;
    if (!none) return ix_fail(c, n, "only a Pad of zero width is read (padding belongs to the convolution or pool)");
    return ix_alias(c, n, 0, x);
}

/* Range(start, limit, delta) of known integers (positions 0 .. T-1). */
bool ix_range(ix_ctx *c, node *n)
{
    ix_value *v[3];
    for (size_t k = 0; k < 3; k++)
        if (!(v[k] = ix_in(c, n, k))) return false;
    for (int k = 0; k < 3; k++)
        if (v[k]->kind != IX_CONST || !v[k]->is_int || v[k]->symbolic || v[k]->numel != 1 || (k == 2 && !v[2]->i[0]))
            return ix_fail(c, n, "only a Range of known integers (positions) is read");
    int64_t s = v[0]->i[0], d = v[2]->i[0];
    double len = ceil(((double)v[1]->i[0] - (double)s) / (double)d);
    if (!(len <= MODEL_MAX_DIM) || s > MODEL_MAX_NUMEL || s < -MODEL_MAX_NUMEL || d > MODEL_MAX_NUMEL || d < -MODEL_MAX_NUMEL)
        return ix_fail(c, n, "a Range of %g values (or of bounds over 2^31) is not read", len);
    int64_t cnt = len > 0 ? (int64_t)len : 0;
    ix_value *o = new_const(c, n, cnt, true);
    if (!o) return false;
    o->ndim = 1, o->dims[0] = cnt;
    for (int64_t k = 0; k < cnt; k++) o->i[k] = s + k * d;
    return true;
}
