/* clg__gemm against a plain triple loop in double, on every engine: the packed kernels,
 * the tiled kernel in every configuration the tuner may pick that fits the device, and
 * CLBlast. Every transpose pair, sizes that are not multiples of any tile (1, 7, 33,
 * 65, 100, ...), offsets, padded leading dimensions, strided batches and batch strides
 * of 0 (a matrix shared by the batch), alpha/beta not 0/1, beta == 0 over NaN; float64
 * where the device has it. Elements of C outside the product must be left alone. The
 * device's own engine gets every case, the others a third of them. Then the argument
 * checks, and the engine choice: the tuner's choice is cached on disk and read back by
 * the next open, a corrupt cache means tuning again, and CLG_PARAMS' gemm= wins.
 *
 * CLG_TEST_SMALL=1: tiny shapes only, and no tuning (for Oclgrind, with CLG_PARAMS=gemm=tiled
 * so that the device's engine is not tuned either). */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "device_impl.h"
#include "gemm/clblast.h"
#include "gemm/team.h"
#include "gemm/tiled.h"
#include "gemm/dispatch.h"
#include "gemm/tune.h"

static bool small_mode;

/* An engine of the table (NULL: the device's, as clg__gemm picks it), by name. */
#define ENGINE(name) clg__gemm_engine_find(name)

/* An engine under test: the tiled one in a configuration, or another engine. */
typedef struct engine {
    const clg_gemm_engine *e;
    const clg_gemm_tiled_config *cfg;
    clg_gemm_config opaque;   /* cfg as clg__gemm_run takes it */
    char name[96];
    bool no_dot;   /* packed with the device parameters gemm_dot = off and gemm_small = 0: every
                      product packed (A . B^T and small products too) */
    bool single;   /* single products only, no strided batches (see main) */
    int split;     /* > 1: through clg__gemm_split_k in this many slices of k */
} engine;

static unsigned rng_state = 12345;
static double rnd(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (double)(rng_state >> 8) / (double)(1u << 23) - 1.0;
}

typedef struct gcase {
    bool ta, tb;
    size_t m, n, k, batch;
    double alpha, beta;
    size_t a_off, b_off, c_off;  /* elements */
    size_t pad;                  /* added to every leading dimension */
    size_t gap;                  /* added to every batch stride */
    bool shared_a, shared_b;     /* batch stride 0 */
    bool nan_c;                  /* C holds NaN before the call (with beta 0) */
    bool c32;                    /* 16-bit A and B, float32 C (clg_gemm_args.c_f32) */
    bool col_bias;               /* a column bias (clg_gemm_args.col_bias), at offset 4 of its buffer */
    bool relu;                   /* C's values through ReLU (clg_gemm_args.relu) */
} gcase;

static size_t esize(clg_gemm_type type)
{
    return type == CLG_GEMM_F64 ? 8 : clg__gemm_type_is_half(type) ? 2 : 4;
}

/* Host values as the device stores them, and back. */
static void to_raw(clg_gemm_type type, double v, void *raw, size_t i)
{
    switch (type) {
    case CLG_GEMM_F64: ((double *)raw)[i] = v; break;
    case CLG_GEMM_F16: ((uint16_t *)raw)[i] = clg_f32_to_f16((float)v); break;
    case CLG_GEMM_BF16: ((uint16_t *)raw)[i] = clg_f32_to_bf16((float)v); break;
    default: ((float *)raw)[i] = (float)v;
    }
}

static double from_raw(clg_gemm_type type, const void *raw, size_t i)
{
    switch (type) {
    case CLG_GEMM_F64: return ((const double *)raw)[i];
    case CLG_GEMM_F16: return clg_f16_to_f32(((const uint16_t *)raw)[i]);
    case CLG_GEMM_BF16: return clg_bf16_to_f32(((const uint16_t *)raw)[i]);
    default: return ((const float *)raw)[i];
    }
}

/* Upload n host doubles as type into a new buffer. */
static clg_buffer *upload(clg_device *dev, clg_gemm_type type, const double *h, size_t n)
{
    size_t es = esize(type);
    clg_buffer *b = clg__buffer_alloc(dev, n * es);
    if (!b) return NULL;
    void *tmp = malloc(n * es);
    for (size_t i = 0; i < n; i++) to_raw(type, h[i], tmp, i);
    clg_status st = clg__write(dev, b, 0, tmp, n * es);
    free(tmp);
    if (st) {
        clg__buffer_release(b);
        return NULL;
    }
    return b;
}

/* Round host values to what the device holds, so that the reference sees the same inputs. */
static void round_to(clg_gemm_type type, double *h, size_t n)
{
    double raw; /* room for any type */
    if (type != CLG_GEMM_F64)
        for (size_t i = 0; i < n; i++) {
            to_raw(type, h[i], &raw, 0);
            h[i] = from_raw(type, &raw, 0);
        }
}

static const char *tname(clg_gemm_type type)
{
    return type == CLG_GEMM_F64 ? "f64" : type == CLG_GEMM_F16 ? "f16" : type == CLG_GEMM_BF16 ? "bf16" : "f32";
}

/* The error allowed in an element whose exact value is r with products of total
 * magnitude s: float32 sums (~1e-4 of s for k <= 1024), float64 nearly none; 16-bit
 * results are float32 sums rounded once, so half a unit of the last place of r more
 * (2^-11 relative for float16, 2^-8 for bfloat16, 2^-25 absolute in float16's
 * subnormals). */
static double allowed(clg_gemm_type type, size_t k, double r, double s)
{
    if (type == CLG_GEMM_F64) return 1e-13 * s;
    double e = 1e-4 * (k > 1024 ? (double)k / 1024 : 1) * s;
    if (type == CLG_GEMM_F16) e += fmax(ldexp(fabs(r), -11), ldexp(1, -25));
    if (type == CLG_GEMM_BF16) e += ldexp(fabs(r), -8);
    return e;
}

static int run_case(clg_device *dev, const engine *eng, clg_gemm_type type, const gcase *c)
{
    size_t ar = c->ta ? c->k : c->m, ac = c->ta ? c->m : c->k;   /* A as stored */
    size_t br = c->tb ? c->n : c->k, bc = c->tb ? c->k : c->n;
    size_t lda = ac + c->pad, ldb = bc + c->pad, ldc = c->n + c->pad;
    size_t sa = c->shared_a ? 0 : ar * lda + c->gap, sb = c->shared_b ? 0 : br * ldb + c->gap;
    size_t sc = c->m * ldc + c->gap;
    size_t na = c->a_off + (c->shared_a ? ar * lda : sa * c->batch);
    size_t nb = c->b_off + (c->shared_b ? br * ldb : sb * c->batch), nc = c->c_off + sc * c->batch;
    double *A = malloc(na * 8), *B = malloc(nb * 8), *C = malloc(nc * 8), *R = malloc(nc * 8),
           *S = malloc(nc * 8), *out = malloc(nc * 8);
    for (size_t i = 0; i < na; i++) A[i] = rnd();
    for (size_t i = 0; i < nb; i++) B[i] = rnd();
    for (size_t i = 0; i < nc; i++) C[i] = c->nan_c ? NAN : rnd();
    round_to(type, A, na);
    round_to(type, B, nb);
    clg_gemm_type ct = c->c32 ? CLG_GEMM_F32 : type;   /* C's own type */
    round_to(ct, C, nc);
    double *bias = malloc((c->n + 4) * 8);
    for (size_t j = 0; j < c->n + 4; j++) bias[j] = rnd();
    round_to(ct, bias, c->n + 4);
    /* The reference, and for each element the sum of magnitudes that bounds its rounding.
     * beta == 0: C is not read (BLAS), so NaN there does not propagate. */
    memcpy(R, C, nc * 8);
    memset(S, 0, nc * 8);
    for (size_t b = 0; b < c->batch; b++)
        for (size_t i = 0; i < c->m; i++)
            for (size_t j = 0; j < c->n; j++) {
                double s = 0, mag = 0;
                for (size_t p = 0; p < c->k; p++) {
                    double x = A[c->a_off + b * sa + (c->ta ? p * lda + i : i * lda + p)];
                    double y = B[c->b_off + b * sb + (c->tb ? j * ldb + p : p * ldb + j)];
                    s += x * y;
                    mag += fabs(x * y);
                }
                size_t at = c->c_off + b * sc + i * ldc + j;
                double c0 = c->beta != 0 ? C[at] : 0, bj = c->col_bias ? bias[4 + j] : 0;
                S[at] = fabs(c->alpha) * mag + fabs(c->beta * c0) + fabs(bj);
                R[at] = c->alpha * s + c->beta * c0 + bj;
                if (c->relu && R[at] < 0) R[at] = 0;   /* relu.cl's: NaN kept */
            }
    clg_buffer *da = upload(dev, type, A, na), *db = upload(dev, type, B, nb), *dc = upload(dev, ct, C, nc);
    clg_buffer *dbias = c->col_bias ? upload(dev, ct, bias, c->n + 4) : NULL;
    clg_gemm_args g = {
        .type = type, .trans_a = c->ta, .trans_b = c->tb, .m = c->m, .n = c->n, .k = c->k, .batch = c->batch,
        .alpha = c->alpha, .beta = c->beta, .a = da, .b = db, .c = dc, .a_off = c->a_off, .lda = lda,
        .stride_a = sa, .b_off = c->b_off, .ldb = ldb, .stride_b = sb, .c_off = c->c_off, .ldc = ldc,
        .stride_c = sc, .c_f32 = c->c32, .col_bias = dbias, .col_bias_off = 4, .relu = c->relu,
    };
    int bad = 0;
    const clg_gemm_config *cfg = eng->cfg ? &eng->opaque : NULL;
    clg_status st = !(da && db && dc && (dbias || !c->col_bias)) ? clg_device_last_status(dev)
                    : eng->split ? clg__gemm_split_k(dev, eng->e ? eng->e : clg__gemm_engine_for(dev), cfg, &g, eng->split)
                                 : clg__gemm_run(dev, eng->e, cfg, &g);
    size_t es = esize(ct);
    void *raw = malloc(nc * es);
    if (!st) st = clg__read(dev, dc, 0, raw, nc * es);
    CHECK_MSG(st == CLG_OK, "%s %s: %s", eng->name, tname(type), clg_device_error(dev));
    if (!st) {
        for (size_t i = 0; i < nc; i++) out[i] = from_raw(ct, raw, i);
        for (size_t i = 0; i < nc && bad < 3; i++) {
            double err = fabs(out[i] - R[i]), tol = allowed(ct, c->k, R[i], S[i]);
            bool same_nan = isnan(out[i]) && isnan(R[i]);
            if (!same_nan && (!(err <= tol + 1e-30) || (S[i] == 0 && out[i] != R[i]))) {
                fprintf(stderr, "  element %zu: got %.9g want %.9g (bound %.3g)\n", i, out[i], R[i], tol);
                bad++;
            }
        }
    }
    CHECK_MSG(bad == 0, "%s %s %s%s m=%zu n=%zu k=%zu batch=%zu alpha=%g beta=%g offs=%zu,%zu,%zu pad=%zu gap=%zu "
              "shared=%d,%d nan=%d%s%s%s", eng->name, tname(type), c->ta ? "A^T" : "A", c->tb ? " B^T" : " B", c->m, c->n,
              c->k, c->batch, c->alpha, c->beta, c->a_off, c->b_off, c->c_off, c->pad, c->gap, c->shared_a,
              c->shared_b, c->nan_c, c->c32 ? " C float32" : "", c->col_bias ? " column bias" : "",
              c->relu ? " relu" : "");
    clg__buffer_release(dbias);
    free(bias);
    clg__buffer_release(da);
    clg__buffer_release(db);
    clg__buffer_release(dc);
    free(raw);
    free(A);
    free(B);
    free(C);
    free(R);
    free(S);
    free(out);
    return bad;
}

