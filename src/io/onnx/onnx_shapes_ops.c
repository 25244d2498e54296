/* onnx_shapes_ops.c: the ops of the host side of an attention region (onnx_shapes.c):
 * elementwise arithmetic broadcast as numpy (integers as multiples of the batch size,
 * overflow failing), Shape, Gather, Unsqueeze, Squeeze, Reshape, Cast, Concat,
 * ConstantOfShape, Trilu, Range, Where, Expand and Slice of host tensors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_attn.h"

typedef const Onnx__NodeProto node;

/* ---- elementwise, broadcast as numpy ------------------------------------------------------- */

static bool sym_op(ix_sym x, ix_sym y, char op, ix_sym *r)
{
    switch (op) {
    case '+': case '-':
        r->b = x.b;
        return x.b == y.b && !(op == '+' ? __builtin_add_overflow(x.k, y.k, &r->k) : __builtin_sub_overflow(x.k, y.k, &r->k));
    case '*':
        r->b = x.b + y.b;
        return r->b <= 1 && !__builtin_mul_overflow(x.k, y.k, &r->k);
    case '/':   /* ONNX's integer Div truncates; k B / m only when m divides k */
        if (!y.k || y.b > x.b || (x.b > y.b && x.k % y.k) || (x.k == INT64_MIN && y.k == -1)) return false;
        *r = (ix_sym){x.k / y.k, x.b - y.b};
        return true;
    case '=':
        if (x.b != y.b) return false;
        *r = (ix_sym){x.k == y.k, 0};
        return true;
    }
    return false;
}

static double f_op(double x, double y, char op)
{
    switch (op) {
    case '+': return x + y;
    case '-': return x - y;
    case '*': return x * y;
    case '/': return x / y;
    default: return x == y;
    }
}

/* Output dims of broadcasting ins; false when they do not broadcast. */
static bool bcast_dims(int nin, ax_val *const *in, int *ndim, int64_t *dims)
{
    int nd = 0;
    for (int k = 0; k < nin; k++) nd = in[k]->ndim > nd ? in[k]->ndim : nd;
    for (int d = 0; d < nd; d++) {
        int64_t s = 1;
        for (int k = 0; k < nin; k++) {
            int e = d - (nd - in[k]->ndim);
            int64_t v = e >= 0 ? in[k]->dims[e] : 1;
            if (v != 1 && s != 1 && v != s) return false;
            if (v != 1) s = v;
        }
        dims[d] = s;
    }
    *ndim = nd;
    return true;
}

/* The flat index into x of the output's flat index o (dims nd, od). */
static int64_t bcast_at(const ax_val *x, int nd, const int64_t *od, int64_t o)
{
    int64_t at = 0, stride = 1;
    for (int d = nd - 1; d >= 0; d--) {
        int64_t i = o % od[d];
        o /= od[d];
        int e = d - (nd - x->ndim);
        if (e < 0) continue;
        if (x->dims[e] != 1) at += i * stride;
        stride *= x->dims[e];
    }
    return at;
}

static bool elementwise(ax_ctx *a, node *n, char op)
{
    ax_val *in[3];
    for (int k = 0; k < 2; k++)
        if (!(in[k] = ax_static(a, n->input[k]))) return false;
    ax_val *x = in[0], *y = in[1];
    int nd;
    int64_t od[AX_MAX_AXES + 2];
    if (x->kind == AV_TRACED || y->kind == AV_TRACED) return ix_fail(a->c, n, "expected host values");
    if (!bcast_dims(2, in, &nd, od)) return ix_fail(a->c, n, "operands that do not broadcast");
    bool ints = x->kind == AV_INT;
    if ((y->kind == AV_INT) != ints) return ix_fail(a->c, n, "an integer and a float operand");
    ax_val *o = ax_new_static(a, n, n->output[0], ints || op == '=', nd, od);
    if (!o) return false;
    x = ax_get(a, n->input[0]), y = ax_get(a, n->input[1]);   /* the table may have moved */
    for (int64_t e = 0; e < o->numel; e++) {
        int64_t i = bcast_at(x, nd, od, e), j = bcast_at(y, nd, od, e);
        if (ints && !sym_op(x->i[i], y->i[j], op, &o->i[e]))
            return ix_fail(a->c, n, "arithmetic that needs the batch size's value (only its multiples are followed)");
        if (!ints && op == '=') o->i[e] = (ix_sym){x->f[i] == y->f[j], 0};
        else if (!ints) o->f[e] = (float)f_op(x->f[i], y->f[j], op);
    }
    return true;
}

