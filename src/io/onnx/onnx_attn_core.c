/* onnx_attn_core.c: attention's core on the tensors followed (onnx_attn.h): q k^T, a
 * mask added (or filled in by Where), Softmax on the keys, the product by v; and the
 * biases added to the projections. Each checks what the axes hold: the heads of q, k
 * and v line up axis for axis, the contraction is over the head dims, then over the
 * keys' time; the mask is causal or none; the scale is 1 / sqrt(D). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_attn.h"

typedef const Onnx__NodeProto node;

static bool is_axis(const ax_val *t, int k, ax_factor f)
{
    return k >= 0 && k < t->nax && t->ax[k].n == 1 && t->ax[k].f[0] == f;
}

/* A projection whose columns were never split is one head (nn.MultiheadAttention with
 * one head reshapes to [T, B * 1, D]): its P axis holds that head's dims. */
static void one_head(ax_val *t)
{
    if (t->what != AW_PROJ || t->part.heads) return;
    for (int k = 0; k < t->nax; k++)
        if (t->ax[k].n == 1 && t->ax[k].f[0] == AF_P) t->ax[k].f[0] = AF_D, t->part.heads = 1;
}

/* The axes before the last two: the same in x and y, holding the batch and the heads
 * (in any order or grouping, the same in both; no heads axis for one head). */
static bool same_lead(const ax_val *x, const ax_val *y)
{
    if (x->nax != y->nax || x->nax < 3) return false;
    int b = 0, h = 0;
    for (int k = 0; k < x->nax - 2; k++) {
        if (x->ax[k].n != y->ax[k].n || memcmp(x->ax[k].f, y->ax[k].f, (size_t)x->ax[k].n * sizeof *x->ax[k].f)) return false;
        for (int f = 0; f < x->ax[k].n; f++) {
            b += x->ax[k].f[f] == AF_B;
            h += x->ax[k].f[f] == AF_H;
            if (x->ax[k].f[f] != AF_B && x->ax[k].f[f] != AF_H) return false;
        }
    }
    return b == 1 && (h == 1 || (h == 0 && x->part.heads == 1));
}

static int64_t head_dim(const ax_part *p) { return p->heads ? (p->hi - p->lo) / p->heads : 0; }

bool ax_trace_product(ax_ctx *a, node *n, ax_val *x, ax_val *y)
{
    int L = x->nax - 1;
    one_head(x), one_head(y);
    bool qk = x->what == AW_PROJ && y->what == AW_PROJ && x->part.heads && x->part.heads == y->part.heads &&
              head_dim(&x->part) == head_dim(&y->part) && same_lead(x, y) && is_axis(x, L - 1, AF_T) &&
              is_axis(x, L, AF_D) && is_axis(y, L - 1, AF_D) && is_axis(y, L, AF_T);
    bool pv = x->what == AW_PROBS && y->what == AW_PROJ && y->part.heads == x->part.heads && same_lead(x, y) &&
              is_axis(x, L - 1, AF_T) && is_axis(x, L, AF_S) && is_axis(y, L - 1, AF_T) && is_axis(y, L, AF_D);
    if (!qk && !pv)
        return ix_fail(a->c, n, "a product of two activations that is neither q k^T nor softmax(q k^T) v, head by head "
                       "(the heads, times and head dims of its operands do not line up so)");
    ax_val *o = ax_derive(a, n, 0, x);
    if (!o) return false;
    o->scale = x->scale * y->scale;
    if (qk) {
        o->what = AW_SCORES;
        o->q = x->part, o->k = y->part;
        o->ax[L] = (ax_axis){1, {AF_S}};
    } else {
        o->what = AW_CTX;
        o->v = y->part;
        o->part = y->part;   /* the heads and head dims of the axes from here on */
        o->ax[L] = (ax_axis){1, {AF_D}};
    }
    return true;
}

