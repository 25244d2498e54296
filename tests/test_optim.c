/* Optimizers, gradient clipping and learning-rate schedules.
 *
 * Each optimizer runs several steps, with gradients that change every step, against
 * a plain-C double reference written from PyTorch's documented pseudo-code (not from
 * the kernels' arrangement of it), to 1e-6 relative in float64 and looser in float32
 * (every case in float32 on a device without float64).
 * Also: frozen parameters and parameters without a gradient keep their bits, state
 * names and shapes, resuming from saved state and step count, lr changes, clipping,
 * no host transfers in step / zero_grad / clip, schedules and their parser, errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optest.h"

#define NSTEPS 6
#define NP 2                       /* parameters per case */
static const int64_t SHAPE0[2] = {3, 4}, SHAPE1[1] = {5};
#define N0 12
#define N1 5
#define NTOT (N0 + N1)

/* ---- the reference: PyTorch's documented algorithms, in double -------------------------------- */

typedef enum kind { SGD, ADAM, ADAMW, RMSPROP, ADAGRAD } kind;

typedef struct config {
    const char *what;
    kind kind;
    clg_sgd_options sgd;
    clg_adam_options adam;     /* Adam and AdamW */
    clg_rmsprop_options rms;
    clg_adagrad_options ada;
    bool null_options;         /* pass NULL: the reference then uses PyTorch's defaults */
    bool from_defaults;        /* pass clg_<kind>_defaults(): the reference, PyTorch's defaults */
} config;

typedef struct ref {
    config c;                  /* with every default filled in */
    double lr;
    int64_t t;
    double b[NTOT], m[NTOT], v[NTOT], ga[NTOT], sum[NTOT];
} ref;

static void ref_init(ref *r, const config *c)
{
    memset(r, 0, sizeof *r);
    r->c = *c;
    if (c->null_options || c->from_defaults) {   /* torch.optim defaults */
        r->c.sgd = (clg_sgd_options){.lr = 1e-3};
        r->c.adam = (clg_adam_options){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                                       .weight_decay = c->kind == ADAMW ? 1e-2 : 0};
        r->c.rms = (clg_rmsprop_options){.lr = 1e-2, .alpha = 0.99, .eps = 1e-8};
        r->c.ada = (clg_adagrad_options){.lr = 1e-2, .eps = 1e-10};
    }
    r->lr = c->kind == SGD ? r->c.sgd.lr : c->kind == RMSPROP ? r->c.rms.lr : c->kind == ADAGRAD ? r->c.ada.lr
                                                                                                    : r->c.adam.lr;
    for (int i = 0; i < NTOT; i++) r->sum[i] = r->c.ada.initial_accumulator_value;
}

static void ref_sgd(ref *r, double *p, const double *grad)
{
    const clg_sgd_options *o = &r->c.sgd;
    for (int i = 0; i < NTOT; i++) {
        double g = grad[i] + o->weight_decay * p[i];
        if (o->momentum != 0) {
            r->b[i] = r->t == 1 ? g : o->momentum * r->b[i] + (1 - o->dampening) * g;
            g = o->nesterov ? g + o->momentum * r->b[i] : r->b[i];
        }
        p[i] -= r->lr * g;
    }
}

static void ref_adam(ref *r, double *p, const double *grad, bool decoupled)
{
    const clg_adam_options *o = &r->c.adam;
    for (int i = 0; i < NTOT; i++) {
        double g = grad[i];
        if (decoupled) p[i] *= 1 - r->lr * o->weight_decay;
        else g += o->weight_decay * p[i];
        r->m[i] = o->beta1 * r->m[i] + (1 - o->beta1) * g;
        r->v[i] = o->beta2 * r->v[i] + (1 - o->beta2) * g * g;
        double mhat = r->m[i] / (1 - pow(o->beta1, (double)r->t)), vhat = r->v[i] / (1 - pow(o->beta2, (double)r->t));
        p[i] -= r->lr * mhat / (sqrt(vhat) + o->eps);
    }
}

static void ref_rmsprop(ref *r, double *p, const double *grad)
{
    const clg_rmsprop_options *o = &r->c.rms;
    for (int i = 0; i < NTOT; i++) {
        double g = grad[i] + o->weight_decay * p[i];
        r->v[i] = o->alpha * r->v[i] + (1 - o->alpha) * g * g;
        double vt = r->v[i];
        if (o->centered) {
            r->ga[i] = o->alpha * r->ga[i] + (1 - o->alpha) * g;
            vt -= r->ga[i] * r->ga[i];
        }
        if (o->momentum > 0) {
            r->b[i] = o->momentum * r->b[i] + g / (sqrt(vt) + o->eps);
            p[i] -= r->lr * r->b[i];
        } else {
            p[i] -= r->lr * g / (sqrt(vt) + o->eps);
        }
    }
}

static void ref_adagrad(ref *r, double *p, const double *grad)
{
    const clg_adagrad_options *o = &r->c.ada;
    double clr = r->lr / (1 + (double)(r->t - 1) * o->lr_decay);
    for (int i = 0; i < NTOT; i++) {
        double g = grad[i] + o->weight_decay * p[i];
        r->sum[i] += g * g;
        p[i] -= clr * g / (sqrt(r->sum[i]) + o->eps);
    }
}

static void ref_step(ref *r, double *p, const double *g)
{
    r->t++;
    switch (r->c.kind) {
    case SGD: ref_sgd(r, p, g); break;
    case ADAM: ref_adam(r, p, g, false); break;
    case ADAMW: ref_adam(r, p, g, true); break;
    case RMSPROP: ref_rmsprop(r, p, g); break;
    case ADAGRAD: ref_adagrad(r, p, g); break;
    }
}

/* ---- running the device optimizer ---------------------------------------------------------------- */

/* An optimizer of clg_<kind>_defaults()'s options, unchanged. */
static clg_optimizer *new_opt_defaults(kind k, int n, clg_tensor *const *params)
{
    clg_sgd_options sgd = clg_sgd_defaults();
    clg_adam_options adam = clg_adam_defaults(), adamw = clg_adamw_defaults();
    clg_rmsprop_options rms = clg_rmsprop_defaults();
    clg_adagrad_options ada = clg_adagrad_defaults();
    switch (k) {
    case SGD: return clg_sgd_new(n, params, &sgd);
    case ADAM: return clg_adam_new(n, params, &adam);
    case ADAMW: return clg_adamw_new(n, params, &adamw);
    case RMSPROP: return clg_rmsprop_new(n, params, &rms);
    case ADAGRAD: return clg_adagrad_new(n, params, &ada);
    }
    return NULL;
}

