/* The elementwise ops of one operand, the activations and where (src/tensor/unary.c):
 * forward against plain-C references in double, in every layout and at sizes around
 * the work-group size; NaN and Inf; zero-size tensors; bad inputs; and that each
 * backward is a single kernel, launched as the device's parameter table says. The ops
 * without parameters are the rows of src/tensor/unary_ops.def. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "optest.h"
#include "tensor_impl.h"

/* ---- the ops and their references ------------------------------------------------------- */

typedef clg_tensor *(*op_fn)(clg_tensor *a, const double *p);
typedef double (*ref_fn)(double x, const double *p);

typedef struct unary_case {
    const char *name;       /* as in clg_<name> */
    op_fn op;
    ref_fn ref;
    double p[2];            /* the op's parameters */
    double lo, hi;          /* the range of random inputs */
    const char *grad_kernel; /* the backward's kernel (its name's start) */
} unary_case;

/* The rows of unary_ops.def: op_<name>, ref_<name> (the row's plain-C definition), and
 * the kernel the backward launches (its grad kind). */
#define GRAD_KERNEL_FROM_INPUT(name) #name "_grad"
#define GRAD_KERNEL_FROM_OUTPUT(name) #name "_grad"
#define GRAD_KERNEL_FLAT(name) "zero_grad"
#define GRAD_KERNEL_SELF(name) #name
#define CLG_UNARY(name, grad, lo, hi, glo, ghi, gsign, ref, torch)                              \
    static clg_tensor *op_##name(clg_tensor *a, const double *p) { (void)p; return clg_##name(a); } \
    static double ref_##name(double x, const double *p) { (void)p; return (ref); }
#include "unary_ops.def"
#undef CLG_UNARY

/* The ops with parameters. */
static clg_tensor *op_clamp(clg_tensor *a, const double *p) { return clg_clamp(a, p[0], p[1]); }
static clg_tensor *op_leaky(clg_tensor *a, const double *p) { return clg_leaky_relu(a, p[0]); }
static clg_tensor *op_softplus(clg_tensor *a, const double *p) { return clg_softplus(a, p[0], p[1]); }
static clg_tensor *op_elu(clg_tensor *a, const double *p) { return clg_elu(a, p[0]); }
static double ref_clamp(double x, const double *p) { return isnan(x) ? x : fmin(fmax(x, p[0]), p[1]); }
static double ref_leaky(double x, const double *p) { return x > 0 ? x : x * p[0]; }
/* PyTorch's definition, evaluated in double (where exp does not overflow as soon). */
static double ref_softplus(double x, const double *p)
{
    return x * p[0] > p[1] ? x : log1p(exp(x * p[0])) / p[0];
}
static double ref_elu(double x, const double *p) { return x > 0 ? x : p[0] * expm1(x); }

static const unary_case cases[] = {
#define CLG_UNARY(name, grad, lo, hi, ...) {#name, op_##name, ref_##name, {0, 0}, lo, hi, GRAD_KERNEL_##grad(name)},
#include "unary_ops.def"
#undef CLG_UNARY
    {"clamp", op_clamp, ref_clamp, {-0.5, 0.7}, -2, 2, "clamp_grad"},
    {"leaky_relu", op_leaky, ref_leaky, {0.1, 0}, -3, 3, "leaky_relu_grad"},
    {"softplus", op_softplus, ref_softplus, {1, 20}, -30, 30, "softplus_grad"},
    {"softplus", op_softplus, ref_softplus, {2, 5}, -5, 5, "softplus_grad"},
    /* a threshold so high that the naive log(1 + exp(x)) overflows float32 below it */
    {"softplus", op_softplus, ref_softplus, {1, 200}, -120, 120, "softplus_grad"},
    {"softplus", op_softplus, ref_softplus, {-0.5, 20}, -10, 10, "softplus_grad"},
    {"elu", op_elu, ref_elu, {1, 0}, -5, 5, "elu_grad"},
    {"elu", op_elu, ref_elu, {0.3, 0}, -5, 5, "elu_grad"},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* The reference of c at each x, as the device dtype holds it: float32 inputs are
 * rounded first and results rounded after (so that overflow becomes Inf there too). */
static void reference(const unary_case *c, clg_dtype dt, double *x, double *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (dt == CLG_F32) x[i] = (float)x[i];
        want[i] = c->ref(x[i], c->p);
        if (dt == CLG_F32) want[i] = (float)want[i];
    }
}

static double atol_of(clg_dtype dt) { return dt == CLG_F32 ? 2e-6 : 1e-12; }
static double rtol_of(clg_dtype dt) { return dt == CLG_F32 ? 1e-5 : 1e-10; }

