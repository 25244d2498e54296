/* index.c: picking elements by int32 indices (index_select, gather), adding at them
 * (index_add, scatter_add), masked_fill, and joining or
 * cutting tensors along an axis (concat, stack, split). Kernels: cl_kernels/index.cl
 * (index_select, gather and their backward passes) and copy.cl (concat, stack).
 *
 * Indices out of range. Ops never read values back to the host, so an index outside
 * [0, size) of the indexed axis (negative ones included) cannot be refused when the
 * op is called. The kernels check every index instead and never read or write out of
 * bounds: such an output element is NaN (0 for int32 values), and the backward gives
 * that position no gradient.
 *
 * Backward passes, index_add and scatter_add are scatter-adds done without atomics
 * (segment_sum): the index list is sorted stably on the device, each output element
 * finds the run of positions that picked it by binary search and adds their values in
 * ascending position order. Repeated indices add up, the sums are the same bits on
 * every run, and the work is O(k log^2 k) for the sort plus O(numel) for the sums,
 * with no work-item looping over more than the device's item_loops, however long the
 * list or however often one index repeats (runs longer than a chunk add the chunk's
 * sum, computed by one work-item per chunk). Where a work-item is a core's SIMD thread
 * (device table: scatter = lines), the lists are walked in order instead, a work-item
 * per chunk of item_loops keys (lines_sum): O(numel) work and no sort, the same bits on
 * every run too.
 *
 * concat and stack copy each input into a view of the output; their backward passes
 * hand each input a view of the gradient. split returns narrow views, so their
 * gradients flow through narrow's backward. */
#include <stdlib.h>
#include <string.h>

#include "tensor_impl.h"

/* Launch kernel `name` of the index program over n work items (none when n is 0, so
 * empty tensors never build the program). */
static clg_status launch(clg_device *dev, clg_dtype dtype, const char *name, const clg_arg *args, int nargs,
                         int64_t n)
{
    if (n == 0) return CLG_OK;
    clg_kernel *k = clg__kernel_get(dev, "index", clg__dtype_options(dtype), name);
    if (!k) return dev->status;
    return clg__launch_1d(dev, k, args, nargs, (size_t)n);
}

/* y failed to fill: free it and say which op, on what, failed how. */
static clg_tensor *fail_launch(const char *op, clg_tensor *y, const clg_tensor *a)
{
    clg_device *dev = a->dev;
    char err[CLG_ERROR_MAX];
    memcpy(err, dev->error, sizeof err);
    clg_tensor_free(y);
    return clg__op_fail(dev, dev->status, op, "%s: %.7000s", CLG_DESC(a), err);
}

/* Indices are int32 tensors on a's device with `ndim` axes. */
static bool check_index(const char *op, const clg_tensor *a, const clg_tensor *idx, int ndim)
{
    if (!clg__check_same_device(op, a, idx)) return false;
    if (idx->dtype != CLG_I32) {
        clg__op_fail(a->dev, CLG_ERR_DTYPE, op, "indices must be int32, got %s (for %s)", CLG_DESC(idx), CLG_DESC(a));
        return false;
    }
    if (idx->ndim != ndim) {
        clg__op_fail(a->dev, CLG_ERR_SHAPE, op, "indices must have %d axes, got %s (for %s)", ndim, CLG_DESC(idx),
                     CLG_DESC(a));
        return false;
    }
    return clg__check_numel(op, a->dev, a->numel) && clg__check_numel(op, a->dev, idx->numel);
}

/* ---- segment sums: the scatter-adds --------------------------------------------------------- */

/* The chunk of a sorted list whose whole-run sums segsum adds: a work-item adds at most
 * L - 1 single terms on either side of its whole chunks and R / L chunks, least near
 * L = sqrt(R / 2): the power of two from 16 up nearest that, when the total stays within
 * the device's item_loops (segsum_bounds' binary search takes 32 steps at most). 0: R
 * is too long. */
static int64_t chunk_len(clg_device *dev, int64_t R)
{
    int64_t L = 16;
    while (2 * L * L < R) L *= 2;
    return 2 * L + R / L <= (int64_t)clg__device_params(dev)->item_loops ? L : 0;
}

static clg_status launch_rows3(clg_device *dev, clg_dtype dtype, const char *name, const clg_arg *args, int nargs,
                               int64_t inner, int64_t rows, int64_t planes)
{
    if (inner * rows * planes == 0) return CLG_OK;
    clg_kernel *k = clg__kernel_get(dev, "index", clg__dtype_options(dtype), name);
    return k ? clg__launch_rows3(dev, k, args, nargs, (size_t)inner, (size_t)rows, (size_t)planes) : dev->status;
}

/* Chunks of a list that lines_sum may add apart and then together: more would cost more
 * memory (a whole output per chunk) than the sort's buffers. */
#define LINES_PARTS 8

/* y's starting values: base's (the tensor added to: scatter_add's and index_add's a), else
 * zeros. */
static clg_status lines_start(clg_tensor *y, const clg_tensor *base)
{
    return base ? clg_copy_(y, base) : clg_fill_(y, 0.0);
}

