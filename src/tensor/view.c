/* view.c: views share their input's buffer and change only shape, strides and offset.
 * Their backward passes put the gradient back into the input's shape. */
#include <string.h>

#include "tensor_impl.h"

static clg_status reshape_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *in = n->inputs[0];
    return (gin[0] = clg_reshape(g, in->ndim, in->shape)) ? CLG_OK : g->dev->status;
}

clg_tensor *clg_reshape(clg_tensor *t, int ndim, const int64_t *shape)
{
    if (!t) return NULL;
    if (ndim < 0 || ndim > CLG_MAX_DIMS || (ndim && !shape))
        return clg__op_fail(t->dev, CLG_ERR_SHAPE, "reshape", "%d axes (at most %d)", ndim, CLG_MAX_DIMS);
    int64_t s[CLG_MAX_DIMS], known = 1;
    int infer = -1;
    for (int d = 0; d < ndim; d++) {
        s[d] = shape[d];
        if (s[d] == -1 && infer < 0) infer = d;
        else if (s[d] < 0) return clg__op_fail(t->dev, CLG_ERR_SHAPE, "reshape", "bad size %lld", (long long)s[d]);
        else known *= s[d];
    }
    if (infer >= 0) s[infer] = known ? t->numel / known : 0;
    int64_t total = 1;
    for (int d = 0; d < ndim; d++) total *= s[d];
    if (total != t->numel) {
        char want[128];
        return clg__op_fail(t->dev, CLG_ERR_SHAPE, "reshape", "%s cannot take the shape %s", CLG_DESC(t),
                            clg_shape_str(ndim, s, want, sizeof want));
    }
    /* Views need contiguous values; anything else is copied first, as torch.reshape. */
    clg_tensor *src = clg_tensor_is_contiguous(t) ? t : clg__copy_as(t, t->dtype);
    if (!src) return NULL;
    int64_t strides[CLG_MAX_DIMS];
    clg__contiguous_strides(ndim, s, strides);
    clg_tensor *y = clg__tensor_view(src, ndim, s, strides, src->offset);
    if (src != t) clg_tensor_free(src);   /* y holds the buffer */
    return clg__taped(y, CLG_OP_reshape, reshape_bw, 1, &t, NULL);
}

clg_tensor *clg_flatten(clg_tensor *t, int start, int end)
{
    if (!t) return NULL;
    if (t->ndim == 0) return clg_reshape(t, 1, (const int64_t[]){1});
    int a = clg__axis("flatten", t, start, t->ndim), b = a < 0 ? -1 : clg__axis("flatten", t, end, t->ndim);
    if (a < 0 || b < 0) return NULL;
    if (b < a) return clg__op_fail(t->dev, CLG_ERR_SHAPE, "flatten", "start axis %d after end axis %d", start, end);
    int64_t s[CLG_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < a; d++) s[nd++] = t->shape[d];
    int64_t m = 1;
    for (int d = a; d <= b; d++) m *= t->shape[d];
    s[nd++] = m;
    for (int d = b + 1; d < t->ndim; d++) s[nd++] = t->shape[d];
    return clg_reshape(t, nd, s);
}

static clg_status permute_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    int inv[CLG_MAX_DIMS];
    for (int d = 0; d < g->ndim; d++) inv[n->i[d]] = d;
    return (gin[0] = clg_permute(g, g->ndim, inv)) ? CLG_OK : g->dev->status;
}

