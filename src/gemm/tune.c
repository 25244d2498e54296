/* tune.c: timing the candidates (candidates.c) for a device whose table says
 * gemm = tune: on representative shapes, each one's results validated against a host
 * reference first, the fastest kept and saved in the tuning cache (cache.c).
 *
 * Budget: each candidate is first validated on small products (which builds it), then
 * screened at 64^3 (milliseconds): SCREEN_SLOW times slower than the best there, it is
 * dropped (CLBlast on llvmpipe); at the timed shapes, a first run SLOW times slower than
 * the best drops it too; repeats stop after REPEAT_SECONDS on a shape. Wall time is
 * measured on the host around clFinish (rusticl's profiling timestamps are not times).
 * Cold, most of the time goes into compiling (llvmpipe: ~16 s; the packed kernels, 14 s
 * more, are no candidate where work-items are SIMD lanes: packed.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gemm/dispatch.h"
#include "gemm/tune.h"

#define SLOW 4.0            /* drop a candidate this many times slower than the best */
#define REPEAT_SECONDS 0.5  /* time spent on repeats of one shape, at most (after the first run) */
#define REPEATS 3           /* timed runs per shape, at most */
#define SCREEN_SLOW 10.0    /* drop a candidate this many times slower than the best at 64^3 */

/* ---- candidates ------------------------------------------------------------------------ */

typedef struct tune_shape { size_t m, n, k; bool ta, tb; } tune_shape;

/* 256^3, and an MLP's first layer (batch 128, 784 -> 512: x.W^T). */
static const tune_shape full_shapes[] = {{256, 256, 256, false, false}, {128, 512, 784, false, true}};
/* For tests (CLG_GEMM_TUNE_QUICK): small shapes, no CLBlast (its compile takes long). */
static const tune_shape quick_shapes[] = {{64, 64, 64, false, false}, {32, 96, 80, false, true}};

/* ---- timing and validating ---------------------------------------------------------------- */

typedef struct tune_ctx {
    clg_device *dev;
    clg_buffer *a, *b, *c;
    float *ha, *hb, *hc;   /* host copies of the inputs; hc: what C held before the call */
    float *out;
    size_t na, nb, nc;
    double *want[4], *bound[4];   /* the timed shapes' references (beta 0), made once */
} tune_ctx;

