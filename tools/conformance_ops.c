/* conformance_ops.c: the cases of `clgrad conformance` for views, elementwise ops,
 * reductions, matrix products and indexing, each with its plain-C reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conformance_cases.h"
#include <clgrad/dist_mpi.h>   /* clg_dist_init: MPI ranks under mpirun (libclgrad-dist) */

#define UNUSED(x) (void)(x)

/* ---- views ------------------------------------------------------------------------------------- */
/* A view's reference is a gather: out[i] = in[src(i)], from the strides of the view. */

typedef struct view_entry {
    clg_tensor *(*dev)(clg_tensor *a, const cf_prob *p);
    int64_t (*src)(const cf_prob *p, int64_t i);   /* input element of output element i */
} view_entry;

/* Coordinates of flat index i in shape a. */
static void coords(const cf_arr *a, int64_t i, int64_t *c)
{
    for (int d = a->nd - 1; d >= 0; d--) {
        c[d] = i % a->shape[d];
        i /= a->shape[d];
    }
}

static int64_t flat(const cf_arr *a, const int64_t *c)
{
    int64_t i = 0;
    for (int d = 0; d < a->nd; d++) i = i * a->shape[d] + c[d];
    return i;
}

static int64_t src_same(const cf_prob *p, int64_t i) { UNUSED(p); return i; }
static int64_t src_perm(const cf_prob *p, int64_t i)   /* out axis d is in axis ia[d] */
{
    int64_t c[CLG_MAX_DIMS], ci[CLG_MAX_DIMS];
    coords(&p->out[0], i, c);
    for (int d = 0; d < p->out[0].nd; d++) ci[p->ia[d]] = c[d];
    return flat(&p->in[0], ci);
}
static int64_t src_narrow(const cf_prob *p, int64_t i)   /* axis ia[0]: start ia[1], step ia[2] */
{
    int64_t c[CLG_MAX_DIMS];
    coords(&p->out[0], i, c);
    c[p->ia[0]] = p->ia[1] + c[p->ia[0]] * p->ia[2];
    return flat(&p->in[0], c);
}
static int64_t src_expand(const cf_prob *p, int64_t i) { return cf_bcast(&p->in[0], &p->out[0], i); }
/* reshape of the transpose of a 2-D input: element i of the transpose, row-major */
static int64_t src_t_reshape(const cf_prob *p, int64_t i)
{
    int64_t rows = p->in[0].shape[1], cols = p->in[0].shape[0];   /* the transpose's */
    return (i % cols) * rows + i / cols;
}

static clg_tensor *v_reshape(clg_tensor *a, const cf_prob *p)
{
    return clg_reshape(a, p->out[0].nd, p->out[0].shape);
}
static clg_tensor *v_reshape_t(clg_tensor *a, const cf_prob *p)
{
    return clg_reshape(clg_transpose(a, 0, 1), p->out[0].nd, p->out[0].shape);
}
static clg_tensor *v_permute(clg_tensor *a, const cf_prob *p) { return clg_permute(a, p->out[0].nd, p->ia); }
static clg_tensor *v_transpose(clg_tensor *a, const cf_prob *p) { UNUSED(p); return clg_transpose(a, 0, 2); }
static clg_tensor *v_narrow(clg_tensor *a, const cf_prob *p) { return clg_narrow(a, p->ia[0], p->ia[1], p->out[0].shape[p->ia[0]]); }
static clg_tensor *v_slice(clg_tensor *a, const cf_prob *p) { return clg_slice(a, p->ia[0], p->ia[1], 1000, p->ia[2]); }
static clg_tensor *v_expand(clg_tensor *a, const cf_prob *p) { return clg_expand(a, p->out[0].nd, p->out[0].shape); }
static clg_tensor *v_squeeze(clg_tensor *a, const cf_prob *p) { UNUSED(p); return clg_squeeze(a, 1); }
static clg_tensor *v_unsqueeze(clg_tensor *a, const cf_prob *p) { UNUSED(p); return clg_unsqueeze(a, -2); }
static clg_tensor *v_flatten(clg_tensor *a, const cf_prob *p) { UNUSED(p); return clg_flatten(a, 1, 2); }
static clg_tensor *v_contiguous(clg_tensor *a, const cf_prob *p)
{
    clg_tensor *t = clg_contiguous(clg_permute(a, p->out[0].nd, p->ia));
    if (t && !clg_tensor_is_contiguous(t)) return NULL;
    return t;
}
static clg_tensor *v_clone(clg_tensor *a, const cf_prob *p) { UNUSED(p); return clg_clone(clg_transpose(a, 0, 1)); }

static void view_setup(cf_prob *p)
{
    int A = S(2, 7), B = S(3, 33), C = S(4, 65);
    const char *which = (const char *)p->arg;
    if (!strcmp(which, "reshape")) {
        cf_in(p, CF_GRAD, -1, 1, 3, A, B, C);
        cf_out(p, 2, B * C, A);
    } else if (!strcmp(which, "reshape_t")) {
        cf_in(p, CF_GRAD, -1, 1, 2, A * B, C);
        cf_out(p, 1, A * B * C);
    } else if (!strcmp(which, "permute") || !strcmp(which, "contiguous")) {
        cf_in(p, CF_GRAD, -1, 1, 3, A, B, C);
        cf_out(p, 3, C, A, B);
        p->ia[0] = 2, p->ia[1] = 0, p->ia[2] = 1;
    } else if (!strcmp(which, "transpose")) {
        cf_in(p, CF_GRAD, -1, 1, 3, A, B, C);
        cf_out(p, 3, C, B, A);
        p->ia[0] = 2, p->ia[1] = 1, p->ia[2] = 0;
    } else if (!strcmp(which, "clone")) {
        cf_in(p, CF_GRAD, -1, 1, 2, B, C);
        cf_out(p, 2, C, B);
        p->ia[0] = 1, p->ia[1] = 0;
    } else if (!strcmp(which, "narrow")) {
        cf_in(p, CF_GRAD, -1, 1, 3, A, B, C);
        cf_out(p, 3, A, B - 2, C);
        p->ia[0] = 1, p->ia[1] = 1, p->ia[2] = 1;
    } else if (!strcmp(which, "slice")) {
        cf_in(p, CF_GRAD, -1, 1, 3, A, B, C);
        cf_out(p, 3, A, B, C / 2);   /* 1, 3, 5, ... < C */
        p->ia[0] = 2, p->ia[1] = 1, p->ia[2] = 2;
    } else if (!strcmp(which, "expand")) {
        cf_in(p, CF_GRAD, -1, 1, 3, A, 1, C);
        cf_out(p, 4, 2, A, B, C);
    } else if (!strcmp(which, "squeeze")) {
        cf_in(p, CF_GRAD, -1, 1, 3, A, 1, C);
        cf_out(p, 2, A, C);
    } else if (!strcmp(which, "unsqueeze")) {
        cf_in(p, CF_GRAD, -1, 1, 2, A, C);
        cf_out(p, 3, A, 1, C);
    } else if (!strcmp(which, "flatten")) {
        cf_in(p, CF_GRAD, -1, 1, 4, A, B, 3, C);
        cf_out(p, 3, A, B * 3, C);
    }
}

