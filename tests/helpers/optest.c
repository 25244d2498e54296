/* optest.c: see optest.h. */
#include "optest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "device_impl.h"
#include "tensor_impl.h"

const char *const optest_layout_names[OPTEST_LAYOUT_COUNT] = {"contiguous", "permuted", "sliced", "offset"};

bool optest_fp64(clg_device *dev)
{
    const char *e = getenv("CLG_TEST_FP64");
    return clg_device_get_info(dev)->fp64 && !(e && !strcmp(e, "0"));
}

clg_dtype optest_precise(clg_device *dev) { return optest_fp64(dev) ? CLG_F64 : CLG_F32; }

int optest_float_dtypes(clg_device *dev, clg_dtype out[2])
{
    out[0] = CLG_F32;
    out[1] = CLG_F64;
    return optest_fp64(dev) ? 2 : 1;
}

void optest_round(clg_dtype dt, double *v, int64_t n)
{
    for (int64_t i = 0; dt == CLG_F32 && i < n; i++) v[i] = (float)v[i];
    for (int64_t i = 0; dt == CLG_F16 && i < n; i++) v[i] = clg_f16_to_f32(clg_f32_to_f16((float)v[i]));
    for (int64_t i = 0; dt == CLG_BF16 && i < n; i++) v[i] = clg_bf16_to_f32(clg_f32_to_bf16((float)v[i]));
}

bool optest_small(void)
{
    const char *e = getenv("CLG_TEST_SMALL");
    return e && *e && strcmp(e, "0") != 0;
}

uint64_t optest_launches_1d(clg_device *dev, const clg_kernel *k, size_t n)
{
    if (n == 0) return 0;
    const clg_device_params *p = clg__device_params(dev);
    size_t wg = p->group_1d < k->wg_max ? p->group_1d : k->wg_max, fit = 1;
    if (wg == 0) wg = 1;
    for (size_t d = wg < n ? wg : n; d > 1 && fit == 1; d--)
        if (n % d == 0) fit = d;
    size_t min = p->group_1d_min < wg ? p->group_1d_min : wg, local = fit >= min ? fit : wg;
    size_t tail = n % local, tg = p->group_tail < wg ? p->group_tail : wg;
    if (!tg) return (uint64_t)(n / local > 0) + (uint64_t)(tail > 0);
    return (uint64_t)(n / local > 0) + (uint64_t)(tail / tg > 0) + (uint64_t)(tail % tg > 0);
}

void optest_fill(double *v, int64_t n, double lo, double hi, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v[i] = lo + (hi - lo) * (double)(x >> 11) / 9007199254740992.0;
    }
}