static int ndtypes(clg_device *dev) { return optest_fp64(dev) ? 2 : 1; }
static const clg_dtype dtypes[2] = {CLG_F32, CLG_F64};

/* ---- forward: sizes, layouts, broadcast (expanded) inputs ------------------------------------- */

typedef struct test_shape { int ndim; int64_t shape[3]; } test_shape;
/* 1, 7, 33, 1000, 257 (past one work group of 256) and 1005 over three axes */
static const test_shape shapes[] = {{1, {1}}, {1, {7}}, {2, {3, 11}}, {2, {8, 125}}, {1, {257}}, {3, {3, 5, 67}}};

static void test_forward(clg_device *dev, const unary_case *c, clg_dtype dt)
{
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t n = 1;
        for (int d = 0; d < shapes[s].ndim; d++) n *= shapes[s].shape[d];
        double *x = malloc((size_t)n * sizeof *x), *want = malloc((size_t)n * sizeof *want);
        optest_fill(x, n, c->lo, c->hi, 11 + (uint64_t)s);
        reference(c, dt, x, want, n);
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            clg_scope_begin(dev);
            char what[160];
            snprintf(what, sizeof what, "%s(%g, %g) %s n=%lld %s", c->name, c->p[0], c->p[1], clg_dtype_name(dt),
                     (long long)n, optest_layout_names[l]);
            clg_tensor *t = optest_tensor(dev, dt, shapes[s].ndim, shapes[s].shape, x, (optest_layout)l);
            clg_tensor *y = c->op(t, c->p);
            if (optest_close(what, y, want, n, atol_of(dt), rtol_of(dt))) {
                CHECK_MSG(clg_tensor_ndim(y) == shapes[s].ndim &&
                              !memcmp(clg_tensor_shape(y), shapes[s].shape, (size_t)shapes[s].ndim * sizeof(int64_t)),
                          "%s: wrong shape", what);
                CHECK_MSG(clg_tensor_dtype(y) == dt, "%s: wrong dtype", what);
            }
            clg_scope_end(dev);
        }
        free(x);
        free(want);
    }
}

/* An input expanded from [1, 33] to [4, 33] (stride 0 along axis 0). */
static void test_expanded(clg_device *dev, const unary_case *c, clg_dtype dt)
{
    double x[33], row[33], want[4 * 33];
    optest_fill(x, 33, c->lo, c->hi, 5);
    reference(c, dt, x, row, 33);
    for (int i = 0; i < 4 * 33; i++) want[i] = row[i % 33];
    clg_scope_begin(dev);
    clg_tensor *t = clg_expand(optest_tensor(dev, dt, CLG_SHAPE(1, 33), x, OPTEST_CONTIGUOUS), CLG_SHAPE(4, 33));
    char what[128];
    snprintf(what, sizeof what, "%s(%g) %s expanded", c->name, c->p[0], clg_dtype_name(dt));
    optest_close(what, c->op(t, c->p), want, 4 * 33, atol_of(dt), rtol_of(dt));
    clg_scope_end(dev);
}

/* NaN, infinities, signed zeros, huge and tiny values: IEEE results, no overflow
 * where the stable formulas avoid it. */
static void test_special(clg_device *dev, const unary_case *c, clg_dtype dt)
{
    double x[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e4, -1e4, 95, -95, 1e-30, 1, -1, 0.7, -0.5};
    enum { N = sizeof x / sizeof x[0] };
    double want[N];
    reference(c, dt, x, want, N);
    clg_scope_begin(dev);
    char what[128];
    snprintf(what, sizeof what, "%s(%g, %g) %s special values", c->name, c->p[0], c->p[1], clg_dtype_name(dt));
    clg_tensor *t = optest_tensor(dev, dt, CLG_SHAPE(N), x, OPTEST_CONTIGUOUS);
    optest_close(what, c->op(t, c->p), want, N, atol_of(dt), rtol_of(dt));
    clg_scope_end(dev);
}

/* Sigmoid saturates to exactly 0 and 1, never to NaN; softplus stays finite and
 * linear where exp would overflow. */
