/* scaler.c: dynamic loss scaling, with the semantics of PyTorch's GradScaler
 * (torch.amp.GradScaler): the loss is multiplied by a scale before backward, so that
 * 16-bit gradients do not underflow; before the optimizer's step the gradients are
 * checked for inf and NaN (as they are, still scaled) and divided by the scale. A step
 * whose gradients are not all finite is skipped and the scale backs off; after
 * growth_interval finite steps in a row it grows. The scale is kept as float32
 * values, as PyTorch keeps it in a float32 tensor.
 *
 * As on CUDA, the state lives on the device (cl_kernels/scaler.cl): the scale and its
 * inverse, found_inf and the growth tracker. Unscaling sets found_inf there, the
 * optimizer skips there (device_steps.c) and update applies PyTorch's rule there, so a
 * step reads nothing back: deciding on the host made the queue drain every step. The
 * getters read the device when called. */
#include <math.h>
#include <stdlib.h>

#include "optim_impl.h"

struct clg_grad_scaler {
    clg_device *dev;
    clg_grad_scaler_options o;
    clg_tensor *st;    /* float32 [2]: the scale, 1 / scale */
    clg_tensor *fl;    /* int32 [2]: found_inf, the growth tracker (clean steps since the scale last changed) */
    bool unscaled;     /* this step's, until clg_grad_scaler_update */
};

/* torch.amp.GradScaler's defaults; fields left 0 take them. */
clg_grad_scaler_options clg_grad_scaler_defaults(void)
{
    return (clg_grad_scaler_options){.init_scale = 65536.0, .growth_factor = 2.0, .backoff_factor = 0.5,
                                     .growth_interval = 2000};
}

/* Write the scale (with its inverse, as PyTorch's scale.double().reciprocal().float())
 * and the growth tracker; found_inf is left as it is. */
static clg_status write_state(clg_grad_scaler *s, double scale, int64_t tracker)
{
    float v[2] = {(float)scale, (float)(1.0 / (float)scale)};
    int32_t t = (int32_t)tracker;
    clg_status st = clg__write(s->dev, s->st->buf, 0, v, sizeof v);
    return st ? st : clg__write(s->dev, s->fl->buf, sizeof t, &t, sizeof t);
}

/* The state tensors, outside every scope and capture (made once, as by a step before). */
static clg_status make_state(void *data)
{
    clg_grad_scaler *s = data;
    int32_t zero[2] = {0, 0};
    if (!(s->st = clg__tensor_new(s->dev, CLG_F32, CLG_SHAPE(2)))) return s->dev->status;
    clg__tensor_unscope(s->st);
    if (!(s->fl = clg__tensor_new(s->dev, CLG_I32, CLG_SHAPE(2)))) return s->dev->status;
    clg__tensor_unscope(s->fl);
    clg_status st = clg__write(s->dev, s->fl->buf, 0, zero, sizeof zero);
    return st ? st : write_state(s, s->o.init_scale, 0);
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
    /* the tracker is an int32 on the device, as PyTorch's */
    if (!(o.init_scale > 0) || !isfinite(o.init_scale) || !(o.growth_factor > 1) || !(o.backoff_factor > 0) ||
        !(o.backoff_factor < 1) || o.growth_interval < 1 || o.growth_interval > INT32_MAX) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_grad_scaler_new: init_scale %g (> 0), growth_factor %g (> 1), "
                  "backoff_factor %g (in (0, 1)), growth_interval %lld (in [1, 2^31))", o.init_scale, o.growth_factor,
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
    if (clg__uncaptured(dev, make_state, s) != CLG_OK) {
        clg_grad_scaler_free(s);
        return NULL;
    }
    return s;
}

void clg_grad_scaler_free(clg_grad_scaler *s)
{
    if (!s) return;
    clg__tensor_release(s->st);
    clg__tensor_release(s->fl);
    free(s);
}

/* loss * scale, the scale read on the device: a 0-d view of st[0]. A 16-bit loss is
 * multiplied in float32 (and stays float32, as PyTorch's product with its float32
 * scale), so that the scale itself cannot overflow float16. */
clg_tensor *clg_grad_scaler_scale(clg_grad_scaler *s, clg_tensor *loss)
{
    if (!s || !loss) return NULL;
    static const int64_t none[1] = {1};
    clg_tensor *scale = clg__tensor_view(s->st, 0, none, none, 0);
    if (clg__is_half(loss->dtype)) loss = clg_cast(loss, CLG_F32);
    else if (scale && loss->dtype != CLG_F32) scale = clg_cast(scale, loss->dtype);
    return clg_mul(loss, scale);
}

/* g *= 1 / scale and found_inf |= any g not finite: one launch for the gradient of
 * parameter i (contiguous, as the optimizer's check needs it too). */