/* segment_sum where the device table says scatter = lines: each work-item walks a chunk
 * of at most item_loops keys of one list in order, adding into y (zeros, or base's
 * values when base is given). With enough work-items for the device's compute units,
 * the chunks of each list run one launch each, in order, all into y (scatter_add along
 * a long axis: no partial outputs to zero, sum and add to a; the op's forward 2.1-3.9
 * -> 1.2-1.5 ms for [16, 65536]); with too few (an embedding's backward), a list takes
 * more, shorter chunks at once, each into a partial output of its own, added in chunk
 * order to y (onto base's values). The same bits on every run, as the sorted path's;
 * O(numel) work with no sort. */
static clg_status lines_sum(clg_device *dev, clg_tensor *src, int64_t Q, int64_t R, int64_t inner, clg_tensor *keys,
                            bool per_q, int64_t na, clg_buffer *word, int code, const clg_tensor *base, clg_tensor *y)
{
    const clg_device_params *prm = clg__device_params(dev);
    int64_t C = (int64_t)prm->item_loops, nch = (R + C - 1) / C;
    /* 16 columns per work-item in explicit vectors where they fit (float32, inner % 16) */
    bool vec = src->dtype == CLG_F32 && inner % 16 == 0;
    const char *name = vec ? "scatter_lines_vec" : "scatter_lines";
    int64_t items = (vec ? inner / 16 : inner) * Q, want = 4 * (int64_t)clg_device_get_info(dev)->compute_units;
    int64_t plane = na * inner;
    clg_arg a[] = {CLG_ARG_I(inner), CLG_ARG_I(na), CLG_ARG_I(R), CLG_ARG_I(C), CLG_ARG_I(0), CLG_ARG_I(per_q),
                   CLG_ARG_B(src->buf), CLG_ARG_I(src->offset), CLG_ARG_B(keys->buf), CLG_ARG_I(keys->offset),
                   CLG_ARG_B(y->buf), CLG_ARG_I(y->offset), CLG_ARG_L(plane), CLG_ARG_L(0),
                   CLG_ARG_B(word ? word : keys->buf), CLG_ARG_I(word ? code : 0)};
    enum { NA = (int)(sizeof a / sizeof *a) };
    if (items >= want) {   /* the chunks in order, into y */
        clg_status st = lines_start(y, base);
        for (int64_t h = 0; h < nch && st == CLG_OK; h++) {
            a[4] = CLG_ARG_I(h);
            st = launch_rows3(dev, src->dtype, name, a, NA, vec ? inner / 16 : inner, 1, Q);
        }
        return st;
    }
    /* Too few work-items: more, shorter chunks, at least 256 keys each, summed in chunk order. */
    int64_t more = (want + items - 1) / items, most = R / 256;
    if (more > LINES_PARTS) more = LINES_PARTS;
    if (more > most) more = most;
    if (more > nch) C = (R + more - 1) / more, nch = (R + C - 1) / C;
    if (nch == 1) {
        clg_status st = lines_start(y, base);
        return st ? st : launch_rows3(dev, src->dtype, name, a, NA, vec ? inner / 16 : inner, 1, Q);
    }
    clg_tensor *part = clg_zeros(dev, src->dtype, 4, (int64_t[]){Q, nch, na, inner});
    if (!part || (base && lines_start(y, base) != CLG_OK)) {
        clg_tensor_free(part);
        return dev->status;
    }
    a[3] = CLG_ARG_I(C), a[10] = CLG_ARG_B(part->buf), a[11] = CLG_ARG_I(part->offset);
    a[12] = CLG_ARG_L(nch * plane), a[13] = CLG_ARG_L(plane);
    clg_status st = launch_rows3(dev, src->dtype, name, a, NA, vec ? inner / 16 : inner, nch, Q);
    if (!st) {
        clg_arg s[] = {CLG_ARG_I(plane), CLG_ARG_I(nch), CLG_ARG_B(part->buf), CLG_ARG_B(y->buf),
                       CLG_ARG_I(y->offset), CLG_ARG_I(base != NULL)};
        bool vsum = src->dtype == CLG_F32 && plane % 16 == 0;   /* 16 values a work-item */
        st = launch_rows3(dev, src->dtype, vsum ? "scatter_lines_sum_vec" : "scatter_lines_sum", s, 6,
                          vsum ? plane / 16 : plane, Q, 1);
    }
    clg_tensor_free(part);
    return st;
}

/* base + the sums (base NULL: zeros) as a new tensor, or NULL on failure; sums freed. */
static clg_tensor *plus_base(const clg_tensor *base, clg_tensor *sums)
{
    if (!base || !sums) return sums;
    clg_no_grad_begin(sums->dev);
    clg_tensor *y = clg_add((clg_tensor *)base, sums);
    clg_no_grad_end(sums->dev);
    clg_tensor_free(sums);
    return y;
}

/* y (ndim, shape: Q * na * inner elements, seen as [Q, na, inner]) with y[q, j, c] = the
 * sum of src[q, m, c] (contiguous [Q, R, inner]) over the m with key[m] == j, keys the
 * contiguous int32 [R] (one list for every q) or [Q, R] (per_q), added to base's values
 * where base (of y's shape) is given. Keys outside [0, na) add nothing; with code != 0
 * they are reported into word (the forward's check). Off the tape. */
