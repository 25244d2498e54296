/* test_nn_init: the torch.nn.init initialisers. Statistics over 200,000 values from a
 * fixed seed (mean and standard deviation within about 5 standard errors of PyTorch's
 * formulas; bounds exact for the uniform and truncated draws), fans of 2-D to 4-D
 * shapes, gains, same seed same values, views, 16-bit tensors, parameters that require
 * a gradient, and every refusal naming its function. */
#include <math.h>
#include <string.h>

#include "optest.h"

#define N_ROWS 400
#define N_COLS 500
#define N (N_ROWS * N_COLS)

typedef struct stats { double mean, std, min, max; bool finite; } stats;

static stats stats_of(clg_tensor *t)
{
    stats s = {0, 0, INFINITY, -INFINITY, true};
    double *v = optest_read(t);
    int64_t n = clg_tensor_numel(t);
    if (!v || n < 2) {
        free(v);
        return (stats){NAN, NAN, NAN, NAN, false};
    }
    for (int64_t i = 0; i < n; i++) {
        s.mean += v[i];
        s.min = fmin(s.min, v[i]);
        s.max = fmax(s.max, v[i]);
        s.finite = s.finite && isfinite(v[i]);
    }
    s.mean /= (double)n;
    for (int64_t i = 0; i < n; i++) s.std += (v[i] - s.mean) * (v[i] - s.mean);
    s.std = sqrt(s.std / (double)(n - 1));
    free(v);
    return s;
}

/* mean and std within 5 standard errors of n values of a distribution of that std (the
 * standard error of a sample std is about std / sqrt(2n); 2n for the tails' excess). */
static void check_moments(const char *what, stats s, double mean, double std, int64_t n)
{
    double se = std / sqrt((double)n);
    CHECK_MSG(fabs(s.mean - mean) <= 5 * se, "%s: mean %.6g, expected %.6g (+-%.3g)", what, s.mean, mean, 5 * se);
    CHECK_MSG(fabs(s.std - std) <= 5 * std / sqrt((double)n), "%s: std %.6g, expected %.6g", what, s.std, std);
    CHECK_MSG(s.finite, "%s: a value is not finite", what);
}

static clg_tensor *zeros(clg_device *dev, clg_dtype dt, int ndim, const int64_t *shape)
{
    return clg_zeros(dev, dt, ndim, shape);
}

static void uniform_and_normal(clg_device *dev, clg_dtype dt)
{
    char what[64];
    clg_scope_begin(dev);
    clg_manual_seed(dev, 11);
    clg_tensor *t = zeros(dev, dt, CLG_SHAPE(N_ROWS, N_COLS));
    CHECK_OK(dev, clg_init_uniform(t, -0.5, 1.5));
    stats s = stats_of(t);
    snprintf(what, sizeof what, "uniform %s", clg_dtype_name(dt));
    check_moments(what, s, 0.5, 2 / sqrt(12.0), N);
    CHECK_MSG(s.min >= -0.5 && s.max <= 1.5 && s.min < -0.499 && s.max > 1.499, "%s: [%.9g, %.9g]", what, s.min, s.max);

    CHECK_OK(dev, clg_init_normal(t, 3, 2));
    snprintf(what, sizeof what, "normal %s", clg_dtype_name(dt));
    check_moments(what, stats_of(t), 3, 2, N);
    CHECK_OK(dev, clg_init_normal(t, -1.25, 0));   /* std 0: the mean itself */
    s = stats_of(t);
    CHECK(s.min == -1.25 && s.max == -1.25);
    clg_scope_end(dev);
}

/* The moments of N(mu, sigma^2) truncated to [a, b]. */
static void truncated_moments(double mu, double sigma, double a, double b, double *mean, double *std)
{
    double al = (a - mu) / sigma, be = (b - mu) / sigma;
    double pa = exp(-al * al / 2) / sqrt(2 * M_PI), pb = exp(-be * be / 2) / sqrt(2 * M_PI);
    double z = (erf(be / sqrt(2.0)) - erf(al / sqrt(2.0))) / 2;
    double d = (pa - pb) / z;
    *mean = mu + sigma * d;
    double apa = isinf(al) ? 0 : al * pa, bpb = isinf(be) ? 0 : be * pb;   /* x phi(x) -> 0 at infinity */
    *std = sigma * sqrt(1 + (apa - bpb) / z - d * d);
}

