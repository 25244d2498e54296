// unary.cl: elementwise ops of one operand and activations (src/tensor/unary.c), with
// their backward kernels. Float types only. Forward kernels read x (and scalars s0, s1);
// a backward kernel `<op>_grad` reads x = the op's input or output (whichever its
// derivative is a function of) and z = the gradient of the output, so that each
// backward is a single kernel. NaN propagates as IEEE says: comparisons with NaN are
// false, so every select below is written to fall through to x (or to g * NaN).

// logical_not: 1 where x is 0, else 0 (NaN is true, so gives 0); int32 too.
CLG_ELEMENTWISE1(logical_not, (T)(x == (T)0))

#ifndef CLG_I32

CLG_ELEMENTWISE1(neg, -x)
CLG_ELEMENTWISE1(exp, exp(x))
CLG_FLAT16_1(exp, exp(x), 1)
CLG_ELEMENTWISE1(log, clg_log(x))   // common.cl: vectorizable for float32
CLG_ELEMENTWISE1(sqrt, sqrt(x))
CLG_ELEMENTWISE1(abs, fabs(x))
// clamp(x, lo = s0, hi = s1) = min(max(x, lo), hi), as PyTorch: hi wins when lo > hi.
// fmin/fmax would turn NaN into a bound; the selects keep it.
inline T clg_clamp(T x, T lo, T hi)
{
    T t = x < lo ? lo : x;
    return t > hi ? hi : t;
}
CLG_ELEMENTWISE1(clamp, clg_clamp(x, s0, s1))

// Activations (relu and its gradient: relu.cl, a program of their own).
CLG_ELEMENTWISE1(leaky_relu, x < (T)0 ? x * s0 : x)
// Both branches only ever exponentiate a non-positive number, so neither overflows:
// sigmoid(+-1e4) is exactly 1 and 0.
// One exp of -|x| and a select, no branch (POCL vectorizes selects, not branches).
inline T clg_sigmoid(T x)
{
    T e = exp(-fabs(x)), d = (T)1 + e;   // NaN stays NaN either way
    return x >= (T)0 ? (T)1 / d : e / d;
}
CLG_ELEMENTWISE1(sigmoid, clg_sigmoid(x))
// sigmoid and expm1 (common.cl's clg_expm1f) as expressions that a float and a float16
// both take (?: selects per lane on vectors): the flat16 kernels' math, SLEEF's vector
// exp on 16 lanes, the one-element math for the tail.
#define CLG_SIGMOID_E(x, e) ((x) >= 0.0f ? 1.0f / (1.0f + (e)) : (e) / (1.0f + (e)))
#define CLG_EXPM1_POLY(x)                                                                    \
    ((x) + (x) * ((x) * ((((((((1.0f / 3628800.0f * (x) + 1.0f / 362880.0f) * (x) + 1.0f / 40320.0f) * (x) + \
                              1.0f / 5040.0f) * (x) + 1.0f / 720.0f) * (x) + 1.0f / 120.0f) * (x) +        \
                           1.0f / 24.0f) * (x) + 1.0f / 6.0f) * (x) + 0.5f)))