static clg_optimizer *new_opt(const config *c, int n, clg_tensor *const *params)
{
    if (c->from_defaults) return new_opt_defaults(c->kind, n, params);
    switch (c->kind) {
    case SGD: return clg_sgd_new(n, params, &c->sgd);
    case ADAM: return clg_adam_new(n, params, c->null_options ? NULL : &c->adam);
    case ADAMW: return clg_adamw_new(n, params, c->null_options ? NULL : &c->adam);
    case RMSPROP: return clg_rmsprop_new(n, params, c->null_options ? NULL : &c->rms);
    case ADAGRAD: return clg_adagrad_new(n, params, c->null_options ? NULL : &c->ada);
    }
    return NULL;
}

static clg_tensor *host_tensor(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape, const double *v)
{
    return optest_tensor(dev, dtype, ndim, shape, v, OPTEST_CONTIGUOUS);
}

/* Two trainable parameters outside any scope, from p (NTOT values). */
static void make_params(clg_device *dev, clg_dtype dtype, const double *p, clg_tensor **out)
{
    out[0] = host_tensor(dev, dtype, 2, SHAPE0, p);
    out[1] = host_tensor(dev, dtype, 1, SHAPE1, p + N0);
    for (int j = 0; j < NP; j++) CHECK_OK(dev, clg_tensor_set_requires_grad(out[j], true));
}

/* The gradient of step k (1-based), different every step, in [-1, 1). */
static void grads_of_step(int k, double *g) { optest_fill(g, NTOT, -1, 1, 1000 + (uint64_t)k); }

/* param.grad = g exactly: backward of sum(param * G) with G = g. In the caller's scope. */
static void set_grad(clg_device *dev, clg_tensor *param, const double *g)
{
    clg_tensor *G = host_tensor(dev, clg_tensor_dtype(param), clg_tensor_ndim(param), clg_tensor_shape(param), g);
    CHECK_OK(dev, clg_backward(clg_sum(clg_mul(param, G), 0, NULL, false), NULL));
}

/* One training step as a user writes it: zero_grad, backward, step. */
static void device_step(clg_device *dev, clg_optimizer *opt, clg_tensor **params, const double *g)
{
    clg_scope_begin(dev);
    clg_optimizer_zero_grad(opt);
    set_grad(dev, params[0], g);
    set_grad(dev, params[1], g + N0);
    CHECK_OK(dev, clg_optimizer_step(opt));
    clg_scope_end(dev);
}

static bool params_close(const char *what, clg_tensor **params, const double *want, double atol, double rtol)
{
    bool a = optest_close(what, params[0], want, N0, atol, rtol);
    bool b = optest_close(what, params[1], want + N0, N1, atol, rtol);
    return a && b;
}

static void run_case(clg_device *dev, const config *c, clg_dtype dtype, double rtol)
{
    double p[NTOT], g[NTOT];
    optest_fill(p, NTOT, -2, 2, 7);
    ref r;
    ref_init(&r, c);
    clg_tensor *params[NP];
    make_params(dev, dtype, p, params);
    clg_optimizer *opt = new_opt(c, NP, params);
    CHECK_MSG(opt != NULL, "%s: %s", c->what, clg_device_error(dev));
    if (!opt) return;
    char what[160];
    for (int k = 1; k <= NSTEPS; k++) {
        grads_of_step(k, g);
        device_step(dev, opt, params, g);
        ref_step(&r, p, g);
        CHECK(clg_optimizer_steps(opt) == k);
        snprintf(what, sizeof what, "%s %s step %d", c->what, clg_dtype_name(dtype), k);
        if (!params_close(what, params, p, dtype == CLG_F64 ? 1e-12 : 1e-6, rtol)) break;
    }
    /* the moment estimates are PyTorch's too */
    if (c->kind == ADAM) {
        const char *names[4];
        clg_tensor *st[4];
        CHECK(clg_optimizer_state(opt, 1, names, st, 4) == 2);
        snprintf(what, sizeof what, "%s exp_avg_sq", c->what);
        optest_close(what, st[1], r.v + N0, N1, dtype == CLG_F64 ? 1e-15 : 1e-8, rtol);
    }
    clg_optimizer_free(opt);
    for (int j = 0; j < NP; j++) clg_tensor_free(params[j]);
}

static const config CASES[] = {
    {"sgd", SGD, .sgd = {.lr = 0.1}},
    {"sgd momentum", SGD, .sgd = {.lr = 0.05, .momentum = 0.9}},
    {"sgd momentum dampening wd", SGD, .sgd = {.lr = 0.05, .momentum = 0.8, .dampening = 0.3, .weight_decay = 0.01}},
    {"sgd nesterov wd", SGD, .sgd = {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.05, .nesterov = true}},
    {"adam defaults", ADAM, .null_options = true},
    {"adam", ADAM, .adam = {.lr = 0.02, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6}},
    {"adam wd", ADAM, .adam = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.1}},
    {"adamw defaults", ADAMW, .null_options = true},
    {"adamw", ADAMW, .adam = {.lr = 0.02, .beta1 = 0.85, .beta2 = 0.995, .eps = 1e-7, .weight_decay = 0.2}},
    {"rmsprop defaults", RMSPROP, .null_options = true},
    {"rmsprop centered", RMSPROP, .rms = {.lr = 0.01, .alpha = 0.9, .eps = 1e-6, .centered = true}},
    {"rmsprop momentum wd", RMSPROP, .rms = {.lr = 0.01, .alpha = 0.95, .eps = 1e-8, .weight_decay = 0.05, .momentum = 0.7}},
    {"rmsprop centered momentum", RMSPROP, .rms = {.lr = 0.005, .alpha = 0.9, .eps = 1e-5, .momentum = 0.5, .centered = true}},
    {"adagrad defaults", ADAGRAD, .null_options = true},
    {"adagrad lr_decay wd init", ADAGRAD,
     .ada = {.lr = 0.1, .lr_decay = 0.2, .weight_decay = 0.05, .initial_accumulator_value = 0.5, .eps = 1e-10}},
    /* the defaults functions give what C and C++ callers start from: PyTorch's values */
    {"sgd clg_sgd_defaults()", SGD, .from_defaults = true},
    {"adam clg_adam_defaults()", ADAM, .from_defaults = true},
    {"adamw clg_adamw_defaults()", ADAMW, .from_defaults = true},
    {"rmsprop clg_rmsprop_defaults()", RMSPROP, .from_defaults = true},
    {"adagrad clg_adagrad_defaults()", ADAGRAD, .from_defaults = true},
};
#define NCASES (int)(sizeof CASES / sizeof CASES[0])