/* Every transpose pair over shapes that hit every edge of the packed kernels' 6 x 16
 * and 6 x 8 micro-tiles and of the tiled kernels' 16 .. 128 tiles. */
static void sweep(clg_device *dev, const engine *eng, clg_gemm_type type, bool full)
{
    static const size_t shapes[][3] = {
        {1, 1, 1}, {7, 33, 129}, {33, 7, 1}, {1, 129, 7}, {129, 1, 33}, {13, 17, 100}, {64, 48, 32},
        {65, 65, 65}, {128, 10, 256}, {100, 130, 70}, {17, 200, 33},
    };
    static const size_t tiny[][3] = {{1, 1, 1}, {7, 5, 3}, {3, 9, 17}, {18, 20, 7}, {33, 17, 9}};
    size_t nshapes = small_mode ? sizeof tiny / sizeof tiny[0] : sizeof shapes / sizeof shapes[0];
    for (size_t s = 0; s < nshapes; s++)
        for (int t = 0; t < 4; t++) {
            if (!full && (s + (size_t)t) % 3) continue; /* the other engines: a third of the cases */
            const size_t *sh = small_mode ? tiny[s] : shapes[s];
            gcase c = {.ta = t & 1, .tb = t >> 1, .m = sh[0], .n = sh[1], .k = sh[2], .batch = 1, .alpha = 1.0,
                       .beta = 0.0, .nan_c = s % 4 == 2};
            if (s % 2) { /* odd shapes: offsets, padded ld, alpha/beta not 0/1 */
                c.alpha = -0.75;
                c.beta = 1.5;
                c.a_off = 3;
                c.b_off = 5;
                c.c_off = 7;
                c.pad = 3;
            }
            run_case(dev, eng, type, &c);
        }
    if (eng->single) return;
    /* Strided batches, with gaps between the matrices; A or B shared by the batch. */
    gcase b1 = {.ta = false, .tb = true, .m = 9, .n = 20, .k = 11, .batch = 3, .alpha = 0.5, .beta = -2.0,
                .a_off = 1, .b_off = 2, .c_off = 3, .pad = 2, .gap = 5};
    run_case(dev, eng, type, &b1);
    gcase b2 = {.ta = true, .tb = false, .m = 31, .n = 7, .k = 40, .batch = 4, .alpha = 2.0, .beta = 0.0,
                .nan_c = true};
    run_case(dev, eng, type, &b2);
    gcase b3 = {.ta = false, .tb = false, .m = 5, .n = 19, .k = 9, .batch = 3, .alpha = 1.0, .beta = 0.0,
                .shared_a = true};
    run_case(dev, eng, type, &b3);
    gcase b4 = {.ta = true, .tb = true, .m = 21, .n = 6, .k = 13, .batch = 2, .alpha = 1.0, .beta = 0.5,
                .shared_b = true, .b_off = 1, .pad = 1};
    run_case(dev, eng, type, &b4);
    if (clg__gemm_type_is_half(type)) {   /* float32 C: every kind of batch, beta 0 and not */
        gcase *bs[4] = {&b1, &b2, &b3, &b4};
        for (int i = 0; i < 4; i++) {
            bs[i]->c32 = true;
            run_case(dev, eng, type, bs[i]);
        }
        gcase k0 = {.m = 3, .n = 5, .k = 0, .batch = 2, .alpha = 1.0, .beta = 0.5, .c32 = true};   /* C = beta C */
        run_case(dev, eng, type, &k0);
    }
    if (small_mode && eng->e == ENGINE("tiled")) {
        /* Whole tiles of every configuration (up to 64 x 128), which load without bounds
         * checks, as pairs of floats where rows start on even elements (even ld, offsets). */
        gcase m1 = {.m = 66, .n = 130, .k = 34, .batch = 1, .alpha = 1.0, .beta = 0.0};
        run_case(dev, eng, type, &m1);
        gcase m2 = {.ta = true, .tb = true, .m = 66, .n = 130, .k = 34, .batch = 1, .alpha = 1.0, .beta = -1.0};
        run_case(dev, eng, type, &m2);
        gcase m3 = {.ta = true, .m = 65, .n = 129, .k = 33, .batch = 1, .alpha = 2.0, .beta = 0.5, .a_off = 1,
                    .b_off = 1, .c_off = 1, .pad = 1};
        run_case(dev, eng, type, &m3);
    }
    if (full && !small_mode) { /* a bigger one: many groups per batch, k across many tiles */
        gcase big = {.ta = false, .tb = false, .m = 150, .n = 140, .k = 530, .batch = 2, .alpha = 1.0,
                     .beta = 0.25};
        run_case(dev, eng, type, &big);
    }
}

/* The packed kernels are a tuning candidate only where the device's work-items loop over
 * vectors (vector_float above 1); elsewhere they stay the fallback, which gemm = packed
 * names. */
/* Whether the device's tuner may choose e (gemm = tune) under its table. */
static bool tuner_candidate(clg_device *dev, const clg_gemm_engine *e)
{
    clg_gemm_candidate c[32];
    int n = clg__gemm_candidates(dev, 0, false, c, 32);
    for (int i = 0; i < n; i++)
        if (c[i].engine == e) return true;
    return false;
}

static void packed_candidate(clg_device *dev)
{
    clg_gemm_candidate c[16];
    int n = clg__gemm_candidates(dev, 0, false, c, 16);
    bool packed = false;
    for (int i = 0; i < n; i++) packed = packed || c[i].engine == ENGINE("packed");
    int vf = clg__device_params(dev)->vector_float;
    CHECK_MSG(packed == (vf > 1), "vector_float %d: the packed kernels are%s a tuning candidate", vf, packed ? "" : " not");
}

/* The host's BLAS as the device's engine (the table's default where work-items loop over
 * vectors) leaves products under 2^20 multiply-adds to the packed kernels and runs larger
 * ones; asked by name it runs every one (the sweep above). Both sides of the line compute
 * what the reference does through clg__gemm. */
static bool user_core;      /* OPENBLAS_CORETYPE set before the test ran */
static bool user_threads;   /* OPENBLAS_NUM_THREADS set before the test ran */

static void host_leaves(clg_device *dev)
{
    const clg_gemm_engine *h = ENGINE("host");
    /* OpenBLAS on the kernels of the CPU's vectors (it takes some CPUs newer than it for
     * SSE3 ones): the engine sets OPENBLAS_CORETYPE from the CPU's flags before loading it. */
    char lib[128];
    h->version(lib, sizeof lib);
    printf("  host's BLAS: %s\n", lib);
#if defined(__x86_64__)
    if (!user_core && strstr(lib, "libopenblas") && strstr(lib, "(")) {
        const char *want = __builtin_cpu_supports("avx512f") ? "(SkylakeX)"
                           : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? "(Haswell)" : NULL;
        CHECK_MSG(!want || strstr(lib, want), "OpenBLAS runs %s, want %s", lib, want);
    }
#endif
    clg_gemm_args small = {.type = CLG_GEMM_F32, .m = 128, .n = 10, .k = 256, .batch = 4};
    clg_gemm_args large = {.type = CLG_GEMM_F32, .m = 128, .n = 64, .k = 128, .batch = 1};
    CHECK(h->leaves && h->leaves(dev, &small) && !h->leaves(dev, &large));
    CHECK(!strcmp(h->instead, "packed") && h->takes(dev, &small));
    /* Where the table names it and it cannot run (no host functions, or no library), the
     * packed kernels run instead; where it can, it is the engine. */
    if (strcmp(clg__device_params(dev)->gemm, "host")) return;
    CHECK(clg__gemm_engine_for(dev) == (h->ready(dev, CLG_GEMM_F32) ? h : ENGINE("packed")));
    engine autoe = {.e = NULL, .name = "auto (host's line)"};
    gcase below = {.tb = true, .m = 128, .n = 10, .k = 256, .batch = 2, .alpha = 1.0, .beta = 0.5, .a_off = 1, .pad = 2};
    gcase above = {.ta = true, .m = 128, .n = 72, .k = 130, .batch = 2, .alpha = -1.0, .beta = 0.0, .c_off = 3, .pad = 1};
    run_case(dev, &autoe, CLG_GEMM_F32, &below);
    run_case(dev, &autoe, CLG_GEMM_F32, &above);
    if (clg__gemm_engine_for(dev) != h) return;
    /* Which side ran where: the profile of a device of its own names the kernels. */
    setenv("CLG_PROFILE", "1", 1);
    clg_device *pd = check_open_device();
    unsetenv("CLG_PROFILE");
    CHECK(clg_device_profiling(pd));
    for (int side = 0; side < 2; side++) {
        clg_device_profile_reset(pd);
        run_case(pd, &autoe, CLG_GEMM_F32, side ? &above : &below);
        char text[8192] = "";
        FILE *f = tmpfile();
        CHECK(f != NULL);
        if (!f) break;
        CHECK_OK(pd, clg_device_profile_print(pd, f));
        rewind(f);
        size_t got = fread(text, 1, sizeof text - 1, f);
        text[got] = 0;
        fclose(f);
        CHECK_MSG((strstr(text, "gemm_host") != NULL) == (side == 1), "%s: %s", side ? "above the line" : "below it", text);
    }
    clg_device_close(pd);
}

/* The host engine splits a large product (2^22 multiply-adds a part or more) over its own
 * threads (team.c), by C's rows or its columns (host.c's split_rows), in 16-row (column)
 * blocks: every transpose pair, a last block cut short, offsets, padded ld, alpha and
 * beta, and a strided batch whose every entry is split alike, against the reference.
 * Where the engine loaded OpenBLAS itself (one thread of its own) on a machine of two
 * CPUs or more, they do split. */
