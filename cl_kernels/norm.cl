// norm.cl: batch_norm, layer_norm and dropout (src/tensor/norm.c).
//
// The normalisations give one work-group to each set of elements that share
// statistics (a chunk of a channel for batch_norm, a row for layer_norm): work-item l
// takes elements l, l + WG, ... and the group combines its partial sums in local memory
// (WG a power of two). Mean first, then the sum of squared deviations from it (two
// passes over the data: no cancellation of E[x^2] - E[x]^2). The order of operations
// depends on WG alone, so the same inputs give the same bits.
//
// Statistics are kept as (mean, invstd) pairs for the backward pass; optional operands
// (weight, bias, running statistics, gradients not wanted) come with a flag, and the
// host passes some valid buffer in their place.
//
// x, y and their gradients are stored as TS (common.cl: float16 or bfloat16 read and
// written through CLG_LD / CLG_ST, computed in float32); statistics, weights, biases,
// running averages and their gradients are T (float32 for a 16-bit x).

// An optional per-channel (or per-feature) vector: element c, or `dflt` when absent.
inline T opt_at(int has, __global const T *v, int off, int stride, int c, T dflt)
{
    return has ? v[off + c * stride] : dflt;
}

// ---- batch_norm -----------------------------------------------------------------------------
// x is contiguous [N, C, S] (S: the product of the spatial axes, 1 for [N, C]); the
// M = N * S elements of channel c are x[(n * C + c) * S + s], m = n * S + s.
inline int bn_index(int m, int C, int S, int c)
{
    int n = m / S;
    return (n * C + c) * S + (m - n * S);
}

// Evaluation: (mean, invstd) from the running averages, one work-item per channel.
// Kept as stats so the backward sees the values the forward used, whatever updates
// the running averages get in between.
__kernel void bn_eval_stats(int C, __global const T *rm, int orm, int srm, __global const T *rv, int orv, int srv,
                            __global T *stats, const T eps)
{
    int c = get_global_id(0);
    if (c >= C) return;
    stats[c] = rm[orm + c * srm];
    stats[C + c] = (T)1 / sqrt(rv[orv + c * srv] + eps);
}

// ---- batch_norm in chunks --------------------------------------------------------------------
// The same statistics and gradients with a channel's M values split into P chunks of L
// (the last shorter), one work-group per (channel, chunk): many groups for a device
// with many cores, and no work-item walks more than L / WG values per pass, however
// long the channel (item_loops). Three launches each way: chunk statistics, a
// combination per channel, then y (or dx) elementwise.

// Group (c, p): the chunk's mean and sum of squared deviations from it, two passes over
// it, into part[(c P + p) 2 + {0, 1}].
__kernel void bn_part_stats(int N, int C, int S, int L, int P, __global const TS *x, __global T *part, __local T *s)
{
    int c = get_group_id(0), p = get_group_id(1), l = get_local_id(0), wg = get_local_size(0), M = N * S;
    int m0 = p * L, m1 = min(M, m0 + L);
    T acc = 0;
    for (int m = m0 + l; m < m1; m += wg) acc += CLG_LD(x, bn_index(m, C, S, c));
    T mean = clg_group_sum(acc, s) / (T)(m1 - m0);
    acc = 0;
    for (int m = m0 + l; m < m1; m += wg) {
        T d = CLG_LD(x, bn_index(m, C, S, c)) - mean;
        acc += d * d;
    }
    T m2 = clg_group_sum(acc, s);
    if (l == 0) {
        part[(c * P + p) * 2] = mean;
        part[(c * P + p) * 2 + 1] = m2;
    }
}

