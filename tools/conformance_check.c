/* conformance_check.c: one case of `clgrad conformance` on one device (see
 * conformance_cases.h): inputs, the device's outputs and gradients, the host
 * reference and its central differences, and the comparison. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conformance_cases.h"

/* ---- setup helpers ------------------------------------------------------------------------------ */

static cf_arr *shape_va(cf_arr *a, int nd, va_list ap)
{
    a->nd = nd;
    a->n = 1;
    for (int d = 0; d < nd; d++) {
        a->shape[d] = va_arg(ap, int);
        a->n *= a->shape[d];
    }
    return a;
}

cf_arr *cf_in(cf_prob *p, cf_kind kind, double lo, double hi, int nd, ...)
{
    cf_arr *a = &p->in[p->nin++];
    a->kind = kind;
    a->lo = lo;
    a->hi = hi;
    va_list ap;
    va_start(ap, nd);
    shape_va(a, nd, ap);
    va_end(ap);
    return a;
}

cf_arr *cf_out(cf_prob *p, int nd, ...)
{
    va_list ap;
    va_start(ap, nd);
    cf_arr *a = shape_va(&p->out[p->nout++], nd, ap);
    va_end(ap);
    return a;
}

cf_arr *cf_out_like(cf_prob *p, int i)
{
    cf_arr *a = &p->out[p->nout++];
    *a = p->in[i];
    a->kind = CF_CONST;
    return a;
}

/* ---- host helpers ------------------------------------------------------------------------------- */

int64_t cf_bcast(const cf_arr *in, const cf_arr *out, int64_t flat)
{
    int64_t idx = 0, stride = 1;
    for (int d = out->nd - 1, e = in->nd - 1; d >= 0; d--, e--) {
        int64_t coord = flat % out->shape[d];
        flat /= out->shape[d];
        if (e < 0) continue;
        if (in->shape[e] != 1) idx += coord * stride;
        stride *= in->shape[e];
    }
    return idx;
}

void cf_split_axis(const cf_arr *a, int axis, int64_t *outer, int64_t *mid, int64_t *inner)
{
    if (axis < 0) axis += a->nd;
    *outer = *inner = 1;
    for (int d = 0; d < axis; d++) *outer *= a->shape[d];
    for (int d = axis + 1; d < a->nd; d++) *inner *= a->shape[d];
    *mid = a->shape[axis];
}

clg_tensor *cf_tensor(clg_device *dev, clg_dtype dtype, int nd, const int64_t *shape, const double *v)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    void *raw = malloc((size_t)(n ? n : 1) * clg_dtype_size(dtype));
    if (!raw) return NULL;
    for (int64_t i = 0; i < n; i++) {
        if (dtype == CLG_F32) ((float *)raw)[i] = (float)v[i];
        else if (dtype == CLG_F64) ((double *)raw)[i] = v[i];
        else ((int32_t *)raw)[i] = (int32_t)v[i];
    }
    clg_tensor *t = clg_tensor_from_host(dev, dtype, nd, shape, raw);
    free(raw);
    return t;
}

/* ---- values ------------------------------------------------------------------------------------- */

/* xorshift64, seeded per case and input: the same values on every device and every run. */
static double uniform(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static uint64_t seed_of(const char *name, int which)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *c = name; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    return h ^ (0x9E3779B97F4A7C15ULL * (uint64_t)(which + 1));
}

/* As the dtype holds it. */
static double rounded(clg_dtype dtype, double v) { return dtype == CLG_F32 ? (double)(float)v : v; }

