// loss.cl: l1, smooth_l1 (Huber), binary cross-entropy with logits and nll (src/tensor/loss.c).
//
// The elementwise losses are CLG_ELEMENTWISE kernels: x the prediction, z the target,
// s0 the loss's parameter (beta). Their gradients take the incoming gradient as a
// third operand w (one value for MEAN/SUM, broadcast) and s1 = the reduction's scale,
// negated for the gradient of the target where the loss depends on x - z.
//
// Kernels whose first argument is a count (n, total, N) run over exactly that many
// work-items (clg__launch_1d, launch.c) and have no bounds check: one would keep POCL
// from vectorizing a work-group's loop (the SGD update ran 4x slower with it).

#ifndef CLG_I32
// sign(d) that keeps NaN (OpenCL's sign() gives 0 for NaN): a NaN loss has a NaN gradient.
// One select of arithmetic: chained ?: became branches, and POCL left l1_loss's gradient
// unvectorized (7.3 ms for 1M floats).
inline T loss_sign(T d) { return d != d ? d : (T)(d > (T)0) - (T)(d < (T)0); }

// log(1 + exp(-|x|)) + max(x, 0): never overflows. (x > 0 ? x : 0), not fmax, so a NaN
// x stays NaN.
inline T loss_bce(T x, T z) { return (x > 0 ? x : (T)0) - x * z + clg_log1p(exp(-fabs(x))); }

inline T loss_sigmoid(T x)
{
    T e = exp(-fabs(x));   // in (0, 1]: no overflow on either side
    return x >= 0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e);
}

// 0.5 d^2 / beta inside (-beta, beta), |d| - 0.5 beta outside; beta == 0 never takes the
// first branch, so it is l1 with no division by zero.
inline T loss_huber(T d, T beta)
{
    T a = fabs(d);
    return a < beta ? (T)0.5 * d * d / beta : a - (T)0.5 * beta;
}

CLG_ELEMENTWISE2(l1_elem, fabs(x - z))
CLG_ELEMENTWISE2(smooth_l1_elem, loss_huber(x - z, s0))
CLG_ELEMENTWISE2(bce_elem, loss_bce(x, z))

CLG_ELEMENTWISE3(l1_grad, s1 * w * loss_sign(x - z))
CLG_ELEMENTWISE3(smooth_l1_grad, s1 * w * (fabs(x - z) < s0 ? (x - z) / s0 : loss_sign(x - z)))
// d/dx = sigmoid(x) - z, d/dz = -x
CLG_ELEMENTWISE3(bce_grad_logits, s1 * w * (loss_sigmoid(x) - z))
CLG_ELEMENTWISE3(bce_grad_targets, -s1 * w * x)

// ---- nll: class weights, ignore_index, label smoothing -------------------------------------------
// Row i of the log-probabilities lp [N, C] (strides s0, s1 from offset olp), label y_i,
// class weights w[ow + c * sw] (hasw; else all 1), rows labelled ign skipped (useign):
//   loss_i = -(1 - eps) w[y_i] lp[i, y_i] - (eps / C) sum_c w[c] lp[i, c],  weight_i = w[y_i]
// and 0, 0 for a skipped row. The sums sum_c w[c] lp[i, c] come in sm[osm + i] (the host
// computes them by a reduction, which splits long rows and runs vectorized; a loop over
// the row per work-item took 0.44 ms for [16384, 64]); with eps = 0 they are not read,
// nor is any other class (a NaN elsewhere in the row does not reach the loss, as in PyTorch). A label outside [0, C) that is not skipped
// gives its row a NaN loss, reads nothing outside lp, and is reported in the device's
// error word (clg_report), so that the loss's readout fails with it.
//
// A kernel takes them as NLL_ARGS: the integers packed into two int8 (geo: C, olp, s0, s1,
// olab, slab, ow, sw; opt: hasw, ign, useign, osm, code and three of the kernel's own,
// opt.s5-s7), which NLL_UNPACK names. POCL copies each argument of a launch apart: a
// kernel of 26 arguments cost 4-6 us a launch against 1.6-2.8 for 4, and a loss over
// a few rows is one launch (nll_sum took 25 arguments).
#define NLL_ARGS                                                                                          \
    int8 geo, int8 opt, __global const T *lp, __global const int *lab, __global const T *w,               \
        __global const T *sm, const T eps, __global int *err
#define NLL_UNPACK                                                                                        \
    int C = geo.s0, olp = geo.s1, s0 = geo.s2, s1 = geo.s3, olab = geo.s4, slab = geo.s5, ow = geo.s6,    \
        sw = geo.s7, hasw = opt.s0, ign = opt.s1, useign = opt.s2, osm = opt.s3, code = opt.s4
// what the helpers below take, and what a kernel passes them after NLL_UNPACK
#define NLL_VARS                                                                                         \
    int C, __global const T *lp, int olp, int s0, int s1, __global const int *lab, int olab, int slab,  \
        __global const T *w, int ow, int sw, int hasw, int ign, int useign, const T eps, __global const T *sm,    \
        int osm, __global int *err, int code
