/* clg__gemm against a plain triple loop in double: every transpose pair, sizes that are
 * not multiples of any tile, offsets, padded leading dimensions, strided batches,
 * alpha/beta not 0/1, float and double; elements of C outside the product must be left
 * alone. The device's own engine gets every case; the other engine (CLBlast on a CPU,
 * the packed kernels on a GPU) a smaller float set, so that a CPU run compiles
 * CLBlast's GEMM only once. Then the argument checks and the edge cases (k == 0,
 * beta == 0 over NaN, empty sizes). */
#include <math.h>
#include <string.h>

#include "check.h"
#include "device_impl.h"
#include "tensor/gemm.h"

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
} gcase;

/* Upload n host doubles as type into a new buffer. */
static clg_buffer *upload(clg_device *dev, clg_gemm_type type, const double *h, size_t n)
{
    size_t es = type == CLG_GEMM_F64 ? 8 : 4;
    clg_buffer *b = clg__buffer_alloc(dev, n * es);
    if (!b) return NULL;
    void *tmp = malloc(n * es);
    for (size_t i = 0; i < n; i++) {
        if (type == CLG_GEMM_F64) ((double *)tmp)[i] = h[i];
        else ((float *)tmp)[i] = (float)h[i];
    }
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
    if (type == CLG_GEMM_F32)
        for (size_t i = 0; i < n; i++) h[i] = (float)h[i];
}

static int run_case(clg_device *dev, clg_gemm_engine engine, clg_gemm_type type, const gcase *c)
{
    size_t ar = c->ta ? c->k : c->m, ac = c->ta ? c->m : c->k;   /* A as stored */
    size_t br = c->tb ? c->n : c->k, bc = c->tb ? c->k : c->n;
    size_t lda = ac + c->pad, ldb = bc + c->pad, ldc = c->n + c->pad;
    size_t sa = ar * lda + c->gap, sb = br * ldb + c->gap, sc = c->m * ldc + c->gap;
    size_t na = c->a_off + sa * c->batch, nb = c->b_off + sb * c->batch, nc = c->c_off + sc * c->batch;
    double *A = malloc(na * 8), *B = malloc(nb * 8), *C = malloc(nc * 8), *R = malloc(nc * 8),
           *S = malloc(nc * 8), *out = malloc(nc * 8);
    for (size_t i = 0; i < na; i++) A[i] = rnd();
    for (size_t i = 0; i < nb; i++) B[i] = rnd();
    for (size_t i = 0; i < nc; i++) C[i] = rnd();
    round_to(type, A, na);
    round_to(type, B, nb);
    round_to(type, C, nc);
    /* The reference, and for each element the sum of magnitudes that bounds its rounding. */
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
                S[at] = fabs(c->alpha) * mag + fabs(c->beta * C[at]);
                R[at] = c->alpha * s + c->beta * C[at];
            }
    clg_buffer *da = upload(dev, type, A, na), *db = upload(dev, type, B, nb), *dc = upload(dev, type, C, nc);
    int bad = 0;
    clg_status st = da && db && dc ? clg__gemm_on(dev, engine, type, c->ta, c->tb, c->m, c->n, c->k, c->alpha, da,
                                                  c->a_off, lda, sa, db, c->b_off, ldb, sb, c->beta, dc, c->c_off,
                                                  ldc, sc, c->batch)
                                   : clg_device_last_status(dev);
    size_t es = type == CLG_GEMM_F64 ? 8 : 4;
    void *raw = malloc(nc * es);
    if (!st) st = clg__read(dev, dc, 0, raw, nc * es);
    CHECK_MSG(st == CLG_OK, "%s", clg_device_error(dev));
    if (!st) {
        for (size_t i = 0; i < nc; i++) out[i] = type == CLG_GEMM_F64 ? ((double *)raw)[i] : ((float *)raw)[i];
        /* fp32: ~1e-4 of the magnitude for k <= 1024; fp64 must be nearly exact. */
        double tol = type == CLG_GEMM_F64 ? 1e-13 : 1e-4 * (c->k > 1024 ? (double)c->k / 1024 : 1);
        for (size_t i = 0; i < nc && bad < 3; i++) {
            double err = fabs(out[i] - R[i]);
            if (!(err <= tol * S[i] + 1e-30) || (S[i] == 0 && out[i] != R[i])) {
                fprintf(stderr, "  element %zu: got %.9g want %.9g (bound %.3g)\n", i, out[i], R[i], tol * S[i]);
                bad++;
            }
        }
    }
    CHECK_MSG(bad == 0, "%s %s %s%s m=%zu n=%zu k=%zu batch=%zu alpha=%g beta=%g offs=%zu,%zu,%zu pad=%zu gap=%zu",
              clg__gemm_engine_name(engine), type == CLG_GEMM_F64 ? "f64" : "f32", c->ta ? "A^T" : "A",
              c->tb ? " B^T" : " B", c->m, c->n, c->k, c->batch, c->alpha, c->beta, c->a_off, c->b_off, c->c_off,
              c->pad, c->gap);
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