#define CLG_EXPM1_E(x) (fabs(x) < 0.7f ? CLG_EXPM1_POLY(x) : exp(x) - 1.0f)
CLG_FLAT16_1(sigmoid, CLG_SIGMOID_E(x, exp(-fabs(x))), 1)
// Past |x| = 9.01 (float) or 19.06 (double) tanh(x) rounds to +-1, but some libms
// (POCL's float tanh) return 1 - ulp there: saturate exactly, as PyTorch does.
#ifdef CLG_F64
#define CLG_TANH_SAT ((T)19.5)
#else
#define CLG_TANH_SAT ((T)9.5)
#endif
#ifdef CLG_F32
// float32 tanh and gelu_tanh (forward and gradient) as the flat16 kernels compute them on
// vectors: libm's tanh is called one element at a time (tanh [2048, 1024] took 7.6 ms
// against PyTorch's 1.6 on AVX2); the exp inside clg_expm1 and the sigmoid run on SLEEF's
// vectors. The one-element float32 tanh computes the same, so that every layout gives
// the same values to the ulp of exp (its gradient 1 - y^2 magnifies tanh's ulps 30-fold
// near |y| = 0.97). tanh(x) = -m / (2 + m) with x's sign, m = expm1(-2|x|): no
// cancellation near 0; m rounds to -1 past |x| = 9.01, so it saturates to +-1 exactly;
// NaN stays NaN.
#define CLG_TANH16(TY)                                                                      \
    __attribute__((overloadable)) inline TY clg_tanh16(TY x)                                \
    {                                                                                       \
        TY m = CLG_EXPM1_E(-2.0f * fabs(x));                                                \
        return copysign(-m / (2.0f + m), x);                                                \
    }                                                                                       \
    /* sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): gelu_tanh's (1 + tanh(u)) / 2 */      \
    __attribute__((overloadable)) inline TY clg_gelu_s16(TY x)                              \
    {                                                                                       \
        TY u2 = 2.0f * 0.79788456080286535588f * (x + 0.044715f * x * x * x);               \
        return CLG_SIGMOID_E(u2, exp(-fabs(u2)));                                           \
    }                                                                                       \
    __attribute__((overloadable)) inline TY clg_gelu_tanh16(TY x) { return x * clg_gelu_s16(x); } \
    __attribute__((overloadable)) inline TY clg_gelu_tanh_d16(TY x)                         \
    {                                                                                       \
        TY s = clg_gelu_s16(x);                                                             \
        return s + 2.0f * x * s * (1.0f - s) * 0.79788456080286535588f * (1.0f + 0.134145f * x * x); \
    }
CLG_TANH16(float)
CLG_TANH16(float16)
CLG_ELEMENTWISE1(tanh, clg_tanh16(x))
#else
CLG_ELEMENTWISE1(tanh, fabs(x) > CLG_TANH_SAT ? copysign((T)1, x) : tanh(x))
#endif
// erf: float64 by the library; float32 by Eigen's rational approximation (the one
// TensorFlow uses), x clamped to [-4, 4] where float erf is +-1: within 4.5e-7 (7.5 ulp
// near |x| = 3.2) of the exact value over all floats, and products only. The library's
// float erf is a scalar call per element on POCL: 9.5 ms for 1M floats, 20 times exp,
// and the GELU of every transformer went through it.
#ifdef CLG_F64
#define clg_erf(x) erf(x)
#else
// For floats and for vectors of 16 (gelu's flat16 kernels): the same operations lane by
// lane, so that every layout gives the same values.
#define CLG_ERF(TY)                                                                          \
    __attribute__((overloadable)) inline TY clg_erf(TY x)                                    \
    {                                                                                        \
        TY c = clamp(x, -4.0f, 4.0f), z = c * c;                                             \
        TY p = -2.72614225801306e-10f;                                                       \
        p = p * z + 2.77068142495902e-08f;                                                   \
        p = p * z - 2.10102402082508e-06f;                                                   \
        p = p * z - 5.69250639462346e-05f;                                                   \
        p = p * z - 7.34990630326855e-04f;                                                   \
        p = p * z - 2.95459980854025e-03f;                                                   \
        p = p * z - 1.60960333262415e-02f;                                                   \
        TY q = -1.45660718464996e-05f;                                                       \
        q = q * z - 2.13374055278905e-04f;                                                   \
        q = q * z - 1.68282697438203e-03f;                                                   \
        q = q * z - 7.37332916720468e-03f;                                                   \
        q = q * z - 1.42647390514189e-02f;                                                   \
        /* NaN stays NaN (clamp's result on NaN is unspecified) */                           \
        return select(c * p / q, x, x != x);                                                 \
    }