#define NLL_PASS C, lp, olp, s0, s1, lab, olab, slab, w, ow, sw, hasw, ign, useign, eps, sm, osm, err, code

// Loads are unconditional, at safe indices (class 0 for a row skipped or out of range;
// a missing w or sm is lp's buffer read at 0), and the cases are selects: a conditional load
// kept POCL from vectorizing nll_bwd (5x slower).
inline T nll_row(int i, NLL_VARS, T *weight, bool check)
{
    int y = lab[olab + i * slab];
    bool keep = !(useign && y == ign), bad = keep && (y < 0 || y >= C), ok = keep && !bad;
    if (check && bad) clg_report(err, code, y, C);
    int ys = ok ? y : 0;
    __global const T *row = lp + olp + i * s0;
    T wv = w[ow + ys * sw], wy = ok ? (hasw ? wv : (T)1) : (T)0;
    T smooth = sm[eps != 0 ? osm + i : 0];   // without smoothing, lp's buffer at 0
    T l = -((T)1 - eps) * wy * row[ys * s1] - (eps != 0 ? eps / (T)C * smooth : (T)0);
    *weight = wy;
    return ok ? l : bad ? (T)NAN : (T)0;
}

// Each row's loss into loss[oloss + i] (oloss = opt.s5) and its weight into wts[i]: over
// exactly N work-items (clg__launch_1d).
__kernel void nll_rows(NLL_ARGS, __global T *loss, __global T *wts)
{
    NLL_UNPACK;
    int i = get_global_id(0), oloss = opt.s5;
    T wy;
    loss[oloss + i] = nll_row(i, NLL_PASS, &wy, true);
    wts[i] = wy;
}

// The same for labels the host knows lie in [0, C) (clg__index_known_in_range): with no
// report, which is a branch around an atomic, POCL vectorizes it (12-27 us over 16384
// rows against 70).
__kernel void nll_rows_known(NLL_ARGS, __global T *loss, __global T *wts)
{
    NLL_UNPACK;
    int i = get_global_id(0), oloss = opt.s5;
    T wy;
    loss[oloss + i] = nll_row(i, NLL_PASS, &wy, false);
    wts[i] = wy;
}

// The whole loss in one launch of one work-group (the host bounds N / wg by item_loops):
// y[oy] = sum of the rows' losses, divided by the sum of their weights for the mean
// (0 / 0 = NaN when every row is skipped, as PyTorch), and 1 / that sum into winv[0] for
// the backward. One launch instead of rows, sums and a division: POCL's launches, not
// the bytes, were the time of a loss over a few rows. N, mean, oy: opt.s5-s7.
__kernel void nll_sum(NLL_ARGS, __global T *y, __global T *winv, __local T *s)
{
    NLL_UNPACK;
    int N = opt.s5, mean = opt.s6, oy = opt.s7;
    int l = get_local_id(0), wg = get_local_size(0);
    T acc = 0, wacc = 0;
    for (int i = l; i < N; i += wg) {
        T wy;
        acc += nll_row(i, NLL_PASS, &wy, true);
        wacc += wy;
    }
    T sum = clg_group_sum(acc, s), W = clg_group_sum(wacc, s);
    if (l == 0) {
        y[oy] = mean ? sum / W : sum;
        winv[0] = (T)1 / W;
    }
}

// The sums of the rows' losses and weights that nll_rows wrote, by one work-group, as
// nll_sum finishes them (the host bounds n / wg by item_loops, n / (16 wg) for float32):
// for more rows than one group gathers quickly, whose gathers then run on every core.
// float32 walks 16 values at a time in explicit vectors (a work-item's strided loop
// stays scalar on POCL: 19 us over 16384 rows).
__kernel void nll_total(int n, __global const T *loss, __global const T *wts, int mean, __global T *y, int oy,
                        __global T *winv, __local T *s)
{
    int l = get_local_id(0), wg = get_local_size(0), i0 = 0;
    T acc = 0, wacc = 0;
#if defined(CLG_F32) && !defined(CLG_F16_STORE) && !defined(CLG_BF16_STORE)
    float16 a16 = 0, w16 = 0;
    for (int v = l; v < n / 16; v += wg) {
        a16 += vload16(v, loss);
        w16 += vload16(v, wts);
    }
    acc = clg_hsum16(a16), wacc = clg_hsum16(w16), i0 = n / 16 * 16;
#endif
    for (int i = i0 + l; i < n; i += wg) {
        acc += loss[i];
        wacc += wts[i];
    }
    T sum = clg_group_sum(acc, s), W = clg_group_sum(wacc, s);
    if (l == 0) {
        y[oy] = mean ? sum / W : sum;
        winv[0] = (T)1 / W;
    }
}