static clg_tensor *segment_sum(const char *op, clg_tensor *src, int64_t Q, int64_t R, int64_t inner,
                               clg_tensor *keys, bool per_q, int64_t na, clg_buffer *word, int code, int ndim,
                               const int64_t *shape, const clg_tensor *base)
{
    clg_device *dev = src->dev;
    clg_tensor *y = clg__tensor_new(dev, src->dtype, ndim, shape);
    if (!y || y->numel == 0) return y;
    if (R == 0) {
        if (lines_start(y, base) == CLG_OK) return y;
        clg_tensor_free(y);
        return NULL;
    }
    int64_t loops = (int64_t)clg__device_params(dev)->item_loops;
    if (clg__device_params(dev)->scatter_lines && R <= LINES_PARTS * loops) {
        if (lines_sum(dev, src, Q, R, inner, keys, per_q, na, word, code, base, y) == CLG_OK) return y;
        clg_tensor_free(y);
        return NULL;
    }
    int64_t L = chunk_len(dev, R), lists = per_q ? Q : 1, nch = R / (L ? L : 1);
    if (!L) {
        clg_tensor_free(y);
        return clg__op_fail(dev, CLG_ERR_SHAPE, op, "%lld indices in one list: over what the device's item_loops "
                            "(%zu) lets its scatter-add split", (long long)R, clg__device_params(dev)->item_loops);
    }
    clg_tensor *sk = NULL, *sp = NULL, *bounds = NULL, *part = NULL;
    clg_status st = clg__sort_rows(keys, R, false, &sk, &sp);
    if (!st) {
        bounds = clg__tensor_new(dev, CLG_I32, 2, (int64_t[]){lists, na + 1});
        part = bounds ? clg__tensor_new(dev, src->dtype, 3, (int64_t[]){Q, nch ? nch : 1, inner}) : NULL;
        st = part ? CLG_OK : dev->status;
    }
    if (!st) {
        clg_arg b[] = {CLG_ARG_I(na), CLG_ARG_I(R), CLG_ARG_B(sk->buf), CLG_ARG_B(bounds->buf),
                       CLG_ARG_B(word ? word : sk->buf), CLG_ARG_I(word ? code : 0)};
        st = launch_rows3(dev, CLG_I32, "segsum_bounds", b, 6, na + 1, lists, 1);
    }
    if (!st) {
        clg_arg c[] = {CLG_ARG_I(inner), CLG_ARG_I(R), CLG_ARG_I(L), CLG_ARG_I(nch), CLG_ARG_I(per_q),
                       CLG_ARG_B(src->buf), CLG_ARG_I(src->offset), CLG_ARG_B(sk->buf),
                       CLG_ARG_B(sp->buf), CLG_ARG_B(part->buf)};
        st = launch_rows3(dev, src->dtype, "segsum_chunks", c, 10, inner, nch, Q);
    }
    if (!st) {
        clg_arg s[] = {CLG_ARG_I(inner), CLG_ARG_I(na), CLG_ARG_I(R), CLG_ARG_I(L), CLG_ARG_I(nch), CLG_ARG_I(per_q),
                       CLG_ARG_B(src->buf), CLG_ARG_I(src->offset), CLG_ARG_B(sp->buf),
                       CLG_ARG_B(bounds->buf), CLG_ARG_B(part->buf), CLG_ARG_B(y->buf),
                       CLG_ARG_I(y->offset)};
        st = launch_rows3(dev, src->dtype, "segsum", s, 13, inner, na, Q);
    }
    clg_tensor_free(sk), clg_tensor_free(sp), clg_tensor_free(bounds), clg_tensor_free(part);
    if (st) {
        clg_tensor_free(y);
        return NULL;
    }
    return plus_base(base, y);
}

/* The sums into an a-shaped tensor (ndim, shape) of src's values along axis ax at the
 * 1-D indices idx (index_select's backward, index_add), added to base's values where
 * base (a) is given: src has k = idx's length along ax and a's sizes elsewhere. */
static clg_tensor *add_along(const char *op, int ndim, const int64_t *shape, int ax, clg_tensor *idx,
                             clg_tensor *src, clg_buffer *word, int code, const clg_tensor *base)
{
    int64_t Q = 1, inner = 1;
    for (int d = 0; d < ax; d++) Q *= shape[d];
    for (int d = ax + 1; d < ndim; d++) inner *= shape[d];
    clg_tensor *sc = clg_tensor_is_contiguous(src) ? src : clg__copy_as(src, src->dtype);
    clg_tensor *ic = clg_tensor_is_contiguous(idx) ? idx : clg__copy_as(idx, CLG_I32);
    clg_no_grad_begin(src->dev);   /* base's copy is not an op of the tape */
    clg_tensor *y = sc && ic ? segment_sum(op, sc, Q, idx->shape[0], inner, ic, false, shape[ax], word, code, ndim,
                                           shape, base)
                             : NULL;
    clg_no_grad_end(src->dev);
    if (sc != src) clg_tensor_free(sc);
    if (ic != idx) clg_tensor_free(ic);
    return y;
}