// The same partial results with each chunk one row (n, c) of S values, walked by one
// work-item in 16-lane vectors (float32 arithmetic, x float32 or 16-bit, which then
// gives the bits float32 would: norm.c bn_by_rows, where work-items are SIMD-wide):
// part[(c N + n) 2 + {0, 1}], so P = N chunks of L = S. The chunk kernels above index
// each value through a division by S, which POCL runs lane by lane: 4x below memory
// speed on the ResNet's [128, 16, 28, 28].
#if defined(CLG_F16_STORE)
#define BN_LD16(p, v) (float16)(clg_h2f8(convert_uint8(vload8(2 * (v), p))), clg_h2f8(convert_uint8(vload8(2 * (v) + 1, p))))
#elif defined(CLG_BF16_STORE)
#define BN_LD16(p, v) as_float16(convert_uint16(vload16(v, p)) << 16)
#else
#define BN_LD16(p, v) vload16(v, p)
#endif
#if defined(CLG_F32) || defined(CLG_F16_STORE) || defined(CLG_BF16_STORE)
// A row's mean (into *mean) and its sum of squared deviations from it (returned): two
// passes in 16-lane vectors, the tail value by value (batch_norm's rows, layer_norm's).
inline float clg_row_m2(__global const TS *xr, int S, float *mean)
{
    int V = S / 16;
    float16 a16 = 0;
    for (int v = 0; v < V; v++) a16 += BN_LD16(xr, v);
    float sum = clg_hsum16(a16);
    for (int s = 16 * V; s < S; s++) sum += CLG_LD(xr, s);
    float m = sum / (float)S;
    a16 = 0;
    for (int v = 0; v < V; v++) {
        float16 d = BN_LD16(xr, v) - m;
        a16 += d * d;
    }
    float m2 = clg_hsum16(a16);
    for (int s = 16 * V; s < S; s++) m2 += (CLG_LD(xr, s) - m) * (CLG_LD(xr, s) - m);
    *mean = m;
    return m2;
}

__kernel void bn_row_stats_vec(int N, int C, int S, __global const TS *x, __global float *part)
{
    int r = get_global_id(0), n = r / C, c = r - n * C;
    float mean, m2 = clg_row_m2(x + (size_t)r * S, S, &mean);
    part[(c * N + n) * 2] = mean;
    part[(c * N + n) * 2 + 1] = m2;
}

__kernel void bn_row_grad_vec(int N, int C, int S, __global const TS *x, __global const TS *g,
                              __global const float *stats, __global float *part)
{
    int r = get_global_id(0), n = r / C, c = r - n * C, V = S / 16;
    size_t base = (size_t)r * S;
    __global const TS *xr = x + base, *gr = g + base;
    float mean = stats[c], invstd = stats[C + c];
    float16 a16 = 0, b16 = 0;
    for (int v = 0; v < V; v++) {
        float16 gv = BN_LD16(gr, v);
        a16 += gv;
        b16 += gv * (BN_LD16(xr, v) - mean);
    }
    float sg = clg_hsum16(a16), sgx = clg_hsum16(b16);
    for (int s = 16 * V; s < S; s++) {
        sg += CLG_LD(gr, s);
        sgx += CLG_LD(gr, s) * (CLG_LD(xr, s) - mean);
    }
    part[(c * N + n) * 2] = sg;
    part[(c * N + n) * 2 + 1] = sgx * invstd;
}

// The same after a ReLU (batch_norm_add_relu): g counts where y > 0, and that masked g
// is written to gm, which the dx pass then reads in g's place (and which is z's
// gradient). The masked 16 values stored as they were loaded: float32 selected, 16-bit
// bits and-ed with the mask (exact either way).
#if defined(CLG_F32)
#define BN_ST_MASKED(dst, v, src, keep) vstore16(select((float16)0, vload16(v, src), keep), v, dst)
#else
#define BN_ST_MASKED(dst, v, src, keep) vstore16(vload16(v, src) & as_ushort16(convert_short16(keep)), v, dst)
#endif
__kernel void bn_row_grad_relu_vec(int N, int C, int S, __global const TS *x, __global const TS *g,
                                   __global const float *stats, __global const TS *y, __global TS *gm,
                                   __global float *part)
{
    int r = get_global_id(0), n = r / C, c = r - n * C, V = S / 16;
    size_t base = (size_t)r * S;
    __global const TS *xr = x + base, *gr = g + base, *yr = y + base;
    __global TS *gmr = gm + base;
    float mean = stats[c], invstd = stats[C + c];
    float16 a16 = 0, b16 = 0;
    for (int v = 0; v < V; v++) {
        int16 keep = isgreater(BN_LD16(yr, v), (float16)0);
        float16 gv = select((float16)0, BN_LD16(gr, v), keep);
        BN_ST_MASKED(gmr, v, gr, keep);
        a16 += gv;
        b16 += gv * (BN_LD16(xr, v) - mean);
    }
    float sg = clg_hsum16(a16), sgx = clg_hsum16(b16);
    for (int s = 16 * V; s < S; s++) {
        float gs = CLG_LD(yr, s) > 0 ? CLG_LD(gr, s) : 0;
        CLG_ST(gmr, s, gs);
        sg += gs;
        sgx += gs * (CLG_LD(xr, s) - mean);
    }
    part[(c * N + n) * 2] = sg;
    part[(c * N + n) * 2 + 1] = sgx * invstd;
}
#endif