static void algorithms(clg_device *dev)
{
    if (optest_fp64(dev)) {
        for (int i = 0; i < NCASES; i++) run_case(dev, &CASES[i], CLG_F64, 1e-6);
        /* float32, the training type: rounding of the update, not the algorithm */
        run_case(dev, &CASES[6], CLG_F32, 2e-5);
        run_case(dev, &CASES[3], CLG_F32, 2e-5);
        run_case(dev, &CASES[12], CLG_F32, 2e-5);
    } else {
        for (int i = 0; i < NCASES; i++) run_case(dev, &CASES[i], CLG_F32, 2e-5);
    }
}

/* ---- frozen and gradient-less parameters, state ------------------------------------------------------- */

/* t holds exactly v (as t's dtype holds it). */
static bool same_bits(clg_tensor *t, const double *v, int n)
{
    double *got = optest_read(t), want[NTOT];
    memcpy(want, v, (size_t)n * sizeof *v);
    optest_round(clg_tensor_dtype(t), want, n);
    bool same = got && memcmp(got, want, (size_t)n * sizeof *v) == 0;
    free(got);
    return same;
}

/* Whether two tensors hold the same bits. */
static bool tensors_same(clg_tensor *a, clg_tensor *b)
{
    double *x = optest_read(a), *y = optest_read(b);
    bool same = x && y && clg_tensor_numel(a) == clg_tensor_numel(b) &&
                !memcmp(x, y, (size_t)clg_tensor_numel(a) * sizeof *x);
    free(x);
    free(y);
    return same;
}

/* The number of launches of `kernel` in the device's profile text. */
static long launches(clg_device *dev, const char *kernel)
{
    char *text = check_profile_text(dev);
    long n = 0;
    for (const char *q = text ? strstr(text, kernel) : NULL; q; q = strstr(q + 1, kernel))
        if ((q == text || q[-1] == ' ' || q[-1] == '\n') && q[strlen(kernel)] == ' ') {
            n = strtol(q + strlen(kernel), NULL, 10);
            break;
        }
    free(text);
    return n;
}

/* clg_optimizer_flatten (src/optim/flat.c): every algorithm, flattened after its first
 * step (state, gradients and parameters moved with their values), then stepped in one
 * launch, the same bits as a twin stepped per parameter; a step where a parameter has
 * no gradient goes per parameter, still the same bits; and the parameters, gradients and
 * state are views of the arenas. */
static void flat(void)
{
    setenv("CLG_PROFILE", "1", 1);   /* a device of its own, profiled: launches counted */
    clg_device *dev = check_open_device();
    unsetenv("CLG_PROFILE");
    const char *kernels[] = {"sgd", "adam", "adam", "rmsprop", "adagrad"};
    for (int ci = 0; ci < NCASES; ci++) {
        const config *c = &CASES[ci];
        double p[NTOT], g[NTOT];
        optest_fill(p, NTOT, -2, 2, 7);
        clg_tensor *a[NP], *b[NP];
        make_params(dev, CLG_F32, p, a);
        make_params(dev, CLG_F32, p, b);
        clg_optimizer *oa = new_opt(c, NP, a), *ob = new_opt(c, NP, b);
        CHECK_MSG(oa && ob, "%s: %s", c->what, clg_device_error(dev));
        if (!oa || !ob) return;
        for (int k = 1; k <= NSTEPS; k++) {
            grads_of_step(k, g);
            if (k == 2) {
                CHECK_OK(dev, clg_optimizer_flatten(oa));
                CHECK(clg_optimizer_is_flat(oa) && !clg_optimizer_is_flat(ob));
                CHECK_OK(dev, clg_optimizer_flatten(oa));   /* again: nothing */
            }
            clg_device_profile_reset(dev);
            if (k == 4) {   /* parameter 1 without a gradient this step: per parameter */
                clg_tensor_clear_grad(a[1]);
                clg_tensor_clear_grad(b[1]);
                clg_scope_begin(dev);
                clg_optimizer_zero_grad(oa);
                clg_optimizer_zero_grad(ob);
                set_grad(dev, a[0], g);
                set_grad(dev, b[0], g);
                CHECK_OK(dev, clg_optimizer_step(oa));
                CHECK_OK(dev, clg_optimizer_step(ob));
                clg_scope_end(dev);
            } else {
                device_step(dev, oa, a, g);
                device_step(dev, ob, b, g);
            }
            long n = launches(dev, kernels[c->kind]);
            long want = k >= 2 && k < 4 ? 1 + NP : 2 * NP - (k == 4 ? 2 : 0);   /* flat: 1, the twin: NP */
            CHECK_MSG(n == want, "%s step %d: %ld launches of %s, want %ld", c->what, k, n, kernels[c->kind], want);
            for (int j = 0; j < NP; j++)
                CHECK_MSG(tensors_same(a[j], b[j]), "%s step %d: parameter %d differs flattened", c->what, k, j);
        }
        /* views of the arenas: the parameters at their segments, state made for both */
        const char *names[4];
        clg_tensor *sa[4], *sb[4];
        for (int j = 0; j < NP; j++) {
            int na = clg_optimizer_state(oa, j, names, sa, 4), nb = clg_optimizer_state(ob, j, names, sb, 4);
            CHECK_MSG(na == nb, "%s: %d state tensors flattened, %d not", c->what, na, nb);
            for (int s = 0; s < na && s < nb; s++)
                CHECK_MSG(tensors_same(sa[s], sb[s]), "%s: state %s of parameter %d differs", c->what, names[s], j);
        }
        clg_optimizer_free(oa);   /* the parameters keep the arena's storage */
        clg_optimizer_free(ob);
        for (int j = 0; j < NP; j++) {
            CHECK_MSG(tensors_same(a[j], b[j]), "%s: parameter %d after the optimizer's free", c->what, j);
            clg_tensor_free(a[j]);
            clg_tensor_free(b[j]);
        }
    }
    /* Refused: parameters of two dtypes (where float64 exists); inside a capture. */
    clg_dtype second = clg_device_get_info(dev)->fp64 ? CLG_F64 : CLG_F32;
    clg_tensor *m[2] = {clg_zeros(dev, CLG_F32, 1, (const int64_t[]){3}), clg_zeros(dev, second, 1, (const int64_t[]){3})};
    for (int j = 0; j < 2; j++) CHECK_OK(dev, clg_tensor_set_requires_grad(m[j], true));
    clg_optimizer *om = clg_sgd_new(2, m, NULL);
    CHECK_MSG(om != NULL, "%s", clg_device_error(dev));
    if (om && second == CLG_F64) {
        CHECK(clg_optimizer_flatten(om) == CLG_ERR_INVALID_ARGUMENT && !clg_optimizer_is_flat(om));
        CHECK_MSG(strstr(clg_device_error(dev), "dtype"), "%s", clg_device_error(dev));
    }
    clg_optimizer_free(om);
    /* a parameter that is a view of a tensor the caller keeps: moving it would part them */
    clg_tensor *whole = clg_zeros(dev, CLG_F32, 1, (const int64_t[]){8});
    clg_tensor *part = whole ? clg_narrow(whole, 0, 2, 4) : NULL;
    CHECK_OK(dev, part ? clg_tensor_set_requires_grad(part, true) : clg_device_last_status(dev));
    om = part ? clg_sgd_new(1, &part, NULL) : NULL;
    CHECK(om && clg_optimizer_flatten(om) == CLG_ERR_INVALID_ARGUMENT && !clg_optimizer_is_flat(om));
    CHECK_MSG(strstr(clg_device_error(dev), "shares its storage"), "%s", clg_device_error(dev));
    clg_optimizer_free(om);
    clg_tensor_free(part);
    clg_tensor_free(whole);
    om = clg_sgd_new(1, m, NULL);
    CHECK_OK(dev, clg_graph_begin(dev));
    CHECK(om && clg_optimizer_flatten(om) == CLG_ERR_INVALID_ARGUMENT && !clg_optimizer_is_flat(om));
    CHECK_MSG(strstr(clg_device_error(dev), "capture"), "%s", clg_device_error(dev));
    clg_graph *gr = NULL;
    clg_graph_end(dev, &gr);   /* an empty capture: whatever it says */
    clg_graph_free(gr);
    clg_optimizer_free(om);
    clg_tensor_free(m[0]);
    clg_tensor_free(m[1]);
    clg_device_close(dev);
}

