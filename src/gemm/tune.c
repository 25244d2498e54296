/* gemm_tune.c: which GEMM engine runs on a device, kept per device in CLG_SLOT_GEMM.
 *
 * The parameter table's `gemm` names it ("packed", "tiled", "clblast", "host"), or says
 * "tune": on first use, time the candidates (the host's BLAS where the device runs host
 * functions; the tiled configurations that fit the device and CLBlast where the table's
 * gemm_tiles says so; the packed kernels) on representative shapes, validate each one's results against
 * a host reference, keep the fastest. The choice is written to the program cache's
 * directory under a key made of the device, its driver and platform, the kernels'
 * sources and the candidate list, so the next process reads it and does not tune again;
 * a missing, stale or corrupt file means tuning again.
 *
 * Budget: each candidate is first validated on small products (which builds it), then
 * screened at 64^3 (milliseconds): SCREEN_SLOW times slower than the best there, it is
 * dropped (the packed kernels on llvmpipe run at ~1/50 of the tiled ones, a 256^3
 * product in seconds); at the timed shapes, a first run SLOW times slower than the best
 * drops it too; repeats stop after REPEAT_SECONDS on a shape. Wall time is measured on
 * the host around clFinish (rusticl's profiling timestamps are not times). Cold, most of
 * the time goes into compiling (llvmpipe: ~25 s, half of it the packed kernels').
 *
 * The slot also remembers whether CLBlast ran on the device: CLBlast keeps its compiled
 * programs in a process-wide cache, which must be emptied before the device's context
 * is released (slots are freed at close, before the context goes), else CLBlast
 * releases them later against a dead context.
 */
#include <clblast_c.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel_sources.h"
#include "file_read.h"
#include "gemm/gemm.h"

#define SLOW 4.0            /* drop a candidate this many times slower than the best */
#define REPEAT_SECONDS 0.5  /* time spent on repeats of one shape, at most (after the first run) */
#define REPEATS 3           /* timed runs per shape, at most */
#define SCREEN_SLOW 10.0    /* drop a candidate this many times slower than the best at 64^3 */
#define CACHE_MAGIC "clgrad gemm choice 1\n"

typedef enum choice_origin { ORIGIN_NONE, ORIGIN_TABLE, ORIGIN_TUNED, ORIGIN_CACHED } choice_origin;

typedef struct gemm_state {
    bool clblast_used;             /* CLBlast ran here: its cache is cleared at close */
    choice_origin origin;          /* ORIGIN_NONE until the engine is chosen */
    clg_gemm_engine engine;
    bool have_tiled;               /* `tiled` came from the tuner or the cache */
    clg_gemm_tiled_config tiled;
    bool resolved[2];              /* tiled_for[type] holds a configuration that fits */
    clg_gemm_tiled_config tiled_for[2];
    double gflops;                 /* the choice's measured float32 rate, 0 if not measured */
    char choice[96];
} gemm_state;

static void state_free(clg_device *dev, void *data)
{
    gemm_state *s = data;
    (void)dev;
    /* Process-wide: another open device that used CLBlast recompiles its programs on its
     * next call. The alternative is CLBlast releasing programs of a context already gone. */
    if (s && s->clblast_used) CLBlastClearCache();
    free(s);
}

static gemm_state *state(clg_device *dev)
{
    clg_slot *slot = &dev->slots[CLG_SLOT_GEMM];
    if (!slot->data) {
        slot->data = calloc(1, sizeof(gemm_state));
        if (!slot->data) {
            clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg__gemm: out of host memory");
            return NULL;
        }
        slot->free = state_free;
    }
    return slot->data;
}

clg_status clg__gemm_note_clblast(clg_device *dev)
{
    gemm_state *s = state(dev);
    if (!s) return dev->status;
    s->clblast_used = true;
    return CLG_OK;
}

static void describe_choice(gemm_state *s)
{
    if (s->engine == CLG_GEMM_TILED && s->have_tiled) {
        char cfg[64];
        clg__gemm_tiled_describe(&s->tiled, cfg, sizeof cfg);
        snprintf(s->choice, sizeof s->choice, "tiled %s", cfg);
    } else {
        snprintf(s->choice, sizeof s->choice, "%s", clg__gemm_engine_name(s->engine));
    }
}

/* The device's error as it was before tuning: a candidate's failure is not the caller's. */
typedef struct saved_error { clg_status status; char *text; } saved_error;

