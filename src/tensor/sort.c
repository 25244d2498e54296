/* sort.c: cumsum, sort and topk along an axis (cl_kernels/sort.cl).
 *
 * Both work on a contiguous copy with the axis moved where the kernels want it (cumsum:
 * [M, R, K], the axis in the middle, a free view when the input is contiguous; sort:
 * the axis last). Sorting is a stable merge sort in log2(R / 64) + 1 launches
 * (clg__sort_rows, which index.c's scatter-adds share), each work-item merging 32
 * outputs from one binary search: O(R log R) work per row, no loop over the row. cumsum's backward is the reverse cumsum of the gradient; sort's (and
 * topk's) sends each gradient back to the position its value came from (unsort: the
 * positions of a row are distinct, so nothing adds up and no two items write one place). */
#include <string.h>

#include "tensor_impl.h"

static clg_status launch(clg_device *dev, clg_dtype dtype, const char *name, const clg_arg *args, int nargs,
                         int64_t n)
{
    if (n == 0) return CLG_OK;
    clg_kernel *k = clg__kernel_get(dev, "sort", clg__dtype_options(dtype), name);
    return k ? clg__launch_1d(dev, k, args, nargs, (size_t)n) : dev->status;
}

/* ---- cumsum --------------------------------------------------------------------------------------- */

/* The scan of src ([M, R, K] contiguous) into y, in pieces of P along R that no
 * work-item's loop outgrows (item_loops): each piece scans on its own, the pieces'
 * totals are scanned in turn (a scan of [pieces, M, K], itself in pieces when long) and
 * each piece adds the carry of those before it. Pieces are halved while they leave
 * fewer than 256 work-items, so that one long row still runs in parallel. */
static clg_status scan(clg_device *dev, clg_tensor *src, clg_tensor *y, int64_t M, int64_t R, int64_t K,
                       bool reverse);

/* The same for rows side by side (K = 1) in float32 where work-items are SIMD threads
 * (row_items): each piece in vectors of 16 (cumsum_vec); with several pieces, their
 * totals first (cumsum_tot_vec), scanned, and each piece then starts from its carry. */
static clg_status scan_rows(clg_device *dev, clg_tensor *src, clg_tensor *y, int64_t M, int64_t R, int64_t P,
                            bool reverse)
{
    int64_t np = (R + P - 1) / P;
    clg_tensor *tot = np > 1 ? clg__tensor_new(dev, CLG_F32, 3, (int64_t[]){np, M, 1}) : NULL;
    clg_tensor *ctot = np > 1 ? clg__tensor_new(dev, CLG_F32, 3, (int64_t[]){np, M, 1}) : NULL;
    clg_status st = np > 1 && (!tot || !ctot) ? dev->status : CLG_OK;
    if (!st && np > 1) {
        clg_arg t[] = {CLG_ARG_I(M), CLG_ARG_I(R), CLG_ARG_I(P), CLG_ARG_B(src->buf), CLG_ARG_I(src->offset),
                       CLG_ARG_I(reverse), CLG_ARG_B(tot->buf)};
        st = launch(dev, CLG_F32, "cumsum_tot_vec", t, 7, M * np);
        if (!st) st = scan(dev, tot, ctot, 1, np, M, false);
    }
    if (!st) {
        clg_arg a[] = {CLG_ARG_I(M), CLG_ARG_I(R), CLG_ARG_I(P), CLG_ARG_B(src->buf), CLG_ARG_I(src->offset),
                       CLG_ARG_B(y->buf), CLG_ARG_I(y->offset), CLG_ARG_I(reverse),
                       CLG_ARG_B(ctot ? ctot->buf : y->buf), CLG_ARG_I(np)};
        st = launch(dev, CLG_F32, "cumsum_vec", a, 10, M * np);
    }
    clg_tensor_free(tot);
    clg_tensor_free(ctot);
    return st;
}