static void host_split(clg_device *dev)
{
    const clg_gemm_engine *h = ENGINE("host");
    if (!h->ready(dev, CLG_GEMM_F32)) {
        printf("  host split: the host engine does not run here: not run\n");
        return;
    }
    char lib[128];
    h->version(lib, sizeof lib);
    clg_gemm_args rows_args = {.type = CLG_GEMM_F32, .m = 300, .n = 70, .k = 500, .batch = 1};
    clg_gemm_args cols_args = {.type = CLG_GEMM_F32, .m = 40, .n = 260, .k = 900, .batch = 1};
    int pr = clg__gemm_host_parts(dev, &rows_args), pc = clg__gemm_host_parts(dev, &cols_args);
    printf("  host split: %d parts (rows), %d (columns); %d threads\n", pr, pc, clg__team_size());
    if (strstr(lib, "libopenblas") && !user_threads && clg__team_size() > 1 &&
        clg_device_get_info(dev)->compute_units > 1)
        CHECK(pr > 1 && pc > 1);
    engine he = {.e = h, .name = "host (split)"};
    for (int t = 0; t < 4; t++) {
        gcase rows = {.ta = t & 1, .tb = t >> 1, .m = 300, .n = 70, .k = 500, .batch = 1, .alpha = -0.75,
                      .beta = 1.5, .a_off = 3, .b_off = 5, .c_off = 7, .pad = 3};
        gcase cols = {.ta = t & 1, .tb = t >> 1, .m = 40, .n = 260, .k = 900, .batch = 1, .alpha = 1.0,
                      .beta = 0.0, .nan_c = true, .a_off = 1, .pad = 1};
        run_case(dev, &he, CLG_GEMM_F32, &rows);
        run_case(dev, &he, CLG_GEMM_F32, &cols);
    }
    gcase batch = {.tb = true, .m = 130, .n = 20, .k = 1200, .batch = 3, .alpha = 0.5, .beta = -2.0, .a_off = 1,
                   .b_off = 2, .c_off = 3, .pad = 2, .gap = 5};
    run_case(dev, &he, CLG_GEMM_F32, &batch);
    gcase dbl = {.ta = true, .m = 70, .n = 300, .k = 420, .batch = 1, .alpha = 1.0, .beta = 0.5, .b_off = 1, .pad = 1};
    if (clg_device_get_info(dev)->fp64) run_case(dev, &he, CLG_GEMM_F64, &dbl);
}

/* The tiled engine untold (no configuration, as clg__gemm runs it): a product inside a
 * quarter of one of the device's tiles runs on the smallest configuration that fits, a
 * larger one on the device's; every case computes what the reference does. */
static void tiled_by_size(clg_device *dev)
{
    const clg_gemm_tiled_config *small = clg__gemm_tiled_config(0);
    for (int i = 1; i < clg__gemm_tiled_count(); i++)
        if (clg__gemm_tiled_config(i)->tm * clg__gemm_tiled_config(i)->tn < small->tm * small->tn)
            small = clg__gemm_tiled_config(i);
    clg_gemm_config own;
    CHECK_MSG(ENGINE("tiled")->config_for(dev, CLG_GEMM_F32, &own), "%s", clg_device_error(dev));
    clg_gemm_tiled_config mine;
    memcpy(&mine, &own, sizeof mine);
    clg_kernel *k = NULL;
    CHECK_OK(dev, clg__gemm_tiled_kernel(dev, small, CLG_GEMM_F32, &k));
    clg_gemm_args tiny = {.type = CLG_GEMM_F32, .m = 3, .n = 8, .k = 5, .batch = 1};
    clg_gemm_args whole = {.type = CLG_GEMM_F32, .m = (size_t)mine.tm, .n = (size_t)mine.tn, .k = 5, .batch = 1};
    const clg_gemm_tiled_config *t = clg__gemm_tiled_by_size(dev, &tiny), *w = clg__gemm_tiled_by_size(dev, &whole);
    CHECK_MSG(t && w, "%s", clg_device_error(dev));
    char d[64];
    clg__gemm_tiled_describe(&mine, d, sizeof d);
    if (t) CHECK_MSG(k ? t == small : !memcmp(t, &mine, sizeof mine), "3 x 8 on %s tiles: not the smallest", d);
    if (w) CHECK_MSG(!memcmp(w, &mine, sizeof mine), "a whole %s tile: not the device's configuration", d);
    engine untold = {.e = ENGINE("tiled"), .name = "tiled, by size"};
    double t0 = clg__now();
    sweep(dev, &untold, CLG_GEMM_F32, true);
    printf("  %-32s all cases, f32 (device's %s) %.1f s\n", untold.name, d, clg__now() - t0);
}

/* The matrix-unit engine (src/gemm/mma.c, cl_kernels/gemm_mma.cl), with its warp instruction
 * emulated by the work-items (mma = emulate): the kernel's tiles, fragment layouts, loads
 * and write-out on any device. Then what a device without the instruction does with
 * mma = ptx: refuses it once (the build fails), and 16-bit products keep their old path. */
static void mma_sweep(clg_device *dev, const engine *mma, bool both)
{
    for (int h = both ? 0 : 1; h < 2; h++) {
        clg_gemm_type type = h ? CLG_GEMM_BF16 : CLG_GEMM_F16;
        sweep(dev, mma, type, false);
        /* 128 x 128 blocks (8 warps), chosen where there are enough of them for the
         * device's compute units (2 on POCL here), k over two tiles, the second partial. */
        gcase big = {.ta = h, .tb = !h, .m = 260, .n = 136, .k = 40, .batch = 1, .alpha = 1.0, .beta = 0.5};
        if (!small_mode) run_case(dev, mma, type, &big);
        /* Whole 64 x 64 blocks read 8 values at a time (offsets and ld multiples of 8),
         * with and without transposes, and blocks cut at every edge. */
        for (int t = 0; t < 4; t++) {
            gcase w = {.ta = t & 1, .tb = t >> 1, .m = 128, .n = 64, .k = 96, .batch = 2, .alpha = 1.0, .beta = 0.0};
            run_case(dev, mma, type, &w);
            gcase e = {.ta = t & 1, .tb = t >> 1, .m = 65, .n = 71, .k = 49, .batch = 1, .alpha = -1.0, .beta = 2.0,
                       .a_off = 8, .b_off = 16, .c_off = 1, .pad = 8};
            run_case(dev, mma, type, &e);
        }
    }
}

static void mma_engine(clg_device *dev)
{
    double t0 = clg__now();
    clg_mma_kind own = clg__device_params(dev)->mma;   /* the device's own table */
    bool ptx = own == CLG_MMA_PTX;
    if (ptx) {   /* the matrix units themselves (NVIDIA) */
        engine hw = {.e = ENGINE("mma"), .name = "mma (ptx)"};
        CHECK_MSG(ENGINE("mma")->ready(dev, CLG_GEMM_F16) && ENGINE("mma")->ready(dev, CLG_GEMM_BF16),
                  "the device table says mma = ptx, and the engine is refused");
        mma_sweep(dev, &hw, true);
        printf("  %-32s f16, bf16 %.1f s\n", hw.name, clg__now() - t0);
        t0 = clg__now();
    }
    engine mma = {.e = ENGINE("mma"), .name = "mma (emulated)"};
    CHECK_OK(dev, clg_device_set_param(dev, "mma", "emulate"));
    CHECK(ENGINE("mma")->ready(dev, CLG_GEMM_F16) && ENGINE("mma")->ready(dev, CLG_GEMM_BF16));
    /* Emulated, the kernel is the suite's alone: both 16-bit types where the device has
     * float64 (POCL; and under Oclgrind, oclgrind_test_ops_matmul_mma), bfloat16 alone
     * elsewhere (llvmpipe, whose compiler takes 5-6 s per variant of this kernel, four
     * with both types: float16 differs in the widening only). */
    bool both = clg_device_get_info(dev)->fp64;
    mma_sweep(dev, &mma, both);
    /* k past one launch's loop budget: float32 C in slices of k; a 16-bit C is not taken
     * by name (one rounding), and clg__gemm's own choice computes it elsewhere. */
    CHECK_OK(dev, clg_device_set_param(dev, "item_loops", "256"));
    gcase sl = {.tb = true, .m = 40, .n = 24, .k = 100, .batch = 2, .alpha = 1.0, .beta = 0.5, .c32 = true};
    run_case(dev, &mma, both ? CLG_GEMM_F16 : CLG_GEMM_BF16, &sl);
    gcase sl16 = {.m = 20, .n = 12, .k = 100, .batch = 1, .alpha = 1.0, .beta = 0.0};
    engine autoe = {.e = NULL, .name = "auto (mma past its k)"};
    run_case(dev, &autoe, CLG_GEMM_BF16, &sl16);
    clg_buffer *buf = clg__buffer_alloc(dev, 4096);
    clg_gemm_args g = {.type = CLG_GEMM_F16, .m = 20, .n = 12, .k = 100, .batch = 1, .alpha = 1.0, .a = buf,
                       .lda = 100, .b = buf, .ldb = 12, .c = buf, .ldc = 12};
    CHECK(clg__gemm_run(dev, ENGINE("mma"), NULL, &g) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(clg_device_error(dev), "matrix-unit engine does not take it"), "%s", clg_device_error(dev));
    CHECK_OK(dev, clg_device_set_param(dev, "item_loops", "32768"));
    /* float32 is not the engine's. */
    g.type = CLG_GEMM_F32;
    g.k = 4;
    g.lda = 4;
    CHECK(clg__gemm_run(dev, ENGINE("mma"), NULL, &g) == CLG_ERR_INVALID_ARGUMENT);
    /* mma = ptx where the table does not say so (the compiler takes no PTX): refused,
     * and products stay right. */
    CHECK_OK(dev, clg_device_set_param(dev, "mma", "ptx"));
    if (!ptx) {
        CHECK(!ENGINE("mma")->ready(dev, CLG_GEMM_F16));
        gcase p = {.tb = true, .m = 33, .n = 17, .k = 40, .batch = 1, .alpha = 1.0, .beta = 0.0};
        engine autop = {.e = NULL, .name = "auto (ptx refused)"};
        run_case(dev, &autop, CLG_GEMM_F16, &p);
        g.type = CLG_GEMM_F16;
        CHECK(clg__gemm_run(dev, ENGINE("mma"), NULL, &g) == CLG_ERR_INVALID_ARGUMENT);
    }
    clg__buffer_release(buf);
    CHECK_OK(dev, clg_device_set_param(dev, "mma", clg__mma_kind_name(own)));
    printf("  %-32s %s %.1f s\n", mma.name, both ? "f16, bf16" : "bf16 (f16 not run: no float64 here)", clg__now() - t0);
}

