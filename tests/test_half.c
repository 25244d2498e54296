/* float16 and bfloat16 storage (issue 17): conversions on the host and on the device.
 *
 * References independent of the code under test: a 16-bit pattern's value decoded with
 * ldexp from its fields, and float32 rounded to a 16-bit format by arithmetic in double
 * (to nearest, ties to even, with the format's subnormals and overflow). Checked:
 * - every one of the 65,536 patterns of each format decodes to its value, on the host
 *   and (cast to float32) on the device, bit for bit;
 * - float32 to 16 bits, on the host and on the device: every 16-bit value, every
 *   midpoint between neighbours (ties) and the floats just either side of it, float32
 *   subnormals, infinities, NaN, and a million random patterns;
 * - casts through other layouts and dtypes, fills, printing, .npy and safetensors;
 * - elementwise ops in 16 bits, bit for bit the float32 op rounded once, and the
 *   refusals of ops that do not compute in 16 bits yet. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "check.h"

typedef struct fmt16 {
    clg_dtype dtype;
    int mant, emin, emax;   /* significand bits after the point; normal exponents */
    int ebits;
} fmt16;

static const fmt16 F16 = {CLG_F16, 10, -14, 15, 5}, BF16 = {CLG_BF16, 7, -126, 127, 8};

static uint32_t bits_of(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    return x;
}

static float float_of(uint32_t x)
{
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* A pattern's value from its fields. */
static double decode_ref(const fmt16 *f, uint16_t h)
{
    int bias = f->emax, e = (h >> f->mant) & ((1 << f->ebits) - 1);
    uint32_t m = h & ((1u << f->mant) - 1);
    double s = (h & 0x8000) ? -1 : 1;
    if (e == (1 << f->ebits) - 1) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp((double)m, f->emin - f->mant);
    return s * ldexp(1.0 + ldexp((double)m, -f->mant), e - bias);
}

/* x rounded to the format, to nearest, ties to even. */
static double round_ref(const fmt16 *f, double x)
{
    if (isnan(x) || isinf(x) || x == 0) return x;
    double a = fabs(x);
    int k;
    frexp(a, &k);   /* a in [2^(k-1), 2^k) */
    int e = k - 1 < f->emin ? f->emin : k - 1;
    double q = ldexp(a, f->mant - e), fl = floor(q), frac = q - fl;   /* exact */
    double r = frac > 0.5 || (frac == 0.5 && fmod(fl, 2) != 0) ? fl + 1 : fl;
    double v = ldexp(r, e - f->mant);
    double top = ldexp(2.0 - ldexp(1.0, -f->mant), f->emax);   /* the largest finite */
    if (v > top) v = INFINITY;
    return copysign(v, x);
}

static bool same_value(double got, double want)
{
    if (isnan(want)) return isnan(got);
    return got == want && signbit(got) == signbit(want);
}

static uint16_t to16(const fmt16 *f, float x) { return f->dtype == CLG_F16 ? clg_f32_to_f16(x) : clg_f32_to_bf16(x); }
static float from16(const fmt16 *f, uint16_t h) { return f->dtype == CLG_F16 ? clg_f16_to_f32(h) : clg_bf16_to_f32(h); }

static bool is_nan16(const fmt16 *f, uint16_t h)
{
    uint16_t exp = (uint16_t)(((1u << f->ebits) - 1) << f->mant), man = (uint16_t)((1u << f->mant) - 1);
    return (h & exp) == exp && (h & man);
}

/* A conversion keeps a NaN's sign and gives a NaN of the format (payload free). */
static bool same_bits16(const fmt16 *f, uint16_t got, uint16_t want)
{
    if (is_nan16(f, want)) return is_nan16(f, got) && (got & 0x8000) == (want & 0x8000);
    return got == want;
}

/* An op's NaN result is compared as NaN, sign and payload free: IEEE 754 leaves the sign of
 * a NaN made by an invalid operation (inf - inf in a sum) open, and CPUs differ (x86 makes
 * a negative one, and a vectorising compiler may order a sum's terms either way). */
static bool same_value16(const fmt16 *f, uint16_t got, uint16_t want)
{
    return is_nan16(f, want) ? is_nan16(f, got) : got == want;
}

/* ---- the float32 values to round -------------------------------------------------------- */

static float *inputs;
static size_t ninputs;

static void add(float x) { inputs[ninputs++] = x; }

/* CLG_TEST_SMALL (Oclgrind): a sample, for the memory checks rather than the values. */
static int small(void) { return getenv("CLG_TEST_SMALL") != NULL; }

static void make_inputs(const fmt16 *f)
{
    ninputs = 0;
    for (uint32_t h = 0; h < 0x10000; h += small() ? 61 : 1) {
        double v = decode_ref(f, (uint16_t)h), next = decode_ref(f, (uint16_t)(h + 1));
        if (isnan(v) || isinf(v)) continue;
        add((float)v);
        /* the midpoint to the next pattern of the same sign (towards larger magnitude) */
        if ((h & 0x7fff) != 0x7fff && !isnan(next)) {
            double top = isinf(next) ? fabs(v) + (fabs(v) - fabs(decode_ref(f, (uint16_t)(h - 1)))) : fabs(next);
            float mid = (float)copysign((fabs(v) + top) / 2, v);   /* exact in float32 */
            add(mid);
            add(nextafterf(mid, 0));
            add(nextafterf(mid, copysignf(INFINITY, mid)));
        }
    }
    const float special[] = {INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 1e-45f, -1e-45f,
                             float_of(0x7f800001), float_of(0xffc00000), 0.0f, -0.0f};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) add(special[i]);
    uint64_t s = 88172645463325252ull;
    for (int i = 0; i < (small() ? 1000 : 1000000); i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        add(float_of((uint32_t)s));
    }
}

/* ---- host ------------------------------------------------------------------------------------- */

static void host_decode(const fmt16 *f)
{
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++)
        if (!same_value(from16(f, (uint16_t)h), decode_ref(f, (uint16_t)h)) && bad++ < 5)
            CHECK_MSG(0, "%s %04x: decoded %.9g, want %.9g", clg_dtype_name(f->dtype), h, from16(f, (uint16_t)h),
                      decode_ref(f, (uint16_t)h));
    CHECK_MSG(bad == 0, "%s: %d of 65536 patterns decode wrong on the host", clg_dtype_name(f->dtype), bad);
}

static void host_round(const fmt16 *f)
{
    int bad = 0;
    for (size_t i = 0; i < ninputs; i++) {
        double want = round_ref(f, inputs[i]), got = from16(f, to16(f, inputs[i]));
        if (!same_value(got, want) && bad++ < 5)
            CHECK_MSG(0, "%s: %.9g (%08x) rounds to %.9g, want %.9g", clg_dtype_name(f->dtype), inputs[i],
                      bits_of(inputs[i]), got, want);
    }
    CHECK_MSG(bad == 0, "%s: %d of %zu floats round wrong on the host", clg_dtype_name(f->dtype), bad, ninputs);
    /* and back: every non-NaN pattern survives a round trip */
    for (uint32_t h = 0; h < 0x10000; h++)
        if (!isnan(decode_ref(f, (uint16_t)h))) CHECK(to16(f, from16(f, (uint16_t)h)) == h);
}