static clg_status scan(clg_device *dev, clg_tensor *src, clg_tensor *y, int64_t M, int64_t R, int64_t K,
                       bool reverse)
{
    int64_t P = (int64_t)clg__device_params(dev)->item_loops / 2, np;
    while (P > 1024 && M * K * ((R + P - 1) / P) < 256) P /= 2;
    if (K == 1 && src->dtype == CLG_F32 && clg__device_params(dev)->row_items)
        return scan_rows(dev, src, y, M, R, P, reverse);
    np = (R + P - 1) / P;
    clg_tensor *tot = np > 1 ? clg__tensor_new(dev, src->dtype, 3, (int64_t[]){np, M, K}) : NULL;
    if (np > 1 && !tot) return dev->status;
    clg_arg a[] = {CLG_ARG_I(M * K * np), CLG_ARG_I(R), CLG_ARG_I(K), CLG_ARG_I(M), CLG_ARG_I(P),
                   CLG_ARG_B(src->buf), CLG_ARG_I(src->offset), CLG_ARG_B(y->buf), CLG_ARG_I(y->offset),
                   CLG_ARG_I(reverse), CLG_ARG_B(tot ? tot->buf : y->buf), CLG_ARG_I(np)};
    clg_status st = launch(dev, src->dtype, "cumsum", a, 12, M * K * np);
    if (!st && tot) {
        clg_tensor *ctot = clg__tensor_new(dev, src->dtype, 3, tot->shape);
        st = ctot ? scan(dev, tot, ctot, 1, np, M * K, false) : dev->status;
        if (!st) {
            clg_arg c[] = {CLG_ARG_I(M * K * (np - 1)), CLG_ARG_I(R), CLG_ARG_I(K), CLG_ARG_I(M), CLG_ARG_I(P),
                           CLG_ARG_B(y->buf), CLG_ARG_I(y->offset), CLG_ARG_I(reverse),
                           CLG_ARG_B(ctot->buf)};
            st = launch(dev, src->dtype, "cumsum_add", c, 9, M * K * (np - 1));
        }
        clg_tensor_free(ctot);
    }
    clg_tensor_free(tot);
    return st;
}

/* y = the cumulative sum of t along ax (reverse: from the end), off the tape. */
static clg_tensor *cumsum_raw(clg_tensor *t, int ax, bool reverse)
{
    clg_tensor *src = clg_tensor_is_contiguous(t) ? t : clg__copy_as(t, t->dtype);
    clg_tensor *y = src ? clg__tensor_new(t->dev, t->dtype, t->ndim, t->shape) : NULL;
    if (!y) {
        if (src != t) clg_tensor_free(src);
        return NULL;
    }
    int64_t M = 1, K = 1;
    for (int d = 0; d < ax; d++) M *= t->shape[d];
    for (int d = ax + 1; d < t->ndim; d++) K *= t->shape[d];
    int64_t R = t->ndim ? t->shape[ax] : 1;
    clg_status st = R > 0 && M * K > 0 ? scan(t->dev, src, y, M, R, K, reverse) : CLG_OK;
    if (src != t) clg_tensor_free(src);
    if (st != CLG_OK) {
        clg_tensor_free(y);
        return clg__op_fail(t->dev, t->dev->status, "cumsum", "%s: %.7000s", CLG_DESC(t), t->dev->error);
    }
    return y;
}

static clg_status cumsum_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    return (gin[0] = cumsum_raw(g, (int)n->i[0], true)) ? CLG_OK : g->dev->status;
}

clg_tensor *clg_cumsum(clg_tensor *a, int axis)
{
    if (!a) return NULL;
    int ax = clg__axis("cumsum", a, axis, a->ndim ? a->ndim : 1);
    if (ax < 0 || !clg__check_numel("cumsum", a->dev, a->numel)) return NULL;
    clg_node *node = NULL;
    clg_tensor *y = clg__taped(cumsum_raw(a, ax, false), CLG_OP_cumsum, cumsum_bw, 1, &a, &node);
    if (node) node->i[0] = ax;
    return y;
}

/* ---- sort and topk ---------------------------------------------------------------------------------- */

/* Each gradient back to the position its value came from: a scatter without conflicts
 * (the positions of a row are distinct), along the last axis (moved there when ax is
 * not). */