clg_tensor *clg_permute(clg_tensor *t, int ndim, const int *axes)
{
    if (!t) return NULL;
    if (ndim != t->ndim || (ndim && !axes))
        return clg__op_fail(t->dev, CLG_ERR_SHAPE, "permute", "%d axes given for %s", ndim, CLG_DESC(t));
    int64_t s[CLG_MAX_DIMS] = {0}, st[CLG_MAX_DIMS] = {0};
    bool seen[CLG_MAX_DIMS] = {false};
    int ax[CLG_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        int a = clg__axis("permute", t, axes[d], ndim);
        if (a < 0) return NULL;
        if (seen[a]) return clg__op_fail(t->dev, CLG_ERR_SHAPE, "permute", "axis %d given twice", axes[d]);
        seen[a] = true;
        ax[d] = a;
        s[d] = t->shape[a];
        st[d] = t->strides[a];
    }
    clg_node *node = NULL;
    clg_tensor *y = clg__taped(clg__tensor_view(t, ndim, s, st, t->offset), CLG_OP_permute, permute_bw, 1, &t, &node);
    if (node)
        for (int d = 0; d < ndim; d++) node->i[d] = ax[d];
    return y;
}

clg_tensor *clg_transpose(clg_tensor *t, int axis0, int axis1)
{
    if (!t) return NULL;
    int a = clg__axis("transpose", t, axis0, t->ndim), b = a < 0 ? -1 : clg__axis("transpose", t, axis1, t->ndim);
    if (a < 0 || b < 0) return NULL;
    int ax[CLG_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) ax[d] = d;
    ax[a] = b;
    ax[b] = a;
    return clg_permute(t, t->ndim, ax);
}

/* narrow and slice: the gradient of the picked elements lands in zeros of the
 * input's shape, at the same places. */
static clg_status slice_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *in = n->inputs[0];
    clg_tensor *z = clg_zeros(g->dev, in->dtype, in->ndim, in->shape);
    clg_tensor *part = clg_slice(z, (int)n->i[0], n->i[1], n->i[2], n->i[3]);
    if (!part || clg_copy_(part, g) != CLG_OK) return g->dev->status;
    gin[0] = z;
    return CLG_OK;
}

clg_tensor *clg_slice(clg_tensor *t, int axis, int64_t start, int64_t stop, int64_t step)
{
    if (!t) return NULL;
    int a = clg__axis("slice", t, axis, t->ndim);
    if (a < 0) return NULL;
    if (step <= 0) return clg__op_fail(t->dev, CLG_ERR_INVALID_ARGUMENT, "slice", "step %lld", (long long)step);
    int64_t n = t->shape[a];
    /* Python's clipping of start and stop */
    if (start < 0) start += n;
    if (stop < 0) stop += n;
    start = start < 0 ? 0 : start > n ? n : start;
    stop = stop < start ? start : stop > n ? n : stop;
    int64_t len = (stop - start + step - 1) / step;
    int64_t s[CLG_MAX_DIMS], st[CLG_MAX_DIMS];
    memcpy(s, t->shape, sizeof s);
    memcpy(st, t->strides, sizeof st);
    s[a] = len;
    st[a] = t->strides[a] * step;
    int64_t off = t->offset + (len ? start * t->strides[a] : 0);
    clg_node *node = NULL;
    clg_tensor *y = clg__taped(clg__tensor_view(t, t->ndim, s, st, off), CLG_OP_slice, slice_bw, 1, &t, &node);
    if (node) {
        node->i[0] = a;
        node->i[1] = start;
        node->i[2] = stop;
        node->i[3] = step;
    }
    return y;
}

clg_tensor *clg_narrow(clg_tensor *t, int axis, int64_t start, int64_t length)
{
    if (!t) return NULL;
    int a = clg__axis("narrow", t, axis, t->ndim);
    if (a < 0) return NULL;
    if (start < 0 || length < 0 || start + length > t->shape[a])
        return clg__op_fail(t->dev, CLG_ERR_SHAPE, "narrow", "elements %lld..%lld of axis %d of %s", (long long)start,
                            (long long)(start + length - 1), axis, CLG_DESC(t));
    clg_tensor *y = clg_slice(t, a, start, start + length, 1);
    if (y && y->node) y->node->op = CLG_OP_narrow;
    return y;
}