static void test_saturation(clg_device *dev, clg_dtype dt)
{
    clg_scope_begin(dev);
    const double big[] = {1e4, -1e4, 1e30, -1e30, 500, -500};
    clg_tensor *t = optest_tensor(dev, dt, CLG_SHAPE(6), big, OPTEST_CONTIGUOUS);
    /* exp(-500) is 7e-218 in double and 0 in float */
    double tiny = dt == CLG_F32 ? 0 : exp(-500);
    optest_close("sigmoid saturates exactly", clg_sigmoid(t), (double[]){1, 0, 1, 0, 1, tiny}, 6, 0, 1e-12);
    optest_close("tanh saturates exactly", clg_tanh(t), (double[]){1, -1, 1, -1, 1, -1}, 6, 0, 0);
    /* threshold 1e6: only the stable formula keeps these finite */
    double sp_big = dt == CLG_F32 ? (double)(float)1e30 : 1e30;
    optest_close("softplus large inputs", clg_softplus(t, 1, 1e6), (double[]){1e4, 0, sp_big, 0, 500, tiny}, 6, 0,
                 1e-6);
    clg_scope_end(dev);
}

/* ---- where ------------------------------------------------------------------------------------- */

/* Index into a (right-aligned, broadcast) operand of shape ishape for element i of
 * the output of shape oshape. */
static int64_t bcast_index(int64_t i, int nd, const int64_t *oshape, int ind, const int64_t *ishape)
{
    int64_t idx = 0, stride = 1;
    for (int d = nd - 1; d >= 0; d--) {
        int64_t coord = i % oshape[d];
        i /= oshape[d];
        int id = d - (nd - ind);
        if (id < 0) continue;
        if (ishape[id] != 1) idx += coord * stride;
        stride *= ishape[id];
    }
    return idx;
}

typedef struct where_shapes {
    int nm, na, nb, no;
    int64_t m[3], a[3], b[3], o[3];
} where_shapes;

static void test_where_case(clg_device *dev, clg_dtype dt, clg_dtype mdt, const where_shapes *ws, optest_layout l)
{
    int64_t nm = 1, na = 1, nb = 1, no = 1;
    for (int d = 0; d < ws->nm; d++) nm *= ws->m[d];
    for (int d = 0; d < ws->na; d++) na *= ws->a[d];
    for (int d = 0; d < ws->nb; d++) nb *= ws->b[d];
    for (int d = 0; d < ws->no; d++) no *= ws->o[d];
    double *m = malloc((size_t)nm * sizeof *m), *a = malloc((size_t)na * sizeof *a);
    double *b = malloc((size_t)nb * sizeof *b), *want = malloc((size_t)no * sizeof *want);
    optest_fill(a, na, -5, 5, 1);
    optest_fill(b, nb, -5, 5, 2);
    optest_fill(m, nm, 0, 4, 3);
    /* masks: integers 0..3 (0 false), and for floats also NaN (true) and -0.0 (false) */
    for (int64_t i = 0; i < nm; i++) {
        m[i] = floor(m[i]);
        if (mdt != CLG_I32 && i % 5 == 1) m[i] = NAN;
        if (mdt != CLG_I32 && i % 7 == 2) m[i] = -0.0;
        if (mdt != CLG_I32 && i % 4 == 3 && m[i] != 0) m[i] = 0.25;
    }
    if (na > 2) a[1] = INFINITY, a[2] = NAN;
    for (int64_t i = 0; i < na; i++) if (dt == CLG_F32) a[i] = (float)a[i];
    for (int64_t i = 0; i < nb; i++) if (dt == CLG_F32) b[i] = (float)b[i];
    for (int64_t i = 0; i < no; i++) {
        double mv = m[bcast_index(i, ws->no, ws->o, ws->nm, ws->m)];
        want[i] = mv != 0 ? a[bcast_index(i, ws->no, ws->o, ws->na, ws->a)]
                          : b[bcast_index(i, ws->no, ws->o, ws->nb, ws->b)];
    }
    clg_scope_begin(dev);
    clg_tensor *tm = optest_tensor(dev, mdt, ws->nm, ws->m, m, l);
    clg_tensor *ta = optest_tensor(dev, dt, ws->na, ws->a, a, l);
    clg_tensor *tb = optest_tensor(dev, dt, ws->nb, ws->b, b, l);
    char what[160];
    snprintf(what, sizeof what, "where %s mask %s, %s, n=%lld %s", clg_dtype_name(mdt), clg_dtype_name(dt),
             ws->nm == ws->no ? "same shapes" : "broadcast", (long long)no, optest_layout_names[l]);
    clg_tensor *y = clg_where(tm, ta, tb);
    if (optest_close(what, y, want, no, 0, 0))
        CHECK_MSG(clg_tensor_ndim(y) == ws->no && !memcmp(clg_tensor_shape(y), ws->o, (size_t)ws->no * sizeof(int64_t)),
                  "%s: wrong shape", what);
    clg_scope_end(dev);
    free(m), free(a), free(b), free(want);
}