static void frozen_and_missing(clg_device *dev)
{
    double p[NTOT], g[NTOT];
    optest_fill(p, NTOT, -1, 1, 3);
    clg_dtype dt = optest_precise(dev);
    clg_tensor *ps[3] = {host_tensor(dev, dt, 2, SHAPE0, p), host_tensor(dev, dt, 1, SHAPE1, p + N0),
                         host_tensor(dev, dt, 1, SHAPE1, p + N0)};
    for (int j = 0; j < 3; j++) CHECK_OK(dev, clg_tensor_set_requires_grad(ps[j], true));
    /* weight decay would move every parameter it reached, even with a zero gradient */
    clg_optimizer *opt = clg_adam_new(3, ps, &(clg_adam_options){.lr = 0.1, .weight_decay = 0.5});
    CHECK(opt && !strcmp(clg_optimizer_name(opt), "adam"));
    for (int k = 1; k <= 3; k++) {
        clg_scope_begin(dev);
        grads_of_step(k, g);
        set_grad(dev, ps[0], g);
        set_grad(dev, ps[1], g + N0);   /* ps[1] has a gradient, then is frozen */
        CHECK_OK(dev, clg_tensor_set_requires_grad(ps[1], false));
        CHECK_OK(dev, clg_optimizer_step(opt));   /* ps[2] never gets a gradient */
        CHECK_OK(dev, clg_tensor_set_requires_grad(ps[1], true));
        clg_scope_end(dev);
    }
    CHECK_MSG(same_bits(ps[1], p + N0, N1), "a frozen parameter changed");
    CHECK_MSG(same_bits(ps[2], p + N0, N1), "a parameter without a gradient changed");
    double *got = optest_read(ps[0]);
    int moved = 0;
    for (int i = 0; got && i < N0; i++) moved += fabs(got[i] - p[i]) > 1e-3;
    CHECK_MSG(moved == N0, "only %d of %d trainable elements moved", moved, N0);
    free(got);
    /* state: made for the stepped parameter only, with PyTorch's names and its shape */
    const char *names[4] = {0};
    clg_tensor *st[4] = {0};
    CHECK(clg_optimizer_state(opt, 0, names, st, 4) == 2);
    CHECK(names[0] && !strcmp(names[0], "exp_avg") && names[1] && !strcmp(names[1], "exp_avg_sq"));
    for (int s = 0; s < 2; s++)
        CHECK(st[s] && clg_tensor_ndim(st[s]) == 2 && clg_tensor_dim(st[s], 0) == 3 && clg_tensor_dim(st[s], 1) == 4 &&
              clg_tensor_dtype(st[s]) == dt);
    CHECK(clg_optimizer_state(opt, 1, names, st, 4) == 0);
    CHECK(clg_optimizer_state(opt, 2, NULL, NULL, 0) == 0);
    CHECK(clg_optimizer_state(opt, 0, NULL, NULL, 0) == 2);   /* a count without room */
    CHECK_OK(dev, clg_optimizer_init_state(opt));
    CHECK(clg_optimizer_state(opt, 2, names, st, 4) == 2);
    double zeros[N1] = {0};
    optest_close("init_state zeros", st[1], zeros, N1, 0, 0);
    CHECK(clg_optimizer_state(opt, 3, names, st, 4) == 0 && strstr(clg_device_error(dev), "parameter 3"));
    clg_device_clear_error(dev);
    clg_optimizer_free(opt);
    for (int j = 0; j < 3; j++) clg_tensor_free(ps[j]);
}

/* A parameter whose first gradient comes at step 3 starts its own bias correction at
 * t = 1, as PyTorch keeps the step per parameter: its update is lr g / (|g| + eps). */
static void late_gradient(clg_device *dev)
{
    double p[NTOT], g[NTOT];
    optest_fill(p, NTOT, -1, 1, 12);
    clg_dtype dt = optest_precise(dev);
    optest_round(dt, p, NTOT);
    clg_tensor *ps[NP];
    make_params(dev, dt, p, ps);
    const double lr = 0.01, eps = 1e-8;
    clg_optimizer *opt = clg_adam_new(NP, ps, &(clg_adam_options){.lr = lr, .eps = eps});
    for (int k = 1; k <= 3; k++) {
        clg_scope_begin(dev);
        grads_of_step(k, g);
        optest_round(dt, g, NTOT);
        set_grad(dev, ps[0], g);
        if (k == 3) set_grad(dev, ps[1], g + N0);
        CHECK_OK(dev, clg_optimizer_step(opt));
        clg_scope_end(dev);
    }
    double want[N1];
    for (int i = 0; i < N1; i++) want[i] = p[N0 + i] - lr * g[N0 + i] / (fabs(g[N0 + i]) + eps);
    optest_close("adam, first gradient at step 3", ps[1], want, N1, optest_tol(dt, 1e-12, 1e-6),
                 optest_tol(dt, 1e-9, 1e-5));
    CHECK(clg_optimizer_steps(opt) == 3);
    clg_optimizer_free(opt);
    for (int j = 0; j < NP; j++) clg_tensor_free(ps[j]);
}

