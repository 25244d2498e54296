/* reshape_ops.c: flip, repeat and pad. flip is a copy that reads the input with its
 * flipped axes' strides negated (the copy kernels take any int strides), with its own
 * backward (the gradient flipped back). repeat and pad are made of taped views, concat
 * and index_select, so their gradients come from those ops. */
#include <stdlib.h>
#include <string.h>

#include "tensor_impl.h"

/* ---- flip ------------------------------------------------------------------------------------------ */

/* A copy of t with the axes in mask reversed, off the tape. */
static clg_tensor *flipped(clg_tensor *t, const bool *mask)
{
    clg_tensor view = *t;   /* the same storage read backwards: only the copy sees it */
    for (int d = 0; d < t->ndim; d++)
        if (mask[d] && t->shape[d] > 1) {
            view.offset += (t->shape[d] - 1) * t->strides[d];
            view.strides[d] = -t->strides[d];
        }
    return clg__copy_as(&view, t->dtype);
}

static clg_status flip_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    bool mask[CLG_MAX_DIMS];
    for (int d = 0; d < g->ndim; d++) mask[d] = n->i[d] != 0;
    return (gin[0] = flipped(g, mask)) ? CLG_OK : g->dev->status;
}

clg_tensor *clg_flip(clg_tensor *a, int naxes, const int *axes)
{
    if (!a) return NULL;
    bool mask[CLG_MAX_DIMS];
    if (!clg__axes_mask("flip", a, naxes, axes, mask)) return NULL;
    if (!clg__check_numel("flip", a->dev, a->numel)) return NULL;
    clg_node *node = NULL;
    clg_tensor *y = clg__taped(flipped(a, mask), CLG_OP_flip, flip_bw, 1, &a, &node);
    if (node)
        for (int d = 0; d < a->ndim; d++) node->i[d] = mask[d];
    return y;
}

/* ---- repeat: a [s0, s1] tiled r0 x r1 times is [r0, s0, r1, s1] expanded, then reshaped ------- */

clg_tensor *clg_repeat(clg_tensor *a, int nreps, const int64_t *reps)
{
    if (!a) return NULL;
    if (nreps < a->ndim || nreps > CLG_MAX_DIMS || (nreps && !reps))
        return clg__op_fail(a->dev, CLG_ERR_SHAPE, "repeat", "%d repeats for %s: want %d to %d", nreps, CLG_DESC(a),
                            a->ndim, CLG_MAX_DIMS);
    int lead = nreps - a->ndim;
    int64_t cur[CLG_MAX_DIMS] = {0};
    for (int d = 0; d < nreps; d++) {
        if (reps[d] < 0)
            return clg__op_fail(a->dev, CLG_ERR_SHAPE, "repeat", "repeat %lld along axis %d", (long long)reps[d], d);
        cur[d] = d < lead ? 1 : a->shape[d - lead];
    }
    clg_tensor *y = clg_reshape(a, nreps, cur);
    /* Axis by axis: [.., s, ..] -> [.., 1, s, ..] -> expand [.., r, s, ..] -> [.., r*s, ..];
     * with no room for the extra axis, r copies joined by concat. */
    for (int d = 0; y && d < nreps; d++) {
        if (reps[d] == 1) continue;
        if (nreps == CLG_MAX_DIMS) {
            if (reps[d] > 64)
                return clg__op_fail(a->dev, CLG_ERR_SHAPE, "repeat", "%lld repeats along axis %d of %d axes (at most 64)",
                                    (long long)reps[d], d, nreps);
            clg_tensor *parts[64];
            for (int64_t r = 0; r < reps[d]; r++) parts[r] = y;
            y = reps[d] ? clg_concat((int)reps[d], parts, d) : clg_narrow(y, d, 0, 0);
        } else {
            int64_t s[CLG_MAX_DIMS], e[CLG_MAX_DIMS];
            for (int k = 0; k <= nreps; k++) {
                s[k] = k < d ? cur[k] : k == d ? 1 : cur[k - 1];
                e[k] = k == d ? reps[d] : s[k];
            }
            int64_t next[CLG_MAX_DIMS];
            memcpy(next, cur, sizeof next);
            next[d] = cur[d] * reps[d];
            y = clg_reshape(clg_expand(clg_reshape(y, nreps + 1, s), nreps + 1, e), nreps, next);
        }
        cur[d] *= reps[d];
    }
    return y;
}

/* ---- pad ------------------------------------------------------------------------------------------- */

/* Along axis ax, index_select with the source index of each output position: reflect
 * (mirror without repeating the edge) or replicate (the edge repeated). */
