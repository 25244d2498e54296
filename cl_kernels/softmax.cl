// softmax.cl: row-wise kernels (src/tensor/softmax.c): softmax, log_softmax, var and
// argmax along axes, the fused cross-entropy loss, and mse's elementwise parts.
//
// A "row" is one set of kept coordinates; its R elements run along the reduced axes.
// The host describes every operand by an offset, the strides of the kept axes (nk of
// them, shape kshape) and those of the reduced axes (nr, shape rshape), so any layout
// (permuted, sliced, broadcast with stride 0) is read in place, with no copy.
// One work-group per row: work-item l takes elements l, l + WG, ... and the group
// combines them in local memory (WG a power of two). The order of operations is fixed
// by WG alone, so the same inputs give the same bits.
// softmax, log_softmax and var (and their backward passes) read and write storage of
// TS through CLG_LD / CLG_ST (common.cl): 16-bit tensors compute in float32 and round
// each result once. The other kernels take float32 or float64 only.

// Offset of element r of a row along the reduced axes.
inline int clg_roff(int r, int nr, int8 rshape, int8 rstr)
{
    if (nr == 1) return r * rstr.s0;   // the usual case: one axis, no division
    return clg_offset(clg_unravel(r, nr, rshape), nr, rstr);
}

// Offset of row `row` of an operand: its own offset plus the kept coordinates.
inline int clg_rowbase(int row, int nk, int8 kshape, int off, int8 kstr)
{
    return off + clg_offset(clg_unravel(row, nk, kshape), nk, kstr);
}

#ifndef CLG_I32
// ---- softmax and log_softmax ------------------------------------------------------------
// y = exp(x - max) / sum exp(x - max), or log_softmax y = (x - max) - log(sum): the
// max taken out first, so no exp overflows whatever the logits' magnitude.
__kernel void softmax_fwd(int R, int nk, int8 kshape, int nr, int8 rshape,
                          __global const TS *x, int ox, int8 kx, int8 rx,
                          __global TS *y, int oy, int8 ky, int8 ry, int log_mode, __local T *s)
{
    int row = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    int bx = clg_rowbase(row, nk, kshape, ox, kx), by = clg_rowbase(row, nk, kshape, oy, ky);
    T m = -INFINITY;
    for (int r = l; r < R; r += wg) m = clg_nanmax(m, CLG_LD(x, bx + clg_roff(r, nr, rshape, rx)));
    m = clg_group_max(m, s);
    T acc = 0;
    for (int r = l; r < R; r += wg) acc += exp(CLG_LD(x, bx + clg_roff(r, nr, rshape, rx)) - m);
    T sum = clg_group_sum(acc, s);
    T lsum = log(sum), inv = (T)1 / sum;
    for (int r = l; r < R; r += wg) {
        T d = CLG_LD(x, bx + clg_roff(r, nr, rshape, rx)) - m;
        CLG_ST(y, by + clg_roff(r, nr, rshape, ry), log_mode ? d - lsum : exp(d) * inv);
    }
}

// Backward, from the forward's output y and its gradient g:
//   softmax:     dx = y * (g - sum(g * y))
//   log_softmax: dx = g - exp(y) * sum(g)
__kernel void softmax_bwd(int R, int nk, int8 kshape, int nr, int8 rshape,
                          __global const TS *y, int oy, int8 ky, int8 ry,
                          __global const TS *g, int og, int8 kg, int8 rg,
                          __global TS *dx, int od, int8 kd, int8 rd, int log_mode, __local T *s)
{
    int row = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    int by = clg_rowbase(row, nk, kshape, oy, ky), bg = clg_rowbase(row, nk, kshape, og, kg);
    int bd = clg_rowbase(row, nk, kshape, od, kd);
    T acc = 0;
    for (int r = l; r < R; r += wg) {
        T gv = CLG_LD(g, bg + clg_roff(r, nr, rshape, rg));
        acc += log_mode ? gv : gv * CLG_LD(y, by + clg_roff(r, nr, rshape, ry));
    }
    T dot = clg_group_sum(acc, s);
    for (int r = l; r < R; r += wg) {
        T yv = CLG_LD(y, by + clg_roff(r, nr, rshape, ry)), gv = CLG_LD(g, bg + clg_roff(r, nr, rshape, rg));
        CLG_ST(dx, bd + clg_roff(r, nr, rshape, rd), log_mode ? gv - exp(yv) * dot : yv * (gv - dot));
    }
}