static void trunc_normal(clg_device *dev, clg_dtype dt)
{
    static const double cases[][4] = {{0.5, 2, -1, 4}, {0, 1, -2, 2}, {0, 0.02, -0.04, 0.04}, {1, 1, 1.5, 3}};
    char what[96];
    clg_scope_begin(dev);
    clg_manual_seed(dev, 12);
    clg_tensor *t = zeros(dev, dt, CLG_SHAPE(N_ROWS, N_COLS));
    for (int c = 0; c < 4; c++) {
        const double *p = cases[c];
        double a = p[2], b = p[3], mean, std;
        if (dt == CLG_F32) a = (float)a, b = (float)b;   /* the bounds the values must hold */
        truncated_moments(p[0], p[1], a, b, &mean, &std);
        CHECK_OK(dev, clg_init_trunc_normal(t, p[0], p[1], p[2], p[3]));
        stats s = stats_of(t);
        snprintf(what, sizeof what, "trunc_normal(%g, %g, %g, %g) %s", p[0], p[1], p[2], p[3], clg_dtype_name(dt));
        check_moments(what, s, mean, std, N);
        double reach = (b - a) * 1e-3;   /* 200k draws come this close to both ends */
        CHECK_MSG(s.min >= a && s.max <= b && s.min < a + reach && s.max > b - reach, "%s: [%.9g, %.9g]", what, s.min,
                  s.max);
    }
    /* an infinite bound: every value finite, below the other bound */
    CHECK_OK(dev, clg_init_trunc_normal(t, 0, 1, -INFINITY, 0.5));
    stats s = stats_of(t);
    double mean, std;
    truncated_moments(0, 1, -INFINITY, 0.5, &mean, &std);
    check_moments("trunc_normal(0, 1, -inf, 0.5)", s, mean, std, N);
    CHECK(s.max <= 0.5);
    CHECK_OK(dev, clg_init_trunc_normal(t, 7, 0, -1, 2));   /* std 0: the mean clamped */
    s = stats_of(t);
    CHECK(s.min == 2 && s.max == 2);
    clg_scope_end(dev);
}

static void fan_based(clg_device *dev, clg_dtype dt)
{
    char what[96];
    clg_scope_begin(dev);
    clg_manual_seed(dev, 13);
    /* Glorot on [400, 500]: fans 500 and 400 */
    clg_tensor *t = zeros(dev, dt, CLG_SHAPE(N_ROWS, N_COLS));
    double bound = 1.5 * sqrt(6.0 / (N_ROWS + N_COLS));
    CHECK_OK(dev, clg_init_xavier_uniform(t, 1.5));
    stats s = stats_of(t);
    snprintf(what, sizeof what, "xavier_uniform %s", clg_dtype_name(dt));
    check_moments(what, s, 0, bound / sqrt(3.0), N);
    CHECK_MSG(s.min >= -bound && s.max <= bound && s.max > 0.999 * bound, "%s: [%g, %g] of %g", what, s.min, s.max,
              bound);
    CHECK_OK(dev, clg_init_xavier_normal(t, 2));
    snprintf(what, sizeof what, "xavier_normal %s", clg_dtype_name(dt));
    check_moments(what, stats_of(t), 0, 2 * sqrt(2.0 / (N_ROWS + N_COLS)), N);
    /* PyTorch's Linear: kaiming_uniform(a = sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)) */
    CHECK_OK(dev, clg_init_kaiming_uniform(t, sqrt(5.0), CLG_FAN_IN, CLG_GAIN_LEAKY_RELU));
    s = stats_of(t);
    bound = 1 / sqrt((double)N_COLS);
    snprintf(what, sizeof what, "kaiming_uniform %s", clg_dtype_name(dt));
    check_moments(what, s, 0, bound / sqrt(3.0), N);
    CHECK_MSG(s.min >= -bound && s.max <= bound && s.max > 0.999 * bound, "%s: [%g, %g] of %g", what, s.min, s.max,
              bound);
    /* a conv weight [256, 96, 3, 3]: fan_out 256 * 9 (torchvision's ResNet convs) */
    clg_tensor *w = zeros(dev, dt, CLG_SHAPE(256, 96, 3, 3));
    CHECK_OK(dev, clg_init_kaiming_normal(w, 0, CLG_FAN_OUT, CLG_GAIN_RELU));
    snprintf(what, sizeof what, "kaiming_normal fan_out %s", clg_dtype_name(dt));
    check_moments(what, stats_of(w), 0, sqrt(2.0 / (256 * 9)), 256 * 96 * 9);
    CHECK_OK(dev, clg_init_kaiming_normal(w, 0, CLG_FAN_IN, CLG_GAIN_TANH));
    snprintf(what, sizeof what, "kaiming_normal fan_in tanh %s", clg_dtype_name(dt));
    check_moments(what, stats_of(w), 0, 5.0 / 3 / sqrt(96 * 9.0), 256 * 96 * 9);
    clg_scope_end(dev);
}