static void test_where(clg_device *dev)
{
    const where_shapes same1000 = {2, 2, 2, 2, {8, 125}, {8, 125}, {8, 125}, {8, 125}};
    const where_shapes same257 = {1, 1, 1, 1, {257}, {257}, {257}, {257}};
    const where_shapes bcast = {3, 2, 1, 3, {2, 1, 4}, {3, 1}, {4}, {2, 3, 4}};
    const where_shapes bcast_mask = {1, 3, 3, 3, {33}, {2, 1, 33}, {1, 3, 33}, {2, 3, 33}};
    const clg_dtype mdts[3] = {CLG_I32, CLG_F32, CLG_F64};
    for (int k = 0; k < ndtypes(dev); k++)
        for (int j = 0; j < 1 + ndtypes(dev); j++)
            for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
                test_where_case(dev, dtypes[k], mdts[j], &same1000, (optest_layout)l);
                test_where_case(dev, dtypes[k], mdts[j], &same257, (optest_layout)l);
                test_where_case(dev, dtypes[k], mdts[j], &bcast, (optest_layout)l);
                test_where_case(dev, dtypes[k], mdts[j], &bcast_mask, (optest_layout)l);
            }

    /* bad inputs: each fails with a message naming clg_where */
    clg_scope_begin(dev);
    clg_tensor *m23 = clg_ones(dev, CLG_F32, CLG_SHAPE(2, 3));
    clg_tensor *f4 = clg_ones(dev, CLG_F32, CLG_SHAPE(4));
    clg_tensor *f3 = clg_ones(dev, CLG_F32, CLG_SHAPE(3));
    clg_tensor *i3 = clg_ones(dev, CLG_I32, CLG_SHAPE(3));
    CHECK(clg_where(m23, f4, f3) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_where") && strstr(clg_device_error(dev), "broadcast"), "%s",
              clg_device_error(dev));
    CHECK(clg_where(m23, f3, f4) == NULL);
    CHECK(clg_where(m23, i3, i3) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_where") && strstr(clg_device_error(dev), "int32"), "%s",
              clg_device_error(dev));
    CHECK(clg_where(m23, f3, i3) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_where") && strstr(clg_device_error(dev), "dtype"), "%s",
              clg_device_error(dev));
    if (ndtypes(dev) == 2) {
        CHECK(clg_where(m23, f3, clg_ones(dev, CLG_F64, CLG_SHAPE(3))) == NULL);
        CHECK_MSG(strstr(clg_device_error(dev), "clg_where"), "%s", clg_device_error(dev));
    }
    CHECK(clg_where(NULL, f3, f3) == NULL && clg_where(m23, NULL, f3) == NULL && clg_where(m23, f3, NULL) == NULL);
    /* zero-size: an empty result of the broadcast shape */
    clg_tensor *e = clg_where(clg_zeros(dev, CLG_I32, CLG_SHAPE(0, 1)), f3, f3);
    CHECK_MSG(e && clg_tensor_numel(e) == 0 && clg_tensor_ndim(e) == 2 && clg_tensor_dim(e, 0) == 0 &&
                  clg_tensor_dim(e, 1) == 3,
              "where zero-size: %s", clg_device_error(dev));
    clg_scope_end(dev);
}

/* ---- zero-size, bad inputs, kernel counts ------------------------------------------------------- */

static uint64_t launches(clg_device *dev, const char *prefix)
{
    CHECK_OK(dev, clg_device_finish(dev));
    uint64_t n = 0;
    for (int i = 0; i < dev->prof.nkernels; i++)
        if (!prefix || !strncmp(dev->prof.kernels[i].name, prefix, strlen(prefix))) n += dev->prof.kernels[i].count;
    return n;
}

static void test_zero_size(clg_device *dev, const unary_case *c, clg_dtype dt)
{
    clg_scope_begin(dev);
    clg_tensor *t = clg_zeros(dev, dt, CLG_SHAPE(0, 3));
    uint64_t before = launches(dev, NULL);
    clg_device_clear_error(dev);
    clg_tensor *y = c->op(t, c->p);
    CHECK_MSG(y && clg_tensor_numel(y) == 0 && clg_tensor_ndim(y) == 2 && clg_tensor_dim(y, 1) == 3,
              "%s zero-size: %s", c->name, clg_device_error(dev));
    CHECK_MSG(clg_device_last_status(dev) == CLG_OK, "%s zero-size: %s", c->name, clg_device_error(dev));
    CHECK_MSG(launches(dev, NULL) == before, "%s zero-size launched a kernel", c->name);
    clg_scope_end(dev);
}