/* ---- device ------------------------------------------------------------------------------------ */

static void device_decode(clg_device *dev, const fmt16 *f)
{
    static uint16_t all[0x10000];
    static float got[0x10000];
    for (uint32_t h = 0; h < 0x10000; h++) all[h] = (uint16_t)h;
    clg_scope_begin(dev);
    clg_tensor *t = clg_tensor_from_host(dev, f->dtype, CLG_SHAPE(0x10000), all);
    clg_tensor *c = clg_cast(t, CLG_F32);
    CHECK_OK(dev, c ? clg_tensor_to_host(c, got, sizeof got) : clg_device_last_status(dev));
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000 && c; h++)
        if (!same_value(got[h], decode_ref(f, (uint16_t)h)) && bad++ < 5)
            CHECK_MSG(0, "%s %04x on the device: %.9g, want %.9g", clg_dtype_name(f->dtype), h, got[h],
                      decode_ref(f, (uint16_t)h));
    CHECK_MSG(bad == 0, "%s: %d of 65536 patterns decode wrong on the device", clg_dtype_name(f->dtype), bad);
    clg_scope_end(dev);
}

static void device_round(clg_device *dev, const fmt16 *f)
{
    uint16_t *got = malloc(ninputs * sizeof *got);
    clg_scope_begin(dev);
    clg_tensor *t = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE((int64_t)ninputs), inputs);
    clg_tensor *c = clg_cast(t, f->dtype);
    CHECK_MSG(c && clg_tensor_dtype(c) == f->dtype, "%s", clg_device_error(dev));
    CHECK_OK(dev, c && got ? clg_tensor_to_host(c, got, ninputs * sizeof *got) : clg_device_last_status(dev));
    int bad = 0;
    for (size_t i = 0; c && got && i < ninputs; i++)
        if (!same_bits16(f, got[i], to16(f, inputs[i])) && bad++ < 5)
            CHECK_MSG(0, "%s: %.9g (%08x) on the device: %04x, on the host %04x", clg_dtype_name(f->dtype), inputs[i],
                      bits_of(inputs[i]), got[i], to16(f, inputs[i]));
    CHECK_MSG(bad == 0, "%s: %d of %zu floats round differently on the device", clg_dtype_name(f->dtype), bad, ninputs);
    clg_scope_end(dev);
    free(got);
}

/* ---- layouts, dtypes, fills, printing, files, refusals ----------------------------------------- */

static bool values_are(clg_tensor *t, const float *want, int n)
{
    float got[16];
    clg_tensor *c = clg_cast(t, CLG_F32);
    if (!c || clg_tensor_to_host(clg_contiguous(c), got, sizeof(float) * (size_t)n) != CLG_OK) return false;
    return !memcmp(got, want, sizeof(float) * (size_t)n);
}

static void layouts(clg_device *dev, const fmt16 *f)
{
    clg_scope_begin(dev);
    const float v[6] = {1, 2.5f, -3, 0.375f, 1024, -0.0f};
    clg_tensor *a = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(2, 3), v);
    /* a transposed float32 view into 16 bits, and back */
    clg_tensor *h = clg_cast(clg_transpose(a, 0, 1), f->dtype);
    const float vt[6] = {1, 0.375f, 2.5f, 1024, -3, -0.0f};
    CHECK_MSG(h && values_are(h, vt, 6), "%s: cast of a transposed view: %s", clg_dtype_name(f->dtype),
              clg_device_error(dev));
    /* 16 bits to 16 bits through a strided view (the bits moved as they are) */
    clg_tensor *back = h ? clg_contiguous(clg_transpose(h, 0, 1)) : NULL;
    CHECK_MSG(back && values_are(back, v, 6), "%s: a strided copy", clg_dtype_name(f->dtype));
    /* broadcast copy_ from float32 [3] into 16-bit [2, 3] */
    clg_tensor *dst = clg_zeros(dev, f->dtype, CLG_SHAPE(2, 3));
    clg_tensor *row = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(3), v);
    CHECK_OK(dev, dst && row ? clg_copy_(dst, row) : clg_device_last_status(dev));
    const float vb[6] = {1, 2.5f, -3, 1, 2.5f, -3};
    CHECK(dst && values_are(dst, vb, 6));
    /* to int32 and float64 through float32 */
    clg_tensor *i = h ? clg_cast(h, CLG_I32) : NULL;
    int32_t iv[6] = {0};
    CHECK_OK(dev, i ? clg_tensor_to_host(i, iv, sizeof iv) : clg_device_last_status(dev));
    CHECK(iv[0] == 1 && iv[1] == 0 && iv[2] == 2 && iv[3] == 1024 && iv[4] == -3);
    if (clg_device_get_info(dev)->fp64) {
        clg_tensor *d = clg_cast(h, CLG_F64);
        double dv[6];
        CHECK_OK(dev, d ? clg_tensor_to_host(d, dv, sizeof dv) : clg_device_last_status(dev));
        CHECK(dv[1] == 0.375 && dv[3] == 1024);
    }
    /* fills and items: 0.1 is not a 16-bit value; the fill holds what the cast gives */
    clg_tensor *fl = clg_zeros(dev, f->dtype, CLG_SHAPE(5));
    CHECK_OK(dev, fl ? clg_fill_(fl, 0.1) : clg_device_last_status(dev));
    double item = 0;
    CHECK_OK(dev, fl ? clg_tensor_item(clg_narrow(fl, 0, 4, 1), &item) : clg_device_last_status(dev));
    CHECK_MSG(item == (double)from16(f, to16(f, 0.1f)), "%s fill 0.1: %.9g", clg_dtype_name(f->dtype), item);
    CHECK(clg_tensor_dtype(fl) == f->dtype && clg_dtype_size(f->dtype) == 2);
    /* printing */
    char buf[512] = "";
    FILE *out = fmemopen(buf, sizeof buf - 1, "w");
    if (out && h) {
        clg_tensor_print(back, out, "h");
        fclose(out);
        CHECK_MSG(strstr(buf, "1024") && strstr(buf, "0.375") && strstr(buf, clg_dtype_name(f->dtype)), "%s", buf);
    }
    clg_scope_end(dev);
}

/* Elementwise ops (the CLG_ELEMENTWISE kernels) keep 16-bit tensors as such and
 * compute in float32: each result must be, bit for bit, the float32 op on the widened
 * inputs rounded once; operands of every kind (subnormals, infinities, NaN), strided
 * and broadcast ones too. Ops with other kernels refuse 16-bit tensors, saying what to do. */