static void fans_and_gains(clg_device *dev)
{
    clg_scope_begin(dev);
    int64_t fi = -1, fo = -1;
    CHECK_OK(dev, clg_init_calculate_fans(zeros(dev, CLG_F32, CLG_SHAPE(5, 3)), &fi, &fo));
    CHECK(fi == 3 && fo == 5);
    CHECK_OK(dev, clg_init_calculate_fans(zeros(dev, CLG_F32, CLG_SHAPE(8, 4, 3, 2)), &fi, &fo));
    CHECK(fi == 4 * 6 && fo == 8 * 6);
    CHECK_OK(dev, clg_init_calculate_fans(zeros(dev, CLG_F32, CLG_SHAPE(6, 2, 5)), &fi, NULL));
    CHECK(fi == 10);
    CHECK_OK(dev, clg_init_calculate_fans(zeros(dev, CLG_F32, CLG_SHAPE(6, 2, 5)), NULL, &fo));
    CHECK(fo == 30);
    CHECK(clg_init_calculate_fans(zeros(dev, CLG_F32, CLG_SHAPE(7)), &fi, &fo) == CLG_ERR_SHAPE);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_init_calculate_fans") && strstr(clg_device_error(dev), "[7]"), "%s",
              clg_device_error(dev));
    clg_scope_end(dev);

    CHECK(clg_init_calculate_gain(CLG_GAIN_LINEAR, 0) == 1 && clg_init_calculate_gain(CLG_GAIN_CONV, 0) == 1);
    CHECK(clg_init_calculate_gain(CLG_GAIN_SIGMOID, 0) == 1);
    CHECK(fabs(clg_init_calculate_gain(CLG_GAIN_TANH, 0) - 5.0 / 3) < 1e-15);
    CHECK(fabs(clg_init_calculate_gain(CLG_GAIN_RELU, 0) - sqrt(2.0)) < 1e-15);
    CHECK(fabs(clg_init_calculate_gain(CLG_GAIN_LEAKY_RELU, 0.2) - sqrt(2 / 1.04)) < 1e-15);
    CHECK(fabs(clg_init_calculate_gain(CLG_GAIN_LEAKY_RELU, 0.01) - sqrt(2 / 1.0001)) < 1e-15);
    CHECK(clg_init_calculate_gain(CLG_GAIN_SELU, 0) == 0.75);
    CHECK(isnan(clg_init_calculate_gain((clg_nonlinearity)99, 0)));
    CHECK_MSG(strstr(clg_last_error(), "clg_init_calculate_gain"), "%s", clg_last_error());
    CHECK(isnan(clg_init_calculate_gain(CLG_GAIN_LEAKY_RELU, NAN)));
}

/* The same seed gives the same values; the generator moves on between draws. */
static void reproducible(clg_device *dev)
{
    clg_scope_begin(dev);
    clg_tensor *t[3];
    for (int i = 0; i < 3; i++) t[i] = zeros(dev, CLG_F32, CLG_SHAPE(64, 32, 3, 3));
    clg_manual_seed(dev, 99);
    CHECK_OK(dev, clg_init_kaiming_normal(t[0], 0, CLG_FAN_OUT, CLG_GAIN_RELU));
    CHECK_OK(dev, clg_init_kaiming_normal(t[2], 0, CLG_FAN_OUT, CLG_GAIN_RELU));
    clg_manual_seed(dev, 99);
    CHECK_OK(dev, clg_init_kaiming_normal(t[1], 0, CLG_FAN_OUT, CLG_GAIN_RELU));
    double *a = optest_read(t[0]), *b = optest_read(t[1]), *c = optest_read(t[2]);
    CHECK(a && b && c && !memcmp(a, b, 64 * 32 * 9 * sizeof *a) && memcmp(a, c, 64 * 32 * 9 * sizeof *a));
    free(a);
    free(b);
    free(c);
    /* and for the truncated normal, whose values come back from the host */
    clg_manual_seed(dev, 5);
    CHECK_OK(dev, clg_init_trunc_normal(t[0], 0, 1, -2, 2));
    clg_manual_seed(dev, 5);
    CHECK_OK(dev, clg_init_trunc_normal(t[1], 0, 1, -2, 2));
    a = optest_read(t[0]);
    b = optest_read(t[1]);
    CHECK(a && b && !memcmp(a, b, 64 * 32 * 9 * sizeof *a));
    free(a);
    free(b);
    clg_scope_end(dev);
}