static saved_error save_error(const clg_device *dev)
{
    return (saved_error){dev->status, strdup(dev->error)};
}

static void restore_error(clg_device *dev, const saved_error *e)
{
    dev->status = e->status;
    snprintf(dev->error, sizeof dev->error, "%s", e->text ? e->text : "");
}

/* ---- candidates ------------------------------------------------------------------------ */

typedef struct candidate {
    clg_gemm_engine engine;
    clg_gemm_tiled_config tiled;   /* for CLG_GEMM_TILED */
    char name[80];
} candidate;

typedef struct tune_shape { size_t m, n, k; bool ta, tb; } tune_shape;

/* 256^3, and an MLP's first layer (batch 128, 784 -> 512: x.W^T). */
static const tune_shape full_shapes[] = {{256, 256, 256, false, false}, {128, 512, 784, false, true}};
/* For tests (CLG_GEMM_TUNE_QUICK): small shapes, no CLBlast (its compile takes long). */
static const tune_shape quick_shapes[] = {{64, 64, 64, false, false}, {32, 96, 80, false, true}};

/* The host's BLAS where the device can run it, the tiled configurations and CLBlast
 * where the table's gemm_tiles says so, then the packed kernels: the fast ones first,
 * so that the slow ones are dropped after one run. With `fitting`, only the tiled
 * configurations that fit dev (each is built to learn the compiled kernel's group
 * limit); a configuration whose build fails stays, and the tuning rejects it, saying
 * why. Without, the whole list: what the cache key names, known without building. */
static int candidates(clg_device *dev, int flags, bool fitting, candidate *out, int cap)
{
    int n = 0;
    if (clg__gemm_host_available(dev) && n < cap) out[n++] = (candidate){.engine = CLG_GEMM_HOST, .name = "host"};
    bool tiles = clg__device_params(dev)->gemm_tiles;
    for (int i = 0; tiles && i < clg__gemm_tiled_count() && n < cap; i++) {
        clg_kernel *k = NULL;
        if (fitting && clg__gemm_tiled_kernel(dev, clg__gemm_tiled_config(i), CLG_GEMM_F32, &k) == CLG_OK && !k)
            continue;
        out[n] = (candidate){.engine = CLG_GEMM_TILED, .tiled = *clg__gemm_tiled_config(i)};
        char cfg[64];
        clg__gemm_tiled_describe(&out[n].tiled, cfg, sizeof cfg);
        snprintf(out[n].name, sizeof out[n].name, "tiled %s", cfg);
        n++;
    }
    if (tiles && !(flags & CLG_GEMM_TUNE_QUICK) && n < cap)
        out[n++] = (candidate){.engine = CLG_GEMM_CLBLAST, .name = "clblast"};
    if (n < cap) out[n++] = (candidate){.engine = CLG_GEMM_PACKED, .name = "packed"};
    return n;
}

/* ---- the cache file ---------------------------------------------------------------------- */

/* A kernel source's text as the program builder sees it (CLG_KERNEL_DIR or embedded). */
static char *source_text(clg_device *dev, const char *name)
{
    if (dev->kernel_dir[0]) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s.cl", dev->kernel_dir, name);
        unsigned char *buf = NULL;
        size_t len = 0;
        return clg__file_read(path, 16 << 20, &buf, &len, NULL, 0) == CLG_OK ? (char *)buf : NULL;
    }
    for (int i = 0; i < clg__kernel_source_count; i++)
        if (!strcmp(clg__kernel_sources[i].name, name)) return strdup(clg__kernel_sources[i].text);
    return NULL;
}