/* Intel's sub-group instruction (mma = xmx; cl_intel_subgroup_matrix_multiply_accumulate):
 * where the device table says xmx, the instruction itself; emulated (mma = emulate-xmx),
 * the kernel's 8 x lanes fragments, their loads from both tile layouts and the write-out
 * on any device, sub-groups 8 and 16 wide where the device has float64 (POCL, Oclgrind),
 * 8 wide and bfloat16 alone elsewhere (llvmpipe compiles each variant for seconds). Then
 * mma = xmx where the device lacks it: refused once (the build fails), products right. */
static void xmx_engine(clg_device *dev)
{
    const clg_device_params *p = clg__device_params(dev);
    clg_mma_kind own = p->mma;
    int own_lanes = p->mma_lanes;
    char lanes_text[8], own_block[40];
    const int *ob = p->mma_block;
    snprintf(own_block, sizeof own_block, "%dx%dx%dx%dx%dx%d", ob[0], ob[1], ob[2], ob[3], ob[4], ob[5]);
    double t0 = clg__now();
    if (own == CLG_MMA_XMX) {
        engine hw = {.e = ENGINE("mma"), .name = "mma (xmx)"};
        CHECK_MSG(ENGINE("mma")->ready(dev, CLG_GEMM_F16) && ENGINE("mma")->ready(dev, CLG_GEMM_BF16),
                  "the device table says mma = xmx, and the engine is refused");
        mma_sweep(dev, &hw, true);
        printf("  %-32s f16, bf16, %d lanes %.1f s\n", hw.name, own_lanes, clg__now() - t0);
        t0 = clg__now();
    }
    bool both = clg_device_get_info(dev)->fp64;
    CHECK_OK(dev, clg_device_set_param(dev, "mma", "emulate-xmx"));
    for (int lanes = 8; lanes <= (both ? 16 : 8); lanes *= 2) {
        snprintf(lanes_text, sizeof lanes_text, "%d", lanes);
        CHECK_OK(dev, clg_device_set_param(dev, "mma_lanes", lanes_text));
        /* the blocks the table gives a device whose sub-groups are this wide */
        CHECK_OK(dev, clg_device_set_param(dev, "mma_block", lanes == 8 ? "4x4x2x2x32x2" : "4x4x4x2x32x2"));
        engine x = {.e = ENGINE("mma")};
        snprintf(x.name, sizeof x.name, "mma (emulate-xmx, %d lanes)", lanes);
        CHECK_MSG(ENGINE("mma")->ready(dev, CLG_GEMM_BF16) && (!both || ENGINE("mma")->ready(dev, CLG_GEMM_F16)),
                  "%s refused: %s", x.name, clg_device_error(dev));
        mma_sweep(dev, &x, both);
        printf("  %-32s %s %.1f s\n", x.name, both ? "f16, bf16" : "bf16", clg__now() - t0);
        t0 = clg__now();
    }
    if (own != CLG_MMA_XMX) {
        CHECK_OK(dev, clg_device_set_param(dev, "mma", "xmx"));
        CHECK(!ENGINE("mma")->ready(dev, CLG_GEMM_BF16));
        gcase c = {.tb = true, .m = 33, .n = 17, .k = 40, .batch = 1, .alpha = 1.0, .beta = 0.0};
        engine autox = {.e = NULL, .name = "auto (xmx refused)"};
        run_case(dev, &autox, CLG_GEMM_BF16, &c);
    }
    CHECK_OK(dev, clg_device_set_param(dev, "mma_block", own_block));
    snprintf(lanes_text, sizeof lanes_text, "%d", own_lanes);
    CHECK_OK(dev, clg_device_set_param(dev, "mma_lanes", lanes_text));
    CHECK_OK(dev, clg_device_set_param(dev, "mma", clg__mma_kind_name(own)));
}

/* A buffer of 12 floats holding 0, 1, ..., 11. */
/* bfloat16 products on the CPU's dot-product instructions (src/gemm/hostbf16.c,
 * bf16dot.c): where the table says host_bf16 = on (the CPU has AVX512-BF16 and the
 * device runs host functions), every case by name, products split over the engine's
 * threads, and the choice: products of 2^20 multiply-adds or more go there, smaller ones
 * and float16 not. Elsewhere the table says off, and on is refused with the reason. */
static void hostbf16_engine(clg_device *dev)
{
    const clg_gemm_engine *e = ENGINE("hostbf16");
    bool has = clg__host_cpu_bf16() && clg__native_supported(dev);
    char buf[4096];
    clg__params_format(clg__device_params(dev), buf, sizeof buf);
    CHECK_MSG(clg__device_params(dev)->host_bf16 == has && strstr(buf, has ? "host_bf16 = on" : "host_bf16 = off"),
              "host_bf16 where the CPU %s AVX512-BF16: %s", clg__host_cpu_bf16() ? "has" : "lacks", buf);
    gcase big = {.ta = true, .tb = true, .m = 200, .n = 190, .k = 333, .batch = 1, .alpha = 0.5, .beta = -1.0};
    clg_gemm_args g = {.type = CLG_GEMM_BF16, .m = 128, .n = 128, .k = 64, .batch = 1, .lda = 64, .ldb = 128, .ldc = 128};
    if (!has) {
        CHECK(!e->ready(dev, CLG_GEMM_BF16));
        CHECK_MSG(clg_device_set_param(dev, "host_bf16", "on") == CLG_ERR_INVALID_ARGUMENT &&
                      strstr(clg_device_error(dev), "host_bf16 = on"),
                  "host_bf16 = on without the instructions: %s", clg_device_error(dev));
        printf("  %-32s not run: %s\n", "hostbf16",
               clg__host_cpu_bf16() ? "the device runs no host functions" : "no AVX512-BF16 on this CPU");
        return;
    }
    double t0 = clg__now();
    CHECK(e->ready(dev, CLG_GEMM_BF16) && !e->ready(dev, CLG_GEMM_F16) && !e->ready(dev, CLG_GEMM_F32));
    engine eng = {.e = e, .name = "hostbf16"};
    sweep(dev, &eng, CLG_GEMM_BF16, true);
    /* split over the engine's threads (2^22 multiply-adds a part), bfloat16 and float32 C */
    run_case(dev, &eng, CLG_GEMM_BF16, &big);
    big.c32 = true;
    big.ta = false;
    run_case(dev, &eng, CLG_GEMM_BF16, &big);
    gcase wide = {.ta = false, .tb = true, .m = 40, .n = 700, .k = 401, .batch = 2, .alpha = 1.0, .beta = 0.0,
                  .a_off = 3, .b_off = 1, .c_off = 2, .pad = 1, .gap = 3};
    run_case(dev, &eng, CLG_GEMM_BF16, &wide);
    /* the choice: 2^20 multiply-adds and up, bfloat16 alone */
    CHECK(e->takes(dev, &g) && !e->leaves(dev, &g));
    g.k = 63;
    CHECK(e->takes(dev, &g) && e->leaves(dev, &g));
    g.type = CLG_GEMM_F16;
    CHECK(!e->takes(dev, &g));
    engine autoe = {.e = NULL, .name = "auto (hostbf16)"};
    run_case(dev, &autoe, CLG_GEMM_BF16, &big);
    /* off: not taken, and refused by name, naming the table's word */
    CHECK_OK(dev, clg_device_set_param(dev, "host_bf16", "off"));
    g.type = CLG_GEMM_BF16;
    CHECK(!e->takes(dev, &g));
    g.a = clg__buffer_alloc(dev, 128 * 64 * 2), g.b = clg__buffer_alloc(dev, 64 * 128 * 2);
    g.c = clg__buffer_alloc(dev, 128 * 128 * 2);
    CHECK_MSG(clg__gemm_run(dev, e, NULL, &g) == CLG_ERR_INVALID_ARGUMENT && strstr(clg_device_error(dev), "host_bf16 = off"),
              "hostbf16 by name with host_bf16 = off: %s", clg_device_error(dev));
    clg__buffer_release((clg_buffer *)g.a);
    clg__buffer_release((clg_buffer *)g.b);
    clg__buffer_release(g.c);
    run_case(dev, &autoe, CLG_GEMM_BF16, &big);   /* the device's own engine, on float32 copies */
    CHECK_OK(dev, clg_device_set_param(dev, "host_bf16", "on"));
    printf("  %-32s all cases, bf16 %.1f s\n", "hostbf16", clg__now() - t0);
}

static clg_buffer *counting_buffer(clg_device *dev)
{
    float host[12];
    for (int i = 0; i < 12; i++) host[i] = (float)i;
    clg_buffer *buf = clg__buffer_alloc(dev, sizeof host);
    CHECK_MSG(buf != NULL, "%s", clg_device_error(dev));
    if (buf) CHECK_OK(dev, clg__write(dev, buf, 0, host, sizeof host));
    return buf;
}

/* k == 0 scales C; beta == 0 overwrites NaN; m, n or batch 0 do nothing; bad arguments
 * are refused before anything runs, with a message that says which. */
static void edges(clg_device *dev, const engine *eng)
{
    float out[12];
    clg_buffer *a = counting_buffer(dev), *b = counting_buffer(dev), *c = counting_buffer(dev);
    /* k == 0: C = beta * C on the 2 x 3 block with ldc 4 only. */
    clg_gemm_args g = {.type = CLG_GEMM_F32, .m = 2, .n = 3, .k = 0, .batch = 1, .alpha = 1.0, .beta = -2.0,
                       .lda = 1, .ldb = 1, .c = c, .c_off = 1, .ldc = 4};
    CHECK_OK(dev, clg__gemm_run(dev, eng->e, eng->cfg ? &eng->opaque : NULL, &g));
    CHECK_OK(dev, clg__read(dev, c, 0, out, sizeof out));
    float want[12] = {0, -2, -4, -6, 4, -10, -12, -14, 8, 9, 10, 11};
    CHECK_MSG(!memcmp(out, want, sizeof out), "%s k == 0: %g %g %g %g", eng->name, out[0], out[1], out[5], out[8]);
    /* beta == 0 with NaN in C: C = A * B exactly, no NaN. */
    float nan[12];
    for (int i = 0; i < 12; i++) nan[i] = NAN;
    CHECK_OK(dev, clg__write(dev, c, 0, nan, sizeof nan));
    g = (clg_gemm_args){.type = CLG_GEMM_F32, .m = 2, .n = 2, .k = 3, .batch = 1, .alpha = 1.0, .beta = 0.0,
                        .a = a, .lda = 3, .b = b, .ldb = 2, .c = c, .ldc = 2};
    CHECK_OK(dev, clg__gemm_run(dev, eng->e, eng->cfg ? &eng->opaque : NULL, &g));
    CHECK_OK(dev, clg__read(dev, c, 0, out, sizeof out));
    /* [0 1 2; 3 4 5] * [0 1; 2 3; 4 5] = [10 13; 28 40] */
    CHECK_MSG(out[0] == 10 && out[1] == 13 && out[2] == 28 && out[3] == 40 && isnan(out[4]),
              "%s beta 0 over NaN: %g %g %g %g %g", eng->name, out[0], out[1], out[2], out[3], out[4]);
    clg__buffer_release(a);
    clg__buffer_release(b);
    clg__buffer_release(c);
}

