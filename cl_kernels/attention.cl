// attention.cl: fused scaled dot-product attention (src/tensor/attention.c),
//   O = dropout(softmax(scale Q K^T + mask)) V,
// forward and backward, without ever storing the [L, S] scores (FlashAttention's online
// softmax, Dao et al. 2022; the backward recomputes the scores from the saved log-sum-exp).
//
// Operands: Q [B, L, E], K [B, S, E], V [B, S, Ev], an additive mask [B, L, S] of T,
// where B is the batch shape (nb axes, bshape). Each operand is read where it lies: its
// offset, the strides of its batch axes (0 where broadcast), of its rows and of its
// columns, so that heads split by a permute are read with no copy. Results are
// contiguous: O [B, L, Ev] in TS, lse [B, L] in T; the gradients (T, contiguous).
//
// One work-group of W work-items (a power of two) per (row, batch): global (W, rows, B).
// Work-item t takes key (or query) t of each tile of W, and output columns
// d0 + t + u W (u < nu) of the range [d0, d0 + nd) that a launch covers. A launch covers
// the keys [j0, j1) (queries [i0, i1) in the key-side backward); the host splits a long
// axis over launches, so that no work-item loops more than the device allows
// (params.item_loops), and carries the running state between them in global scratch.
// Sums run in a fixed order set by W and the host's split: the same inputs, the same bits.
//
// Dropout (p > 0) drops attention weight (b, i, j) where the Philox word of element
// (b L + i) S + j of a contiguous [B, L, S] tensor is below thr, as clg_dropout would on
// that tensor at the same generator position (norm.cl): the tests compare the two.

#define ATT_ND 4   // most output columns per work-item and launch: nd <= ATT_ND W

inline int att_boff(int b, int nb, int8 bshape, int off, int8 bstr)
{
    return off + clg_offset(clg_unravel(b, nb, bshape), nb, bstr);
}

// Whether dropout keeps weight (b, i, j): element e = (b L + i) S + j uses word e % 4 of
// Philox block (ctr + e / 4), a 24-bit uniform compared with thr.
inline bool att_keep(long e, uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr)
{
    ulong c = (((ulong)ctr_hi << 32) | ctr_lo) + (ulong)(e >> 2);
    uint4 r = clg_philox4x32_10((uint4)((uint)c, (uint)(c >> 32), 0u, 0u), (uint2)(seed_lo, seed_hi));
    uint words[4] = {r.x, r.y, r.z, r.w};   // (a chain of ?: over r's words kept the wrong word under Oclgrind)
    return (words[e & 3] >> 8) >= thr;
}

// The score of query row qi (at qb) and key row kj (at kb): scale q.k + mask.
inline T att_score(__global const TS *q, int qb, int cq, __global const TS *k, int kb, int ck, int E, T scale,
                   __global const T *mask, int mb, int has_mask)
{
    T dot = 0;
    for (int e = 0; e < E; e++) dot += CLG_LD(q, qb + e * cq) * CLG_LD(k, kb + e * ck);
    return dot * scale + (has_mask ? mask[mb] : (T)0);
}

inline T att_dot(__global const TS *a, int ab, int ca, __global const TS *b, int bb, int cb, int n)
{
    T dot = 0;
    for (int e = 0; e < n; e++) dot += CLG_LD(a, ab + e * ca) * CLG_LD(b, bb + e * cb);
    return dot;
}