CLG_ERF(float)
CLG_ERF(float16)
#endif
// gelu(x) = x Phi(x) = x/2 (1 + erf(x / sqrt 2)), the exact form (PyTorch's default).
#define CLG_SQRT1_2 ((T)0.70710678118654752440)
#define CLG_INV_SQRT_2PI ((T)0.39894228040143267794)
CLG_ELEMENTWISE1(gelu, x * (T)0.5 * ((T)1 + clg_erf(x * CLG_SQRT1_2)))
CLG_FLAT16_1(gelu, x * 0.5f * (1.0f + clg_erf(x * CLG_SQRT1_2)), 1)
// softplus(x; beta = s0, threshold = s1) = log(1 + exp(beta x)) / beta, and x where
// beta x > threshold (PyTorch). log(1 + e^t) is computed as max(t, 0) + log1p(e^-|t|),
// which neither overflows for large t nor loses the tail for very negative t.
// log1p(e) for e = exp(-|t|) in [0, 1] in float32: 2 atanh(s), s = e / (2 + e) <= 1/3,
// the odd series to s^17 (next term below 3e-10 of it): one division, where
// clg_log1pf's two paths for any x take three (softplus of 1M floats 3.1 ms, PyTorch 2.5).
#ifdef CLG_F64
#define clg_log1p01(e) log1p(e)
#else
inline float clg_log1p01(float e)
{
    float s = e / (2.0f + e), s2 = s * s, s4 = s2 * s2, p = 2.0f / 17.0f;   // common.cl's
    p = p * s2 + 2.0f / 15.0f;                                                // poly ends
    p = p * s2 + 2.0f / 13.0f;                                                // at s^11
    return 2.0f * s + s * s2 * (p * (s4 * s2 * s2 * s2) + clg_atanh2_poly(s2));
}
#endif
inline T clg_softplus(T x, T beta, T threshold)
{
    T t = x * beta, r = ((t > (T)0 ? t : (T)0) + clg_log1p01(exp(-fabs(t)))) / beta;
    return t > threshold ? x : r;   // no early return: POCL vectorizes selects, not branches
}
CLG_ELEMENTWISE1(softplus, clg_softplus(x, s0, s1))
// silu(x) = x sigmoid(x); elu(x; alpha = s0) = x above 0, alpha (e^x - 1) at or below.
CLG_ELEMENTWISE1(silu, x * clg_sigmoid(x))
CLG_FLAT16_1(silu, x * CLG_SIGMOID_E(x, exp(-fabs(x))), 1)
CLG_ELEMENTWISE1(elu, x > (T)0 ? x : s0 * clg_expm1(x))
// elu's 16-wide kernel skips the exponential where none of the 16 lanes is negative
// (their sign bits ORed: -0 and a negative NaN take the full path, which gives them
// too), as PyTorch's vectors do: elu of positive inputs ran 5 times slower than
// PyTorch's, at the speed of an exp.
#ifdef CLG_F32
#define CLG_ELU_E(x) ((x) > 0.0f ? (x) : s0 * CLG_EXPM1_E(x))
__kernel void elu_flat16(int n, __global float *y, int oy, __global const float *a, int oa, const float s0,
                         const float s1)
{
    int i = get_global_id(0) * 16;
    if (i + 16 <= n) {
        float16 x = vload16(0, a + oa + i);
        int16 b = as_int16(x);
        int8 o8 = b.lo | b.hi;
        int4 o4 = o8.lo | o8.hi;
        int2 o2 = o4.lo | o4.hi;
        vstore16((o2.x | o2.y) >= 0 ? x : CLG_ELU_E(x), 0, y + oy + i);
        return;
    }
    for (int e = i; e < n; e++) {
        float x = a[oa + e];
        y[oy + e] = CLG_ELU_E(x);
    }
}
#endif
// gelu's tanh approximation (PyTorch's approximate='tanh'):
// x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed as x sigmoid(2u): the
// same function (1 + tanh(u) = 2 sigmoid(2u)) without the cancellation of 1 + tanh(u)
// for negative x (19 ulp at x = -2.22 in float), and one exp.
#define CLG_SQRT_2_PI ((T)0.79788456080286535588)
inline T clg_gelu_2u(T x) { return (T)2 * CLG_SQRT_2_PI * (x + (T)0.044715 * x * x * x); }
CLG_ELEMENTWISE1(gelu_tanh, x * clg_sigmoid(clg_gelu_2u(x)))
CLG_FLAT16_1(tanh, clg_tanh16(x), 1)
CLG_FLAT16_1(gelu_tanh, clg_gelu_tanh16(x), 1)

