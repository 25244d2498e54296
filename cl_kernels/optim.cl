// optim.cl: the optimizers' updates (src/optim/), one kernel per parameter per step,
// and the two small kernels of gradient clipping. Built per float dtype (T).
//
// Kernels whose first argument is a count (n, total, N) run over exactly that many
// work-items (clg__launch_1d, launch.c) and have no bounds check: one would keep POCL
// from vectorizing a work-group's loop (the SGD update ran 4x slower with it).
//
// Every tensor is contiguous from its element offset (o*). Scalars that depend only on
// the step count (bias corrections, the decayed rate) come from the host, which knows
// the count, so nothing is read back; after a step a loss scaler guarded, from
// optim_prep on the device (below), which keeps the count there. A state a configuration does not use is bound to
// some buffer but never touched. Weight decay is skipped when 0, as PyTorch does, so
// that a non-finite parameter does not leak NaN into its own gradient.

// A step guarded by a loss scaler (src/optim/device_steps.c, scaler.c) decides on the
// device: optim_prep counts each parameter's steps there and writes, per parameter, three
// W values at sc + osc: skip (a gradient was inf or NaN, or the parameter takes no step),
// then the step-dependent scalars (SGD's first-step flag, Adam's step size and
// sqrt(1 - b2^t), Adagrad's decayed rate). The updates take them when `dev` is set
// (else the host's arguments) and write back the old parameter and state when skip is:
// selects, not branches, and sc is always a real buffer, read unconditionally.
#ifdef cl_khr_fp64
typedef double W;
#else
typedef float W;
#endif

// SGD (torch.optim.SGD): g += wd p; b = g on the parameter's first step, else
// mu b + (1 - dampening) g; g = nesterov ? g + mu b : b; p -= lr g.
__kernel void sgd(int n, __global T *p, int op, __global const T *g, int og, __global T *b, int ob,
                  const T lr, const T mu, const T dampening, const T wd, int nesterov, int first,
                  __global const W *sc, int osc, int dev)
{
    int i = get_global_id(0);
    W sk = sc[osc], f = sc[osc + 1];
    int skip = dev && sk != 0;
    first = dev ? f != 0 : first;
    T pi = p[op + i], gi = g[og + i];
    if (wd != 0) gi += wd * pi;
    if (mu != 0) {
        T b0 = b[ob + i];
        T bi = first ? gi : mu * b0 + (1 - dampening) * gi;
        b[ob + i] = skip ? b0 : bi;
        gi = nesterov ? gi + mu * bi : bi;
    }
    p[op + i] = skip ? pi : pi - lr * gi;
}

// Adam and AdamW (torch.optim.Adam / AdamW), in PyTorch's arrangement:
//   p *= decay (AdamW's 1 - lr wd; 1 for Adam);  g += wd p (Adam's L2; 0 for AdamW)
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= step_size m / (sqrt(v) / bc2_sqrt + eps), step_size = lr / (1 - b1^t),
//   bc2_sqrt = sqrt(1 - b2^t): the same as lr mhat / (sqrt(vhat) + eps).
__kernel void adam(int n, __global T *p, int op, __global const T *g, int og, __global T *m, int om,
                   __global T *v, int ov, const T b1, const T b2, const T step_size, const T bc2_sqrt,
                   const T eps, const T wd, const T decay, __global const W *sc, int osc, int dev)
{
    int i = get_global_id(0);
    W sk = sc[osc], s1 = sc[osc + 1], s2 = sc[osc + 2];
    int skip = dev && sk != 0;
    T size = dev ? (T)s1 : step_size, bc2 = dev ? (T)s2 : bc2_sqrt;
    T pi = p[op + i], gi = g[og + i], m0 = m[om + i], v0 = v[ov + i];
    if (wd != 0) gi += wd * pi;
    T mi = b1 * m0 + (1 - b1) * gi;
    T vi = b2 * v0 + (1 - b2) * gi * gi;
    m[om + i] = skip ? m0 : mi;
    v[ov + i] = skip ? v0 : vi;
    p[op + i] = skip ? pi : pi * decay - size * mi / (sqrt(vi) / bc2 + eps);
}

