// optim.cl: the optimizers' updates (src/optim/), one kernel per parameter per step,
// and the two small kernels of gradient clipping. Built per float dtype (T).
//
// Kernels whose first argument is a count (n, total, N) run over exactly that many
// work-items (clg__launch_1d, launch.c) and have no bounds check: one would keep POCL
// from vectorizing a work-group's loop (the SGD update ran 4x slower with it).
//
// Every tensor is contiguous from its element offset (o*). Scalars that depend only on
// the step count (bias corrections, the decayed rate) come from the host, which knows
// the count, so nothing is read back. A state a configuration does not use is bound to
// some buffer but never touched. Weight decay is skipped when 0, as PyTorch does, so
// that a non-finite parameter does not leak NaN into its own gradient.

// SGD (torch.optim.SGD): g += wd p; b = g on the parameter's first step, else
// mu b + (1 - dampening) g; g = nesterov ? g + mu b : b; p -= lr g.
__kernel void sgd(int n, __global T *p, int op, __global const T *g, int og, __global T *b, int ob,
                  const T lr, const T mu, const T dampening, const T wd, int nesterov, int first)
{
    int i = get_global_id(0);
    T pi = p[op + i], gi = g[og + i];
    if (wd != 0) gi += wd * pi;
    if (mu != 0) {
        T bi = first ? gi : mu * b[ob + i] + (1 - dampening) * gi;
        b[ob + i] = bi;
        gi = nesterov ? gi + mu * bi : bi;
    }
    p[op + i] = pi - lr * gi;
}

// Adam and AdamW (torch.optim.Adam / AdamW), in PyTorch's arrangement:
//   p *= decay (AdamW's 1 - lr wd; 1 for Adam);  g += wd p (Adam's L2; 0 for AdamW)
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= step_size m / (sqrt(v) / bc2_sqrt + eps), step_size = lr / (1 - b1^t),
//   bc2_sqrt = sqrt(1 - b2^t): the same as lr mhat / (sqrt(vhat) + eps).
__kernel void adam(int n, __global T *p, int op, __global const T *g, int og, __global T *m, int om,
                   __global T *v, int ov, const T b1, const T b2, const T step_size, const T bc2_sqrt,
                   const T eps, const T wd, const T decay)
{
    int i = get_global_id(0);
    T pi = p[op + i], gi = g[og + i];
    if (wd != 0) gi += wd * pi;
    T mi = b1 * m[om + i] + (1 - b1) * gi;
    T vi = b2 * v[ov + i] + (1 - b2) * gi * gi;
    m[om + i] = mi;
    v[ov + i] = vi;
    p[op + i] = pi * decay - step_size * mi / (sqrt(vi) / bc2_sqrt + eps);
}

// RMSprop (torch.optim.RMSprop): g += wd p; v = a v + (1 - a) g^2; centered:
// ga = a ga + (1 - a) g and the denominator uses v - ga^2; d = sqrt(.) + eps;
// momentum: b = mu b + g / d, p -= lr b; else p -= lr g / d.
__kernel void rmsprop(int n, __global T *p, int op, __global const T *g, int og, __global T *sq, int osq,
                      __global T *b, int ob, __global T *ga, int oga, const T lr, const T alpha, const T eps,
                      const T wd, const T mu, int centered)
{
    int i = get_global_id(0);
    T pi = p[op + i], gi = g[og + i];
    if (wd != 0) gi += wd * pi;
    T vi = alpha * sq[osq + i] + (1 - alpha) * gi * gi;
    sq[osq + i] = vi;
    if (centered) {
        T ai = alpha * ga[oga + i] + (1 - alpha) * gi;
        ga[oga + i] = ai;
        vi -= ai * ai;
    }
    T d = sqrt(vi) + eps;
    if (mu > 0) {
        T bi = mu * b[ob + i] + gi / d;
        b[ob + i] = bi;
        p[op + i] = pi - lr * bi;
    } else {
        p[op + i] = pi - lr * gi / d;
    }
}

// Adagrad (torch.optim.Adagrad): g += wd p; s += g^2; p -= clr g / (sqrt(s) + eps),
// with clr = lr / (1 + (t - 1) lr_decay) from the host.
__kernel void adagrad(int n, __global T *p, int op, __global const T *g, int og, __global T *s, int os,
                      const T clr, const T eps, const T wd)
{
    int i = get_global_id(0);
    T pi = p[op + i], gi = g[og + i];
    if (wd != 0) gi += wd * pi;
    T si = s[os + i] + gi * gi;
    s[os + i] = si;
    p[op + i] = pi - clr * gi / (sqrt(si) + eps);
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
