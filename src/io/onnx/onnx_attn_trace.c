/* onnx_attn_trace.c: one node of an attention region on the tensors it follows
 * (onnx_attn.h). A tensor is known by what each of its axes holds: factors B (batch), T
 * (time; S: the keys' time), C (x's features), P (a projection's columns), H and D (those
 * columns split into heads), O (the output projection's). Transpose permutes axes,
 * Reshape regroups the factors (splitting P into H, D once), Slice and Split take
 * columns of a projection, Mul and Div by a scalar scale, the two MatMuls of
 * activations contract the head dims and the keys' time; each checks that its
 * operands line up so, or fails naming the node. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_attn.h"

typedef const Onnx__NodeProto node;

static ax_val *traced(ax_ctx *a, const char *name)
{
    ax_val *v = *name ? ax_get(a, name) : NULL;
    return v && v->kind == AV_TRACED ? v : NULL;
}

/* A new traced output k of n, as t with its data copied (host arrays dropped). */
ax_val *ax_derive(ax_ctx *a, node *n, size_t k, const ax_val *t)
{
    ax_val *o = ax_get(a, n->output[k]);
    if (!o) return NULL;
    if (o->kind != AV_NONE) return ix_fail(a->c, n, "value \"%s\" is made twice", n->output[k]), NULL;
    const char *name = o->name;
    *o = *t;
    o->name = name;
    o->i = NULL, o->f = NULL;
    return o;
}

static ix_sym factor_size(const ax_ctx *a, const ax_val *t, ax_factor f)
{
    switch (f) {
    case AF_B: return (ix_sym){1, 1};
    case AF_T: case AF_S: return (ix_sym){a->T, 0};
    case AF_C: return (ix_sym){a->C, 0};
    case AF_P: return (ix_sym){t->part.hi - t->part.lo, 0};
    case AF_H: return (ix_sym){t->part.heads, 0};
    case AF_D: return (ix_sym){(t->part.hi - t->part.lo) / t->part.heads, 0};
    default: return (ix_sym){a->C, 0};   /* AF_O: checked to be C at the projection */
    }
}

static bool op_transpose(ax_ctx *a, node *n, ax_val *t)
{
    int64_t perm[AX_MAX_AXES];
    const Onnx__AttributeProto *p = ix_attr(n, "perm");
    for (int k = 0; k < t->nax; k++) perm[k] = p ? (k < (int)p->n_ints ? p->ints[k] : -1) : t->nax - 1 - k;
    if (p && (int)p->n_ints != t->nax) return ix_fail(a->c, n, "perm has %zu values for %d axes", p->n_ints, t->nax);
    ax_val *o = ax_derive(a, n, 0, t);
    if (!o) return false;
    for (int k = 0; k < t->nax; k++) {
        if (perm[k] < 0 || perm[k] >= t->nax) return ix_fail(a->c, n, "a bad perm");
        o->ax[k] = t->ax[perm[k]];
    }
    return true;
}