// One work-item per channel: the chunks combined (Chan et al.: the squared deviations
// of the chunks' means from the whole mean, weighted by their counts, added to theirs;
// no E[x^2] - E[x]^2 cancellation), then stats and the running averages as bn_train_fwd.
__kernel void bn_combine(int N, int C, int S, int L, int P, __global const T *part, __global T *stats,
                         int has_run, __global T *rm, int orm, int srm, __global T *rv, int orv, int srv,
                         const T momentum, const T eps)
{
    int c = get_global_id(0), M = N * S;
    if (c >= C) return;
    __global const T *q = part + c * P * 2;
    T sum = 0;
    for (int p = 0; p < P; p++) sum += (T)min(L, M - p * L) * q[2 * p];
    T mean = sum / (T)M, m2 = 0;
    for (int p = 0; p < P; p++) {
        T d = q[2 * p] - mean;
        m2 += q[2 * p + 1] + (T)min(L, M - p * L) * d * d;
    }
    T var = m2 / (T)M;
    stats[c] = mean;
    stats[C + c] = (T)1 / sqrt(var + eps);
    if (has_run) {
        T unbiased = var * (T)M / (T)(M - 1);
        rm[orm + c * srm] = ((T)1 - momentum) * rm[orm + c * srm] + momentum * mean;
        rv[orv + c * srv] = ((T)1 - momentum) * rv[orv + c * srv] + momentum * unbiased;
    }
}

// y = (x - mean) invstd w + b over rows of S (x contiguous [N, C, S], row r = n C + c):
// exactly S x (N C) work-items (clg__launch_rows), no division per element. With
// batch_norm_add_relu's operands: plus z (has_z, contiguous as x; else the host passes
// x, read and not added: a load under a condition kept POCL from vectorising the
// kernel, 2x slower), then ReLU (relu).
__kernel void bn_apply_rows(int C, int S, __global const TS *x, __global TS *y, __global const T *stats,
                            int has_w, __global const T *w, int ow, int sw, int has_b, __global const T *b, int ob,
                            int sb, int has_z, __global const TS *z, int relu)
{
    int s = get_global_id(0), r = get_global_id(1), c = r % C, i = r * S + s;
    T scale = stats[C + c] * opt_at(has_w, w, ow, sw, c, (T)1);
    T v = (CLG_LD(x, i) - stats[c]) * scale + opt_at(has_b, b, ob, sb, c, (T)0);
    T zi = CLG_LD(z, i);
    v += has_z ? zi : (T)0;
    CLG_ST(y, i, relu && v < (T)0 ? (T)0 : v);   // relu(NaN) = NaN, as clg_relu
}

// Backward, group (c, p): the chunk's sums of g and of g xhat into part; where has_y,
// after a ReLU: g masked by y > 0 and written to gm, as bn_row_grad_relu_vec.
__kernel void bn_part_grad(int N, int C, int S, int L, int P, __global const TS *x, __global const TS *g,
                           __global const T *stats, int has_y, __global const TS *y, __global TS *gm,
                           __global T *part, __local T *s)
{
    int c = get_group_id(0), p = get_group_id(1), l = get_local_id(0), wg = get_local_size(0), M = N * S;
    int m0 = p * L, m1 = min(M, m0 + L);
    T mean = stats[c], invstd = stats[C + c], sg = 0, sgx = 0;
    for (int m = m0 + l; m < m1; m += wg) {
        int i = bn_index(m, C, S, c);
        T gi = CLG_LD(g, i);
        if (has_y) {
            gi = CLG_LD(y, i) > 0 ? gi : (T)0;
            CLG_ST(gm, i, gi);
        }
        sg += gi;
        sgx += gi * (CLG_LD(x, i) - mean) * invstd;
    }
    sg = clg_group_sum(sg, s);
    sgx = clg_group_sum(sgx, s);
    if (l == 0) {
        part[(c * P + p) * 2] = sg;
        part[(c * P + p) * 2 + 1] = sgx;
    }
}