/* The checks made before any engine runs. */
/* The engine table (engines.c) and the names the device table's `gemm` takes (params.c)
 * agree: every name params.c lists (its error message says them) but "tune" is an engine
 * the tuner knows, and every such engine is a name params.c takes. */
static void table_names(clg_device *dev)
{
    char want[CLG_NAME_MAX] = "";
    char saved[sizeof clg__device_params(dev)->gemm];
    snprintf(saved, sizeof saved, "%s", clg__device_params(dev)->gemm);
    CHECK(clg_device_set_param(dev, "gemm", "no-such-engine") == CLG_ERR_INVALID_ARGUMENT);
    const char *w = strstr(clg_device_error(dev), "want ");
    CHECK_MSG(w != NULL, "%s", clg_device_error(dev));
    snprintf(want, sizeof want, "%s", w ? w + 5 : "");
    int listed = 0;
    for (char *tok = strtok(want, ", "); tok; tok = strtok(NULL, ", ")) {
        if (!strcmp(tok, "or") || !strcmp(tok, "tune")) continue;
        const clg_gemm_engine *e = ENGINE(tok);
        CHECK_MSG(e && e->candidates, "params.c takes gemm = %s: not an engine of the table the tuner knows", tok);
        listed++;
    }
    int tunable = 0;
    for (int i = 0; i < clg__gemm_engine_count(); i++) {
        const clg_gemm_engine *e = clg__gemm_engine_at(i);
        CHECK_MSG(ENGINE(e->name) == e && e->run, "engine %d (%s)", i, e->name);
        if (!e->candidates) continue;
        tunable++;
        CHECK_MSG(clg_device_set_param(dev, "gemm", e->name) == CLG_OK, "gemm = %s: %s", e->name, clg_device_error(dev));
    }
    CHECK_MSG(listed == tunable && listed > 0, "params.c lists %d engines, the table has %d", listed, tunable);
    CHECK_OK(dev, clg_device_set_param(dev, "gemm", saved));
}

static void argument_checks(clg_device *dev)
{
    float out[12];
    clg_buffer *a = counting_buffer(dev), *b = counting_buffer(dev), *c = counting_buffer(dev);
    /* Empty products touch nothing and succeed even with NULL operands. */
    CHECK_OK(dev, clg__gemm(dev, CLG_GEMM_F32, false, false, 0, 3, 3, 1.0, NULL, 0, 3, 0, NULL, 0, 3, 0, 0.0, NULL,
                            0, 3, 0, 1));
    CHECK_OK(dev, clg__gemm(dev, CLG_GEMM_F32, false, false, 3, 3, 3, 1.0, a, 0, 3, 0, b, 0, 3, 0, 0.0, c, 0, 3, 0,
                            0));
    /* lda below the stored row length. */
    CHECK(clg__gemm(dev, CLG_GEMM_F32, false, false, 2, 2, 3, 1.0, a, 0, 2, 0, b, 0, 2, 0, 0.0, c, 0, 2, 0, 1) ==
          CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(clg_device_error(dev), "ldA"), "%s", clg_device_error(dev));
    /* B runs past its buffer (which the pool may have rounded up) by one element. */
    size_t past = b->size / 4 - 5;
    CHECK(clg__gemm(dev, CLG_GEMM_F32, false, false, 2, 2, 3, 1.0, a, 0, 3, 0, b, past, 2, 0, 0.0, c, 0, 2, 0, 1) ==
          CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(clg_device_error(dev), "matrix B") && strstr(clg_device_error(dev), "past"), "%s",
              clg_device_error(dev));
    /* Overlapping batches of C. */
    CHECK(clg__gemm(dev, CLG_GEMM_F32, false, false, 2, 2, 1, 1.0, a, 0, 1, 2, b, 0, 2, 2, 0.0, c, 0, 2, 3, 2) ==
          CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg__gemm(dev, CLG_GEMM_F32, true, false, 2, 2, 2, 1.0, NULL, 0, 2, 0, b, 0, 2, 0, 0.0, c, 0, 2, 0, 1) ==
          CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg__gemm(dev, (clg_gemm_type)7, false, false, 1, 1, 1, 1.0, a, 0, 1, 0, b, 0, 1, 0, 0.0, c, 0, 1, 0, 1) ==
          CLG_ERR_INVALID_ARGUMENT);
    if (!clg_device_get_info(dev)->fp64)
        CHECK(clg__gemm(dev, CLG_GEMM_F64, false, false, 1, 1, 1, 1.0, a, 0, 1, 0, b, 0, 1, 0, 0.0, c, 0, 1, 0, 1) ==
              CLG_ERR_DTYPE);
    /* A configuration that cannot fit is refused, never launched: a group of 2^20 items
     * and 8 MiB of local memory, beyond any device (POCL gives 2 MiB of local memory where
     * the L2 cache is that large, and groups of 4,096). */
    clg_gemm_tiled_config huge;
    CHECK(clg__gemm_tiled_parse("1024x1024x1024/1x1/v1/m0", &huge));
    clg_gemm_args g = {.type = CLG_GEMM_F32, .m = 2, .n = 2, .k = 3, .batch = 1, .alpha = 1.0, .a = a, .lda = 3,
                       .b = b, .ldb = 2, .c = c, .ldc = 2};
    clg_gemm_config huge_opaque = clg__gemm_tiled_as_config(&huge);
    CHECK(clg__gemm_run(dev, ENGINE("tiled"), &huge_opaque, &g) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(clg_device_error(dev), "does not fit"), "%s", clg_device_error(dev));
    /* A row bias is stored with C as a grid only (clg__gemm_rows): without one it would
     * be dropped, so it is refused. */
    clg_gemm_args rb = g;
    rb.b_rows = a, rb.bias = c, rb.bias_step = 1;
    CHECK(clg__gemm_rows(dev, &rb) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(clg_device_error(dev), "row bias"), "%s", clg_device_error(dev));
    /* Malformed or inconsistent configurations do not parse. */
    clg_gemm_tiled_config x;
    CHECK(!clg__gemm_tiled_parse("64x64x16/4x4/v4", &x));
    CHECK(!clg__gemm_tiled_parse("64x64x16/3x4/v4/m0", &x));
    CHECK(!clg__gemm_tiled_parse("64x64x16/4x4/v4/m0w", &x));   /* wide needs map 1 */
    CHECK(!clg__gemm_tiled_parse("64x64x16/4x4/v4/m1x", &x));
    CHECK(clg__gemm_tiled_parse("64x64x16/16x8/v4/m1w", &x) && x.wide && x.wm == 16 && x.wn == 8);
    /* The device still works after refused calls: C was not touched by them. */
    CHECK_OK(dev, clg__read(dev, c, 0, out, sizeof out));
    CHECK(out[0] == 0 && out[3] == 3);
    clg__buffer_release(a);
    clg__buffer_release(b);
    clg__buffer_release(c);
}

/* ---- the engine choice ---------------------------------------------------------------- */

/* The tuning cache files in dir with extension ext (gemm-*.tune, gemm-*.class); the
 * first one's path into path. */
static int cache_files(const char *dir, const char *ext, char *path, size_t len)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, "gemm-", 5) && strstr(e->d_name, ext) && !strstr(e->d_name, ".tmp")) {
            if (!n++) snprintf(path, len, "%s/%s", dir, e->d_name);
        }
    closedir(d);
    return n;
}

static int tune_files(const char *dir, char *path, size_t len) { return cache_files(dir, ".tune", path, len); }

static void set_env(const char *key, const char *value)
{
    if (value) setenv(key, value, 1);
    else unsetenv(key);
}

/* gemm = tune with nothing or one thing to choose from (gemm_tiles off: no tiled
 * configuration, no CLBlast; where the device runs no host functions and the packed
 * kernels are no candidate, as on rusticl: none at all): that one or the fallback, the
 * packed kernels, taken from the table, nothing tuned and nothing cached. Where more
 * remain (POCL: the host's BLAS and the packed kernels) they are tuned, as below. */
static void tune_without_choice(const char *dir)
{
    setenv("CLG_PARAMS", "gemm=tune,gemm_tiles=off", 1);
    clg_device *dev = check_open_device();
    clg_gemm_candidate c[4];
    int n = clg__gemm_candidates(dev, 0, false, c, 4);
    printf("  gemm = tune, gemm_tiles = off: %d candidate%s%s\n", n, n == 1 ? "" : "s", n > 1 ? " (tuned: not this case)" : "");
    if (n > 1) {
        clg_device_close(dev);
        setenv("CLG_PARAMS", "gemm=tune", 1);
        return;
    }
    const clg_gemm_engine *want = n ? c[0].engine : ENGINE("packed");
    CHECK_MSG(clg__gemm_engine_for(dev) == want, "gemm = tune, gemm_tiles = off: engine %s, want %s",
              clg__gemm_choice(dev, NULL), clg__gemm_engine_name(want));
    CHECK_MSG(clg__gemm_choice_origin(dev) == 1, "gemm = tune, gemm_tiles = off: origin %d, want 1 (the table)",
              clg__gemm_choice_origin(dev));
    char path[1400];
    CHECK_MSG(tune_files(dir, path, sizeof path) == 0, "gemm = tune, gemm_tiles = off: a tuning cache was written");
    clg_device_close(dev);
    setenv("CLG_PARAMS", "gemm=tune", 1);
}

/* Products split over k (splitk.c) on engine e: every transpose pair, even and uneven
 * splits (the remainder added into the first slice), alpha and beta, beta 0 over NaN,
 * offsets and padded leading dimensions; and what a split does not apply to (more slices
 * than k, a batch, past CLG_GEMM_SPLIT_MAX) runs whole, right. */