/* The same along axis ax at an index of ndim axes (gather's backward, scatter_add): src
 * has index's shape, which may be smaller than a's (ndim, shape) off the axis. Each line
 * of the index along ax is a list of its own: the axis is moved last, summed into
 * [lines, na] (onto base's values, moved the same way, where the index covers a), moved
 * back and placed into zeros where a is larger (base then added). */
static clg_tensor *add_at_lines(const char *op, int ndim, const int64_t *shape, int ax, clg_tensor *index,
                                clg_tensor *src, clg_buffer *word, int code, clg_tensor *base)
{
    clg_device *dev = src->dev;
    int last = ndim - 1;
    int64_t lshape[CLG_MAX_DIMS], Q = 1;
    memcpy(lshape, index->shape, sizeof lshape);
    lshape[ax] = index->shape[last];
    lshape[last] = shape[ax];
    for (int d = 0; d < last; d++) Q *= lshape[d];
    clg_no_grad_begin(dev);
    clg_tensor *it = ax == last ? index : clg_transpose(index, ax, last);
    clg_tensor *st = ax == last ? src : clg_transpose(src, ax, last);
    clg_tensor *ic = it && clg_tensor_is_contiguous(it) ? it : it ? clg__copy_as(it, CLG_I32) : NULL;
    clg_tensor *sc = st && clg_tensor_is_contiguous(st) ? st : st ? clg__copy_as(st, src->dtype) : NULL;
    bool whole = true;
    for (int d = 0; d < ndim; d++) whole = whole && (d == ax || index->shape[d] == shape[d]);
    clg_tensor *bt = base && whole && ax != last ? clg_transpose(base, ax, last) : whole ? base : NULL;
    clg_tensor *lines = ic && sc && (bt || !base || !whole)
                            ? segment_sum(op, sc, Q, index->shape[ax], 1, ic, true, shape[ax], word, code, ndim,
                                          lshape, bt)
                            : NULL;
    clg_tensor *back = lines && ax != last ? clg_transpose(lines, ax, last) : lines;
    clg_tensor *y = NULL;
    if (back && whole) y = back == lines ? lines : clg__copy_as(back, src->dtype);
    else if (back && (y = clg_zeros(dev, src->dtype, ndim, shape))) {   /* the index's corner of a */
        int64_t cshape[CLG_MAX_DIMS];
        memcpy(cshape, index->shape, sizeof cshape);
        cshape[ax] = shape[ax];
        clg_tensor *corner = clg__tensor_view(y, ndim, cshape, y->strides, y->offset);
        if (!corner || clg_copy_(corner, back) != CLG_OK) {
            clg_tensor_free(y);
            y = NULL;
        }
        clg_tensor_free(corner);
        y = plus_base(base, y);
    }
    clg_no_grad_end(dev);
    if (bt != base) clg_tensor_free(bt);
    if (it != index) clg_tensor_free(it);
    if (st != src) clg_tensor_free(st);
    if (ic != it) clg_tensor_free(ic);
    if (sc != st) clg_tensor_free(sc);
    if (back != lines) clg_tensor_free(back);
    if (lines != y) clg_tensor_free(lines);
    return y;
}

/* ---- index_select ------------------------------------------------------------------------------ */

static clg_status index_select_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *a = n->inputs[0], *idx = n->inputs[1];
    gin[0] = add_along("index_select", a->ndim, a->shape, (int)n->i[0], idx, g, NULL, 0, NULL);
    return gin[0] ? CLG_OK : g->dev->status;
}

