// sort.cl: cumulative sums and sorting along the last axis of a contiguous [M, R, K]
// or [M, R] view (src/tensor/sort.c). Built per dtype (float, double, int).
// Launched over exactly their range (clg__launch_1d): no bounds checks (common.cl).

// y[m, r, k] = the sum of x[m, 0..r, k] (reverse: of x[m, r..R-1, k]), in order, so the
// same inputs give the same bits. The axis is cut into pieces of P (sort.c keeps P
// within the device's item_loops): work-item (k, m, piece) scans its piece and, when
// there are several, leaves the piece's total in tot[piece, m, k]; the
// totals are scanned in turn and cumsum_add adds each piece's carry. `r` counts in scan
// order: from the end when reverse.
__kernel void cumsum(int n, int R, int K, int M, int P, __global const T *x, int ox, __global T *y, int oy,
                     int reverse, __global T *tot, int pieces)
{
    int gid = get_global_id(0);
    int k = gid % K, m = gid / K % M, piece = gid / K / M;
    size_t base = (size_t)m * R * K + k;
    int r1 = min(piece * P + P, R);
    T acc = (T)0;
    for (int r = piece * P; r < r1; r++) {
        size_t at = base + (size_t)(reverse ? R - 1 - r : r) * K;
        acc += x[ox + at];
        y[oy + at] = acc;
    }
    if (pieces > 1) tot[((size_t)piece * M + m) * K + k] = acc;
}

// Piece piece + 1 of cumsum's scan gets the scanned totals of the pieces before it.
__kernel void cumsum_add(int n, int R, int K, int M, int P, __global T *y, int oy, int reverse,
                         __global const T *ctot)
{
    int gid = get_global_id(0);
    int k = gid % K, m = gid / K % M, piece = gid / K / M + 1;
    size_t base = (size_t)m * R * K + k;
    T carry = ctot[((size_t)(piece - 1) * M + m) * K + k];
    int r1 = min(piece * P + P, R);
    for (int r = piece * P; r < r1; r++) y[oy + base + (size_t)(reverse ? R - 1 - r : r) * K] += carry;
}

// Rows side by side (K = 1) in float32, where work-items are SIMD threads (row_items):
// each item runs its piece 16 elements at a time, scanned within the vector in four
// shifts (a Hillis-Steele scan) and carried on, where the kernels above vectorize
// across items and each lane walks a different piece (gathers and scatters: cumsum of
// [16, 65536] took 2.4x PyTorch's time). Sums within a vector add in a tree, so their
// rounding is not the sequential one; sums of integers stay exact. The pieces' totals
// come first (cumsum_tot_vec), are scanned by the kernels above, and each piece then
// starts from the total of those before it (`carry`, when pieces > 1): one pass over y.
#ifdef CLG_F32
inline float16 scan16_up(float16 a)
{
    const float16 z = 0.0f;
    a += shuffle2(z, a, (uint16)(0, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30));
    a += shuffle2(z, a, (uint16)(0, 0, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29));
    a += shuffle2(z, a, (uint16)(0, 0, 0, 0, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27));
    a += shuffle2(z, a, (uint16)(0, 0, 0, 0, 0, 0, 0, 0, 16, 17, 18, 19, 20, 21, 22, 23));
    return a;
}
// The same from the last lane down (reverse scans).
inline float16 scan16_down(float16 a)
{
    const float16 z = 0.0f;
    a += shuffle2(a, z, (uint16)(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16));
    a += shuffle2(a, z, (uint16)(2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 16));
    a += shuffle2(a, z, (uint16)(4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 16, 16, 16));
    a += shuffle2(a, z, (uint16)(8, 9, 10, 11, 12, 13, 14, 15, 16, 16, 16, 16, 16, 16, 16, 16));
    return a;
}

// Work-item (m, piece): the piece's elements in memory, [lo, hi) of row m.
#define CLG_PIECE_RANGE                                                                      \
    int gid = get_global_id(0), m = gid % M, piece = gid / M;                                \
    int r0 = piece * P, r1 = min(r0 + P, R), n = r1 - r0, V = n / 16;                        \
    int lo = reverse ? R - r1 : r0, hi = reverse ? R - r0 : r1;

// tot[piece, m] = the sum of the piece (for pieces > 1 only).
__kernel void cumsum_tot_vec(int M, int R, int P, __global const float *x, int ox, int reverse,
                             __global float *tot)
{
    CLG_PIECE_RANGE
    __global const float *p = x + ox + (size_t)m * R;
    float16 acc = 0.0f;
    for (int v = 0; v < V; v++) acc += vload16(0, p + lo + 16 * v);
    float s = clg_hsum16(acc);
    for (int r = lo + 16 * V; r < hi; r++) s += p[r];
    tot[(size_t)piece * M + m] = s;
}