// d loss / d lp[i, c] = -g_i / div ((1 - eps) w[y_i] [c == y_i] + eps / C w[c]) for a row
// kept, 0 for a row skipped (PyTorch's, even when every row is: no NaN), NaN for a
// label out of range. 1 / div = winv[0] for the mean (a product: a division per element
// made the kernel 1.7x slower), else 1; g_i at og + i * sg (sg = 0:
// one value for MEAN/SUM); dx contiguous [N, C]. As dx = (c == y ? a : 0) + b w[c] with
// a and b the row's: the vectorized c sees one compare, one load and a multiply-add (a
// conditional load of w per element kept POCL from vectorizing: 2.5x slower). A 2-D
// range (c, i): the row's values are uniform along c (a 1-D range dividing k by C per
// element ran ~8x slower on POCL: integer division does not vectorize). The kernels'
// og, sg, mean: opt.s5-s7 (NLL_GRAD_UNPACK).
#define NLL_GRAD_UNPACK int og = opt.s5, sg = opt.s6, mean = opt.s7
inline void nll_grad_row(int i, NLL_VARS, __global const T *g, int og, int sg, int mean, __global const T *winv,
                         int *y, T *a, T *b)
{
    *y = lab[olab + i * slab];
    bool keep = !(useign && *y == ign), bad = keep && (*y < 0 || *y >= C);
    T wv = w[ow + (keep && !bad ? *y : 0) * sw], wy = keep && !bad ? (hasw ? wv : (T)1) : (T)0;
    T inv = winv[0];   // a valid buffer whatever mean is (the host passes g's otherwise)
    T sc = keep ? (bad ? (T)NAN : -g[og + i * sg] * (mean ? inv : (T)1)) : (T)0;
    *a = sc * ((T)1 - eps) * wy;
    *b = sc * eps / (T)C;
}

// Without smoothing (eps 0), into zeros: the one value of row i's gradient, at its
// label, over exactly N work-items (clg__launch_1d). A label out of range puts NaN at
// its row's class 0 (the forward reported it); a row skipped leaves its zeros.
__kernel void nll_bwd_pick(NLL_ARGS, __global const T *g, __global const T *winv, __global T *dx)
{
    NLL_UNPACK;
    NLL_GRAD_UNPACK;
    int i = get_global_id(0), y;
    T a, b;
    nll_grad_row(i, NLL_PASS, g, og, sg, mean, winv, &y, &a, &b);
    bool in = y >= 0 && y < C;
    dx[(size_t)i * C + (in ? y : 0)] = in ? a : b;   // b: NaN for a label out of range, else 0
}

// Without class weights (the host passes none): hasw 0 as a constant removes the
// weight's load per element (1.4x faster).
__kernel void nll_bwd(NLL_ARGS, __global const T *g, __global const T *winv, __global T *dx)
{
    NLL_UNPACK;
    NLL_GRAD_UNPACK;
    int c = get_global_id(0), i = get_global_id(1), y;
    T a, b;
    hasw = 0;
    nll_grad_row(i, NLL_PASS, g, og, sg, mean, winv, &y, &a, &b);
    dx[i * C + c] = (c == y ? a : (T)0) + b;
}

// With class weights, of unit stride: a strided gather of w per element kept POCL from
// vectorizing (2.1 ms for [16384, 64], 8x the unweighted kernel). Without smoothing the
// weights of the other classes do not count, not even a NaN or an infinite one (b is
// then 0, or NaN for a label out of range).
__kernel void nll_bwd_w(NLL_ARGS, __global const T *g, __global const T *winv, __global T *dx)
{
    NLL_UNPACK;
    NLL_GRAD_UNPACK;
    int c = get_global_id(0), i = get_global_id(1), y;
    T a, b;
    nll_grad_row(i, NLL_PASS, g, og, sg, mean, winv, &y, &a, &b);
    dx[i * C + c] = (c == y ? a : (T)0) + (eps != 0 ? b * w[ow + c] : b);
}

#if defined(CLG_F32) && !defined(CLG_F16_STORE) && !defined(CLG_BF16_STORE)
// nll_bwd and nll_bwd_w 16 classes at a time in explicit vectors (C % 16 == 0; nll.c
// chooses it): the row's label, weight and scale once per 16 values instead of once
// per value (POCL does not hoist them out of its work-item loop).
__kernel void nll_bwd_vec(NLL_ARGS, __global const float *g, __global const float *winv, __global float *dx)
{
    NLL_UNPACK;
    NLL_GRAD_UNPACK;
    int c = get_global_id(0) * 16, i = get_global_id(1), y;
    float a, b;
    nll_grad_row(i, NLL_PASS, g, og, sg, mean, winv, &y, &a, &b);
    int16 k = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15) + c;
    float16 v = select((float16)0.0f, (float16)a, k == (int16)y);
    if (hasw && eps != 0) v += b * vload16(0, w + ow + c);   // unit stride (nll.c)
    else v += b;
    vstore16(v, 0, dx + (size_t)i * C + c);
}
#endif
#endif
