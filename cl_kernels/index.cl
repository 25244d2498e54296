// index.cl: index_select and gather, and the segment sums behind their backward passes,
// index_add and scatter_add (src/tensor/index.c). Built with -DT=float|double|int.
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

// y[c] = a[c with c[axis] = idx[c[axis]]]; y has a's shape with k along axis (a strided).
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

// Every one of the k indices (stride si) in [0, na), else reported into the error word:
// for the copies below, which do not branch on them. Exactly k work-items.
__kernel void index_check(int k, __global const int *idx, int oi, int si, int na, __global int *err, int code)
{
    int j = idx[oi + get_global_id(0) * si];
    if (j < 0 || j >= na) clg_report(err, code, j, na);
}

// The same for a contiguous a seen as [outer, na, inner] (na > 0, inner >= 16: an
// embedding's lookup, outer 1 and inner its width), y [outer, k, inner], without a
// branch, so that POCL vectorizes it: an index out of range reads row 0 and writes
// CLG_BAD (index_check, or the host, reports it). Work-item (c, r, q) copies element c
// of picked row r of block q, launched over exactly (inner, k, outer).
__kernel void index_select_rows(int inner, int k, int na, __global T *y, int oy, __global const T *a, int oa,
                                __global const int *idx, int oi, int si)
{
    int c = get_global_id(0), r = get_global_id(1), q = get_global_id(2);
    int j = idx[oi + r * si], bad = j < 0 || j >= na;
    T v = a[oa + ((size_t)q * na + (bad ? 0 : j)) * inner + c];
    y[oy + ((size_t)q * k + r) * inner + c] = bad ? CLG_BAD : v;
}


// torch.gather: y[c] = a[c with c[axis] = index[c]]; y has index's shape.
// The same with narrow rows (inner < 16: an image's columns), over the flat output,
// its coordinates found by clg_udiv (inner and k's pairs mi, s_i and mk, s_k) rather
// than an integer division per element: one launch of big groups where rows of a few
// items would make tens of thousands of tiny groups.
__kernel void index_select_flat(int inner, uint mi, int s_i, int k, uint mk, int s_k, int na, __global T *y, int oy,
                                __global const T *a, int oa, __global const int *idx, int oi, int si)
{
    uint i = get_global_id(0);
    uint t = clg_udiv(i, mi, s_i), c = i - t * inner;
    uint q = clg_udiv(t, mk, s_k), r = t - q * k;
    int j = idx[oi + r * si], bad = j < 0 || j >= na;
    T v = a[oa + ((size_t)q * na + (bad ? 0 : j)) * inner + c];
    y[oy + i] = bad ? CLG_BAD : v;
}

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

// The same for a contiguous a [Q, na, inner] and index [Q, k, inner] (y's shape): no
// index division. gather_inner over exactly (inner, k, Q) items; gather_last (inner 1,
// the gather of a row's picks) over exactly (k, Q).
__kernel void gather_inner(int inner, int k, int na, __global T *y, int oy, __global const T *a, int oa,
                           __global const int *idx, int oi, __global int *err, int code)
{
    int c = get_global_id(0), m = get_global_id(1), q = get_global_id(2);
    size_t at = ((size_t)q * k + m) * inner + c;
    int j = idx[oi + at];
    if (j < 0 || j >= na) {
        y[oy + at] = CLG_BAD;
        clg_report(err, code, j, na);
        return;
    }
    y[oy + at] = a[oa + ((size_t)q * na + j) * inner + c];
}

__kernel void gather_last(int k, int na, __global T *y, int oy, __global const T *a, int oa,
                          __global const int *idx, int oi, __global int *err, int code)
{
    int m = get_global_id(0), q = get_global_id(1);
    size_t at = (size_t)q * k + m;
    int j = idx[oi + at];
    if (j < 0 || j >= na) {
        y[oy + at] = CLG_BAD;
        clg_report(err, code, j, na);
        return;
    }
    y[oy + at] = a[oa + (size_t)q * na + j];
}