/* The engine sums a broadcast gradient back to the input's shape. */
static clg_status expand_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    (void)n;
    gin[0] = g;
    return CLG_OK;
}

clg_tensor *clg_expand(clg_tensor *t, int ndim, const int64_t *shape)
{
    if (!t) return NULL;
    if (ndim < t->ndim || ndim > CLG_MAX_DIMS || (ndim && !shape))
        return clg__op_fail(t->dev, CLG_ERR_SHAPE, "expand", "%s to %d axes", CLG_DESC(t), ndim);
    int64_t s[CLG_MAX_DIMS], st[CLG_MAX_DIMS];
    int lead = ndim - t->ndim;
    for (int d = 0; d < ndim; d++) {
        int64_t have = d < lead ? 1 : t->shape[d - lead];
        int64_t want = shape[d] == -1 && d >= lead ? have : shape[d];
        if (want < 0 || (have != want && have != 1)) {
            char w[128];
            return clg__op_fail(t->dev, CLG_ERR_SHAPE, "expand", "%s cannot expand to %s", CLG_DESC(t),
                                clg_shape_str(ndim, shape, w, sizeof w));
        }
        s[d] = want;
        st[d] = d < lead || have != want ? 0 : t->strides[d - lead];
    }
    return clg__taped(clg__tensor_view(t, ndim, s, st, t->offset), CLG_OP_expand, expand_bw, 1, &t, NULL);
}

/* The gradient of a squeeze is the same axis put back, and of an unsqueeze taken out:
 * views whatever g's strides (reshape_bw would copy a strided g, as a permute's). */
static clg_status squeeze_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    return (gin[0] = clg_unsqueeze(g, (int)n->i[0])) ? CLG_OK : g->dev->status;
}

static clg_status unsqueeze_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    return (gin[0] = clg_squeeze(g, (int)n->i[0])) ? CLG_OK : g->dev->status;
}

static clg_tensor *squeeze_like(clg_tensor *t, int ndim, const int64_t *s, const int64_t *st, int op, int axis)
{
    clg_node *node = NULL;
    clg_tensor *y = clg__taped(clg__tensor_view(t, ndim, s, st, t->offset), op,
                               op == CLG_OP_squeeze ? squeeze_bw : unsqueeze_bw, 1, &t, &node);
    if (node) node->i[0] = axis;
    return y;
}

clg_tensor *clg_squeeze(clg_tensor *t, int axis)
{
    if (!t) return NULL;
    int a = clg__axis("squeeze", t, axis, t->ndim);
    if (a < 0) return NULL;
    if (t->shape[a] != 1)
        return clg__op_fail(t->dev, CLG_ERR_SHAPE, "squeeze", "axis %d of %s is not of size 1", axis, CLG_DESC(t));
    int64_t s[CLG_MAX_DIMS], st[CLG_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < t->ndim; d++)
        if (d != a) {
            s[nd] = t->shape[d];
            st[nd++] = t->strides[d];
        }
    return squeeze_like(t, nd, s, st, CLG_OP_squeeze, a);
}

clg_tensor *clg_unsqueeze(clg_tensor *t, int axis)
{
    if (!t) return NULL;
    if (t->ndim == CLG_MAX_DIMS)
        return clg__op_fail(t->dev, CLG_ERR_SHAPE, "unsqueeze", "%s has the most axes a tensor can", CLG_DESC(t));
    int a = clg__axis("unsqueeze", t, axis, t->ndim + 1);
    if (a < 0) return NULL;
    int64_t s[CLG_MAX_DIMS], st[CLG_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d <= t->ndim; d++) {
        if (d == a) {
            s[nd] = 1;
            st[nd++] = d < t->ndim ? t->strides[d] * t->shape[d] : 1;
        }
        if (d < t->ndim) {
            s[nd] = t->shape[d];
            st[nd++] = t->strides[d];
        }
    }
    return squeeze_like(t, nd, s, st, CLG_OP_unsqueeze, a);
}