static void split_sweep(clg_device *dev, const clg_gemm_engine *e, const char *label)
{
    static const struct { size_t m, n, k; int parts; } cases[] = {
        {16, 24, 1024, 4}, {7, 33, 1000, 3}, {33, 5, 777, 7}, {1, 1, 300, 64}, {20, 20, 5, 8}, {9, 17, 4000, 65},
        {5, 9, 70001, 16},   /* a long k: slices of 4,375, the remainder of 1 into the first */
    };
    static const struct { size_t m, n, k; int parts; } tiny[] = {{5, 7, 64, 4}, {3, 9, 50, 3}, {4, 4, 3, 8}};
    size_t n = small_mode ? sizeof tiny / sizeof *tiny : sizeof cases / sizeof *cases;
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        for (int t = 0; t < 4; t++) {
            engine eng = {.e = e, .split = small_mode ? tiny[i].parts : cases[i].parts};
            snprintf(eng.name, sizeof eng.name, "%s split %d", label, eng.split);
            gcase c = {.ta = t & 1, .tb = t >> 1, .m = small_mode ? tiny[i].m : cases[i].m,
                       .n = small_mode ? tiny[i].n : cases[i].n, .k = small_mode ? tiny[i].k : cases[i].k,
                       .batch = 1, .alpha = 1.0, .beta = 0.0, .nan_c = true};
            if ((i + (size_t)t) % 2) {
                c.alpha = -0.75, c.beta = 1.5, c.nan_c = false;
                c.a_off = 3, c.b_off = 5, c.c_off = 7, c.pad = 3;
            }
            bad += run_case(dev, &eng, CLG_GEMM_F32, &c);
        }
    engine eng = {.e = e, .split = 4};
    snprintf(eng.name, sizeof eng.name, "%s split 4, a batch", label);
    gcase b = {.ta = true, .tb = false, .m = 9, .n = 11, .k = 200, .batch = 3, .alpha = 0.5, .beta = -2.0, .gap = 2};
    bad += run_case(dev, &eng, CLG_GEMM_F32, &b);
    printf("  %-32s split over k: %s\n", label, bad ? "FAILED" : "ok");
}

/* Products with a column bias (clg_gemm_args.col_bias) on engine eng: in the write-out
 * (tiled) or around the product (the others): every transpose pair, beta 0 over NaN and
 * beta not 0 (the bias added after), a batch, k == 0, float32 and the 16-bit types
 * where the engine runs them. */
/* The write-out's cases: every transpose pair over four shapes (two in small mode), beta 0
 * over NaN and beta not 0 (16-bit: 0), offsets and padding, float32 and where asked the
 * 16-bit types; a column bias on all (relu false) or on every other transpose pair (relu). */
static int write_out_cases(clg_device *dev, const engine *eng, bool halves, bool relu)
{
    static const size_t shapes[][3] = {{7, 33, 29}, {33, 7, 100}, {64, 48, 32}, {1, 129, 7}};
    static const size_t tiny[][3] = {{7, 5, 3}, {3, 9, 17}};
    size_t n = small_mode ? 2 : 4;
    int bad = 0;
    clg_gemm_type types[] = {CLG_GEMM_F32, CLG_GEMM_F16, CLG_GEMM_BF16};
    for (int ti = 0; ti < (halves ? 3 : 1); ti++)
        for (size_t i = 0; i < n; i++)
            for (int t = 0; t < 4; t++) {
                const size_t *sh = small_mode ? tiny[i] : shapes[i];
                gcase c = {.ta = t & 1, .tb = t >> 1, .m = sh[0], .n = sh[1], .k = sh[2], .batch = 1, .alpha = 1.0,
                           .beta = 0.0, .nan_c = true, .col_bias = !relu || t % 2 == 0, .relu = relu};
                if ((i + (size_t)t) % 2) c.alpha = -0.75, c.beta = ti ? 0.0 : 1.5, c.nan_c = ti > 0, c.c_off = 3, c.pad = 2;
                bad += run_case(dev, eng, types[ti], &c);
            }
    return bad;
}

static void bias_sweep(clg_device *dev, const engine *eng, bool halves)
{
    int bad = write_out_cases(dev, eng, halves, false);
    /* a 16-bit C with a column bias and beta != 0 is refused (it would round twice) */
    clg_buffer *c16 = clg__buffer_alloc(dev, 64), *b16 = clg__buffer_alloc(dev, 64);
    clg_gemm_args r = {.type = CLG_GEMM_F16, .m = 2, .n = 2, .k = 2, .batch = 1, .alpha = 1, .beta = 1, .a = c16,
                       .b = c16, .c = c16, .lda = 2, .ldb = 2, .ldc = 2, .col_bias = b16};
    CHECK(c16 && b16 && clg__gemm_run(dev, eng->e, NULL, &r) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(clg_device_error(dev), "rounded twice") != NULL, "%s", clg_device_error(dev));
    clg__buffer_release(c16);
    clg__buffer_release(b16);
    gcase b = {.ta = false, .tb = true, .m = 9, .n = 20, .k = 11, .batch = 3, .alpha = 0.5, .beta = -2.0, .gap = 2,
               .col_bias = true};
    bad += run_case(dev, eng, CLG_GEMM_F32, &b);
    gcase z = {.m = 5, .n = 6, .k = 0, .batch = 1, .alpha = 1.0, .beta = 0.5, .col_bias = true};
    bad += run_case(dev, eng, CLG_GEMM_F32, &z);
    printf("  %-32s column bias: %s\n", eng->name, bad ? "FAILED" : "ok");
}

/* Products with a ReLU of C (clg_gemm_args.relu) on engine eng: in the write-out (tiled,
 * host) or a pass after (the others), alone and after a column bias, beta 0 over NaN and
 * beta not 0, every transpose pair, a batch, k == 0, k past the engine's loop limit (a
 * pass after the slices), 16-bit types where asked (the ReLU after their rounding). */
static void relu_sweep(clg_device *dev, const engine *eng, bool halves)
{
    int bad = write_out_cases(dev, eng, halves, true);
    gcase b = {.ta = false, .tb = true, .m = 9, .n = 20, .k = 11, .batch = 3, .alpha = 0.5, .beta = -2.0, .gap = 2,
               .col_bias = true, .relu = true};
    bad += run_case(dev, eng, CLG_GEMM_F32, &b);
    gcase z = {.m = 5, .n = 6, .k = 0, .batch = 1, .alpha = 1.0, .beta = 0.5, .col_bias = true, .relu = true};
    bad += run_case(dev, eng, CLG_GEMM_F32, &z);
    if (!small_mode) {   /* past the tiled kernel's loop limit at the table's item_loops */
        gcase l = {.ta = true, .tb = false, .m = 6, .n = 9, .k = 40000, .batch = 1, .alpha = 1.0, .beta = 0.0,
                   .nan_c = true, .col_bias = true, .relu = true};
        bad += run_case(dev, eng, CLG_GEMM_F32, &l);
    }
    printf("  %-32s relu: %s\n", eng->name, bad ? "FAILED" : "ok");
}

/* g's class's engine and configuration by name, as clg__gemm runs it. */
static void class_engine_name(clg_device *dev, const clg_gemm_args *g, char *name, size_t len)
{
    const clg_gemm_config *cfg;
    int split;
    const clg_gemm_engine *e = clg__gemm_engine_for_args(dev, g, &cfg, &split);
    char text[64] = "", parts[24] = "";
    if (cfg && e->describe) e->describe(cfg, text, sizeof text);
    if (split > 1) snprintf(parts, sizeof parts, " split %d", split);
    snprintf(name, len, "%s%s%s%s", e->name, text[0] ? " " : "", text, parts);
}

/* A class's cache file written by hand (the quick profile's key, as the tuner writes it):
 * the class's choice is then c. */
static bool write_class_file(clg_device *dev, const char *key, const clg_gemm_candidate *c, double gflops)
{
    char meta[4300], file[1200];
    clg__gemm_class_meta(dev, CLG_GEMM_TUNE_QUICK, key, meta, sizeof meta, file, sizeof file);
    return file[0] && clg__gemm_cache_write(file, meta, c, gflops);
}

/* Shape classes on a tuned device (the quick profile's): a product's class is tuned on
 * its first product, cached in a file of its own, read back by the next open, and its
 * choice is what clg__gemm runs: a class file written by hand with another candidate
 * than the device's is taken, and products of that class compute right on it. */
static void class_choices(clg_device *dev, const char *dir, const char *device_choice)
{
    char path[1400];
    int before = cache_files(dir, ".class", path, sizeof path);
    engine autoe = {.e = NULL, .name = "auto (class)"};
    gcase c = {.ta = false, .tb = true, .m = 100, .n = 90, .k = 200, .batch = 1, .alpha = 1.0, .beta = 0.0,
               .nan_c = true};
    run_case(dev, &autoe, CLG_GEMM_F32, &c);
    clg_gemm_args g = {.type = CLG_GEMM_F32, .trans_b = true, .m = 100, .n = 90, .k = 200, .batch = 1};
    char key[24];
    clg__gemm_class_key(&g, key, sizeof key);
    CHECK_MSG(!strcmp(key, "t01 m1 n1 k2"), "class key %s", key);
    double rate = -1;
    bool cached = true;
    char name[96];
    snprintf(name, sizeof name, "%s", clg__gemm_class_choice(dev, &g, &rate, &cached));
    printf("  class %s chose %s (%.3g GFLOP/s)\n", key, name, rate);
    clg_gemm_candidate parsed;
    CHECK_MSG(clg__gemm_candidate_parse(name, &parsed), "class choice %s is no candidate", name);
    CHECK_MSG(rate > 0 && !cached, "class %s: rate %g, cached %d: want timed here", key, rate, cached);
    CHECK_MSG(cache_files(dir, ".class", path, sizeof path) == before + 1, "class files %d, want %d",
              cache_files(dir, ".class", path, sizeof path), before + 1);
    char ran[96];
    class_engine_name(dev, &g, ran, sizeof ran);
    CHECK_MSG(!strcmp(ran, name), "clg__gemm runs class %s on %s, its choice is %s", key, ran, name);

    /* Another class, its file written by hand naming a candidate other than the device's */
    clg_gemm_candidate cand[16];
    int n = clg__gemm_candidates(dev, CLG_GEMM_TUNE_QUICK, true, cand, 16), other = -1;
    for (int i = 0; i < n && other < 0; i++)
        if (strcmp(cand[i].name, device_choice)) other = i;
    /* the device was tuned, so it had another candidate to choose from */
    CHECK_MSG(other >= 0, "a tuned device with no candidate but its choice %s (%d candidates)", device_choice, n);
    if (other < 0) return;
    CHECK(write_class_file(dev, "t10 m2 n1 k2", &cand[other], 1.5));
    clg_gemm_args h = {.type = CLG_GEMM_F32, .trans_a = true, .m = 300, .n = 100, .k = 200, .batch = 1};
    snprintf(name, sizeof name, "%s", clg__gemm_class_choice(dev, &h, &rate, &cached));
    CHECK_MSG(!strcmp(name, cand[other].name) && cached && rate == 1.5, "class t10 m2 n1 k2: %s (%g, cached %d), "
              "want %s from the file", name, rate, cached, cand[other].name);
    class_engine_name(dev, &h, ran, sizeof ran);
    CHECK_MSG(!strcmp(ran, cand[other].name), "clg__gemm runs class t10 m2 n1 k2 on %s, want %s", ran,
              cand[other].name);
    gcase d = {.ta = true, .tb = false, .m = 300, .n = 100, .k = 200, .batch = 2, .alpha = -0.5, .beta = 1.5,
               .pad = 3, .c_off = 5};
    run_case(dev, &autoe, CLG_GEMM_F32, &d);
    printf("  class t10 m2 n1 k2 from a file written by hand: %s\n", name);

    /* clg__gemm itself runs it: where one of the two is the host's BLAS, its kernel
     * (gemm_host) shows in the profile of a product of that class exactly when the
     * class's choice is the host */
    bool host_class = !strcmp(cand[other].engine->name, "host"), host_device = !strncmp(device_choice, "host", 4);
    if (host_class == host_device) return;
    setenv("CLG_PROFILE", "1", 1);
    clg_device *pd = check_open_device();
    unsetenv("CLG_PROFILE");
    CHECK_OK(pd, clg__gemm_tune(pd, CLG_GEMM_TUNE_QUICK));
    /* 6 million multiply-adds: past the host engine's floor (leaves), where either runs */
    clg_buffer *a = clg__buffer_alloc(pd, 200 * 300 * 4), *b = clg__buffer_alloc(pd, 200 * 100 * 4),
               *cc = clg__buffer_alloc(pd, 300 * 100 * 4);
    CHECK(a && b && cc);
    if (a && b && cc) {
        CHECK_OK(pd, clg__gemm(pd, CLG_GEMM_F32, true, false, 300, 100, 200, 1.0, a, 0, 300, 0, b, 0, 100, 0, 0.0, cc,
                               0, 100, 0, 1));
        CHECK_OK(pd, clg_device_finish(pd));
        char *text = check_profile_text(pd);
        bool ran_host = text && strstr(text, "gemm_host") != NULL;
        if (text)
            CHECK_MSG(ran_host == host_class, "a product of class t10 m2 n1 k2 (%s) %s gemm_host:\n%s", name,
                      ran_host ? "ran" : "did not run", text);
        free(text);
    }
    clg__buffer_release(a);
    clg__buffer_release(b);
    clg__buffer_release(cc);
    clg_device_close(pd);
}