static void test_bad_inputs(clg_device *dev, const unary_case *c)
{
    char op[64];
    snprintf(op, sizeof op, "clg_%s", c->name);
    CHECK_MSG(c->op(NULL, c->p) == NULL, "%s(NULL)", c->name);
    clg_scope_begin(dev);
    clg_tensor *i = clg_ones(dev, CLG_I32, CLG_SHAPE(3));
    CHECK_MSG(c->op(i, c->p) == NULL, "%s accepted int32", c->name);
    const char *err = clg_device_error(dev);
    CHECK_MSG(strstr(err, op) && strstr(err, "int32") && strstr(err, "float"), "%s: %s", c->name, err);
    clg_scope_end(dev);
}

static void test_bad_params(clg_device *dev)
{
    clg_scope_begin(dev);
    clg_tensor *t = clg_ones(dev, CLG_F32, CLG_SHAPE(3));
    CHECK(clg_clamp(t, NAN, 1) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_clamp"), "%s", clg_device_error(dev));
    CHECK(clg_clamp(t, 0, NAN) == NULL);
    CHECK(clg_leaky_relu(t, NAN) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_leaky_relu"), "%s", clg_device_error(dev));
    CHECK(clg_softplus(t, 0, 20) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_softplus") && strstr(clg_device_error(dev), "beta"), "%s",
              clg_device_error(dev));
    CHECK(clg_softplus(t, 1, NAN) == NULL);
    /* lo > hi is allowed, as PyTorch: hi wins everywhere */
    const double v[4] = {-3, 0, 0.5, 3};
    optest_close("clamp lo > hi", clg_clamp(optest_tensor(dev, CLG_F32, CLG_SHAPE(4), v, OPTEST_CONTIGUOUS), 1, -1),
                 (double[]){-1, -1, -1, -1}, 4, 0, 0);
    /* infinite bounds: a one-sided clamp */
    optest_close("clamp [0, inf)", clg_clamp(optest_tensor(dev, CLG_F32, CLG_SHAPE(4), v, OPTEST_CONTIGUOUS), 0,
                                             INFINITY),
                 (double[]){0, 0, 0.5, 3}, 4, 0, 0);
    clg_scope_end(dev);
}

/* A backward through one activation is its single grad kernel (plus the copy into
 * the leaf's .grad), launched once over the 33 elements, or as whole groups and a
 * tail where the device's table splits 33 items so. */
static void test_one_kernel_backward(clg_device *dev, const unary_case *c)
{
    clg_scope_begin(dev);
    double x[33];
    optest_fill(x, 33, c->lo, c->hi, 3);
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(33), x, OPTEST_CONTIGUOUS);
    clg_tensor_set_requires_grad(t, true);
    clg_tensor *y = c->op(t, c->p);
    clg_tensor *g = clg_ones(dev, CLG_F32, CLG_SHAPE(33));
    uint64_t total = launches(dev, NULL), mine = launches(dev, c->grad_kernel), copies = launches(dev, "copy");
    CHECK_OK(dev, clg_backward(y, g));
    uint64_t dmine = launches(dev, c->grad_kernel) - mine;
    uint64_t dother = launches(dev, NULL) - total - dmine - (launches(dev, "copy") - copies);
    char name[64];
    bool v16 = clg__iter_flat16(dev, CLG_F32, c->grad_kernel);   /* 16 elements per work-item */
    snprintf(name, sizeof name, "%s_%s", c->grad_kernel, v16 ? "flat16" : "flat");
    clg_kernel *k = clg__kernel_get(dev, clg__unary_program(c->grad_kernel), clg__dtype_options(CLG_F32), name);   /* built by the backward */
    CHECK_MSG(k != NULL, "%s: %s", name, clg_device_error(dev));
    uint64_t want = k ? optest_launches_1d(dev, k, v16 ? 3 : 33) : 1;
    if (clg__iter_flat16(dev, CLG_F32, c->name) || v16) {   /* the 16-wide kernels' values: smooth ops */
        float gx[33];
        CHECK_OK(dev, clg_tensor_to_host(clg_tensor_grad(t), gx, sizeof gx));
        for (int i = 0; i < 33; i++) {
            double h = 1e-5 * (1 + fabs(x[i])), d = (c->ref(x[i] + h, c->p) - c->ref(x[i] - h, c->p)) / (2 * h);
            CHECK_MSG(fabs(gx[i] - d) <= 1e-4 * (1 + fabs(d)), "%s backward at %g: %.9g, want %.9g", c->name, x[i],
                      (double)gx[i], d);
        }
    }
    CHECK_MSG(dmine == want && dother == 0, "%s backward: %llu launches of %s (the table says %llu), %llu of other kernels",
              c->name, (unsigned long long)dmine, c->grad_kernel, (unsigned long long)want, (unsigned long long)dother);
    clg_scope_end(dev);
}

/* float32 log, log1p and expm1 (common.cl's own: the library's are scalar calls on POCL)
 * against float64 references in units in the last place, over floats of every exponent
 * (subnormals, around 1 and 0, the largest), with a bound on each: an error in the
 * polynomials or the reductions shows as ulps long before a tolerance sees it. */
static double ulps(float got, double want)
{
    if (isnan(want) || isinf(want)) return (isnan(want) ? isnan(got) : got == (float)want) ? 0 : INFINITY;
    if (want == 0) return got == 0 ? 0 : INFINITY;
    int e;
    frexp(want, &e);
    double u = ldexp(1.0, (e - 24 < -149 ? -149 : e - 24));
    return fabs((double)got - want) / u;
}

static clg_tensor *softplus_1_20(clg_tensor *t) { return clg_softplus(t, 1, 20); }
static double ref_softplus_1_20(double x) { return x > 20 ? x : log1p(exp(x)); }
static clg_tensor *elu_1(clg_tensor *t) { return clg_elu(t, 1); }
static double ref_elu_1(double x) { return x > 0 ? x : expm1(x); }

static void float_accuracy(clg_device *dev)
{
    enum { N = 60000 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    uint32_t s = 99;
    for (int i = 0; i < N; i++) {   /* bits stepping over all exponents, both signs, plus specials */
        s = s * 1664525u + 1013904223u;
        uint32_t bits = (uint32_t)i * 71569u % 0x7f800000u ^ (s & 0xffu);
        memcpy(&x[i], &bits, 4);
        if (i % 3 == 1) x[i] = -x[i];
        if (i % 7 == 2) x[i] = ldexpf((float)(s >> 9) / (float)(1 << 23), -(int)(i % 40));   /* near 0 */
        if (i % 11 == 3) x[i] = 1.0f + ((float)(s >> 9) / (float)(1 << 23) - 0.5f) * 0.1f;   /* near 1 */
    }
    const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 88.0f, 89.0f, -104.0f,
                             0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 0.4f, -0.4f, -0.6f, 8388607.5f, -8388607.5f, 4194304.5f,
                             8388608.0f, 16777215.0f, -1.5f};   /* halves to even, signed zeros, near 2^23 */
    memcpy(x, special, sizeof special);
    static const struct { const char *name; clg_tensor *(*op)(clg_tensor *); double (*ref)(double); double bound; } f[] = {
        {"log", clg_log, log, 2.5}, {"log1p", clg_log1p, log1p, 2.5}, {"expm1", clg_expm1, expm1, 4},
        {"round", clg_round, nearbyint, 0}, {"floor", clg_floor, floor, 0}, {"ceil", clg_ceil, ceil, 0},
        {"softplus", softplus_1_20, ref_softplus_1_20, 4}, {"elu", elu_1, ref_elu_1, 4},
        {"tanh", clg_tanh, tanh, 3},
    };
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        clg_scope_begin(dev);
        clg_tensor *t = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(N), x);
        clg_tensor *r = t ? f[k].op(t) : NULL;
        CHECK_OK(dev, r ? clg_tensor_to_host(r, y, N * sizeof *y) : clg_device_last_status(dev));
        double worst = 0;
        int at = 0;
        for (int i = 0; i < N; i++) {
            double want = f[k].ref((double)x[i]), e = isnan(want) && isnan(y[i]) ? 0 : ulps(y[i], want);
            if ((float)want != want && fabs(want) > 3.4e38) e = isinf(y[i]) || fabsf(y[i]) == FLT_MAX ? 0 : INFINITY;
            if (f[k].bound == 0 && !isnan(want) && !signbit(want) != !signbit(y[i])) e = INFINITY;   /* -0 stays -0 */
            if (y[i] == 0 && want != 0 && fabs(want) < 0x1p-126) e = 0;   /* a subnormal flushed (llvmpipe) */
            if (e > worst) worst = e, at = i;
        }
        printf("  float32 %-8s worst %.2f ulp (bound %.1f)\n", f[k].name, worst, f[k].bound);
        CHECK_MSG(worst <= f[k].bound, "float32 %s: %.3g ulp at %.9g (got %.9g, want %.17g)", f[k].name, worst,
                  (double)x[at], (double)y[at], f[k].ref((double)x[at]));
        clg_scope_end(dev);
    }
    free(x);
    free(y);
}