/* State names per configuration, and Adagrad's accumulator starting at its value. */
static void state_names(clg_device *dev)
{
    static const struct { int config; int n; const char *names[3]; } want[] = {
        {0, 0, {0}}, {1, 1, {"momentum_buffer"}}, {8, 2, {"exp_avg", "exp_avg_sq"}},
        {9, 1, {"square_avg"}}, {10, 2, {"square_avg", "grad_avg"}},
        {12, 3, {"square_avg", "momentum_buffer", "grad_avg"}}, {14, 1, {"sum"}},
    };
    static const char *const opt_names[] = {"sgd", "adam", "adamw", "rmsprop", "adagrad"};
    double p[NTOT];
    optest_fill(p, NTOT, -1, 1, 4);
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        const config *c = &CASES[want[w].config];
        clg_tensor *params[NP];
        make_params(dev, CLG_F32, p, params);
        clg_optimizer *opt = new_opt(c, NP, params);
        CHECK(opt && !strcmp(clg_optimizer_name(opt), opt_names[c->kind]));
        CHECK(clg_optimizer_state(opt, 1, NULL, NULL, 0) == 0);   /* nothing before the first step */
        CHECK_OK(dev, clg_optimizer_init_state(opt));
        const char *names[3] = {0};
        clg_tensor *st[3] = {0};
        int n = clg_optimizer_state(opt, 1, names, st, 3);
        CHECK_MSG(n == want[w].n, "%s: %d states", c->what, n);
        for (int s = 0; s < n && s < want[w].n; s++) {
            CHECK_MSG(names[s] && !strcmp(names[s], want[w].names[s]), "%s: state %d is %s", c->what, s, names[s]);
            CHECK(clg_tensor_ndim(st[s]) == 1 && clg_tensor_dim(st[s], 0) == N1);
        }
        if (c->kind == ADAGRAD) {
            double init[N1];
            for (int i = 0; i < N1; i++) init[i] = c->ada.initial_accumulator_value;
            optest_close("adagrad initial sum", st[0], init, N1, 0, 0);
        }
        clg_optimizer_free(opt);
        for (int j = 0; j < NP; j++) clg_tensor_free(params[j]);
    }
}

/* ---- resuming, and lr changes -------------------------------------------------------------------------- */

#define SCHED_LR(k) clg_lr_schedule_at(&(clg_lr_schedule){.kind = CLG_LR_EXPONENTIAL, .gamma = 0.7}, 0.05, (k))

/* Steps from..to of a run whose lr follows SCHED_LR, set before each step. */
static void run_steps(clg_device *dev, clg_optimizer *opt, clg_tensor **params, int from, int to)
{
    double g[NTOT];
    for (int k = from; k <= to; k++) {
        clg_optimizer_set_lr(opt, SCHED_LR(k - 1));
        CHECK(clg_optimizer_lr(opt) == SCHED_LR(k - 1));
        grads_of_step(k, g);
        device_step(dev, opt, params, g);
    }
}

/* A checkpoint on the host: the parameters' and the state's values, and the step. */
typedef struct checkpoint { double state[NP][3][N0]; int nstate[NP]; int64_t steps; } checkpoint;

static void save(clg_device *dev, clg_optimizer *opt, clg_tensor **params, checkpoint *ck)
{
    for (int j = 0; j < NP; j++) {
        clg_tensor *st[3];
        ck->nstate[j] = clg_optimizer_state(opt, j, NULL, st, 3);
        for (int s = 0; s < ck->nstate[j]; s++) {
            double *v = optest_read(st[s]);
            CHECK_MSG(v != NULL, "%s", clg_device_error(dev));
            if (v) memcpy(ck->state[j][s], v, (size_t)clg_tensor_numel(params[j]) * sizeof *v);
            free(v);
        }
    }
    ck->steps = clg_optimizer_steps(opt);
}

static void restore(clg_device *dev, clg_optimizer *opt, clg_tensor **params, const checkpoint *ck)
{
    CHECK_OK(dev, clg_optimizer_init_state(opt));
    clg_scope_begin(dev);
    for (int j = 0; j < NP; j++) {
        clg_tensor *st[3];
        CHECK(clg_optimizer_state(opt, j, NULL, st, 3) == ck->nstate[j]);
        for (int s = 0; s < ck->nstate[j]; s++) {
            clg_tensor *v = host_tensor(dev, clg_tensor_dtype(params[j]), clg_tensor_ndim(params[j]),
                                        clg_tensor_shape(params[j]), ck->state[j][s]);
            CHECK_OK(dev, clg_copy_(st[s], v));
        }
    }
    clg_scope_end(dev);
    clg_optimizer_set_steps(opt, ck->steps);
}

static void resume(clg_device *dev)
{
    static const int configs[] = {2, 6, 8, 12, 14};   /* each kind, with the options that carry state */
    double p0[NTOT];
    optest_fill(p0, NTOT, -1, 1, 11);
    clg_dtype dt = optest_precise(dev);
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        const config *c = &CASES[configs[i]];
        clg_tensor *a[NP], *b[NP];
        make_params(dev, dt, p0, a);
        make_params(dev, dt, p0, b);
        clg_optimizer *whole = new_opt(c, NP, a), *first = new_opt(c, NP, b);
        run_steps(dev, whole, a, 1, NSTEPS);
        run_steps(dev, first, b, 1, 3);
        checkpoint ck;
        save(dev, first, b, &ck);
        clg_optimizer_free(first);
        clg_optimizer *second = new_opt(c, NP, b);
        restore(dev, second, b, &ck);
        CHECK(clg_optimizer_steps(second) == 3);
        run_steps(dev, second, b, 4, NSTEPS);
        bool same = true;
        for (int j = 0; j < NP; j++) {
            double *wa = optest_read(a[j]), *wb = optest_read(b[j]);
            same = same && wa && wb && !memcmp(wa, wb, (size_t)clg_tensor_numel(a[j]) * sizeof *wa);
            free(wa);
            free(wb);
        }
        CHECK_MSG(same, "%s: resumed run differs from the uninterrupted one", c->what);
        /* the lr schedule mattered: a reference with it agrees too */
        ref r;
        ref_init(&r, c);
        double p[NTOT], g[NTOT];
        memcpy(p, p0, sizeof p);
        for (int k = 1; k <= NSTEPS; k++) {
            r.lr = SCHED_LR(k - 1);
            grads_of_step(k, g);
            ref_step(&r, p, g);
        }
        char what[96];
        snprintf(what, sizeof what, "%s with a schedule", c->what);
        params_close(what, a, p, optest_tol(dt, 1e-9, 1e-6), optest_tol(dt, 1e-6, 2e-5));
        clg_optimizer_free(whole);
        clg_optimizer_free(second);
        for (int j = 0; j < NP; j++) {
            clg_tensor_free(a[j]);
            clg_tensor_free(b[j]);
        }
    }
}

