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

// ---- nll with label smoothing ------------------------------------------------------------------
// Row i of the log-probabilities lp [N, C] (strides s0, s1 from offset olp), label y_i:
//   loss_i = -(1 - eps) lp[i, y_i] - (eps / C) sum_c lp[i, c]
// eps = 0 is nll_loss, and then the other classes are not read (a NaN elsewhere in the
// row does not reach the loss, as in PyTorch). A label outside [0, C) gives its row a
// NaN loss (and gradient), reads nothing outside lp, and is reported in the device's
// error word (clg_report), so that the loss's readout fails with it.
__kernel void nll_fwd(int N, int C, __global const T *lp, int olp, int s0, int s1, __global const int *lab, int olab,
                      int slab, const T eps, __global T *loss, __global int *err, int code)
{
    int i = get_global_id(0);
    int y = lab[olab + i * slab];
    if (y < 0 || y >= C) {
        loss[i] = NAN;
        clg_report(err, code, y, C);
        return;
    }
    __global const T *row = lp + olp + i * s0;
    T l = -((T)1 - eps) * row[y * s1];
    if (eps != 0) {
        T sum = 0;
        for (int c = 0; c < C; c++) sum += row[c * s1];
        l -= eps / (T)C * sum;
    }
    loss[i] = l;
}

// d loss / d lp[i, c] = -scale g_i ((1 - eps) [c == y_i] + eps / C), dx contiguous [N, C];
// g_i at og + i * sg (sg = 0: one value for MEAN/SUM). A 2-D range (c, i): the row's
// label and gradient are uniform along the vectorized c (a 1-D range dividing k by C per
// element ran ~8x slower on POCL: integer division does not vectorize).
__kernel void nll_bwd(int N, int C, __global const int *lab, int olab, int slab, __global const T *g, int og, int sg,
                      const T scale, const T eps, __global T *dx)
{
    int c = get_global_id(0), i = get_global_id(1), k = i * C + c, y = lab[olab + i * slab];
    T t = (y < 0 || y >= C) ? (T)NAN : (c == y ? (T)1 - eps : (T)0) + eps / (T)C;
    dx[k] = -scale * g[og + i * sg] * t;
}
#endif