/* ---- the ops -------------------------------------------------------------------------------- */

static bool known(ax_ctx *a, node *n, const ax_val *v)
{
    for (int64_t k = 0; v->kind == AV_INT && k < v->numel; k++)
        if (v->i[k].b) return ix_fail(a->c, n, "a tensor whose size is the batch's (only the batch axis may vary)");
    return true;
}

static bool op_shape(ax_ctx *a, node *n)
{
    if (ix_attr(n, "start") || ix_attr(n, "end")) return ix_fail(a->c, n, "Shape with start or end is not read");
    ax_val *t = ax_get(a, n->input[0]);
    if (!t) return false;
    ix_sym d[CLG_MAX_DIMS + 1];
    int nd = 0;
    if (t->kind == AV_TRACED) {
        nd = t->nax;
        for (int k = 0; k < nd; k++) {
            d[k] = (ix_sym){1, 0};
            for (int f = 0; f < t->ax[k].n; f++) {
                ax_factor fk = t->ax[k].f[f];
                int64_t s = fk == AF_B ? 1 : fk == AF_T || fk == AF_S ? a->T : fk == AF_C ? a->C
                          : fk == AF_H ? t->part.heads : fk == AF_D ? (t->part.hi - t->part.lo) / t->part.heads
                          : t->part.hi - t->part.lo;
                d[k].k *= s;
                d[k].b += fk == AF_B;
            }
        }
    } else {
        const ix_value *iv = ix_value_find(a->c, n->input[0]);
        if (t->kind == AV_NONE && iv && iv->kind == IX_ACT) {
            if (!ix_act_dims(a->c, n, iv, &nd, d)) return false;
        } else {
            if (!(t = ax_static(a, n->input[0]))) return false;
            nd = t->ndim;
            for (int k = 0; k < nd; k++) d[k] = (ix_sym){t->dims[k], 0};
        }
    }
    ax_val *o = ax_new_static(a, n, n->output[0], true, 1, (int64_t[]){nd});
    if (o) memcpy(o->i, d, (size_t)nd * sizeof *d);
    return o != NULL;
}

static bool op_gather(ax_ctx *a, node *n)
{
    ax_val *d = ax_static(a, n->input[0]), *ix = d ? ax_static(a, n->input[1]) : NULL;
    if (!ix) return false;
    if (ix->kind != AV_INT || d->ndim != 1 || ix_attr_i(n, "axis", 0) || !known(a, n, ix))
        return ix_fail(a->c, n, "only constant indices into a host vector are read");
    ax_val *o = ax_new_static(a, n, n->output[0], d->kind == AV_INT, ix->ndim, ix->dims);
    if (!o) return false;
    d = ax_get(a, n->input[0]), ix = ax_get(a, n->input[1]);
    for (int64_t k = 0; k < ix->numel; k++) {
        int64_t j = ix->i[k].k < 0 ? ix->i[k].k + d->numel : ix->i[k].k;
        if (j < 0 || j >= d->numel) return ix_fail(a->c, n, "index %lld out of range", (long long)ix->i[k].k);
        if (o->i) o->i[k] = d->i[j];
        else o->f[k] = d->f[j];
    }
    return true;
}

