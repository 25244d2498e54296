/* init.c: torch.nn.init's initialisers, in place on existing float tensors, drawn from
 * the device's seeded generator (clg_manual_seed), with PyTorch's fans and gains. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"

/* <math.h>'s M_SQRT2 and M_2_SQRTPI are not ISO C */
#define SQRT2 1.41421356237309504880
#define TWO_OVER_SQRTPI 1.12837916709551257390

/* ---- argument checks ------------------------------------------------------------------------ */

/* t exists and holds floats of some kind; else the error names fn (on the thread's last
 * error for a NULL tensor: there is no device to hold it). */
static clg_status check_tensor(const char *fn, const clg_tensor *t)
{
    if (!t) return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: the tensor is NULL", fn);
    if (clg__is_float(t->dtype) || clg__is_half(t->dtype)) return CLG_OK;
    return clg__fail(t->dev, CLG_ERR_DTYPE, "%s: needs a float tensor (float32, float64, float16, bfloat16), got %s",
                     fn, CLG_DESC(t));
}

static clg_status bad_arg(const char *fn, const clg_tensor *t, const char *what, double v0, double v1)
{
    return clg__fail(t->dev, CLG_ERR_INVALID_ARGUMENT, "%s: %s (%g, %g) for %s", fn, what, v0, v1, CLG_DESC(t));
}

/* PyTorch's _calculate_fan_in_and_fan_out: dim 1 is the inputs, dim 0 the outputs, and
 * each is multiplied by the receptive field (the product of the axes after the first two:
 * a conv weight [out, in, kh, kw] has fan_in in * kh * kw). Fewer than 2 axes have no fans. */
static clg_status fans(const char *fn, const clg_tensor *t, int64_t *fan_in, int64_t *fan_out)
{
    clg_status st = check_tensor(fn, t);
    if (st != CLG_OK) return st;
    if (t->ndim < 2)
        return clg__fail(t->dev, CLG_ERR_SHAPE, "%s: fan in and fan out need at least 2 axes, got %s", fn,
                         CLG_DESC(t));
    int64_t field = 1;
    for (int d = 2; d < t->ndim; d++) field *= t->shape[d];
    if (fan_in) *fan_in = t->shape[1] * field;
    if (fan_out) *fan_out = t->shape[0] * field;
    return CLG_OK;
}

clg_status clg_init_calculate_fans(const clg_tensor *t, int64_t *fan_in, int64_t *fan_out)
{
    return fans("clg_init_calculate_fans", t, fan_in, fan_out);
}

double clg_init_calculate_gain(clg_nonlinearity nl, double param)
{
    switch (nl) {
    case CLG_GAIN_LINEAR:
    case CLG_GAIN_CONV:
    case CLG_GAIN_SIGMOID: return 1.0;
    case CLG_GAIN_TANH: return 5.0 / 3;
    case CLG_GAIN_RELU: return sqrt(2.0);
    case CLG_GAIN_LEAKY_RELU:
        if (isfinite(param)) return sqrt(2.0 / (1 + param * param));
        clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_init_calculate_gain: leaky_relu slope %g", param);
        return NAN;
    case CLG_GAIN_SELU: return 0.75;
    }
    clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_init_calculate_gain: unknown nonlinearity %d", (int)nl);
    return NAN;
}

/* ---- drawing into t ------------------------------------------------------------------------- */

/* A failure inside (out of device memory, an expanded view that cannot be written)
 * reported with the initialiser's name in front of the op's message. */
static clg_status named_failure(const char *fn, clg_device *dev)
{
    char msg[CLG_ERROR_MAX];
    snprintf(msg, sizeof msg, "%s", clg_device_error(dev));
    return clg__fail(dev, dev->status != CLG_OK ? dev->status : CLG_ERR_INVALID_ARGUMENT, "%s: %s", fn, msg);
}

/* src's values into t outside autograd (t may be a parameter that requires a gradient). */
static clg_status write_into(clg_tensor *t, const clg_tensor *src)
{
    clg_no_grad_begin(t->dev);
    clg_status st = src ? clg_copy_(t, src) : t->dev->status;
    clg_no_grad_end(t->dev);
    return st;
}

/* Uniform [p0, p1) or normal (mean p0, std p1) numbers of t's shape from the generator,
 * in the type kernels compute t's dtype in (16-bit floats are drawn in float32 and
 * rounded once by the copy), written into t; the draw lives in a scope of its own. */