typedef clg_tensor *(*unary_fn)(clg_tensor *);
typedef clg_tensor *(*binary_fn)(clg_tensor *, clg_tensor *);
typedef clg_tensor *(*scalar_fn)(clg_tensor *, double);

static bool same16(const fmt16 *f, clg_tensor *got, clg_tensor *want, const char *what)
{
    enum { N = 2048 };
    static uint16_t g[N], w[N];
    int64_t n = got && want ? clg_tensor_numel(got) : 0;
    if (!got || !want || n > N || clg_tensor_dtype(got) != f->dtype || clg_tensor_numel(want) != n ||
        clg_tensor_to_host(got, g, (size_t)n * 2) || clg_tensor_to_host(want, w, (size_t)n * 2)) {
        CHECK_MSG(0, "%s %s: no result (%s)", clg_dtype_name(f->dtype), what, clg_device_error(clg_tensor_device(got ? got : want)));
        return false;
    }
    for (int64_t i = 0; i < n; i++)
        if (!same_value16(f, g[i], w[i])) {
            CHECK_MSG(0, "%s %s [%lld]: %04x, float32 rounded %04x", clg_dtype_name(f->dtype), what, (long long)i, g[i], w[i]);
            return false;
        }
    return true;
}

static clg_tensor *rand16(clg_device *dev, const fmt16 *f, int ndim, const int64_t *shape, uint32_t seed, clg_tensor **wide);

static void elementwise(clg_device *dev, const fmt16 *f)
{
    enum { N = 1024 };
    uint16_t hx[N], hy[N];
    uint32_t s = 12345;
    for (int i = 0; i < N; i++) {
        s = s * 1664525u + 1013904223u;
        hx[i] = (uint16_t)(s >> 16);
        s = s * 1664525u + 1013904223u;
        /* y mostly near 1 (a sensible divisor and exponent), some of every kind */
        hy[i] = i % 4 ? to16(f, 0.5f + (float)(s >> 8 & 0xffff) / 65536.0f) : (uint16_t)(s >> 16);
    }
    const uint16_t special[8] = {0x0000, 0x8000, 0x0001, to16(f, INFINITY), to16(f, -INFINITY), to16(f, NAN),
                                 to16(f, 1.0f), to16(f, -2.5f)};
    memcpy(hx, special, sizeof special);
    clg_scope_begin(dev);
    clg_tensor *x = clg_tensor_from_host(dev, f->dtype, CLG_SHAPE(32, 32), hx);
    clg_tensor *y = clg_tensor_from_host(dev, f->dtype, CLG_SHAPE(32, 32), hy);
    clg_tensor *x32 = clg_cast(x, CLG_F32), *y32 = clg_cast(y, CLG_F32);
    const struct { const char *name; unary_fn fn; } un[] = {
        {"neg", clg_neg}, {"exp", clg_exp}, {"log", clg_log}, {"sqrt", clg_sqrt}, {"abs", clg_abs},
        {"sin", clg_sin}, {"tanh", clg_tanh}, {"log1p", clg_log1p}, {"expm1", clg_expm1}, {"rsqrt", clg_rsqrt},
        {"erf", clg_erf}, {"sign", clg_sign}, {"floor", clg_floor}, {"round", clg_round}, {"relu", clg_relu},
        {"sigmoid", clg_sigmoid}, {"gelu", clg_gelu}, {"gelu_tanh", clg_gelu_tanh}, {"silu", clg_silu}};
    for (size_t i = 0; i < sizeof un / sizeof *un; i++)
        same16(f, un[i].fn(x), clg_cast(un[i].fn(x32), f->dtype), un[i].name);
    const struct { const char *name; binary_fn fn; } bin[] = {
        {"add", clg_add}, {"sub", clg_sub}, {"mul", clg_mul}, {"div", clg_div}, {"pow", clg_pow},
        {"maximum", clg_maximum}, {"minimum", clg_minimum}, {"gt", clg_gt}, {"ne", clg_ne}};
    for (size_t i = 0; i < sizeof bin / sizeof *bin; i++) {
        same16(f, bin[i].fn(x, y), clg_cast(bin[i].fn(x32, y32), f->dtype), bin[i].name);
        /* a transposed operand and a broadcast row */
        clg_tensor *xt = clg_transpose(x, 0, 1), *row = clg_narrow(y, 0, 3, 1);
        same16(f, bin[i].fn(xt, row), clg_cast(bin[i].fn(clg_transpose(x32, 0, 1), clg_narrow(y32, 0, 3, 1)), f->dtype),
               bin[i].name);
    }
    const struct { const char *name; scalar_fn fn; double v; } sc[] = {
        {"add_scalar", clg_add_scalar, 0.1}, {"mul_scalar", clg_mul_scalar, -3.0}, {"div_scalar", clg_div_scalar, 7.0},
        {"pow_scalar", clg_pow_scalar, 2.0}, {"elu", clg_elu, 1.0}};
    for (size_t i = 0; i < sizeof sc / sizeof *sc; i++)
        same16(f, sc[i].fn(x, sc[i].v), clg_cast(sc[i].fn(x32, sc[i].v), f->dtype), sc[i].name);
    /* in place: scale_ (a loss scaler's unscale) */
    clg_tensor *z = clg_clone(x), *z32 = clg_clone(x32);
    CHECK_OK(dev, z && z32 ? clg_scale_(z, 1.0 / 1024) : clg_device_last_status(dev));
    CHECK_OK(dev, z32 ? clg_scale_(z32, 1.0 / 1024) : clg_device_last_status(dev));
    same16(f, z, clg_cast(z32, f->dtype), "scale_");
    /* reductions accumulate in float32 and round once: sums, means, extremes over
     * each axis and all, and one long enough to run in two passes */
    const struct { const char *name; clg_tensor *(*fn)(clg_tensor *, int, const int *, bool); } red[] = {
        {"sum", clg_sum}, {"mean", clg_mean}, {"max", clg_max}, {"min", clg_min}};
    clg_tensor *fin = clg_abs(clg_tanh(x)), *fin32 = clg_cast(fin, CLG_F32);   /* finite, for sums */
    for (size_t i = 0; i < sizeof red / sizeof *red; i++) {
        same16(f, red[i].fn(fin, CLG_AXES(0), false), clg_cast(red[i].fn(fin32, CLG_AXES(0), false), f->dtype), red[i].name);
        same16(f, red[i].fn(x, CLG_AXES(1), true), clg_cast(red[i].fn(x32, CLG_AXES(1), true), f->dtype), red[i].name);
        same16(f, red[i].fn(fin, 0, NULL, false), clg_cast(red[i].fn(fin32, 0, NULL, false), f->dtype), red[i].name);
    }
    clg_tensor *lng = clg_reshape(clg_stack(8, (clg_tensor *[]){fin, fin, fin, fin, fin, fin, fin, fin}, 0),
                                  CLG_SHAPE(-1));   /* 8192 elements */
    CHECK_MSG(lng != NULL, "%s", clg_device_error(dev));
    same16(f, clg_sum(lng, 0, NULL, false), clg_cast(clg_sum(clg_cast(lng, CLG_F32), 0, NULL, false), f->dtype),
           "sum of 8192");
    /* row kernels: softmax, log_softmax and var along either axis; argmax */
    clg_tensor *lg = clg_mul_scalar(clg_tanh(x), 6.0), *lg32 = clg_cast(lg, CLG_F32);   /* finite logits */
    for (int ax = 0; ax < 2; ax++) {
        same16(f, clg_softmax(lg, ax), clg_cast(clg_softmax(lg32, ax), f->dtype), "softmax");
        same16(f, clg_log_softmax(lg, ax), clg_cast(clg_log_softmax(lg32, ax), f->dtype), "log_softmax");
        same16(f, clg_var(lg, CLG_AXES(ax), 1, false), clg_cast(clg_var(lg32, CLG_AXES(ax), 1, false), f->dtype), "var");
        int32_t i16[32], i32[32];
        clg_tensor *a16 = clg_argmax(lg, ax, false), *a32 = clg_argmax(lg32, ax, false);
        CHECK(a16 && a32 && clg_tensor_to_host(a16, i16, sizeof i16) == CLG_OK &&
              clg_tensor_to_host(a32, i32, sizeof i32) == CLG_OK && !memcmp(i16, i32, sizeof i16));
    }
    /* losses widen 16-bit inputs: float32 results, those of the widened inputs */
    clg_tensor *fl32, *fl = rand16(dev, f, CLG_SHAPE(32, 32), 99, &fl32);   /* finite */
    clg_tensor *ft32, *ft = rand16(dev, f, CLG_SHAPE(32, 32), 98, &ft32);
    lg = fl, lg32 = fl32;
    clg_tensor *lab = clg_argmax(lg, 1, false);
    clg_tensor *losses16[3] = {clg_mse(lg, ft, CLG_REDUCE_MEAN), clg_nll_loss(clg_log_softmax(lg, 1), lab, CLG_REDUCE_SUM),
                               clg_smooth_l1_loss(lg, ft, CLG_REDUCE_MEAN, 0.5)};
    clg_tensor *losses32[3] = {clg_mse(lg32, ft32, CLG_REDUCE_MEAN),
                               clg_nll_loss(clg_cast(clg_log_softmax(lg, 1), CLG_F32), lab, CLG_REDUCE_SUM),
                               clg_smooth_l1_loss(lg32, ft32, CLG_REDUCE_MEAN, 0.5)};
    for (int i = 0; i < 3; i++) {
        double v16 = 0, v32 = 1;
        CHECK_MSG(losses16[i] && clg_tensor_dtype(losses16[i]) == CLG_F32 && clg_tensor_item(losses16[i], &v16) == CLG_OK &&
                      clg_tensor_item(losses32[i], &v32) == CLG_OK && v16 == v32,
                  "%s loss %d: %.9g, float32 %.9g", clg_dtype_name(f->dtype), i, v16, v32);
    }
    /* kernels not written for 16 bits refuse them */
    CHECK(clg_upsample_bilinear2d(clg_reshape(x, CLG_SHAPE(1, 1, 32, 32)), 40, 40) == NULL &&
          clg_device_last_status(dev) == CLG_ERR_DTYPE);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_cast it to float32"), "%s", clg_device_error(dev));
    CHECK(clg_rand(dev, f->dtype, CLG_SHAPE(4), 0, 1) == NULL && clg_device_last_status(dev) == CLG_ERR_DTYPE);
    CHECK(clg_axpy_(z, 1.0, z) == CLG_ERR_DTYPE);
    clg_scope_end(dev);
}