clg_tensor *clg_index_select(clg_tensor *a, int axis, clg_tensor *indices)
{
    static const char op[] = "index_select";
    if (!a || !indices) return NULL;
    int ax = clg__axis(op, a, axis, a->ndim);
    if (ax < 0 || !check_index(op, a, indices, 1)) return NULL;
    int64_t shape[CLG_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[ax] = indices->shape[0];
    clg_tensor *y = clg__tensor_new(a->dev, a->dtype, a->ndim, shape);
    if (!y) return NULL;
    if (!clg__check_numel(op, a->dev, y->numel)) {
        clg_tensor_free(y);
        return NULL;
    }
    int code;
    clg_buffer *word = clg__index_check(op, "index", indices, a->shape[ax], a, &code);
    if (!word) {
        clg_tensor_free(y);
        return NULL;
    }
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < ax; d++) outer *= a->shape[d];
    for (int d = ax + 1; d < a->ndim; d++) inner *= a->shape[d];
    /* A contiguous a: rows at least 16 wide (an embedding's) copied with no index
     * division and no branch, narrower ones (an image's columns: tens of thousands of
     * blocks of a few picks) over the flat output; the indices checked apart unless the
     * host knows them (index.cl). A strided a takes the general kernel. */
    int64_t k = indices->shape[0], na = a->shape[ax];
    if (clg_tensor_is_contiguous(a) && y->numel > 0 && na > 0) {
        if (!clg__index_known_in_range(indices, na)) {
            clg_arg chk[] = {CLG_ARG_I(k), CLG_ARG_B(indices->buf), CLG_ARG_I(indices->offset),
                             CLG_ARG_I(indices->strides[0]), CLG_ARG_I(na), CLG_ARG_B(word), CLG_ARG_I(code)};
            if (launch(a->dev, a->dtype, "index_check", chk, 7, k) != CLG_OK) return fail_launch(op, y, a);
        }
        if (inner >= 16) {
            clg_arg rows[] = {CLG_ARG_I(inner), CLG_ARG_I(k), CLG_ARG_I(na), CLG_ARG_B(y->buf),
                              CLG_ARG_I(y->offset), CLG_ARG_B(a->buf), CLG_ARG_I(a->offset),
                              CLG_ARG_B(indices->buf), CLG_ARG_I(indices->offset),
                              CLG_ARG_I(indices->strides[0])};
            clg_kernel *kn = clg__kernel_get(a->dev, "index", clg__dtype_options(a->dtype), "index_select_rows");
            if (!kn || clg__launch_rows3(a->dev, kn, rows, 10, (size_t)inner, (size_t)k, (size_t)outer))
                return fail_launch(op, y, a);
        } else {
            uint32_t mi, mk;
            int si, sk;
            clg__udiv_magic(inner, &mi, &si);
            clg__udiv_magic(k, &mk, &sk);
            clg_arg flat[] = {CLG_ARG_I(inner), CLG_ARG_I(mi), CLG_ARG_I(si), CLG_ARG_I(k), CLG_ARG_I(mk),
                              CLG_ARG_I(sk), CLG_ARG_I(na), CLG_ARG_B(y->buf), CLG_ARG_I(y->offset),
                              CLG_ARG_B(a->buf), CLG_ARG_I(a->offset), CLG_ARG_B(indices->buf),
                              CLG_ARG_I(indices->offset), CLG_ARG_I(indices->strides[0])};
            if (launch(a->dev, a->dtype, "index_select_flat", flat, 14, y->numel) != CLG_OK)
                return fail_launch(op, y, a);
        }
    } else {
        clg_arg args[] = {CLG_ARG_I(y->numel), CLG_ARG_I(y->ndim), clg__arg_int8(y->shape, y->ndim), CLG_ARG_I(ax),
                          CLG_ARG_B(y->buf), CLG_ARG_I(y->offset),
                          CLG_ARG_B(a->buf), CLG_ARG_I(a->offset), clg__arg_int8(a->strides, a->ndim),
                          CLG_ARG_I(a->shape[ax]),
                          CLG_ARG_B(indices->buf), CLG_ARG_I(indices->offset), CLG_ARG_I(indices->strides[0]),
                          CLG_ARG_B(word), CLG_ARG_I(code)};
        if (launch(a->dev, a->dtype, "index_select", args, 15, y->numel) != CLG_OK) return fail_launch(op, y, a);
    }
    clg_node *node = NULL;
    y = clg__taped(y, CLG_OP_index_select, index_select_bw, 2, (clg_tensor *const[]){a, indices}, &node);
    if (node) node->i[0] = ax;
    return y;
}

/* ---- gather -------------------------------------------------------------------------------------- */

static clg_status gather_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *a = n->inputs[0], *idx = n->inputs[1];
    gin[0] = add_at_lines("gather", a->ndim, a->shape, (int)n->i[0], idx, g, NULL, 0, NULL);
    return gin[0] ? CLG_OK : g->dev->status;
}

clg_tensor *clg_gather(clg_tensor *a, int axis, clg_tensor *index)
{
    static const char op[] = "gather";
    if (!a || !index) return NULL;
    int ax = clg__axis(op, a, axis, a->ndim);
    if (ax < 0 || !check_index(op, a, index, a->ndim)) return NULL;
    /* As torch.gather: off the axis, the index may be smaller than a, never larger. */
    for (int d = 0; d < a->ndim; d++)
        if (d != ax && index->shape[d] > a->shape[d])
            return clg__op_fail(a->dev, CLG_ERR_SHAPE, op, "index %s is larger than %s along axis %d (gather axis %d)",
                                CLG_DESC(index), CLG_DESC(a), d, ax);
    int code;
    clg_buffer *word = clg__index_check(op, "index", index, a->shape[ax], a, &code);
    clg_tensor *y = word ? clg__tensor_new(a->dev, a->dtype, index->ndim, index->shape) : NULL;
    if (!y) return NULL;
    /* Contiguous a and index of a's size off the axis: rows without index division. */
    bool rows = clg_tensor_is_contiguous(a) && clg_tensor_is_contiguous(index) && y->numel > 0;
    int64_t Q = 1, inner = 1;
    for (int d = 0; d < a->ndim; d++) {
        if (d != ax && index->shape[d] != a->shape[d]) rows = false;
        if (d < ax) Q *= a->shape[d];
        if (d > ax) inner *= a->shape[d];
    }
    if (rows) {
        int64_t k = index->shape[ax];
        clg_arg args[] = {CLG_ARG_I(inner), CLG_ARG_I(k), CLG_ARG_I(a->shape[ax]), CLG_ARG_B(y->buf),
                          CLG_ARG_I(y->offset), CLG_ARG_B(a->buf), CLG_ARG_I(a->offset),
                          CLG_ARG_B(index->buf), CLG_ARG_I(index->offset), CLG_ARG_B(word), CLG_ARG_I(code)};
        bool last = inner == 1;
        clg_kernel *kk = clg__kernel_get(a->dev, "index", clg__dtype_options(a->dtype), last ? "gather_last" : "gather_inner");
        if (!kk || (last ? clg__launch_rows(a->dev, kk, args + 1, 10, (size_t)k, (size_t)Q)
                         : clg__launch_rows3(a->dev, kk, args, 11, (size_t)inner, (size_t)k, (size_t)Q)))
            return fail_launch(op, y, a);
    } else {
        clg_arg args[] = {CLG_ARG_I(y->numel), CLG_ARG_I(y->ndim), clg__arg_int8(y->shape, y->ndim), CLG_ARG_I(ax),
                          CLG_ARG_B(y->buf), CLG_ARG_I(y->offset),
                          CLG_ARG_B(a->buf), CLG_ARG_I(a->offset), clg__arg_int8(a->strides, a->ndim),
                          CLG_ARG_I(a->shape[ax]),
                          CLG_ARG_B(index->buf), CLG_ARG_I(index->offset),
                          clg__arg_int8(index->strides, index->ndim), CLG_ARG_B(word), CLG_ARG_I(code)};
        if (launch(a->dev, a->dtype, "gather", args, 15, y->numel) != CLG_OK) return fail_launch(op, y, a);
    }
    clg_node *node = NULL;
    y = clg__taped(y, CLG_OP_gather, gather_bw, 2, (clg_tensor *const[]){a, index}, &node);
    if (node) node->i[0] = ax;
    return y;
}