// The same two kernels with a work-item per row (the device table's row_reduce = items:
// CPUs, where a group's barriers cost more than a short row): the row's passes in
// element order, no local memory. The host keeps 3 R within item_loops.
__kernel void softmax_fwd_item(int R, int nk, int8 kshape, int nr, int8 rshape,
                               __global const TS *x, int ox, int8 kx, int8 rx,
                               __global TS *y, int oy, int8 ky, int8 ry, int log_mode)
{
    int row = get_global_id(0);
    int bx = clg_rowbase(row, nk, kshape, ox, kx), by = clg_rowbase(row, nk, kshape, oy, ky);
    T m = -INFINITY;
    for (int r = 0; r < R; r++) m = clg_nanmax(m, CLG_LD(x, bx + clg_roff(r, nr, rshape, rx)));
    T sum = 0;
    for (int r = 0; r < R; r++) sum += exp(CLG_LD(x, bx + clg_roff(r, nr, rshape, rx)) - m);
    T lsum = log(sum), inv = (T)1 / sum;
    for (int r = 0; r < R; r++) {
        T d = CLG_LD(x, bx + clg_roff(r, nr, rshape, rx)) - m;
        CLG_ST(y, by + clg_roff(r, nr, rshape, ry), log_mode ? d - lsum : exp(d) * inv);
    }
}

__kernel void softmax_bwd_item(int R, int nk, int8 kshape, int nr, int8 rshape,
                               __global const TS *y, int oy, int8 ky, int8 ry,
                               __global const TS *g, int og, int8 kg, int8 rg,
                               __global TS *dx, int od, int8 kd, int8 rd, int log_mode)
{
    int row = get_global_id(0);
    int by = clg_rowbase(row, nk, kshape, oy, ky), bg = clg_rowbase(row, nk, kshape, og, kg);
    int bd = clg_rowbase(row, nk, kshape, od, kd);
    T dot = 0;
    for (int r = 0; r < R; r++) {
        T gv = CLG_LD(g, bg + clg_roff(r, nr, rshape, rg));
        dot += log_mode ? gv : gv * CLG_LD(y, by + clg_roff(r, nr, rshape, ry));
    }
    for (int r = 0; r < R; r++) {
        T yv = CLG_LD(y, by + clg_roff(r, nr, rshape, ry)), gv = CLG_LD(g, bg + clg_roff(r, nr, rshape, rg));
        CLG_ST(dx, bd + clg_roff(r, nr, rshape, rd), log_mode ? gv - exp(yv) * dot : yv * (gv - dot));
    }
}

// The work-item-per-row kernels again, for float32 rows whose elements lie next to each
// other (unit stride along the row in every operand): each work-item runs its row 16
// elements at a time in explicit vectors. A CPU implementation then computes along the
// row in SIMD registers with contiguous loads, where the kernels above vectorize across
// rows and gather each lane's element from a different row. The tail of a row (R % 16)
// runs element by element. The host keeps 3 R within item_loops, as above.
#if defined(CLG_F32) && !defined(CLG_F16_STORE) && !defined(CLG_BF16_STORE)
// The largest of a row's R values, 16 at a time; NaN if any is NaN. By comparisons and
// selects, NaN kept in a lane mask looked at once (as reduce.cl's reduce_max_vec): fmax
// is a function call on POCL, and any(isnan) on every vector made reduce.cl's sums 4x
// slower there.
inline float row_max_vec(__global const float *xr, int R)
{
    int V = R / 16, nan = 0;
    float16 m16 = (float16)(-INFINITY);
    int16 nans = 0;
    for (int v = 0; v < V; v++) {
        float16 a = vload16(v, xr);
        nans |= a != a;
        m16 = select(m16, a, a > m16);
    }
    float8 m8 = select(m16.hi, m16.lo, m16.lo > m16.hi);
    float4 m4 = select(m8.hi, m8.lo, m8.lo > m8.hi);
    float2 m2 = select(m4.hi, m4.lo, m4.lo > m4.hi);
    float m = m2.x > m2.y ? m2.x : m2.y;
    int8 n8 = nans.lo | nans.hi;
    int4 n4 = n8.lo | n8.hi;
    int2 n2 = n4.lo | n4.hi;
    nan = (n2.x | n2.y) != 0;
    for (int r = 16 * V; r < R; r++) {
        float v = xr[r];
        nan |= v != v;
        m = v > m ? v : m;
    }
    return nan ? NAN : m;
}

