/* scaler.c: dynamic loss scaling, with the semantics of PyTorch's GradScaler
 * (torch.amp.GradScaler): the loss is multiplied by a scale before backward, so that
 * 16-bit gradients do not underflow; before the optimizer's step the gradients are
 * checked for inf and NaN (as they are, still scaled) and divided by the scale. A step
 * whose gradients are not all finite is skipped and the scale backs off; after
 * growth_interval finite steps in a row it grows. The scale is kept as float32
 * values, as PyTorch keeps it in a float32 tensor.
 *
 * Whether to skip is decided on the host, so a step reads 4 bytes back (as
 * GradScaler.step does with .item()); everything else stays on the device. */
#include <math.h>
#include <stdlib.h>

#include "optim_impl.h"

struct clg_grad_scaler {
    clg_device *dev;
    clg_grad_scaler_options o;
    double scale;              /* a float32 value */
    int64_t growth_tracker;    /* finite steps in a row since the scale last changed */
    bool unscaled, found_inf;  /* this step's, until clg_grad_scaler_update */
};

/* torch.amp.GradScaler's defaults; fields left 0 take them. */
clg_grad_scaler_options clg_grad_scaler_defaults(void)
{
    return (clg_grad_scaler_options){.init_scale = 65536.0, .growth_factor = 2.0, .backoff_factor = 0.5,
                                     .growth_interval = 2000};
}

clg_grad_scaler *clg_grad_scaler_new(clg_device *dev, const clg_grad_scaler_options *options)
{
    if (!dev) return NULL;
    clg_grad_scaler_options o = options ? *options : (clg_grad_scaler_options){0};
    const clg_grad_scaler_options d = clg_grad_scaler_defaults();
    if (o.init_scale == 0) o.init_scale = d.init_scale;
    if (o.growth_factor == 0) o.growth_factor = d.growth_factor;
    if (o.backoff_factor == 0) o.backoff_factor = d.backoff_factor;
    if (o.growth_interval == 0) o.growth_interval = d.growth_interval;
    if (!(o.init_scale > 0) || !isfinite(o.init_scale) || !(o.growth_factor > 1) || !(o.backoff_factor > 0) ||
        !(o.backoff_factor < 1) || o.growth_interval < 1) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_grad_scaler_new: init_scale %g (> 0), growth_factor %g (> 1), "
                  "backoff_factor %g (in (0, 1)), growth_interval %lld (>= 1)", o.init_scale, o.growth_factor,
                  o.backoff_factor, (long long)o.growth_interval);
        return NULL;
    }
    clg_grad_scaler *s = calloc(1, sizeof *s);
    if (!s) {
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_grad_scaler_new: out of host memory");
        return NULL;
    }
    s->dev = dev;
    s->o = o;
    s->scale = (float)o.init_scale;
    return s;
}

void clg_grad_scaler_free(clg_grad_scaler *s) { free(s); }

clg_tensor *clg_grad_scaler_scale(clg_grad_scaler *s, clg_tensor *loss)
{
    return s && loss ? clg_mul_scalar(loss, s->scale) : NULL;
}

/* The largest |g| over every gradient opt updates, a 0-d tensor (float64 where the
 * device has it, so that no finite float64 gradient overflows; else float32): NaN if
 * any is NaN (NaN wins in clg_max), inf if any is infinite. NULL when no parameter has
 * a gradient (*none) or on error (recorded on the device). */
static clg_tensor *largest(clg_optimizer *opt, bool *none)
{
    clg_dtype wide = clg_device_get_info(opt->dev)->fp64 ? CLG_F64 : CLG_F32;
    clg_tensor **m = malloc((size_t)(opt->n ? opt->n : 1) * sizeof *m), *all = NULL;
    int k = 0;
    bool ok = m != NULL;
    if (!m) clg__fail(opt->dev, CLG_ERR_OUT_OF_MEMORY, "clg_grad_scaler_unscale: out of host memory");
    for (int i = 0; ok && i < opt->n; i++) {
        clg_tensor *g = opt->params[i].p->requires_grad ? clg__grad(opt->params[i].p) : NULL;
        if (!g) continue;
        clg_tensor *a = clg_abs(g);
        if (a && clg__is_half(a->dtype)) a = clg_cast(a, CLG_F32);   /* reductions run in float32 */
        a = clg_max(a, 0, NULL, false);
        if (a && a->dtype != wide) a = clg_cast(a, wide);
        ok = (m[k++] = clg_reshape(a, CLG_SHAPE(1))) != NULL;
    }
    *none = ok && k == 0;
    if (ok && k) all = clg_max(clg_stack(k, m, 0), 0, NULL, false);
    free(m);
    return all;
}