static unsigned lcg(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Run g on candidate c and wait; *seconds gets the wall time. */
static clg_status run_once(tune_ctx *t, const clg_gemm_candidate *c, const clg_gemm_args *g, double *seconds)
{
    double t0 = clg__now();
    const clg_gemm_config *cfg = c->has_config ? &c->config : NULL;
    clg_status st = c->split > 1 ? clg__gemm_split_k(t->dev, c->engine, cfg, g, c->split)
                                 : clg__gemm_dispatch(t->dev, c->engine, cfg, g);
    if (!st) st = clg__queue_wait(t->dev, clg__device_queue(t->dev), "GEMM tuning");
    *seconds = clg__now() - t0;
    return st;
}

/* alpha * op(A) op(B) + beta * C computed on the host in double, and the sum of the
 * magnitudes that bounds each element's float32 rounding. */
static void reference(const tune_ctx *t, const clg_gemm_args *g, double *want, double *bound)
{
    size_t lda = g->lda, ldb = g->ldb, ldc = g->ldc;
    for (size_t i = 0; i < g->m; i++)
        for (size_t j = 0; j < g->n; j++) {
            double s = 0, mag = 0;
            for (size_t p = 0; p < g->k; p++) {
                double x = t->ha[g->a_off + (g->trans_a ? p * lda + i : i * lda + p)];
                double y = t->hb[g->b_off + (g->trans_b ? j * ldb + p : p * ldb + j)];
                s += x * y;
                mag += fabs(x * y);
            }
            double c0 = g->beta != 0 ? t->hc[g->c_off + i * ldc + j] : 0;
            want[i * g->n + j] = g->alpha * s + g->beta * c0;
            bound[i * g->n + j] = 1e-4 * (fabs(g->alpha) * mag + fabs(g->beta * c0));
        }
}

/* C (as g describes it) against the reference, within float32 rounding; elements around
 * the product must be as they were. Returns a description of the first mismatch, or
 * NULL. */
static const char *check_result(tune_ctx *t, const clg_gemm_args *g, const double *want, const double *bound,
                                char *why, size_t len)
{
    clg_status st = clg__read(t->dev, g->c, 0, t->out, t->nc * sizeof(float));
    if (st) return clg_device_error(t->dev);
    for (size_t i = 0; i < g->m; i++)
        for (size_t j = 0; j < g->n; j++) {
            double got = t->out[g->c_off + i * g->ldc + j], w = want[i * g->n + j];
            if (!(fabs(got - w) <= bound[i * g->n + j] + 1e-30)) {
                snprintf(why, len, "C[%zu, %zu] = %.7g, want %.7g", i, j, got, w);
                return why;
            }
        }
    for (size_t at = 0; at < t->nc; at++) {
        bool inside = at >= g->c_off && (at - g->c_off) / g->ldc < g->m && (at - g->c_off) % g->ldc < g->n;
        if (!inside && !(t->out[at] == t->hc[at] || (isnan(t->out[at]) && isnan(t->hc[at])))) {
            snprintf(why, len, "element %zu outside the product was changed", at);
            return why;
        }
    }
    return NULL;
}

/* Fill C with NaN (for beta == 0: it must not be read) or random values, remembering
 * them on the host. */
static clg_status reset_c(tune_ctx *t, bool nan)
{
    unsigned s = 99;
    for (size_t i = 0; i < t->nc; i++)
        t->hc[i] = nan ? NAN : (float)((double)lcg(&s) / (double)(1u << 23) - 1.0);
    return clg__write(t->dev, t->c, 0, t->hc, t->nc * sizeof(float));
}

static clg_gemm_args args_for(tune_ctx *t, const tune_shape *s, size_t pad, size_t off, double alpha, double beta)
{
    clg_gemm_args g = {
        .type = CLG_GEMM_F32, .trans_a = s->ta, .trans_b = s->tb, .m = s->m, .n = s->n, .k = s->k, .batch = 1,
        .alpha = alpha, .beta = beta, .a = t->a, .b = t->b, .c = t->c,
        .a_off = off, .lda = (s->ta ? s->m : s->k) + pad, .b_off = 2 * off, .ldb = (s->tb ? s->k : s->n) + pad,
        .c_off = 3 * off, .ldc = s->n + pad,
    };
    return g;
}

/* Small products over every transpose pair with odd sizes, offsets, padded leading
 * dimensions; beta 0 over NaN, and alpha, beta not 0 or 1. The first call also builds
 * the candidate's programs. */
static const char *validate_small(tune_ctx *t, const clg_gemm_candidate *c, char *why, size_t len)
{
    for (int tr = 0; tr < 4; tr++) {
        tune_shape s = {37 - (size_t)tr * 4, 45 + (size_t)tr, 29 + (size_t)tr * 7, tr & 1, tr >> 1};
        bool nan = tr % 2 == 0;
        clg_gemm_args g = args_for(t, &s, 3, 5, nan ? 1.0 : -1.5, nan ? 0.0 : 0.5);
        double dt, want[64 * 64], bound[64 * 64];
        if (reset_c(t, nan) || run_once(t, c, &g, &dt)) return clg_device_error(t->dev);
        reference(t, &g, want, bound);
        const char *bad = check_result(t, &g, want, bound, why, len);
        if (bad) return bad;
    }
    return NULL;
}

/* The best times so far: per shape, over all shapes, and at the screening shape. */
typedef struct tune_best {
    double shape[4], total, screen;
} tune_best;

typedef struct cand_result {
    bool ok;
    double seconds[4];   /* per shape: the best run */
    char note[400];
} cand_result;

/* ---- tuning ---------------------------------------------------------------------------- */

static double shape_flops(const tune_shape *s) { return 2.0 * (double)s->m * (double)s->n * (double)s->k; }

/* Time candidate c over the shapes. First it must compute correctly (validate_small,
 * which also builds it), then keep within SCREEN_SLOW of the best at 64^3, which takes
 * milliseconds: the packed kernels run a 256^3 product on llvmpipe in seconds. */
static void time_candidate(tune_ctx *t, const clg_gemm_candidate *c, const tune_shape *shapes, int nshapes, bool screen,
                           tune_best *best, cand_result *r)
{
    char why[200];
    const char *bad = validate_small(t, c, why, sizeof why);
    if (bad) {
        snprintf(r->note, sizeof r->note, "rejected: %s", bad);
        return;
    }
    if (screen) {
        static const tune_shape s64 = {64, 64, 64, false, false};
        clg_gemm_args g = args_for(t, &s64, 0, 0, 1.0, 0.0);
        double dt, min = 0;
        for (int rep = 0; rep < 2; rep++) {
            if (run_once(t, c, &g, &dt)) {
                snprintf(r->note, sizeof r->note, "rejected: %s", clg_device_error(t->dev));
                return;
            }
            if (!rep || dt < min) min = dt;
        }
        if (best->screen > 0 && min > SCREEN_SLOW * best->screen) {
            snprintf(r->note, sizeof r->note, "dropped: %.3g GFLOP/s at 64^3, the best %.3g", shape_flops(&s64) / min / 1e9,
                     shape_flops(&s64) / best->screen / 1e9);
            return;
        }
        if (best->screen == 0 || min < best->screen) best->screen = min;
    }
    for (int si = 0; si < nshapes; si++) {
        const tune_shape *s = &shapes[si];
        clg_gemm_args g = args_for(t, s, 0, 0, 1.0, 0.0);
        double dt;
        if (reset_c(t, true) || run_once(t, c, &g, &dt)) {
            snprintf(r->note, sizeof r->note, "rejected: %s", clg_device_error(t->dev));
            return;
        }
        if (!t->want[si]) {
            t->want[si] = malloc(s->m * s->n * sizeof(double));
            t->bound[si] = malloc(s->m * s->n * sizeof(double));
            if (!t->want[si] || !t->bound[si]) {
                snprintf(r->note, sizeof r->note, "rejected: out of host memory");
                return;
            }
            reference(t, &g, t->want[si], t->bound[si]);
        }
        if ((bad = check_result(t, &g, t->want[si], t->bound[si], why, sizeof why))) {
            snprintf(r->note, sizeof r->note, "rejected: %s (%zux%zux%zu)", bad, s->m, s->n, s->k);
            return;
        }
        double min = dt, spent = 0;
        if (best->shape[si] > 0 && dt > SLOW * best->shape[si]) {
            snprintf(r->note, sizeof r->note, "dropped: %.3g GFLOP/s at %zux%zux%zu, the best %.3g",
                     shape_flops(s) / dt / 1e9, s->m, s->n, s->k, shape_flops(s) / best->shape[si] / 1e9);
            return;
        }
        for (int rep = 1; rep < REPEATS && spent < REPEAT_SECONDS; rep++) {
            if (run_once(t, c, &g, &dt)) {
                snprintf(r->note, sizeof r->note, "rejected: %s", clg_device_error(t->dev));
                return;
            }
            spent += dt;
            if (dt < min) min = dt;
        }
        r->seconds[si] = min;
    }
    r->ok = true;
}

static clg_status tune_alloc(tune_ctx *t, const tune_shape *shapes, int nshapes)
{
    /* Room for the largest shape, and for the small checks' offsets and padding. */
    size_t na = 64 * 64, nb = 64 * 64, nc = 64 * 64;
    for (int i = 0; i < nshapes; i++) {
        const tune_shape *s = &shapes[i];
        if (s->m * s->k > na) na = s->m * s->k;
        if (s->k * s->n > nb) nb = s->k * s->n;
        if (s->m * s->n > nc) nc = s->m * s->n;
    }
    t->na = na;
    t->nb = nb;
    t->nc = nc;
    t->ha = malloc(na * sizeof(float));
    t->hb = malloc(nb * sizeof(float));
    t->hc = malloc(nc * sizeof(float));
    t->out = malloc(nc * sizeof(float));
    if (!t->ha || !t->hb || !t->hc || !t->out)
        return clg__fail(t->dev, CLG_ERR_OUT_OF_MEMORY, "GEMM tuning: out of host memory");
    unsigned s = 7;
    for (size_t i = 0; i < na; i++) t->ha[i] = (float)((double)lcg(&s) / (double)(1u << 23) - 1.0);
    for (size_t i = 0; i < nb; i++) t->hb[i] = (float)((double)lcg(&s) / (double)(1u << 23) - 1.0);
    t->a = clg__buffer_alloc(t->dev, na * sizeof(float));
    t->b = t->a ? clg__buffer_alloc(t->dev, nb * sizeof(float)) : NULL;
    t->c = t->b ? clg__buffer_alloc(t->dev, nc * sizeof(float)) : NULL;
    if (!t->c) return t->dev->status;
    clg_status st = clg__write(t->dev, t->a, 0, t->ha, na * sizeof(float));
    return st ? st : clg__write(t->dev, t->b, 0, t->hb, nb * sizeof(float));
}

static void tune_release(tune_ctx *t)
{
    clg__buffer_release(t->a);
    clg__buffer_release(t->b);
    clg__buffer_release(t->c);
    free(t->ha);
    free(t->hb);
    free(t->hc);
    free(t->out);
    for (int i = 0; i < 4; i++) {
        free(t->want[i]);
        free(t->bound[i]);
    }
}

/* Time the candidates; the fastest into *out (saved at path), else the last with
 * *gflops 0. A candidate's failure is logged and leaves the device's error as it was. */
static void tune_now(clg_device *dev, int flags, const clg_gemm_candidate *cand, int ncand, const tune_shape *shapes,
                     int nshapes, const char *what, const char *meta, const char *path, clg_gemm_candidate *out,
                     double *gflops)
{
    clg_saved_error saved = clg__error_save(dev);
    double t0 = clg__now(), flops = 0;
    for (int i = 0; i < nshapes; i++) flops += shape_flops(&shapes[i]);
    tune_ctx t = {.dev = dev};
    cand_result res[16] = {{0}};
    int best = -1;
    tune_best bt = {{0}, 0, 0};
    char summary[1024] = "";
    size_t sl = 0;
    if (tune_alloc(&t, shapes, nshapes) == CLG_OK) {
        for (int i = 0; i < ncand; i++) {
            double c0 = clg__now();
            time_candidate(&t, &cand[i], shapes, nshapes, !(flags & CLG_GEMM_TUNE_QUICK), &bt, &res[i]);
            double total = 0;
            for (int si = 0; si < nshapes; si++) total += res[i].seconds[si];
            if (res[i].ok) {
                if (best < 0 || total < bt.total) {
                    best = i;
                    bt.total = total;
                }
                for (int si = 0; si < nshapes; si++)
                    if (bt.shape[si] == 0 || res[i].seconds[si] < bt.shape[si]) bt.shape[si] = res[i].seconds[si];
                if (sl < sizeof summary)
                    sl += (size_t)snprintf(summary + sl, sizeof summary - sl, "%s%s %.3g", sl ? ", " : "",
                                           cand[i].name, flops / total / 1e9);
            } else {
                clg__log(dev, res[i].note[0] == 'd' ? 2 : 1, "GEMM tuning on %s: %s %s (%.1f s)",
                         clg_device_get_info(dev)->name, cand[i].name, res[i].note, clg__now() - c0);
                if (sl < sizeof summary)
                    sl += (size_t)snprintf(summary + sl, sizeof summary - sl, "%s%s %s", sl ? ", " : "",
                                           cand[i].name, res[i].note[0] == 'd' ? "slow" : "failed");
            }
            clg__error_restore(dev, &saved);
        }
    }
    tune_release(&t);
    clg__error_restore(dev, &saved);
    clg__error_drop(&saved);
    if (best < 0) {
        /* No engine: choice.c falls back to the packed kernels, which every device runs. */
        *out = (clg_gemm_candidate){0};
        *gflops = 0;
        clg__log(dev, 1, "GEMM tuning on %s%s: no candidate worked (%s); using the packed kernels",
                 clg_device_get_info(dev)->name, what, summary);
        return;
    }
    *out = cand[best];
    *gflops = flops / bt.total / 1e9;
    bool saved_file = path[0] && clg__gemm_cache_write(path, meta, out, *gflops);
    char over[64];
    if (nshapes == 1) snprintf(over, sizeof over, "%zux%zux%zu%s%s", shapes[0].m, shapes[0].n, shapes[0].k,
                               shapes[0].ta ? " A^T" : "", shapes[0].tb ? " B^T" : "");
    else snprintf(over, sizeof over, "%s", flags & CLG_GEMM_TUNE_QUICK ? "the quick shapes" : "256^3 and 128x512x784");
    clg__log(dev, 2, "GEMM on %s%s: %s, %.3g GFLOP/s (tuned in %.1f s; GFLOP/s over %s: %s)%s%s",
             clg_device_get_info(dev)->name, what, out->name, *gflops, clg__now() - t0, over, summary,
             saved_file ? "; saved in " : path[0] ? "; could not save in " : "; no cache directory",
             path);
}

/* Every candidate's programs built side by side (the device table's build_threads), before
 * the fitting pass builds the tiled kernels one by one and the timing builds the rest:
 * cold, the compiles were most of the tuning's time. */
static void build_ahead(clg_device *dev, const clg_gemm_candidate *cand, int ncand)
{
    clg_gemm_build b[16];
    clg_program_req reqs[16];
    int n = 0;
    for (int i = 0; i < ncand && n < 16; i++)
        if (cand[i].engine->builds)
            n += cand[i].engine->builds(dev, cand[i].has_config ? &cand[i].config : NULL, &b[n], 16 - n);
    for (int i = 0; i < n; i++) reqs[i] = (clg_program_req){b[i].program, b[i].options};
    clg__programs_build(dev, n, reqs);
}

/* The choice under meta: from its file at path, else timed over the shapes (one process
 * at a time: one that starts meanwhile waits for the choice and reads it, so that
 * processes side by side (a test suite) run the same engine, and their products agree
 * bit for bit). `first`, when given, is timed first: the device's own choice, the bar
 * that slower candidates are dropped against after one run. */
static void cached_or_timed(clg_device *dev, int flags, const char *meta, const char *path, const tune_shape *shapes,
                            int nshapes, const char *what, const clg_gemm_candidate *first, bool splits,
                            clg_gemm_candidate *out, double *gflops, bool *cached)
{
    bool reuse = !(flags & CLG_GEMM_TUNE_FORCE) && path[0];
    /* Not logged when read: every process would say it (clg__gemm_choice tells who asks). */
    *cached = true;
    if (reuse && clg__gemm_cache_read(path, meta, out, gflops)) return;
    int lock = path[0] ? clg__gemm_cache_lock(path) : -1;
    if (reuse && lock >= 0 && clg__gemm_cache_read(path, meta, out, gflops)) {
        close(lock);
        return;
    }
    *cached = false;
    if (path[0] && access(path, F_OK) == 0)
        clg__log(dev, 2, "GEMM on %s%s: the tuning cache %s is unreadable or stale: tuning again",
                 clg_device_get_info(dev)->name, what, path);
    clg_gemm_candidate cand[16];
    int ncand = clg__gemm_candidates(dev, flags, false, cand, 16);
    if (!first) build_ahead(dev, cand, ncand);
    clg_saved_error saved = clg__error_save(dev);
    ncand = clg__gemm_candidates(dev, flags, true, cand, 16);
    clg__error_restore(dev, &saved);
    clg__error_drop(&saved);
    for (int i = 1; first && i < ncand; i++)
        if (!strcmp(cand[i].name, first->name)) {
            clg_gemm_candidate c = cand[i];
            memmove(&cand[1], &cand[0], (size_t)i * sizeof *cand);
            cand[0] = c;
        }
    /* A long k: the device's choice also split over k, in slices of 128 or more */
    static const int parts[] = {4, 16, 64};
    for (int i = 0; splits && first && first->engine && i < 3 && ncand < 16; i++)
        if (shapes[0].k / (size_t)parts[i] >= 128 && clg__gemm_candidate_split(first, parts[i], &cand[ncand])) ncand++;
    tune_now(dev, flags, cand, ncand, shapes, nshapes, what, meta, path, out, gflops);
    if (lock >= 0) close(lock);   /* releases the lock */
}

void clg__gemm_pick(clg_device *dev, int flags, clg_gemm_candidate *out, double *gflops, bool *cached)
{
    clg_gemm_candidate cand[16];
    int ncand = clg__gemm_candidates(dev, flags, false, cand, 16);
    char meta[4096], path[1200];
    clg__gemm_cache_meta(dev, flags, cand, ncand, meta, sizeof meta);
    clg__gemm_cache_path(dev, meta, "tune", path, sizeof path);
    bool quick = flags & CLG_GEMM_TUNE_QUICK;
    cached_or_timed(dev, flags, meta, path, quick ? quick_shapes : full_shapes,
                    (int)(quick ? sizeof quick_shapes / sizeof *quick_shapes : sizeof full_shapes / sizeof *full_shapes),
                    "", NULL, false, out, gflops, cached);
}

/* ---- shape classes --------------------------------------------------------------------- */

/* A size's class: up to 32, 128, 512, 2048, beyond. */
static int size_class(size_t x) { return x <= 32 ? 0 : x <= 128 ? 1 : x <= 512 ? 2 : x <= 2048 ? 3 : 4; }

/* Multiply-adds a class is timed at, at most: the product's largest sizes halved until
 * it fits (2^25: ~30 ms a run at 2 GFLOP/s, llvmpipe's tiled kernel; the host's double
 * reference that checks each candidate ~50 ms). The quick profile's for tests. */
#define CLASS_MACS ((size_t)1 << 25)
#define CLASS_MACS_QUICK ((size_t)1 << 18)

void clg__gemm_class_key(const clg_gemm_args *g, char *key, size_t len)
{
    snprintf(key, len, "t%d%d m%d n%d k%d", g->trans_a ? 1 : 0, g->trans_b ? 1 : 0, size_class(g->m),
             size_class(g->n), size_class(g->k));
}

/* The shape a class is timed at: the product that met it first (a shape the model calls),
 * its largest size halved while it passes the budget (never below 16). */
static tune_shape class_shape(const clg_gemm_args *g, int flags)
{
    size_t d[3] = {g->m, g->n, g->k};
    size_t budget = flags & CLG_GEMM_TUNE_QUICK ? CLASS_MACS_QUICK : CLASS_MACS;
    while ((double)d[0] * (double)d[1] * (double)d[2] > (double)budget) {
        int big = d[1] > d[0] ? 1 : 0;
        if (d[2] > d[big]) big = 2;
        if (d[big] <= 16) break;
        d[big] /= 2;
    }
    return (tune_shape){d[0], d[1], d[2], g->trans_a, g->trans_b};
}

void clg__gemm_class_meta(clg_device *dev, int flags, const char *key, char *meta, size_t len, char *path,
                          size_t plen)
{
    clg_gemm_candidate cand[16];
    int ncand = clg__gemm_candidates(dev, flags, false, cand, 16);
    clg__gemm_cache_meta(dev, flags, cand, ncand, meta, len);
    size_t ml = strlen(meta);
    if (ml < len) snprintf(meta + ml, len - ml, "class: %s\n", key);
    clg__gemm_cache_path(dev, meta, "class", path, plen);
}

void clg__gemm_pick_class(clg_device *dev, int flags, const clg_gemm_args *g, const clg_gemm_candidate *first,
                          clg_gemm_candidate *out, double *gflops, bool *cached)
{
    char key[24];
    clg__gemm_class_key(g, key, sizeof key);
    tune_shape s = class_shape(g, flags);
    char meta[4200], path[1200], what[64];
    clg__gemm_class_meta(dev, flags, key, meta, sizeof meta, path, sizeof path);
    snprintf(what, sizeof what, ", products of class %s", key);
    /* split over k where k is long against m and n (a convolution's weight gradient) */
    size_t mn = s.m > s.n ? s.m : s.n;
    bool splits = s.k >= 1024 && s.k >= 4 * mn;
    cached_or_timed(dev, flags, meta, path, &s, 1, what, first, splits, out, gflops, cached);
    if (!out->engine) *out = *first;   /* nothing worked at this shape: the device's choice */
}