__kernel void softmax_fwd_vec(int R, int nk, int8 kshape, __global const float *x, int ox, int8 kx,
                              __global float *y, int oy, int8 ky, int log_mode)
{
    int row = get_global_id(0), V = R / 16;
    __global const float *xr = x + clg_rowbase(row, nk, kshape, ox, kx);
    __global float *yr = y + clg_rowbase(row, nk, kshape, oy, ky);
    // NaN propagates as in clg_nanmax: a row with a NaN gives NaN everywhere.
    float m = row_max_vec(xr, R);
    // softmax keeps each exp in y and scales it afterwards: one exp per element, not two.
    float16 s16 = 0;
    for (int v = 0; v < V; v++) {
        float16 e = exp(vload16(v, xr) - m);
        s16 += e;
        if (!log_mode) vstore16(e, v, yr);
    }
    float sum = clg_hsum16(s16);
    for (int r = 16 * V; r < R; r++) {
        float e = exp(xr[r] - m);
        sum += e;
        if (!log_mode) yr[r] = e;
    }
    // One mode's pass per launch (log_mode is uniform): a select computed both sides, the
    // log of each row's sum and both loads in softmax too (rows of 64: 0.5x PyTorch).
    if (log_mode) {
        float lsum = log(sum);
        for (int v = 0; v < V; v++) vstore16(vload16(v, xr) - m - lsum, v, yr);
        for (int r = 16 * V; r < R; r++) yr[r] = xr[r] - m - lsum;
    } else {
        float inv = 1.0f / sum;
        for (int v = 0; v < V; v++) vstore16(vload16(v, yr) * inv, v, yr);
        for (int r = 16 * V; r < R; r++) yr[r] *= inv;
    }
}

__kernel void softmax_bwd_vec(int R, int nk, int8 kshape, __global const float *y, int oy, int8 ky,
                              __global const float *g, int og, int8 kg, __global float *dx, int od, int8 kd,
                              int log_mode)
{
    int row = get_global_id(0), V = R / 16;
    __global const float *yr = y + clg_rowbase(row, nk, kshape, oy, ky);
    __global const float *gr = g + clg_rowbase(row, nk, kshape, og, kg);
    __global float *dr = dx + clg_rowbase(row, nk, kshape, od, kd);
    // Each mode's own loops (log_mode is uniform): a select computed both sides, an exp
    // per element in softmax too.
    float16 d16 = 0;
    float dot = 0;
    if (log_mode) {
        for (int v = 0; v < V; v++) d16 += vload16(v, gr);
        dot = clg_hsum16(d16);
        for (int r = 16 * V; r < R; r++) dot += gr[r];
        for (int v = 0; v < V; v++) vstore16(vload16(v, gr) - exp(vload16(v, yr)) * dot, v, dr);
        for (int r = 16 * V; r < R; r++) dr[r] = gr[r] - exp(yr[r]) * dot;
    } else {
        for (int v = 0; v < V; v++) d16 += vload16(v, gr) * vload16(v, yr);
        dot = clg_hsum16(d16);
        for (int r = 16 * V; r < R; r++) dot += gr[r] * yr[r];
        for (int v = 0; v < V; v++) {
            float16 yv = vload16(v, yr);
            vstore16(yv * (vload16(v, gr) - dot), v, dr);
        }
        for (int r = 16 * V; r < R; r++) dr[r] = yr[r] * (gr[r] - dot);
    }
}
#endif

// ---- variance ------------------------------------------------------------------------------
// Two passes over the row: the mean, then the sum of squared deviations (stabler
// than sum(x^2) - n mean^2, which cancels catastrophically for large means).
inline T clg_row_mean(int R, int nr, int8 rshape, __global const TS *x, int bx, int8 rx, __local T *s)
{
    int l = get_local_id(0), wg = get_local_size(0);
    T acc = 0;
    for (int r = l; r < R; r += wg) acc += CLG_LD(x, bx + clg_roff(r, nr, rshape, rx));
    return clg_group_sum(acc, s) / (T)R;   // R = 0: NaN, as PyTorch
}