/* A class whose choice (from a file written by hand) is the device's choice split over k:
 * clg__gemm runs it split (gemm_split_sum in the profile) and right. */
static void class_split(const char *device_choice)
{
    clg_device *pd = NULL;
    setenv("CLG_PROFILE", "1", 1);
    pd = check_open_device();
    unsetenv("CLG_PROFILE");
    CHECK_OK(pd, clg__gemm_tune(pd, CLG_GEMM_TUNE_QUICK));
    clg_gemm_candidate base, split;
    CHECK_MSG(clg__gemm_candidate_parse(device_choice, &base), "%s", device_choice);
    CHECK(clg__gemm_candidate_split(&base, 16, &split));
    CHECK(write_class_file(pd, "t00 m0 n0 k4", &split, 2.5));
    /* 16 x 32 x 4096: 2 million multiply-adds, past the host engine's floor */
    clg_gemm_args g = {.type = CLG_GEMM_F32, .m = 16, .n = 32, .k = 4096, .batch = 1};
    char ran[96];
    class_engine_name(pd, &g, ran, sizeof ran);
    CHECK_MSG(!strcmp(ran, split.name), "clg__gemm runs class t00 m0 n0 k4 on %s, want %s", ran, split.name);
    engine autoe = {.e = NULL, .name = "auto (class split)"};
    gcase c = {.m = 16, .n = 32, .k = 4096, .batch = 1, .alpha = 2.0, .beta = -1.0, .c_off = 2, .pad = 1};
    run_case(pd, &autoe, CLG_GEMM_F32, &c);
    char *text = check_profile_text(pd);
    if (text)
        CHECK_MSG(strstr(text, "gemm_split_sum") != NULL, "class t00 m0 n0 k4 (%s): no gemm_split_sum launched:\n%s",
                  split.name, text);
    free(text);
    printf("  class t00 m0 n0 k4 from a file written by hand: %s\n", split.name);
    clg_device_close(pd);
}

/* Tuning (the quick profile) caches its choice; the next open reads it; a corrupt file
 * means tuning again; an override in CLG_PARAMS skips all of it. */
static void choice_and_cache(void)
{
    char *old_cache = getenv("CLG_CACHE_DIR") ? strdup(getenv("CLG_CACHE_DIR")) : NULL;
    char *old_params = getenv("CLG_PARAMS") ? strdup(getenv("CLG_PARAMS")) : NULL;
    char dir[] = "/tmp/clgrad-test-gemm-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("CLG_CACHE_DIR", dir, 1);
    tune_without_choice(dir);
    setenv("CLG_PARAMS", "gemm=tune", 1);

    clg_device *dev = check_open_device();
    CHECK(!strcmp(clg__device_params(dev)->gemm, "tune"));
    CHECK(clg__gemm_choice_origin(dev) == 0);
    CHECK_OK(dev, clg__gemm_tune(dev, CLG_GEMM_TUNE_QUICK));
    CHECK(clg__gemm_choice_origin(dev) == 2);
    double rate1 = 0;
    char choice1[128];
    snprintf(choice1, sizeof choice1, "%s", clg__gemm_choice(dev, &rate1));
    printf("quick tuning chose %s (%.3g GFLOP/s)\n", choice1, rate1);
    CHECK(rate1 > 0);
    char path[1400] = "";
    CHECK(tune_files(dir, path, sizeof path) == 1);
    /* The chosen engine computes correctly through clg__gemm. */
    engine autoe = {.e = NULL, .name = "auto (tuned)"};
    gcase c = {.ta = true, .tb = false, .m = 19, .n = 23, .k = 29, .batch = 2, .alpha = 1.0, .beta = 0.0,
               .nan_c = true};
    run_case(dev, &autoe, CLG_GEMM_F32, &c);
    class_choices(dev, dir, choice1);
    clg_device_close(dev);
    class_split(choice1);

    /* A second open reads the cached choice: no tuning. */
    dev = check_open_device();
    CHECK_OK(dev, clg__gemm_tune(dev, CLG_GEMM_TUNE_QUICK));
    CHECK_MSG(clg__gemm_choice_origin(dev) == 3, "origin %d", clg__gemm_choice_origin(dev));
    double rate2 = 0;
    CHECK_MSG(!strcmp(clg__gemm_choice(dev, &rate2), choice1), "%s vs %s", clg__gemm_choice(dev, NULL), choice1);
    CHECK(fabs(rate2 - rate1) <= 1e-3 * rate1);
    /* and its classes' */
    clg_gemm_args g = {.type = CLG_GEMM_F32, .trans_b = true, .m = 100, .n = 90, .k = 200, .batch = 1};
    double crate = 0;
    bool ccached = false;
    const char *cname = clg__gemm_class_choice(dev, &g, &crate, &ccached);
    CHECK_MSG(ccached && crate > 0, "class t01 m1 n1 k2 on the second open: %s, cached %d", cname, ccached);
    clg_device_close(dev);

    /* A corrupt file is tuned over (and rewritten). */
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, 30, SEEK_SET);
        fputs("garbage", f);
        fclose(f);
    }
    dev = check_open_device();
    CHECK_OK(dev, clg__gemm_tune(dev, CLG_GEMM_TUNE_QUICK));
    CHECK(clg__gemm_choice_origin(dev) == 2);
    clg_device_close(dev);
    dev = check_open_device();
    CHECK_OK(dev, clg__gemm_tune(dev, CLG_GEMM_TUNE_QUICK));
    CHECK(clg__gemm_choice_origin(dev) == 3);
    clg_device_close(dev);
    CHECK(tune_files(dir, path, sizeof path) == 1);

    /* An override wins: no tuning, no cache read. */
    static const char *forced[][2] = {{"gemm=tiled", "tiled"}, {"gemm=packed", "packed"}};
    for (int i = 0; i < 2; i++) {
        setenv("CLG_PARAMS", forced[i][0], 1);
        dev = check_open_device();
        const clg_gemm_engine *e = clg__gemm_engine_for(dev);
        CHECK(e == ENGINE(forced[i][1]));
        CHECK(clg__gemm_choice_origin(dev) == 1);
        double r = -1;
        const char *name = clg__gemm_choice(dev, &r);
        CHECK_MSG(!strncmp(name, forced[i][1], strlen(forced[i][1])) && r == 0, "%s %g", name, r);
        clg_device_close(dev);
    }

    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    set_env("CLG_CACHE_DIR", old_cache);
    set_env("CLG_PARAMS", old_params);
    free(old_cache);
    free(old_params);
}