/* The pool's free buffers of n floats filled with NaN: a result's element that a kernel
 * leaves unwritten then shows (a freed result's values would match the other pass's). */
static void poison_pool(clg_device *dev, int64_t n)
{
    clg_scope_begin(dev);
    for (int i = 0; i < 4; i++) CHECK(clg_full(dev, CLG_F32, CLG_SHAPE(n), NAN) != NULL);
    clg_scope_end(dev);
}

static clg_tensor *elu_07(clg_tensor *t) { return clg_elu(t, 0.7); }

/* The 16-wide kernels (flat16) against the one-element ones over floats of every
 * exponent, specials among them, mixed within each vector: a vector function that goes
 * wrong for some lanes because of another lane's value (POCL 3.1's sin for small lanes
 * beside one of 1.6e7 or more) differs here, and whole vectors of one sign (elu's
 * shortcut) or below 2^22 (sin's, cos's and tan's own vector math, near multiples of pi/2
 * too). Within 2 ulp of each other, or both NaN. */
static void flat16_lanes(clg_device *dev)
{
    const int N = optest_small() ? 2000 : 40000;   /* the simulators: fewer */
    float *x = malloc(N * sizeof *x), *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    uint32_t s = 7;
    for (int i = 0; i < N; i++) {
        s = s * 1664525u + 1013904223u;
        uint32_t bits = (uint32_t)i * 104729u % 0x7f800000u ^ (s & 0xfffu);
        memcpy(&x[i], &bits, 4);
        if (i % 2) x[i] = -x[i];
        if (i % 5 == 1) x[i] = (float)(s >> 8) / (float)(1 << 20) - 8;   /* moderate */
        if (i / 16 % 3 == 2) x[i] = fabsf(x[i]);   /* whole vectors of positives: elu skips expm1 */
        if (i / 16 % 3 == 1) {   /* whole vectors below 2^22 (sin's, cos's and tan's vector path) */
            uint32_t b = bits % 0x4a800000u;   /* every exponent up to 2^22 */
            memcpy(&x[i], &b, 4);
            if (i % 2) x[i] = -x[i];
            if (i % 4 == 3) x[i] = (float)((double)(i % 997) * 1.5707963267948966 * (i % 7 == 3 ? 4099 : 1));   /* near k pi/2 */
        }
    }
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, 3e38f, 2e7f};
    for (int i = 0; i < N; i += 37) x[i] = special[(i / 37) % 8];
    const char *table = clg__device_params(dev)->flat16 ? "on" : "off";
    const struct { const char *name; clg_tensor *(*op)(clg_tensor *); } f[] = {
        {"sin", clg_sin}, {"cos", clg_cos}, {"tan", clg_tan}, {"exp", clg_exp}, {"sigmoid", clg_sigmoid},
        {"silu", clg_silu}, {"elu", elu_07}, {"tanh", clg_tanh}, {"gelu_tanh", clg_gelu_tanh}};
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        float *out[2] = {a, b};
        for (int pass = 0; pass < 2; pass++) {
            CHECK_OK(dev, clg_device_set_param(dev, "flat16", pass ? "on" : "off"));
            clg_scope_begin(dev);
            poison_pool(dev, N);   /* an element a kernel leaves unwritten reads NaN */
            clg_tensor *t = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(N), x);
            clg_tensor *r = t ? f[k].op(t) : NULL;
            CHECK_OK(dev, r ? clg_tensor_to_host(r, out[pass], N * sizeof(float)) : clg_device_last_status(dev));
            clg_scope_end(dev);
        }
        int bad = 0, at = -1;
        /* POCL's scalar tanf is up to 2.6 ulp off (tan(2.36034393)), OpenCL allows 5: its
         * comparison takes 4; trig_libm holds tan to 1 ulp of the host's. tanh's two
         * paths take exp on vectors and one by one, each within 2.4 ulp of the true value
         * (float_accuracy), so within 4 of each other. */
        float ulps = strcmp(f[k].name, "tan") && strcmp(f[k].name, "tanh") ? 2 : 4;
        for (int i = 0; i < N; i++) {
            if ((isnan(a[i]) && isnan(b[i])) || a[i] == b[i]) continue;   /* infinities too */
            float big = fmaxf(fabsf(a[i]), fabsf(b[i]));
            if (!(fabsf(a[i] - b[i]) <= ulps * (nextafterf(big, INFINITY) - big))) bad++, at = at < 0 ? i : at;
        }
        CHECK_MSG(bad == 0, "%s: flat16 on and off differ in %d of %d, first at %.9g: %.9g and %.9g", f[k].name, bad, N,
                  at < 0 ? 0.0 : (double)x[at], at < 0 ? 0.0 : (double)a[at], at < 0 ? 0.0 : (double)b[at]);
    }
    CHECK_OK(dev, clg_device_set_param(dev, "flat16", table));
    free(x);
    free(a);
    free(b);
}