static void npy_file(clg_device *dev)
{
    clg_scope_begin(dev);
    const uint16_t v[4] = {0x3c00, 0xc000, 0x7c00, 0x0001};   /* 1, -2, inf, the smallest subnormal */
    clg_tensor *t = clg_tensor_from_host(dev, CLG_F16, CLG_SHAPE(2, 2), v);
    CHECK_OK(dev, clg_tensor_save_npy(t, "test_half.npy"));
    clg_tensor *u = clg_tensor_load_npy(dev, "test_half.npy");
    uint16_t got[4] = {0};
    CHECK_OK(dev, u ? clg_tensor_to_host(u, got, sizeof got) : clg_device_last_status(dev));
    CHECK(u && clg_tensor_dtype(u) == CLG_F16 && !memcmp(got, v, sizeof v));
    clg_tensor *b = clg_zeros(dev, CLG_BF16, CLG_SHAPE(2));
    CHECK(clg_tensor_save_npy(b, "test_half_bf16.npy") == CLG_ERR_DTYPE);   /* NumPy has no bfloat16 */
    remove("test_half.npy");
    clg_scope_end(dev);
}

/* A float32 model saved with 16-bit floats (clg_module_save_as) and loaded into
 * another float32 model: every weight is the host's rounding of the original, and
 * the batch norm's int counter stays an integer. */
static void checkpoint(clg_device *dev, const fmt16 *f)
{
    clg_manual_seed(dev, 3);
    clg_module *m = clg_nn_sequential(dev, 3, (clg_module *[]){clg_nn_linear(dev, 6, 5, true),
                                                               clg_nn_batch_norm1d(dev, 5, 1e-5, 0.1), clg_nn_linear(dev, 5, 2, true)});
    clg_manual_seed(dev, 4);
    clg_module *m2 = clg_nn_sequential(dev, 3, (clg_module *[]){clg_nn_linear(dev, 6, 5, true),
                                                                clg_nn_batch_norm1d(dev, 5, 1e-5, 0.1), clg_nn_linear(dev, 5, 2, true)});
    CHECK(m && m2);
    if (!m || !m2) return;
    CHECK_OK(dev, clg_module_save_as(m, "test_half.safetensors", f->dtype, 0, NULL));
    char err[256];
    clg_safetensors *st = NULL;
    CHECK(clg_safetensors_open("test_half.safetensors", &st, err, sizeof err) == CLG_OK);
    const clg_safetensors_entry *w = st ? clg_safetensors_find(st, "0.weight") : NULL;
    const clg_safetensors_entry *nbt = st ? clg_safetensors_find(st, "1.num_batches_tracked") : NULL;
    CHECK(w && w->dtype == (f->dtype == CLG_F16 ? CLG_ELEM_F16 : CLG_ELEM_BF16));
    CHECK(nbt && nbt->dtype != CLG_ELEM_F16 && nbt->dtype != CLG_ELEM_BF16);
    clg_safetensors_close(st);
    CHECK_OK(dev, clg_module_load(m2, "test_half.safetensors", true, NULL));
    clg_tensor *p[8], *p2[8];
    int n = clg_module_parameters(m, p, 8, false);
    CHECK(n == clg_module_parameters(m2, p2, 8, false));
    for (int i = 0; i < n; i++) {
        float a[64], b[64];
        int64_t k = clg_tensor_numel(p[i]);
        CHECK_OK(dev, clg_tensor_to_host(p[i], a, (size_t)k * 4));
        CHECK_OK(dev, clg_tensor_to_host(p2[i], b, (size_t)k * 4));
        for (int64_t j = 0; j < k; j++)
            if (bits_of(b[j]) != bits_of(from16(f, to16(f, a[j])))) {
                CHECK_MSG(0, "%s checkpoint: parameter %d [%lld]: %.9g loaded as %.9g", clg_dtype_name(f->dtype), i,
                          (long long)j, a[j], b[j]);
                break;
            }
    }
    CHECK(clg_module_save_as(m, "test_half.safetensors", CLG_I32, 0, NULL) == CLG_ERR_DTYPE);
    remove("test_half.safetensors");
    clg_module_free(m);
    clg_module_free(m2);
}