/* Unsqueeze, Squeeze, Reshape, Cast, Identity: the same values, other dims or type. */
static bool op_reshape_like(ax_ctx *a, node *n, const char *op)
{
    ax_val *x = ax_static(a, n->input[0]);
    if (!x) return false;
    int nd = x->ndim;
    int64_t d[AX_MAX_AXES + 2];
    memcpy(d, x->dims, sizeof d);
    bool ints = x->kind == AV_INT;
    if (!strcmp(op, "Cast")) {
        int64_t to = ix_attr_i(n, "to", 0);
        if (to != OX_FLOAT && to != OX_INT64 && to != OX_INT32 && to != 9 /* bool */)
            return ix_fail(a->c, n, "a cast to ONNX type %lld is not read", (long long)to);
        if (ints && to == OX_FLOAT && !known(a, n, x)) return false;
        ints = to != OX_FLOAT;
    } else if (strcmp(op, "Identity")) {
        ax_val *s = n->n_input > 1 ? ax_static(a, n->input[1]) : NULL;
        if (!s || s->kind != AV_INT || s->ndim != 1 || !known(a, n, s)) return ix_fail(a->c, n, "constant axes or shape expected");
        s = ax_get(a, n->input[1]), x = ax_get(a, n->input[0]);
        if (!strcmp(op, "Reshape")) {
            nd = (int)s->numel;
            int64_t rest = x->numel, minus = -1;
            for (int k = 0; k < nd && k < AX_MAX_AXES + 2; k++) {
                d[k] = s->i[k].k == 0 ? x->dims[k] : s->i[k].k;
                if (d[k] == -1) minus = k;
                else rest = d[k] ? rest / d[k] : 0;
            }
            if (minus >= 0) d[minus] = rest;
        } else {
            bool un = op[0] == 'U';
            int out = un ? nd + (int)s->numel : nd - (int)s->numel;
            if (out < 0 || out > AX_MAX_AXES + 2) return ix_fail(a->c, n, "%d axes", out);
            bool axis[AX_MAX_AXES + 2] = {0};
            for (int64_t k = 0; k < s->numel; k++) {
                int64_t e = s->i[k].k < 0 ? s->i[k].k + (un ? out : nd) : s->i[k].k;
                if (e < 0 || e >= (un ? out : nd)) return ix_fail(a->c, n, "axis %lld out of range", (long long)s->i[k].k);
                axis[e] = true;
            }
            for (int k = 0, j = 0; k < (un ? out : nd); k++) {
                if (un) d[k] = axis[k] ? 1 : x->dims[j++];
                else if (!axis[k]) d[j++] = x->dims[k];
            }
            nd = out;
        }
    }
    ax_val *o = ax_new_static(a, n, n->output[0], ints, nd, d);
    if (!o) return false;
    x = ax_get(a, n->input[0]);
    if (o->numel != x->numel) return ix_fail(a->c, n, "%lld values into a shape of %lld", (long long)x->numel, (long long)o->numel);
    for (int64_t k = 0; k < o->numel; k++) {
        if (ints) o->i[k] = x->kind == AV_INT ? x->i[k] : (ix_sym){(int64_t)x->f[k], 0};
        else o->f[k] = x->kind == AV_INT ? (float)x->i[k].k : x->f[k];
    }
    if (!strcmp(op, "Cast") && ix_attr_i(n, "to", 0) == 9)
        for (int64_t k = 0; k < o->numel; k++) o->i[k] = (ix_sym){o->i[k].k != 0, 0};
    return true;
}

static bool op_concat(ax_ctx *a, node *n)
{
    int64_t total = 0;
    bool ints = true;
    for (size_t k = 0; k < n->n_input; k++) {
        ax_val *v = ax_static(a, n->input[k]);
        if (!v) return false;
        if (v->ndim != 1 || v->kind == AV_TRACED) return ix_fail(a->c, n, "only a Concat of host vectors is read");
        total += v->numel;
        ints = v->kind == AV_INT && (k == 0 || ints);
    }
    ax_val *o = ax_new_static(a, n, n->output[0], ints, 1, &total);
    for (size_t k = 0, at = 0; o && k < n->n_input; k++) {
        ax_val *v = ax_get(a, n->input[k]);
        for (int64_t e = 0; e < v->numel; e++, at++) {
            if (ints) o->i[at] = v->i[e];
            else o->f[at] = v->kind == AV_INT ? (float)v->i[e].k : v->f[e];
        }
    }
    return o != NULL;
}

static bool op_constant_of_shape(ax_ctx *a, node *n)
{
    ax_val *s = ax_static(a, n->input[0]);
    if (!s || !known(a, n, s)) return false;
    if (s->kind != AV_INT || s->ndim != 1 || s->numel > AX_MAX_AXES + 2) return ix_fail(a->c, n, "the shape must be a short integer vector");
    ix_value val = {0};
    const Onnx__AttributeProto *at = ix_attr(n, "value");
    if (at && at->t && !ix_tensor_value(a->c, n, at->t, &val)) return false;
    int64_t d[AX_MAX_AXES + 2];
    for (int64_t k = 0; k < s->numel; k++) d[k] = s->i[k].k;
    ax_val *o = ax_new_static(a, n, n->output[0], val.is_int, (int)s->numel, d);
    for (int64_t k = 0; o && k < o->numel; k++) {
        if (val.is_int) o->i[k] = (ix_sym){val.i ? val.i[0] : 0, 0};
        else o->f[k] = val.f ? val.f[0] : 0;
    }
    free(val.i), free(val.f);
    return o != NULL;
}