/* Everything the choice depends on, as text: compared whole when the file is read. */
static void cache_meta(clg_device *dev, int flags, const candidate *cand, int ncand, char *meta, size_t len)
{
    static const char *programs[] = {"common", "gemm", "gemm_tiled"};
    char hashes[3][33];
    for (int i = 0; i < 3; i++) {
        char *src = source_text(dev, programs[i]);
        if (src) clg__hash_hex(src, strlen(src), hashes[i]);
        else snprintf(hashes[i], sizeof hashes[i], "missing");
        free(src);
    }
    char pver[CLG_NAME_MAX] = "";
    if (clGetPlatformInfo(dev->platform, CL_PLATFORM_VERSION, sizeof pver, pver, NULL) != CL_SUCCESS) pver[0] = 0;
    pver[sizeof pver - 1] = 0;
    const clg_device_info *in = clg_device_get_info(dev);
    int w = snprintf(meta, len,
                     CACHE_MAGIC "platform: %s | %s\ndevice: %s\nvendor: %s\ndriver: %s\nsources: %s %s %s\n"
                     "clblast: %d.%d.%d\nblas: %s\nprofile: %s\ncandidates:",
                     in->platform, pver, in->name, in->vendor, in->driver, hashes[0], hashes[1], hashes[2],
                     CLBLAST_VERSION_MAJOR, CLBLAST_VERSION_MINOR, CLBLAST_VERSION_PATCH,
                     clg__gemm_host_library() ? clg__gemm_host_library() : "none",
                     flags & CLG_GEMM_TUNE_QUICK ? "quick" : "full");
    for (int i = 0; i < ncand && w > 0 && (size_t)w < len; i++)
        w += snprintf(meta + w, len - (size_t)w, " %s%s", cand[i].name, i + 1 < ncand ? "," : "");
    if (w > 0 && (size_t)w < len) snprintf(meta + w, len - (size_t)w, "\n");
}

static void cache_path(clg_device *dev, const char *meta, char *path, size_t len)
{
    const char *dir = clg_device_cache_dir(dev);
    char h[33];
    clg__hash_hex(meta, strlen(meta), h);
    if (dir) snprintf(path, len, "%s/gemm-%s.tune", dir, h);
    else path[0] = 0;
}

/* The choice from the file: "choice: <name>" and "gflops: <rate>" after the meta. */
static bool cache_read(const char *path, const char *meta, candidate *out, double *gflops)
{
    unsigned char *text = NULL;   /* a record is a few hundred bytes: anything else is a miss */
    size_t n = 0;
    if (clg__file_read(path, 8191, &text, &n, NULL, 0) != CLG_OK) return false;
    char buf[8192];
    memcpy(buf, text, n + 1);
    free(text);
    size_t ml = strlen(meta);
    if (n < ml || memcmp(buf, meta, ml) != 0) return false;
    char name[80];
    double rate;
    if (sscanf(buf + ml, "choice: %79[^\n]\ngflops: %lf\nend\n", name, &rate) != 2 || !(rate >= 0)) return false;
    candidate c = {0};
    snprintf(c.name, sizeof c.name, "%s", name);
    if (!strcmp(name, "packed")) c.engine = CLG_GEMM_PACKED;
    else if (!strcmp(name, "clblast")) c.engine = CLG_GEMM_CLBLAST;
    else if (!strcmp(name, "host")) c.engine = CLG_GEMM_HOST;
    else if (!strncmp(name, "tiled ", 6) && clg__gemm_tiled_parse(name + 6, &c.tiled)) c.engine = CLG_GEMM_TILED;
    else return false;
    if (!strstr(buf + ml, "\nend\n")) return false;
    *out = c;
    *gflops = rate;
    return true;
}

