// sort.cl: cumulative sums and sorting along the last axis of a contiguous [M, R, K]
// or [M, R] view (src/tensor/sort.c). Built per dtype (float, double, int).
// Launched over exactly their range (clg__launch_1d): no bounds checks (common.cl).

// y[m, r, k] = the sum of x[m, 0..r, k] (reverse: of x[m, r..R-1, k]), in order, so the
// same inputs give the same bits. One work-item per (m, k): O(R) each.
__kernel void cumsum(int n, int R, int K, __global const T *x, int ox, __global T *y, int oy, int reverse)
{
    int gid = get_global_id(0);
    int k = gid % K, m = gid / K;
    size_t base = (size_t)m * R * K + k;
    T acc = (T)0;
    for (int r = 0; r < R; r++) {
        size_t at = base + (size_t)(reverse ? R - 1 - r : r) * K;
        acc += x[ox + at];
        y[oy + at] = acc;
    }
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

// Rows of R: element i of row m goes to its rank, the number of elements that sort
// before it. One work-item per element, O(R) each: O(R^2) per row, no local memory,
// any R; for rows of a few thousand.
__kernel void sort_rank(int n, int R, __global const T *x, int ox, __global T *vals, __global int *idx,
                        int descending)
{
    int gid = get_global_id(0);
    int i = gid % R;
    size_t row = (size_t)(gid / R) * R;
    T v = x[ox + row + i];
    int rank = 0;
    for (int j = 0; j < R; j++) rank += clg_before(x[ox + row + j], j, v, i, descending);
    vals[row + rank] = v;
    idx[row + rank] = i;
}