// y[row] = sum (x - mean)^2 / div, div = max(0, R - correction) (0/0 = NaN, as PyTorch).
__kernel void var_fwd(int R, int nk, int8 kshape, int nr, int8 rshape,
                      __global const TS *x, int ox, int8 kx, int8 rx,
                      __global TS *y, int oy, int8 ky, int8 ry, const T div, __local T *s)
{
    int row = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    int bx = clg_rowbase(row, nk, kshape, ox, kx);
    T mean = clg_row_mean(R, nr, rshape, x, bx, rx, s);
    T acc = 0;
    for (int r = l; r < R; r += wg) {
        T d = CLG_LD(x, bx + clg_roff(r, nr, rshape, rx)) - mean;
        acc += d * d;
    }
    T ss = clg_group_sum(acc, s);
    if (l == 0) CLG_ST(y, clg_rowbase(row, nk, kshape, oy, ky), ss / div);
}

// dx = g[row] * 2 (x - mean) / div; g is read once per row (its reduced strides are 0).
__kernel void var_bwd(int R, int nk, int8 kshape, int nr, int8 rshape,
                      __global const TS *x, int ox, int8 kx, int8 rx,
                      __global const TS *g, int og, int8 kg, int8 rg,
                      __global TS *dx, int od, int8 kd, int8 rd, const T div, __local T *s)
{
    int row = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    int bx = clg_rowbase(row, nk, kshape, ox, kx), bd = clg_rowbase(row, nk, kshape, od, kd);
    T mean = clg_row_mean(R, nr, rshape, x, bx, rx, s);
    T scale = (T)2 * CLG_LD(g, clg_rowbase(row, nk, kshape, og, kg)) / div;
    for (int r = l; r < R; r += wg)
        CLG_ST(dx, bd + clg_roff(r, nr, rshape, rd), scale * (CLG_LD(x, bx + clg_roff(r, nr, rshape, rx)) - mean));
}

// Per row, one work-item (row_reduce = items).
inline T clg_row_mean_item(int R, int nr, int8 rshape, __global const TS *x, int bx, int8 rx)
{
    T acc = 0;
    for (int r = 0; r < R; r++) acc += CLG_LD(x, bx + clg_roff(r, nr, rshape, rx));
    return acc / (T)R;
}

__kernel void var_fwd_item(int R, int nk, int8 kshape, int nr, int8 rshape,
                           __global const TS *x, int ox, int8 kx, int8 rx,
                           __global TS *y, int oy, int8 ky, int8 ry, const T div)
{
    int row = get_global_id(0);
    int bx = clg_rowbase(row, nk, kshape, ox, kx);
    T mean = clg_row_mean_item(R, nr, rshape, x, bx, rx);
    T ss = 0;
    for (int r = 0; r < R; r++) {
        T d = CLG_LD(x, bx + clg_roff(r, nr, rshape, rx)) - mean;
        ss += d * d;
    }
    CLG_ST(y, clg_rowbase(row, nk, kshape, oy, ky), ss / div);
}

__kernel void var_bwd_item(int R, int nk, int8 kshape, int nr, int8 rshape,
                           __global const TS *x, int ox, int8 kx, int8 rx,
                           __global const TS *g, int og, int8 kg, int8 rg,
                           __global TS *dx, int od, int8 kd, int8 rd, const T div)
{
    int row = get_global_id(0);
    int bx = clg_rowbase(row, nk, kshape, ox, kx), bd = clg_rowbase(row, nk, kshape, od, kd);
    T mean = clg_row_mean_item(R, nr, rshape, x, bx, rx);
    T scale = (T)2 * CLG_LD(g, clg_rowbase(row, nk, kshape, og, kg)) / div;
    for (int r = 0; r < R; r++)
        CLG_ST(dx, bd + clg_roff(r, nr, rshape, rd), scale * (CLG_LD(x, bx + clg_roff(r, nr, rshape, rx)) - mean));
}

// ---- cross-entropy -------------------------------------------------------------------------
// logits [N, C] with strides (sn, sc); labels int32 [N] with stride sl.
// Row i: loss = (max - x[label]) + log(sum exp(x - max)), which keeps full precision
// for logits of any magnitude (no lse - x[label] cancellation). stats[2i] = max and
// stats[2i + 1] = log(sum) are kept for the backward. A label outside [0, C) makes the
// row's loss and stats NaN and is reported in the device's error word (clg_report),
// so that the loss's readout fails with it.
// Row `row`'s loss and stats from its max m and log-sum-exp lsum (both kernels below).
inline void clg_ce_row(int row, int C, __global const T *xr, int sc, int label, T m, T lsum, __global T *loss,
                       __global T *stats, __global int *err, int code)
{
    bool ok = label >= 0 && label < C;
    if (!ok) clg_report(err, code, label, C);
    T nan = (T)NAN;
    loss[row] = ok ? (m - xr[label * sc]) + lsum : nan;
    stats[2 * row] = ok ? m : nan;
    stats[2 * row + 1] = lsum;
}