// Elementwise math (src/tensor/unary.c). round is rint: halves to even, as PyTorch.
// sin, cos and tan of 16 floats in float64 arithmetic (SLEEF's float16 sin, POCL's, took
// 1.0 ms for 1M floats, PyTorch's 0.6), musl's way: x = k pi/2 + y with pi/2 in 25 +
// 53 bits (k pi/2's first part exact for |k| < 2^28, y within 1e-15 of its value, which
// is never below 2^-28 or so for a float x), then the polynomials of FreeBSD's
// __sindf / __cosdf on |y| <= pi/4 (within 2^-37.5 and 2^-34.1: 0.501 ulp at most over
// 4M floats below 4e6, after the rounding to float) chosen and signed by k's quadrant
// (in float on y's two float parts: 2 ulp, and hardly faster). Vectors with a lane past
// CLG_TRIG_OK's 2^22 (or an infinity, a NaN) take the library's scalar calls:
// Payne-Hanek's reduction is theirs. The scalar overloads are those calls, for the
// kernels' tails; a device without float64 keeps the library's vector functions.
#if defined(CLG_F32) && defined(cl_khr_fp64)
inline double16 clg_sindf16(double16 y)
{
    double16 z = y * y, w = z * z, s = z * y;
    double16 r = -0.000198393348360966317347 + z * 0.0000027183114939898219064;
    return (y + s * (-0.166666666416265235595 + z * 0.0083333293858894631756)) + s * w * r;
}
inline double16 clg_cosdf16(double16 y)
{
    double16 z = y * y, w = z * z, r = -0.00138867637746099294692 + z * 0.0000243904487962774090654;
    return ((1.0 + z * -0.499999997251031003120) + w * 0.0416666233237390631894) + (w * z) * r;
}
// x = k pi/2 + *y, |*y| <= pi/4 (a little more where rint's tie goes the other way);
// returns k mod 4 (k's low bits: the sum with 1.5 2^52 holds k in its last ones).
inline long16 clg_rem_pio2_16(float16 x, double16 *y)
{
    double16 xd = convert_double16(x), big = xd * 6.36619772367581382433e-01 + 0x1.8p52, k = big - 0x1.8p52;
    *y = xd - k * 1.57079631090164184570e+00 - k * 1.58932547735281966916e-08;
    return as_long16(big) & 3;
}
__attribute__((overloadable)) inline float16 clg_sin16(float16 x)
{
    double16 y;
    long16 q = clg_rem_pio2_16(x, &y);
    double16 s = clg_sindf16(y), c = clg_cosdf16(y), v = (q & 1) != 0 ? c : s;
    float16 r = convert_float16((q & 2) != 0 ? -v : v);
    return fabs(x) < 0x1p-12f ? x : r;   // sin(x) rounds to x there; keeps -0
}
__attribute__((overloadable)) inline float16 clg_cos16(float16 x)
{
    double16 y;
    long16 q = clg_rem_pio2_16(x, &y);
    double16 s = clg_sindf16(y), c = clg_cosdf16(y), v = (q & 1) != 0 ? s : c;
    return convert_float16(((q + 1) & 2) != 0 ? -v : v);
}
// tan(y) = sin(y) / cos(y) and -cos(y) / sin(y) a quadrant on, one division in double
// (the polynomials' errors add: within 1e-10 before the rounding).
__attribute__((overloadable)) inline float16 clg_tan16(float16 x)
{
    double16 y;
    long16 q = clg_rem_pio2_16(x, &y);
    double16 s = clg_sindf16(y), c = clg_cosdf16(y);
    float16 r = convert_float16(((q & 1) != 0 ? -c : s) / ((q & 1) != 0 ? s : c));
    return fabs(x) < 0x1p-12f ? x : r;   // tan(x) rounds to x there; keeps -0
}
#elif defined(CLG_F32)
__attribute__((overloadable)) inline float16 clg_sin16(float16 x) { return sin(x); }
__attribute__((overloadable)) inline float16 clg_cos16(float16 x) { return cos(x); }
__attribute__((overloadable)) inline float16 clg_tan16(float16 x) { return tan(x); }
#endif
#ifdef CLG_F32
__attribute__((overloadable)) inline float clg_sin16(float x) { return sin(x); }
__attribute__((overloadable)) inline float clg_cos16(float x) { return cos(x); }
__attribute__((overloadable)) inline float clg_tan16(float x) { return tan(x); }
#endif
CLG_ELEMENTWISE1(sin, sin(x))
CLG_FLAT16_1(sin, clg_sin16(x), CLG_TRIG_OK)
CLG_ELEMENTWISE1(cos, cos(x))
CLG_FLAT16_1(cos, clg_cos16(x), CLG_TRIG_OK)
CLG_ELEMENTWISE1(tan, tan(x))
CLG_FLAT16_1(tan, clg_tan16(x), CLG_TRIG_OK)
CLG_ELEMENTWISE1(log1p, clg_log1p(x))
CLG_ELEMENTWISE1(expm1, clg_expm1(x))
CLG_ELEMENTWISE1(rsqrt, rsqrt(x))
CLG_ELEMENTWISE1(erf, clg_erf(x))
CLG_ELEMENTWISE1(softsign, x / ((T)1 + fabs(x)))   // torch's softsign; +-inf gives NaN, as there
CLG_ELEMENTWISE1(sign, x > (T)0 ? (T)1 : x < (T)0 ? (T)-1 : x)   // keeps 0, -0 and NaN
// rint, floor and ceil without a call per element (POCL calls libm's, 2.5x slower):
// adding and subtracting 2^23 (2^52 in double) rounds a magnitude below it to an
// integer, halves to even, in the default rounding mode; larger magnitudes, infinities
// and NaN are integral already. The sign is put back, so -0.4 gives -0 as rint does;
// floor and ceil step from rint's result where it went the wrong way (their results
// have x's sign too).
#ifdef CLG_F64
#define CLG_INT_BIG 4503599627370496.0
#else
#define CLG_INT_BIG 8388608.0f
#endif
inline T clg_rint(T x)
{
    T t = fabs(x), r = copysign((t + CLG_INT_BIG) - CLG_INT_BIG, x);
    return t < CLG_INT_BIG ? r : x;
}
inline T clg_floor(T x)
{
    T r = clg_rint(x);
    return copysign(r > x ? r - (T)1 : r, x);
}
inline T clg_ceil(T x)
{
    T r = clg_rint(x);
    return copysign(r < x ? r + (T)1 : r, x);   // ceil(-0.6) is -0
}
CLG_ELEMENTWISE1(floor, clg_floor(x))
CLG_ELEMENTWISE1(ceil, clg_ceil(x))
CLG_ELEMENTWISE1(round, clg_rint(x))