static const view_entry *view_of(const char *which)
{
    static const struct { const char *name; view_entry e; } t[] = {
        {"reshape", {v_reshape, src_same}},       {"reshape_t", {v_reshape_t, src_t_reshape}},
        {"permute", {v_permute, src_perm}},       {"transpose", {v_transpose, src_perm}},
        {"narrow", {v_narrow, src_narrow}},       {"slice", {v_slice, src_narrow}},
        {"expand", {v_expand, src_expand}},       {"squeeze", {v_squeeze, src_same}},
        {"unsqueeze", {v_unsqueeze, src_same}},   {"flatten", {v_flatten, src_same}},
        {"contiguous", {v_contiguous, src_perm}}, {"clone", {v_clone, src_perm}},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (!strcmp(t[i].name, which)) return &t[i].e;
    return NULL;
}

static void view_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    out[0] = view_of((const char *)p->arg)->dev(in[0], p);
}

static void view_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const view_entry *e = view_of((const char *)p->arg);
    for (int64_t i = 0; i < p->out[0].n; i++) out[0][i] = in[0][e->src(p, i)];
}

/* cast: to the other float type (differentiable) where the device has float64, else
 * to int32 (truncation toward zero, not differentiable). Values float32 holds exactly,
 * so that float64 -> float32 is exact too and its reference the identity (rounding
 * would make the central differences a staircase). */
static void cast_setup(cf_prob *p)
{
    cf_in(p, CF_GRAD, -3, 3, 2, S(3, 31), S(5, 67))->f32_values = true;
    cf_out_like(p, 0);
    p->no_backward = !p->fp64;
}
static void cast_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    out[0] = clg_cast(in[0], !p->fp64 ? CLG_I32 : p->dtype == CLG_F32 ? CLG_F64 : CLG_F32);
}
static void cast_ref(const cf_prob *p, double *const *in, double *const *out)
{
    for (int64_t i = 0; i < p->in[0].n; i++) out[0][i] = p->fp64 ? in[0][i] : trunc(in[0][i]);
}

/* ---- elementwise, one operand ----------------------------------------------------------------- */

typedef struct unary_entry {
    clg_tensor *(*dev)(clg_tensor *a, double s0, double s1);
    double (*host)(double x, double s0, double s1);
    double s0, s1, lo, hi;
    bool signs;
} unary_entry;

#define DEV1(name, call) \
    static clg_tensor *name(clg_tensor *a, double s0, double s1) { UNUSED(s0); UNUSED(s1); return call; }
#define HOST1(name, expr) \
    static double name(double x, double s0, double s1) { UNUSED(s0); UNUSED(s1); return expr; }

DEV1(d_clamp, clg_clamp(a, s0, s1)) HOST1(h_clamp, x < s0 ? s0 : x > s1 ? s1 : x)
DEV1(d_leaky, clg_leaky_relu(a, s0)) HOST1(h_leaky, x > 0 ? x : s0 * x)
DEV1(d_softplus, clg_softplus(a, s0, s1)) HOST1(h_softplus, s0 * x > s1 ? x : log1p(exp(s0 * x)) / s0)
DEV1(d_elu, clg_elu(a, s0)) HOST1(h_elu, x > 0 ? x : s0 * expm1(x))
DEV1(d_add_s, clg_add_scalar(a, s0)) HOST1(h_add_s, x + s0)
DEV1(d_sub_s, clg_sub_scalar(a, s0)) HOST1(h_sub_s, x - s0)
DEV1(d_rsub_s, clg_rsub_scalar(s0, a)) HOST1(h_rsub_s, s0 - x)
DEV1(d_mul_s, clg_mul_scalar(a, s0)) HOST1(h_mul_s, x * s0)
DEV1(d_div_s, clg_div_scalar(a, s0)) HOST1(h_div_s, x / s0)
DEV1(d_rdiv_s, clg_rdiv_scalar(s0, a)) HOST1(h_rdiv_s, s0 / x)
DEV1(d_pow_s, clg_pow_scalar(a, s0)) HOST1(h_pow_s, pow(x, s0))
DEV1(d_dropout_eval, clg_dropout(a, s0, false)) HOST1(h_same, x)

/* The ranks this process is one of (clgrad/dist_mpi.h): a group of one, unless started by
 * mpirun, where every rank runs the same cases and the sum is ranks * x. Made once and
 * kept: the tapes of the cases refer to it. */
static clg_dist *ranks(void)
{
    static clg_dist *d;
    if (!d && clg_dist_init(NULL, NULL, NULL, &d, NULL, 0) != CLG_OK) d = NULL;
    return d;
}
DEV1(d_all_reduce, clg_dist_all_reduce(ranks(), a, 1)) HOST1(h_ranks, x * clg_dist_size(ranks()))

/* The rows of src/tensor/unary_ops.def: the op on the device, its plain-C definition on
 * the host, over the row's gradient-check range (both signs where it says so). */
#define CLG_UNARY(name, grad, lo, hi, glo, ghi, gsign, ref, torch) \
    DEV1(d_##name, clg_##name(a)) HOST1(h_##name, (ref))        \
    static const unary_entry U_ROW_##name = {d_##name, h_##name, 0, 0, glo, ghi, gsign};
#include "unary_ops.def"
#undef CLG_UNARY
static const unary_entry U_CLAMP = {d_clamp, h_clamp, -0.5, 0.75, -1.5, 1.5, false};
static const unary_entry U_LEAKY = {d_leaky, h_leaky, 0.125, 0, 0.05, 2, true};
static const unary_entry U_SOFTPLUS = {d_softplus, h_softplus, 2, 3, -3, 3, false};
static const unary_entry U_ELU = {d_elu, h_elu, 0.7, 0, 0.05, 2, true};
static const unary_entry U_ADD_S = {d_add_s, h_add_s, 0.75, 0, -2, 2, false};
static const unary_entry U_SUB_S = {d_sub_s, h_sub_s, 0.75, 0, -2, 2, false};
static const unary_entry U_RSUB_S = {d_rsub_s, h_rsub_s, 0.75, 0, -2, 2, false};
static const unary_entry U_MUL_S = {d_mul_s, h_mul_s, -1.5, 0, -2, 2, false};
static const unary_entry U_DIV_S = {d_div_s, h_div_s, 2.5, 0, -2, 2, false};
static const unary_entry U_RDIV_S = {d_rdiv_s, h_rdiv_s, 1.5, 0, 0.3, 2, true};
static const unary_entry U_POW_S = {d_pow_s, h_pow_s, 2.5, 0, 0.2, 2, false};
static const unary_entry U_POW_S3 = {d_pow_s, h_pow_s, 3, 0, 0.2, 2, true};
static const unary_entry U_DROPOUT_EVAL = {d_dropout_eval, h_same, 0.5, 0, -2, 2, false};
static const unary_entry U_ALL_REDUCE = {d_all_reduce, h_ranks, 0, 0, -2, 2, false};

static void unary_setup(cf_prob *p)
{
    const unary_entry *e = p->arg;
    cf_in(p, CF_GRAD, e->lo, e->hi, 2, S(3, 37), S(5, 129))->signs = e->signs;
    cf_out_like(p, 0);
}
static void unary_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    const unary_entry *e = p->arg;
    out[0] = e->dev(in[0], e->s0, e->s1);
}
static void unary_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const unary_entry *e = p->arg;
    for (int64_t i = 0; i < p->in[0].n; i++) out[0][i] = e->host(in[0][i], e->s0, e->s1);
}