static clg_status sort_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_device *dev = g->dev;
    clg_tensor *a = n->inputs[0], *idx = n->saved[0];
    int ax = (int)n->i[0], last = a->ndim - 1;
    int64_t k = g->shape[ax], R = a->shape[ax], shape[CLG_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);   /* a's shape with the axis last */
    shape[ax] = a->shape[last], shape[last] = R;
    clg_no_grad_begin(dev);
    clg_tensor *gm = ax == last ? g : clg_transpose(g, ax, last), *im = ax == last ? idx : clg_transpose(idx, ax, last);
    clg_tensor *gc = gm ? clg__copy_as(gm, g->dtype) : NULL, *ic = im ? clg__copy_as(im, CLG_I32) : NULL;
    clg_tensor *ga = gc && ic ? clg_zeros(dev, g->dtype, a->ndim, shape) : NULL;
    clg_status st = ga ? CLG_OK : dev->status;
    if (!st) {
        clg_arg args[] = {CLG_ARG_I(gc->numel), CLG_ARG_I(k), CLG_ARG_I(R), CLG_ARG_B(gc->buf),
                          CLG_ARG_I(gc->offset), CLG_ARG_B(ic->buf), CLG_ARG_I(ic->offset),
                          CLG_ARG_B(ga->buf), CLG_ARG_I(ga->offset)};
        st = launch(dev, g->dtype, "unsort", args, 9, gc->numel);
    }
    if (!st && ax != last) {   /* the axis back in place */
        clg_tensor *back = clg_transpose(ga, ax, last), *c = back ? clg__copy_as(back, g->dtype) : NULL;
        clg_tensor_free(back), clg_tensor_free(ga);
        ga = c;
        if (!ga) st = dev->status;
    }
    clg_no_grad_end(dev);
    if (gm != g) clg_tensor_free(gm);
    if (im != idx) clg_tensor_free(im);
    clg_tensor_free(gc), clg_tensor_free(ic);
    if (st) {
        clg_tensor_free(ga);
        return st;
    }
    gin[0] = ga;
    return CLG_OK;
}

clg_status clg__sort_rows(clg_tensor *t, int64_t R, bool descending, clg_tensor **vals, clg_tensor **pos)
{
    clg_device *dev = t->dev;
    *vals = *pos = NULL;
    clg_tensor *k[2] = {NULL, NULL}, *p[2] = {NULL, NULL};
    for (int b = 0; b < 2; b++) {
        k[b] = clg__tensor_new(dev, t->dtype, t->ndim, t->shape);
        p[b] = k[b] ? clg__tensor_new(dev, CLG_I32, t->ndim, t->shape) : NULL;
    }
    clg_status st = p[1] ? CLG_OK : dev->status;
    /* Rows up to 256 sort by rank in one pass (a loop the items run in step, which
     * vectorizes); longer ones from blocks of 64. */
    int64_t B = R <= 256 ? R : 64;
    if (!st) {
        clg_arg args[] = {CLG_ARG_I(t->numel), CLG_ARG_I(R), CLG_ARG_I(B), CLG_ARG_B(t->buf),
                          CLG_ARG_I(t->offset), CLG_ARG_B(k[0]->buf), CLG_ARG_B(p[0]->buf),
                          CLG_ARG_I(descending)};
        st = launch(dev, t->dtype, "sort_blocks", args, 8, t->numel);
    }
    int cur = 0;
    for (int64_t w = B; !st && w < R; w *= 2, cur ^= 1) {   /* log2(R / B) passes */
        int64_t segs = (R + 31) / 32, items = t->numel / R * segs;
        clg_arg args[] = {CLG_ARG_I(items), CLG_ARG_I(R), CLG_ARG_I(w), CLG_ARG_I(segs),
                          CLG_ARG_B(k[cur]->buf), CLG_ARG_B(p[cur]->buf),
                          CLG_ARG_B(k[cur ^ 1]->buf), CLG_ARG_B(p[cur ^ 1]->buf), CLG_ARG_I(descending)};
        st = launch(dev, t->dtype, "sort_merge", args, 9, items);
    }
    clg_tensor_free(k[cur ^ 1]), clg_tensor_free(p[cur ^ 1]);
    if (st) {
        clg_tensor_free(k[cur]), clg_tensor_free(p[cur]);
        return st;
    }
    *vals = k[cur], *pos = p[cur];
    return CLG_OK;
}

