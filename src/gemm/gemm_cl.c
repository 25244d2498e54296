/* gemm_cl.c: the gemm.cl program's build options, shared by the packed engine and by
 * gemm_scale (C = beta C), which the dispatcher runs for k == 0 and CLBlast before a
 * product with beta 0: one program per element type, whoever builds it first; and the
 * grid of C that the packed and tiled kernels store (clg__gemm_rows). */
#include <limits.h>

#include "gemm/engine.h"

/* -w: POCL's clang warns that float16 values passed to vload16/fma/store_row "change
 * the ABI" without AVX-512; those calls are inlined, so the warning is noise on stderr.
 * 16-bit operands compute as float (panels of float32), stored as TS (common.cl).
 * RMR 8 (gemm.cl: the packed engine's rows per micro-tile and dot-product columns) in
 * the one float32 and float64 program where the device table's gemm_rows says 8, so
 * that the packed products and the passes around them (scale, bias, ReLU, split sums)
 * share it: apart, an MLP's first step built gemm.cl twice, 0.3-0.45 s each on POCL. */
const char *clg__gemm_cl_options(const clg_device *dev, const clg_gemm_args *g)
{
    bool rows8 = clg__device_params(dev)->gemm_rows8;
    switch (g->type) {
    case CLG_GEMM_F64:
        return rows8 ? "-DT=double -DMR=6 -DNR=8 -DRMR=8 -cl-mad-enable -w" : "-DT=double -DMR=6 -DNR=8 -cl-mad-enable -w";
    case CLG_GEMM_F16:
        return g->c_f32 ? "-DT=float -DMR=6 -DNR=16 -DCLG_F16_STORE -DCLG_C_F32 -cl-mad-enable -w"
                        : "-DT=float -DMR=6 -DNR=16 -DCLG_F16_STORE -cl-mad-enable -w";
    case CLG_GEMM_BF16:
        return g->c_f32 ? "-DT=float -DMR=6 -DNR=16 -DCLG_BF16_STORE -DCLG_C_F32 -cl-mad-enable -w"
                        : "-DT=float -DMR=6 -DNR=16 -DCLG_BF16_STORE -cl-mad-enable -w";
    default:
        return rows8 ? "-DT=float -DMR=6 -DNR=16 -DRMR=8 -cl-mad-enable -w" : "-DT=float -DMR=6 -DNR=16 -cl-mad-enable -w";
    }
}

clg_arg clg__gemm_scalar(clg_gemm_type type, double v)
{
    return type == CLG_GEMM_F64 ? CLG_ARG_D(v) : CLG_ARG_F(v);
}

clg_status clg__gemm_scale(clg_device *dev, const clg_gemm_args *g)
{
    clg_kernel *k = clg__kernel_get(dev, "gemm", clg__gemm_cl_options(dev, g), "gemm_scale");
    if (!k) return dev->status;
    clg_arg args[] = {
        CLG_ARG_I(g->m), CLG_ARG_I(g->n), CLG_ARG_B(g->c), CLG_ARG_L(g->c_off), CLG_ARG_I(g->ldc),
        CLG_ARG_L(g->stride_c), clg__gemm_scalar(g->type, g->beta),
    };
    /* exact groups (not the driver's pick, one compile per matrix shape on POCL) */
    return clg__launch_rows3(dev, k, args, 7, g->n, g->m, g->batch);
}

bool clg__gemm_grid_fits(const clg_gemm_args *g)
{
    const clg_gemm_grid *q = &g->grid;
    return !q->cols || (q->slot_rows && q->ws && q->slot_rows * q->ws < INT_MAX && q->rows <= q->slot_rows &&
                        q->cols <= q->ws && q->slot_step < INT_MAX && g->ldc < INT_MAX);
}

clg_arg clg__gemm_grid_arg(const clg_gemm_args *g, bool bias)
{
    const clg_gemm_grid *q = &g->grid;
    const int64_t cg[8] = {(int64_t)(q->slot_rows * q->ws), (int64_t)q->ws, (int64_t)q->rows, (int64_t)q->cols,
                           (int64_t)q->slot_step, (int64_t)q->slot_rows, q->cols != 0, bias};
    return clg__arg_int8(cg, 8);
}