/* ---- clipping -------------------------------------------------------------------------------------------- */

static void clip_case(clg_device *dev, clg_dtype dtype, double ratio, double rtol)
{
    double p[NTOT], g[NTOT];
    optest_fill(p, NTOT, -1, 1, 5);
    optest_fill(g, NTOT, -3, 3, 6);
    clg_tensor *ps[3];
    make_params(dev, dtype, p, ps);
    ps[2] = host_tensor(dev, dtype, 1, SHAPE1, p);   /* no gradient: not counted */
    CHECK_OK(dev, clg_tensor_set_requires_grad(ps[2], true));
    clg_scope_begin(dev);
    set_grad(dev, ps[0], g);
    set_grad(dev, ps[1], g + N0);
    double norm = 0;
    for (int i = 0; i < NTOT; i++) norm += g[i] * g[i];
    norm = sqrt(norm);
    double max_norm = ratio * norm, coef = max_norm / (norm + 1e-6), want[NTOT];
    for (int i = 0; i < NTOT; i++) want[i] = coef < 1 ? g[i] * coef : g[i];
    clg_tensor *total = NULL;
    CHECK_OK(dev, clg_clip_grad_norm(3, ps, max_norm, &total));
    double got_norm = NAN;
    CHECK_OK(dev, clg_tensor_item(total, &got_norm));
    CHECK_MSG(fabs(got_norm - norm) <= rtol * norm, "total norm %.12g, expected %.12g", got_norm, norm);
    CHECK(clg_tensor_ndim(total) == 0 && clg_tensor_dtype(total) == dtype);
    char what[64];
    snprintf(what, sizeof what, "clip %s to %g of the norm", clg_dtype_name(dtype), ratio);
    optest_close(what, clg_tensor_grad(ps[0]), want, N0, 0, rtol);
    optest_close(what, clg_tensor_grad(ps[1]), want + N0, N1, 0, rtol);
    CHECK(clg_tensor_grad(ps[2]) == NULL);
    clg_scope_end(dev);
    for (int j = 0; j < 3; j++) clg_tensor_free(ps[j]);
}

/* Gradients long enough to be summed in chunks (70,000 elements: 17 chunks, or 274 where
 * item_loops is 256), beside a short and an empty one, in float32: the norm and the
 * clipped values. item_loops changes on a device of its own, which is closed after. */
static void clip_long(const char *item_loops)
{
    clg_device *dev = check_open_device();
    if (item_loops) CHECK_OK(dev, clg_device_set_param(dev, "item_loops", item_loops));
    const int64_t n[3] = {optest_small() ? 9000 : 70000, 5, 0};
    double *g = malloc(sizeof(double) * (size_t)(n[0] + n[1])), norm = 0;
    optest_fill(g, n[0] + n[1], -2, 2, 17);
    optest_round(CLG_F32, g, n[0] + n[1]);
    for (int64_t i = 0; i < n[0] + n[1]; i++) norm += g[i] * g[i];
    norm = sqrt(norm);
    clg_tensor *ps[3];
    clg_scope_begin(dev);
    for (int j = 0, at = 0; j < 3; at += (int)n[j], j++) {
        ps[j] = clg_zeros(dev, CLG_F32, 1, &n[j]);
        CHECK_OK(dev, clg_tensor_set_requires_grad(ps[j], true));
        set_grad(dev, ps[j], g + at);
    }
    clg_tensor *total = NULL;
    double got = NAN, coef = 0.5 * norm / (norm + 1e-6), *want = malloc(sizeof(double) * (size_t)(n[0] + n[1]));
    for (int64_t i = 0; i < n[0] + n[1]; i++) want[i] = g[i] * coef;
    CHECK_OK(dev, clg_clip_grad_norm(3, ps, 0.5 * norm, &total));
    CHECK_OK(dev, clg_tensor_item(total, &got));
    CHECK_MSG(fabs(got - norm) <= 1e-5 * norm, "item_loops %s: total norm %.9g, expected %.9g",
              item_loops ? item_loops : "default", got, norm);
    optest_close("clip a long gradient", clg_tensor_grad(ps[0]), want, n[0], 0, 1e-5);
    optest_close("clip a short gradient", clg_tensor_grad(ps[1]), want + n[0], n[1], 0, 1e-5);
    clg_scope_end(dev);   /* frees ps too: they were made inside the scope */
    free(g);
    free(want);
    clg_device_close(dev);
}

static void clipping(clg_device *dev)
{
    if (optest_fp64(dev)) {
        clip_case(dev, CLG_F64, 0.25, 1e-12);
        clip_case(dev, CLG_F64, 2.0, 1e-12);   /* below max_norm: unchanged */
    }
    clip_case(dev, CLG_F32, 0.5, 1e-5);
    clip_case(dev, CLG_F32, 1.5, 1e-5);
    clip_long(NULL);
    clip_long("256");
    /* errors: negative max_norm, mixed dtypes (where there are two float types), NULL entries */
    double v[NTOT] = {1, 2, 3};
    bool f64 = optest_fp64(dev);
    clg_tensor *a = host_tensor(dev, CLG_F32, 1, SHAPE1, v), *b = f64 ? host_tensor(dev, CLG_F64, 1, SHAPE1, v) : NULL;
    CHECK_OK(dev, clg_tensor_set_requires_grad(a, true));
    if (f64) CHECK_OK(dev, clg_tensor_set_requires_grad(b, true));
    clg_scope_begin(dev);
    set_grad(dev, a, v);
    if (f64) set_grad(dev, b, v);
    clg_tensor *tn = a;   /* cleared on failure */
    CHECK(clg_clip_grad_norm(1, &a, -1, &tn) == CLG_ERR_INVALID_ARGUMENT && tn == NULL);
    CHECK(strstr(clg_device_error(dev), "clg_clip_grad_norm") && strstr(clg_device_error(dev), "max_norm"));
    if (f64) CHECK(clg_clip_grad_norm(2, (clg_tensor *[]){a, b}, 1, NULL) == CLG_ERR_DTYPE);
    CHECK(clg_clip_grad_norm(2, (clg_tensor *[]){a, NULL}, 1, NULL) == CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg_clip_grad_norm(0, NULL, 1, NULL) == CLG_ERR_INVALID_ARGUMENT);
    clg_device_clear_error(dev);
    clg_scope_end(dev);
    clg_tensor_free(a);
    clg_tensor_free(b);
}