static clg_status unscale_one(clg_grad_scaler *s, int i, clg_tensor *g)
{
    if (!clg_tensor_is_contiguous(g) || !clg__is_float(g->dtype) || g->offset + g->numel > INT32_MAX)
        return clg__fail(s->dev, CLG_ERR_SHAPE, "clg_grad_scaler_unscale: the gradient %s of parameter %d is not "
                         "contiguous float32 or float64 under 2^31 elements", CLG_DESC(g), i);
    if (g->numel == 0) return CLG_OK;
    clg_kernel *k = clg__kernel_get(s->dev, "scaler", clg__dtype_options(g->dtype), "scaler_unscale");
    if (!k) return s->dev->status;
    clg_arg a[] = {CLG_ARG_I(g->numel), CLG_ARG_B(g->buf), CLG_ARG_I(g->offset), CLG_ARG_B(s->st->buf),
                   CLG_ARG_I(0),        CLG_ARG_B(s->fl->buf), CLG_ARG_I(0)};
    return clg__launch_1d(s->dev, k, a, 7, (size_t)g->numel);
}

clg_status clg_grad_scaler_unscale(clg_grad_scaler *s, clg_optimizer *opt)
{
    if (!s || !opt) return CLG_ERR_INVALID_ARGUMENT;
    if (s->unscaled)
        return clg__fail(s->dev, CLG_ERR_INVALID_ARGUMENT, "clg_grad_scaler_unscale: already called since the last "
                         "clg_grad_scaler_update");
    clg_status st = CLG_OK;
    for (int i = 0; st == CLG_OK && i < opt->n; i++) {
        clg_tensor *p = opt->params[i].p;
        if (!p->requires_grad || !p->grad) continue;
        clg_tensor *g = clg__grad(p);   /* a lazily zeroed gradient is filled here */
        st = g ? unscale_one(s, i, g) : s->dev->status;
    }
    if (st != CLG_OK) return st;
    s->unscaled = true;
    return CLG_OK;
}

clg_status clg_grad_scaler_step(clg_grad_scaler *s, clg_optimizer *opt, bool *stepped)
{
    if (stepped) *stepped = false;
    if (!s || !opt) return CLG_ERR_INVALID_ARGUMENT;
    clg_status st = s->unscaled ? CLG_OK : clg_grad_scaler_unscale(s, opt);
    if (st == CLG_OK) st = clg__optimizer_step_guarded(opt, s->fl);
    int32_t found;
    if (st == CLG_OK && stepped && (st = clg__read(s->dev, s->fl->buf, 0, &found, sizeof found)) == CLG_OK)
        *stepped = found == 0;   /* the one read, and only when asked */
    return st;
}

clg_status clg_grad_scaler_update(clg_grad_scaler *s)
{
    if (!s) return CLG_ERR_INVALID_ARGUMENT;
    clg_kernel *k = clg__kernel_get(s->dev, "scaler", clg__dtype_options(CLG_F32), "scaler_update");
    if (!k) return s->dev->status;
    /* the factors in double, or as float hi + lo without it (scaler.cl) */
    bool fp64 = clg_device_get_info(s->dev)->fp64;
    clg_dtype w = fp64 ? CLG_F64 : CLG_F32;
    double g = s->o.growth_factor, b = s->o.backoff_factor;
    clg_arg a[] = {CLG_ARG_B(s->st->buf), CLG_ARG_I(0), CLG_ARG_B(s->fl->buf), CLG_ARG_I(0),
                   clg__arg_scalar(w, g), clg__arg_scalar(w, b), CLG_ARG_F(fp64 ? 0 : g - (float)g),
                   CLG_ARG_F(fp64 ? 0 : b - (float)b), CLG_ARG_I(s->o.growth_interval)};
    clg_status st = clg__launch_1d(s->dev, k, a, 9, 1);
    if (st == CLG_OK) s->unscaled = false;
    return st;
}

/* The getters read the device (and so wait for the queued steps). */
double clg_grad_scaler_get_scale(const clg_grad_scaler *s)
{
    float v;
    return s && clg__read(s->dev, s->st->buf, 0, &v, sizeof v) == CLG_OK ? v : NAN;
}

int64_t clg_grad_scaler_growth_tracker(const clg_grad_scaler *s)
{
    int32_t v;
    return s && clg__read(s->dev, s->fl->buf, sizeof v, &v, sizeof v) == CLG_OK ? v : -1;
}

bool clg_grad_scaler_found_inf(const clg_grad_scaler *s)
{
    int32_t v;
    return s && clg__read(s->dev, s->fl->buf, 0, &v, sizeof v) == CLG_OK && v != 0;
}

clg_status clg_grad_scaler_set_state(clg_grad_scaler *s, double scale, int64_t growth_tracker)
{
    if (!s) return CLG_ERR_INVALID_ARGUMENT;
    if (!(scale > 0) || !isfinite(scale) || growth_tracker < 0 || growth_tracker >= s->o.growth_interval)
        return clg__fail(s->dev, CLG_ERR_INVALID_ARGUMENT, "clg_grad_scaler_set_state: scale %g (> 0, finite), "
                         "growth tracker %lld (in [0, %lld))", scale, (long long)growth_tracker,
                         (long long)s->o.growth_interval);
    return write_state(s, scale, growth_tracker);
}