// Scatter-adds without atomics (index.c's segment_sum): y[q, j, c] = the sum of
// src[q, m, c] over the m with key[m] == j, for index_select's and gather's backward,
// index_add and scatter_add. The keys of each list (one shared by every q, or one per
// q) come sorted stably (sk, with their positions sp, [lists, R]; sort.cl), so the m
// that add into j are one run of the sorted list, found by binary search, and they add
// in ascending order: the same bits on every run and device. A run spanning whole
// chunks of L adds the chunks' sums, so that no work-item loops over more than about
// 2L + R / L elements however often one index repeats.

// bounds[l, j] = the first place in sorted list l with key >= j, for j in [0, na].
// Keys outside [0, na) sort to the ends of the list; item j == 0 reports them (code 0:
// the forward did).
__kernel void segsum_bounds(int na, int R, __global const int *sk, __global int *bounds, __global int *err, int code)
{
    int j = get_global_id(0), l = get_global_id(1);
    __global const int *keys = sk + (size_t)l * R;
    if (code && j == 0 && R > 0) {
        if (keys[0] < 0) clg_report(err, code, keys[0], na);
        if (keys[R - 1] >= na) clg_report(err, code, keys[R - 1], na);
    }
    int lo = 0, hi = R;
    while (lo < hi) {   // 32 steps at most
        int m = lo + (hi - lo) / 2;
        if (keys[m] < j) lo = m + 1;
        else hi = m;
    }
    bounds[(size_t)l * (na + 1) + j] = lo;
}

// part[q, h, c] = the sum of chunk h's sources when the whole chunk [hL, hL + L) of the
// list lies in one run (the only chunks segsum reads here).
__kernel void segsum_chunks(int inner, int R, int L, int nch, int per_q, __global const T *src, int os,
                            __global const int *sk, __global const int *sp, __global T *part)
{
    int c = get_global_id(0), h = get_global_id(1), q = get_global_id(2);
    size_t list = (size_t)(per_q ? q : 0) * R;
    int m0 = h * L;
    if (sk[list + m0] != sk[list + m0 + L - 1]) return;
    __global const T *s = src + os + (size_t)q * R * inner + c;
    T acc = (T)0;
    for (int m = m0; m < m0 + L; m++) acc += s[(size_t)sp[list + m] * inner];
    part[((size_t)q * nch + h) * inner + c] = acc;
}

// y[q, j, c] from the run of j: its sources one by one, whole chunks by their sums.
__kernel void segsum(int inner, int na, int R, int L, int nch, int per_q, __global const T *src, int os,
                     __global const int *sp, __global const int *bounds, __global const T *part,
                     __global T *y, int oy)
{
    int c = get_global_id(0), j = get_global_id(1), q = get_global_id(2);
    size_t l = per_q ? q : 0, list = l * R;
    int m = bounds[l * (na + 1) + j], hi = bounds[l * (na + 1) + j + 1];
    __global const T *s = src + os + (size_t)q * R * inner + c;
    __global const T *ps = part + (size_t)q * nch * inner + c;
    T acc = (T)0;
    // singles up to the first chunk boundary, whole chunks by their sums, then singles:
    // three plain loops (no test per step), the same terms in the same order
    int h = min(hi, (m + L - 1) / L * L);
    for (; m < h; m++) acc += s[(size_t)sp[list + m] * inner];
    for (; m + L <= hi; m += L) acc += ps[(size_t)(m / L) * inner];
    for (; m < hi; m++) acc += s[(size_t)sp[list + m] * inner];
    y[oy + ((size_t)q * na + j) * inner + c] = acc;
}

