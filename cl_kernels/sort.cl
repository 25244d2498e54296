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
// walks a row: ranks within blocks of 16, then merges of neighbouring runs, one element
// per work-item placed by a binary search (32 steps at most). Elements carry their
// position in the row; clg_before breaks ties by it, so every order is total and the
// result is PyTorch's stable sort. Launched over exactly n = rows * R items.

// Each block of 16 of a row sorted by rank: vals and pos of the element that goes there.
__kernel void sort_blocks(int n, int R, __global const T *x, int ox, __global T *vals, __global int *pos,
                          int descending)
{
    int gid = get_global_id(0);
    int i = gid % R;
    size_t row = (size_t)(gid / R) * R;
    int b0 = i & ~15, b1 = min(b0 + 16, R);
    T v = x[ox + row + i];
    int rank = b0;
    for (int j = b0; j < b1; j++) rank += clg_before(x[ox + row + j], j, v, i, descending);
    vals[row + rank] = v;
    pos[row + rank] = i;
}

// The sorted runs [s, s + w) and [s + w, s + 2w) of each row merged into [s, s + 2w):
// an element's place is its offset in its own run plus the number of elements of the
// other run that sort before it.
__kernel void sort_merge(int n, int R, int w, __global const T *kin, __global const int *pin, __global T *kout,
                         __global int *pout, int descending)
{
    int gid = get_global_id(0);
    int i = gid % R;
    size_t row = (size_t)(gid / R) * R;
    long s = (long)(i / w / 2) * 2 * w;
    int mid = (int)min(s + w, (long)R), end = (int)min(s + 2L * w, (long)R);
    bool left = i < mid;
    T v = kin[row + i];
    int p = pin[row + i];
    int lo = left ? mid : (int)s, hi = left ? end : mid, o = lo;
    while (lo < hi) {   // the first element of the other run that does not sort before v
        int m = lo + (hi - lo) / 2;
        if (clg_before(kin[row + m], pin[row + m], v, p, descending)) lo = m + 1;
        else hi = m;
    }
    int at = (int)s + (i - (left ? (int)s : mid)) + (lo - o);
    kout[row + at] = v;
    pout[row + at] = p;
}