static clg_status draw(const char *fn, clg_tensor *t, bool normal, double p0, double p1)
{
    if (t->numel == 0) return CLG_OK;   /* nothing to draw (PyTorch: a no-op) */
    clg_device *dev = t->dev;
    clg_dtype cd = clg__compute_dtype(t->dtype);
    clg_scope_begin(dev);
    clg_tensor *r = normal ? clg_randn(dev, cd, t->ndim, t->shape, p0, p1)
                           : clg_rand(dev, cd, t->ndim, t->shape, p0, p1);
    clg_status st = write_into(t, r);
    clg_scope_end(dev);
    return st == CLG_OK ? CLG_OK : named_failure(fn, dev);
}

clg_status clg_init_uniform(clg_tensor *t, double a, double b)
{
    const char *fn = "clg_init_uniform";
    clg_status st = check_tensor(fn, t);
    if (st != CLG_OK) return st;
    if (!isfinite(a) || !isfinite(b) || !(a < b)) return bad_arg(fn, t, "needs finite bounds a < b, got", a, b);
    return draw(fn, t, false, a, b);
}

clg_status clg_init_normal(clg_tensor *t, double mean, double std)
{
    const char *fn = "clg_init_normal";
    clg_status st = check_tensor(fn, t);
    if (st != CLG_OK) return st;
    if (!isfinite(mean) || !isfinite(std) || std < 0)
        return bad_arg(fn, t, "needs a finite mean and a finite std >= 0, got", mean, std);
    return draw(fn, t, true, mean, std);
}

/* value everywhere; fn names the initialiser the caller called (zeros, ones, constant). */
static clg_status constant(const char *fn, clg_tensor *t, double value)
{
    clg_status st = check_tensor(fn, t);
    if (st != CLG_OK) return st;
    if (t->numel == 0) return CLG_OK;
    clg_no_grad_begin(t->dev);
    st = clg_fill_(t, value);
    clg_no_grad_end(t->dev);
    return st == CLG_OK ? CLG_OK : named_failure(fn, t->dev);
}

clg_status clg_init_constant(clg_tensor *t, double value) { return constant("clg_init_constant", t, value); }
clg_status clg_init_zeros(clg_tensor *t) { return constant("clg_init_zeros", t, 0.0); }
clg_status clg_init_ones(clg_tensor *t) { return constant("clg_init_ones", t, 1.0); }

/* ---- truncated normal ------------------------------------------------------------------------ */

/* erf^-1(y) for y in (-1, 1): Giles' single-precision approximation ("Approximating the
 * erfinv function", 2010), then two Newton steps on erf(x) = y, which take it to double
 * precision (erf' = 2/sqrt(pi) exp(-x^2) is smooth and large enough over the range the
 * uniform draws reach). */
static double erfinv(double y)
{
    double w = -log((1.0 - y) * (1.0 + y)), p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    double x = p * y;
    for (int i = 0; i < 2; i++) x -= (erf(x) - y) / (TWO_OVER_SQRTPI * exp(-x * x));
    return x;
}

static double norm_cdf(double x) { return (1.0 + erf(x / SQRT2)) / 2; }

/* PyTorch's trunc_normal_: u uniform in [2 Phi(alpha) - 1, 2 Phi(beta) - 1), then
 * mean + std sqrt(2) erfinv(u), clamped to [a, b] against rounding. The uniform numbers
 * come from the device's generator; the inverse CDF runs on the host in double
 * precision (there is no erfinv kernel, and an initialiser runs once), then the values
 * go back in t's compute dtype. u is kept inside (-1, 1) so that an infinite bound
 * never gives an infinite value. */
static clg_status trunc_normal_draw(const char *fn, clg_tensor *t, double mean, double std, double a, double b)
{
    clg_device *dev = t->dev;
    clg_dtype cd = clg__compute_dtype(t->dtype);
    size_t n = (size_t)t->numel, es = clg_dtype_size(cd);
    void *host = malloc(n * es);
    if (!host) return clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "%s: out of host memory for %s", fn, CLG_DESC(t));
    double lo = 2 * norm_cdf((a - mean) / std) - 1, hi = 2 * norm_cdf((b - mean) / std) - 1;
    clg_scope_begin(dev);
    clg_tensor *u = clg_rand(dev, cd, t->ndim, t->shape, lo, hi);
    clg_status st = u ? clg_tensor_to_host(u, host, n * es) : dev->status;
    for (size_t i = 0; st == CLG_OK && i < n; i++) {
        double v = cd == CLG_F64 ? ((double *)host)[i] : ((float *)host)[i];
        v = fmin(fmax(v, nextafter(-1.0, 0.0)), nextafter(1.0, 0.0));
        v = fmin(fmax(mean + std * SQRT2 * erfinv(v), a), b);
        if (cd == CLG_F64) ((double *)host)[i] = v;
        else ((float *)host)[i] = fminf(fmaxf((float)v, (float)a), (float)b);   /* rounding stays inside */
    }
    if (st == CLG_OK) st = write_into(t, clg_tensor_from_host(dev, cd, t->ndim, t->shape, host));
    clg_scope_end(dev);
    free(host);
    return st == CLG_OK ? CLG_OK : named_failure(fn, dev);
}

