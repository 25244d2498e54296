// index.cl: index_select and gather with their backward passes (src/tensor/index.c).
// Built with -DT=float|double|int; the backward kernels are used with float types only.
//
// Outputs are contiguous, so an output element's coordinates come from unravelling
// its flat index; inputs, gradients and index tensors may have any strides. An index
// outside [0, size) reads nothing: the forward writes CLG_BAD there (NaN, or 0 for
// int32), reports it in the device's error word (err, code: common.cl's clg_report),
// so that the next read to the host fails, and the backward gives it no gradient.

#ifdef CLG_I32
#define CLG_BAD 0
#else
#define CLG_BAD (T)NAN
#endif

inline int clg_at(int8 v, int d)
{
    int s[8];
    vstore8(v, 0, s);
    return s[d];
}

// y[c] = a[c with c[axis] = idx[c[axis]]]; y has a's shape with k along axis.
__kernel void index_select(int n, int nd, int8 yshape, int axis, __global T *y, int oy,
                           __global const T *a, int oa, int8 sa, int na,
                           __global const int *idx, int oi, int si, __global int *err, int code)
{
    int i = get_global_id(0);
    if (i >= n) return;
    clg_coords c = clg_unravel(i, nd, yshape);
    int j = idx[oi + c.c[axis] * si];
    if (j < 0 || j >= na) {
        y[oy + i] = CLG_BAD;
        clg_report(err, code, j, na);
        return;
    }
    c.c[axis] = j;
    y[oy + i] = a[oa + clg_offset(c, nd, sa)];
}

// The same for a contiguous a seen as [outer, na, inner] (an embedding's lookup: outer
// 1, inner its width): work-item (c, r, q) copies element c of picked row r of block q,
// with no division (y is [outer, k, inner]). Launched over exactly (inner, k, outer).
__kernel void index_select_rows(int inner, int k, int na, __global T *y, int oy, __global const T *a, int oa,
                                __global const int *idx, int oi, int si, __global int *err, int code)
{
    int c = get_global_id(0), r = get_global_id(1), q = get_global_id(2);
    size_t at = oy + ((size_t)q * k + r) * inner + c;
    int j = idx[oi + r * si];
    if (j < 0 || j >= na) {
        y[at] = CLG_BAD;
        clg_report(err, code, j, na);
        return;
    }
    y[at] = a[oa + ((size_t)q * na + j) * inner + c];
}

// ga[c] = sum of g[c with c[axis] = m] over the m (ascending) with idx[m] == c[axis].
// One work item per element of ga, looping over all k indices: O(numel(a) * k) reads of
// the index list, but no atomics, so repeated indices add up in the same order on
// every run and every device.
__kernel void index_select_bw(int n, int nd, int8 ashape, int axis, __global T *ga, int oga,
                              __global const T *g, int og, int8 sg, int k,
                              __global const int *idx, int oi, int si)
{
    int i = get_global_id(0);
    if (i >= n) return;
    clg_coords c = clg_unravel(i, nd, ashape);
    int j = c.c[axis];
    T acc = (T)0;
    for (int m = 0; m < k; m++) {
        if (idx[oi + m * si] != j) continue;
        c.c[axis] = m;
        acc += g[og + clg_offset(c, nd, sg)];
    }
    ga[oga + i] = acc;
}

// The same along axis 0 with g contiguous [k, D] (an embedding's backward): one work-item
// per row j of ga scans the index list once and adds the rows of g that picked j, in
// index order, as above (the same bits): O(rows * k + numel(g)) instead of
// O(numel(a) * k). Launched over exactly `rows` items.
__kernel void index_select_bw_rows(int rows, int D, __global T *ga, int oga, __global const T *g, int og, int k,
                                   __global const int *idx, int oi, int si)
{
    int j = get_global_id(0);
    __global T *out = ga + oga + (size_t)j * D;
    for (int d = 0; d < D; d++) out[d] = (T)0;
    for (int m = 0; m < k; m++) {
        if (idx[oi + m * si] != j) continue;
        __global const T *src = g + og + (size_t)m * D;
        for (int d = 0; d < D; d++) out[d] += src[d];
    }
}