/* Written to a temporary beside it and renamed: readers see the old file or the new. */
static bool cache_write(const char *path, const char *meta, const candidate *c, double gflops)
{
    char tmp[1300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return false;
    bool ok = fprintf(f, "%schoice: %s\ngflops: %.6g\nend\n", meta, c->name, gflops) > 0;
    ok = fflush(f) == 0 && ok;
    ok = fsync(fileno(f)) == 0 && ok;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return false;
    }
    return true;
}

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
static clg_status run_once(tune_ctx *t, const candidate *c, const clg_gemm_args *g, double *seconds)
{
    double t0 = clg__now();
    clg_status st = clg__gemm_run(t->dev, c->engine, c->engine == CLG_GEMM_TILED ? &c->tiled : NULL, g);
    if (!st) CLG_CL_TRY(t->dev, clg__queue_finish(t->dev->queue), "clFinish", "GEMM tuning");
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
static const char *validate_small(tune_ctx *t, const candidate *c, char *why, size_t len)
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
static void time_candidate(tune_ctx *t, const candidate *c, const tune_shape *shapes, int nshapes, bool screen,
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

/* Time the candidates and adopt the fastest into s. A candidate's failure is logged and
 * leaves the device's error as it was; CLG_OK even when nothing worked (then packed). */
static void tune_now(clg_device *dev, gemm_state *s, int flags, const candidate *cand, int ncand,
                     const char *meta, const char *path)
{
    const tune_shape *shapes = flags & CLG_GEMM_TUNE_QUICK ? quick_shapes : full_shapes;
    int nshapes = (int)(flags & CLG_GEMM_TUNE_QUICK ? sizeof quick_shapes / sizeof *quick_shapes
                                                     : sizeof full_shapes / sizeof *full_shapes);
    saved_error saved = save_error(dev);
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
            restore_error(dev, &saved);
        }
    }
    tune_release(&t);
    restore_error(dev, &saved);
    free(saved.text);
    if (best < 0) {
        s->engine = CLG_GEMM_PACKED;
        s->gflops = 0;
        s->origin = ORIGIN_TUNED;
        describe_choice(s);
        clg__log(dev, 1, "GEMM tuning on %s: no candidate worked (%s); using the packed kernels",
                 clg_device_get_info(dev)->name, summary);
        return;
    }
    s->engine = cand[best].engine;
    s->have_tiled = s->engine == CLG_GEMM_TILED;
    if (s->have_tiled) s->tiled = cand[best].tiled;
    s->gflops = flops / bt.total / 1e9;
    s->origin = ORIGIN_TUNED;
    describe_choice(s);
    bool saved_file = path[0] && cache_write(path, meta, &cand[best], s->gflops);
    clg__log(dev, 2, "GEMM on %s: %s, %.3g GFLOP/s (tuned in %.1f s; GFLOP/s over %s: %s)%s%s",
             clg_device_get_info(dev)->name, s->choice, s->gflops, clg__now() - t0,
             flags & CLG_GEMM_TUNE_QUICK ? "the quick shapes" : "256^3 and 128x512x784", summary,
             saved_file ? "; saved in " : path[0] ? "; could not save in " : "; no cache directory",
             path);
}

/* The choice cached at path, adopted into s; false when there is none (or it is stale). */
static bool adopt_cached(gemm_state *s, const char *path, const char *meta)
{
    candidate c;
    double rate;
    if (!cache_read(path, meta, &c, &rate)) return false;
    s->engine = c.engine;
    s->have_tiled = c.engine == CLG_GEMM_TILED;
    if (s->have_tiled) s->tiled = c.tiled;
    s->gflops = rate;
    s->origin = ORIGIN_CACHED;
    describe_choice(s);
    /* Not logged: every process would say it (clg__gemm_choice tells who asks). */
    return true;
}

/* An exclusive lock on the .lock file beside path (waiting for it), held until the descriptor
 * closes; -1 where none can be had (then tuning goes on unlocked). */
static int lock_path(const char *path)
{
    char lp[1300];   /* gemm-<key>.tune -> gemm-<key>.lock */
    size_t n = strlen(path);
    snprintf(lp, sizeof lp, "%.*s.lock", (int)(n > 5 ? n - 5 : n), path);
    int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    while (fcntl(fd, F_SETLKW, &fl) != 0)
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    return fd;
}

clg_status clg__gemm_tune(clg_device *dev, int flags)
{
    if (!dev || !dev->ctx) return CLG_ERR_INVALID_ARGUMENT;
    gemm_state *s = state(dev);
    if (!s) return dev->status;
    candidate cand[16];
    int ncand = candidates(dev, flags, false, cand, 16);
    char meta[4096], path[1200];
    cache_meta(dev, flags, cand, ncand, meta, sizeof meta);
    cache_path(dev, meta, path, sizeof path);
    s->resolved[0] = s->resolved[1] = false;
    s->have_tiled = false;
    bool reuse = !(flags & CLG_GEMM_TUNE_FORCE) && path[0];
    if (reuse && adopt_cached(s, path, meta)) return CLG_OK;
    /* One process tunes at a time: one that starts meanwhile waits for the choice and
     * reads it, so that processes side by side (a test suite) run the same engine, and
     * their products agree bit for bit. */
    int lock = path[0] ? lock_path(path) : -1;
    if (reuse && lock >= 0 && adopt_cached(s, path, meta)) {
        close(lock);
        return CLG_OK;
    }
    if (path[0] && access(path, F_OK) == 0)
        clg__log(dev, 2, "GEMM on %s: the tuning cache %s is unreadable or stale: tuning again",
                 clg_device_get_info(dev)->name, path);
    saved_error saved = save_error(dev);
    ncand = candidates(dev, flags, true, cand, 16);
    restore_error(dev, &saved);
    free(saved.text);
    tune_now(dev, s, flags, cand, ncand, meta, path);
    if (lock >= 0) close(lock);   /* releases the lock */
    return CLG_OK;
}