static bool op_trilu(ax_ctx *a, node *n)
{
    ax_val *x = ax_static(a, n->input[0]), *kv = x && n->n_input > 1 && *n->input[1] ? ax_static(a, n->input[1]) : NULL;
    if (!x || (n->n_input > 1 && *n->input[1] && !kv)) return false;
    if (x->ndim < 2 || (kv && (kv->kind != AV_INT || kv->numel != 1))) return ix_fail(a->c, n, "a matrix and a constant k expected");
    int64_t k = kv ? kv->i[0].k : 0, R = x->dims[x->ndim - 2], C = x->dims[x->ndim - 1];
    bool upper = ix_attr_i(n, "upper", 1) != 0;
    ax_val *o = ax_new_static(a, n, n->output[0], x->kind == AV_INT, x->ndim, x->dims);
    if (!o) return false;
    x = ax_get(a, n->input[0]);
    for (int64_t e = 0; e < o->numel; e++) {
        int64_t i = e / C % R, j = e % C;
        bool keep = upper ? j - i >= k : j - i <= k;
        if (o->i) o->i[e] = keep ? x->i[e] : (ix_sym){0, 0};
        else o->f[e] = keep ? x->f[e] : 0;
    }
    return true;
}

static bool op_range(ax_ctx *a, node *n)
{
    ax_val *v[3];
    for (int k = 0; k < 3; k++)
        if (!(v[k] = ax_static(a, n->input[k])) || v[k]->numel != 1 || !known(a, n, v[k])) return v[k] ? ix_fail(a->c, n, "scalars expected") : false;
    bool ints = v[0]->kind == AV_INT;
    double s = ints ? (double)v[0]->i[0].k : v[0]->f[0], l = ints ? (double)v[1]->i[0].k : v[1]->f[0];
    double d = ints ? (double)v[2]->i[0].k : v[2]->f[0], len = ceil((l - s) / d);
    if (!(len <= (double)(1 << 26))) return ix_fail(a->c, n, "a Range of %g values is not read", len);
    if (fabs(s) > 1e15 || fabs(d) > 1e15) return ix_fail(a->c, n, "a Range of bounds over 1e15 is not read");
    int64_t cnt = len > 0 ? (int64_t)len : 0;
    ax_val *o = ax_new_static(a, n, n->output[0], ints, 1, &cnt);
    for (int64_t k = 0; o && k < cnt; k++) {
        if (ints) o->i[k] = (ix_sym){(int64_t)(s + (double)k * d), 0};
        else o->f[k] = (float)(s + (double)k * d);
    }
    return o != NULL;
}

/* Where(cond, x, y) and Expand(x, shape) of host tensors. */
static bool op_where_expand(ax_ctx *a, node *n, bool where)
{
    ax_val *in[3];
    int nin = where ? 3 : 1;
    for (int k = 0; k < (where ? 3 : 2); k++)
        if (!(in[k] = ax_static(a, n->input[k]))) return false;
    int nd;
    int64_t od[AX_MAX_AXES + 2];
    ax_val shape = {0};
    if (!where) {   /* the shape as a tensor of those dims, to broadcast against */
        if (in[1]->kind != AV_INT || !known(a, n, in[1]) || in[1]->numel > AX_MAX_AXES + 2) return ix_fail(a->c, n, "a constant shape expected");
        shape.ndim = (int)in[1]->numel;
        for (int k = 0; k < shape.ndim; k++) shape.dims[k] = in[1]->i[k].k;
        in[1] = &shape, nin = 2;
    }
    if (!bcast_dims(nin, in, &nd, od)) return ix_fail(a->c, n, "operands that do not broadcast");
    ax_val *src = where ? in[1] : in[0];
    if (where && (in[0]->kind != AV_INT || (in[1]->kind == AV_INT) != (in[2]->kind == AV_INT)))
        return ix_fail(a->c, n, "a boolean condition and two values of one type expected");
    bool ints = src->kind == AV_INT;
    const char *names[3] = {n->input[0], n->input[1], where ? n->input[2] : NULL};
    ax_val *o = ax_new_static(a, n, n->output[0], ints, nd, od);
    if (!o) return false;
    for (int k = 0; k < (where ? 3 : 1); k++) in[k] = ax_get(a, names[k]);
    for (int64_t e = 0; e < o->numel; e++) {
        ax_val *from = where ? (in[0]->i[bcast_at(in[0], nd, od, e)].k ? in[1] : in[2]) : in[0];
        int64_t j = bcast_at(from, nd, od, e);
        if (ints) o->i[e] = from->i[j];
        else o->f[e] = from->f[j];
    }
    return true;
}