/* Reshape: the factors in order, regrouped to the target sizes. */
static bool op_reshape(ax_ctx *a, node *n, ax_val *t)
{
    ax_val *s = ax_static(a, n->input[1]);
    if (!s) return false;
    if (s->kind != AV_INT || s->ndim != 1 || s->numel < 1 || s->numel > AX_MAX_AXES)
        return ix_fail(a->c, n, "the shape must be a host vector of 1 to %d sizes", AX_MAX_AXES);
    ax_factor flat[AX_MAX_FACTORS * AX_MAX_AXES + 1];
    int nf = 0;
    ix_sym total = {1, 0}, want[AX_MAX_AXES];
    for (int k = 0; k < t->nax; k++)
        for (int f = 0; f < t->ax[k].n; f++) {
            flat[nf++] = t->ax[k].f[f];
            ix_sym z = factor_size(a, t, t->ax[k].f[f]);
            total = (ix_sym){total.k * z.k, total.b + z.b};
        }
    int minus = -1;
    ix_sym rest = total;
    for (int k = 0; k < s->numel; k++) {
        want[k] = s->i[k];
        if (want[k].b == 0 && want[k].k == 0 && !ix_attr_i(n, "allowzero", 0) && k < t->nax) {
            want[k] = (ix_sym){1, 0};   /* the input's size there */
            for (int f = 0; f < t->ax[k].n; f++) {
                ix_sym z = factor_size(a, t, t->ax[k].f[f]);
                want[k] = (ix_sym){want[k].k * z.k, want[k].b + z.b};
            }
        }
        if (want[k].b == 0 && want[k].k == -1) minus = k;
        else if (want[k].k <= 0 || want[k].b > rest.b || rest.k % want[k].k)
            return ix_fail(a->c, n, "a shape that does not divide the tensor's sizes");
        else rest = (ix_sym){rest.k / want[k].k, rest.b - want[k].b};
    }
    if (minus >= 0) want[minus] = rest;
    ax_val *o = ax_derive(a, n, 0, t);
    if (!o) return false;
    o->nax = (int)s->numel;
    int at = 0;
    for (int k = 0; k < o->nax; k++) {
        ix_sym acc = {1, 0};
        o->ax[k].n = 0;
        while (acc.k != want[k].k || acc.b != want[k].b) {
            if (at == nf || o->ax[k].n == AX_MAX_FACTORS) return ix_fail(a->c, n, "the new shape splits the tensor's axes otherwise");
            ix_sym z = factor_size(a, o, flat[at]);
            ix_sym p = {acc.k * z.k, acc.b + z.b};
            bool fits = p.b <= want[k].b && want[k].k % p.k == 0;
            if (!fits && flat[at] == AF_P && !o->part.heads && acc.b == want[k].b && want[k].k % acc.k == 0 &&
                (o->part.hi - o->part.lo) % (want[k].k / acc.k) == 0) {
                o->part.heads = want[k].k / acc.k;   /* P into heads H of D */
                memmove(flat + at + 1, flat + at, (size_t)(nf - at) * sizeof *flat);
                flat[at] = AF_H, flat[at + 1] = AF_D, nf++;
                continue;
            }
            if (!fits) return ix_fail(a->c, n, "the new shape splits the tensor's axes otherwise");
            o->ax[k].f[o->ax[k].n++] = flat[at++];
            acc = p;
        }
    }
    if (at != nf) return ix_fail(a->c, n, "the new shape leaves factors over");
    return true;
}

/* Slice or Split of a projection's columns (its last axis, not split into heads). */
static bool columns(ax_ctx *a, node *n, ax_val *t, size_t k, int64_t lo, int64_t hi, int64_t axis)
{
    if (axis < 0) axis += t->nax;
    if (t->what != AW_PROJ || t->part.heads || axis != t->nax - 1 || t->ax[axis].n != 1 || t->ax[axis].f[0] != AF_P)
        return ix_fail(a->c, n, "only a projection's columns (its last axis) are read sliced");
    int64_t w = t->part.hi - t->part.lo;
    lo = lo < 0 ? lo + w : lo, hi = hi < 0 ? hi + w : hi > w ? w : hi;
    if (lo < 0 || hi <= lo) return ix_fail(a->c, n, "an empty slice");
    ax_val *o = ax_derive(a, n, k, t);
    if (!o) return false;
    o->part.lo = t->part.lo + lo, o->part.hi = t->part.lo + hi;
    return true;
}