/* topk_select's per-item list (sort.cl). */
#define TOPK_MAX 32

/* The chunk that topk_select gives one work-item for k of a row of R: the longest power
 * of two up to 1024 with the item's loops (under 2P reads, 2Pk shifts) within
 * item_loops and at least 2k, so that each pass shortens the rows; 0 when no chunk
 * fits (k too large for the device's item_loops: the full sort then). */
static int64_t select_chunk(clg_device *dev, int64_t R, int64_t k)
{
    int64_t loops = (int64_t)clg__device_params(dev)->item_loops, P = 1024;
    while (P > 2 * k && 2 * P * (k + 1) > loops) P /= 2;
    return k >= 1 && k <= TOPK_MAX && k < R && P >= 2 * k && 2 * P * (k + 1) <= loops ? P : 0;
}

/* The first k of the stable sort of each row of t (contiguous, rows of R), by selection
 * in chunks of P: each pass leaves k candidates per chunk, with their positions in the
 * row, until one chunk is left. O(R) work per row for small k, where the sort is
 * O(R log R) and its passes each read and write the whole row. */
static clg_status select_rows(clg_tensor *t, int64_t R, int64_t k, int64_t P, bool descending, clg_tensor **vals,
                              clg_tensor **pos)
{
    clg_device *dev = t->dev;
    int64_t rows = t->numel / R, len = R, nch;
    clg_tensor *v = t, *p = NULL;
    clg_status st = CLG_OK;
    do {
        nch = len / P > 1 ? len / P : 1;
        /* the last pass writes t's shape with k along the last axis */
        int64_t shape[CLG_MAX_DIMS] = {rows, nch * k};
        int nd = nch > 1 ? 2 : t->ndim;
        if (nch == 1) memcpy(shape, t->shape, sizeof shape), shape[nd - 1] = k;
        clg_tensor *nv = clg__tensor_new(dev, t->dtype, nd, shape);
        clg_tensor *np = nv ? clg__tensor_new(dev, CLG_I32, nd, shape) : NULL;
        if (np) {
            clg_arg args[] = {CLG_ARG_I(rows * nch), CLG_ARG_I(len), CLG_ARG_I(P), CLG_ARG_I(nch), CLG_ARG_I(k),
                              CLG_ARG_B(v->buf), CLG_ARG_I(v->offset), CLG_ARG_B((p ? p : np)->buf),
                              CLG_ARG_I(p != NULL), CLG_ARG_B(nv->buf), CLG_ARG_B(np->buf),
                              CLG_ARG_I(descending)};
            st = launch(dev, t->dtype, "topk_select", args, 12, rows * nch);
        } else st = dev->status;
        if (v != t) clg_tensor_free(v);
        clg_tensor_free(p);
        v = nv, p = np, len = nch * k;
    } while (!st && nch > 1);
    if (st) {
        clg_tensor_free(v), clg_tensor_free(p);
        return st;
    }
    *vals = v, *pos = p;
    return CLG_OK;
}

/* Values and int32 indices of a sorted along ax, both contiguous, off the tape: the
 * first k along the axis where selection can find them, else the whole sort. */