static clg_tensor *pad_by_index(clg_tensor *x, int ax, int64_t lo, int64_t hi, clg_pad_mode mode)
{
    int64_t n = x->shape[ax], m = n + lo + hi;
    int32_t *idx = malloc((size_t)m * sizeof *idx);
    if (!idx) return clg__op_fail(x->dev, CLG_ERR_OUT_OF_MEMORY, "pad", "out of host memory");
    for (int64_t j = 0; j < m; j++) {
        int64_t i = j - lo;
        if (mode == CLG_PAD_REPLICATE) i = i < 0 ? 0 : i >= n ? n - 1 : i;
        else i = i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
        idx[j] = (int32_t)i;
    }
    clg_tensor *t = clg_tensor_from_host(x->dev, CLG_I32, 1, &m, idx);
    free(idx);
    return t ? clg_index_select(x, ax, t) : NULL;
}

/* Along axis ax, value-filled blocks joined before and after x. */
static clg_tensor *pad_constant(clg_tensor *x, int ax, int64_t lo, int64_t hi, double value)
{
    clg_tensor *parts[3];
    int np = 0;
    int64_t shape[CLG_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    if (lo) shape[ax] = lo, parts[np++] = clg_full(x->dev, x->dtype, x->ndim, shape, value);
    parts[np++] = x;
    if (hi) shape[ax] = hi, parts[np++] = clg_full(x->dev, x->dtype, x->ndim, shape, value);
    return clg_concat(np, parts, ax);
}

clg_tensor *clg_pad(clg_tensor *a, int npads, const int64_t *pads, clg_pad_mode mode, double value)
{
    if (!a) return NULL;
    if (npads % 2 || npads / 2 > a->ndim || (npads && !pads))
        return clg__op_fail(a->dev, CLG_ERR_SHAPE, "pad", "%d pad sizes for %s: want pairs, at most 2 per axis", npads,
                            CLG_DESC(a));
    if ((unsigned)mode > CLG_PAD_REPLICATE)
        return clg__op_fail(a->dev, CLG_ERR_INVALID_ARGUMENT, "pad", "unknown mode %d", (int)mode);
    /* As torch.nn.functional.pad: pairs from the last axis backwards. */
    for (int k = 0; k < npads / 2; k++) {
        int ax = a->ndim - 1 - k;
        int64_t lo = pads[2 * k], hi = pads[2 * k + 1], n = a->shape[ax];
        if ((lo < 0 || hi < 0) && mode != CLG_PAD_CONSTANT)
            return clg__op_fail(a->dev, CLG_ERR_SHAPE, "pad", "negative pad %lld, %lld on axis %d of %s: cropping is "
                                "for constant pads", (long long)lo, (long long)hi, ax, CLG_DESC(a));
        if (n + lo + hi < 0 || (lo < 0 && -lo > n) || (hi < 0 && -hi > n))
            return clg__op_fail(a->dev, CLG_ERR_SHAPE, "pad", "pads %lld, %lld crop more than axis %d of %s has",
                                (long long)lo, (long long)hi, ax, CLG_DESC(a));
        if ((mode == CLG_PAD_REFLECT && (lo >= n || hi >= n)) || (mode == CLG_PAD_REPLICATE && n == 0 && (lo || hi)))
            return clg__op_fail(a->dev, CLG_ERR_SHAPE, "pad", "%s pads %lld, %lld on axis %d of size %lld (reflect "
                                "needs pads below the size)", mode == CLG_PAD_REFLECT ? "reflect" : "replicate",
                                (long long)lo, (long long)hi, ax, (long long)n);
    }
    clg_tensor *y = a;
    for (int k = 0; y && k < npads / 2; k++) {
        int ax = a->ndim - 1 - k;
        int64_t lo = pads[2 * k], hi = pads[2 * k + 1];
        if (!lo && !hi) continue;
        if (lo < 0 || hi < 0) {   /* negative pads crop (a narrow view), then the rest pads */
            int64_t from = lo < 0 ? -lo : 0, len = y->shape[ax] - from - (hi < 0 ? -hi : 0);
            y = clg_narrow(y, ax, from, len < 0 ? 0 : len);
            lo = lo < 0 ? 0 : lo, hi = hi < 0 ? 0 : hi;
            if (!y || (!lo && !hi)) continue;
        }
        y = mode == CLG_PAD_CONSTANT ? pad_constant(y, ax, lo, hi, value) : pad_by_index(y, ax, lo, hi, mode);
    }
    return y == a ? clg_clone(a) : y && !clg_tensor_is_contiguous(y) ? clg_contiguous(y) : y;
}