// ---- backward: x is the saved input or output, z the incoming gradient ----------------
CLG_ELEMENTWISE2(exp_grad, z * x)                        // x = exp(input)
CLG_ELEMENTWISE2(log_grad, z / x)                        // x = input
CLG_ELEMENTWISE2(sqrt_grad, z / ((T)2 * x))              // x = sqrt(input); inf at 0
// sign(x) with sign(0) = 0; a NaN input gives a NaN gradient.
CLG_ELEMENTWISE2(abs_grad, x > (T)0 ? z : x < (T)0 ? -z : x == (T)0 ? (T)0 : x)
// Pass-through inside [lo, hi], bounds included (PyTorch); 0 outside and for NaN.
CLG_ELEMENTWISE2(clamp_grad, (x >= s0 && x <= s1) ? z : (T)0)
CLG_ELEMENTWISE2(leaky_relu_grad, x > (T)0 ? z : z * s0) // x = input
CLG_ELEMENTWISE2(sigmoid_grad, z * x * ((T)1 - x))      // x = sigmoid(input)
CLG_ELEMENTWISE2(tanh_grad, z * ((T)1 - x * x))          // x = tanh(input)
// d/dx x Phi(x) = Phi(x) + x phi(x)
CLG_ELEMENTWISE2(gelu_grad,
                 z * ((T)0.5 * ((T)1 + clg_erf(x * CLG_SQRT1_2)) + x * exp((T)-0.5 * x * x) * CLG_INV_SQRT_2PI))
