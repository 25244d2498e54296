/* clblast.c: the CLBlast engine (GPUs): CLBlastXgemm, or CLBlastXgemmStridedBatched
 * for batch > 1, with the parameters CLBlast's database holds for the device.
 *
 * CLBlast keeps its compiled programs in a process-wide cache, which must be emptied
 * before the device's context is released (engine state is freed at close, before the
 * context goes), else CLBlast releases them later against a dead context. */
#include <clblast_c.h>

#include <stdio.h>

#include "gemm/clblast.h"

const char *clg__clblast_status_name(int status)
{
    switch (status) {
    case CLBlastSuccess: return "CLBlastSuccess";
    case CLBlastNotImplemented: return "CLBlastNotImplemented";
    case CLBlastInvalidMatrixA: return "CLBlastInvalidMatrixA";
    case CLBlastInvalidMatrixB: return "CLBlastInvalidMatrixB";
    case CLBlastInvalidMatrixC: return "CLBlastInvalidMatrixC";
    case CLBlastInvalidVectorX: return "CLBlastInvalidVectorX";
    case CLBlastInvalidVectorY: return "CLBlastInvalidVectorY";
    case CLBlastInvalidDimension: return "CLBlastInvalidDimension";
    case CLBlastInvalidLeadDimA: return "CLBlastInvalidLeadDimA";
    case CLBlastInvalidLeadDimB: return "CLBlastInvalidLeadDimB";
    case CLBlastInvalidLeadDimC: return "CLBlastInvalidLeadDimC";
    case CLBlastInvalidIncrementX: return "CLBlastInvalidIncrementX";
    case CLBlastInvalidIncrementY: return "CLBlastInvalidIncrementY";
    case CLBlastInsufficientMemoryA: return "CLBlastInsufficientMemoryA";
    case CLBlastInsufficientMemoryB: return "CLBlastInsufficientMemoryB";
    case CLBlastInsufficientMemoryC: return "CLBlastInsufficientMemoryC";
    case CLBlastInsufficientMemoryX: return "CLBlastInsufficientMemoryX";
    case CLBlastInsufficientMemoryY: return "CLBlastInsufficientMemoryY";
    case CLBlastInsufficientMemoryTemp: return "CLBlastInsufficientMemoryTemp";
    case CLBlastInvalidBatchCount: return "CLBlastInvalidBatchCount";
    case CLBlastInvalidOverrideKernel: return "CLBlastInvalidOverrideKernel";
    case CLBlastMissingOverrideParameter: return "CLBlastMissingOverrideParameter";
    case CLBlastInvalidLocalMemUsage: return "CLBlastInvalidLocalMemUsage";
    case CLBlastNoHalfPrecision: return "CLBlastNoHalfPrecision";
    case CLBlastNoDoublePrecision: return "CLBlastNoDoublePrecision";
    case CLBlastInvalidVectorScalar: return "CLBlastInvalidVectorScalar";
    case CLBlastInsufficientMemoryScalar: return "CLBlastInsufficientMemoryScalar";
    case CLBlastDatabaseError: return "CLBlastDatabaseError";
    case CLBlastUnknownError: return "CLBlastUnknownError";
    case CLBlastUnexpectedError: return "CLBlastUnexpectedError";
    default: break;
    }
    /* The codes from -1 to -69 are OpenCL's own errors, passed through. */
    return status < 0 && status > -100 ? clg_cl_error_name(status) : "CLBlastUnknownStatus";
}

static CLBlastTranspose transpose(bool t)
{
    return t ? CLBlastTransposeYes : CLBlastTransposeNo;
}

/* One CLBlast call; ev is set when profiling wants the event. */
static CLBlastStatusCode call(clg_device *dev, const clg_gemm_args *g, cl_event *ev)
{
    CLBlastLayout L = CLBlastLayoutRowMajor;
    CLBlastTranspose ta = transpose(g->trans_a), tb = transpose(g->trans_b);
    cl_mem a = g->a->mem, b = g->b->mem, c = g->c->mem;
    if (g->type == CLG_GEMM_F64) {
        if (g->batch == 1)
            return CLBlastDgemm(L, ta, tb, g->m, g->n, g->k, g->alpha, a, g->a_off, g->lda, b, g->b_off, g->ldb,
                                g->beta, c, g->c_off, g->ldc, &dev->queue, ev);
        return CLBlastDgemmStridedBatched(L, ta, tb, g->m, g->n, g->k, g->alpha, a, g->a_off, g->lda,
                                          g->stride_a, b, g->b_off, g->ldb, g->stride_b, g->beta, c, g->c_off,
                                          g->ldc, g->stride_c, g->batch, &dev->queue, ev);
    }
    float alpha = (float)g->alpha, beta = (float)g->beta;
    if (g->batch == 1)
        return CLBlastSgemm(L, ta, tb, g->m, g->n, g->k, alpha, a, g->a_off, g->lda, b, g->b_off, g->ldb, beta,
                            c, g->c_off, g->ldc, &dev->queue, ev);
    return CLBlastSgemmStridedBatched(L, ta, tb, g->m, g->n, g->k, alpha, a, g->a_off, g->lda, g->stride_a, b,
                                      g->b_off, g->ldb, g->stride_b, beta, c, g->c_off, g->ldc, g->stride_c,
                                      g->batch, &dev->queue, ev);
}