// One work-item per channel: db = sum g, dw = sum g xhat over the chunks (in order), and
// the coefficients of dx = k (g - mg - xhat mgx) into coef[3 C] (k, mg, mgx), as bn_bwd.
__kernel void bn_grad_combine(int N, int C, int S, int P, __global const T *part, __global const T *stats,
                              int has_w, __global const T *w, int ow, int sw, int training, int want_dw,
                              __global T *dw, int want_db, __global T *db, __global T *coef)
{
    int c = get_global_id(0), M = N * S;
    if (c >= C) return;
    T sg = 0, sgx = 0;
    for (int p = 0; p < P; p++) {
        sg += part[(c * P + p) * 2];
        sgx += part[(c * P + p) * 2 + 1];
    }
    if (want_dw) dw[c] = sgx;
    if (want_db) db[c] = sg;
    coef[c] = stats[C + c] * opt_at(has_w, w, ow, sw, c, (T)1);
    coef[C + c] = training ? sg / (T)M : (T)0;
    coef[2 * C + c] = training ? sgx / (T)M : (T)0;
}

// dx over rows of S, as bn_apply_rows (g: the masked gm after a ReLU).
__kernel void bn_dx_rows(int C, int S, __global const TS *x, __global const TS *g, __global const T *stats,
                         __global const T *coef, __global TS *dx)
{
    int s = get_global_id(0), r = get_global_id(1), c = r % C, i = r * S + s;
    T xhat = (CLG_LD(x, i) - stats[c]) * stats[C + c];
    CLG_ST(dx, i, coef[c] * (CLG_LD(g, i) - coef[C + c] - xhat * coef[2 * C + c]));
}

// ---- layer_norm -------------------------------------------------------------------------------
// x is contiguous [rows, D]; weight and bias contiguous [D] from their elements ow and ob
// (a weight in an optimizer's arena: clg_optimizer_flatten). stats [rows, 2].

__kernel void ln_fwd(int D, __global const TS *x, __global TS *y, __global T *stats, int has_w,
                     __global const T *w, int ow, int has_b, __global const T *b, int ob, const T eps, __local T *s)
{
    int row = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    __global const TS *xr = x + (size_t)row * D;
    __global TS *yr = y + (size_t)row * D;
    T acc = 0;
    for (int d = l; d < D; d += wg) acc += CLG_LD(xr, d);
    T mean = clg_group_sum(acc, s) / (T)D;
    acc = 0;
    for (int d = l; d < D; d += wg) acc += (CLG_LD(xr, d) - mean) * (CLG_LD(xr, d) - mean);
    T invstd = (T)1 / sqrt(clg_group_sum(acc, s) / (T)D + eps);
    if (l == 0) {
        stats[2 * row] = mean;
        stats[2 * row + 1] = invstd;
    }
    for (int d = l; d < D; d += wg)
        CLG_ST(yr, d, (CLG_LD(xr, d) - mean) * invstd * opt_at(has_w, w, ow, 1, d, (T)1) + opt_at(has_b, b, ob, 1, d, (T)0));
}

// dx = invstd (gw - mean(gw) - xhat mean(gw xhat)), gw = g w: one group per row.
__kernel void ln_bwd_x(int D, __global const TS *x, __global const TS *g, __global const T *stats,
                       int has_w, __global const T *w, int ow, __global TS *dx, __local T *s)
{
    int row = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    size_t base = (size_t)row * D;
    T mean = stats[2 * row], invstd = stats[2 * row + 1];
    T a = 0, bsum = 0;
    for (int d = l; d < D; d += wg) {
        T gw = CLG_LD(g, base + d) * opt_at(has_w, w, ow, 1, d, (T)1);
        a += gw;
        bsum += gw * (CLG_LD(x, base + d) - mean) * invstd;
    }
    T mgw = clg_group_sum(a, s) / (T)D, mgwx = clg_group_sum(bsum, s) / (T)D;
    for (int d = l; d < D; d += wg) {
        T gw = CLG_LD(g, base + d) * opt_at(has_w, w, ow, 1, d, (T)1);
        CLG_ST(dx, base + d, invstd * (gw - mgw - (CLG_LD(x, base + d) - mean) * invstd * mgwx));
    }
}

// The two kernels above with a work-item per row, 16 values at a time in explicit
// vectors (float32 rows; row_reduce = items): where work-items are SIMD-wide (POCL), a
// group per row costs a barrier per step and the kernels above vectorize across the
// group's items. The tail of a row (D % 16) runs value by value.
#if defined(CLG_F32)
inline float16 ln_vec_or(int has, __global const float *v, int i, float dflt)
{
    return has ? vload16(i, v) : (float16)dflt;
}
inline float ln_or(int has, __global const float *v, int d, float dflt) { return has ? v[d] : dflt; }