// carry: the inclusive scan of tot (read at piece - 1), when pieces > 1.
__kernel void cumsum_vec(int M, int R, int P, __global const float *x, int ox, __global float *y, int oy,
                         int reverse, __global const float *carry, int pieces)
{
    CLG_PIECE_RANGE
    __global const float *p = x + ox + (size_t)m * R;
    __global float *q = y + oy + (size_t)m * R;
    float c = pieces > 1 && piece > 0 ? carry[(size_t)(piece - 1) * M + m] : 0.0f;
    if (!reverse) {
        for (int v = 0; v < V; v++) {
            float16 a = scan16_up(vload16(0, p + lo + 16 * v)) + c;
            vstore16(a, 0, q + lo + 16 * v);
            c = a.sf;
        }
        for (int r = lo + 16 * V; r < hi; r++) q[r] = c += p[r];
    } else {
        for (int v = 1; v <= V; v++) {
            float16 a = scan16_down(vload16(0, p + hi - 16 * v)) + c;
            vstore16(a, 0, q + hi - 16 * v);
            c = a.s0;
        }
        for (int r = hi - 16 * V - 1; r >= lo; r--) q[r] = c += p[r];
    }
}
#endif

#ifdef CLG_I32
#define CLG_NAN(v) false
#else
#define CLG_NAN(v) ((v) != (v))
#endif

// Whether a sorts before b (a at position i, b at j): ascending with NaN last, or
// descending with NaN first (PyTorch's orders), ties by position (stable).
inline bool clg_before(T a, int i, T b, int j, int descending)
{
    bool an = CLG_NAN(a), bn = CLG_NAN(b);
    if (an || bn) {
        if (an && bn) return i < j;
        return descending ? an : bn;
    }
    if (a == b) return i < j;
    return descending ? a > b : a < b;
}

// Stable merge sort of rows of R in passes (src/tensor/sort.c), so that no work-item
// walks a long row: ranks within blocks of B (at most 256: B comparisons per item), then
// merges of neighbouring runs, one element per work-item placed by a binary search (32
// steps at most). Elements carry their position in the row; clg_before breaks ties by
// it, so every order is total and the result is PyTorch's stable sort. Launched over
// exactly n = rows * R items.

// Each block of B of a row sorted by rank: vals and pos of the element that goes there.
__kernel void sort_blocks(int n, int R, int B, __global const T *x, int ox, __global T *vals, __global int *pos,
                          int descending)
{
    int gid = get_global_id(0);
    int i = gid % R;
    size_t row = (size_t)(gid / R) * R;
    int b0 = i / B * B, b1 = min(b0 + B, R);
    T v = x[ox + row + i];
    int rank = b0;
    for (int j = b0; j < b1; j++) rank += clg_before(x[ox + row + j], j, v, i, descending);
    vals[row + rank] = v;
    pos[row + rank] = i;
}

// The sorted runs [s, s + w) and [s + w, s + 2w) of each row merged into [s, s + 2w), by
// merge paths: work-item (row, seg) writes the S = 32 outputs from o0 = seg * S (2w is a
// multiple of S, so they lie in one pair of runs). A binary search over the diagonal
// finds how many of the first o0 - s outputs come from the left run; then S steps of an
// ordinary merge. Launched over exactly rows * segs items, segs = ceil(R / 32).
__kernel void sort_merge(int n, int R, int w, int segs, __global const T *kin, __global const int *pin,
                         __global T *kout, __global int *pout, int descending)
{
    int gid = get_global_id(0);
    int seg = gid % segs;
    size_t row = (size_t)(gid / segs) * R;
    int o0 = seg * 32, o1 = min(o0 + 32, R);
    long s = (long)(o0 / w / 2) * 2 * w;
    int mid = (int)min(s + w, (long)R), end = (int)min(s + 2L * w, (long)R);
    int lenA = mid - (int)s, lenB = end - mid, d = o0 - (int)s;
    __global const T *A = kin + row + s, *Bv = kin + row + mid;
    __global const int *pA = pin + row + s, *pB = pin + row + mid;
    int lo = max(0, d - lenB), hi = min(d, lenA);
    while (lo < hi) {   // the fewest taken from A such that B's next sorts before A's next
        int m = lo + (hi - lo) / 2;
        if (clg_before(Bv[d - m - 1], pB[d - m - 1], A[m], pA[m], descending)) hi = m;
        else lo = m + 1;
    }
    int ia = lo, ib = d - lo;
    for (int o = o0; o < o1; o++) {
        bool take_a = ia < lenA && (ib >= lenB || !clg_before(Bv[ib], pB[ib], A[ia], pA[ia], descending));
        kout[row + o] = take_a ? A[ia] : Bv[ib];
        pout[row + o] = take_a ? pA[ia] : pB[ib];
        ia += take_a;
        ib += !take_a;
    }
}