/* ---- elementwise, two operands, broadcast: a [M, 1, N] op b [K, N] -> [M, K, N] ----------------- */

typedef struct binary_entry {
    clg_tensor *(*dev)(clg_tensor *a, clg_tensor *b);
    double (*host)(double a, double b);
    double alo, ahi, blo, bhi;
    bool bsigns, compare;   /* compare: integral values (ties), no gradient */
} binary_entry;

/* The rows of src/tensor/binary_ops.def: the op on the device, its plain-C definition
 * on the host, over the row's ranges; comparisons and logic on integers (ties, zeros a
 * quarter of the time), without a gradient. */
#define B_COMPARE_DIFF_INT false
#define B_COMPARE_DIFF false
#define B_COMPARE_COMPARE true
#define B_COMPARE_LOGIC true
#define CLG_BINARY(name, kind, lo, hi, alo, ahi, blo, bhi, bsign, ref, torch)   \
    static double hb_##name(double a, double b) { return (ref); }              \
    static const binary_entry B_ROW_##name = {clg_##name, hb_##name, alo, ahi, blo, bhi, bsign, B_COMPARE_##kind};
#include "binary_ops.def"
#undef CLG_BINARY

static void binary_setup(cf_prob *p)
{
    const binary_entry *e = p->arg;
    int M = S(2, 5), K = S(3, 7), N = S(4, 67);
    cf_kind kind = e->compare ? CF_CONST : CF_GRAD;
    cf_in(p, kind, e->alo, e->ahi, 3, M, 1, N)->integral = e->compare;
    cf_arr *b = cf_in(p, kind, e->blo, e->bhi, 2, K, N);
    b->integral = e->compare;
    b->signs = e->bsigns;
    cf_out(p, 3, M, K, N);
}
static void binary_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    const binary_entry *e = p->arg;
    out[0] = e->dev(in[0], in[1]);
}
static void binary_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const binary_entry *e = p->arg;
    for (int64_t i = 0; i < p->out[0].n; i++)
        out[0][i] = e->host(in[0][cf_bcast(&p->in[0], &p->out[0], i)], in[1][cf_bcast(&p->in[1], &p->out[0], i)]);
}

/* where(mask [A, B], a [A, B], b [B]) */
static void where_setup(cf_prob *p)
{
    int A = S(3, 31), B = S(5, 67);
    cf_in(p, CF_CONST, 0, 2, 2, A, B)->integral = true;
    cf_in(p, CF_GRAD, -2, 2, 2, A, B);
    cf_in(p, CF_GRAD, -2, 2, 1, B);
    cf_out(p, 2, A, B);
}
static void where_run(cf_prob *p, clg_tensor **in, clg_tensor **out) { UNUSED(p); out[0] = clg_where(in[0], in[1], in[2]); }
static void where_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t B = p->in[2].n;
    for (int64_t i = 0; i < p->out[0].n; i++) out[0][i] = in[0][i] != 0 ? in[1][i] : in[2][i % B];
}

/* logical_not(a [A, B]): integers in [-2, 2), so a quarter are 0 (false); not differentiable */
static void not_setup(cf_prob *p)
{
    cf_in(p, CF_CONST, -2, 2, 2, S(3, 31), S(5, 67))->integral = true;
    cf_out_like(p, 0);
    p->no_backward = true;
}
static void not_run(cf_prob *p, clg_tensor **in, clg_tensor **out) { UNUSED(p); out[0] = clg_logical_not(in[0]); }
static void not_ref(const cf_prob *p, double *const *in, double *const *out)
{
    for (int64_t i = 0; i < p->in[0].n; i++) out[0][i] = in[0][i] == 0;
}

/* ---- reductions: ia[0] kind, ia[1] naxes (0: all), ia[2..3] axes, ia[4] keepdim, ia[5] correction */

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_VAR, R_STD, R_PROD, R_NORM2, R_LSE, R_ARGMIN, R_ARGMAX };

typedef struct reduce_entry {
    int kind, naxes, axes[2];
    bool keepdim;
    int correction;
} reduce_entry;

static const reduce_entry R_SUM_ALL = {R_SUM, 0, {0, 0}, false, 0};
static const reduce_entry R_SUM_1K = {R_SUM, 1, {1, 0}, true, 0};
static const reduce_entry R_MEAN_02 = {R_MEAN, 2, {0, 2}, false, 0};
static const reduce_entry R_MEAN_ALL = {R_MEAN, 0, {0, 0}, true, 0};
static const reduce_entry R_MAX_L = {R_MAX, 1, {-1, 0}, false, 0};
static const reduce_entry R_MAX_0 = {R_MAX, 1, {0, 0}, true, 0};
static const reduce_entry R_MIN_ALL = {R_MIN, 0, {0, 0}, false, 0};
static const reduce_entry R_MIN_12 = {R_MIN, 2, {1, 2}, false, 0};
static const reduce_entry R_VAR_1 = {R_VAR, 1, {1, 0}, false, 1};
static const reduce_entry R_VAR_ALL = {R_VAR, 0, {0, 0}, false, 0};
static const reduce_entry R_STD_1 = {R_STD, 1, {1, 0}, true, 1};
static const reduce_entry R_PROD_0 = {R_PROD, 1, {0, 0}, false, 0};
static const reduce_entry R_NORM2_12 = {R_NORM2, 2, {1, 2}, true, 0};
static const reduce_entry R_LSE_1 = {R_LSE, 1, {1, 0}, false, 0};
static const reduce_entry R_ARGMIN_1 = {R_ARGMIN, 1, {1, 0}, false, 0};
static const reduce_entry R_ARGMAX_1 = {R_ARGMAX, 1, {1, 0}, false, 0};
static const reduce_entry R_ARGMAX_L = {R_ARGMAX, 1, {-1, 0}, true, 0};

static bool reduced(const reduce_entry *e, int nd, int d)
{
    if (e->naxes == 0) return true;
    for (int k = 0; k < e->naxes; k++)
        if ((e->axes[k] + nd) % nd == d) return true;
    return false;
}