/* ---- index_add and scatter_add: a plus src added at the indexed positions ------------------ */

/* The gradient of a is g; of src, g picked back at the same positions. */
static clg_status index_add_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    int ax = (int)n->i[0];
    if (clg__wants_grad(n, 0)) gin[0] = g;
    if (clg__wants_grad(n, 2) && !(gin[2] = clg_index_select(g, ax, n->inputs[1]))) return g->dev->status;
    return CLG_OK;
}

static clg_status scatter_add_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    int ax = (int)n->i[0];
    if (clg__wants_grad(n, 0)) gin[0] = g;
    if (clg__wants_grad(n, 2) && !(gin[2] = clg_gather(g, ax, n->inputs[1]))) return g->dev->status;
    return CLG_OK;
}

/* y = a + the scatter-add of src (made so by add_along or add_at_lines, which start from
 * a's values), on the tape as op with inputs a, index, src. */
static clg_tensor *plus_sums(int opid, clg_backward_fn bw, clg_tensor *a, int ax, clg_tensor *index,
                             clg_tensor *src, clg_tensor *y)
{
    if (!y) return NULL;
    clg_node *node = NULL;
    y = clg__taped(y, opid, bw, 3, (clg_tensor *const[]){a, index, src}, &node);
    if (node) node->i[0] = ax;
    return y;
}

clg_tensor *clg_index_add(clg_tensor *a, int axis, clg_tensor *indices, clg_tensor *src)
{
    static const char op[] = "index_add";
    if (!a || !indices || !src) return NULL;
    int ax = clg__axis(op, a, axis, a->ndim);
    if (ax < 0 || !check_index(op, a, indices, 1) || !clg__check_same_device(op, a, src) ||
        !clg__check_same_dtype(op, a, src))
        return NULL;
    bool fits = src->ndim == a->ndim && src->shape[ax] == indices->shape[0];
    for (int d = 0; fits && d < a->ndim; d++) fits = d == ax || src->shape[d] == a->shape[d];
    if (!fits)
        return clg__op_fail(a->dev, CLG_ERR_SHAPE, op, "src %s must be a %s with %lld along axis %d (the indices %s)",
                            CLG_DESC(src), CLG_DESC(a), (long long)indices->shape[0], ax, CLG_DESC(indices));
    int code;
    clg_buffer *word = clg__index_check(op, "index", indices, a->shape[ax], a, &code);
    if (!word) return NULL;
    return plus_sums(CLG_OP_index_add, index_add_bw, a, ax, indices, src,
                     add_along(op, a->ndim, a->shape, ax, indices, src, word, code, a));
}

clg_tensor *clg_scatter_add(clg_tensor *a, int axis, clg_tensor *index, clg_tensor *src)
{
    static const char op[] = "scatter_add";
    if (!a || !index || !src) return NULL;
    int ax = clg__axis(op, a, axis, a->ndim);
    if (ax < 0 || !check_index(op, a, index, a->ndim) || !clg__check_same_device(op, a, src) ||
        !clg__check_same_dtype(op, a, src))
        return NULL;
    bool fits = src->ndim == index->ndim;
    for (int d = 0; fits && d < a->ndim; d++) fits = src->shape[d] == index->shape[d];
    if (!fits)
        return clg__op_fail(a->dev, CLG_ERR_SHAPE, op, "src %s must have the index's shape %s", CLG_DESC(src),
                            CLG_DESC(index));
    for (int d = 0; d < a->ndim; d++)
        if (d != ax && index->shape[d] > a->shape[d])
            return clg__op_fail(a->dev, CLG_ERR_SHAPE, op, "index %s is larger than %s along axis %d (axis %d)",
                                CLG_DESC(index), CLG_DESC(a), d, ax);
    int code;
    clg_buffer *word = clg__index_check(op, "index", index, a->shape[ax], a, &code);
    if (!word) return NULL;
    return plus_sums(CLG_OP_scatter_add, scatter_add_bw, a, ax, index, src,
                     add_at_lines(op, a->ndim, a->shape, ax, index, src, word, code, a));
}