/* Views are written where they lie, 16-bit tensors through float32, parameters that
 * require a gradient outside autograd (and keep requiring it), empty tensors not at all. */
static void targets(clg_device *dev)
{
    clg_scope_begin(dev);
    clg_manual_seed(dev, 3);
    clg_tensor *base = zeros(dev, CLG_F32, CLG_SHAPE(6, 8));
    clg_tensor *cols = clg_slice(base, 1, 1, 8, 2);   /* columns 1, 3, 5, 7 */
    CHECK_OK(dev, clg_init_ones(cols));
    CHECK_OK(dev, clg_init_uniform(clg_transpose(clg_narrow(base, 0, 4, 2), 0, 1), 2, 3));
    double *v = optest_read(base);
    for (int i = 0; v && i < 48; i++) {
        int r = i / 8, c = i % 8;
        double want_lo = r >= 4 ? 2 : c % 2 ? 1 : 0, want_hi = r >= 4 ? 3 : want_lo;
        CHECK_MSG(v[i] >= want_lo && v[i] <= want_hi, "view element (%d, %d) = %g", r, c, v[i]);
    }
    free(v);
    clg_dtype halves[2] = {CLG_F16, CLG_BF16};
    for (int h = 0; h < 2; h++) {
        clg_tensor *t = zeros(dev, halves[h], CLG_SHAPE(100, 200));
        CHECK_OK(dev, clg_init_uniform(t, -1, 1));
        stats s = stats_of(t);
        CHECK_MSG(s.min >= -1 && s.max <= 1 && fabs(s.mean) < 0.02 && fabs(s.std - 1 / sqrt(3.0)) < 0.01,
                  "%s uniform: mean %g std %g [%g, %g]", clg_dtype_name(halves[h]), s.mean, s.std, s.min, s.max);
        CHECK_OK(dev, clg_init_trunc_normal(t, 0, 1, -0.5, 0.5));
        s = stats_of(t);
        CHECK(s.min >= -0.5 && s.max <= 0.5);
        CHECK_OK(dev, clg_init_constant(t, 0.25));
        s = stats_of(t);
        CHECK(s.min == 0.25 && s.max == 0.25);
    }
    clg_tensor *p = clg_tensor_keep(zeros(dev, CLG_F32, CLG_SHAPE(10, 10)));
    clg_scope_end(dev);
    CHECK_OK(dev, clg_tensor_set_requires_grad(p, true));
    CHECK_OK(dev, clg_init_xavier_normal(p, 1));
    CHECK_OK(dev, clg_init_trunc_normal(p, 0, 1, -1, 1));
    CHECK(clg_tensor_requires_grad(p));
    stats s = stats_of(p);
    CHECK(s.std > 0.3 && s.min >= -1 && s.max <= 1);
    clg_tensor_free(p);
    clg_scope_begin(dev);
    clg_tensor *empty = zeros(dev, CLG_F32, CLG_SHAPE(0, 5));
    CHECK_OK(dev, clg_init_kaiming_uniform(empty, 0, CLG_FAN_IN, CLG_GAIN_RELU));
    CHECK_OK(dev, clg_init_trunc_normal(empty, 0, 1, -2, 2));
    CHECK_OK(dev, clg_init_normal(empty, 0, 1));
    clg_scope_end(dev);
}

/* status st, a message naming fn, and t untouched (still zeros). */
static void refused(clg_device *dev, const char *what, clg_status st, clg_status want, const char *fn, clg_tensor *t)
{
    CHECK_MSG(st == want, "%s: status %s, expected %s", what, clg_status_str(st), clg_status_str(want));
    CHECK_MSG(strstr(clg_device_error(dev), fn), "%s: message \"%s\" does not name %s", what, clg_device_error(dev), fn);
    stats s = stats_of(t);
    CHECK_MSG(s.min == 0 && s.max == 0, "%s: the tensor changed", what);
}