// ---- forward ------------------------------------------------------------------------------
// Per query row: the running max m, the running sum l of exp(s - m) and the running
// weighted sum of V rows acc (each rescaled by exp(m_old - m_new) when the max grows).
// At the last launch O = acc / l and lse = m + log l; a row whose every key is masked
// out has l = 0 and gives NaN, as softmax over a row of -inf does.
__kernel void attn_fwd(int L, int S, int E, int Ev, int nb, int8 bshape,
                       __global const TS *q, int oq, int8 bq, int rq, int cq,
                       __global const TS *k, int ok, int8 bk, int rk, int ck,
                       __global const TS *v, int ov, int8 bv, int rv, int cv,
                       __global const T *mask, int om, int8 bm, int rm, int cm, int has_mask,
                       __global TS *o, __global T *lse, __global T *acc_s, __global T *ml_s,
                       int j0, int j1, int d0, int nd, int first, int last, int causal, const T scale,
                       uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr, const T dscale, int drop,
                       __local T *sp, __local T *red)
{
    int t = get_local_id(0), W = get_local_size(0), i = get_group_id(1), b = get_group_id(2);
    int row = b * L + i, nu = (nd + W - 1) / W;
    int qb = att_boff(b, nb, bshape, oq, bq) + i * rq, kb = att_boff(b, nb, bshape, ok, bk);
    int vb = att_boff(b, nb, bshape, ov, bv), mb = has_mask ? att_boff(b, nb, bshape, om, bm) + i * rm : 0;
    T acc[ATT_ND], m = -INFINITY, l = 0;
    for (int u = 0; u < nu; u++) {
        int d = d0 + t + u * W;
        acc[u] = !first && d < d0 + nd ? acc_s[(long)row * Ev + d] : (T)0;
    }
    if (!first) {
        m = ml_s[2 * row];
        l = ml_s[2 * row + 1];
    }
    barrier(CLK_GLOBAL_MEM_FENCE);   // all have read the state before work-item 0 rewrites it
    int jend = causal ? min(j1, i + 1) : j1;
    for (int jt = j0; jt < jend; jt += W) {
        int j = jt + t;
        T s = -INFINITY;
        if (j < jend) s = att_score(q, qb, cq, k, kb + j * rk, ck, E, scale, mask, mb + j * cm, has_mask);
        T mnew = clg_nanmax(m, clg_group_max(s, red));
        T p = s == -INFINITY ? (T)0 : exp(s - mnew);
        T alpha = m == -INFINITY ? (T)0 : exp(m - mnew);
        l = l * alpha + clg_group_sum(p, red);
        if (drop && j < jend) p = att_keep(((long)row) * S + j, seed_lo, seed_hi, ctr_lo, ctr_hi, thr) ? p * dscale : 0;
        sp[t] = p;
        barrier(CLK_LOCAL_MEM_FENCE);
        int n = min(W, jend - jt);
        for (int u = 0; u < nu; u++) {
            int d = d0 + t + u * W;
            if (d >= d0 + nd) break;
            T a = acc[u] * alpha;
            for (int tt = 0; tt < n; tt++) a += sp[tt] * CLG_LD(v, vb + (jt + tt) * rv + d * cv);
            acc[u] = a;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        m = mnew;
    }
    for (int u = 0; u < nu; u++) {
        int d = d0 + t + u * W;
        if (d >= d0 + nd) break;
        if (last) CLG_ST(o, (long)row * Ev + d, S ? acc[u] / l : (T)0);   // no keys: zeros, as P V over S = 0
        else acc_s[(long)row * Ev + d] = acc[u];
    }
    if (t == 0 && !last) {
        ml_s[2 * row] = m;
        ml_s[2 * row + 1] = l;
    }
    if (t == 0 && last && d0 == 0) lse[row] = m + log(l);
}

// ---- backward -------------------------------------------------------------------------------
// With P = exp(S - lse) recomputed, Z the dropout mask scaled (1 / (1 - p) or 0),
// dP = Z (dO V^T), Dr_i = sum_d dO_i O_i (= sum_j P_ij dP_ij), dS = P (dP - Dr):
//   dQ = scale dS K,  dK = scale dS^T Q,  dV = (P Z)^T dO.
// Dr first, one group per query row (a sum over Ev, at most item_loops / 2 terms per item).
__kernel void attn_bwd_pre(int L, int Ev, int nb, int8 bshape, __global const TS *o,
                           __global const TS *g, int og, int8 bg, int rg, int cg, __global T *dr, __local T *red)
{
    int t = get_local_id(0), W = get_local_size(0), i = get_group_id(1), b = get_group_id(2);
    int row = b * L + i, gb = att_boff(b, nb, bshape, og, bg) + i * rg;
    T acc = 0;
    for (int d = t; d < Ev; d += W) acc += CLG_LD(o, (long)row * Ev + d) * CLG_LD(g, gb + d * cg);
    acc = clg_group_sum(acc, red);
    if (t == 0) dr[row] = acc;
}

// dQ, one group per query row, keys [j0, j1) of a launch, columns [d0, d0 + nd) of E;
// added to what earlier launches left when !first. dq is contiguous [B, L, E].
__kernel void attn_bwd_dq(int L, int S, int E, int Ev, int nb, int8 bshape,
                          __global const TS *q, int oq, int8 bq, int rq, int cq,
                          __global const TS *k, int ok, int8 bk, int rk, int ck,
                          __global const TS *v, int ov, int8 bv, int rv, int cv,
                          __global const T *mask, int om, int8 bm, int rm, int cm, int has_mask,
                          __global const TS *g, int og, int8 bg, int rg, int cg,
                          __global const T *lse, __global const T *dr, __global T *dq,
                          int j0, int j1, int d0, int nd, int first, int causal, const T scale,
                          uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr, const T dscale, int drop,
                          __local T *sp)
{
    int t = get_local_id(0), W = get_local_size(0), i = get_group_id(1), b = get_group_id(2);
    int row = b * L + i, nu = (nd + W - 1) / W;
    int qb = att_boff(b, nb, bshape, oq, bq) + i * rq, kb = att_boff(b, nb, bshape, ok, bk);
    int vb = att_boff(b, nb, bshape, ov, bv), gb = att_boff(b, nb, bshape, og, bg) + i * rg;
    int mb = has_mask ? att_boff(b, nb, bshape, om, bm) + i * rm : 0;
    T acc[ATT_ND], li = lse[row], di = dr[row];
    for (int u = 0; u < nu; u++) acc[u] = 0;
    int jend = causal ? min(j1, i + 1) : j1;
    for (int jt = j0; jt < jend; jt += W) {
        int j = jt + t;
        T ds = 0;
        if (j < jend) {
            T p = exp(att_score(q, qb, cq, k, kb + j * rk, ck, E, scale, mask, mb + j * cm, has_mask) - li);
            T dp = att_dot(g, gb, cg, v, vb + j * rv, cv, Ev);
            if (drop) dp = att_keep(((long)row) * S + j, seed_lo, seed_hi, ctr_lo, ctr_hi, thr) ? dp * dscale : 0;
            ds = p * (dp - di);
        }
        sp[t] = ds;
        barrier(CLK_LOCAL_MEM_FENCE);
        int n = min(W, jend - jt);
        for (int u = 0; u < nu; u++) {
            int d = d0 + t + u * W;
            if (d >= d0 + nd) break;
            T a = acc[u];
            for (int tt = 0; tt < n; tt++) a += sp[tt] * CLG_LD(k, kb + (jt + tt) * rk + d * ck);
            acc[u] = a;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int u = 0; u < nu; u++) {
        int d = d0 + t + u * W;
        if (d >= d0 + nd) break;
        long at = (long)row * E + d;
        dq[at] = (first ? (T)0 : dq[at]) + acc[u] * scale;
    }
}

// dK and dV, one group per key row j (global (W, S, B)), queries [i0, i1) of a launch,
// columns [d0, d0 + nd) of both E (dK) and Ev (dV); added to earlier launches' when
// !first. dk [B, S, E] and dv [B, S, Ev], contiguous.
__kernel void attn_bwd_dkv(int L, int S, int E, int Ev, int nb, int8 bshape,
                           __global const TS *q, int oq, int8 bq, int rq, int cq,
                           __global const TS *k, int ok, int8 bk, int rk, int ck,
                           __global const TS *v, int ov, int8 bv, int rv, int cv,
                           __global const T *mask, int om, int8 bm, int rm, int cm, int has_mask,
                           __global const TS *g, int og, int8 bg, int rg, int cg,
                           __global const T *lse, __global const T *dr, __global T *dk, __global T *dv,
                           int i0, int i1, int d0, int nd, int first, int causal, const T scale,
                           uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr, const T dscale, int drop,
                           __local T *sp, __local T *sds)
{
    int t = get_local_id(0), W = get_local_size(0), j = get_group_id(1), b = get_group_id(2);
    int nu = (nd + W - 1) / W;
    int qb = att_boff(b, nb, bshape, oq, bq), kb = att_boff(b, nb, bshape, ok, bk) + j * rk;
    int vb = att_boff(b, nb, bshape, ov, bv) + j * rv, gb = att_boff(b, nb, bshape, og, bg);
    int mb = has_mask ? att_boff(b, nb, bshape, om, bm) + j * cm : 0;
    T ak[ATT_ND], av[ATT_ND];
    for (int u = 0; u < nu; u++) ak[u] = av[u] = 0;
    int ibeg = causal ? max(i0, j) : i0;   // causal: query i sees key j when j <= i
    for (int it = ibeg; it < i1; it += W) {
        int i = it + t;
        T ds = 0, pz = 0;
        if (i < i1) {
            int row = b * L + i;
            T p = exp(att_score(q, qb + i * rq, cq, k, kb, ck, E, scale, mask, mb + i * rm, has_mask) - lse[row]);
            T dp = att_dot(g, gb + i * rg, cg, v, vb, cv, Ev), z = 1;
            if (drop) z = att_keep(((long)row) * S + j, seed_lo, seed_hi, ctr_lo, ctr_hi, thr) ? dscale : 0;
            pz = p * z;
            ds = p * (dp * z - dr[row]);
        }
        sp[t] = pz;
        sds[t] = ds;
        barrier(CLK_LOCAL_MEM_FENCE);
        int n = min(W, i1 - it);
        for (int u = 0; u < nu; u++) {
            int d = d0 + t + u * W;
            if (d >= d0 + nd) break;
            T a = ak[u], c = av[u];
            if (d < E)
                for (int tt = 0; tt < n; tt++) a += sds[tt] * CLG_LD(q, qb + (it + tt) * rq + d * cq);
            if (d < Ev)
                for (int tt = 0; tt < n; tt++) c += sp[tt] * CLG_LD(g, gb + (it + tt) * rg + d * cg);
            ak[u] = a;
            av[u] = c;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    int krow = b * S + j;
    for (int u = 0; u < nu; u++) {
        int d = d0 + t + u * W;
        if (d >= d0 + nd) break;
        if (d < E) {
            long at = (long)krow * E + d;
            dk[at] = (first ? (T)0 : dk[at]) + ak[u] * scale;
        }
        if (d < Ev) {
            long at = (long)krow * Ev + d;
            dv[at] = (first ? (T)0 : dv[at]) + av[u];
        }
    }
}

// ---- one work-item per row (the device table's attention = rows) ---------------------------------
// For devices whose work-items are SIMD-wide (POCL on a CPU): a work-item walks the keys
// (or queries) of its own row alone, with no local memory and no barrier, and the
// compiler vectorizes across the rows of a group, which read the same key and value
// rows (one load for the group). Launched exactly (clg__launch_rows: no bounds check),
// rows along dimension 0 and the batch along 1. Loops run to the group's bound, the
// rows past their own causal bound masked, so that every lane runs the same trips.
// Each launch covers ATT_RD output columns at most, and keys [j0, j1) (queries [i0, i1)).

#define ATT_RD 64

// The first row past the group's last (along dimension 0), for a loop bound that all
// work-items of the group share.
inline int att_group_end(int n)
{
    return min(n, (int)(get_global_id(0) - get_local_id(0) + get_local_size(0)));
}

__kernel void attn_fwd_rows(int L, int S, int E, int Ev, int nb, int8 bshape,
                            __global const TS *q, int oq, int8 bq, int rq, int cq,
                            __global const TS *k, int ok, int8 bk, int rk, int ck,
                            __global const TS *v, int ov, int8 bv, int rv, int cv,
                            __global const T *mask, int om, int8 bm, int rm, int cm, int has_mask,
                            __global TS *o, __global T *lse, __global T *acc_s, __global T *ml_s,
                            int j0, int j1, int d0, int nd, int first, int last, int causal, const T scale,
                            uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr, const T dscale, int drop)
{
    int i = get_global_id(0), b = get_global_id(1), row = b * L + i;
    int qb = att_boff(b, nb, bshape, oq, bq) + i * rq, kb = att_boff(b, nb, bshape, ok, bk);
    int vb = att_boff(b, nb, bshape, ov, bv) + d0 * cv, mb = has_mask ? att_boff(b, nb, bshape, om, bm) + i * rm : 0;
    T acc[ATT_RD], m = first ? -INFINITY : ml_s[2 * row], l = first ? (T)0 : ml_s[2 * row + 1];
    for (int d = 0; d < nd; d++) acc[d] = first ? (T)0 : acc_s[(long)row * Ev + d0 + d];
    int jend = causal ? min(j1, att_group_end(L)) : j1;
    for (int j = j0; j < jend; j++) {
        T s = causal && j > i ? -INFINITY : att_score(q, qb, cq, k, kb + j * rk, ck, E, scale, mask, mb + j * cm, has_mask);
        T mnew = clg_nanmax(m, s);
        T alpha = m == -INFINITY ? (T)0 : exp(m - mnew), p = s == -INFINITY ? (T)0 : exp(s - mnew);
        l = l * alpha + p;
        if (drop) p = att_keep(((long)row) * S + j, seed_lo, seed_hi, ctr_lo, ctr_hi, thr) ? p * dscale : 0;
        for (int d = 0; d < nd; d++) acc[d] = acc[d] * alpha + p * CLG_LD(v, vb + j * rv + d * cv);
        m = mnew;
    }
    for (int d = 0; d < nd; d++) {
        if (last) CLG_ST(o, (long)row * Ev + d0 + d, S ? acc[d] / l : (T)0);
        else acc_s[(long)row * Ev + d0 + d] = acc[d];
    }
    if (!last) {
        ml_s[2 * row] = m;
        ml_s[2 * row + 1] = l;
    }
    if (last && d0 == 0) lse[row] = m + log(l);
}

// Dr_i = sum_d dO_i O_i, one work-item per query row.
__kernel void attn_bwd_pre_rows(int L, int Ev, int nb, int8 bshape, __global const TS *o,
                                __global const TS *g, int og, int8 bg, int rg, int cg, __global T *dr)
{
    int i = get_global_id(0), b = get_global_id(1), row = b * L + i;
    int gb = att_boff(b, nb, bshape, og, bg) + i * rg;
    T acc = 0;
    for (int d = 0; d < Ev; d++) acc += CLG_LD(o, (long)row * Ev + d) * CLG_LD(g, gb + d * cg);
    dr[row] = acc;
}

__kernel void attn_bwd_dq_rows(int L, int S, int E, int Ev, int nb, int8 bshape,
                               __global const TS *q, int oq, int8 bq, int rq, int cq,
                               __global const TS *k, int ok, int8 bk, int rk, int ck,
                               __global const TS *v, int ov, int8 bv, int rv, int cv,
                               __global const T *mask, int om, int8 bm, int rm, int cm, int has_mask,
                               __global const TS *g, int og, int8 bg, int rg, int cg,
                               __global const T *lse, __global const T *dr, __global T *dq,
                               int j0, int j1, int d0, int nd, int first, int causal, const T scale,
                               uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr, const T dscale, int drop)
{
    int i = get_global_id(0), b = get_global_id(1), row = b * L + i;
    int qb = att_boff(b, nb, bshape, oq, bq) + i * rq, kb = att_boff(b, nb, bshape, ok, bk);
    int vb = att_boff(b, nb, bshape, ov, bv), gb = att_boff(b, nb, bshape, og, bg) + i * rg;
    int mb = has_mask ? att_boff(b, nb, bshape, om, bm) + i * rm : 0;
    T acc[ATT_RD], li = lse[row], di = dr[row];
    for (int d = 0; d < nd; d++) acc[d] = 0;
    int jend = causal ? min(j1, att_group_end(L)) : j1;
    for (int j = j0; j < jend; j++) {
        bool seen = !causal || j <= i;
        T p = seen ? exp(att_score(q, qb, cq, k, kb + j * rk, ck, E, scale, mask, mb + j * cm, has_mask) - li) : (T)0;
        T dp = att_dot(g, gb, cg, v, vb + j * rv, cv, Ev);
        if (drop) dp = att_keep(((long)row) * S + j, seed_lo, seed_hi, ctr_lo, ctr_hi, thr) ? dp * dscale : 0;
        T ds = p * (dp - di);
        for (int d = 0; d < nd; d++) acc[d] += ds * CLG_LD(k, kb + j * rk + (d0 + d) * ck);
    }
    for (int d = 0; d < nd; d++) {
        long at = (long)row * E + d0 + d;
        dq[at] = (first ? (T)0 : dq[at]) + acc[d] * scale;
    }
}

// dK and dV, one work-item per key row j (dimension 0 over S), columns [d0, d0 + nd) of
// both E and Ev.
__kernel void attn_bwd_dkv_rows(int L, int S, int E, int Ev, int nb, int8 bshape,
                                __global const TS *q, int oq, int8 bq, int rq, int cq,
                                __global const TS *k, int ok, int8 bk, int rk, int ck,
                                __global const TS *v, int ov, int8 bv, int rv, int cv,
                                __global const T *mask, int om, int8 bm, int rm, int cm, int has_mask,
                                __global const TS *g, int og, int8 bg, int rg, int cg,
                                __global const T *lse, __global const T *dr, __global T *dk, __global T *dv,
                                int i0, int i1, int d0, int nd, int first, int causal, const T scale,
                                uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr, const T dscale, int drop)
{
    int j = get_global_id(0), b = get_global_id(1);
    int qb = att_boff(b, nb, bshape, oq, bq), kb = att_boff(b, nb, bshape, ok, bk) + j * rk;
    int vb = att_boff(b, nb, bshape, ov, bv) + j * rv, gb = att_boff(b, nb, bshape, og, bg);
    int mb = has_mask ? att_boff(b, nb, bshape, om, bm) + j * cm : 0;
    T ak[ATT_RD], av[ATT_RD];
    for (int d = 0; d < nd; d++) ak[d] = av[d] = 0;
    int jlo = (int)(get_global_id(0) - get_local_id(0));   // the group's first key row
    int ibeg = causal ? max(i0, jlo) : i0;                  // query i sees key j when j <= i
    int ne = clamp(E - d0, 0, nd), nv = clamp(Ev - d0, 0, nd);
    for (int i = ibeg; i < i1; i++) {
        int row = b * L + i;
        bool seen = !causal || j <= i;
        T p = seen ? exp(att_score(q, qb + i * rq, cq, k, kb, ck, E, scale, mask, mb + i * rm, has_mask) - lse[row])
                   : (T)0;
        T dp = att_dot(g, gb + i * rg, cg, v, vb, cv, Ev), z = 1;
        if (drop) z = att_keep(((long)row) * S + j, seed_lo, seed_hi, ctr_lo, ctr_hi, thr) ? dscale : 0;
        T pz = p * z, ds = p * (dp * z - dr[row]);
        for (int d = 0; d < ne; d++) ak[d] += ds * CLG_LD(q, qb + i * rq + (d0 + d) * cq);
        for (int d = 0; d < nv; d++) av[d] += pz * CLG_LD(g, gb + i * rg + (d0 + d) * cg);
    }
    int krow = b * S + j;
    for (int d = 0; d < ne; d++) {
        long at = (long)krow * E + d0 + d;
        dk[at] = (first ? (T)0 : dk[at]) + ak[d] * scale;
    }
    for (int d = 0; d < nv; d++) {
        long at = (long)krow * Ev + d0 + d;
        dv[at] = (first ? (T)0 : dv[at]) + av[d];
    }
}

// ---- one work-item per row, along the head in vectors (float32, unit column strides) ----------
// The rows kernels above vectorize across rows: each lane gathers its own query's elements.
// These run each row's dot products and accumulators 16 columns at a time in explicit
// float16 vectors (contiguous loads of whole key, value and query rows), for E and Ev
// multiples of 16 up to 16 ATT_VN. Keys (queries in dK/dV) go in blocks of 16: their
// scores gather into one vector, which takes one vector exp and, in the forward, one
// rescale of the running state per block. Arguments as the rows kernels'; one launch
// covers every column (d0 = 0, nd >= E, Ev), and each work-item stops at its own causal
// bound. The host keeps a launch's keys (queries) within item_loops. Launched in groups
// of 16 rows, rounded up (the items past the last row return): one group shape, so POCL
// compiles each kernel once, not once per tail of every length.
#if defined(CLG_F32) && !defined(CLG_F16_STORE) && !defined(CLG_BF16_STORE)
#define ATT_VN 8

// scale q.k + mask, q held in vectors, k at kr.
inline float att_vscore(const float16 *qv, __global const float *kr, int ne, float scale,
                        __global const float *mask, int mb, int has_mask)
{
    float16 s = qv[0] * vload16(0, kr);
    for (int u = 1; u < ne; u++) s = CLG_MAD(qv[u], vload16(u, kr), s);
    return clg_hsum16(s) * scale + (has_mask ? mask[mb] : 0.0f);
}

inline float att_vdot(const float16 *a, __global const float *br, int n)
{
    float16 s = a[0] * vload16(0, br);
    for (int u = 1; u < n; u++) s = CLG_MAD(a[u], vload16(u, br), s);
    return clg_hsum16(s);
}

__kernel void attn_fwd_vec(int L, int S, int E, int Ev, int nb, int8 bshape,
                           __global const float *q, int oq, int8 bq, int rq, int cq,
                           __global const float *k, int ok, int8 bk, int rk, int ck,
                           __global const float *v, int ov, int8 bv, int rv, int cv,
                           __global const float *mask, int om, int8 bm, int rm, int cm, int has_mask,
                           __global float *o, __global float *lse, __global float *acc_s, __global float *ml_s,
                           int j0, int j1, int d0, int nd, int first, int last, int causal, const float scale,
                           uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr, const float dscale, int drop)
{
    int i = get_global_id(0), b = get_global_id(1), row = b * L + i, ne = E / 16, nv = Ev / 16;
    if (i >= L) return;
    __global const float *qr = q + att_boff(b, nb, bshape, oq, bq) + i * rq;
    __global const float *kb = k + att_boff(b, nb, bshape, ok, bk), *vb = v + att_boff(b, nb, bshape, ov, bv);
    int mb = has_mask ? att_boff(b, nb, bshape, om, bm) + i * rm : 0;
    float16 qv[ATT_VN], acc[ATT_VN];
    for (int u = 0; u < ne; u++) qv[u] = vload16(u, qr);
    for (int u = 0; u < nv; u++) acc[u] = first ? (float16)0 : vload16(u, acc_s + (long)row * Ev);
    float m = first ? -INFINITY : ml_s[2 * row], l = first ? 0.0f : ml_s[2 * row + 1];
    int jend = causal ? min(j1, i + 1) : j1;
    for (int jt = j0; jt < jend; jt += 16) {
        int n = min(16, jend - jt);
        float s[16];
        for (int t = 0; t < 16; t++)
            s[t] = t < n ? att_vscore(qv, kb + (jt + t) * rk, ne, scale, mask, mb + (jt + t) * cm, has_mask) : -INFINITY;
        float16 sv = vload16(0, s);
        // NaN propagates as in clg_nanmax: a NaN score makes the row's max NaN.
        float mnew = any(isnan(sv)) ? NAN : fmax(m, clg_hmax16(sv));
        if (isnan(m)) mnew = NAN;
        float alpha = m == -INFINITY ? 0.0f : exp(m - mnew);
        float16 p = select(exp(sv - mnew), (float16)0, isinf(sv) && sv < 0);
        l = l * alpha + clg_hsum16(p);
        vstore16(p, 0, s);
        for (int u = 0; u < nv; u++) acc[u] *= alpha;
        for (int t = 0; t < n; t++) {
            float pt = s[t];
            if (drop) pt = att_keep(((long)row) * S + jt + t, seed_lo, seed_hi, ctr_lo, ctr_hi, thr) ? pt * dscale : 0;
            for (int u = 0; u < nv; u++) acc[u] = CLG_MAD(pt, vload16(u, vb + (jt + t) * rv), acc[u]);
        }
        m = mnew;
    }
    for (int u = 0; u < nv; u++) {
        if (last) vstore16(S ? acc[u] / l : (float16)0, u, o + (long)row * Ev);
        else vstore16(acc[u], u, acc_s + (long)row * Ev);
    }
    if (!last) {
        ml_s[2 * row] = m;
        ml_s[2 * row + 1] = l;
    }
    if (last) lse[row] = m + log(l);
}

// Dr_i = sum_d dO_i O_i.
__kernel void attn_bwd_pre_vec(int L, int Ev, int nb, int8 bshape, __global const float *o,
                               __global const float *g, int og, int8 bg, int rg, int cg, __global float *dr)
{
    int i = get_global_id(0), b = get_global_id(1), row = b * L + i;
    if (i >= L) return;
    __global const float *gr = g + att_boff(b, nb, bshape, og, bg) + i * rg, *orow = o + (long)row * Ev;
    float16 s = 0;
    for (int u = 0; u < Ev / 16; u++) s = CLG_MAD(vload16(u, orow), vload16(u, gr), s);
    dr[row] = clg_hsum16(s);
}

__kernel void attn_bwd_dq_vec(int L, int S, int E, int Ev, int nb, int8 bshape,
                              __global const float *q, int oq, int8 bq, int rq, int cq,
                              __global const float *k, int ok, int8 bk, int rk, int ck,
                              __global const float *v, int ov, int8 bv, int rv, int cv,
                              __global const float *mask, int om, int8 bm, int rm, int cm, int has_mask,
                              __global const float *g, int og, int8 bg, int rg, int cg,
                              __global const float *lse, __global const float *dr, __global float *dq,
                              int j0, int j1, int d0, int nd, int first, int causal, const float scale,
                              uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr, const float dscale, int drop)
{
    int i = get_global_id(0), b = get_global_id(1), row = b * L + i, ne = E / 16, nv = Ev / 16;
    if (i >= L) return;
    __global const float *qr = q + att_boff(b, nb, bshape, oq, bq) + i * rq;
    __global const float *gr = g + att_boff(b, nb, bshape, og, bg) + i * rg;
    __global const float *kb = k + att_boff(b, nb, bshape, ok, bk), *vb = v + att_boff(b, nb, bshape, ov, bv);
    int mb = has_mask ? att_boff(b, nb, bshape, om, bm) + i * rm : 0;
    float16 qv[ATT_VN], gv[ATT_VN], acc[ATT_VN];
    for (int u = 0; u < ne; u++) {
        qv[u] = vload16(u, qr);
        acc[u] = 0;
    }
    for (int u = 0; u < nv; u++) gv[u] = vload16(u, gr);
    float li = lse[row], di = dr[row];
    int jend = causal ? min(j1, i + 1) : j1;
    for (int jt = j0; jt < jend; jt += 16) {
        int n = min(16, jend - jt);
        float s[16], dp[16];
        for (int t = 0; t < 16; t++) {
            int j = jt + t;
            s[t] = t < n ? att_vscore(qv, kb + j * rk, ne, scale, mask, mb + j * cm, has_mask) - li : -INFINITY;
            dp[t] = t < n ? att_vdot(gv, vb + j * rv, nv) : 0.0f;
            if (drop && t < n) dp[t] = att_keep(((long)row) * S + j, seed_lo, seed_hi, ctr_lo, ctr_hi, thr) ? dp[t] * dscale : 0;
        }
        float16 ds = exp(vload16(0, s)) * (vload16(0, dp) - di);
        vstore16(ds, 0, s);
        for (int t = 0; t < n; t++)
            for (int u = 0; u < ne; u++) acc[u] = CLG_MAD(s[t], vload16(u, kb + (jt + t) * rk), acc[u]);
    }
    for (int u = 0; u < ne; u++) {
        __global float *at = dq + (long)row * E;
        vstore16((first ? (float16)0 : vload16(u, at)) + acc[u] * scale, u, at);
    }
}

__kernel void attn_bwd_dkv_vec(int L, int S, int E, int Ev, int nb, int8 bshape,
                               __global const float *q, int oq, int8 bq, int rq, int cq,
                               __global const float *k, int ok, int8 bk, int rk, int ck,
                               __global const float *v, int ov, int8 bv, int rv, int cv,
                               __global const float *mask, int om, int8 bm, int rm, int cm, int has_mask,
                               __global const float *g, int og, int8 bg, int rg, int cg,
                               __global const float *lse, __global const float *dr, __global float *dk,
                               __global float *dv, int i0, int i1, int d0, int nd, int first, int causal,
                               const float scale, uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr,
                               const float dscale, int drop)
{
    int j = get_global_id(0), b = get_global_id(1), ne = E / 16, nv = Ev / 16;
    if (j >= S) return;
    __global const float *qb = q + att_boff(b, nb, bshape, oq, bq), *gb = g + att_boff(b, nb, bshape, og, bg);
    __global const float *kr = k + att_boff(b, nb, bshape, ok, bk) + j * rk;
    __global const float *vr = v + att_boff(b, nb, bshape, ov, bv) + j * rv;
    int mb = has_mask ? att_boff(b, nb, bshape, om, bm) + j * cm : 0;
    float16 kv[ATT_VN], vv[ATT_VN], ak[ATT_VN], av[ATT_VN];
    for (int u = 0; u < ne; u++) {
        kv[u] = vload16(u, kr);
        ak[u] = 0;
    }
    for (int u = 0; u < nv; u++) {
        vv[u] = vload16(u, vr);
        av[u] = 0;
    }
    int ibeg = causal ? max(i0, j) : i0;   // query i sees key j when j <= i
    for (int it = ibeg; it < i1; it += 16) {
        int n = min(16, i1 - it);
        float s[16], dp[16], z[16];
        for (int t = 0; t < 16; t++) {
            int i = it + t, row = b * L + i;
            z[t] = 1;
            if (t >= n) {
                s[t] = -INFINITY;
                dp[t] = 0;
                continue;
            }
            s[t] = att_vscore(kv, qb + i * rq, ne, scale, mask, mb + i * rm, has_mask) - lse[row];
            if (drop) z[t] = att_keep(((long)row) * S + j, seed_lo, seed_hi, ctr_lo, ctr_hi, thr) ? dscale : 0;
            dp[t] = att_vdot(vv, gb + i * rg, nv) * z[t] - dr[row];
        }
        float16 p = exp(vload16(0, s));
        vstore16(p * vload16(0, dp), 0, dp);   // dS
        vstore16(p * vload16(0, z), 0, z);     // P Z
        for (int t = 0; t < n; t++) {
            int i = it + t;
            for (int u = 0; u < ne; u++) ak[u] = CLG_MAD(dp[t], vload16(u, qb + i * rq), ak[u]);
            for (int u = 0; u < nv; u++) av[u] = CLG_MAD(z[t], vload16(u, gb + i * rg), av[u]);
        }
    }
    for (int u = 0; u < ne; u++) {
        __global float *at = dk + (long)(b * S + j) * E;
        vstore16((first ? (float16)0 : vload16(u, at)) + ak[u] * scale, u, at);
    }
    for (int u = 0; u < nv; u++) {
        __global float *at = dv + (long)(b * S + j) * Ev;
        vstore16((first ? (float16)0 : vload16(u, at)) + av[u], u, at);
    }
}

// ---- the kernels of one head size: E = Ev = 16, 32 or 64 (ne = nv = 1, 2 or 4) ------------
// As the vector kernels above, but with the head's vector count a constant: every loop
// over a row's vectors unrolls (ATT_UNROLL), so that queries, keys and accumulators stay
// in registers (the loops to a run-time count kept them in memory: a store-to-load chain
// per key). And 16 keys' (queries') dot products fold together (att_vdots16) instead of
// one horizontal sum each.
#define ATT_UNROLL _Pragma("unroll")

// The 16 dot products of a (n vectors) with the rows at r + t * rs, t < 16, as one vector
// (lane t: row t; rows past cnt read row cnt - 1 instead, for the caller to mask). Each
// product's 16 lanes fold with those of the next in a transposing tree (common.cl's
// CLG_FOLD masks), so that 16 sums take 15 pairs of shuffles instead of 16 horizontal
// sums; each lane adds in clg_hsum16's order.
#define ATT_FOLD(x, y, lo, hi) (shuffle2((x), (y), lo) + shuffle2((x), (y), hi))
#define ATT_LANES (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)

static inline __attribute__((always_inline)) float16 att_vdots16(const float16 *a, __global const float *r, int rs, int cnt,
                                                          const int n)
{
    float16 f1[8], f2[4], f3[2];
    ATT_UNROLL for (int t = 0; t < 8; t++) {
        __global const float *r0 = r + min(2 * t, cnt - 1) * rs, *r1 = r + min(2 * t + 1, cnt - 1) * rs;
        float16 p0 = a[0] * vload16(0, r0), p1 = a[0] * vload16(0, r1);
        ATT_UNROLL for (int u = 1; u < n; u++) {
            p0 = CLG_MAD(a[u], vload16(u, r0), p0);
            p1 = CLG_MAD(a[u], vload16(u, r1), p1);
        }
        f1[t] = ATT_FOLD(p0, p1, CLG_FOLD_M1A, CLG_FOLD_M1B);
    }
    ATT_UNROLL for (int t = 0; t < 4; t++) f2[t] = ATT_FOLD(f1[2 * t], f1[2 * t + 1], CLG_FOLD_M2A, CLG_FOLD_M2B);
    ATT_UNROLL for (int t = 0; t < 2; t++) f3[t] = ATT_FOLD(f2[2 * t], f2[2 * t + 1], CLG_FOLD_M3A, CLG_FOLD_M3B);
    return ATT_FOLD(f3[0], f3[1], CLG_FOLD_M4A, CLG_FOLD_M4B);
}

static inline __attribute__((always_inline)) void attn_fwd_vec_do(int L, int S, int E, int Ev, int nb, int8 bshape,
                           __global const float *q, int oq, int8 bq, int rq, int cq,
                           __global const float *k, int ok, int8 bk, int rk, int ck,
                           __global const float *v, int ov, int8 bv, int rv, int cv,
                           __global const float *mask, int om, int8 bm, int rm, int cm, int has_mask,
                           __global float *o, __global float *lse, __global float *acc_s, __global float *ml_s,
                           int j0, int j1, int d0, int nd, int first, int last, int causal, const float scale,
                           uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr, const float dscale, int drop,
        const int ne, const int nv)
{
    int i = get_global_id(0), b = get_global_id(1), row = b * L + i;
    if (i >= L) return;
    __global const float *qr = q + att_boff(b, nb, bshape, oq, bq) + i * rq;
    __global const float *kb = k + att_boff(b, nb, bshape, ok, bk), *vb = v + att_boff(b, nb, bshape, ov, bv);
    int mb = has_mask ? att_boff(b, nb, bshape, om, bm) + i * rm : 0;
    float16 qv[ATT_VN], acc[ATT_VN];
    ATT_UNROLL for (int u = 0; u < ne; u++) qv[u] = vload16(u, qr);
    ATT_UNROLL for (int u = 0; u < nv; u++) acc[u] = 0;
    if (!first) ATT_UNROLL for (int u = 0; u < nv; u++) acc[u] = vload16(u, acc_s + (long)row * Ev);
    float m = first ? -INFINITY : ml_s[2 * row], l = first ? 0.0f : ml_s[2 * row + 1];
    int jend = causal ? min(j1, i + 1) : j1;
    for (int jt = j0; jt < jend; jt += 16) {
        int n = min(16, jend - jt);
        float s[16];
        float16 sv = att_vdots16(qv, kb + jt * rk, rk, n, ne) * scale;
        if (has_mask) {
            for (int t = 0; t < 16; t++) s[t] = mask[mb + (jt + min(t, n - 1)) * cm];
            sv += vload16(0, s);
        }
        sv = select(sv, (float16)(-INFINITY), ATT_LANES >= n);
        // NaN propagates as in clg_nanmax: a NaN score makes the row's max NaN.
        float mnew = any(isnan(sv)) ? NAN : fmax(m, clg_hmax16(sv));
        if (isnan(m)) mnew = NAN;
        float alpha = m == -INFINITY ? 0.0f : exp(m - mnew);
        float16 p = select(exp(sv - mnew), (float16)0, isinf(sv) && sv < 0);
        l = l * alpha + clg_hsum16(p);
        vstore16(p, 0, s);
        ATT_UNROLL for (int u = 0; u < nv; u++) acc[u] *= alpha;
        for (int t = 0; t < n; t++) {
            float pt = s[t];
            if (drop) pt = att_keep(((long)row) * S + jt + t, seed_lo, seed_hi, ctr_lo, ctr_hi, thr) ? pt * dscale : 0;
            ATT_UNROLL for (int u = 0; u < nv; u++) acc[u] = CLG_MAD(pt, vload16(u, vb + (jt + t) * rv), acc[u]);
        }
        m = mnew;
    }
    if (last) ATT_UNROLL for (int u = 0; u < nv; u++) vstore16(S ? acc[u] / l : (float16)0, u, o + (long)row * Ev);
    else ATT_UNROLL for (int u = 0; u < nv; u++) vstore16(acc[u], u, acc_s + (long)row * Ev);
    if (!last) {
        ml_s[2 * row] = m;
        ml_s[2 * row + 1] = l;
    }
    if (last) lse[row] = m + log(l);
}

// One entry point per head width (16, 32 or 64 floats: U vectors of 16), so that the
// loops over a row's vectors have constant bounds and unroll.
#define ATTN_FWD_VEC_KERNEL(N, U) \
__kernel void attn_fwd_vec##N(int L, int S, int E, int Ev, int nb, int8 bshape, \
                           __global const float *q, int oq, int8 bq, int rq, int cq, \
                           __global const float *k, int ok, int8 bk, int rk, int ck, \
                           __global const float *v, int ov, int8 bv, int rv, int cv, \
                           __global const float *mask, int om, int8 bm, int rm, int cm, int has_mask, \
                           __global float *o, __global float *lse, __global float *acc_s, __global float *ml_s, \
                           int j0, int j1, int d0, int nd, int first, int last, int causal, const float scale, \
                           uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr, const float dscale, int drop) \
{ \
    attn_fwd_vec_do(L, S, E, Ev, nb, bshape, q, oq, bq, rq, cq, k, ok, bk, rk, ck, v, ov, bv, rv, cv, mask, om, bm, rm, cm, has_mask, o, lse, acc_s, ml_s, j0, j1, d0, nd, first, last, causal, scale, seed_lo, seed_hi, ctr_lo, ctr_hi, thr, dscale, drop, U, U); \
}
ATTN_FWD_VEC_KERNEL(16, 1)
ATTN_FWD_VEC_KERNEL(32, 2)
ATTN_FWD_VEC_KERNEL(64, 4)

// Dr_i = sum_d dO_i O_i.
static inline __attribute__((always_inline)) void attn_bwd_dq_vec_do(int L, int S, int E, int Ev, int nb, int8 bshape,
                              __global const float *q, int oq, int8 bq, int rq, int cq,
                              __global const float *k, int ok, int8 bk, int rk, int ck,
                              __global const float *v, int ov, int8 bv, int rv, int cv,
                              __global const float *mask, int om, int8 bm, int rm, int cm, int has_mask,
                              __global const float *g, int og, int8 bg, int rg, int cg,
                              __global const float *lse, __global const float *dr, __global float *dq,
                              int j0, int j1, int d0, int nd, int first, int causal, const float scale,
                              uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr, const float dscale, int drop,
        const int ne, const int nv)
{
    int i = get_global_id(0), b = get_global_id(1), row = b * L + i;
    if (i >= L) return;
    __global const float *qr = q + att_boff(b, nb, bshape, oq, bq) + i * rq;
    __global const float *gr = g + att_boff(b, nb, bshape, og, bg) + i * rg;
    __global const float *kb = k + att_boff(b, nb, bshape, ok, bk), *vb = v + att_boff(b, nb, bshape, ov, bv);
    int mb = has_mask ? att_boff(b, nb, bshape, om, bm) + i * rm : 0;
    float16 qv[ATT_VN], gv[ATT_VN], acc[ATT_VN];
    ATT_UNROLL for (int u = 0; u < ne; u++) {
        qv[u] = vload16(u, qr);
        acc[u] = 0;
    }
    ATT_UNROLL for (int u = 0; u < nv; u++) gv[u] = vload16(u, gr);
    float li = lse[row], di = dr[row];
    int jend = causal ? min(j1, i + 1) : j1;
    for (int jt = j0; jt < jend; jt += 16) {
        int n = min(16, jend - jt);
        float s[16];
        float16 sv = att_vdots16(qv, kb + jt * rk, rk, n, ne) * scale, dp = att_vdots16(gv, vb + jt * rv, rv, n, nv);
        if (has_mask) {
            for (int t = 0; t < 16; t++) s[t] = mask[mb + (jt + min(t, n - 1)) * cm];
            sv += vload16(0, s);
        }
        if (drop) {
            for (int t = 0; t < 16; t++)
                s[t] = t < n && att_keep(((long)row) * S + jt + t, seed_lo, seed_hi, ctr_lo, ctr_hi, thr) ? dscale : 0;
            dp *= vload16(0, s);
        }
        int16 past = ATT_LANES >= n;
        sv = select(sv - li, (float16)(-INFINITY), past);
        float16 ds = exp(sv) * (select(dp, (float16)0, past) - di);
        vstore16(ds, 0, s);
        for (int t = 0; t < n; t++)
            ATT_UNROLL for (int u = 0; u < ne; u++) acc[u] = CLG_MAD(s[t], vload16(u, kb + (jt + t) * rk), acc[u]);
    }
    ATT_UNROLL for (int u = 0; u < ne; u++) {
        __global float *at = dq + (long)row * E;
        vstore16((first ? (float16)0 : vload16(u, at)) + acc[u] * scale, u, at);
    }
}

#define ATTN_BWD_DQ_VEC_KERNEL(N, U) \
__kernel void attn_bwd_dq_vec##N(int L, int S, int E, int Ev, int nb, int8 bshape, \
                              __global const float *q, int oq, int8 bq, int rq, int cq, \
                              __global const float *k, int ok, int8 bk, int rk, int ck, \
                              __global const float *v, int ov, int8 bv, int rv, int cv, \
                              __global const float *mask, int om, int8 bm, int rm, int cm, int has_mask, \
                              __global const float *g, int og, int8 bg, int rg, int cg, \
                              __global const float *lse, __global const float *dr, __global float *dq, \
                              int j0, int j1, int d0, int nd, int first, int causal, const float scale, \
                              uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr, const float dscale, int drop) \
{ \
    attn_bwd_dq_vec_do(L, S, E, Ev, nb, bshape, q, oq, bq, rq, cq, k, ok, bk, rk, ck, v, ov, bv, rv, cv, mask, om, bm, rm, cm, has_mask, g, og, bg, rg, cg, lse, dr, dq, j0, j1, d0, nd, first, causal, scale, seed_lo, seed_hi, ctr_lo, ctr_hi, thr, dscale, drop, U, U); \
}
ATTN_BWD_DQ_VEC_KERNEL(16, 1)
ATTN_BWD_DQ_VEC_KERNEL(32, 2)
ATTN_BWD_DQ_VEC_KERNEL(64, 4)

static inline __attribute__((always_inline)) void attn_bwd_dkv_vec_do(int L, int S, int E, int Ev, int nb, int8 bshape,
                               __global const float *q, int oq, int8 bq, int rq, int cq,
                               __global const float *k, int ok, int8 bk, int rk, int ck,
                               __global const float *v, int ov, int8 bv, int rv, int cv,
                               __global const float *mask, int om, int8 bm, int rm, int cm, int has_mask,
                               __global const float *g, int og, int8 bg, int rg, int cg,
                               __global const float *lse, __global const float *dr, __global float *dk,
                               __global float *dv, int i0, int i1, int d0, int nd, int first, int causal,
                               const float scale, uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr,
                               const float dscale, int drop,
        const int ne, const int nv)
{
    int j = get_global_id(0), b = get_global_id(1);
    if (j >= S) return;
    __global const float *qb = q + att_boff(b, nb, bshape, oq, bq), *gb = g + att_boff(b, nb, bshape, og, bg);
    __global const float *kr = k + att_boff(b, nb, bshape, ok, bk) + j * rk;
    __global const float *vr = v + att_boff(b, nb, bshape, ov, bv) + j * rv;
    int mb = has_mask ? att_boff(b, nb, bshape, om, bm) + j * cm : 0;
    float16 kv[ATT_VN], vv[ATT_VN], ak[ATT_VN], av[ATT_VN];
    ATT_UNROLL for (int u = 0; u < ne; u++) {
        kv[u] = vload16(u, kr);
        ak[u] = 0;
    }
    ATT_UNROLL for (int u = 0; u < nv; u++) {
        vv[u] = vload16(u, vr);
        av[u] = 0;
    }
    int ibeg = causal ? max(i0, j) : i0;   // query i sees key j when j <= i
    for (int it = ibeg; it < i1; it += 16) {
        int n = min(16, i1 - it);
        float dp[16], z[16], li[16], di[16];
        float16 sv = att_vdots16(kv, qb + it * rq, rq, n, ne) * scale, dv16 = att_vdots16(vv, gb + it * rg, rg, n, nv);
        ATT_UNROLL for (int t = 0; t < 16; t++) {   // rows past n read row n - 1's, masked below
            int row = b * L + it + min(t, n - 1);
            li[t] = lse[row];
            di[t] = dr[row];
        }
        if (has_mask) {
            for (int t = 0; t < 16; t++) z[t] = mask[mb + (it + min(t, n - 1)) * rm];
            sv += vload16(0, z);
        }
        float16 zv = 1;
        if (drop) {
            for (int t = 0; t < 16; t++)
                z[t] = att_keep(((long)(b * L + it + t)) * S + j, seed_lo, seed_hi, ctr_lo, ctr_hi, thr) ? dscale : 0;
            zv = vload16(0, z);
        }
        int16 past = ATT_LANES >= n;
        float16 p = exp(select(sv - vload16(0, li), (float16)(-INFINITY), past));
        vstore16(select(p * (dv16 * zv - vload16(0, di)), (float16)0, past), 0, dp);   // dS
        vstore16(p * zv, 0, z);                                                         // P Z
        for (int t = 0; t < n; t++) {
            int i = it + t;
            ATT_UNROLL for (int u = 0; u < ne; u++) ak[u] = CLG_MAD(dp[t], vload16(u, qb + i * rq), ak[u]);
            ATT_UNROLL for (int u = 0; u < nv; u++) av[u] = CLG_MAD(z[t], vload16(u, gb + i * rg), av[u]);
        }
    }
    ATT_UNROLL for (int u = 0; u < ne; u++) {
        __global float *at = dk + (long)(b * S + j) * E;
        vstore16((first ? (float16)0 : vload16(u, at)) + ak[u] * scale, u, at);
    }
    ATT_UNROLL for (int u = 0; u < nv; u++) {
        __global float *at = dv + (long)(b * S + j) * Ev;
        vstore16((first ? (float16)0 : vload16(u, at)) + av[u], u, at);
    }
}

#define ATTN_BWD_DKV_VEC_KERNEL(N, U) \
__kernel void attn_bwd_dkv_vec##N(int L, int S, int E, int Ev, int nb, int8 bshape, \
                               __global const float *q, int oq, int8 bq, int rq, int cq, \
                               __global const float *k, int ok, int8 bk, int rk, int ck, \
                               __global const float *v, int ov, int8 bv, int rv, int cv, \
                               __global const float *mask, int om, int8 bm, int rm, int cm, int has_mask, \
                               __global const float *g, int og, int8 bg, int rg, int cg, \
                               __global const float *lse, __global const float *dr, __global float *dk, \
                               __global float *dv, int i0, int i1, int d0, int nd, int first, int causal, \
                               const float scale, uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi, uint thr, \
                               const float dscale, int drop) \
{ \
    attn_bwd_dkv_vec_do(L, S, E, Ev, nb, bshape, q, oq, bq, rq, cq, k, ok, bk, rk, ck, v, ov, bv, rv, cv, mask, om, bm, rm, cm, has_mask, g, og, bg, rg, cg, lse, dr, dk, dv, i0, i1, d0, nd, first, causal, scale, seed_lo, seed_hi, ctr_lo, ctr_hi, thr, dscale, drop, U, U); \
}
ATTN_BWD_DKV_VEC_KERNEL(16, 1)
ATTN_BWD_DKV_VEC_KERNEL(32, 2)
ATTN_BWD_DKV_VEC_KERNEL(64, 4)
#endif