// The scatter-add by walking the lists in order (device table: scatter = lines; index.c
// `lines_sum`): work-item (c, h, q) adds element c of the sources of chunk h0 + h of list
// q, positions [hC, min(R, hC + C)), one by one into part + q * pq + h * ph (its [na,
// inner] plane, column c), which holds zeros or the values added to. ph = 0 with one
// chunk a launch, the launches in chunk order: every list adds into one plane, no
// partial planes to sum (index.c). The same terms in the same order on every run; C is
// within the device's item_loops. Keys outside [0, na) add nothing and, with code != 0,
// are reported.
__kernel void scatter_lines(int inner, int na, int R, int C, int h0, int per_q, __global const T *src, int os,
                            __global const int *keys, int ok, __global T *part, int op, long pq, long ph,
                            __global int *err, int code)
{
    int c = get_global_id(0), h = h0 + get_global_id(1), q = get_global_id(2);
    __global const int *k = keys + ok + (size_t)(per_q ? q : 0) * R;
    __global const T *s = src + os + (size_t)q * R * inner + c;
    __global T *p = part + op + (size_t)q * pq + (size_t)get_global_id(1) * ph + c;
    int m1 = min(R, h * C + C);
    for (int m = h * C; m < m1; m++) {
        int j = k[m];
        if (j >= 0 && j < na) p[(size_t)j * inner] += s[(size_t)m * inner];
        else if (code) clg_report(err, code, j, na);
    }
}

#if defined(CLG_F32) && !defined(CLG_F16_STORE) && !defined(CLG_BF16_STORE)
// The same 16 columns at a time in explicit vectors (inner % 16 == 0; index.c chooses it):
// work-item (c16, h, q) walks its chunk of keys once for 16 columns. POCL vectorizes a
// kernel across work-items only around loop-free bodies: scatter_lines above runs
// one column per pass over the keys.
__kernel void scatter_lines_vec(int inner, int na, int R, int C, int h0, int per_q, __global const float *src,
                                int os, __global const int *keys, int ok, __global float *part, int op, long pq,
                                long ph, __global int *err, int code)
{
    int c = get_global_id(0) * 16, h = h0 + get_global_id(1), q = get_global_id(2);
    __global const int *k = keys + ok + (size_t)(per_q ? q : 0) * R;
    __global const float *s = src + os + (size_t)q * R * inner + c;
    __global float *p = part + op + (size_t)q * pq + (size_t)get_global_id(1) * ph + c;
    int m1 = min(R, h * C + C);
    for (int m = h * C; m < m1; m++) {
        int j = k[m];
        if (j >= 0 && j < na) {
            __global float *d = p + (size_t)j * inner;
            vstore16(vload16(0, d) + vload16(0, s + (size_t)m * inner), 0, d);
        } else if (code) {
            clg_report(err, code, j, na);
        }
    }
}
#endif

// y[q, r] = the sum over the chunks h of part[q, h, r], h ascending, r < plane = na *
// inner, added to y's own value where add (base + the sum: scatter_add's a + the sums): over plane x Q work-items (a range of inner x na x Q made groups of one
// work-item where inner is 1, a scatter_add along the last axis: 1.07 ms for [16, 65536]).
__kernel void scatter_lines_sum(int plane, int nch, __global const T *part, __global T *y, int oy, int add)
{
    int r = get_global_id(0), q = get_global_id(1);
    size_t at = (size_t)q * nch * plane + r, to = oy + (size_t)q * plane + r;
    T acc = part[at];
    for (int h = 1; h < nch; h++) acc += part[at + (size_t)h * plane];
    y[to] = add ? y[to] + acc : acc;
}

#if defined(CLG_F32) && !defined(CLG_F16_STORE) && !defined(CLG_BF16_STORE)
// The same 16 values a work-item in explicit vectors (plane % 16 == 0; index.c chooses
// it): POCL leaves the work-item's loop over the chunks scalar (0.71 ms for two chunks
// of [16, 65536]).
__kernel void scatter_lines_sum_vec(int plane, int nch, __global const float *part, __global float *y, int oy,
                                    int add)
{
    int r = get_global_id(0) * 16, q = get_global_id(1);
    size_t at = (size_t)q * nch * plane + r;
    __global float *to = y + oy + (size_t)q * plane + r;
    float16 acc = vload16(0, part + at);
    for (int h = 1; h < nch; h++) acc += vload16(0, part + at + (size_t)h * plane);
    vstore16(add ? vload16(0, to) + acc : acc, 0, to);
}
#endif