__kernel void ce_fwd(int C, __global const T *x, int ox, int sn, int sc,
                     __global const int *lab, int ol, int sl,
                     __global T *loss, int olo, __global T *stats, __local T *s, __global int *err, int code)
{
    int row = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    __global const T *xr = x + ox + row * sn;
    T m = -INFINITY;
    for (int c = l; c < C; c += wg) m = clg_nanmax(m, xr[c * sc]);
    m = clg_group_max(m, s);
    T acc = 0;
    for (int c = l; c < C; c += wg) acc += exp(xr[c * sc] - m);
    T lsum = log(clg_group_sum(acc, s));
    if (l == 0) clg_ce_row(row, C, xr, sc, lab[ol + row * sl], m, lsum, loss + olo, stats, err, code);
}

// The same with a work-item per row (row_reduce = items; the host keeps 2 C within
// item_loops).
__kernel void ce_fwd_item(int C, __global const T *x, int ox, int sn, int sc,
                          __global const int *lab, int ol, int sl,
                          __global T *loss, int olo, __global T *stats, __global int *err, int code)
{
    int row = get_global_id(0);
    __global const T *xr = x + ox + row * sn;
    T m = -INFINITY;
    for (int c = 0; c < C; c++) m = clg_nanmax(m, xr[c * sc]);
    T acc = 0;
    for (int c = 0; c < C; c++) acc += exp(xr[c * sc] - m);
    clg_ce_row(row, C, xr, sc, lab[ol + row * sl], m, log(acc), loss + olo, stats, err, code);
}

// The same for float32 rows with unit stride (sc = 1), 16 logits at a time in explicit
// vectors, as softmax_fwd_vec (the kernel above vectorizes across rows, gathering).
#if defined(CLG_F32) && !defined(CLG_F16_STORE) && !defined(CLG_BF16_STORE)
__kernel void ce_fwd_vec(int C, __global const float *x, int ox, int sn, int sc,
                         __global const int *lab, int ol, int sl,
                         __global float *loss, int olo, __global float *stats, __global int *err, int code)
{
    int row = get_global_id(0), V = C / 16;
    __global const float *xr = x + ox + row * sn;
    float m = row_max_vec(xr, C);
    float16 s16 = 0;
    for (int v = 0; v < V; v++) s16 += exp(vload16(v, xr) - m);
    float acc = clg_hsum16(s16);
    for (int c = 16 * V; c < C; c++) acc += exp(xr[c] - m);
    clg_ce_row(row, C, xr, 1, lab[ol + row * sl], m, log(acc), loss + olo, stats, err, code);
}

// ce_bwd by rows, 16 logits at a time (float32, sc = 1): a work-item per row.
__kernel void ce_bwd_vec(int N, int C, __global const float *x, int ox, int sn, int sc,
                         __global const int *lab, int ol, int sl, __global const float *stats,
                         __global const float *g, int og, int sg, const float scale, __global float *dx)
{
    int i = get_global_id(0), V = C / 16, label = lab[ol + i * sl];
    __global const float *xr = x + ox + i * sn;
    __global float *dr = dx + i * C;
    float m = stats[2 * i], lsum = stats[2 * i + 1], k = g[og + i * sg] * scale;
    int16 lane = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int v = 0; v < V; v++) {
        float16 p = exp((vload16(v, xr) - m) - lsum);
        vstore16(k * (p - select((float16)0.0f, (float16)1.0f, lane + 16 * v == label)), v, dr);
    }
    for (int c = 16 * V; c < C; c++) dr[c] = k * (exp((xr[c] - m) - lsum) - (c == label ? 1.0f : 0.0f));
}
#endif

// y = sum(loss[0..n)) / div, by one work-group (div: n for the mean, 1 for the sum).
__kernel void ce_reduce(int n, __global const T *loss, __global T *y, int oy, const T div, __local T *s)
{
    int l = get_local_id(0), wg = get_local_size(0);
    T acc = 0;
    for (int i = l; i < n; i += wg) acc += loss[i];
    T sum = clg_group_sum(acc, s);
    if (l == 0) y[oy] = sum / div;
}