/* got (16-bit) against want (float32) within rel of want's largest magnitude. */
static void close16(const fmt16 *f, clg_tensor *got, clg_tensor *want, double rel, const char *what)
{
    enum { N = 4096 };
    static uint16_t g[N];
    static float w[N];
    int64_t n = got && want ? clg_tensor_numel(got) : 0;
    if (!got || !want || n > N || clg_tensor_dtype(got) != f->dtype || clg_tensor_numel(want) != n ||
        clg_tensor_to_host(got, g, (size_t)n * 2) || clg_tensor_to_host(want, w, (size_t)n * 4)) {
        CHECK_MSG(0, "%s %s: no result", clg_dtype_name(f->dtype), what);
        return;
    }
    double big = 0, worst = 0;
    for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(w[i]));
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(from16(f, g[i]) - w[i]));
    CHECK_MSG(big > 0 && worst <= rel * big, "%s %s: off by %.3g of %.3g", clg_dtype_name(f->dtype), what, worst, big);
}

/* A linear layer and log_softmax in 16 bits, backward: the gradients of x, w and b
 * against float32's from the same (widened) values, to 16-bit precision. */
static void layer_gradients(clg_device *dev, const fmt16 *f)
{
    clg_scope_begin(dev);
    enum { R = 9, I = 37, O = 21 };
    float hx[R * I], hw[O * I], hb[O], hc[R * O];
    uint32_t s = 777;
    float *all[4] = {hx, hw, hb, hc};
    int len[4] = {R * I, O * I, O, R * O};
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < len[t]; i++) {
            s = s * 1664525u + 1013904223u;
            all[t][i] = (float)(s >> 8) / (float)(1u << 24) * 2 - 1;
        }
    clg_tensor *in16[4], *in32[4];
    const int64_t shapes[4][2] = {{R, I}, {O, I}, {O, 0}, {R, O}};
    for (int t = 0; t < 4; t++) {
        int nd = shapes[t][1] ? 2 : 1;
        in16[t] = clg_cast(clg_tensor_from_host(dev, CLG_F32, nd, shapes[t], all[t]), f->dtype);
        in32[t] = clg_cast(in16[t], CLG_F32);
        if (t < 3) {
            CHECK_OK(dev, clg_tensor_set_requires_grad(in16[t], true));
            CHECK_OK(dev, clg_tensor_set_requires_grad(in32[t], true));
        }
    }
    clg_tensor *l16 = clg_sum(clg_cast(clg_mul(clg_log_softmax(clg_linear(in16[0], in16[1], in16[2]), 1), in16[3]), CLG_F32),
                              0, NULL, false);
    clg_tensor *l32 = clg_sum(clg_mul(clg_log_softmax(clg_linear(in32[0], in32[1], in32[2]), 1), in32[3]), 0, NULL, false);
    CHECK_OK(dev, l16 ? clg_backward(l16, NULL) : clg_device_last_status(dev));
    CHECK_OK(dev, l32 ? clg_backward(l32, NULL) : clg_device_last_status(dev));
    double rel = f->dtype == CLG_F16 ? 4e-3 : 3e-2;
    const char *names[3] = {"linear+log_softmax dx", "dw", "db"};
    for (int t = 0; t < 3; t++) close16(f, clg_tensor_grad(in16[t]), clg_tensor_grad(in32[t]), rel, names[t]);
    /* softmax and var backward */
    clg_tensor *x16 = in16[0], *x32 = in32[0];
    clg_tensor_zero_grad(x16);
    clg_tensor_zero_grad(x32);
    CHECK_OK(dev, clg_backward(clg_sum(clg_cast(clg_mul(clg_softmax(x16, 0), clg_var(x16, CLG_AXES(1), 1, true)), CLG_F32),
                                       0, NULL, false), NULL));
    CHECK_OK(dev, clg_backward(clg_sum(clg_mul(clg_softmax(x32, 0), clg_var(x32, CLG_AXES(1), 1, true)), 0, NULL, false), NULL));
    close16(f, clg_tensor_grad(x16), clg_tensor_grad(x32), rel, "softmax*var dx");
    clg_scope_end(dev);
}

/* A random 16-bit tensor (values in [-2, 2)) and its float32 widening. */
static clg_tensor *rand16(clg_device *dev, const fmt16 *f, int ndim, const int64_t *shape, uint32_t seed, clg_tensor **wide)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)(seed >> 8) / (float)(1u << 22) - 2;
    }
    clg_tensor *t = clg_cast(clg_tensor_from_host(dev, CLG_F32, ndim, shape, v), f->dtype);
    free(v);
    *wide = clg_cast(t, CLG_F32);
    return t;
}

/* The device table's matrix-unit engine ("ptx", "emulate"), or NULL where it has none. */
static const char *table_mma(clg_device *dev)
{
    char buf[4096] = "";
    FILE *out = fmemopen(buf, sizeof buf - 1, "w");
    if (!out) return NULL;
    clg_device_params_print(dev, out);
    fclose(out);
    return strstr(buf, "mma = ptx") ? "ptx" : strstr(buf, "mma = emulate") ? "emulate" : NULL;
}

/* got against float32's result rounded to 16 bits (want): bit for bit when within is 0,
 * else within that fraction of the largest value. */
static void compare16(const fmt16 *f, clg_tensor *got, clg_tensor *want, double within, const char *what)
{
    if (within == 0) same16(f, got, want, what);
    else close16(f, got, want ? clg_cast(want, CLG_F32) : NULL, within, what);
}

/* Convolutions, pooling, normalisations and dropout in 16 bits: forward bit for bit the
 * float32 op of the widened inputs, rounded once (the same sums in the same order);
 * the running statistics bit for bit float32's; gradients to 16-bit precision. */