// topk by selection (sort.c `select_rows`, 1 <= k <= TOPK_MAX): work-item (row, h)
// keeps the best k of chunk h of its row in order, by insertion, and writes them to
// [row, h * k, + k) of vals and pos. A chunk is [hP, hP + P), the last one running to
// the row's end (less than 2P: every chunk holds at least P >= 2k). The positions are
// the elements' own (has_pos 0) or an earlier pass's (ipos); clg_before orders by
// value, then position, so the result is the stable sort's first k. Once the list is
// full, 16 values at a time are compared with its last in one vector, and skipped
// together when none can enter (NaN and ties are looked at one by one). An item's
// loops: under 2P reads and 2Pk shifts (sort.c keeps 2P (k + 1) within item_loops).
#define TOPK_MAX 32
#define CLG_VEC16_(t) t##16
#define CLG_VEC16(t) CLG_VEC16_(t)
#define TOPK_LANE_BITS (int16)(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)

// Value v at position p into the sorted list bv/bp of have (< k: it grows) or k entries.
inline void topk_insert(T v, int p, T *bv, int *bp, int *have, int k, int descending)
{
    if (*have == k && !clg_before(v, p, bv[k - 1], bp[k - 1], descending)) return;
    int at = *have < k ? (*have)++ : k - 1;
    for (; at > 0 && clg_before(v, p, bv[at - 1], bp[at - 1], descending); at--) {
        bv[at] = bv[at - 1];
        bp[at] = bp[at - 1];
    }
    bv[at] = v;
    bp[at] = p;
}

__kernel void topk_select(int n, int R, int P, int nch, int k, __global const T *x, int ox, __global const int *ipos,
                          int has_pos, __global T *vals, __global int *pos, int descending)
{
    int gid = get_global_id(0);
    int h = gid % nch;
    size_t row = (size_t)(gid / nch) * R;
    __global const T *xr = x + ox + row;
    __global const int *pr = ipos + row;
    T bv[TOPK_MAX];
    int bp[TOPK_MAX], have = 0;
    int m = h * P, m1 = h == nch - 1 ? R : m + P;
    for (; m < m1 && have < k; m++) topk_insert(xr[m], has_pos ? pr[m] : m, bv, bp, &have, k, descending);
    for (; m + 16 <= m1; m += 16) {
        CLG_VEC16(T) v = vload16(0, xr + m);
        T last = bv[k - 1];
        // the lanes that may enter as bits (ascending): only those are looked at, one by
        // one (all 16 were: over random rows ~40 of a chunk's 64 vectors have a lane
        // that may enter, and each took 16 insertion checks)
        int16 may = convert_int16(descending ? !(v < last) : !(v > last)) & TOPK_LANE_BITS;
        int8 m8 = may.lo | may.hi;
        int4 m4 = m8.lo | m8.hi;
        int2 m2 = m4.lo | m4.hi;
        uint bits = (uint)(m2.x | m2.y);
        for (; bits; bits &= bits - 1) {   // at most 16 steps
            int i = m + 31 - (int)clz(bits & (0u - bits));
            topk_insert(xr[i], has_pos ? pr[i] : i, bv, bp, &have, k, descending);
        }
    }
    for (; m < m1; m++) topk_insert(xr[m], has_pos ? pr[m] : m, bv, bp, &have, k, descending);
    size_t o = (size_t)gid * k;
    for (int i = 0; i < k; i++) {
        vals[o + i] = bv[i];
        pos[o + i] = bp[i];
    }
}

// Sort's and topk's backward along the last axis: the k gradients of each row go back to
// the positions their values came from (distinct, so no two items write one place):
// ga[row, idx[row, j]] = g[row, j]. ga comes zeroed. Launched over exactly rows * k.
__kernel void unsort(int n, int k, int R, __global const T *g, int og, __global const int *idx, int oi,
                     __global T *ga, int oga)
{
    int gid = get_global_id(0);
    size_t row = (size_t)(gid / k);
    ga[oga + row * R + idx[oi + gid]] = g[og + gid];
}