/* Process-wide: another open device that used CLBlast recompiles its programs on its
 * next call. The alternative is CLBlast releasing programs of a context already gone. */
static void release(clg_device *dev, void *data)
{
    (void)dev, (void)data;
    CLBlastClearCache();
}

static clg_status run(clg_device *dev, const clg_gemm_args *g, const clg_gemm_config *cfg)
{
    (void)cfg;
    /* BLAS says C is not read when beta is 0. CLBlast 1.5.3's small-size direct kernel
     * was seen to honour that on POCL, but nothing documents it for every kernel path
     * (direct, indirect with its padded copy of C, batched), and a NaN left in a fresh
     * pooled buffer must never leak into a result: zero C first (one cheap pass). */
    /* Only sizes past the tiled kernels' 32-bit indexing get here while capturing: run
     * them, and make the capture fail, since a replay could not repeat them. */
    if (clg__capturing(dev))
        clg__cap_refuse(dev, "a product too large for clgrad's own GEMM kernels went to CLBlast, whose launches a "
                             "graph cannot record");
    /* CLBlast runs here: its cache is cleared when dev closes. */
    clg_status st = clg__gemm_engine_data(dev, &clg__gemm_clblast_engine, 1, release) ? CLG_OK : dev->status;
    if (!st && g->beta == 0.0) st = clg__gemm_scale(dev, g);
    if (st) return st;
    cl_event ev = NULL;
    CLBlastStatusCode s = call(dev, g, dev->prof.enabled ? &ev : NULL);
    const char *fn = g->type == CLG_GEMM_F64 ? (g->batch == 1 ? "CLBlastDgemm" : "CLBlastDgemmStridedBatched")
                                             : (g->batch == 1 ? "CLBlastSgemm" : "CLBlastSgemmStridedBatched");
    if (s != CLBlastSuccess) {
        if (ev) clReleaseEvent(ev);
        return clg__fail(dev, CLG_ERR_CLBLAST, "%s(%s%s, m=%zu n=%zu k=%zu, lda=%zu ldb=%zu ldc=%zu, batch=%zu) "
                         "on %s: %s (%d)", fn, g->trans_a ? "A^T" : "A", g->trans_b ? " B^T" : " B", g->m, g->n,
                         g->k, g->lda, g->ldb, g->ldc, g->batch, clg_device_get_info(dev)->name,
                         clg__clblast_status_name(s), (int)s);
    }
    if (ev) clg__profile_launch(dev, clg__profile_slot(dev, fn), ev);
    return CLG_OK;
}

/* A graph records the launches clgrad enqueues; CLBlast enqueues its own, which no
 * capture sees (a replay without them silently skipped every product). While a capture
 * is open, products go to the tiled kernels instead (and back here only when too large
 * for them: run() then makes the capture fail). */
static bool takes(clg_device *dev, const clg_gemm_args *g)
{
    (void)g;
    return !clg__capturing(dev);
}

/* Where the device table's gemm_tiles says so, and not in the quick tuning of tests
 * (its compile takes long). */
static int candidates(clg_device *dev, int flags, bool fitting, clg_gemm_config *out, int cap)
{
    (void)fitting, (void)out;
    return clg__device_params(dev)->gemm_tiles && !(flags & CLG_GEMM_TUNE_QUICK) && cap > 0;
}

static void version(char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d.%d", CLBLAST_VERSION_MAJOR, CLBLAST_VERSION_MINOR, CLBLAST_VERSION_PATCH);
}

const clg_gemm_engine clg__gemm_clblast_engine = {
    .name = "clblast",
    .instead = "tiled",   /* while capturing */
    .takes = takes,
    .run = run,
    .candidates = candidates,
    .version = version,
};
