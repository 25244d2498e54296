// scaler.cl: dynamic loss scaling's two kernels (src/optim/scaler.c), PyTorch's
// _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_, so that the scale
// and the decision to skip a step stay on the device. Built per gradient dtype (T).
//
// The scaler's state is two small device buffers: st (float) holds the scale at st[0]
// and 1 / scale at st[1]; fl (int) holds found_inf at fl[0] and the growth tracker (the
// clean steps since the scale last changed) at fl[1].

// g *= 1 / scale, over one gradient (n elements from og), and fl[0] = 1 where a value
// was inf or NaN before. Every work-item that finds one writes the same 1: a benign
// race, as PyTorch's CUDA kernel has. The scaled values are multiplied anyway (inf
// and NaN stay what they are), as PyTorch does.
__kernel void scaler_unscale(int n, __global T *g, int og, __global const float *st, int ost, __global int *fl,
                             int ofl)
{
    int i = get_global_id(0);
    T v = g[og + i];
    if (!isfinite(v)) fl[ofl] = 1;
    g[og + i] = v * (T)st[ost + 1];
}

// One work-item: the scale for the next step, PyTorch's rule (_amp_update_scale_):
// after a step that found inf or NaN, scale *= backoff and the tracker restarts; else
// the tracker counts the clean step, and at growth_interval the scale grows by
// growth_factor unless that makes it infinite, and the tracker restarts. found_inf is
// cleared for the next step. PyTorch multiplies the float scale by its double factors
// and rounds to float, and takes 1 / scale as scale.double().reciprocal().float(): in
// double where the device has it; else each factor comes as float hi + lo (the host
// splits it) and the product and the reciprocal are corrected with fma, which gives
// the same float but in rare ties.
#ifdef cl_khr_fp64
typedef double W;
inline float times(float s, W f, float lo)
{
    (void)lo;
    return (float)((W)s * f);
}
inline float reciprocal(float s) { return (float)(1.0 / (double)s); }
#else
typedef float W;
inline float times(float s, W f, float lo)
{
    float p = s * f;
    return p + (fma(s, f, -p) + s * lo);
}
inline float reciprocal(float s)
{
    float r = 1.0f / s;
    return fma(r, fma(-s, r, 1.0f), r);
}
#endif
__kernel void scaler_update(__global float *st, int ost, __global int *fl, int ofl, const W growth_factor,
                            const W backoff_factor, const float growth_lo, const float backoff_lo, int growth_interval)
{
    if (get_global_id(0) != 0) return;
    float scale = st[ost];
    int tracker = fl[ofl + 1];
    if (fl[ofl] != 0) {
        scale = times(scale, backoff_factor, backoff_lo);
        tracker = 0;
    } else if (tracker + 1 == growth_interval) {
        float grown = times(scale, growth_factor, growth_lo);
        scale = isfinite(grown) ? grown : scale;
        tracker = 0;
    } else {
        tracker += 1;
    }
    st[ost] = scale;
    st[ost + 1] = reciprocal(scale);
    fl[ofl] = 0;
    fl[ofl + 1] = tracker;
}