/* Slice(x, starts, ends, axes, steps) of a host tensor, steps positive. */
static bool op_slice(ax_ctx *a, node *n)
{
    ax_val *x = ax_static(a, n->input[0]), *v[4] = {0};
    if (!x) return false;
    for (size_t k = 1; k < n->n_input && k < 5; k++)
        if (*n->input[k] && (!(v[k - 1] = ax_static(a, n->input[k])) || v[k - 1]->kind != AV_INT || !known(a, n, v[k - 1])))
            return v[k - 1] ? ix_fail(a->c, n, "integer host starts, ends, axes and steps expected") : false;
    if (!v[0] || !v[1] || v[0]->numel != v[1]->numel || (v[2] && v[2]->numel != v[0]->numel) || (v[3] && v[3]->numel != v[0]->numel))
        return ix_fail(a->c, n, "starts, ends, axes and steps of one length expected");
    int64_t lo[AX_MAX_AXES + 2] = {0}, step[AX_MAX_AXES + 2], d[AX_MAX_AXES + 2];
    for (int k = 0; k < x->ndim; k++) step[k] = 1, d[k] = x->dims[k];
    for (int64_t e = 0; e < v[0]->numel; e++) {
        int64_t ax = v[2] ? v[2]->i[e].k : e, st = v[3] ? v[3]->i[e].k : 1;
        ax = ax < 0 ? ax + x->ndim : ax;
        if (ax < 0 || ax >= x->ndim || st < 1) return ix_fail(a->c, n, "axis %lld or step %lld is not read", (long long)ax, (long long)st);
        int64_t s = v[0]->i[e].k, t = v[1]->i[e].k, len = x->dims[ax];
        s = s < 0 ? s + len : s, t = t < 0 ? t + len : t;
        s = s < 0 ? 0 : s > len ? len : s, t = t < 0 ? 0 : t > len ? len : t;
        lo[ax] = s, step[ax] = st, d[ax] = t > s ? (t - s + st - 1) / st : 0;
    }
    ax_val *o = ax_new_static(a, n, n->output[0], x->kind == AV_INT, x->ndim, d);
    for (int64_t e = 0; o && e < o->numel; e++) {
        int64_t rest = e, at = 0, stride = 1;
        for (int k = x->ndim - 1; k >= 0; k--) {
            at += (lo[k] + rest % d[k] * step[k]) * stride;
            rest /= d[k];
            stride *= x->dims[k];
        }
        if (o->i) o->i[e] = x->i[at];
        else o->f[e] = x->f[at];
    }
    return o != NULL;
}

bool ax_static_op(ax_ctx *a, node *n, const char *op)
{
    if (!strcmp(op, "Constant")) {
        ix_value *iv = ix_constant_ahead(a->c, n->output[0]);
        return iv && ax_from_import(a, iv);
    }
    if (!strcmp(op, "Shape")) return op_shape(a, n);
    if (!strcmp(op, "Gather")) return op_gather(a, n);
    if (!strcmp(op, "Unsqueeze") || !strcmp(op, "Squeeze") || !strcmp(op, "Reshape") || !strcmp(op, "Cast") ||
        !strcmp(op, "Identity"))
        return op_reshape_like(a, n, op);
    if (!strcmp(op, "Concat")) return op_concat(a, n);
    if (!strcmp(op, "Add")) return elementwise(a, n, '+');
    if (!strcmp(op, "Sub")) return elementwise(a, n, '-');
    if (!strcmp(op, "Mul")) return elementwise(a, n, '*');
    if (!strcmp(op, "Div")) return elementwise(a, n, '/');
    if (!strcmp(op, "Equal")) return elementwise(a, n, '=');
    if (!strcmp(op, "ConstantOfShape")) return op_constant_of_shape(a, n);
    if (!strcmp(op, "Trilu")) return op_trilu(a, n);
    if (!strcmp(op, "Range")) return op_range(a, n);
    if (!strcmp(op, "Where")) return op_where_expand(a, n, true);
    if (!strcmp(op, "Expand")) return op_where_expand(a, n, false);
    if (!strcmp(op, "Slice")) return op_slice(a, n);
    return ix_fail(a->c, n, "%s on host values is not read within attention", op);
}