static void conv_norm(clg_device *dev, const fmt16 *f)
{
    clg_scope_begin(dev);
    clg_tensor *x32, *w32, *b32, *wg32, *w1_32;
    clg_tensor *x = rand16(dev, f, CLG_SHAPE(3, 4, 9, 9), 1, &x32), *w = rand16(dev, f, CLG_SHAPE(6, 4, 3, 3), 2, &w32);
    clg_tensor *b = rand16(dev, f, CLG_SHAPE(6), 3, &b32), *wg = rand16(dev, f, CLG_SHAPE(6, 2, 3, 3), 4, &wg32);
    clg_tensor *w1 = rand16(dev, f, CLG_SHAPE(5, 4, 1, 1), 5, &w1_32);
    const clg_conv2d_params same = {{1, 1}, {1, 1}, {1, 1}, 1}, grouped = {{2, 2}, {1, 1}, {1, 1}, 2};
    /* The device table's matrix-unit engine sums in its own order: bit for bit without
     * it, within a 16-bit rounding with it. */
    const char *mma = table_mma(dev);
    for (int pass = 0; pass < (mma ? 2 : 1); pass++) {
        CHECK_OK(dev, clg_device_set_param(dev, "mma", pass ? mma : "none"));
        double one = pass ? (f->dtype == CLG_F16 ? 1e-3 : 8e-3) : 0;
        compare16(f, clg_conv2d(x, w, b, &same), clg_cast(clg_conv2d(x32, w32, b32, &same), f->dtype), one, "conv2d");
        compare16(f, clg_conv2d(x, wg, NULL, &grouped), clg_cast(clg_conv2d(x32, wg32, NULL, &grouped), f->dtype), one,
                  "conv2d grouped, stride 2");
        compare16(f, clg_conv2d(x, w1, NULL, NULL), clg_cast(clg_conv2d(x32, w1_32, NULL, NULL), f->dtype), one,
                  "conv2d 1x1");
    }
    CHECK_OK(dev, clg_device_set_param(dev, "mma", "none"));   /* the forward checks below are bit for bit */
    clg_tensor *xe = clg_narrow(x, 3, 0, 8), *xe32 = clg_narrow(x32, 3, 0, 8);   /* even, strided */
    same16(f, clg_max_pool2d(clg_contiguous(xe), 2, 2, 2, 2, 0, 0),
           clg_cast(clg_max_pool2d(clg_contiguous(xe32), 2, 2, 2, 2, 0, 0), f->dtype), "max_pool2d 2x2");
    same16(f, clg_max_pool2d(xe, 3, 3, 2, 2, 1, 1), clg_cast(clg_max_pool2d(xe32, 3, 3, 2, 2, 1, 1), f->dtype),
           "max_pool2d 3x3");
    same16(f, clg_avg_pool2d(x, 3, 3, 2, 2, 1, 1, true), clg_cast(clg_avg_pool2d(x32, 3, 3, 2, 2, 1, 1, true), f->dtype),
           "avg_pool2d");
    /* batch_norm: float32 statistics and parameters, or 16-bit parameters widened */
    clg_tensor *rm = clg_zeros(dev, CLG_F32, CLG_SHAPE(4)), *rv = clg_ones(dev, CLG_F32, CLG_SHAPE(4));
    clg_tensor *rm32 = clg_zeros(dev, CLG_F32, CLG_SHAPE(4)), *rv32 = clg_ones(dev, CLG_F32, CLG_SHAPE(4));
    clg_tensor *gamma32, *gamma = rand16(dev, f, CLG_SHAPE(4), 6, &gamma32), *beta32, *beta = rand16(dev, f, CLG_SHAPE(4), 7, &beta32);
    same16(f, clg_batch_norm(x, rm, rv, gamma32, beta32, true, 0.1, 1e-5),
           clg_cast(clg_batch_norm(x32, rm32, rv32, gamma32, beta32, true, 0.1, 1e-5), f->dtype), "batch_norm");
    float r16[8], r32[8];
    CHECK_OK(dev, clg_tensor_to_host(rm, r16, 16) || clg_tensor_to_host(rv, r16 + 4, 16) ||
                      clg_tensor_to_host(rm32, r32, 16) || clg_tensor_to_host(rv32, r32 + 4, 16));
    CHECK_MSG(!memcmp(r16, r32, sizeof r16), "%s batch_norm running statistics differ", clg_dtype_name(f->dtype));
    same16(f, clg_batch_norm(x, rm, rv, gamma, beta, false, 0.1, 1e-5),
           clg_cast(clg_batch_norm(x32, rm32, rv32, gamma32, beta32, false, 0.1, 1e-5), f->dtype), "batch_norm eval");
    CHECK(clg_batch_norm(x, clg_cast(rm, f->dtype), clg_cast(rv, f->dtype), NULL, NULL, true, 0.1, 1e-5) == NULL &&
          clg_device_last_status(dev) == CLG_ERR_DTYPE);   /* running statistics stay float32 */
    clg_tensor *lw32, *lw = rand16(dev, f, CLG_SHAPE(9), 8, &lw32);
    same16(f, clg_layer_norm(x, 1, lw, NULL, 1e-5), clg_cast(clg_layer_norm(x32, 1, lw32, NULL, 1e-5), f->dtype),
           "layer_norm");
    clg_manual_seed(dev, 42);
    clg_tensor *d16 = clg_dropout(xe, 0.3, true);
    clg_manual_seed(dev, 42);
    same16(f, d16, clg_cast(clg_dropout(xe32, 0.3, true), f->dtype), "dropout");
    /* backward: conv, batch_norm with a 16-bit weight (widened), tanh, avg_pool; then
     * layer_norm with a 16-bit weight; max_pool's scatter of a gradient is exact */
    clg_tensor *g32, *g6 = rand16(dev, f, CLG_SHAPE(6), 9, &g32), *k32, *k = rand16(dev, f, CLG_SHAPE(3, 6, 5, 5), 10, &k32);
    clg_tensor *in16[4] = {x, w, g6, lw}, *in32[4] = {x32, w32, g32, lw32};
    for (int t = 0; t < 4; t++) {
        CHECK_OK(dev, clg_tensor_set_requires_grad(in16[t], true));
        CHECK_OK(dev, clg_tensor_set_requires_grad(in32[t], true));
    }
    clg_tensor *h16 = clg_avg_pool2d(clg_tanh(clg_batch_norm(clg_conv2d(x, w, b, &same), NULL, NULL, g6, NULL, true, 0.1, 1e-5)),
                                     3, 3, 2, 2, 1, 1, true);
    clg_tensor *h32 = clg_avg_pool2d(clg_tanh(clg_batch_norm(clg_conv2d(x32, w32, b32, &same), NULL, NULL, g32, NULL, true, 0.1, 1e-5)),
                                     3, 3, 2, 2, 1, 1, true);
    CHECK_OK(dev, clg_backward(clg_sum(clg_cast(clg_mul(h16, k), CLG_F32), 0, NULL, false), NULL));
    CHECK_OK(dev, clg_backward(clg_sum(clg_mul(h32, k32), 0, NULL, false), NULL));
    double rel = f->dtype == CLG_F16 ? 4e-3 : 3e-2;
    close16(f, clg_tensor_grad(x), clg_tensor_grad(x32), rel, "conv+batch_norm+avg_pool dx");
    close16(f, clg_tensor_grad(w), clg_tensor_grad(w32), rel, "conv dw");
    close16(f, clg_tensor_grad(g6), clg_tensor_grad(g32), rel, "batch_norm dweight");
    for (int t = 0; t < 4; t++) {
        clg_tensor_zero_grad(in16[t]);
        clg_tensor_zero_grad(in32[t]);
    }
    CHECK_OK(dev, clg_backward(clg_sum(clg_cast(clg_mul(clg_layer_norm(x, 1, lw, NULL, 1e-5), x), CLG_F32), 0, NULL, false), NULL));
    CHECK_OK(dev, clg_backward(clg_sum(clg_mul(clg_layer_norm(x32, 1, lw32, NULL, 1e-5), x32), 0, NULL, false), NULL));
    close16(f, clg_tensor_grad(x), clg_tensor_grad(x32), rel, "layer_norm dx");
    close16(f, clg_tensor_grad(lw), clg_tensor_grad(lw32), rel, "layer_norm dweight");
    clg_tensor_zero_grad(x);
    clg_tensor_zero_grad(x32);
    clg_tensor *m16 = clg_max_pool2d(x, 3, 3, 2, 2, 1, 1), *m32 = clg_max_pool2d(x32, 3, 3, 2, 2, 1, 1);
    clg_tensor *q32, *q = rand16(dev, f, 4, clg_tensor_shape(m16), 11, &q32);
    CHECK_OK(dev, clg_backward(clg_sum(clg_cast(clg_mul(m16, q), CLG_F32), 0, NULL, false), NULL));
    CHECK_OK(dev, clg_backward(clg_sum(clg_mul(m32, q32), 0, NULL, false), NULL));
    same16(f, clg_tensor_grad(x), clg_cast(clg_tensor_grad(x32), f->dtype), "max_pool2d dx");
    clg_tensor_zero_grad(x);   /* the 2 x 2 / 2 window's own backward (max_pool_2x2_bw) */
    clg_tensor_zero_grad(x32);
    m16 = clg_max_pool2d(x, 2, 2, 2, 2, 0, 0), m32 = clg_max_pool2d(x32, 2, 2, 2, 2, 0, 0);
    q = rand16(dev, f, 4, clg_tensor_shape(m16), 12, &q32);
    CHECK_OK(dev, clg_backward(clg_sum(clg_cast(clg_mul(m16, q), CLG_F32), 0, NULL, false), NULL));
    CHECK_OK(dev, clg_backward(clg_sum(clg_mul(m32, q32), 0, NULL, false), NULL));
    same16(f, clg_tensor_grad(x), clg_cast(clg_tensor_grad(x32), f->dtype), "max_pool2d 2x2 dx");
    if (mma) CHECK_OK(dev, clg_device_set_param(dev, "mma", mma));
    clg_scope_end(dev);
}