/* a with value where mask is true (nonzero), mask broadcast to a: where(mask, value, a),
 * so the gradient reaches a where the mask is false. */
clg_tensor *clg_masked_fill(clg_tensor *a, clg_tensor *mask, double value)
{
    if (!a || !mask) return NULL;
    clg_tensor *v = clg_full(a->dev, a->dtype, 0, NULL, value);   /* the scope frees it */
    return v ? clg_where(mask, v, a) : NULL;
}

/* ---- concat and stack ------------------------------------------------------------------------------ */

/* The type two joined tensors promote to, as torch.cat's: the float type over int32,
 * the wider float type, float32 for float16 with bfloat16. */
static clg_dtype promoted(clg_dtype a, clg_dtype b)
{
    if (a == b || b == CLG_I32) return a;
    if (a == CLG_I32) return b;
    if (a == CLG_F64 || b == CLG_F64) return CLG_F64;
    return CLG_F32;
}

/* ts itself when its tensors share a dtype; else a list of them cast to the promoted one
 * (casts on the tape: each input's gradient comes back in its own dtype), in *buf. */
static clg_tensor *const *promote_list(int n, clg_tensor *const *ts, clg_tensor **buf)
{
    clg_dtype to = ts[0]->dtype;
    for (int i = 1; i < n; i++) to = promoted(to, ts[i]->dtype);
    bool same = true;
    for (int i = 0; i < n; i++) same = same && ts[i]->dtype == to;
    if (same) return ts;
    for (int i = 0; i < n; i++)
        if (!(buf[i] = ts[i]->dtype == to ? ts[i] : clg_cast(ts[i], to))) return NULL;
    return buf;
}

/* The list of tensors to join: n > 0 non-NULL entries on one device.
 * A NULL list or entry returns false with nothing recorded: there may be no device
 * to record on, and a NULL entry carries an earlier op's error, which stays. */
static bool check_list(const char *op, int n, clg_tensor *const *ts)
{
    /* No tensor, so no device to record the error on: the thread's (clg_last_error). */
    if (n <= 0 || !ts) {
        clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_%s: %s (n = %d): no device and no shape to make a result of",
                  op, ts ? "no tensors" : "the list is NULL", n);
        return false;
    }
    for (int i = 0; i < n; i++)
        if (!ts[i]) return false;
    for (int i = 1; i < n; i++)
        if (!clg__check_same_device(op, ts[0], ts[i])) return false;
    return true;
}

/* Copy each input into its place in y: at running offsets along axis ax (concat), or
 * at position i of the new axis ax (stack). */
static clg_status place_inputs(clg_tensor *y, int n, clg_tensor *const *ts, int ax, bool stack)
{
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        clg_tensor *t = ts[i];
        int64_t st[CLG_MAX_DIMS];
        for (int d = 0, s = 0; d < y->ndim; d++)
            if (!stack || d != ax) st[s++] = y->strides[d];
        int64_t at = stack ? i : off;
        off += stack ? 1 : t->shape[ax];
        if (t->numel == 0) continue;
        clg_tensor *part = clg__tensor_view(y, t->ndim, t->shape, st, y->offset + at * y->strides[ax]);
        clg_status s = part ? clg_copy_(part, t) : y->dev->status;
        clg_tensor_free(part);
        if (s != CLG_OK) return s;
    }
    return CLG_OK;
}

static clg_tensor *join(const char *op, int n, clg_tensor *const *ts, int ax, int ndim, const int64_t *shape,
                        bool stack)
{
    clg_device *dev = ts[0]->dev;
    clg_tensor *y = clg__tensor_new(dev, ts[0]->dtype, ndim, shape);
    if (!y) return NULL;
    if (!clg__check_numel(op, dev, y->numel)) {
        clg_tensor_free(y);
        return NULL;
    }
    if (place_inputs(y, n, ts, ax, stack) != CLG_OK) return fail_launch(op, y, ts[0]);
    return y;
}

/* Each input gets the part of the gradient it filled. */
static clg_status concat_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    int ax = (int)n->i[0];
    int64_t off = 0;
    for (int i = 0; i < n->ninputs; i++) {
        int64_t len = n->inputs[i]->shape[ax];
        if (clg__wants_grad(n, i) && !(gin[i] = clg_narrow(g, ax, off, len))) return g->dev->status;
        off += len;
    }
    return CLG_OK;
}

static clg_tensor *concat_same(int n, clg_tensor *const *ts, int axis)
{
    static const char op[] = "concat";
    const clg_tensor *t0 = ts[0];
    int ax = clg__axis(op, t0, axis, t0->ndim);
    if (ax < 0) return NULL;
    int64_t shape[CLG_MAX_DIMS];
    memcpy(shape, t0->shape, sizeof shape);
    shape[ax] = 0;
    for (int i = 0; i < n; i++) {
        const clg_tensor *t = ts[i];
        bool fits = t->ndim == t0->ndim;
        for (int d = 0; fits && d < t0->ndim; d++) fits = d == ax || t->shape[d] == t0->shape[d];
        if (!fits)
            return clg__op_fail(t0->dev, CLG_ERR_SHAPE, op, "input %d %s does not match input 0 %s off axis %d", i,
                                CLG_DESC(t), CLG_DESC(t0), axis);
        shape[ax] += t->shape[ax];
    }
    clg_node *node = NULL;
    clg_tensor *y = clg__taped(join(op, n, ts, ax, t0->ndim, shape, false), CLG_OP_concat, concat_bw, n, ts, &node);
    if (node) node->i[0] = ax;
    return y;
}