static void reduce_setup(cf_prob *p)
{
    const reduce_entry *e = p->arg;
    bool arg = e->kind == R_ARGMAX || e->kind == R_ARGMIN;
    cf_arr *a = cf_in(p, arg ? CF_CONST : CF_GRAD, -2, 2, 3, S(2, 6), S(3, 37), S(5, 29));
    cf_arr *o = &p->out[p->nout++];
    o->n = 1;
    for (int d = 0; d < 3; d++) {
        if (!reduced(e, 3, d)) o->shape[o->nd++] = a->shape[d];
        else if (e->keepdim) o->shape[o->nd++] = 1;
    }
    for (int d = 0; d < o->nd; d++) o->n *= o->shape[d];
    p->no_backward = arg;
    if (e->kind == R_VAR || e->kind == R_STD || p->big) p->tol = 4;   /* long sums in float32 */
}

static void reduce_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    const reduce_entry *e = p->arg;
    const int *ax = e->naxes ? e->axes : NULL;
    switch (e->kind) {
    case R_SUM: out[0] = clg_sum(in[0], e->naxes, ax, e->keepdim); break;
    case R_MEAN: out[0] = clg_mean(in[0], e->naxes, ax, e->keepdim); break;
    case R_MAX: out[0] = clg_max(in[0], e->naxes, ax, e->keepdim); break;
    case R_MIN: out[0] = clg_min(in[0], e->naxes, ax, e->keepdim); break;
    case R_VAR: out[0] = clg_var(in[0], e->naxes, ax, e->correction, e->keepdim); break;
    case R_STD: out[0] = clg_std(in[0], e->naxes, ax, e->correction, e->keepdim); break;
    case R_PROD: out[0] = clg_prod(in[0], e->naxes, ax, e->keepdim); break;
    case R_NORM2: out[0] = clg_norm(in[0], 2, e->naxes, ax, e->keepdim); break;
    case R_LSE: out[0] = clg_logsumexp(in[0], e->naxes, ax, e->keepdim); break;
    case R_ARGMIN: out[0] = clg_argmin(in[0], e->axes[0], e->keepdim); break;
    default: out[0] = clg_argmax(in[0], e->axes[0], e->keepdim); break;
    }
}

static void reduce_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const reduce_entry *e = p->arg;
    const cf_arr *a = &p->in[0];
    int64_t m = p->out[0].n, cnt = a->n / m;
    double *acc = out[0];
    double *mean = calloc((size_t)m, sizeof *mean);
    int64_t *arg = calloc((size_t)m, sizeof *arg), *seen = calloc((size_t)m, sizeof *seen);
    bool var = e->kind == R_VAR || e->kind == R_STD;
    for (int pass = 0; pass < (var || e->kind == R_LSE ? 2 : 1); pass++) {
        for (int64_t j = 0; j < m; j++) acc[j] = 0, seen[j] = 0;
        for (int64_t i = 0; i < a->n; i++) {
            int64_t c[CLG_MAX_DIMS], j = 0;
            coords(a, i, c);
            for (int d = 0; d < a->nd; d++)
                if (!reduced(e, a->nd, d)) j = j * a->shape[d] + c[d];
            double x = in[0][i];
            bool first = seen[j]++ == 0;
            switch (e->kind) {
            case R_SUM: case R_MEAN: acc[j] += x; break;
            case R_MAX: if (first || x > acc[j]) acc[j] = x; break;
            case R_MIN: if (first || x < acc[j]) acc[j] = x; break;
            case R_VAR:
            case R_STD: if (pass == 0) acc[j] += x; else acc[j] += (x - mean[j]) * (x - mean[j]); break;
            case R_PROD: acc[j] = first ? x : acc[j] * x; break;
            case R_NORM2: acc[j] += x * x; break;
            case R_LSE: if (pass == 0) { if (first || x > acc[j]) acc[j] = x; } else acc[j] += exp(x - mean[j]); break;
            case R_ARGMIN: if (first || x < mean[j]) mean[j] = x, arg[j] = seen[j] - 1; break;
            default: if (first || x > mean[j]) mean[j] = x, arg[j] = seen[j] - 1; break;
            }
        }
        if (var && pass == 0)
            for (int64_t j = 0; j < m; j++) mean[j] = acc[j] / (double)cnt;
        if (e->kind == R_LSE && pass == 0)   /* mean holds the maximum */
            for (int64_t j = 0; j < m; j++) mean[j] = acc[j];
    }
    for (int64_t j = 0; j < m; j++) {
        if (e->kind == R_MEAN) acc[j] /= (double)cnt;
        if (var) acc[j] /= (double)(cnt - e->correction);
        if (e->kind == R_STD) acc[j] = sqrt(acc[j]);
        if (e->kind == R_ARGMAX || e->kind == R_ARGMIN) acc[j] = (double)arg[j];
        if (e->kind == R_NORM2) acc[j] = sqrt(acc[j]);
        if (e->kind == R_LSE) acc[j] = mean[j] + log(acc[j]);
    }
    free(mean);
    free(arg);
    free(seen);
}

/* ---- matrix products: ia = {m, k, n, a stored transposed, b stored transposed} ----------------- */

/* The batch part of a (all but the last two axes). */
static cf_arr batch_of(const cf_arr *a)
{
    cf_arr b = *a;
    b.nd = a->nd > 2 ? a->nd - 2 : 0;
    b.n = 1;
    for (int d = 0; d < b.nd; d++) b.n *= b.shape[d];
    return b;
}

typedef struct mm_entry { int shape; } mm_entry;
enum { MM_2D, MM_BATCH, MM_TRANS, MM_VEC, MM_MATVEC };
static const mm_entry MM_E[] = {{MM_2D}, {MM_BATCH}, {MM_TRANS}, {MM_VEC}, {MM_MATVEC}};