bool ax_trace_softmax(ax_ctx *a, node *n, ax_val *t)
{
    int64_t axis = ix_attr_i(n, "axis", -1);
    if (axis < 0) axis += t->nax;
    if (t->what != AW_SCORES) return ix_fail(a->c, n, "a Softmax of something other than the scores q k^T");
    if (axis != t->nax - 1 || !is_axis(t, t->nax - 1, AF_S))
        return ix_fail(a->c, n, "Softmax on axis %lld, not on the keys' time (the scores' last axis)", (long long)axis);
    double want = 1 / sqrt((double)head_dim(&t->q));
    if (fabs(t->scale - want) > 1e-6 * want)
        return ix_fail(a->c, n, "the scores are scaled by %g, not 1 / sqrt(%lld) (only that scale is read)", t->scale,
                       (long long)head_dim(&t->q));
    ax_val *o = ax_derive(a, n, 0, t);
    if (!o) return false;
    o->what = AW_PROBS;
    o->scale = 1;
    return true;
}

/* The additive mask m on the scores t: [.., T, T] after leading ones; causal or zeros. */
static bool mask(ax_ctx *a, node *n, ax_val *t, const ax_val *m, const float *vals)
{
    int L = t->nax - 1;
    bool shaped = t->what == AW_SCORES && !t->masked && is_axis(t, L - 1, AF_T) && is_axis(t, L, AF_S) && m->ndim >= 2 &&
                  m->ndim <= t->nax && m->dims[m->ndim - 1] == a->T && m->dims[m->ndim - 2] == a->T;
    for (int k = 0; shaped && k < m->ndim - 2; k++) shaped = m->dims[k] == 1;
    if (!shaped) return ix_fail(a->c, n, "something added to an activation within attention that is not a mask [T, T] "
                                "on the scores (or a second mask)");
    bool zeros = true, causal = true;
    for (int64_t i = 0; i < a->T; i++)
        for (int64_t j = 0; j < a->T; j++) {
            float v = vals[i * a->T + j];
            zeros = zeros && v == 0;
            causal = causal && (j > i ? isinf(v) && v < 0 : v == 0);
        }
    if (!zeros && !causal)
        return ix_fail(a->c, n, "a mask other than the causal one (0 on and below the diagonal, -inf above) or none");
    ax_val *o = ax_derive(a, n, 0, t);
    if (o) o->masked = true, o->causal = causal;
    return o != NULL;
}

/* Add of a host tensor: a projection's bias, the output projection's, or a mask; Where
 * (cond, fill, scores) or (cond, scores, fill): a mask of fill where the scores give way. */
bool ax_trace_add(ax_ctx *a, node *n, ax_val *t, int k)
{
    if (!strcmp(n->op_type, "Where")) {
        ax_val *cond = ax_static(a, n->input[0]), *fill = cond ? ax_static(a, n->input[k == 1 ? 2 : 1]) : NULL;
        if (!fill) return false;
        if (k == 0 || cond->kind != AV_INT || fill->kind != AV_FLOAT || fill->numel != 1 || cond->numel > (1 << 24))
            return ix_fail(a->c, n, "only Where(condition, fill, scores) with a host condition and a scalar fill is read");
        ax_val *m = ax_new_static(a, n, "", false, cond->ndim, cond->dims);
        if (!m) return false;
        for (int64_t e = 0; e < m->numel; e++) m->f[e] = (cond->i[e].k != 0) == (k == 2) ? fill->f[0] : 0;
        bool ok = mask(a, n, t, m, m->f);
        m->kind = AV_NONE;   /* a scratch value: not found by name again */
        return ok;
    }
    ax_val *b = ax_static(a, n->input[!k]);
    if (!b) return false;
    if (b->kind != AV_FLOAT) return ix_fail(a->c, n, "an integer tensor added to an activation");
    int L = t->nax - 1;
    bool row = b->ndim >= 1 && b->numel == b->dims[b->ndim - 1];   /* [.., N] with ones before */
    if (t->what == AW_PROJ && !t->part.heads && t->part.lo == 0 && t->part.hi == a->proj[t->part.proj].n && row &&
        b->numel == t->part.hi && !a->proj[t->part.proj].b && t->scale == 1 && is_axis(t, L, AF_P)) {
        a->proj[t->part.proj].b = b->f;
        return ax_derive(a, n, 0, t) != NULL;
    }
    if (t->what == AW_OUT && !t->ob && row && b->numel == a->C && is_axis(t, L, AF_O)) {
        ax_val *o = ax_derive(a, n, 0, t);
        if (o) o->ob = b->f;
        return o != NULL;
    }
    if (t->what == AW_SCORES) return mask(a, n, t, b, b->f);
    return ix_fail(a->c, n, "a constant added to an activation within attention that is neither a projection's bias "
                   "nor a mask on the scores");
}