/* Input i gets slice i of the new axis. */
static clg_status stack_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    int ax = (int)n->i[0];
    for (int i = 0; i < n->ninputs; i++)
        if (clg__wants_grad(n, i) && !(gin[i] = clg_squeeze(clg_narrow(g, ax, i, 1), ax))) return g->dev->status;
    return CLG_OK;
}

static clg_tensor *stack_same(int n, clg_tensor *const *ts, int axis)
{
    static const char op[] = "stack";
    const clg_tensor *t0 = ts[0];
    if (t0->ndim == CLG_MAX_DIMS)
        return clg__op_fail(t0->dev, CLG_ERR_SHAPE, op, "%s has the most axes a tensor can", CLG_DESC(t0));
    int ax = clg__axis(op, t0, axis, t0->ndim + 1);
    if (ax < 0) return NULL;
    for (int i = 1; i < n; i++) {
        const clg_tensor *t = ts[i];
        if (t->ndim != t0->ndim || memcmp(t->shape, t0->shape, (size_t)t0->ndim * sizeof *t0->shape))
            return clg__op_fail(t0->dev, CLG_ERR_SHAPE, op, "input %d %s does not match input 0 %s", i, CLG_DESC(t),
                                CLG_DESC(t0));
    }
    int64_t shape[CLG_MAX_DIMS];
    for (int d = 0, s = 0; d <= t0->ndim; d++) shape[d] = d == ax ? n : t0->shape[s++];
    clg_node *node = NULL;
    clg_tensor *y = clg__taped(join(op, n, ts, ax, t0->ndim + 1, shape, true), CLG_OP_stack, stack_bw, n, ts, &node);
    if (node) node->i[0] = ax;
    return y;
}

/* Mixed dtypes promote first (promote_list), then the tensors of one dtype join. */
static clg_tensor *join_promoted(const char *op, int n, clg_tensor *const *ts, int axis,
                                 clg_tensor *(*same)(int, clg_tensor *const *, int))
{
    if (!check_list(op, n, ts)) return NULL;
    clg_tensor **buf = malloc((size_t)n * sizeof *buf);
    if (!buf) return clg__op_fail(ts[0]->dev, CLG_ERR_OUT_OF_MEMORY, op, "%d inputs: out of host memory", n);
    clg_tensor *const *use = promote_list(n, ts, buf);
    clg_tensor *y = use ? same(n, use, axis) : NULL;
    free(buf);
    return y;
}

clg_tensor *clg_concat(int n, clg_tensor *const *ts, int axis) { return join_promoted("concat", n, ts, axis, concat_same); }

clg_tensor *clg_stack(int n, clg_tensor *const *ts, int axis) { return join_promoted("stack", n, ts, axis, stack_same); }

/* ---- split ------------------------------------------------------------------------------------------- */

static void free_parts(int n, clg_tensor **out)
{
    for (int i = 0; i < n; i++) {
        clg_tensor_free(out[i]);
        out[i] = NULL;
    }
}

clg_status clg_split(clg_tensor *a, int axis, int n, const int64_t *sizes, clg_tensor **out)
{
    static const char op[] = "split";
    if (out && n > 0) memset(out, 0, (size_t)n * sizeof *out);
    if (!a) return CLG_ERR_INVALID_ARGUMENT;
    if (n <= 0 || !sizes || !out) {
        clg__op_fail(a->dev, CLG_ERR_INVALID_ARGUMENT, op, "%d parts (sizes %s, out %s) of %s", n,
                     sizes ? "given" : "NULL", out ? "given" : "NULL", CLG_DESC(a));
        return a->dev->status;
    }
    int ax = clg__axis(op, a, axis, a->ndim);
    if (ax < 0) return a->dev->status;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        /* compared before adding, so that no sum of sizes overflows */
        if (sizes[i] < 0 || sizes[i] > a->shape[ax] - total) {
            clg__op_fail(a->dev, CLG_ERR_SHAPE, op, "part %d has size %lld; the sizes must sum to %lld (axis %d of %s)",
                         i, (long long)sizes[i], (long long)a->shape[ax], axis, CLG_DESC(a));
            return a->dev->status;
        }
        total += sizes[i];
    }
    if (total != a->shape[ax]) {
        clg__op_fail(a->dev, CLG_ERR_SHAPE, op, "%d sizes sum to %lld, axis %d of %s has %lld", n, (long long)total,
                     axis, CLG_DESC(a), (long long)a->shape[ax]);
        return a->dev->status;
    }
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        if (!(out[i] = clg_narrow(a, ax, off, sizes[i]))) {
            free_parts(i, out);
            return a->dev->status;
        }
        off += sizes[i];
    }
    return CLG_OK;
}