static void matmul_setup(cf_prob *p)
{
    const mm_entry *e = p->arg;
    int m = S(3, 37), k = S(4, 70), n = S(5, 45);
    p->ia[0] = m, p->ia[1] = k, p->ia[2] = n;
    switch (e->shape) {
    case MM_2D:
        cf_in(p, CF_GRAD, -1, 1, 2, m, k), cf_in(p, CF_GRAD, -1, 1, 2, k, n), cf_out(p, 2, m, n);
        break;
    case MM_BATCH:
        cf_in(p, CF_GRAD, -1, 1, 4, 2, 1, m, k), cf_in(p, CF_GRAD, -1, 1, 3, 3, k, n), cf_out(p, 4, 2, 3, m, n);
        break;
    case MM_TRANS:
        cf_in(p, CF_GRAD, -1, 1, 2, k, m), cf_in(p, CF_GRAD, -1, 1, 2, n, k), cf_out(p, 2, m, n);
        p->ia[3] = p->ia[4] = 1;
        break;
    case MM_VEC:
        p->ia[0] = 1;
        cf_in(p, CF_GRAD, -1, 1, 1, k), cf_in(p, CF_GRAD, -1, 1, 2, k, n), cf_out(p, 1, n);
        break;
    default:
        p->ia[2] = 1;
        cf_in(p, CF_GRAD, -1, 1, 2, m, k), cf_in(p, CF_GRAD, -1, 1, 1, k), cf_out(p, 1, m);
        break;
    }
}
static void matmul_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    clg_tensor *a = p->ia[3] ? clg_transpose(in[0], 0, 1) : in[0], *b = p->ia[4] ? clg_transpose(in[1], 0, 1) : in[1];
    out[0] = clg_matmul(a, b);
}
static void matmul_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t m = p->ia[0], k = p->ia[1], n = p->ia[2];
    cf_arr ob = batch_of(&p->out[0]), ab = batch_of(&p->in[0]), bb = batch_of(&p->in[1]);
    if (p->out[0].nd < 2) ob.nd = 0, ob.n = 1;
    for (int64_t z = 0; z < ob.n; z++) {
        const double *A = in[0] + cf_bcast(&ab, &ob, z) * m * k, *B = in[1] + cf_bcast(&bb, &ob, z) * k * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t l = 0; l < k; l++)
                    s += (p->ia[3] ? A[l * m + i] : A[i * k + l]) * (p->ia[4] ? B[j * k + l] : B[l * n + j]);
                out[0][(z * m + i) * n + j] = s;
            }
    }
}

/* linear(x [..., in], w [out, in], b [out] or none) */
static void linear_setup(cf_prob *p)
{
    int N = S(3, 33), I = S(4, 70), O = S(5, 41);
    bool three = p->arg != NULL;
    if (three) cf_in(p, CF_GRAD, -1, 1, 3, 2, N, I), cf_out(p, 3, 2, N, O);
    else cf_in(p, CF_GRAD, -1, 1, 2, N, I), cf_out(p, 2, N, O);
    cf_in(p, CF_GRAD, -1, 1, 2, O, I);
    if (!three) cf_in(p, CF_GRAD, -1, 1, 1, O);
}
static void linear_run(cf_prob *p, clg_tensor **in, clg_tensor **out) { out[0] = clg_linear(in[0], in[1], p->nin > 2 ? in[2] : NULL); }
static void linear_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t O = p->in[1].shape[0], I = p->in[1].shape[1], rows = p->in[0].n / I;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t o = 0; o < O; o++) {
            double s = p->nin > 2 ? in[2][o] : 0;
            for (int64_t i = 0; i < I; i++) s += in[0][r * I + i] * in[1][o * I + i];
            out[0][r * O + o] = s;
        }
}

/* ---- indexing and joining ----------------------------------------------------------------------- */

/* index_select(a, axis ia[0], indices [K]) */
static void index_select_setup(cf_prob *p)
{
    int axis = p->arg ? 1 : 0, A = S(4, 23), B = S(3, 17), C = S(2, 65), K = S(6, 40);
    p->ia[0] = axis;
    if (axis == 0) cf_in(p, CF_GRAD, -1, 1, 2, A, C), cf_in(p, CF_INDEX, 0, A, 1, K), cf_out(p, 2, K, C);
    else cf_in(p, CF_GRAD, -1, 1, 3, A, B, C), cf_in(p, CF_INDEX, 0, B, 1, K), cf_out(p, 3, A, K, C);
}
static void index_select_run(cf_prob *p, clg_tensor **in, clg_tensor **out) { out[0] = clg_index_select(in[0], p->ia[0], in[1]); }
static void index_select_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t outer, mid, inner, K = p->in[1].n;
    cf_split_axis(&p->in[0], p->ia[0], &outer, &mid, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t i = 0; i < inner; i++)
                out[0][(o * K + k) * inner + i] = in[0][(o * mid + (int64_t)in[1][k]) * inner + i];
}

/* gather(a [A, B], axis ia[0], index) */
static void gather_setup(cf_prob *p)
{
    int axis = p->arg ? 0 : 1, A = S(3, 29), B = S(5, 47), K = S(4, 33);
    p->ia[0] = axis;
    cf_in(p, CF_GRAD, -1, 1, 2, A, B);
    if (axis == 1) cf_in(p, CF_INDEX, 0, B, 2, A, K), cf_out(p, 2, A, K);
    else cf_in(p, CF_INDEX, 0, A, 2, K, B), cf_out(p, 2, K, B);
}
static void gather_run(cf_prob *p, clg_tensor **in, clg_tensor **out) { out[0] = clg_gather(in[0], p->ia[0], in[1]); }
static void gather_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t B = p->in[0].shape[1], cols = p->out[0].shape[1];
    for (int64_t i = 0; i < p->out[0].n; i++) {
        int64_t r = i / cols, c = i % cols, x = (int64_t)in[1][i];
        out[0][i] = p->ia[0] == 1 ? in[0][r * B + x] : in[0][x * B + c];
    }
}

/* flip(a [A, B, C], axes 0 and 2) */
static void flip_setup(cf_prob *p)
{
    int A = S(2, 7), B = S(3, 9), C = S(4, 33);
    cf_in(p, CF_GRAD, -1, 1, 3, A, B, C);
    cf_out(p, 3, A, B, C);
}
static void flip_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    UNUSED(p);
    out[0] = clg_flip(in[0], CLG_AXES(0, 2));
}
static void flip_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t A = p->in[0].shape[0], B = p->in[0].shape[1], C = p->in[0].shape[2];
    for (int64_t i = 0; i < A; i++)
        for (int64_t j = 0; j < B; j++)
            for (int64_t k = 0; k < C; k++) out[0][(i * B + j) * C + k] = in[0][((A - 1 - i) * B + j) * C + C - 1 - k];
}

/* tril / triu(a [A, B, C], diagonal ia[1]); ia[0]: 1 for triu */
static const int TRI_E[2][2] = {{0, -1}, {1, 2}};
static void tri_setup(cf_prob *p)
{
    const int *e = p->arg;
    p->ia[0] = e[0], p->ia[1] = e[1];
    cf_in(p, CF_GRAD, -1, 1, 3, S(2, 5), S(4, 37), S(5, 29));
    cf_out_like(p, 0);
}
static void tri_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    out[0] = p->ia[0] ? clg_triu(in[0], p->ia[1]) : clg_tril(in[0], p->ia[1]);
}
static void tri_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t B = p->in[0].shape[1], C = p->in[0].shape[2];
    for (int64_t i = 0; i < p->in[0].n; i++) {
        int64_t d = i % C - i / C % B;   /* column - row */
        out[0][i] = (p->ia[0] ? d >= p->ia[1] : d <= p->ia[1]) ? in[0][i] : 0;
    }
}