/* sin, cos and tan against C's sinf, cosf and tanf on the host, within 1 ulp: a first vector of 16
 * within 2^22 (the 16-wide kernels' own reduction: 1e4, 1e6, near multiples of pi/2,
 * subnormals, -0), a second with huge lanes, infinities and NaN (the library's calls). */
static void trig_libm(clg_device *dev)
{
    enum { N = 35 };
    const float x[N] = {1e4f, -1e4f, 1e6f, -1e6f, 4194304.0f, 12345.678f, 1.5707964f, 3.1415927f, -4.712389f,
                        6.2831855f, 0x1p-140f, -0.0f, 0.0f, 1e-4f, 0.7853982f, 355.0f,
                        1e30f, -1e30f, 3e38f, INFINITY, -INFINITY, NAN, 1e7f, 2e7f, 102943.70f, 1.0f,
                        -2.0f, 100.0f, 0.5f, -0.25f, 8.0e5f, 1e5f, 3.0f, 7.0f, -7.0f};
    float got[N];
    static const char *const names[3] = {"sin", "cos", "tan"};
    for (int k = 0; k < 3; k++) {
        clg_scope_begin(dev);
        clg_tensor *t = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(N), x);
        clg_tensor *y = t ? (k == 2 ? clg_tan(t) : k ? clg_cos(t) : clg_sin(t)) : NULL;
        CHECK_OK(dev, y ? clg_tensor_to_host(y, got, sizeof got) : clg_device_last_status(dev));
        clg_scope_end(dev);
        for (int i = 0; i < N; i++) {
            float want = k == 2 ? tanf(x[i]) : k ? cosf(x[i]) : sinf(x[i]);
            float big = fmaxf(fabsf(want), fabsf(got[i]));
            bool ok = isnan(want) ? isnan(got[i]) : (want == got[i] && signbit(want) == signbit(got[i])) ||
                                                        fabsf(want - got[i]) <= nextafterf(big, INFINITY) - big;
            CHECK_MSG(ok, "%s(%.9g) = %.9g, C's %.9g", names[k], (double)x[i], (double)got[i], (double)want);
        }
    }
}