// RMSprop (torch.optim.RMSprop): g += wd p; v = a v + (1 - a) g^2; centered:
// ga = a ga + (1 - a) g and the denominator uses v - ga^2; d = sqrt(.) + eps;
// momentum: b = mu b + g / d, p -= lr b; else p -= lr g / d.
__kernel void rmsprop(int n, __global T *p, int op, __global const T *g, int og, __global T *sq, int osq,
                      __global T *b, int ob, __global T *ga, int oga, const T lr, const T alpha, const T eps,
                      const T wd, const T mu, int centered, __global const W *sc, int osc, int dev)
{
    int i = get_global_id(0);
    W sk = sc[osc];
    int skip = dev && sk != 0;
    T pi = p[op + i], gi = g[og + i], s0 = sq[osq + i];
    if (wd != 0) gi += wd * pi;
    T vi = alpha * s0 + (1 - alpha) * gi * gi;
    sq[osq + i] = skip ? s0 : vi;
    if (centered) {
        T a0 = ga[oga + i];
        T ai = alpha * a0 + (1 - alpha) * gi;
        ga[oga + i] = skip ? a0 : ai;
        vi -= ai * ai;
    }
    T d = sqrt(vi) + eps;
    if (mu > 0) {
        T b0 = b[ob + i];
        T bi = mu * b0 + gi / d;
        b[ob + i] = skip ? b0 : bi;
        p[op + i] = skip ? pi : pi - lr * bi;
    } else {
        p[op + i] = skip ? pi : pi - lr * gi / d;
    }
}

// Adagrad (torch.optim.Adagrad): g += wd p; s += g^2; p -= clr g / (sqrt(s) + eps),
// with clr = lr / (1 + (t - 1) lr_decay) from the host.
__kernel void adagrad(int n, __global T *p, int op, __global const T *g, int og, __global T *s, int os,
                      const T clr, const T eps, const T wd, __global const W *sc, int osc, int dev)
{
    int i = get_global_id(0);
    W sk = sc[osc], s1 = sc[osc + 1];
    int skip = dev && sk != 0;
    T rate = dev ? (T)s1 : clr;
    T pi = p[op + i], gi = g[og + i], s0 = s[os + i];
    if (wd != 0) gi += wd * pi;
    T si = s0 + gi * gi;
    s[os + i] = skip ? s0 : si;
    p[op + i] = skip ? pi : pi - rate * gi / (sqrt(si) + eps);
}

// The device's step counts of a guarded step (see the top), one work-item per
// parameter: steps[i] counts parameter i's updates and steps[n] the optimizer's steps;
// take[i] says whether parameter i has a gradient this step, found (a loss scaler's
// flag, read when use_found) whether to skip the whole step. kind: 0 SGD, 1 Adam(W),
// 2 RMSprop, 3 Adagrad (src/optim/optim_impl.h's order). The scalars are computed in W,
// as the host computes them in double.
__kernel void optim_prep(int n, __global int *steps, int ost, __global const int *take, int otk,
                         __global const int *found, int of, int use_found, __global W *sc, int osc, int kind,
                         const W lr, const W b1, const W b2, const W lr_decay)
{
    int i = get_global_id(0);
    int inf = use_found && found[of] != 0, skip = inf || !take[otk + i];
    int t = steps[ost + i] + (skip ? 0 : 1);
    steps[ost + i] = t;
    if (i == 0 && !inf) steps[ost + n] += 1;
    W tw = (W)t, s1 = 0, s2 = 0;
    if (kind == 0) s1 = t == 1;
    if (kind == 1) {
        s1 = lr / (1 - pow(b1, tw));
        s2 = sqrt(1 - pow(b2, tw));
    }
    if (kind == 3) s1 = lr / (1 + (tw - 1) * lr_decay);
    sc[osc + 3 * i] = skip;
    sc[osc + 3 * i + 1] = s1;
    sc[osc + 3 * i + 2] = s2;
}

// Clipping by global norm, one work item: norm = sqrt(sum of squares) and
// scale = min(1, max_norm / (norm + 1e-6)), as torch.nn.utils.clip_grad_norm_. A NaN
// coefficient stays NaN (as torch.clamp keeps it), so a non-finite norm is visible.
#ifdef CLG_F64
#define CLG_CLIP_EPS 1e-6
#else
#define CLG_CLIP_EPS 1e-6f
#endif
__kernel void clip_coef(__global const T *sumsq, int os, __global T *norm, int on, __global T *scale, int oc,
                        const T max_norm)
{
    if (get_global_id(0) != 0) return;
    T nrm = sqrt(sumsq[os]);
    T c = max_norm / (nrm + CLG_CLIP_EPS);
    norm[on] = nrm;
    scale[oc] = c > 1 ? (T)1 : c;
}

// y *= s, s a one-element device tensor: the clipping of each gradient in place.
__kernel void scale_by(int n, __global T *y, int oy, __global const T *s, int os)
{
    int i = get_global_id(0);
    if (i < n) y[oy + i] *= s[os];
}