static bool op_slice(ax_ctx *a, node *n, ax_val *t)
{
    ax_val *v[4] = {0};
    for (size_t k = 1; k < n->n_input && k < 5; k++)
        if (*n->input[k] && (!(v[k - 1] = ax_static(a, n->input[k])) || v[k - 1]->kind != AV_INT || v[k - 1]->numel != 1))
            return v[k - 1] ? ix_fail(a->c, n, "one host start, end, axis and step expected") : false;
    if (!v[0] || !v[1] || (v[3] && v[3]->i[0].k != 1) || v[0]->i[0].b || v[1]->i[0].b)
        return ix_fail(a->c, n, "a slice of step 1 with known bounds expected");
    return columns(a, n, t, 0, v[0]->i[0].k, v[1]->i[0].k, v[2] ? v[2]->i[0].k : 0);
}

static bool op_split(ax_ctx *a, node *n, ax_val *t)
{
    int64_t sizes[8], cnt = (int64_t)n->n_output;
    ax_val *s = n->n_input > 1 && *n->input[1] ? ax_static(a, n->input[1]) : NULL;
    if (n->n_input > 1 && *n->input[1] && !s) return false;
    if (cnt > 8 || (s && (s->kind != AV_INT || s->numel != cnt))) return ix_fail(a->c, n, "the split sizes are not read");
    for (int64_t k = 0; k < cnt; k++) sizes[k] = s ? s->i[k].k : (t->part.hi - t->part.lo) / cnt;
    int64_t at = 0;
    for (int64_t k = 0; k < cnt; at += sizes[k++])
        if (!columns(a, n, t, (size_t)k, at, at + sizes[k], ix_attr_i(n, "axis", 0))) return false;
    return true;
}

/* Mul or Div by a host scalar: a scale. */
static bool op_scale(ax_ctx *a, node *n, ax_val *t, int k, bool div)
{
    ax_val *s = ax_static(a, n->input[!k]);
    if (!s) return false;
    if (s->kind != AV_FLOAT || s->numel != 1 || (div && k == 1) || s->f[0] == 0 || !isfinite(s->f[0]))
        return ix_fail(a->c, n, "only a product or quotient by a nonzero scalar is read within attention");
    ax_val *o = ax_derive(a, n, 0, t);
    if (o) o->scale = div ? o->scale / s->f[0] : o->scale * s->f[0];
    return o != NULL;
}

/* x W (x [B, T, C]) or ctx W_o: a projection. */
static bool op_project(ax_ctx *a, node *n, ax_val *t)
{
    bool gemm = !strcmp(n->op_type, "Gemm"), trans = gemm && ix_attr_i(n, "transB", 0);
    if (gemm && (ix_attr_i(n, "transA", 0) || ix_attr_f(n, "alpha", 1) != 1 || ix_attr_f(n, "beta", 1) != 1))
        return ix_fail(a->c, n, "only Gemm with transA = 0, alpha = beta = 1 is read");
    ax_val *w = ax_static(a, n->input[1]), *b = w && gemm && !ix_no_input(n, 2) ? ax_static(a, n->input[2]) : NULL;
    if (!w || (gemm && !ix_no_input(n, 2) && !b)) return false;
    if (w->kind != AV_FLOAT || (b && (b->kind != AV_FLOAT || b->ndim != 1)))
        return ix_fail(a->c, n, "the weight and bias must be float host tensors");
    int64_t in = w->ndim == 2 ? w->dims[trans ? 1 : 0] : -1, out = w->ndim == 2 ? w->dims[trans ? 0 : 1] : -1;
    const ax_axis *last = &t->ax[t->nax - 1];
    ax_val *o = NULL;
    if (t->what == AW_X && in == a->C && last->n == 1 && last->f[0] == AF_C) {
        if (a->nproj == AX_MAX_PROJ) return ix_fail(a->c, n, "more than %d projections of the input", AX_MAX_PROJ);
        if (b && b->numel != out) return ix_fail(a->c, n, "a bias of %lld for %lld columns", (long long)b->numel, (long long)out);
        a->proj[a->nproj] = (ax_proj){w->f, b ? b->f : NULL, out, trans};
        if (!(o = ax_derive(a, n, 0, t))) return false;
        o->what = AW_PROJ;
        o->part = (ax_part){a->nproj++, 0, out, 0};
        o->ax[o->nax - 1] = (ax_axis){1, {AF_P}};
        return true;
    }
    bool heads = (last->n == 2 && last->f[0] == AF_H && last->f[1] == AF_D) ||
                 (last->n == 1 && last->f[0] == AF_D && t->part.heads == 1);
    if (t->what != AW_CTX || !heads || in != a->C || out != a->C || t->scale != 1)
        return ix_fail(a->c, n, "a product by a weight that is neither a projection of the input [.., %lld] nor the "
                       "output projection of the heads side by side", (long long)a->C);
    if (b && b->numel != out) return ix_fail(a->c, n, "a bias of %lld for %lld columns", (long long)b->numel, (long long)out);
    if (!(o = ax_derive(a, n, 0, t))) return false;
    o->what = AW_OUT;
    o->ow = w->f, o->ob = b ? b->f : NULL, o->otrans = trans, o->oname = n->input[1];
    o->ax[o->nax - 1] = (ax_axis){1, {AF_O}};
    return true;
}

