/* clblast.c: CLBlast, OpenCL's BLAS, behind the runtime seam (runtime.h): its GEMM calls
 * take OpenCL memory and queues, so they are made here; the engine that chooses them is
 * src/gemm/clblast.c. */
#include <clblast_c.h>

#include <stdio.h>

#include "capture.h"
#include "device_cl.h"

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
static CLBlastStatusCode call(clg_device *dev, const clg_blas_gemm *g, cl_event *ev)
{
    CLBlastLayout L = CLBlastLayoutRowMajor;
    CLBlastTranspose ta = transpose(g->trans_a), tb = transpose(g->trans_b);
    cl_mem a = clg__cl_mem(g->a), b = clg__cl_mem(g->b), c = clg__cl_mem(g->c);
    if (g->f64) {
        if (g->batch == 1)
            return CLBlastDgemm(L, ta, tb, g->m, g->n, g->k, g->alpha, a, g->a_off, g->lda, b, g->b_off, g->ldb,
                                g->beta, c, g->c_off, g->ldc, &dev->cl->queue, ev);
        return CLBlastDgemmStridedBatched(L, ta, tb, g->m, g->n, g->k, g->alpha, a, g->a_off, g->lda,
                                          g->stride_a, b, g->b_off, g->ldb, g->stride_b, g->beta, c, g->c_off,
                                          g->ldc, g->stride_c, g->batch, &dev->cl->queue, ev);
    }
    float alpha = (float)g->alpha, beta = (float)g->beta;
    if (g->batch == 1)
        return CLBlastSgemm(L, ta, tb, g->m, g->n, g->k, alpha, a, g->a_off, g->lda, b, g->b_off, g->ldb, beta,
                            c, g->c_off, g->ldc, &dev->cl->queue, ev);
    return CLBlastSgemmStridedBatched(L, ta, tb, g->m, g->n, g->k, alpha, a, g->a_off, g->lda, g->stride_a, b,
                                      g->b_off, g->ldb, g->stride_b, beta, c, g->c_off, g->ldc, g->stride_c,
                                      g->batch, &dev->cl->queue, ev);
}

int clg__clblast_gemm(clg_device *dev, const clg_blas_gemm *g, const char *fn)
{
    /* CLBlast enqueues its own kernels, out of a capture's sight: run the product, and
     * make an open capture fail, since a replay could not repeat it. */
    clg__cap_refuse(dev, "a product went to CLBlast (too large for clgrad's own GEMM kernels), whose launches a "
                         "graph cannot record");
    cl_event ev = NULL;
    CLBlastStatusCode s = call(dev, g, dev->prof.enabled ? &ev : NULL);
    if (s != CLBlastSuccess) {
        if (ev) clReleaseEvent(ev);
        return (int)s;
    }
    if (ev) clg__profile_launch(dev, clg__profile_slot(dev, fn), ev);
    return 0;
}

void clg__clblast_clear_cache(void) { CLBlastClearCache(); }

void clg__clblast_version(char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d.%d", CLBLAST_VERSION_MAJOR, CLBLAST_VERSION_MINOR, CLBLAST_VERSION_PATCH);
}