static clg_status sort_raw(clg_tensor *a, int ax, int64_t k, bool descending, clg_tensor **vals, clg_tensor **idx)
{
    clg_device *dev = a->dev;
    int last = a->ndim - 1;
    clg_no_grad_begin(dev);
    clg_tensor *moved = ax == last ? a : clg_transpose(a, ax, last);
    clg_tensor *src = moved && clg_tensor_is_contiguous(moved) ? moved   /* contiguous, axis last */
                      : moved ? clg__copy_as(moved, a->dtype) : NULL;
    clg_no_grad_end(dev);
    clg_tensor *v = NULL, *ix = NULL;
    int64_t R = a->shape[ax], P = select_chunk(dev, R, k);
    clg_status st = !src ? dev->status
                    : P  ? select_rows(src, R, k, P, descending, &v, &ix)
                         : clg__sort_rows(src, R, descending, &v, &ix);
    if (src != moved) clg_tensor_free(src);
    if (moved != a) clg_tensor_free(moved);
    if (!st && ax != last) {   /* the axis back in place, contiguous */
        clg_no_grad_begin(dev);
        clg_tensor *tv = clg_transpose(v, ax, last), *ti = clg_transpose(ix, ax, last);
        clg_tensor *cv = tv ? clg__copy_as(tv, a->dtype) : NULL, *ci = ti ? clg__copy_as(ti, CLG_I32) : NULL;
        clg_no_grad_end(dev);
        clg_tensor_free(tv), clg_tensor_free(ti), clg_tensor_free(v), clg_tensor_free(ix);
        v = cv, ix = ci;
        if (!v || !ix) st = dev->status;
    }
    if (st) {
        clg_tensor_free(v), clg_tensor_free(ix);
        return st;
    }
    *vals = v, *idx = ix;
    return CLG_OK;
}

/* Sorted (or the first k of sorted) values on the tape, their indices off it. */
static clg_status sorted(const char *op, clg_tensor *a, int axis, int64_t k, bool descending, clg_tensor **values,
                         clg_tensor **indices)
{
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    if (!a) return CLG_ERR_INVALID_ARGUMENT;
    if (!values || !indices)
        return clg__fail(a->dev, CLG_ERR_INVALID_ARGUMENT, "clg_%s: values or indices is NULL", op);
    if (a->ndim == 0) return clg__fail(a->dev, CLG_ERR_SHAPE, "clg_%s: a 0-axis tensor has no axis to sort", op);
    int ax = clg__axis(op, a, axis, a->ndim);
    if (ax < 0 || !clg__check_numel(op, a->dev, a->numel)) return a->dev->status;
    if (!strcmp(op, "sort")) k = a->shape[ax];
    if (k < 0 || k > a->shape[ax])
        return clg__fail(a->dev, CLG_ERR_SHAPE, "clg_%s: k = %lld of %lld along axis %d of %s", op, (long long)k,
                         (long long)a->shape[ax], ax, CLG_DESC(a));
    clg_tensor *v, *ix;
    clg_status st = sort_raw(a, ax, k, descending, &v, &ix);
    if (st) return st;
    if (k < v->shape[ax]) {   /* topk by the whole sort: the first k, as contiguous tensors of their own */
        clg_no_grad_begin(a->dev);
        clg_tensor *nv = clg_narrow(v, ax, 0, k), *ni = clg_narrow(ix, ax, 0, k);
        clg_tensor *cv = nv ? clg__copy_as(nv, a->dtype) : NULL, *ci = ni ? clg__copy_as(ni, CLG_I32) : NULL;
        clg_no_grad_end(a->dev);
        clg_tensor_free(nv), clg_tensor_free(ni), clg_tensor_free(v), clg_tensor_free(ix);
        v = cv, ix = ci;
        if (!v || !ix) {
            clg_tensor_free(v), clg_tensor_free(ix);
            return a->dev->status;
        }
    }
    clg_node *node = NULL;
    v = clg__taped(v, !strcmp(op, "sort") ? CLG_OP_sort : CLG_OP_topk, sort_bw, 1, &a, &node);
    if (node) {
        node->i[0] = ax;
        clg__node_save(node, 0, ix);
    }
    if (!v) {
        clg_tensor_free(ix);
        return a->dev->status;
    }
    *values = v, *indices = ix;
    return CLG_OK;
}

clg_status clg_sort(clg_tensor *a, int axis, bool descending, clg_tensor **values, clg_tensor **indices)
{
    return sorted("sort", a, axis, 0, descending, values, indices);
}

clg_status clg_topk(clg_tensor *a, int64_t k, int axis, bool largest, clg_tensor **values, clg_tensor **indices)
{
    return sorted("topk", a, axis, k, largest, values, indices);
}