static int64_t numel_of(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

static void *to_dtype(clg_dtype dtype, const double *v, int64_t n)
{
    void *p = malloc((size_t)(n ? n : 1) * clg_dtype_size(dtype));
    for (int64_t i = 0; p && i < n; i++) {
        if (dtype == CLG_F32) ((float *)p)[i] = (float)v[i];
        else if (dtype == CLG_F64) ((double *)p)[i] = v[i];
        else if (dtype == CLG_F16) ((uint16_t *)p)[i] = clg_f32_to_f16((float)v[i]);
        else if (dtype == CLG_BF16) ((uint16_t *)p)[i] = clg_f32_to_bf16((float)v[i]);
        else ((int32_t *)p)[i] = (int32_t)v[i];
    }
    return p;
}

clg_tensor *optest_tensor(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape, const double *values,
                          optest_layout layout)
{
    int64_t n = numel_of(ndim, shape);
    if (layout == OPTEST_PERMUTED && ndim < 2) layout = OPTEST_SLICED;
    if (layout == OPTEST_SLICED && ndim < 1) layout = OPTEST_CONTIGUOUS;
    /* the sliced layout needs 2n + rows, rows counted apart: n is 0 for [7, 0] */
    int64_t rows = 1;
    for (int d = 0; d + 1 < ndim; d++) rows *= shape[d];
    double *store = calloc((size_t)(3 * n + rows + 5), sizeof *store);   /* + 3: the offset layout's sentinels */
    int64_t sshape[CLG_MAX_DIMS];
    for (int d = 0; d < ndim; d++) sshape[d] = shape[d];
    if (layout == OPTEST_PERMUTED) {
        /* store[..., j, i] = values[..., i, j] */
        int64_t r = shape[ndim - 2], c = shape[ndim - 1], rc = r * c, outer = rc ? n / rc : 0;
        sshape[ndim - 2] = c;
        sshape[ndim - 1] = r;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < r; i++)
                for (int64_t j = 0; j < c; j++) store[o * r * c + j * r + i] = values[o * r * c + i * c + j];
    } else if (layout == OPTEST_SLICED) {
        /* last axis doubled plus one; values at odd positions: offset 1, step 2 */
        int64_t c = shape[ndim - 1], outer = c ? n / c : 0;
        sshape[ndim - 1] = 2 * c + 1;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < c; j++) store[o * (2 * c + 1) + 1 + 2 * j] = values[o * c + j];
        for (int64_t o = 0; o < outer; o++) store[o * (2 * c + 1)] = 12345.0;   /* must never be read */
    } else if (layout == OPTEST_OFFSET) {
        /* three sentinels, then the values: a flat buffer viewed from element 3 */
        for (int k = 0; k < 3; k++) store[k] = 12345.0;   /* must never be read */
        memcpy(store + 3, values, (size_t)n * sizeof *store);
    } else {
        memcpy(store, values, (size_t)n * sizeof *store);
    }
    if (layout == OPTEST_OFFSET) {
        void *raw = to_dtype(dtype, store, n + 3);
        clg_tensor *flat = clg_tensor_from_host(dev, dtype, 1, (const int64_t[]){n + 3}, raw);
        free(raw);
        free(store);
        clg_tensor *part = flat ? clg_narrow(flat, 0, 3, n) : NULL;
        clg_tensor *v = part ? clg_reshape(part, ndim, shape) : NULL;
        clg_tensor_free(part);
        clg_tensor_free(flat);   /* the view holds the buffer */
        return v;
    }
    void *raw = to_dtype(dtype, store, numel_of(ndim, sshape));
    clg_tensor *base = clg_tensor_from_host(dev, dtype, ndim, sshape, raw);
    free(raw);
    free(store);
    if (!base || layout == OPTEST_CONTIGUOUS) return base;
    clg_tensor *v = layout == OPTEST_PERMUTED ? clg_transpose(base, ndim - 2, ndim - 1)
                                              : clg_slice(base, ndim - 1, 1, 2 * shape[ndim - 1] + 1, 2);
    clg_tensor_free(base);   /* the view holds the buffer */
    return v;
}

double *optest_read(clg_tensor *t)
{
    if (!t) return NULL;
    int64_t n = clg_tensor_numel(t);
    size_t es = clg_dtype_size(clg_tensor_dtype(t));
    void *raw = malloc((size_t)(n ? n : 1) * es);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (clg_tensor_to_host(t, raw, (size_t)n * es) != CLG_OK) {
        free(raw);
        free(v);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        clg_dtype d = clg_tensor_dtype(t);
        v[i] = d == CLG_F32   ? ((float *)raw)[i]
               : d == CLG_F64 ? ((double *)raw)[i]
               : d == CLG_F16 ? clg_f16_to_f32(((uint16_t *)raw)[i])
               : d == CLG_BF16 ? clg_bf16_to_f32(((uint16_t *)raw)[i])
                              : ((int32_t *)raw)[i];
    }
    free(raw);
    return v;
}

bool optest_close(const char *what, clg_tensor *t, const double *expect, int64_t n, double atol, double rtol)
{
    CHECK_MSG(t != NULL, "%s: no result: %s", what, t ? "" : "(see device error)");
    if (!t) return false;
    CHECK_MSG(clg_tensor_numel(t) == n, "%s: %lld elements, expected %lld", what, (long long)clg_tensor_numel(t),
              (long long)n);
    if (clg_tensor_numel(t) != n) return false;
    double *v = optest_read(t);
    CHECK_MSG(v != NULL, "%s: read failed: %s", what, clg_device_error(clg_tensor_device(t)));
    if (!v) return false;
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = v[i], e = expect[i];
        bool ok = isnan(e) ? isnan(a) : isinf(e) ? a == e : fabs(a - e) <= atol + rtol * fabs(e);
        if (!ok && bad++ < 5) fprintf(stderr, "  %s: [%lld] = %.9g, expected %.9g\n", what, (long long)i, a, e);
    }
    free(v);
    CHECK_MSG(bad == 0, "%s: %d of %lld elements differ", what, bad, (long long)n);
    return bad == 0;
}

/* ---- gradient checks ------------------------------------------------------------------------- */

