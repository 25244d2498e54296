// multinomial.cl: torch.multinomial over the rows of non-negative weights w [R, C]
// (src/tensor/multinomial.c), with -DT=float or -DT=double. No work-item loops over a
// row: Mesa's llvmpipe ends a work-item's loops after 65,535 iterations in all, and
// rows can be longer than that.
//
// With replacement: a sum tree. Level 0 is w; level L+1 holds the sums of blocks of
// MN_FAN entries of level L (mn_block_sums), up to a level of at most MN_FAN entries
// per row (4 levels for 2^31 categories). A draw (mn_draw) takes u in [0, 1), scales
// it by the top level's total and walks down, at each level scanning the MN_FAN
// children of the chosen node for the first whose running sum passes the target: at
// most 4 x MN_FAN steps. A child that passes it has a positive sum, so a zero weight
// is never drawn; where rounding leaves the target past a node's last child, the last
// child with a positive sum is taken.
//
// Without replacement: the exponential race (Efraimidis-Spirakis): element i gets the
// key log(E_i) - log(w_i) with E_i ~ Exp(1), and the S smallest keys, in order, are a
// draw of S distinct categories one after another, each with probability
// proportional to its weight among those left. The keys are sorted with their indices
// by a bitonic network (mn_bitonic, one launch per step, a compare-exchange per
// work-item); a zero weight gets key +inf and padding +inf with index INT_MAX.
//
// Errors, into the device's error word (common.cl's clg_report) with the row as value:
// a negative, infinite or NaN weight (code bad), a row that sums to 0 or overflows
// (code empty), fewer nonzero weights than samples without replacement (code few).
#define MN_FAN 256

#ifdef CLG_F64
#define MN_PER 2
#else
#define MN_PER 4
#endif

// Uniform number j of a draw in [0, 1): 24 random bits for float, 53 for double
// (as random.cl), MN_PER of them per Philox block.
inline T mn_uniform(int j, uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi)
{
    uint4 r = clg_philox_block(j / MN_PER, seed_lo, seed_hi, ctr_lo, ctr_hi);
    int lane = j % MN_PER;
#ifdef CLG_F64
    uint hi = lane == 0 ? r.x : r.z, lo = lane == 0 ? r.y : r.w;
    return ((double)(hi >> 5) * 67108864.0 + (double)(lo >> 6)) * (1.0 / 9007199254740992.0);
#else
    uint v = lane == 0 ? r.x : lane == 1 ? r.y : lane == 2 ? r.z : r.w;
    return (T)(v >> 8) * (T)(1.0f / 16777216.0f);
#endif
}

inline bool mn_bad(T v) { return !(v >= (T)0) || isinf(v); }   // negative, NaN or infinite

// Work-item (j, row): out[row][j] = the sum of in[row][j*MN_FAN ..], nin entries a row.
// check: in is the weights themselves, whose values are checked.
__kernel void mn_block_sums(int nin, int nout, __global const T *in, int oin, __global T *out, int check,
                            __global int *err, int code_bad)
{
    int j = get_global_id(0), row = get_global_id(1);
    int start = j * MN_FAN, count = min(MN_FAN, nin - start);
    __global const T *p = in + oin + (long)row * nin + start;
    T acc = (T)0;
    bool bad = false;
    for (int k = 0; k < count; k++) {
        bad |= mn_bad(p[k]);
        acc += p[k];
    }
    if (check && bad) clg_report(err, code_bad, row, 0);
    out[(long)row * nout + j] = acc;
}