__kernel void ln_fwd_vec(int D, __global const float *x, __global float *y, __global float *stats, int has_w,
                         __global const float *w0, int ow, int has_b, __global const float *b0, int ob, const float eps)
{
    __global const float *w = w0 + ow, *b = b0 + ob;   /* read only where has_w (has_b) */
    int row = get_global_id(0), V = D / 16;
    __global const float *xr = x + (size_t)row * D;
    __global float *yr = y + (size_t)row * D;
    float mean, ss = clg_row_m2(xr, D, &mean);
    float invstd = 1.0f / sqrt(ss / (float)D + eps);
    stats[2 * row] = mean;
    stats[2 * row + 1] = invstd;
    for (int v = 0; v < V; v++)
        vstore16((vload16(v, xr) - mean) * invstd * ln_vec_or(has_w, w, v, 1.0f) + ln_vec_or(has_b, b, v, 0.0f), v, yr);
    for (int d = 16 * V; d < D; d++) yr[d] = (xr[d] - mean) * invstd * ln_or(has_w, w, d, 1.0f) + ln_or(has_b, b, d, 0.0f);
}

__kernel void ln_bwd_x_vec(int D, __global const float *x, __global const float *g, __global const float *stats,
                           int has_w, __global const float *w0, int ow, __global float *dx)
{
    __global const float *w = w0 + ow;   /* read only where has_w */
    int row = get_global_id(0), V = D / 16;
    size_t base = (size_t)row * D;
    __global const float *xr = x + base, *gr = g + base;
    __global float *dr = dx + base;
    float mean = stats[2 * row], invstd = stats[2 * row + 1];
    float16 a16 = 0, b16 = 0;
    for (int v = 0; v < V; v++) {
        float16 gw = vload16(v, gr) * ln_vec_or(has_w, w, v, 1.0f);
        a16 += gw;
        b16 += gw * (vload16(v, xr) - mean) * invstd;
    }
    float a = clg_hsum16(a16), bsum = clg_hsum16(b16);
    for (int d = 16 * V; d < D; d++) {
        float gw = gr[d] * ln_or(has_w, w, d, 1.0f);
        a += gw;
        bsum += gw * (xr[d] - mean) * invstd;
    }
    float mgw = a / (float)D, mgwx = bsum / (float)D;
    for (int v = 0; v < V; v++) {
        float16 gw = vload16(v, gr) * ln_vec_or(has_w, w, v, 1.0f);
        vstore16(invstd * (gw - mgw - (vload16(v, xr) - mean) * invstd * mgwx), v, dr);
    }
    for (int d = 16 * V; d < D; d++) {
        float gw = gr[d] * ln_or(has_w, w, d, 1.0f);
        dr[d] = invstd * (gw - mgw - (xr[d] - mean) * invstd * mgwx);
    }
}
#endif

// dw[d] = sum over rows of g xhat, db[d] = sum of g, in two launches so that no
// work-item walks every row: work-item (d, c) sums rows [c L, c L + L) in order into
// pw[c, d] and pb[c, d] (neighbouring work-items read neighbouring addresses), then
// ln_bwd_wb_sum adds the chunks' sums of each feature in order. Exact launches.
__kernel void ln_bwd_wb(int rows, int D, int L, __global const TS *x, __global const TS *g, __global const T *stats,
                        __global T *pw, __global T *pb)
{
    int d = get_global_id(0), c = get_global_id(1);
    T sw = 0, sb = 0;
    int r1 = min(rows, c * L + L);
    for (int r = c * L; r < r1; r++) {
        size_t i = (size_t)r * D + d;
        T gi = CLG_LD(g, i);
        sb += gi;
        sw += gi * (CLG_LD(x, i) - stats[2 * r]) * stats[2 * r + 1];
    }
    pw[(size_t)c * D + d] = sw;
    pb[(size_t)c * D + d] = sb;
}

#if defined(CLG_F32)
// The same in float32 where items are SIMD threads (row_reduce = items) and D is a
// multiple of 16: work-item (dv, c), gid = c * D / 16 + dv, takes features
// [16 dv, 16 dv + 16) of its chunk's rows, one float16 vector per row, and writes 16
// partial sums (ln_bwd_wb loaded them element by element on POCL: 450 us for the GPT's
// [2048, 128], 4.7 GB/s).
__kernel void ln_bwd_wb_vec(int rows, int D, int L, __global const float *x, __global const float *g,
                            __global const float *stats, __global float *pw, __global float *pb)
{
    int DV = D / 16, gid = get_global_id(0), dv = gid % DV, c = gid / DV;
    float16 sw = 0.0f, sb = 0.0f;
    int r1 = min(rows, c * L + L);
    for (int r = c * L; r < r1; r++) {
        size_t i = (size_t)r * D + 16 * dv;
        float16 gi = vload16(0, g + i);
        sb += gi;
        sw += gi * (vload16(0, x + i) - stats[2 * r]) * stats[2 * r + 1];
    }
    vstore16(sw, 0, pw + (size_t)c * D + 16 * dv);
    vstore16(sb, 0, pb + (size_t)c * D + 16 * dv);
}
#endif