/* Autocast: inside, linear and conv2d of float32 operands compute as their 16-bit
 * casts, bit for bit; losses are float32; float32 weights get float32 gradients, the
 * widened 16-bit ones. Regions nest with one dtype. */
static void autocast(clg_device *dev, const fmt16 *f)
{
    clg_scope_begin(dev);
    clg_tensor *x32, *w32, *b32, *k32;
    rand16(dev, f, CLG_SHAPE(8, 12), 21, &x32);
    rand16(dev, f, CLG_SHAPE(5, 12), 22, &w32);
    rand16(dev, f, CLG_SHAPE(5), 23, &b32);
    rand16(dev, f, CLG_SHAPE(3, 2, 2, 2), 24, &k32);
    clg_tensor *w16 = clg_cast(w32, f->dtype), *x16 = clg_cast(x32, f->dtype), *b16 = clg_cast(b32, f->dtype);
    CHECK_OK(dev, clg_tensor_set_requires_grad(w32, true));
    CHECK_OK(dev, clg_tensor_set_requires_grad(w16, true));
    const int32_t lab[8] = {0, 1, 2, 3, 4, 0, 1, 2};
    clg_tensor *labels = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(8), lab);
    CHECK(clg_autocast_dtype(dev) == CLG_F32);
    CHECK_OK(dev, clg_autocast_begin(dev, f->dtype));
    CHECK(clg_autocast_dtype(dev) == f->dtype);
    clg_tensor *y = clg_linear(x32, w32, b32);
    clg_tensor *loss = clg_cross_entropy(y, labels, CLG_REDUCE_MEAN);
    clg_tensor *c = clg_conv2d(clg_reshape(x32, CLG_SHAPE(2, 2, 4, 6)), k32, NULL, NULL);
    CHECK(clg_autocast_begin(dev, f->dtype == CLG_F16 ? CLG_BF16 : CLG_F16) != CLG_OK);   /* one dtype */
    CHECK_OK(dev, clg_autocast_begin(dev, f->dtype));   /* nested */
    clg_autocast_end(dev);
    CHECK(clg_autocast_dtype(dev) == f->dtype);
    clg_autocast_end(dev);
    CHECK(clg_autocast_dtype(dev) == CLG_F32);
    CHECK(clg_autocast_begin(dev, CLG_F32) == CLG_ERR_DTYPE);
    same16(f, y, clg_linear(x16, w16, b16), "autocast linear");
    same16(f, c, clg_conv2d(clg_reshape(x16, CLG_SHAPE(2, 2, 4, 6)), clg_cast(k32, f->dtype), NULL, NULL), "autocast conv2d");
    CHECK(loss && clg_tensor_dtype(loss) == CLG_F32);
    CHECK_OK(dev, loss ? clg_backward(loss, NULL) : clg_device_last_status(dev));
    CHECK_OK(dev, clg_backward(clg_cross_entropy(clg_linear(x16, w16, b16), labels, CLG_REDUCE_MEAN), NULL));
    clg_tensor *g32 = clg_tensor_grad(w32), *g16 = clg_tensor_grad(w16);
    float a[60], e[60];
    CHECK(g32 && g16 && clg_tensor_dtype(g32) == CLG_F32 && clg_tensor_to_host(g32, a, sizeof a) == CLG_OK &&
          clg_tensor_to_host(clg_cast(g16, CLG_F32), e, sizeof e) == CLG_OK && !memcmp(a, e, sizeof a));
    /* A float32 operand meets a 16-bit one (a residual stream plus a 16-bit branch): inside
     * the region the 16-bit one widens, both ways round, and each leaf's gradient comes
     * back in its own dtype; outside, a dtype error naming both. */
    clg_tensor *r32 = clg_cast(x32, CLG_F32), *h16 = clg_cast(clg_mul_scalar(x32, 0.5), f->dtype);
    CHECK_OK(dev, clg_tensor_set_requires_grad(r32, true));
    CHECK_OK(dev, clg_tensor_set_requires_grad(h16, true));
    CHECK_OK(dev, clg_autocast_begin(dev, f->dtype));
    clg_tensor *sum = clg_add(r32, h16), *sum2 = clg_mul(h16, r32);
    clg_autocast_end(dev);
    CHECK(sum && sum2 && clg_tensor_dtype(sum) == CLG_F32 && clg_tensor_dtype(sum2) == CLG_F32);
    float got[96], want[96];
    CHECK(sum && clg_tensor_to_host(sum, got, sizeof got) == CLG_OK &&
          clg_tensor_to_host(clg_add(r32, clg_cast(h16, CLG_F32)), want, sizeof want) == CLG_OK &&
          !memcmp(got, want, sizeof got));
    CHECK_OK(dev, sum && sum2 ? clg_backward(clg_sum(clg_add(sum, sum2), 0, NULL, false), NULL) : clg_device_last_status(dev));
    CHECK(clg_tensor_grad(r32) && clg_tensor_dtype(clg_tensor_grad(r32)) == CLG_F32 && clg_tensor_grad(h16) &&
          clg_tensor_dtype(clg_tensor_grad(h16)) == f->dtype);
    /* d(r + h + h r)/dh = 1 + r, in 16 bits */
    CHECK(clg_tensor_to_host(clg_cast(clg_tensor_grad(h16), CLG_F32), got, sizeof got) == CLG_OK &&
          clg_tensor_to_host(clg_cast(clg_cast(clg_add_scalar(r32, 1.0), f->dtype), CLG_F32), want, sizeof want) == CLG_OK &&
          !memcmp(got, want, sizeof got));
    CHECK(clg_add(r32, h16) == NULL && clg_device_last_status(dev) == CLG_ERR_DTYPE &&
          strstr(clg_device_error(dev), "dtypes differ"));
    clg_scope_end(dev);
}