/* Every transpose pair over shapes that hit every edge of the 6 x 16 / 6 x 8 tiles. */
static void sweep(clg_device *dev, clg_gemm_engine engine, clg_gemm_type type, bool full)
{
    static const size_t shapes[][3] = {
        {1, 1, 1}, {7, 33, 129}, {33, 7, 1}, {1, 129, 7}, {129, 1, 33}, {13, 17, 1000}, {64, 48, 32},
        {128, 10, 256}, {100, 130, 70},
    };
    size_t nshapes = sizeof shapes / sizeof shapes[0];
    for (size_t s = 0; s < nshapes; s++)
        for (int t = 0; t < 4; t++) {
            if (!full && (s + (size_t)t) % 3) continue; /* the other engine: a third of the cases */
            gcase c = {.ta = t & 1, .tb = t >> 1, .m = shapes[s][0], .n = shapes[s][1], .k = shapes[s][2],
                       .batch = 1, .alpha = 1.0, .beta = 0.0};
            if (s % 2) { /* odd shapes: offsets, padded ld, alpha/beta not 0/1 */
                c.alpha = -0.75;
                c.beta = 1.5;
                c.a_off = 3;
                c.b_off = 5;
                c.c_off = 7;
                c.pad = 3;
            }
            run_case(dev, engine, type, &c);
        }
    /* Strided batches, with gaps between the matrices. */
    gcase b1 = {.ta = false, .tb = true, .m = 9, .n = 20, .k = 11, .batch = 3, .alpha = 0.5, .beta = -2.0,
                .a_off = 1, .b_off = 2, .c_off = 3, .pad = 2, .gap = 5};
    run_case(dev, engine, type, &b1);
    gcase b2 = {.ta = true, .tb = false, .m = 31, .n = 7, .k = 40, .batch = 4, .alpha = 2.0, .beta = 0.0};
    run_case(dev, engine, type, &b2);
    if (full) { /* a big one: many work-items per batch, k across cache blocks */
        gcase big = {.ta = false, .tb = false, .m = 200, .n = 300, .k = 1030, .batch = 2, .alpha = 1.0, .beta = 0.25};
        run_case(dev, engine, type, &big);
    }
}

/* Shared operand across a batch (stride 0), as a linear layer applied per sample. */
static void shared_operand(clg_device *dev, clg_gemm_type type)
{
    size_t m = 5, n = 19, k = 9, batch = 3;
    double A[5 * 9], B[3 * 9 * 19], C[3 * 5 * 19];
    for (size_t i = 0; i < m * k; i++) A[i] = rnd();
    for (size_t i = 0; i < batch * k * n; i++) B[i] = rnd();
    round_to(type, A, m * k);
    round_to(type, B, batch * k * n);
    clg_buffer *da = upload(dev, type, A, m * k), *db = upload(dev, type, B, batch * k * n);
    size_t es = type == CLG_GEMM_F64 ? 8 : 4;
    clg_buffer *dc = clg__buffer_alloc(dev, batch * m * n * es);
    CHECK_OK(dev, clg__gemm(dev, type, false, false, m, n, k, 1.0, da, 0, k, 0, db, 0, n, k * n, 0.0, dc, 0, n,
                            m * n, batch));
    float f[3 * 5 * 19];
    CHECK_OK(dev, clg__read(dev, dc, 0, type == CLG_GEMM_F64 ? (void *)C : (void *)f, batch * m * n * es));
    int bad = 0;
    for (size_t b = 0; b < batch; b++)
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                double s = 0;
                for (size_t p = 0; p < k; p++) s += A[i * k + p] * B[b * k * n + p * n + j];
                double got = type == CLG_GEMM_F64 ? C[b * m * n + i * n + j] : f[b * m * n + i * n + j];
                if (fabs(got - s) > 1e-5) bad++;
            }
    CHECK_MSG(bad == 0, "shared A (stride 0): %d wrong", bad);
    clg__buffer_release(da);
    clg__buffer_release(db);
    clg__buffer_release(dc);
}