/* ---- what gemm.c asks ---------------------------------------------------------------------- */

static gemm_state *chosen(clg_device *dev)
{
    gemm_state *s = state(dev);
    if (!s || s->origin != ORIGIN_NONE) return s;
    const char *want = clg__device_params(dev)->gemm;
    candidate one[2];
    if (!strcmp(want, "tune") && candidates(dev, 0, false, one, 2) == 1) {
        /* nothing to choose from (packed alone, where the host's BLAS is missing) */
        s->engine = one[0].engine;
        s->origin = ORIGIN_TABLE;
        s->gflops = 0;
        describe_choice(s);
        return s;
    }
    if (!strcmp(want, "tune")) {
        /* The first product may come inside a capture: the tuner's trial runs (and its
         * reads of their results) are not part of the step. */
        clg_capture *c = clg__cap_pause(dev);
        clg__gemm_tune(dev, 0);
        clg__cap_resume(dev, c);
        return s;
    }
    s->engine = !strcmp(want, "tiled")     ? CLG_GEMM_TILED
                : !strcmp(want, "clblast") ? CLG_GEMM_CLBLAST
                : !strcmp(want, "host")    ? CLG_GEMM_HOST
                                           : CLG_GEMM_PACKED;
    s->origin = ORIGIN_TABLE;
    s->gflops = 0;
    describe_choice(s);
    return s;
}

clg_gemm_engine clg__gemm_engine_for(clg_device *dev)
{
    gemm_state *s = dev ? chosen(dev) : NULL;
    return s ? s->engine : CLG_GEMM_PACKED;
}

const char *clg__gemm_choice(clg_device *dev, double *gflops)
{
    gemm_state *s = dev ? chosen(dev) : NULL;
    if (gflops) *gflops = s ? s->gflops : 0;
    if (!s) return "unknown";
    if (s->engine == CLG_GEMM_TILED && !s->have_tiled) {
        /* Configured, not tuned: name the configuration float32 runs with. */
        const clg_gemm_tiled_config *c = clg__gemm_tiled_for(dev, CLG_GEMM_F32);
        char cfg[64];
        if (c) clg__gemm_tiled_describe(c, cfg, sizeof cfg);
        snprintf(s->choice, sizeof s->choice, "tiled %s", c ? cfg : "(none fits)");
    }
    return s->choice;
}

int clg__gemm_choice_origin(clg_device *dev)
{
    gemm_state *s = dev ? dev->slots[CLG_SLOT_GEMM].data : NULL;
    return s ? (int)s->origin : 0;
}

const clg_gemm_tiled_config *clg__gemm_tiled_for(clg_device *dev, clg_gemm_type type)
{
    gemm_state *s = state(dev);
    if (!s) return NULL;
    int ti = type == CLG_GEMM_F64;
    if (s->resolved[ti]) return &s->tiled_for[ti];
    clg_kernel *k = NULL;
    clg_status st = CLG_OK;
    if (s->have_tiled) {
        st = clg__gemm_tiled_kernel(dev, &s->tiled, type, &k);
        if (!st && k) s->tiled_for[ti] = s->tiled;
    }
    for (int i = 0; !st && !k && i < clg__gemm_tiled_count(); i++) {
        st = clg__gemm_tiled_kernel(dev, clg__gemm_tiled_config(i), type, &k);
        if (!st && k) s->tiled_for[ti] = *clg__gemm_tiled_config(i);
    }
    if (st) return NULL;
    if (!k) {
        clg__fail(dev, type == CLG_GEMM_F64 && !clg_device_get_info(dev)->fp64 ? CLG_ERR_DTYPE : CLG_ERR_INVALID_ARGUMENT,
                  "clg__gemm (tiled, %s): no configuration of gemm_tiled.cl fits %s (max group %zu, local memory %llu)",
                  type == CLG_GEMM_F64 ? "float64" : "float32", clg_device_get_info(dev)->name,
                  clg__device_params(dev)->max_group, (unsigned long long)clg__device_params(dev)->local_mem);
        return NULL;
    }
    s->resolved[ti] = true;
    return &s->tiled_for[ti];
}