/* multinomial(w [R, C], 4 samples): rows with one nonzero weight, at the largest of a
 * [R, C] (as eq(a, max(a))), always draw that index, with or without replacement
 * (arg: 1 without, the draws then one per row) */
static void mn_onehot_setup(cf_prob *p)
{
    p->ia[0] = p->arg != NULL;
    p->ia[1] = p->ia[0] ? 1 : 4;
    cf_arr *a = cf_in(p, CF_CONST, -1, 1, 2, S(3, 17), S(7, 300));
    a->spread = true;   /* one largest per row */
    cf_out(p, 2, (int)a->shape[0], p->ia[1]);
    p->no_backward = true;
}
static void mn_onehot_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    clg_tensor *w = clg_eq(in[0], clg_max(in[0], CLG_AXES(1), true));
    out[0] = clg_multinomial(w, p->ia[1], !p->ia[0]);
}
static void mn_onehot_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t R = p->in[0].shape[0], C = p->in[0].shape[1];
    for (int64_t r = 0; r < R; r++) {
        int64_t best = 0;
        for (int64_t c = 1; c < C; c++)
            if (in[0][r * C + c] > in[0][r * C + best]) best = c;
        for (int k = 0; k < p->ia[1]; k++) out[0][r * p->ia[1] + k] = (double)best;
    }
}

/* multinomial(relu(a) [R, C], C / 2 samples, without replacement): the draws are the
 * device's (random): each a category of nonzero weight, none twice in a row */
static void mn_distinct_setup(cf_prob *p)
{
    cf_arr *a = cf_in(p, CF_CONST, -0.5, 1, 2, S(4, 9), S(16, 1000));
    p->ia[0] = (int)a->shape[1] / 4;   /* fewer than the nonzero weights, with room */
    cf_out(p, 2, (int)a->shape[0], p->ia[0]);
    p->no_backward = true;
}
static void mn_distinct_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    out[0] = clg_multinomial(clg_relu(in[0]), p->ia[0], false);
}
static bool mn_distinct_observe(cf_prob *p, double *const *in, double *const *dev_out, char *msg, size_t len)
{
    int64_t R = p->in[0].shape[0], C = p->in[0].shape[1], S_ = p->ia[0];
    p->aux = malloc((size_t)(R * S_) * sizeof *p->aux);
    char *seen = calloc((size_t)C, 1);
    bool ok = p->aux && seen;
    for (int64_t r = 0; ok && r < R; r++) {
        memset(seen, 0, (size_t)C);
        for (int64_t k = 0; ok && k < S_; k++) {
            double v = p->aux[r * S_ + k] = dev_out[0][r * S_ + k];
            int64_t c = (int64_t)v;
            ok = v == (double)c && c >= 0 && c < C && in[0][r * C + c] > 0 && !seen[c]++;
            if (!ok) snprintf(msg, len, "row %lld, draw %lld: %g is out of range, of a weight <= 0 or a repeat",
                              (long long)r, (long long)k, v);
        }
    }
    free(seen);
    return ok;
}
static void mn_distinct_ref(const cf_prob *p, double *const *in, double *const *out)
{
    UNUSED(in);
    memcpy(out[0], p->aux, (size_t)p->out[0].n * sizeof *out[0]);
}

/* cumsum(a [A, B], axis ia[0]) */
static void cumsum_setup(cf_prob *p)
{
    p->ia[0] = p->arg ? 0 : 1;
    cf_in(p, CF_GRAD, -1, 1, 2, S(3, 17), S(4, 65));
    cf_out_like(p, 0);
}
static void cumsum_run(cf_prob *p, clg_tensor **in, clg_tensor **out) { out[0] = clg_cumsum(in[0], p->ia[0]); }
static void cumsum_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t R = p->in[0].shape[0], Cn = p->in[0].shape[1];
    for (int64_t i = 0; i < R * Cn; i++) {
        int64_t r = i / Cn, c = i % Cn;
        bool first = p->ia[0] == 1 ? c == 0 : r == 0;
        out[0][i] = in[0][i] + (first ? 0 : out[0][p->ia[0] == 1 ? i - 1 : i - Cn]);
    }
}

/* sort / topk 3 (descending) of a [A, B] along axis 1: the values; inputs far enough
 * apart that no central difference swaps two (at size normal, uniform ones came within
 * the step of 1e-5) */
static void sort_setup(cf_prob *p)
{
    int A = S(3, 9), B = S(5, 37);
    p->ia[0] = p->arg ? 3 : B;
    cf_in(p, CF_GRAD, -1, 1, 2, A, B)->spread = true;
    cf_out(p, 2, A, p->ia[0]);
}
static void sort_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    clg_tensor *idx;
    if (p->arg) clg_topk(in[0], p->ia[0], 1, true, &out[0], &idx);
    else clg_sort(in[0], 1, true, &out[0], &idx);
}
static int desc_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}
static void sort_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t A = p->in[0].shape[0], B = p->in[0].shape[1], K = p->ia[0];
    double *row = malloc((size_t)B * sizeof *row);
    for (int64_t r = 0; r < A; r++) {
        memcpy(row, in[0] + r * B, (size_t)B * sizeof *row);
        qsort(row, (size_t)B, sizeof *row, desc_cmp);
        memcpy(out[0] + r * K, row, (size_t)K * sizeof *row);
    }
    free(row);
}

/* ---- long axes: past what one work-item may loop over ------------------------------------------ */

/* Lengths from cf_prob.long_n (--long): scans, sorts and index lists of N, products with
 * an inner size of 3N/7, an index repeated 2N/7 times. Integral values keep the long
 * float32 sums exact where the case allows. */
static void long_cumsum_setup(cf_prob *p)
{
    p->ia[0] = 1;
    cf_in(p, CF_GRAD, -3, 3, 2, 2, (int)p->long_n)->integral = true;
    cf_out_like(p, 0);
}
static void long_matmul_setup(cf_prob *p)
{
    int k = (int)(p->long_n * 3 / 7);
    p->ia[0] = 2, p->ia[1] = k, p->ia[2] = 3;
    cf_in(p, CF_GRAD, -2, 2, 2, 2, k)->integral = true;
    cf_in(p, CF_GRAD, -2, 2, 2, k, 3)->integral = true;
    cf_out(p, 2, 2, 3);
}
static void long_linear_setup(cf_prob *p)
{
    int N = (int)p->long_n;
    cf_in(p, CF_CONST, -1, 1, 2, N, 4), cf_out(p, 2, N, 4);
    cf_in(p, CF_GRAD, -1, 1, 2, 4, 4);
    cf_in(p, CF_GRAD, -1, 1, 1, 4);
    p->tol = 4;
}
static void long_index_select_setup(cf_prob *p)
{
    int K = (int)(p->long_n * 2 / 7);
    p->ia[0] = 0;
    cf_in(p, CF_GRAD, -1, 1, 2, 3, 4), cf_in(p, CF_INDEX, 0, 3, 1, K), cf_out(p, 2, K, 4);
    p->tol = 4;
}
static void long_index_add_setup(cf_prob *p)
{
    int K = (int)p->long_n;
    cf_in(p, CF_GRAD, -1, 1, 2, 2, 5);
    cf_in(p, CF_INDEX, 0, 5, 1, K);
    cf_in(p, CF_GRAD, -1, 1, 2, 2, K);
    cf_out(p, 2, 2, 5);
    p->tol = 4;
}
/* topk 3 of one long row, values spread far enough apart for the central differences */
static void long_topk_setup(cf_prob *p)
{
    p->ia[0] = 3;
    cf_in(p, CF_GRAD, -1000, 1000, 2, 1, (int)p->long_n)->spread = true;
    cf_out(p, 2, 1, 3);
}
static void long_topk_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t n = p->in[0].n;
    for (int j = 0; j < 3; j++) {   /* the largest below the one before (distinct values) */
        double best = -INFINITY;
        for (int64_t i = 0; i < n; i++)
            if (in[0][i] > best && (j == 0 || in[0][i] < out[0][j - 1])) best = in[0][i];
        out[0][j] = best;
    }
}