/* k == 0 scales C; beta == 0 overwrites NaN; m, n or batch 0 do nothing; bad arguments
 * are refused before anything runs, with a message that says which. */
static void edges(clg_device *dev, clg_gemm_engine engine)
{
    float host[12], out[12];
    for (int i = 0; i < 12; i++) host[i] = (float)i;
    clg_buffer *a = clg__buffer_alloc(dev, 12 * 4), *b = clg__buffer_alloc(dev, 12 * 4),
               *c = clg__buffer_alloc(dev, 12 * 4);
    CHECK_OK(dev, clg__write(dev, a, 0, host, sizeof host));
    CHECK_OK(dev, clg__write(dev, b, 0, host, sizeof host));
    CHECK_OK(dev, clg__write(dev, c, 0, host, sizeof host));
    /* k == 0: C = beta * C on the 2 x 3 block with ldc 4 only. */
    CHECK_OK(dev, clg__gemm_on(dev, engine, CLG_GEMM_F32, false, false, 2, 3, 0, 1.0, NULL, 0, 1, 0, NULL, 0, 1, 0,
                               -2.0, c, 1, 4, 0, 1));
    CHECK_OK(dev, clg__read(dev, c, 0, out, sizeof out));
    float want[12] = {0, -2, -4, -6, 4, -10, -12, -14, 8, 9, 10, 11};
    CHECK_MSG(!memcmp(out, want, sizeof out), "k == 0: %g %g %g %g", out[0], out[1], out[5], out[8]);
    /* beta == 0 with NaN in C: C = A * B exactly, no NaN. */
    float nan[12];
    for (int i = 0; i < 12; i++) nan[i] = NAN;
    CHECK_OK(dev, clg__write(dev, c, 0, nan, sizeof nan));
    CHECK_OK(dev, clg__gemm_on(dev, engine, CLG_GEMM_F32, false, false, 2, 2, 3, 1.0, a, 0, 3, 0, b, 0, 2, 0, 0.0,
                               c, 0, 2, 0, 1));
    CHECK_OK(dev, clg__read(dev, c, 0, out, sizeof out));
    /* [0 1 2; 3 4 5] * [0 1; 2 3; 4 5] = [10 13; 28 40] */
    CHECK_MSG(out[0] == 10 && out[1] == 13 && out[2] == 28 && out[3] == 40 && isnan(out[4]),
              "beta 0 over NaN: %g %g %g %g %g", out[0], out[1], out[2], out[3], out[4]);
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
    /* The device still works after refused calls: C was not touched by them. */
    CHECK_OK(dev, clg__read(dev, c, 0, out, sizeof out));
    CHECK(out[0] == 10 && out[3] == 40);
    clg__buffer_release(a);
    clg__buffer_release(b);
    clg__buffer_release(c);
}

int main(void)
{
    clg_device *dev = check_open_device();
    const clg_device_info *info = clg_device_get_info(dev);
    clg_gemm_engine own = clg__gemm_engine_for(dev);
    clg_gemm_engine other = own == CLG_GEMM_KERNEL ? CLG_GEMM_CLBLAST : CLG_GEMM_KERNEL;
    printf("test_gemm on %s: engine %s\n", info->name, clg__gemm_engine_name(own));
    CHECK(own == (info->type == CLG_DEVICE_CPU ? CLG_GEMM_KERNEL : CLG_GEMM_CLBLAST));
    sweep(dev, CLG_GEMM_AUTO, CLG_GEMM_F32, true);
    CHECK_MSG(info->fp64, "float64 is needed for gradient checks; %s has no cl_khr_fp64", info->name);
    if (info->fp64) sweep(dev, CLG_GEMM_AUTO, CLG_GEMM_F64, true);
    shared_operand(dev, CLG_GEMM_F32);
    edges(dev, own);
    /* The other engine, in float: on a CPU this compiles CLBlast's GEMM (~20 s cold). */
    sweep(dev, other, CLG_GEMM_F32, false);
    edges(dev, other);
    CHECK(!strcmp(clg__clblast_status_name(-1017), "CLBlastInvalidDimension"));
    CHECK(!strcmp(clg__clblast_status_name(-5), "CL_OUT_OF_RESOURCES"));
    CHECK(!strcmp(clg__clblast_status_name(-2041), "CLBlastDatabaseError"));
    clg_device_close(dev);
    return check_report("test_gemm");
}