/* Gradients cross casts both ways: a float32 weight, its 16-bit copy times a 16-bit
 * constant c, summed in float32: the weight's gradient is c, widened, exactly; and a
 * 16-bit leaf gets a 16-bit gradient. */
static void autograd(clg_device *dev, const fmt16 *f)
{
    clg_scope_begin(dev);
    const float wv[4] = {0.1f, -2.0f, 3.3f, 1e-3f}, cv[4] = {0.5f, -7.25f, 1.0f / 3, 100.0f};
    clg_tensor *w = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(4), wv);
    clg_tensor *c = clg_cast(clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(4), cv), f->dtype);
    CHECK_OK(dev, w ? clg_tensor_set_requires_grad(w, true) : clg_device_last_status(dev));
    clg_tensor *h = clg_cast(w, f->dtype);
    clg_tensor *loss = clg_sum(clg_cast(clg_mul(h, c), CLG_F32), 0, NULL, false);
    CHECK_OK(dev, loss ? clg_backward(loss, NULL) : clg_device_last_status(dev));
    float g[4] = {0};
    CHECK_OK(dev, clg_tensor_grad(w) ? clg_tensor_to_host(clg_tensor_grad(w), g, sizeof g) : clg_device_last_status(dev));
    for (int i = 0; i < 4; i++)
        CHECK_MSG(g[i] == from16(f, to16(f, cv[i])), "%s: d/dw [%d] = %.9g, want %.9g", clg_dtype_name(f->dtype), i, g[i],
                  from16(f, to16(f, cv[i])));
    /* cross-entropy of 16-bit logits: float32, as of the widened logits; the gradient
     * comes back in 16 bits, the float32 one rounded */
    const float lv[6] = {0.5f, -1.25f, 3.0f, 2.0f, 0.0f, -0.75f};
    const int32_t lab[2] = {2, 0};
    clg_tensor *l16 = clg_cast(clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(2, 3), lv), f->dtype);
    clg_tensor *l32 = clg_cast(l16, CLG_F32), *labels = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(2), lab);
    CHECK_OK(dev, clg_tensor_set_requires_grad(l16, true));
    CHECK_OK(dev, clg_tensor_set_requires_grad(l32, true));
    clg_tensor *ce16 = clg_cross_entropy(l16, labels, CLG_REDUCE_MEAN), *ce32 = clg_cross_entropy(l32, labels, CLG_REDUCE_MEAN);
    double v16 = 0, v32 = 1;
    CHECK(ce16 && clg_tensor_dtype(ce16) == CLG_F32 && clg_tensor_item(ce16, &v16) == CLG_OK &&
          clg_tensor_item(ce32, &v32) == CLG_OK && v16 == v32);
    CHECK_OK(dev, clg_backward(ce16, NULL));
    CHECK_OK(dev, clg_backward(ce32, NULL));
    same16(f, clg_tensor_grad(l16), clg_cast(clg_tensor_grad(l32), f->dtype), "cross_entropy gradient");
    /* a 16-bit leaf */
    clg_tensor *leaf = clg_clone(c);
    CHECK_OK(dev, leaf ? clg_tensor_set_requires_grad(leaf, true) : clg_device_last_status(dev));
    CHECK_OK(dev, clg_backward(clg_sum(clg_cast(clg_mul(leaf, leaf), CLG_F32), 0, NULL, false), NULL));
    clg_tensor *lg = clg_tensor_grad(leaf);
    CHECK(lg && clg_tensor_dtype(lg) == f->dtype);
    uint16_t lb[4];
    CHECK_OK(dev, lg ? clg_tensor_to_host(lg, lb, sizeof lb) : clg_device_last_status(dev));
    for (int i = 0; i < 4 && lg; i++) {   /* d(x*x) = g x + g x, each term rounded, then their sum */
        float x = from16(f, to16(f, cv[i]));
        float t = from16(f, to16(f, x));
        CHECK_MSG(lb[i] == to16(f, from16(f, to16(f, t)) + from16(f, to16(f, t))), "%s leaf [%d]: %04x",
                  clg_dtype_name(f->dtype), i, lb[i]);
    }
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    inputs = malloc((4 * 0x10000 + 1000100) * sizeof *inputs);
    if (!inputs) return 1;
    const fmt16 *fmts[2] = {&F16, &BF16};
    for (int i = 0; i < 2; i++) {
        make_inputs(fmts[i]);
        host_decode(fmts[i]);
        host_round(fmts[i]);
        device_decode(dev, fmts[i]);
        device_round(dev, fmts[i]);
        layouts(dev, fmts[i]);
        elementwise(dev, fmts[i]);
        checkpoint(dev, fmts[i]);
        autograd(dev, fmts[i]);
        layer_gradients(dev, fmts[i]);
        conv_norm(dev, fmts[i]);
        autocast(dev, fmts[i]);
    }
    npy_file(dev);
    free(inputs);
    clg_device_close(dev);
    return check_report("test_half");
}