int main(void)
{
    /* Profiling counts the kernels each op launches. */
    setenv("CLG_PROFILE", "1", 1);
    clg_device *dev = check_open_device();
    for (int k = 0; k < ndtypes(dev); k++) {
        for (int i = 0; i < NCASES; i++) {
            test_forward(dev, &cases[i], dtypes[k]);
            test_expanded(dev, &cases[i], dtypes[k]);
            test_special(dev, &cases[i], dtypes[k]);
            test_zero_size(dev, &cases[i], dtypes[k]);
        }
        test_saturation(dev, dtypes[k]);
    }
    for (int i = 0; i < NCASES; i++) {
        test_bad_inputs(dev, &cases[i]);
        test_one_kernel_backward(dev, &cases[i]);
    }
    /* The ops with 16-wide kernels (flat16) once more with the other choice than the
     * device table's: forward in float32 in every layout, and the backward's kernel. */
    const char *flat16 = clg__device_params(dev)->flat16 ? "on" : "off";
    CHECK_OK(dev, clg_device_set_param(dev, "flat16", "on"));
    bool has16[NCASES];
    for (int i = 0; i < NCASES; i++) has16[i] = clg__iter_flat16(dev, CLG_F32, cases[i].name);
    CHECK_OK(dev, clg_device_set_param(dev, "flat16", strcmp(flat16, "on") ? "on" : "off"));
    for (int i = 0; i < NCASES; i++)
        if (has16[i]) {
            test_forward(dev, &cases[i], CLG_F32);
            test_one_kernel_backward(dev, &cases[i]);
        }
    CHECK_OK(dev, clg_device_set_param(dev, "flat16", flat16));
    flat16_lanes(dev);
    trig_libm(dev);
    test_bad_params(dev);
    test_where(dev);
    float_accuracy(dev);
    clg_device_close(dev);
    return check_report("test_ops_unary");
}