/* index_add(a [A, B], axis 1, indices [K], src [A, K]) with repeats */
static void index_add_setup(cf_prob *p)
{
    int A = S(3, 29), B = S(4, 33), K = S(6, 47);
    cf_in(p, CF_GRAD, -1, 1, 2, A, B);
    cf_in(p, CF_INDEX, 0, B, 1, K);
    cf_in(p, CF_GRAD, -1, 1, 2, A, K);
    cf_out(p, 2, A, B);
}
static void index_add_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    UNUSED(p);
    out[0] = clg_index_add(in[0], 1, in[1], in[2]);
}
static void index_add_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t A = p->in[0].shape[0], B = p->in[0].shape[1], K = p->in[1].n;
    memcpy(out[0], in[0], (size_t)(A * B) * sizeof(double));
    for (int64_t r = 0; r < A; r++)
        for (int64_t k = 0; k < K; k++) out[0][r * B + (int64_t)in[1][k]] += in[2][r * K + k];
}

/* scatter_add(a [A, B], axis 1, index [A, K], src [A, K]) */
static void scatter_add_setup(cf_prob *p)
{
    int A = S(3, 29), B = S(4, 33), K = S(6, 47);
    cf_in(p, CF_GRAD, -1, 1, 2, A, B);
    cf_in(p, CF_INDEX, 0, B, 2, A, K);
    cf_in(p, CF_GRAD, -1, 1, 2, A, K);
    cf_out(p, 2, A, B);
}
static void scatter_add_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    UNUSED(p);
    out[0] = clg_scatter_add(in[0], 1, in[1], in[2]);
}
static void scatter_add_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int64_t A = p->in[0].shape[0], B = p->in[0].shape[1], K = p->in[1].shape[1];
    memcpy(out[0], in[0], (size_t)(A * B) * sizeof(double));
    for (int64_t r = 0; r < A; r++)
        for (int64_t k = 0; k < K; k++) out[0][r * B + (int64_t)in[1][r * K + k]] += in[2][r * K + k];
}

/* concat / stack of three inputs [A, Bi, C] / [A, C] along axis 1; split into three. */
enum { J_CONCAT, J_STACK, J_SPLIT };
static const int J_E[] = {J_CONCAT, J_STACK, J_SPLIT};

static void join_setup(cf_prob *p)
{
    int kind = *(const int *)p->arg, A = S(2, 9), C = S(3, 65), b[3] = {S(1, 5), S(2, 1), S(3, 30)};
    if (kind == J_CONCAT) {
        for (int i = 0; i < 3; i++) cf_in(p, CF_GRAD, -1, 1, 3, A, b[i], C);
        cf_out(p, 3, A, b[0] + b[1] + b[2], C);
    } else if (kind == J_STACK) {
        for (int i = 0; i < 3; i++) cf_in(p, CF_GRAD, -1, 1, 2, A, C);
        cf_out(p, 3, A, 3, C);
    } else {
        cf_in(p, CF_GRAD, -1, 1, 3, A, b[0] + b[1] + b[2], C);
        for (int i = 0; i < 3; i++) cf_out(p, 3, A, b[i], C);
    }
}
static void join_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    int kind = *(const int *)p->arg;
    if (kind == J_CONCAT) out[0] = clg_concat(3, in, 1);
    else if (kind == J_STACK) out[0] = clg_stack(3, in, 1);
    else {
        int64_t sizes[3] = {p->out[0].shape[1], p->out[1].shape[1], p->out[2].shape[1]};
        if (clg_split(in[0], 1, 3, sizes, out) != CLG_OK) out[0] = out[1] = out[2] = NULL;
    }
}
/* The three parts side by side along axis 1: part i has width b[i] (1 for stack). */
static void join_ref(const cf_prob *p, double *const *in, double *const *out)
{
    int kind = *(const int *)p->arg;
    const cf_arr *parts = kind == J_SPLIT ? p->out : p->in;
    int64_t A = p->in[0].shape[0], C = p->in[0].shape[p->in[0].nd - 1], total = 0, off = 0;
    for (int i = 0; i < 3; i++) total += kind == J_STACK ? 1 : parts[i].shape[1];
    for (int i = 0; i < 3; i++) {
        int64_t w = kind == J_STACK ? 1 : parts[i].shape[1];
        for (int64_t a = 0; a < A; a++)
            for (int64_t j = 0; j < w; j++)
                for (int64_t c = 0; c < C; c++) {
                    int64_t whole = (a * total + off + j) * C + c, part = (a * w + j) * C + c;
                    if (kind == J_SPLIT) out[i][part] = in[0][whole];
                    else out[0][whole] = in[i][part];
                }
        off += w;
    }
}

/* ---- the table ---------------------------------------------------------------------------------- */

#define VIEW(name, which) {name, view_setup, view_run, view_ref, NULL, which}
#define UNARY(name, e) {name, unary_setup, unary_run, unary_ref, NULL, &e}
#define BINARY(name, e) {name, binary_setup, binary_run, binary_ref, NULL, &e}
#define REDUCE(name, e) {name, reduce_setup, reduce_run, reduce_ref, NULL, &e}