static void fill(const cf_arr *a, clg_dtype dtype, uint64_t seed, double *v)
{
    uint64_t s = seed | 1;
    for (int64_t i = 0; i < a->n; i++) {
        double u = uniform(&s);
        if (a->kind == CF_INDEX) {
            v[i] = floor(a->lo + (a->hi - a->lo) * u);
            continue;
        }
        double x = a->lo + (a->hi - a->lo) * (a->spread ? ((double)i + 0.25 + 0.5 * u) / (double)a->n : u);
        if (a->integral) x = floor(x);
        if (a->signs && uniform(&s) < 0.5) x = -x;
        v[i] = rounded(a->f32_values ? CLG_F32 : dtype, x);
    }
    for (int64_t i = a->n - 1; a->spread && i > 0; i--) {   /* Fisher-Yates */
        int64_t j = (int64_t)(uniform(&s) * (double)(i + 1));
        double t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* ---- inputs in a layout ------------------------------------------------------------------------- */

const char *const cf_layout_names[CF_LAYOUT_COUNT] = {"contiguous", "sliced", "transposed"};

/* A tensor holding v (row-major, logical order) in the layout: contiguous; every other
 * element of a wider buffer along the last axis, from offset 1; or stored with the last
 * two axes swapped and viewed back. Inputs with fewer axes than a layout needs are
 * contiguous. In the current scope. */
static clg_tensor *layout_tensor(clg_device *dev, clg_dtype dtype, const cf_arr *a, const double *v, cf_layout layout)
{
    int nd = a->nd;
    if ((layout == CF_SLICED && nd < 1) || (layout == CF_TRANSPOSED && nd < 2) || a->n == 0) layout = CF_CONTIGUOUS;
    if (layout == CF_CONTIGUOUS) return cf_tensor(dev, dtype, nd, a->shape, v);
    int64_t shape[CLG_MAX_DIMS], c = a->shape[nd - 1], r = nd > 1 ? a->shape[nd - 2] : 1;
    memcpy(shape, a->shape, sizeof shape);
    int64_t n = a->n;
    if (layout == CF_SLICED) n = n / c * (2 * c + 1), shape[nd - 1] = 2 * c + 1;
    else shape[nd - 2] = c, shape[nd - 1] = r;
    double *store = malloc((size_t)n * sizeof *store);
    if (!store) return NULL;
    for (int64_t i = 0; i < n; i++) store[i] = 12345;   /* never read */
    for (int64_t i = 0; i < a->n; i++) {
        int64_t outer = i / c, j = i % c;
        if (layout == CF_SLICED) store[outer * (2 * c + 1) + 1 + 2 * j] = v[i];
        else store[(outer / r) * r * c + j * r + outer % r] = v[i];
    }
    clg_tensor *base = cf_tensor(dev, dtype, nd, shape, store);
    free(store);
    return layout == CF_SLICED ? clg_slice(base, nd - 1, 1, 2 * c + 1, 2) : clg_transpose(base, nd - 2, nd - 1);
}

/* ---- the device's values ------------------------------------------------------------------------ */

static double *read_values(clg_tensor *t)
{
    int64_t n = clg_tensor_numel(t);
    clg_dtype d = clg_tensor_dtype(t);
    void *raw = malloc((size_t)(n ? n : 1) * clg_dtype_size(d));
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!raw || !v || clg_tensor_to_host(t, raw, (size_t)n * clg_dtype_size(d)) != CLG_OK) {
        free(raw);
        free(v);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        v[i] = d == CLG_F32 ? ((float *)raw)[i] : d == CLG_F64 ? ((double *)raw)[i] : ((int32_t *)raw)[i];
    free(raw);
    return v;
}

static bool same_shape(const clg_tensor *t, const cf_arr *a)
{
    if (clg_tensor_ndim(t) != a->nd) return false;
    for (int d = 0; d < a->nd; d++)
        if (clg_tensor_shape(t)[d] != a->shape[d]) return false;
    return true;
}

/* ---- comparison --------------------------------------------------------------------------------- */

typedef struct cmp {
    double err, abs;      /* worst mixed and absolute errors */
    int64_t worst;        /* where the mixed one is */
    double got, want;
} cmp;

static void compare(cmp *c, const double *got, const double *want, int64_t n, int64_t index_base)
{
    for (int64_t i = 0; i < n; i++) {
        double d = got[i], r = want[i], e, a;
        if (isnan(r) || isnan(d)) e = a = isnan(r) && isnan(d) ? 0 : INFINITY;
        else if (isinf(r) || isinf(d)) e = a = d == r ? 0 : INFINITY;
        else {
            a = fabs(d - r);
            e = a / (1 + fabs(r));
        }
        if (a > c->abs) c->abs = a;
        if (e > c->err || (c->worst < 0 && e >= c->err)) {
            c->err = e;
            c->worst = index_base + i;
            c->got = d;
            c->want = r;
        }
    }
}

/* ---- the host reference, with the self-check's fault -------------------------------------------- */

typedef struct host {
    const cf_case *c;
    cf_prob *p;
    bool fault;
    double *in[CF_MAX_IN], *out[CF_MAX_OUT];
} host;

static void reference(host *h, double *const *out)
{
    h->c->ref(h->p, h->in, out);
    /* --inject-fault: a wrong op, as if the device computed out0[0] 5% + 0.05 off; its
     * gradient changes with it, so both directions must notice. */
    if (h->fault && h->p->nout > 0 && h->p->out[0].n > 0) out[0][0] = out[0][0] * 1.05 + 0.05;
}

/* Elements of an input whose gradients are checked: all, or an even spread (first and
 * last included) when there are more than `budget`. */
static int64_t sample(int64_t n, int64_t s, int64_t count) { return count >= n ? s : s * (n - 1) / (count - 1); }

void cf_op_name(const cf_case *c, char *buf, size_t len)
{
    size_t k = strcspn(c->name, " ");
    snprintf(buf, len, "%.*s", (int)k, c->name);
}

static void note(cf_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(cf_result *r, const char *fmt, ...)
{
    r->pass = false;
    if (r->note[0]) return;   /* the first reason is the one to read */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note, sizeof r->note, fmt, ap);
    va_end(ap);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Gradients of L = sum_k w_k . out_k, by central differences of the host reference;
 * differences per output, so outputs an element does not reach add nothing. */
static void host_gradients(host *h, double *const *w, double *const *wantg, int64_t budget)
{
    cf_prob *p = h->p;
    double *plus[CF_MAX_OUT], *minus[CF_MAX_OUT];
    for (int k = 0; k < p->nout; k++) {
        plus[k] = malloc((size_t)(p->out[k].n ? p->out[k].n : 1) * sizeof(double));
        minus[k] = malloc((size_t)(p->out[k].n ? p->out[k].n : 1) * sizeof(double));
    }
    for (int i = 0; i < p->nin; i++) {
        if (p->in[i].kind != CF_GRAD) continue;
        int64_t n = p->in[i].n, count = n < budget ? n : budget;
        for (int64_t s = 0; s < count; s++) {
            int64_t j = sample(n, s, count);
            double x = h->in[i][j], step = 1e-5 * (fabs(x) > 1 ? fabs(x) : 1);
            h->in[i][j] = x + step;
            reference(h, plus);
            h->in[i][j] = x - step;
            reference(h, minus);
            h->in[i][j] = x;
            double g = 0;
            for (int k = 0; k < p->nout; k++)
                for (int64_t e = 0; w[k] && e < p->out[k].n; e++) g += w[k][e] * (plus[k][e] - minus[k][e]);
            wantg[i][s] = g / (2 * step);
        }
    }
    for (int k = 0; k < p->nout; k++) {
        free(plus[k]);
        free(minus[k]);
    }
}

static void check_layout(clg_device *dev, const cf_case *c, const cf_options *o, cf_layout layout, cf_result *r)
{
    memset(r, 0, sizeof *r);
    r->pass = true;
    double t0 = now();
    cf_prob p = {.big = o->big, .long_n = o->long_n ? o->long_n : 70001, .dtype = o->dtype, .fp64 = clg_device_get_info(dev)->fp64, .tol = 1, .arg = c->arg};
    c->setup(&p);
    char op[64];
    cf_op_name(c, op, sizeof op);
    host h = {.c = c, .p = &p, .fault = o->inject && !strcmp(o->inject, op)};
    bool f64 = o->dtype == CLG_F64;
    r->tol_fwd = p.tol * (f64 ? 1e-12 : 1e-5);
    r->tol_bwd = p.tol * (f64 ? 1e-7 : 1e-4);
    const int64_t budget = 384;

    double *devout[CF_MAX_OUT] = {0}, *w[CF_MAX_OUT] = {0}, *gotg[CF_MAX_IN] = {0}, *wantg[CF_MAX_IN] = {0};
    clg_tensor *tin[CF_MAX_IN] = {0}, *tout[CF_MAX_OUT] = {0};
    for (int i = 0; i < p.nin; i++) {
        h.in[i] = malloc((size_t)(p.in[i].n ? p.in[i].n : 1) * sizeof(double));
        fill(&p.in[i], o->dtype, seed_of(c->name, i), h.in[i]);
    }
    for (int k = 0; k < p.nout; k++) h.out[k] = malloc((size_t)(p.out[k].n ? p.out[k].n : 1) * sizeof(double));

    clg_scope_begin(dev);
    clg_device_clear_error(dev);
    for (int i = 0; i < p.nin; i++) {
        clg_dtype d = p.in[i].kind == CF_INDEX ? CLG_I32 : o->dtype;
        cf_layout l = p.in[i].kind == CF_GRAD ? layout : CF_CONTIGUOUS;
        tin[i] = layout_tensor(dev, d, &p.in[i], h.in[i], l);
        if (!tin[i]) {
            note(r, "input %d: %s", i, clg_device_error(dev));
            goto done;
        }
        if (p.in[i].kind == CF_GRAD && clg_tensor_set_requires_grad(tin[i], true) != CLG_OK) {
            note(r, "input %d: %s", i, clg_device_error(dev));
            goto done;
        }
    }

    /* forward */
    c->run(&p, tin, tout);
    for (int k = 0; k < p.nout; k++) {
        if (!tout[k]) {
            note(r, "output %d: %s", k, clg_device_error(dev)[0] ? clg_device_error(dev) : "no result");
            goto done;
        }
        if (!same_shape(tout[k], &p.out[k])) {
            char a[128], b[128];
            note(r, "output %d has shape %s, expected %s", k,
                 clg_shape_str(clg_tensor_ndim(tout[k]), clg_tensor_shape(tout[k]), a, sizeof a),
                 clg_shape_str(p.out[k].nd, p.out[k].shape, b, sizeof b));
            goto done;
        }
        if (!(devout[k] = read_values(tout[k]))) {
            note(r, "output %d: reading it back: %s", k, clg_device_error(dev));
            goto done;
        }
    }
    if (c->observe && !c->observe(&p, h.in, devout, r->note, sizeof r->note)) {
        r->pass = false;
        goto done;
    }
    reference(&h, h.out);
    cmp fc = {.worst = -1};
    for (int k = 0; k < p.nout; k++) compare(&fc, devout[k], h.out[k], p.out[k].n, 0);
    r->ran_forward = true;
    r->fwd_err = fc.err;
    r->fwd_abs = fc.abs;
    if (!(fc.err <= r->tol_fwd))
        note(r, "forward: element %lld is %.9g, the reference %.9g (error %.2e > %.0e)", (long long)fc.worst, fc.got,
             fc.want, fc.err, r->tol_fwd);
    if (o->verbose)
        printf("    %-34s %s inputs, forward: %d output(s), worst element %lld: %.9g vs %.9g\n", c->name,
               cf_layout_names[layout], p.nout, (long long)fc.worst, fc.got, fc.want);

    /* backward: clg_backward(out_k, w_k) for every output on the tape */
    bool any = false;
    for (int i = 0; i < p.nin; i++) any |= p.in[i].kind == CF_GRAD;
    if (!any || p.no_backward) goto done;
    r->ran_backward = true;
    for (int k = 0; k < p.nout; k++) {
        if (!clg_tensor_has_history(tout[k])) continue;
        clg_dtype d = clg_tensor_dtype(tout[k]);
        w[k] = malloc((size_t)(p.out[k].n ? p.out[k].n : 1) * sizeof(double));
        cf_arr wa = {.kind = CF_CONST, .lo = -1, .hi = 1, .n = p.out[k].n};
        fill(&wa, d, seed_of(c->name, 100 + k), w[k]);
        clg_tensor *wt = cf_tensor(dev, d, p.out[k].nd, p.out[k].shape, w[k]);
        if (!wt || clg_backward(tout[k], wt) != CLG_OK) {
            note(r, "backward from output %d: %s", k, clg_device_error(dev));
            goto done;
        }
    }
    for (int i = 0; i < p.nin; i++) {
        if (p.in[i].kind != CF_GRAD) continue;
        clg_tensor *g = clg_tensor_grad(tin[i]);
        if (!g) {
            note(r, "input %d got no gradient", i);
            goto done;
        }
        if (!(gotg[i] = read_values(g)) || clg_tensor_numel(g) != p.in[i].n) {
            note(r, "input %d: reading its gradient: %s", i, clg_device_error(dev));
            goto done;
        }
        wantg[i] = malloc((size_t)(p.in[i].n ? p.in[i].n : 1) * sizeof(double));
    }
    host_gradients(&h, w, wantg, budget);
    cmp bc = {.worst = -1};
    int worst_in = -1;
    for (int i = 0; i < p.nin; i++) {
        if (p.in[i].kind != CF_GRAD) continue;
        int64_t n = p.in[i].n, count = n < budget ? n : budget;
        for (int64_t s = 0; s < count; s++) {
            int64_t j = sample(n, s, count);
            double before = bc.err;
            compare(&bc, &gotg[i][j], &wantg[i][s], 1, j);
            if (bc.err != before || worst_in < 0) worst_in = i;
        }
    }
    r->bwd_err = bc.err;
    r->bwd_abs = bc.abs;
    if (!(bc.err <= r->tol_bwd))
        note(r, "backward: gradient of input %d element %lld is %.9g, the reference %.9g (error %.2e > %.0e)",
             worst_in, (long long)bc.worst, bc.got, bc.want, bc.err, r->tol_bwd);
    if (o->verbose)
        printf("    %-34s %s inputs, backward: worst: input %d element %lld: %.9g vs %.9g\n", c->name,
               cf_layout_names[layout], worst_in,
               (long long)bc.worst, bc.got, bc.want);

done:
    clg_scope_end(dev);
    clg_device_clear_error(dev);
    for (int i = 0; i < CF_MAX_IN; i++) {
        free(h.in[i]);
        free(gotg[i]);
        free(wantg[i]);
    }
    for (int k = 0; k < CF_MAX_OUT; k++) {
        free(h.out[k]);
        free(devout[k]);
        free(w[k]);
    }
    free(p.aux);
    r->seconds = now() - t0;
}

void cf_check(clg_device *dev, const cf_case *c, const cf_options *o, cf_result *r)
{
    check_layout(dev, c, o, CF_CONTIGUOUS, r);
    for (int l = 1; o->layouts && l < CF_LAYOUT_COUNT; l++) {
        cf_result more;
        check_layout(dev, c, o, (cf_layout)l, &more);
        r->seconds += more.seconds;
        r->fwd_err = fmax(r->fwd_err, more.fwd_err), r->fwd_abs = fmax(r->fwd_abs, more.fwd_abs);
        r->bwd_err = fmax(r->bwd_err, more.bwd_err), r->bwd_abs = fmax(r->bwd_abs, more.bwd_abs);
        r->ran_forward &= more.ran_forward;
        r->ran_backward |= more.ran_backward;
        if (!more.pass && r->pass) {
            r->pass = false;
            snprintf(r->note, sizeof r->note, "%s inputs: %.400s", cf_layout_names[l], more.note);
        }
    }
}