/* ---- nothing crosses to the host ------------------------------------------------------------------------ */

static void no_transfers(clg_device *dev)
{
    double p[NTOT], g[NTOT];
    optest_fill(p, NTOT, -1, 1, 8);
    for (int i = 0; i < NCASES; i++) {
        clg_tensor *params[NP];
        make_params(dev, CLG_F32, p, params);
        clg_optimizer *opt = new_opt(&CASES[i], NP, params);
        for (int k = 1; k <= 2; k++) {
            clg_scope_begin(dev);
            grads_of_step(k, g);
            set_grad(dev, params[0], g);
            set_grad(dev, params[1], g + N0);
            CHECK_OK(dev, clg_device_finish(dev));
            clg_device_transfers_reset(dev);
            clg_tensor *norm;   /* the first step makes the state, the second uses it */
            CHECK_OK(dev, clg_clip_grad_norm(NP, params, 0.5, &norm));
            CHECK_OK(dev, clg_optimizer_step(opt));
            clg_optimizer_zero_grad(opt);
            CHECK_OK(dev, clg_device_finish(dev));
            clg_transfer_stats t = clg_device_transfers(dev);
            CHECK_MSG(t.h2d_bytes == 0 && t.d2h_bytes == 0 && t.h2d_count == 0 && t.d2h_count == 0,
                      "%s step %d: %llu bytes to the device, %llu back", CASES[i].what, k,
                      (unsigned long long)t.h2d_bytes, (unsigned long long)t.d2h_bytes);
            clg_scope_end(dev);
        }
        double zeros[N1] = {0};
        optest_close("zero_grad", clg_tensor_grad(params[1]), zeros, N1, 0, 0);
        clg_optimizer_free(opt);
        for (int j = 0; j < NP; j++) clg_tensor_free(params[j]);
    }
}

/* ---- schedules ------------------------------------------------------------------------------------------- */

static void check_lr(const char *text, int64_t t, double want)
{
    clg_lr_schedule s;
    char err[128];
    bool ok = clg_lr_schedule_parse(text, &s, err, sizeof err);
    CHECK_MSG(ok, "\"%s\": %s", text, err);
    if (!ok) return;
    double got = clg_lr_schedule_at(&s, 0.1, t);
    CHECK_MSG(fabs(got - want) <= 1e-15 + 1e-12 * fabs(want), "\"%s\" at %lld: %.17g, expected %.17g", text,
              (long long)t, got, want);
}

static void schedules(void)
{
    const double pi = 3.14159265358979323846;
    for (int64_t t = 0; t < 200; t += 7) check_lr("constant", t, 0.1);
    check_lr("step:30:0.1", 0, 0.1);
    check_lr("step:30:0.1", 29, 0.1);
    check_lr("step:30:0.1", 30, 0.1 * 0.1);
    check_lr("step:30:0.1", 95, 0.1 * 0.1 * 0.1 * 0.1);
    check_lr("multistep:0.1:30,60,90", 29, 0.1);
    check_lr("multistep:0.1:30,60,90", 30, 0.01);
    check_lr("multistep:0.1:30,60,90", 60, 0.001);
    check_lr("multistep:0.1:30,60,90", 1000, 0.1 * 0.001);
    check_lr("exp:0.95", 0, 0.1);
    check_lr("exponential:0.95", 10, 0.1 * pow(0.95, 10));
    check_lr("cosine:100", 0, 0.1);
    check_lr("cosine:100", 50, 0.05);
    check_lr("cosine:100", 25, 0.1 * (1 + cos(pi / 4)) / 2);
    check_lr("cosine:100:0.001", 100, 0.001);
    check_lr("cosine:100:0.001", 150, 0.001);   /* held at eta_min */
    check_lr("cosine:100:0.001", 30, 0.001 + 0.099 * (1 + cos(0.3 * pi)) / 2);
    /* warm-up: linear factor from START to 1 over the first STEPS values of t */
    check_lr("constant,warmup:10", 0, 0);
    check_lr("constant,warmup:10", 4, 0.04);
    check_lr("constant,warmup:10", 10, 0.1);
    check_lr("cosine:100,warmup:10:0.1", 0, 0.01);
    check_lr("cosine:100,warmup:10:0.1", 5, (0.1 + 0.9 * 0.5) * 0.1 * (1 + cos(0.05 * pi)) / 2);
    check_lr("cosine:100,warmup:10:0.1", 10, 0.1 * (1 + cos(0.1 * pi)) / 2);
    check_lr("multistep:0.5:3,6,warmup:4:0.5", 2, 0.1 * (0.5 + 0.5 * 0.5));
    check_lr("multistep:0.5:3,6,warmup:4:0.5", 3, 0.1 * 0.5 * (0.5 + 0.5 * 0.75));
    check_lr("multistep:0.5:3,6,warmup:4:0.5", 6, 0.1 * 0.25);
    clg_lr_schedule s;
    CHECK(clg_lr_schedule_parse("multistep:0.1:30,60,90,warmup:5:0.2", &s, NULL, 0));
    CHECK(s.kind == CLG_LR_MULTISTEP && s.nmilestones == 3 && s.milestones[2] == 90 && s.warmup == 5 &&
          s.warmup_start == 0.2);
    /* a struct filled by hand, without the parser */
    clg_lr_schedule hand = {.kind = CLG_LR_STEP, .step_size = 2, .gamma = 0.5, .warmup = 2, .warmup_start = 0.5};
    CHECK(clg_lr_schedule_at(&hand, 1.0, 1) == 0.75 && clg_lr_schedule_at(&hand, 1.0, 5) == 0.25);

    static const char *const bad[] = {
        "", "linear", "constant:1", "step", "step:30", "step:0:0.1", "step:30:-1", "step:30:0", "step:30:abc",
        "step:30:0.1x", "step: 30:0.1", "step:30.5:0.1", "multistep:0.1", "multistep:0.1:", "multistep:0.1:60,30",
        "multistep:0.1:30,,60", "multistep:0.1:1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "exp:", "exp:0.9:1",
        "exp:nan", "exp:inf", "cosine:0", "cosine:-5", "cosine:10:-1", "cosine:10:1:2", "constant,warmup:0",
        "constant,warmup:", "constant,warmup:5:2", "constant,warmup:5:0.5:1", "constant,warmup:-3", "STEP:30:0.1",
        "step:30:0.1,warmup:5,", "step:99999999999999999999:0.1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clg_lr_schedule out = {.kind = CLG_LR_COSINE, .t_max = 77};
        char err[128] = "";
        CHECK_MSG(!clg_lr_schedule_parse(bad[i], &out, err, sizeof err), "\"%s\" was accepted", bad[i]);
        CHECK_MSG(err[0] != '\0', "\"%s\": no message", bad[i]);
        CHECK_MSG(out.kind == CLG_LR_COSINE && out.t_max == 77, "\"%s\": the output changed on failure", bad[i]);
    }
    CHECK(!clg_lr_schedule_parse(NULL, &s, NULL, 0));
}