const cf_case cf_ops_cases[] = {
    VIEW("reshape (view)", "reshape"),
    VIEW("reshape (of a transposed view: copy)", "reshape_t"),
    VIEW("permute", "permute"),
    VIEW("transpose", "transpose"),
    VIEW("narrow", "narrow"),
    VIEW("slice (step 2)", "slice"),
    VIEW("expand (new axis, size 1)", "expand"),
    VIEW("squeeze", "squeeze"),
    VIEW("unsqueeze", "unsqueeze"),
    VIEW("flatten", "flatten"),
    VIEW("contiguous (of a permuted view)", "contiguous"),
    VIEW("clone (of a transposed view)", "clone"),
    {"cast", cast_setup, cast_run, cast_ref, NULL, NULL},
#define B_NAME_DIFF_INT " (broadcast)"
#define B_NAME_DIFF " (broadcast)"
#define B_NAME_COMPARE " (broadcast, ties)"
#define B_NAME_LOGIC " (broadcast, zeros)"
#define CLG_BINARY(name, kind, ...) BINARY(#name B_NAME_##kind, B_ROW_##name),
#include "binary_ops.def"
#undef CLG_BINARY
    {"logical_not (zeros)", not_setup, not_run, not_ref, NULL, NULL},
    UNARY("add_scalar", U_ADD_S),
    UNARY("sub_scalar", U_SUB_S),
    UNARY("rsub_scalar", U_RSUB_S),
    UNARY("mul_scalar", U_MUL_S),
    UNARY("div_scalar", U_DIV_S),
    UNARY("rdiv_scalar", U_RDIV_S),
    UNARY("pow_scalar (2.5)", U_POW_S),
    UNARY("pow_scalar (3, negative base)", U_POW_S3),
#define CLG_UNARY(name, ...) UNARY(#name, U_ROW_##name),
#include "unary_ops.def"
#undef CLG_UNARY
    UNARY("clamp", U_CLAMP),
    {"where (broadcast)", where_setup, where_run, where_ref, NULL, NULL},
    UNARY("leaky_relu", U_LEAKY),
    UNARY("softplus (beta 2, threshold 3)", U_SOFTPLUS),
    UNARY("elu (alpha 0.7)", U_ELU),
    UNARY("dropout (eval: identity)", U_DROPOUT_EVAL),
    UNARY("dist_all_reduce (sum over the ranks)", U_ALL_REDUCE),
    REDUCE("sum (all)", R_SUM_ALL),
    REDUCE("sum (axis 1, keepdim)", R_SUM_1K),
    REDUCE("mean (axes 0, 2)", R_MEAN_02),
    REDUCE("mean (all, keepdim)", R_MEAN_ALL),
    REDUCE("max (axis -1)", R_MAX_L),
    REDUCE("max (axis 0, keepdim)", R_MAX_0),
    REDUCE("min (all)", R_MIN_ALL),
    REDUCE("min (axes 1, 2)", R_MIN_12),
    REDUCE("var (axis 1, unbiased)", R_VAR_1),
    REDUCE("var (all, population)", R_VAR_ALL),
    REDUCE("std (axis 1, unbiased, keepdim)", R_STD_1),
    REDUCE("prod (axis 0)", R_PROD_0),
    REDUCE("norm (p 2, axes 1, 2, keepdim)", R_NORM2_12),
    REDUCE("logsumexp (axis 1)", R_LSE_1),
    REDUCE("argmin (axis 1)", R_ARGMIN_1),
    REDUCE("argmax (axis 1)", R_ARGMAX_1),
    REDUCE("argmax (axis -1, keepdim)", R_ARGMAX_L),
    {"matmul (2-D)", matmul_setup, matmul_run, matmul_ref, NULL, &MM_E[MM_2D]},
    {"matmul (batched, broadcast)", matmul_setup, matmul_run, matmul_ref, NULL, &MM_E[MM_BATCH]},
    {"matmul (transposed views)", matmul_setup, matmul_run, matmul_ref, NULL, &MM_E[MM_TRANS]},
    {"matmul (vector x matrix)", matmul_setup, matmul_run, matmul_ref, NULL, &MM_E[MM_VEC]},
    {"matmul (matrix x vector)", matmul_setup, matmul_run, matmul_ref, NULL, &MM_E[MM_MATVEC]},
    {"linear (bias)", linear_setup, linear_run, linear_ref, NULL, NULL},
    {"linear (3-D input, no bias)", linear_setup, linear_run, linear_ref, NULL, ""},
    {"index_select (axis 0, repeats)", index_select_setup, index_select_run, index_select_ref, NULL, NULL},
    {"index_select (axis 1)", index_select_setup, index_select_run, index_select_ref, NULL, ""},
    {"gather (axis 1)", gather_setup, gather_run, gather_ref, NULL, NULL},
    {"gather (axis 0)", gather_setup, gather_run, gather_ref, NULL, ""},
    {"flip (axes 0, 2)", flip_setup, flip_run, flip_ref, NULL, NULL},
    {"tril (diagonal -1)", tri_setup, tri_run, tri_ref, NULL, TRI_E[0]},
    {"triu (diagonal 2)", tri_setup, tri_run, tri_ref, NULL, TRI_E[1]},
    {"multinomial (one-hot rows, with replacement)", mn_onehot_setup, mn_onehot_run, mn_onehot_ref, NULL, NULL},
    {"multinomial (one-hot rows, without replacement)", mn_onehot_setup, mn_onehot_run, mn_onehot_ref, NULL, ""},
    {"multinomial (without replacement, device draws)", mn_distinct_setup, mn_distinct_run, mn_distinct_ref,
     mn_distinct_observe, NULL},
    {"cumsum (axis 1)", cumsum_setup, cumsum_run, cumsum_ref, NULL, NULL},
    {"cumsum (axis 0)", cumsum_setup, cumsum_run, cumsum_ref, NULL, ""},
    {"sort (axis 1, descending)", sort_setup, sort_run, sort_ref, NULL, NULL},
    {"topk (3, axis 1)", sort_setup, sort_run, sort_ref, NULL, ""},
    {"index_add (axis 1, repeats)", index_add_setup, index_add_run, index_add_ref, NULL, NULL},
    {"scatter_add (axis 1, repeats)", scatter_add_setup, scatter_add_run, scatter_add_ref, NULL, NULL},
    {"cumsum (long axis)", long_cumsum_setup, cumsum_run, cumsum_ref, NULL, NULL},
    {"matmul (long inner size)", long_matmul_setup, matmul_run, matmul_ref, NULL, &MM_E[MM_2D]},
    {"linear (long batch: weight gradient)", long_linear_setup, linear_run, linear_ref, NULL, NULL},
    {"index_select (long repeats)", long_index_select_setup, index_select_run, index_select_ref, NULL, NULL},
    {"index_add (long index)", long_index_add_setup, index_add_run, index_add_ref, NULL, NULL},
    {"topk (3 of a long axis)", long_topk_setup, sort_run, long_topk_ref, NULL, ""},
    {"concat (axis 1)", join_setup, join_run, join_ref, NULL, &J_E[J_CONCAT]},
    {"stack (axis 1)", join_setup, join_run, join_ref, NULL, &J_E[J_STACK]},
    {"split (axis 1, three parts)", join_setup, join_run, join_ref, NULL, &J_E[J_SPLIT]},
};
const int cf_ops_count = (int)(sizeof cf_ops_cases / sizeof *cf_ops_cases);