CLG_FLAT16_2(gelu_grad, z * (0.5f * (1.0f + clg_erf(x * CLG_SQRT1_2)) + x * exp(-0.5f * x * x) * CLG_INV_SQRT_2PI), 1)
// d/dx softplus = sigmoid(beta x) below the threshold, 1 above it.
CLG_ELEMENTWISE2(softplus_grad, x * s0 > s1 ? z : z * clg_sigmoid(x * s0))
// d/dx x s(x) = s(x) (1 + x (1 - s(x))), x = input
inline T clg_silu_d(T x)
{
    T s = clg_sigmoid(x);
    return s * ((T)1 + x * ((T)1 - s));
}
CLG_ELEMENTWISE2(silu_grad, z * clg_silu_d(x))
CLG_ELEMENTWISE2(elu_grad, x > (T)0 ? z : z * s0 * exp(x))        // x = input
// d/dx of the tanh form: (1 + t)/2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 0.044715 x^2), t =
// tanh(u); with s = sigmoid(2u) = (1 + t)/2, 1 - t^2 = 4 s (1 - s).
inline T clg_gelu_tanh_d(T x)
{
    T s = clg_sigmoid(clg_gelu_2u(x));
    return s + (T)2 * x * s * ((T)1 - s) * CLG_SQRT_2_PI * ((T)1 + (T)0.134145 * x * x);
}
CLG_ELEMENTWISE2(gelu_tanh_grad, z * clg_gelu_tanh_d(x))
CLG_FLAT16_2(gelu_tanh_grad, z * clg_gelu_tanh_d16(x), 1)
CLG_ELEMENTWISE2(sin_grad, z * cos(x))                   // x = input
CLG_FLAT16_2(sin_grad, z * clg_cos16(x), CLG_TRIG_OK)
CLG_ELEMENTWISE2(cos_grad, -z * sin(x))                  // x = input
CLG_FLAT16_2(cos_grad, -z * clg_sin16(x), CLG_TRIG_OK)
CLG_ELEMENTWISE2(tan_grad, z * ((T)1 + x * x))           // x = tan(input)
CLG_ELEMENTWISE2(log1p_grad, z / ((T)1 + x))             // x = input
CLG_ELEMENTWISE2(expm1_grad, z * (x + (T)1))             // x = expm1(input)
CLG_ELEMENTWISE2(rsqrt_grad, z * (T)-0.5 * x * x * x)    // x = rsqrt(input)
#define CLG_2_SQRTPI ((T)1.12837916709551257390)
CLG_ELEMENTWISE2(erf_grad, z * CLG_2_SQRTPI * exp(-x * x)) // x = input
// d/dx x / (1 + |x|) = 1 / (1 + |x|)^2, x = input
inline T clg_softsign_d(T x)
{
    T d = (T)1 + fabs(x);
    return (T)1 / (d * d);
}
CLG_ELEMENTWISE2(softsign_grad, z * clg_softsign_d(x))
// sign, floor, ceil and round are flat almost everywhere: a zero gradient (PyTorch's).
CLG_ELEMENTWISE2(zero_grad, (T)0)

#endif