clg_status clg_init_trunc_normal(clg_tensor *t, double mean, double std, double a, double b)
{
    const char *fn = "clg_init_trunc_normal";
    clg_status st = check_tensor(fn, t);
    if (st != CLG_OK) return st;
    if (!isfinite(mean) || !isfinite(std) || std < 0)
        return bad_arg(fn, t, "needs a finite mean and a finite std >= 0, got", mean, std);
    if (isnan(a) || isnan(b) || !(a < b)) return bad_arg(fn, t, "needs bounds a < b, got", a, b);
    if (t->numel == 0) return CLG_OK;
    if (std == 0) return constant(fn, t, fmin(fmax(mean, a), b));   /* the distribution's limit */
    return trunc_normal_draw(fn, t, mean, std, a, b);
}

/* ---- fan-based: Glorot (Xavier) and He (Kaiming) ------------------------------------------ */

/* A gain scales a standard deviation: finite and not negative (PyTorch refuses the
 * negative std or the reversed bounds it would give); false with the error recorded. */
static bool gain_ok(const char *fn, const clg_tensor *t, double gain)
{
    if (isfinite(gain) && gain >= 0) return true;
    bad_arg(fn, t, "needs a finite gain >= 0, got", gain, 0);
    return false;
}

/* Xavier: var = gain^2 * 2 / (fan_in + fan_out); uniform on +-sqrt(3) std, which has it. */
static clg_status xavier(const char *fn, clg_tensor *t, double gain, bool normal)
{
    int64_t fi = 0, fo = 0;   /* set by fans on success; GCC 12 -O3 cannot see that */
    clg_status st = fans(fn, t, &fi, &fo);
    if (st != CLG_OK) return st;
    if (!gain_ok(fn, t, gain)) return t->dev->status;
    if (t->numel == 0) return CLG_OK;
    double std = gain * sqrt(2.0 / (double)(fi + fo));
    return normal ? draw(fn, t, true, 0, std) : draw(fn, t, false, -sqrt(3.0) * std, sqrt(3.0) * std);
}

clg_status clg_init_xavier_uniform(clg_tensor *t, double gain)
{
    return xavier("clg_init_xavier_uniform", t, gain, false);
}

clg_status clg_init_xavier_normal(clg_tensor *t, double gain)
{
    return xavier("clg_init_xavier_normal", t, gain, true);
}

/* Kaiming: std = gain / sqrt(fan), the fan chosen by mode, the gain of the nonlinearity
 * (a: leaky_relu's negative slope); uniform on +-sqrt(3) std. */
static clg_status kaiming(const char *fn, clg_tensor *t, double a, clg_fan_mode mode, clg_nonlinearity nl, bool normal)
{
    int64_t fi = 0, fo = 0;
    clg_status st = fans(fn, t, &fi, &fo);
    if (st != CLG_OK) return st;
    if (mode != CLG_FAN_IN && mode != CLG_FAN_OUT)
        return clg__fail(t->dev, CLG_ERR_INVALID_ARGUMENT, "%s: mode %d is neither CLG_FAN_IN nor CLG_FAN_OUT", fn,
                         (int)mode);
    double gain = clg_init_calculate_gain(nl, a);
    if (isnan(gain))
        return clg__fail(t->dev, CLG_ERR_INVALID_ARGUMENT, "%s: nonlinearity %d with a = %g has no gain", fn,
                         (int)nl, a);
    if (t->numel == 0) return CLG_OK;
    double std = gain / sqrt((double)(mode == CLG_FAN_IN ? fi : fo));
    return normal ? draw(fn, t, true, 0, std) : draw(fn, t, false, -sqrt(3.0) * std, sqrt(3.0) * std);
}

clg_status clg_init_kaiming_uniform(clg_tensor *t, double a, clg_fan_mode mode, clg_nonlinearity nl)
{
    return kaiming("clg_init_kaiming_uniform", t, a, mode, nl, false);
}

clg_status clg_init_kaiming_normal(clg_tensor *t, double a, clg_fan_mode mode, clg_nonlinearity nl)
{
    return kaiming("clg_init_kaiming_normal", t, a, mode, nl, true);
}