int main(int argc, char **argv)
{
    user_core = getenv("OPENBLAS_CORETYPE") != NULL;   /* before the host engine sets it */
    user_threads = getenv("OPENBLAS_NUM_THREADS") != NULL;
    const char *sm = getenv("CLG_TEST_SMALL");
    small_mode = sm && *sm && strcmp(sm, "0") != 0;
    clg_device *dev = check_open_device();
    if (argc > 1 && !strcmp(argv[1], "--split-only")) {
        /* the products split over k alone (Oclgrind: gemm_split_sum under the simulator),
         * and the ReLU of C (gemm_relu after the engines that do not apply it, the split's
         * sum applying it) */
        split_sweep(dev, NULL, "the device's engine");
        engine autor = {.e = NULL, .name = "the device's engine"}, splitr = {.e = NULL, .name = "split 3", .split = 3};
        relu_sweep(dev, &autor, false);
        gcase sr = {.ta = true, .m = 5, .n = 7, .k = 40, .batch = 1, .alpha = 2.0, .beta = -0.5, .col_bias = true,
                    .relu = true};
        CHECK(run_case(dev, &splitr, CLG_GEMM_F32, &sr) == 0);
        clg_device_close(dev);
        return check_report("test_gemm --split-only");
    }
    if (argc > 2 && !strcmp(argv[1], "--tiled-only")) {
        /* one tiled configuration's whole sweep, float32 (Oclgrind: a configuration the
         * engine's default is not, such as the double-buffered ones) */
        static clg_gemm_tiled_config cfg;
        CHECK_MSG(clg__gemm_tiled_parse(argv[2], &cfg), "--tiled-only %s: not a configuration", argv[2]);
        clg_kernel *k = NULL;
        CHECK_OK(dev, clg__gemm_tiled_kernel(dev, &cfg, CLG_GEMM_F32, &k));
        CHECK_MSG(k != NULL, "tiled %s does not fit %s", argv[2], clg_device_get_info(dev)->name);
        if (k) {
            engine eng = {.e = ENGINE("tiled"), .cfg = &cfg, .opaque = clg__gemm_tiled_as_config(&cfg)};
            snprintf(eng.name, sizeof eng.name, "tiled %s", argv[2]);
            sweep(dev, &eng, CLG_GEMM_F32, true);
            /* a long k (70,001: past llvmpipe's 65,535 loop trips, sliced by k_limit) */
            for (int t = 0; !small_mode && t < 4; t++) {
                gcase c = {.ta = t & 1, .tb = t >> 1, .m = 5, .n = 7, .k = 70001, .batch = 1, .alpha = 1.0,
                           .beta = t % 2 ? 0.5 : 0.0, .nan_c = t % 2 == 0};
                run_case(dev, &eng, CLG_GEMM_F32, &c);
            }
        }
        clg_device_close(dev);
        return check_report("test_gemm --tiled-only");
    }
    const clg_device_info *info = clg_device_get_info(dev);
    double rate = 0;
    const clg_gemm_engine *own = clg__gemm_engine_for(dev);   /* tunes here when the table says "tune" */
    const char *choice = clg__gemm_choice(dev, &rate);
    printf("test_gemm on %s: gemm = %s, engine %s", info->name, clg__device_params(dev)->gemm, choice);
    if (rate > 0) printf(" (%.3g GFLOP/s)", rate);
    printf("%s\n", small_mode ? ", small shapes" : "");
    CHECK(own == ENGINE("packed") || own == ENGINE("tiled") || own == ENGINE("clblast") || own == ENGINE("host"));

    /* Every engine: the packed kernels, every tiled configuration that fits, CLBlast, host. */
    engine engines[32];
    int n = 0;
    engines[n++] = (engine){.e = ENGINE("packed"), .name = "packed"};
    engines[n++] = (engine){.e = ENGINE("packed"), .name = "packed, gemm_dot off, gemm_small 0", .no_dot = true};
    for (int i = 0; i < clg__gemm_tiled_count() && n < 30; i++) {
        const clg_gemm_tiled_config *cfg = clg__gemm_tiled_config(i);
        char d[64];
        clg__gemm_tiled_describe(cfg, d, sizeof d);
        clg_kernel *k = NULL;
        CHECK_OK(dev, clg__gemm_tiled_kernel(dev, cfg, CLG_GEMM_F32, &k));
        if (!k) {
            printf("  tiled %s does not fit %s: not run\n", d, info->name);
            continue;
        }
        engines[n] = (engine){.e = ENGINE("tiled"), .cfg = cfg, .opaque = clg__gemm_tiled_as_config(cfg)};
        snprintf(engines[n++].name, sizeof engines[0].name, "tiled %s", d);
    }
    engines[n++] = (engine){.e = ENGINE("clblast"), .name = "clblast"};
    /* The host's BLAS on the queue, where the device runs host functions (POCL). */
    if (ENGINE("host")->ready(dev, CLG_GEMM_F32)) engines[n++] = (engine){.e = ENGINE("host"), .name = "host"};
    else printf("  host: %s runs no host functions, or no CBLAS library: not run\n", info->name);
    char small_default[32];   /* the device's gemm_small, set back after each engine */
    snprintf(small_default, sizeof small_default, "%zu", clg__device_params(dev)->gemm_small);
    bool tiled_f64 = false;   /* a named-only tiled configuration has run in float64 */
    for (int i = 0; i < n; i++) {
        double t0 = clg__now();
        /* The device's own engine gets every case, and so does the one it leaves small
         * products to (the host's BLAS: the packed kernels); AUTO is those. */
        const clg_gemm_engine *heir = own->leaves ? ENGINE(own->instead) : NULL;
        bool mine = (engines[i].e == own || (heir && engines[i].e == heir)) &&
                    (own != ENGINE("tiled") || !strcmp(engines[i].name + 6, choice + 6));
        /* The packed kernels run one work-item per group: on a GPU-shaped device that is
         * slow, so there they get small cases only (as under CLG_TEST_SMALL). */
        bool slow = engines[i].e == ENGINE("packed") && clg__device_params(dev)->vector_float == 1;
        /* An engine that is neither the device's nor its tuner's candidate runs only where
         * the table names it, so it gets less: the packed kernels with gemm_dot off not
         * where they are slow, a tiled configuration float64 only if none before it had,
         * and CLBlast single products only. CLBlast's strided-batched routine is a second
         * program, which POCL takes 37 s to compile (its GEMM program 14 s); the
         * batches run where CLBlast is a candidate (rusticl's pass) and under Oclgrind
         * (oclgrind_test_ops_matmul_clblast). */
        bool named = !mine && !tuner_candidate(dev, engines[i].e);
        if (named && slow && engines[i].no_dot) {
            printf("  %-32s not run: slow here, and not the device's engine nor a candidate\n", engines[i].name);
            continue;
        }
        engines[i].single = named && engines[i].e == ENGINE("clblast");
        bool keep = small_mode;
        if (slow) small_mode = true;
        /* CLBlast in double only where it is the engine: its double program takes ~40 s
         * to compile on POCL, for a path nothing there uses. */
        bool f64 = info->fp64 && (engines[i].e != ENGINE("clblast") || own == ENGINE("clblast"));
        if (f64 && engines[i].cfg) { /* doubles take twice the local memory: it may not fit */
            clg_kernel *k = NULL;
            CHECK_OK(dev, clg__gemm_tiled_kernel(dev, engines[i].cfg, CLG_GEMM_F64, &k));
            f64 = k != NULL && !(named && tiled_f64);
            tiled_f64 = tiled_f64 || (named && f64);
        }
        CHECK_OK(dev, clg_device_set_param(dev, "gemm_dot", engines[i].no_dot ? "off" : "on"));
        /* The packed engine: every product with a row-major B up to the sizes here in one
         * gemm_small launch (on every device, whatever its default), or none. */
        CHECK_OK(dev, clg_device_set_param(dev, "gemm_small", engines[i].no_dot ? "0" : "1000000000"));
        sweep(dev, &engines[i], CLG_GEMM_F32, mine);
        if (f64 && !slow) sweep(dev, &engines[i], CLG_GEMM_F64, mine);
        /* 16-bit storage: the packed kernels convert as they pack and store, the others
         * compute on float32 copies (widen.c). Where the packed kernels are slow (not the
         * device's engine) float32 alone: each other type is a program that llvmpipe took
         * ~40 s to compile, for kernels the POCL pass runs in every type and case. */
        if (!slow) sweep(dev, &engines[i], CLG_GEMM_F16, mine);
        if (!slow) sweep(dev, &engines[i], CLG_GEMM_BF16, mine);
        edges(dev, &engines[i]);
        CHECK_OK(dev, clg_device_set_param(dev, "gemm_dot", "on"));
        CHECK_OK(dev, clg_device_set_param(dev, "gemm_small", small_default));
        small_mode = keep;
        printf("  %-32s %s%s%s%s %.1f s\n", engines[i].name, mine ? "all cases" : slow ? "small cases" : "a third",
               engines[i].single ? " (single products)" : "",
               f64 && !slow ? ", f32, f64" : ", f32", slow ? "" : ", f16, bf16", clg__now() - t0);
    }
    split_sweep(dev, NULL, "the device's engine");
    if (clg__device_params(dev)->vector_float > 1 && own != ENGINE("packed")) split_sweep(dev, ENGINE("packed"), "packed");
    /* the column bias: on the device's engine (every type), the tiled kernel (in its
     * write-out) where it is not the device's, the packed kernels where they are quick
     * here, and split over k */
    engine autob = {.e = NULL, .name = "the device's engine"};
    bias_sweep(dev, &autob, true);
    const clg_gemm_tiled_config *tc = NULL;
    for (int i = 0; i < clg__gemm_tiled_count() && !tc; i++) {
        clg_kernel *k = NULL;
        if (clg__gemm_tiled_kernel(dev, clg__gemm_tiled_config(i), CLG_GEMM_F32, &k) == CLG_OK && k)
            tc = clg__gemm_tiled_config(i);
    }
    relu_sweep(dev, &autob, true);
    if (tc) {
        engine te = {.e = ENGINE("tiled"), .cfg = tc, .opaque = clg__gemm_tiled_as_config(tc)};
        clg__gemm_tiled_describe(tc, te.name + snprintf(te.name, sizeof te.name, "tiled "), 64);
        bias_sweep(dev, &te, false);
        relu_sweep(dev, &te, false);
    }
    if (clg__device_params(dev)->vector_float > 1 && own != ENGINE("packed")) {
        engine pe = {.e = ENGINE("packed"), .name = "packed"};
        bias_sweep(dev, &pe, false);
        relu_sweep(dev, &pe, false);
    }
    if (own != ENGINE("host") && ENGINE("host")->ready(dev, CLG_GEMM_F32)) {
        engine he = {.e = ENGINE("host"), .name = "host"};
        relu_sweep(dev, &he, false);
    }
    engine se = {.e = NULL, .name = "the device's engine, split 3", .split = 3};
    gcase sb = {.ta = true, .tb = true, .m = 6, .n = 10, .k = 300, .batch = 1, .alpha = 2.0, .beta = 0.0,
                .nan_c = true, .col_bias = true};
    run_case(dev, &se, CLG_GEMM_F32, &sb);
    sb.relu = true, sb.beta = -0.5, sb.nan_c = false;   /* the sum applies it, after the bias */
    run_case(dev, &se, CLG_GEMM_F32, &sb);
    tiled_by_size(dev);
    packed_candidate(dev);
    host_leaves(dev);
    if (!small_mode) host_split(dev);
    mma_engine(dev);
    xmx_engine(dev);
    hostbf16_engine(dev);
    engine autoe = {.e = NULL, .name = "auto"};
    gcase c = {.ta = false, .tb = true, .m = 37, .n = 41, .k = 43, .batch = 1, .alpha = 1.0, .beta = 0.0};
    run_case(dev, &autoe, CLG_GEMM_F32, &c);
    argument_checks(dev);
    table_names(dev);
    CHECK(!strcmp(clg__clblast_status_name(-1017), "CLBlastInvalidDimension"));
    CHECK(!strcmp(clg__clblast_status_name(-5), "CL_OUT_OF_RESOURCES"));
    CHECK(!strcmp(clg__clblast_status_name(-2041), "CLBlastDatabaseError"));
    clg_device_close(dev);   /* clears CLBlast's program cache before the context goes */

    /* Tuning times products of 64^3: too long on a simulator. */
    if (!small_mode) {
        double t0 = clg__now();
        choice_and_cache();
        printf("  choice and cache %.1f s\n", clg__now() - t0);
    }
    return check_report("test_gemm");
}