__kernel void ln_bwd_wb_sum(int chunks, int D, __global const T *pw, __global const T *pb, int want_dw,
                            __global T *dw, int want_db, __global T *db)
{
    int d = get_global_id(0);
    T sw = 0, sb = 0;
    for (int c = 0; c < chunks; c++) {
        sw += pw[(size_t)c * D + d];
        sb += pb[(size_t)c * D + d];
    }
    if (want_dw) dw[d] = sw;
    if (want_db) db[d] = sb;
}

// ---- dropout ----------------------------------------------------------------------------------
// Philox-4x32-10 (common.cl) as clg_rand: element i of the op uses word i % 4 of block
// (counter + i / 4), the same word clg_rand's float32 draw would turn into its i-th
// uniform, whatever T is. Kept where (word >> 8) >= thr, thr = ceil(p 2^24) (so
// P(keep) = 1 - p to 2^-24), and scaled; dropped elements are 0. The backward runs
// the same kernel on the gradient at the same generator position.
// Work-item j takes the four elements 4j .. 4j + 3 of one block (Philox is most of
// the cost). Element i of the iteration is element i of the new, contiguous output in
// row-major order, so the mask does not depend on the input's layout.

// The four words of block j, as 24-bit integers.
inline void dropout_words(int j, uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint *u)
{
    uint4 r = clg_philox_block(j, seed_lo, seed_hi, ctr_lo, ctr_hi);
    u[0] = r.x >> 8;
    u[1] = r.y >> 8;
    u[2] = r.z >> 8;
    u[3] = r.w >> 8;
}

// Word m (0..3) of a block.
inline uint pick4(uint4 w, int m) { return m == 0 ? w.x : m == 1 ? w.y : m == 2 ? w.z : w.w; }

// Launched over exactly ceil(n / 4) items, without a bounds check or a loop (with
// Philox's products written out, common.cl: 1M floats 12-17 ms per launch before, 5.1
// after; POCL still runs Philox one work-item at a time): in the last block, the
// positions past n - 1 are clamped to it and write its value again.
__kernel void dropout_flat(int n, __global TS *y, int oy, __global const TS *a, int oa, uint seed_lo, uint seed_hi,
                           uint ctr_lo, uint ctr_hi, uint thr, const T scale)
{
    int j = get_global_id(0), i0 = 4 * j, last = n - 1;
    uint4 w = clg_philox_block(j, seed_lo, seed_hi, ctr_lo, ctr_hi) >> 8;
    int i1 = min(i0 + 1, last), i2 = min(i0 + 2, last), i3 = min(i0 + 3, last);
    T v0 = CLG_LD(a, oa + i0), v1 = CLG_LD(a, oa + i1), v2 = CLG_LD(a, oa + i2), v3 = CLG_LD(a, oa + i3);
    CLG_ST(y, oy + i0, w.x >= thr ? v0 * scale : (T)0);
    CLG_ST(y, oy + i1, pick4(w, i1 - i0) >= thr ? v1 * scale : (T)0);
    CLG_ST(y, oy + i2, pick4(w, i2 - i0) >= thr ? v2 * scale : (T)0);
    CLG_ST(y, oy + i3, pick4(w, i3 - i0) >= thr ? v3 * scale : (T)0);
}

__kernel void dropout_strided(int n, int nd, int8 shape, __global TS *y, int oy, int8 sy, __global const TS *a, int oa,
                              int8 sa, uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr, const T scale)
{
    int j = get_global_id(0);
    if ((long)j * 4 >= n) return;
    uint u[4];
    dropout_words(j, seed_lo, seed_hi, ctr_lo, ctr_hi, u);
    for (int k = 0; k < 4 && j * 4 + k < n; k++) {
        clg_coords c = clg_unravel(j * 4 + k, nd, shape);
        T v = CLG_LD(a, oa + clg_offset(c, nd, sa));
        CLG_ST(y, oy + clg_offset(c, nd, sy), u[k] >= thr ? v * scale : (T)0);
    }
}