static void record_coverage(clg_tensor *y, const char *what)
{
    const char *dir = getenv("CLG_GRAD_COVERAGE_DIR");
    if (!dir || !y) return;
    bool seen[CLG_OP_COUNT] = {false};
    clg_tensor *stack[4096];
    int depth = 0;
    stack[depth++] = y;
    while (depth) {
        clg_tensor *t = stack[--depth];
        if (!t->node) continue;
        seen[t->node->op] = true;
        for (int i = 0; i < t->node->ninputs && depth < 4096; i++)
            if (t->node->inputs[i]) stack[depth++] = t->node->inputs[i];
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.txt", dir, what);
    for (char *p = path + strlen(dir) + 1; *p; p++)
        if (*p == '/' || *p == ' ') *p = '_';
    mkdir(dir, 0777);   /* ctest's clean fixture removed it; EEXIST is fine */
    FILE *f = fopen(path, "a");
    if (!f) return;
    for (int op = 0; op < CLG_OP_COUNT; op++)
        if (seen[op]) fprintf(f, "%s\n", clg__op_name(op));
    fclose(f);
}

typedef struct gc_state {
    const char *what;         /* the check's name, without the layout */
    clg_device *dev;
    clg_dtype dtype;
    optest_fn f;
    void *ctx;
    int n;
    const optest_input *in;
    double **values;          /* per input, logical order */
    double *w;                /* projection of the output */
    int64_t out_n;
    optest_layout layout;
    double *num[8];           /* per input, the numeric gradient (from the first layout) */
    bool *num_ok[8];          /* whether both of its forward passes ran */
    bool *sampled[8];         /* whether it was computed (all, or a sample: gc_sample) */
} gc_state;

static bool build_inputs(gc_state *s, clg_tensor **ts, bool want_grad)
{
    for (int i = 0; i < s->n; i++) {
        clg_dtype d = s->in[i].dtype == CLG_I32 ? CLG_I32 : s->dtype;
        ts[i] = optest_tensor(s->dev, d, s->in[i].ndim, s->in[i].shape, s->values[i], s->layout);
        if (!ts[i]) return false;
        if (want_grad && !s->in[i].constant) clg_tensor_set_requires_grad(ts[i], true);
    }
    return true;
}

/* sum(f(inputs) * w) at the current values, without the tape. */
static bool loss_at(gc_state *s, double *loss)
{
    clg_scope_begin(s->dev);
    clg_no_grad_begin(s->dev);
    clg_tensor *ts[8];
    bool ok = build_inputs(s, ts, false);
    clg_tensor *y = ok ? s->f(ts, s->ctx) : NULL;
    double *v = y ? optest_read(y) : NULL;
    ok = v != NULL;
    *loss = 0;
    for (int64_t k = 0; ok && k < s->out_n; k++) *loss += v[k] * s->w[k];
    free(v);
    clg_no_grad_end(s->dev);
    clg_scope_end(s->dev);
    return ok;
}

/* Under the simulators (CLG_TEST_SMALL) the numeric derivative of GC_SAMPLES elements of
 * each input, evenly spaced, the first and the last among them, not of every element:
 * there the forward passes are simulated work-item by work-item (test_grad_conv's were
 * most of its 80 s under Oclgrind), every layout's backward still runs whole under the
 * simulator's checks, and the other devices' runs check every element. */
enum { GC_SAMPLES = 8 };

static void gc_sample(bool *sampled, int64_t ni)
{
    if (!optest_small() || ni <= GC_SAMPLES) {
        for (int64_t j = 0; j < ni; j++) sampled[j] = true;
        return;
    }
    for (int64_t k = 0; k < GC_SAMPLES; k++) sampled[k * (ni - 1) / (GC_SAMPLES - 1)] = true;
}

/* Numeric derivatives kept while optest_gradcheck_keep is on, for checks of the same
 * name, function, type and input values run again (under other device parameters). */
typedef struct gc_kept {
    struct gc_kept *next;
    char *what;
    optest_fn f;
    clg_dtype dtype;
    int n;
    int64_t numel[8];
    double *values[8], *num[8];
    bool constant[8], *num_ok[8], *sampled[8];
} gc_kept;

static bool gc_keeping;
static gc_kept *gc_kept_list;

void optest_gradcheck_keep(bool on)
{
    gc_keeping = on;
    while (!on && gc_kept_list) {
        gc_kept *k = gc_kept_list;
        gc_kept_list = k->next;
        for (int i = 0; i < k->n; i++) free(k->values[i]), free(k->num[i]), free(k->num_ok[i]), free(k->sampled[i]);
        free(k->what);
        free(k);
    }
}

static void *gc_dup(const void *p, size_t bytes)
{
    void *d = malloc(bytes ? bytes : 1);
    if (d && bytes) memcpy(d, p, bytes);
    return d;
}

static int64_t gc_numel(const gc_state *s, int i) { return numel_of(s->in[i].ndim, s->in[i].shape); }

static gc_kept *gc_find(const gc_state *s)
{
    for (gc_kept *k = gc_kept_list; k; k = k->next) {
        bool same = !strcmp(k->what, s->what) && k->f == s->f && k->dtype == s->dtype && k->n == s->n;
        for (int i = 0; same && i < s->n; i++)
            same = k->numel[i] == gc_numel(s, i) && k->constant[i] == s->in[i].constant &&
                   !memcmp(k->values[i], s->values[i], (size_t)k->numel[i] * sizeof(double));
        if (same) return k;
    }
    return NULL;
}

/* s's numeric derivatives from a kept check of the same name, function and inputs. */
static bool gc_take(gc_state *s)
{
    gc_kept *k = gc_keeping ? gc_find(s) : NULL;
    for (int i = 0; k && i < s->n; i++) {
        size_t ni = (size_t)(k->numel[i] ? k->numel[i] : 1);
        s->num[i] = gc_dup(k->num[i], ni * sizeof(double));
        s->num_ok[i] = gc_dup(k->num_ok[i], ni * sizeof(bool));
        s->sampled[i] = gc_dup(k->sampled[i], ni * sizeof(bool));
    }
    return k != NULL;
}

/* Keep s's numeric derivatives, just computed, for a later check (gc_take). */
static void gc_keep(const gc_state *s)
{
    gc_kept *k = gc_keeping ? calloc(1, sizeof *k) : NULL;
    if (!k) return;
    *k = (gc_kept){.next = gc_kept_list, .what = strdup(s->what), .f = s->f, .dtype = s->dtype, .n = s->n};
    for (int i = 0; i < s->n; i++) {
        int64_t ni = gc_numel(s, i);
        size_t cap = (size_t)(ni ? ni : 1);
        k->numel[i] = ni;
        k->constant[i] = s->in[i].constant;
        k->values[i] = gc_dup(s->values[i], (size_t)ni * sizeof(double));
        k->num[i] = gc_dup(s->num[i], cap * sizeof(double));
        k->num_ok[i] = gc_dup(s->num_ok[i], cap * sizeof(bool));
        k->sampled[i] = gc_dup(s->sampled[i], cap * sizeof(bool));
    }
    gc_kept_list = k;
}

/* The central differences of sum(f(inputs) * w) for every input element (or a sample:
 * gc_sample), with the inputs in the contiguous layout. They are computed once per check
 * (or taken from a kept one: gc_take): the forward passes (two per element) are most of a
 * check's time, and the derivative does not depend on
 * how the inputs sit in memory; each layout's forward is checked against the plain-C
 * references by the op tests, and each layout's backward against these values here. */
static void numeric_gradients(gc_state *s, double eps)
{
    if (gc_take(s)) return;
    optest_layout keep_layout = s->layout;
    s->layout = OPTEST_CONTIGUOUS;
    for (int i = 0; i < s->n; i++) {
        int64_t ni = numel_of(s->in[i].ndim, s->in[i].shape);
        s->num[i] = calloc((size_t)(ni ? ni : 1), sizeof(double));
        s->num_ok[i] = calloc((size_t)(ni ? ni : 1), sizeof(bool));
        s->sampled[i] = calloc((size_t)(ni ? ni : 1), sizeof(bool));
        gc_sample(s->sampled[i], ni);
        for (int64_t j = 0; !s->in[i].constant && j < ni; j++) {
            if (!s->sampled[i][j]) continue;
            double keep = s->values[i][j], lp, lm;
            s->values[i][j] = keep + eps;
            bool ok1 = loss_at(s, &lp);
            s->values[i][j] = keep - eps;
            bool ok2 = loss_at(s, &lm);
            s->values[i][j] = keep;
            s->num[i][j] = (lp - lm) / (2 * eps);
            s->num_ok[i][j] = ok1 && ok2;
        }
    }
    s->layout = keep_layout;
    gc_keep(s);
}

static bool check_layout(gc_state *s, const char *what, double eps, double atol, double rtol)
{
    clg_scope_begin(s->dev);
    clg_tensor *ts[8];
    bool ok = build_inputs(s, ts, true);
    clg_tensor *y = ok ? s->f(ts, s->ctx) : NULL;
    CHECK_MSG(y != NULL, "%s: forward failed: %s", what, clg_device_error(s->dev));
    if (!y) {
        clg_scope_end(s->dev);
        return false;
    }
    record_coverage(y, what);
    s->out_n = clg_tensor_numel(y);
    free(s->w);
    s->w = malloc((size_t)(s->out_n ? s->out_n : 1) * sizeof *s->w);
    optest_fill(s->w, s->out_n, -1, 1, 99);
    if (!s->num[0]) numeric_gradients(s, eps);
    double *wv = s->w;
    void *wraw = to_dtype(s->dtype, wv, s->out_n);
    clg_tensor *w = clg_tensor_from_host(s->dev, s->dtype, clg_tensor_ndim(y), clg_tensor_shape(y), wraw);
    free(wraw);
    clg_tensor *loss = clg_sum(clg_mul(y, w), 0, NULL, false);
    clg_status st = loss ? clg_backward(loss, NULL) : CLG_ERR_INVALID_ARGUMENT;
    CHECK_MSG(st == CLG_OK, "%s: backward failed: %s", what, clg_device_error(s->dev));
    int bad = 0;
    for (int i = 0; st == CLG_OK && i < s->n; i++) {
        if (s->in[i].constant) continue;
        clg_tensor *g = clg_tensor_grad(ts[i]);
        int64_t ni = numel_of(s->in[i].ndim, s->in[i].shape);
        CHECK_MSG(g != NULL || ni == 0, "%s: input %d got no gradient", what, i);
        double *ga = g ? optest_read(g) : NULL;
        for (int64_t j = 0; ga && j < ni; j++) {
            if (!s->sampled[i][j]) continue;
            double num = s->num[i][j];
            if (!s->num_ok[i][j] || fabs(ga[j] - num) > atol + rtol * fabs(num)) {
                if (bad++ < 5)
                    fprintf(stderr, "  %s: input %d [%lld]: analytic %.9g, numeric %.9g\n", what, i, (long long)j,
                            ga[j], num);
            }
        }
        free(ga);
    }
    CHECK_MSG(bad == 0, "%s: %d gradient elements differ", what, bad);
    clg_scope_end(s->dev);
    return bad == 0 && st == CLG_OK;
}

bool optest_gradcheck(clg_device *dev, const char *what, optest_fn f, void *ctx, int n, const optest_input *inputs)
{
    return optest_gradcheck_as(dev, optest_precise(dev), what, f, ctx, n, inputs);
}

bool optest_gradcheck_as(clg_device *dev, clg_dtype dtype, const char *what, optest_fn f, void *ctx, int n,
                         const optest_input *inputs)
{
    bool fp64 = dtype == CLG_F64;
    gc_state s = {.what = what, .dev = dev, .dtype = fp64 ? CLG_F64 : CLG_F32, .f = f, .ctx = ctx, .n = n, .in = inputs};
    double eps = fp64 ? 1e-6 : 1e-3, atol = fp64 ? 1e-5 : 1e-3, rtol = fp64 ? 1e-3 : 1e-2;
    double *vals[8];
    s.values = vals;
    for (int i = 0; i < n; i++) {
        int64_t ni = numel_of(inputs[i].ndim, inputs[i].shape);
        vals[i] = malloc((size_t)(ni ? ni : 1) * sizeof(double));
        if (inputs[i].values) memcpy(vals[i], inputs[i].values, (size_t)ni * sizeof(double));
        else if (inputs[i].lo == 0 && inputs[i].hi == 0) optest_fill(vals[i], ni, -1, 1, 7 + (uint64_t)i);
        else optest_fill(vals[i], ni, inputs[i].lo, inputs[i].hi, 7 + (uint64_t)i);
    }
    bool ok = true;
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
        char name[256];
        snprintf(name, sizeof name, "%s (%s)", what, optest_layout_names[l]);
        s.layout = (optest_layout)l;
        ok = check_layout(&s, name, eps, atol, rtol) && ok;
    }
    for (int i = 0; i < n; i++) {
        free(vals[i]);
        free(s.num[i]);
        free(s.num_ok[i]);
        free(s.sampled[i]);
    }
    free(s.w);
    return ok;
}