// Work-item (s, row): sample s of the row, with replacement, into y[row * S + s].
// Level L of the tree is lL (l0 the weights at offset o0) with nL entries a row;
// nlev levels, the top one of at most MN_FAN entries.
__kernel void mn_draw(int S, int nlev, __global int *y, __global const T *l0, int o0, int n0,
                      __global const T *l1, int n1, __global const T *l2, int n2, __global const T *l3, int n3,
                      uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi,
                      __global int *err, int code_bad, int code_empty)
{
    int s = get_global_id(0), row = get_global_id(1);
    int top = nlev - 1;
    int ntop = top == 0 ? n0 : top == 1 ? n1 : top == 2 ? n2 : n3;
    __global const T *ptop = top == 0 ? l0 + o0 : top == 1 ? l1 : top == 2 ? l2 : l3;
    ptop += (long)row * ntop;
    // the total, summed in the order the walk below sums it; the weights checked when
    // the top level is the weights (no mn_block_sums checked them)
    T total = (T)0;
    bool bad = false;
    for (int k = 0; k < ntop; k++) {
        bad |= top == 0 && mn_bad(ptop[k]);
        total += ptop[k];
    }
    if (bad) clg_report(err, code_bad, row, 0);
    if (!(total > (T)0) || isinf(total)) {
        clg_report(err, code_empty, row, 0);
        y[row * S + s] = -1;
        return;
    }
    T target = mn_uniform(row * S + s, seed_lo, seed_hi, ctr_lo, ctr_hi) * total;
    int node = 0;   // the chosen entry of the level above (the top: the whole row)
    for (int L = top; L >= 0; L--) {
        int n = L == 0 ? n0 : L == 1 ? n1 : L == 2 ? n2 : n3;
        __global const T *p = (L == 0 ? l0 + o0 : L == 1 ? l1 : L == 2 ? l2 : l3) + (long)row * n;
        int start = L == top ? 0 : node * MN_FAN, count = L == top ? n : min(MN_FAN, n - start);
        T acc = (T)0, before = (T)0;
        int pick = -1, last = -1;
        for (int k = 0; k < count; k++) {
            T v = p[start + k];
            T next = acc + v;
            if (v > (T)0) last = k;
            if (pick < 0 && next > target) {
                pick = k;
                before = acc;
            }
            acc = next;
        }
        if (pick < 0) {   // rounding: the last positive child, and so on down
            pick = max(last, 0);
            target = INFINITY;
        } else {
            target -= before;
        }
        node = start + pick;
    }
    y[row * S + s] = node;
}

// Work-item (i, row) of the padded row of P >= C: the race's key and index.
__kernel void mn_keys(int C, int P, __global const T *w, int ow, __global T *keys, __global int *idx,
                      uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, __global int *err, int code_bad)
{
    int i = get_global_id(0), row = get_global_id(1);
    long at = (long)row * P + i;
    if (i >= C) {
        keys[at] = INFINITY;
        idx[at] = INT_MAX;
        return;
    }
    T v = w[ow + (long)row * C + i];
    if (mn_bad(v)) clg_report(err, code_bad, row, 0);
    // E = -log(1 - u) with 1 - u in (0, 1]
    T e = -log((T)1 - mn_uniform(row * C + i, seed_lo, seed_hi, ctr_lo, ctr_hi));
    keys[at] = v > (T)0 && !isinf(v) ? log(e) - log(v) : INFINITY;
    idx[at] = i;
}

// One step (k, j) of the bitonic sort of each row's P (key, index) pairs, ascending:
// work-item (p, row), p < P / 2, compare-exchanges the pair (i, i + j).
__kernel void mn_bitonic(int P, int k, int j, __global T *keys, __global int *idx)
{
    int p = get_global_id(0), row = get_global_id(1);
    int i = ((p & ~(j - 1)) << 1) | (p & (j - 1)), l = i | j;
    __global T *kr = keys + (long)row * P;
    __global int *ir = idx + (long)row * P;
    T ka = kr[i], kb = kr[l];
    int ia = ir[i], ib = ir[l];
    bool greater = ka > kb || (ka == kb && ia > ib);
    if (greater == ((i & k) == 0)) {
        kr[i] = kb, kr[l] = ka;
        ir[i] = ib, ir[l] = ia;
    }
}

// Work-item (s, row): the s-th smallest key's index; an infinite key is a zero weight
// (or padding): fewer nonzero weights than samples.
__kernel void mn_take(int S, int P, __global int *y, __global const T *keys, __global const int *idx,
                      __global int *err, int code_few)
{
    int s = get_global_id(0), row = get_global_id(1);
    long at = (long)row * P + s;
    bool ok = keys[at] < (T)INFINITY;   // -inf is a draw of E = 0, which counts
    if (!ok) clg_report(err, code_few, row, S);
    y[row * S + s] = ok ? idx[at] : -1;
}