clg_status clg_grad_scaler_unscale(clg_grad_scaler *s, clg_optimizer *opt)
{
    if (!s || !opt) return CLG_ERR_INVALID_ARGUMENT;
    if (s->unscaled)
        return clg__fail(s->dev, CLG_ERR_INVALID_ARGUMENT, "clg_grad_scaler_unscale: already called since the last "
                         "clg_grad_scaler_update");
    clg_scope_begin(s->dev);
    clg_no_grad_begin(s->dev);
    bool none;
    clg_tensor *big = largest(opt, &none);
    double v = 0;
    clg_status st = none ? CLG_OK : big ? clg_tensor_item(big, &v) : clg_device_last_status(s->dev);
    /* 1 / scale as float32, as PyTorch's inv_scale = scale.double().reciprocal().float() */
    double inv = (float)(1.0 / s->scale);
    for (int i = 0; st == CLG_OK && i < opt->n; i++) {
        clg_tensor *g = opt->params[i].p->requires_grad ? clg__grad(opt->params[i].p) : NULL;
        if (g) st = clg_scale_(g, inv);
    }
    clg_no_grad_end(s->dev);
    clg_scope_end(s->dev);
    if (st != CLG_OK) return st;
    s->unscaled = true;
    s->found_inf = !none && !isfinite(v);
    return CLG_OK;
}

clg_status clg_grad_scaler_step(clg_grad_scaler *s, clg_optimizer *opt, bool *stepped)
{
    if (stepped) *stepped = false;
    if (!s || !opt) return CLG_ERR_INVALID_ARGUMENT;
    clg_status st = s->unscaled ? CLG_OK : clg_grad_scaler_unscale(s, opt);
    if (st != CLG_OK || s->found_inf) return st;
    st = clg_optimizer_step(opt);
    if (st == CLG_OK && stepped) *stepped = true;
    return st;
}

clg_status clg_grad_scaler_update(clg_grad_scaler *s)
{
    if (!s) return CLG_ERR_INVALID_ARGUMENT;
    if (s->found_inf) {
        s->scale = (float)(s->scale * s->o.backoff_factor);
        s->growth_tracker = 0;
    } else if (++s->growth_tracker == s->o.growth_interval) {
        double grown = (float)(s->scale * s->o.growth_factor);
        if (isfinite(grown)) s->scale = grown;   /* PyTorch does not grow into infinity */
        s->growth_tracker = 0;
    }
    s->unscaled = s->found_inf = false;
    return CLG_OK;
}

double clg_grad_scaler_get_scale(const clg_grad_scaler *s) { return s ? s->scale : NAN; }
int64_t clg_grad_scaler_growth_tracker(const clg_grad_scaler *s) { return s ? s->growth_tracker : 0; }
bool clg_grad_scaler_found_inf(const clg_grad_scaler *s) { return s && s->found_inf; }

clg_status clg_grad_scaler_set_state(clg_grad_scaler *s, double scale, int64_t growth_tracker)
{
    if (!s) return CLG_ERR_INVALID_ARGUMENT;
    if (!(scale > 0) || !isfinite(scale) || growth_tracker < 0 || growth_tracker >= s->o.growth_interval)
        return clg__fail(s->dev, CLG_ERR_INVALID_ARGUMENT, "clg_grad_scaler_set_state: scale %g (> 0, finite), "
                         "growth tracker %lld (in [0, %lld))", scale, (long long)growth_tracker,
                         (long long)s->o.growth_interval);
    s->scale = (float)scale;
    s->growth_tracker = growth_tracker;
    return CLG_OK;
}