// torch.gather: y[c] = a[c with c[axis] = index[c]]; y has index's shape.
__kernel void gather(int n, int nd, int8 yshape, int axis, __global T *y, int oy,
                     __global const T *a, int oa, int8 sa, int na,
                     __global const int *idx, int oi, int8 si, __global int *err, int code)
{
    int i = get_global_id(0);
    if (i >= n) return;
    clg_coords c = clg_unravel(i, nd, yshape);
    int j = idx[oi + clg_offset(c, nd, si)];
    if (j < 0 || j >= na) {
        y[oy + i] = CLG_BAD;
        clg_report(err, code, j, na);
        return;
    }
    c.c[axis] = j;
    y[oy + i] = a[oa + clg_offset(c, nd, sa)];
}

// ga[c] = sum of g[p] over the index positions p that agree with c off the axis and
// have index[p] == c[axis], p[axis] ascending. One work item per element of ga looping
// over the index's extent along axis: O(numel(a) * index.shape[axis]), deterministic.
__kernel void gather_bw(int n, int nd, int8 ashape, int axis, __global T *ga, int oga,
                        __global const T *g, int og, int8 sg, int8 ishape,
                        __global const int *idx, int oi, int8 si)
{
    int i = get_global_id(0);
    if (i >= n) return;
    clg_coords c = clg_unravel(i, nd, ashape);
    int j = c.c[axis];
    T acc = (T)0;
    bool inside = true;   // index may be smaller than a off the axis
    for (int d = 0; d < nd; d++)
        if (d != axis && c.c[d] >= clg_at(ishape, d)) inside = false;
    int k = inside ? clg_at(ishape, axis) : 0;
    for (int m = 0; m < k; m++) {
        c.c[axis] = m;
        if (idx[oi + clg_offset(c, nd, si)] == j) acc += g[og + clg_offset(c, nd, sg)];
    }
    ga[oga + i] = acc;
}

// torch.index_add: y[c] = a[c] + the sum of src[c with c[axis] = m] over the m (ascending)
// with idx[m] == c[axis]. y and a have a's shape, src has k along axis. The items at
// c[axis] == 0 report indices out of [0, na) (every item reads all k anyway).
__kernel void index_add(int n, int nd, int8 ashape, int axis, __global T *y, int oy,
                        __global const T *a, int oa, int8 sa, __global const T *src, int os, int8 ss, int k,
                        __global const int *idx, int oi, int si, __global int *err, int code)
{
    int i = get_global_id(0);
    if (i >= n) return;
    clg_coords c = clg_unravel(i, nd, ashape);
    int j = c.c[axis], na = clg_at(ashape, axis);
    T acc = a[oa + clg_offset(c, nd, sa)];
    for (int m = 0; m < k; m++) {
        int v = idx[oi + m * si];
        if (j == 0 && (v < 0 || v >= na)) clg_report(err, code, v, na);
        if (v != j) continue;
        c.c[axis] = m;
        acc += src[os + clg_offset(c, nd, ss)];
    }
    y[oy + i] = acc;
}

// torch.scatter_add: y[c] = a[c] + the sum of src[p] over the index positions p that
// agree with c off the axis and have index[p] == c[axis], p[axis] ascending. src has
// index's shape (the host checks); index may be smaller than a off the axis.
__kernel void scatter_add(int n, int nd, int8 ashape, int axis, __global T *y, int oy,
                          __global const T *a, int oa, int8 sa, __global const T *src, int os, int8 ss,
                          int8 ishape, __global const int *idx, int oi, int8 si, __global int *err, int code)
{
    int i = get_global_id(0);
    if (i >= n) return;
    clg_coords c = clg_unravel(i, nd, ashape);
    int j = c.c[axis], na = clg_at(ashape, axis);
    T acc = a[oa + clg_offset(c, nd, sa)];
    bool inside = true;
    for (int d = 0; d < nd; d++)
        if (d != axis && c.c[d] >= clg_at(ishape, d)) inside = false;
    int k = inside ? clg_at(ishape, axis) : 0;
    for (int m = 0; m < k; m++) {
        c.c[axis] = m;
        int v = idx[oi + clg_offset(c, nd, si)];
        if (j == 0 && (v < 0 || v >= na)) clg_report(err, code, v, na);
        if (v == j) acc += src[os + clg_offset(c, nd, ss)];
    }
    y[oy + i] = acc;
}