/* ---- errors ---------------------------------------------------------------------------------------------- */

static bool fails_with(clg_device *dev, clg_optimizer *opt, const char *a, const char *b)
{
    bool ok = opt == NULL && strstr(clg_device_error(dev), a) && strstr(clg_device_error(dev), b);
    if (!ok) fprintf(stderr, "  expected a failure naming %s and %s, got \"%s\"\n", a, b, clg_device_error(dev));
    clg_optimizer_free(opt);
    clg_device_clear_error(dev);
    return ok;
}

static void errors(clg_device *dev)
{
    double v[NTOT] = {0};
    clg_tensor *ps[NP];
    make_params(dev, CLG_F32, v, ps);
    CHECK(fails_with(dev, clg_sgd_new(NP, ps, &(clg_sgd_options){.lr = -0.1}), "clg_sgd_new", "lr"));
    CHECK(fails_with(dev, clg_sgd_new(NP, ps, &(clg_sgd_options){.lr = 0.1, .nesterov = true}), "clg_sgd_new",
                     "Nesterov"));
    CHECK(fails_with(dev, clg_sgd_new(NP, ps, &(clg_sgd_options){.lr = 0.1, .momentum = 0.9, .dampening = 0.1,
                                                                 .nesterov = true}), "clg_sgd_new", "dampening"));
    CHECK(fails_with(dev, clg_sgd_new(NP, ps, &(clg_sgd_options){.lr = NAN}), "clg_sgd_new", "lr"));
    CHECK(fails_with(dev, clg_adam_new(NP, ps, &(clg_adam_options){.beta1 = 1.0, .beta2 = 0.999}), "clg_adam_new",
                     "beta1"));
    CHECK(fails_with(dev, clg_adamw_new(NP, ps, &(clg_adam_options){.beta1 = 0.9, .beta2 = -0.5}), "clg_adamw_new",
                     "beta2"));
    CHECK(fails_with(dev, clg_adam_new(NP, ps, &(clg_adam_options){.eps = -1}), "clg_adam_new", "eps"));
    CHECK(fails_with(dev, clg_rmsprop_new(NP, ps, &(clg_rmsprop_options){.alpha = 1.5}), "clg_rmsprop_new", "alpha"));
    CHECK(fails_with(dev, clg_rmsprop_new(NP, ps, &(clg_rmsprop_options){.momentum = -1}), "clg_rmsprop_new",
                     "momentum"));
    CHECK(fails_with(dev, clg_adagrad_new(NP, ps, &(clg_adagrad_options){.lr_decay = -1}), "clg_adagrad_new",
                     "lr_decay"));
    CHECK(fails_with(dev, clg_adagrad_new(NP, ps, &(clg_adagrad_options){.weight_decay = -1}), "clg_adagrad_new",
                     "weight_decay"));
    /* SGD without options (or lr 0) trains at the default rate; lr 0 changed nothing */
    clg_optimizer *dflt = clg_sgd_new(NP, ps, NULL);
    CHECK_MSG(dflt && clg_optimizer_lr(dflt) == 1e-3, "sgd default lr %g", dflt ? clg_optimizer_lr(dflt) : -1.0);
    clg_optimizer_free(dflt);
    /* parameters: NULL, int32, not contiguous, twice, another device */
    CHECK(clg_sgd_new(0, ps, NULL) == NULL && clg_adam_new(1, NULL, NULL) == NULL);
    CHECK(fails_with(dev, clg_adam_new(2, (clg_tensor *[]){ps[0], NULL}, NULL), "clg_adam_new", "parameter 1"));
    clg_tensor *ints = clg_zeros(dev, CLG_I32, 1, SHAPE1);
    CHECK(fails_with(dev, clg_adam_new(2, (clg_tensor *[]){ps[0], ints}, NULL), "parameter 1", "float32"));
    clg_tensor *tr = clg_transpose(ps[0], 0, 1);
    CHECK(fails_with(dev, clg_rmsprop_new(1, &tr, NULL), "clg_rmsprop_new", "contiguous"));
    CHECK(fails_with(dev, clg_adagrad_new(3, (clg_tensor *[]){ps[0], ps[1], ps[0]}, NULL), "parameter 2", "twice"));
    clg_device *other;
    CHECK_OK(dev, clg_device_open(NULL, &other));
    clg_tensor *elsewhere = clg_zeros(other, CLG_F32, 1, SHAPE1);
    CHECK(fails_with(dev, clg_sgd_new(2, (clg_tensor *[]){ps[0], elsewhere}, NULL), "parameter 1", "another device"));
    clg_tensor_free(elsewhere);
    clg_device_close(other);
    clg_tensor_free(tr);
    clg_tensor_free(ints);
    /* set_lr and set_steps refuse what makes no sense, and keep the old value */
    clg_optimizer *opt = clg_sgd_new(NP, ps, &(clg_sgd_options){.lr = 0.1});
    clg_optimizer_set_lr(opt, -1);
    CHECK(clg_optimizer_lr(opt) == 0.1 && strstr(clg_device_error(dev), "set_lr"));
    clg_optimizer_set_lr(opt, NAN);
    CHECK(clg_optimizer_lr(opt) == 0.1);
    clg_optimizer_set_steps(opt, -2);
    CHECK(clg_optimizer_steps(opt) == 0 && strstr(clg_device_error(dev), "set_steps"));
    clg_device_clear_error(dev);
    clg_optimizer_free(opt);
    CHECK(clg_optimizer_step(NULL) == CLG_ERR_INVALID_ARGUMENT);
    clg_optimizer_free(NULL);
    clg_optimizer_zero_grad(NULL);
    for (int j = 0; j < NP; j++) clg_tensor_free(ps[j]);
}

int main(void)
{
    clg_device *dev = check_open_device();
    int64_t live = clg_tensor_live_count(dev);
    algorithms(dev);
    frozen_and_missing(dev);
    late_gradient(dev);
    state_names(dev);
    resume(dev);
    clipping(dev);
    no_transfers(dev);
    flat();
    schedules();
    errors(dev);
    CHECK_MSG(clg_tensor_live_count(dev) == live, "%lld tensors leaked",
              (long long)(clg_tensor_live_count(dev) - live));
    clg_device_close(dev);
    return check_report("test_optim");
}