static void refusals(clg_device *dev)
{
    clg_scope_begin(dev);
    int32_t ids[6] = {0};
    clg_tensor *idx = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(2, 3), ids);
    clg_tensor *vec = zeros(dev, CLG_F32, CLG_SHAPE(7)), *m = zeros(dev, CLG_F32, CLG_SHAPE(4, 3));
    CHECK(clg_init_uniform(idx, 0, 1) == CLG_ERR_DTYPE && strstr(clg_device_error(dev), "clg_init_uniform") &&
          strstr(clg_device_error(dev), "int32"));
    CHECK(clg_init_kaiming_normal(idx, 0, CLG_FAN_IN, CLG_GAIN_RELU) == CLG_ERR_DTYPE &&
          strstr(clg_device_error(dev), "clg_init_kaiming_normal"));
    CHECK(clg_init_zeros(idx) == CLG_ERR_DTYPE && strstr(clg_device_error(dev), "clg_init_zeros"));
    refused(dev, "xavier_uniform 1-D", clg_init_xavier_uniform(vec, 1), CLG_ERR_SHAPE, "clg_init_xavier_uniform", vec);
    refused(dev, "xavier_normal 1-D", clg_init_xavier_normal(vec, 1), CLG_ERR_SHAPE, "clg_init_xavier_normal", vec);
    refused(dev, "kaiming_uniform 1-D", clg_init_kaiming_uniform(vec, 0, CLG_FAN_IN, CLG_GAIN_RELU), CLG_ERR_SHAPE,
            "clg_init_kaiming_uniform", vec);
    refused(dev, "kaiming_normal 1-D", clg_init_kaiming_normal(vec, 0, CLG_FAN_OUT, CLG_GAIN_RELU), CLG_ERR_SHAPE,
            "clg_init_kaiming_normal", vec);
    refused(dev, "normal std < 0", clg_init_normal(m, 0, -1), CLG_ERR_INVALID_ARGUMENT, "clg_init_normal", m);
    refused(dev, "normal NaN mean", clg_init_normal(m, NAN, 1), CLG_ERR_INVALID_ARGUMENT, "clg_init_normal", m);
    refused(dev, "uniform a > b", clg_init_uniform(m, 1, 0), CLG_ERR_INVALID_ARGUMENT, "clg_init_uniform", m);
    refused(dev, "uniform a == b", clg_init_uniform(m, 1, 1), CLG_ERR_INVALID_ARGUMENT, "clg_init_uniform", m);
    refused(dev, "uniform infinite", clg_init_uniform(m, 0, INFINITY), CLG_ERR_INVALID_ARGUMENT, "clg_init_uniform", m);
    refused(dev, "trunc_normal a >= b", clg_init_trunc_normal(m, 0, 1, 2, 2), CLG_ERR_INVALID_ARGUMENT,
            "clg_init_trunc_normal", m);
    refused(dev, "trunc_normal std < 0", clg_init_trunc_normal(m, 0, -1, -2, 2), CLG_ERR_INVALID_ARGUMENT,
            "clg_init_trunc_normal", m);
    refused(dev, "xavier gain < 0", clg_init_xavier_uniform(m, -1), CLG_ERR_INVALID_ARGUMENT, "clg_init_xavier_uniform", m);
    refused(dev, "kaiming bad mode", clg_init_kaiming_uniform(m, 0, (clg_fan_mode)7, CLG_GAIN_RELU),
            CLG_ERR_INVALID_ARGUMENT, "clg_init_kaiming_uniform", m);
    refused(dev, "kaiming bad nonlinearity", clg_init_kaiming_normal(m, 0, CLG_FAN_IN, (clg_nonlinearity)42),
            CLG_ERR_INVALID_ARGUMENT, "clg_init_kaiming_normal", m);
    /* an expanded view cannot be written: the op's refusal, under the initialiser's name */
    clg_tensor *wide = clg_expand(zeros(dev, CLG_F32, CLG_SHAPE(1, 3)), CLG_SHAPE(4, 3));
    CHECK(clg_init_normal(wide, 0, 1) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_init_normal: clg_copy_"), "%s", clg_device_error(dev));
    clg_scope_end(dev);
    /* no tensor: the thread's last error */
    CHECK(clg_init_ones(NULL) == CLG_ERR_INVALID_ARGUMENT && strstr(clg_last_error(), "clg_init_ones"));
    CHECK(clg_init_trunc_normal(NULL, 0, 1, -2, 2) == CLG_ERR_INVALID_ARGUMENT &&
          strstr(clg_last_error(), "clg_init_trunc_normal"));
    CHECK(clg_init_calculate_fans(NULL, NULL, NULL) == CLG_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    clg_device *dev = check_open_device();
    clg_dtype dts[2];
    int ndt = optest_float_dtypes(dev, dts);
    for (int i = 0; i < ndt; i++) {
        uniform_and_normal(dev, dts[i]);
        trunc_normal(dev, dts[i]);
        fan_based(dev, dts[i]);
    }
    fans_and_gains(dev);
    reproducible(dev);
    targets(dev);
    refusals(dev);
    clg_device_close(dev);
    return check_report("test_nn_init");
}