static bool op_two(const char *op)
{
    static const char *const two[] = {"Reshape", "Mul", "Div", "MatMul", "Gemm", "Add"};
    for (size_t i = 0; i < sizeof two / sizeof *two; i++)
        if (!strcmp(op, two[i])) return true;
    return false;
}

bool ax_trace_node(ax_ctx *a, node *n)
{
    const char *op = n->op_type;
    int k = -1, cnt = 0;   /* the first traced input, and how many */
    for (size_t j = 0; j < n->n_input; j++)
        if (traced(a, n->input[j])) cnt++, k = k < 0 ? (int)j : k;
    for (size_t j = 0; !cnt && j < n->n_input; j++) {
        const ix_value *v = *n->input[j] ? ix_value_find(a->c, n->input[j]) : NULL;
        if (v && v->kind == IX_ACT)
            return ix_fail(a->c, n, "it reads \"%s\", an activation other than the attention's input (only "
                           "self-attention, q, k and v from one activation, is read)", v->name);
    }
    if (!cnt) return true;   /* host arithmetic: evaluated when something reads it */
    size_t need = !strcmp(op, "Where") ? 3 : !strcmp(op, "Slice") ? 3 : op_two(op) ? 2 : 1;
    if (n->n_input < need) return ix_fail(a->c, n, "%zu inputs (%zu expected)", n->n_input, need);
    ax_val *t = traced(a, n->input[k]), *x = k == 0 ? t : NULL, *y = n->n_input > 1 ? traced(a, n->input[1]) : NULL;
    if (cnt > 1 && strcmp(op, "MatMul")) return ix_fail(a->c, n, "%s of two activations is not read within attention", op);
    if (!strcmp(op, "Transpose")) return op_transpose(a, n, t);
    if (!strcmp(op, "Reshape") && x) return op_reshape(a, n, t);
    if (!strcmp(op, "Slice") && x) return op_slice(a, n, t);
    if (!strcmp(op, "Split") && x) return op_split(a, n, t);
    if ((!strcmp(op, "Mul") || !strcmp(op, "Div")) && !(x && y)) return op_scale(a, n, t, k, op[0] == 'D');
    if ((!strcmp(op, "MatMul") || !strcmp(op, "Gemm")) && x && !y) return op_project(a, n, t);
    if (!strcmp(op, "MatMul") && x && y) return ax_trace_product(a, n, x, y);
    if (!strcmp(op, "Add") || !strcmp(op, "Where")) return ax_trace_add(a, n, t, k);
    if (!strcmp(op, "Softmax")) return ax_trace_softmax(a, n, t);
    return ix_fail(a->c, n, "%s is not read within attention (read: projections, Slice and Split of their columns, "
                   "Reshape, Transpose, scaling, q k^T, a causal mask, Softmax on the keys, the product by v)", op);
}