// dx[i, c] = g_i * scale * (softmax(x)[i, c] - (c == label_i)), one work-item per
// element; g_i = g[og + i * sg] (sg = 0 for a mean or sum, whose gradient is one value).
// Launched over exactly N * C items (clg__launch_1d): no bounds check, so POCL vectorizes.
__kernel void ce_bwd(int N, int C, __global const T *x, int ox, int sn, int sc,
                     __global const int *lab, int ol, int sl, __global const T *stats,
                     __global const T *g, int og, int sg, const T scale, __global T *dx)
{
    int gid = get_global_id(0);
    int i = gid / C, c = gid - i * C;
    T p = exp((x[ox + i * sn + c * sc] - stats[2 * i]) - stats[2 * i + 1]);
    T hot = lab[ol + i * sl] == c ? (T)1 : (T)0;
    dx[gid] = g[og + i * sg] * scale * (p - hot);
}

// The same over exactly C x N work-items (clg__launch_rows): (c, i) from the two ids, no
// division per element.
__kernel void ce_bwd_rows(int N, int C, __global const T *x, int ox, int sn, int sc,
                          __global const int *lab, int ol, int sl, __global const T *stats,
                          __global const T *g, int og, int sg, const T scale, __global T *dx)
{
    int c = get_global_id(0), i = get_global_id(1);
    T p = exp((x[ox + i * sn + c * sc] - stats[2 * i]) - stats[2 * i + 1]);
    T hot = lab[ol + i * sl] == c ? (T)1 : (T)0;
    dx[i * C + c] = g[og + i * sg] * scale * (p - hot);
}

// ---- mse's elementwise parts (reductions reuse reduce.cl) -----------------------------
CLG_ELEMENTWISE2(mse_sq, (x - z) * (x - z))
// d/da (a - b)^2 = 2 (a - b), times the incoming gradient w; s0 carries 2/n (the mean),
// 2 (sum, none), or their negatives for b.
CLG_ELEMENTWISE3(mse_grad, s0 * (x - z) * w)
#endif

// ---- argmax and argmin (any dtype) -------------------------------------------------------
// The first index of the largest (smallest) element; NaN beats every number either way,
// as in NumPy and PyTorch. Work-items without elements carry the index R (beaten by any real one).
#ifdef CLG_I32
#define CLG_ISNAN(v) false
#else
#define CLG_ISNAN(v) ((v) != (v))
#endif

// Whether (v, i) beats the best so far (bv, bi): larger (argmax, hi) or smaller (argmin),
// NaN beating everything, ties to the lower index.
inline bool clg_arg_better(T v, int i, T bv, int bi, int R, bool hi)
{
    if (i >= R) return false;
    if (bi >= R) return true;
    bool vn = CLG_ISNAN(v), bn = CLG_ISNAN(bv);
    if (vn != bn) return vn;
    if (vn || v == bv) return i < bi;
    return hi ? v > bv : v < bv;
}

inline void clg_arg_row(bool hi, int R, int nk, int8 kshape, int nr, int8 rshape, __global const T *x, int ox,
                        int8 kx, int8 rx, __global int *y, int oy, int8 ky, __local T *sv, __local int *si)
{
    int row = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    int bx = clg_rowbase(row, nk, kshape, ox, kx);
    T best = 0;
    int bi = R;
    for (int r = l; r < R; r += wg) {
        T v = x[bx + clg_roff(r, nr, rshape, rx)];
        if (clg_arg_better(v, r, best, bi, R, hi)) best = v, bi = r;
    }
    sv[l] = best;
    si[l] = bi;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = wg / 2; h > 0; h >>= 1) {
        if (l < h && clg_arg_better(sv[l + h], si[l + h], sv[l], si[l], R, hi)) sv[l] = sv[l + h], si[l] = si[l + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) y[clg_rowbase(row, nk, kshape, oy, ky)] = si[0];
}

__kernel void argmax_fwd(int R, int nk, int8 kshape, int nr, int8 rshape,
                         __global const T *x, int ox, int8 kx, int8 rx,
                         __global int *y, int oy, int8 ky, int8 ry, __local T *sv, __local int *si)
{
    (void)ry;
    clg_arg_row(true, R, nk, kshape, nr, rshape, x, ox, kx, rx, y, oy, ky, sv, si);
}

__kernel void argmin_fwd(int R, int nk, int8 kshape, int nr, int8 rshape,
                         __global const T *x, int ox, int8 kx, int8 rx,
                         __global int *y, int oy, int8 ky, int8 ry, __local T *sv, __local int *si)
{
    (void)ry;
    clg_arg_row(false, R, nk, kshape, nr, rshape, x, ox, kx, rx, y, oy, ky, sv, si);
}
