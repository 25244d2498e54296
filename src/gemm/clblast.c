/* clblast.c: the CLBlast engine (GPUs): CLBlastXgemm, or CLBlastXgemmStridedBatched
 * for batch > 1, with the parameters CLBlast's database holds for the device. The calls
 * themselves take OpenCL's types: src/device/clblast.c makes them (runtime.h).
 *
 * CLBlast keeps its compiled programs in a process-wide cache, which must be emptied
 * before the device's context is released (engine state is freed at close, before the
 * context goes), else CLBlast releases them later against a dead context. */
#include "gemm/clblast.h"

/* Process-wide: another open device that used CLBlast recompiles its programs on its
 * next call. The alternative is CLBlast releasing programs of a context already gone. */
static void release(clg_device *dev, void *data)
{
    (void)dev, (void)data;
    clg__clblast_clear_cache();
}

static clg_status run(clg_device *dev, const clg_gemm_args *g, const clg_gemm_config *cfg)
{
    (void)cfg;
    /* BLAS says C is not read when beta is 0. CLBlast 1.5.3's small-size direct kernel
     * was seen to honour that on POCL, but nothing documents it for every kernel path
     * (direct, indirect with its padded copy of C, batched), and a NaN left in a fresh
     * pooled buffer must never leak into a result: zero C first (one cheap pass). */
    /* Only sizes past the tiled kernels' 32-bit indexing get here while capturing:
     * clg__clblast_gemm runs them and makes the capture fail (runtime.h). */
    /* CLBlast runs here: its cache is cleared when dev closes. */
    clg_status st = clg__gemm_engine_data(dev, &clg__gemm_clblast_engine, 1, release) ? CLG_OK : dev->status;
    if (!st && g->beta == 0.0) st = clg__gemm_scale(dev, g);
    if (st) return st;
    const char *fn = g->type == CLG_GEMM_F64 ? (g->batch == 1 ? "CLBlastDgemm" : "CLBlastDgemmStridedBatched")
                                             : (g->batch == 1 ? "CLBlastSgemm" : "CLBlastSgemmStridedBatched");
    clg_blas_gemm b = {.f64 = g->type == CLG_GEMM_F64, .trans_a = g->trans_a, .trans_b = g->trans_b, .m = g->m,
                       .n = g->n, .k = g->k, .batch = g->batch, .alpha = g->alpha, .beta = g->beta, .a = g->a,
                       .b = g->b, .c = g->c, .a_off = g->a_off, .lda = g->lda, .stride_a = g->stride_a,
                       .b_off = g->b_off, .ldb = g->ldb, .stride_b = g->stride_b, .c_off = g->c_off, .ldc = g->ldc,
                       .stride_c = g->stride_c};
    int s = clg__clblast_gemm(dev, &b, fn);
    if (s) {
        return clg__fail(dev, CLG_ERR_CLBLAST, "%s(%s%s, m=%zu n=%zu k=%zu, lda=%zu ldb=%zu ldc=%zu, batch=%zu) "
                         "on %s: %s (%d)", fn, g->trans_a ? "A^T" : "A", g->trans_b ? " B^T" : " B", g->m, g->n,
                         g->k, g->lda, g->ldb, g->ldc, g->batch, clg_device_get_info(dev)->name,
                         clg__clblast_status_name(s), s);
    }
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

const clg_gemm_engine clg__gemm_clblast_engine = {
    .name = "clblast",
    .instead = "tiled",   /* while capturing */
    .takes = takes,
    .run = run,
    .candidates = candidates,
    .version = clg__clblast_version,
};
