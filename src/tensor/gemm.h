/* gemm.h: the matrix-product engine under every matmul, linear and conv layer.
 *
 *   // y[128x512] = x[128x784] . W^T, with W stored [512, 784] (a linear layer's forward)
 *   clg_status st = clg__gemm(dev, CLG_GEMM_F32, false, true, 128, 512, 784, 1.0,
 *                             x, 0, 784, 0, w, 0, 784, 0, 0.0, y, 0, 512, 0, 1);
 *
 * Two engines behind one call (gemm.c chooses, per device, from its description):
 *   - CLBlast (GPUs and every device that is not a CPU): CLBlastXgemm and
 *     CLBlastXgemmStridedBatched with CLBlast's tuned parameters;
 *   - clgrad's own kernels for CPU devices (POCL): cl_kernels/gemm.cl packs A (and B,
 *     unless row-major) into panels and runs a register-blocked 6 x 16 (float) / 6 x 8
 *     (double) micro-kernel per work-item (gemm_kernel.c). One program per element type serves every
 *     transpose and shape, so a training step compiles one program, not one per shape.
 * The choice is derived from clg_device_get_info() on each call: no state is kept.
 */
#ifndef CLGRAD_TENSOR_GEMM_H
#define CLGRAD_TENSOR_GEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "device_impl.h"

typedef enum clg_gemm_type { CLG_GEMM_F32, CLG_GEMM_F64 } clg_gemm_type;

/* C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b] for b < batch, row-major.
 * op(X) = X or X^T (trans_a/trans_b). A is m x k after op (so stored k x m when trans_a), B is k x n after op,
 * C is m x n. Offsets, leading dimensions and batch strides are in ELEMENTS. Enqueues work and returns;
 * never waits (no clFinish, no host reads). m, n, k or batch of 0: nothing to do (with k == 0, C = beta*C).
 * Errors are recorded on dev (CLG_ERR_CLBLAST with CLBlast's status name, CLG_ERR_OPENCL, CLG_ERR_INVALID_ARGUMENT).
 *
 * Details: beta == 0 writes C without reading it (NaNs in C do not propagate), as BLAS
 * does. Every operand's extent (offset, batch strides, leading dimension) is checked
 * against its buffer's size before anything is enqueued, and batches of C must not
 * overlap (CLG_ERR_INVALID_ARGUMENT otherwise). C must not overlap A or B (not checked).
 * Batch strides may be 0 for A or B (one matrix shared by the whole batch). float64 on a
 * device without cl_khr_fp64 is CLG_ERR_DTYPE. */
clg_status clg__gemm(clg_device *dev, clg_gemm_type type, bool trans_a, bool trans_b,
                     size_t m, size_t n, size_t k, double alpha,
                     const clg_buffer *a, size_t a_off, size_t lda, size_t stride_a,
                     const clg_buffer *b, size_t b_off, size_t ldb, size_t stride_b,
                     double beta, clg_buffer *c, size_t c_off, size_t ldc, size_t stride_c,
                     size_t batch);

/* ---- for tests and benchmarks ------------------------------------------------------ */

typedef enum clg_gemm_engine {
    CLG_GEMM_AUTO,     /* what clg__gemm uses: the device's engine (clg__gemm_engine_for) */
    CLG_GEMM_CLBLAST,  /* CLBlast */
    CLG_GEMM_KERNEL    /* clgrad's packed register-blocked kernels (cl_kernels/gemm.cl) */
} clg_gemm_engine;

/* The engine clg__gemm picks on dev: CLG_GEMM_KERNEL on CPU devices, where CLBlast's
 * GPU-shaped kernels are slow and take ~20 s to compile, else CLG_GEMM_CLBLAST. */
clg_gemm_engine clg__gemm_engine_for(const clg_device *dev);

/* "auto", "clblast", "kernel". */
const char *clg__gemm_engine_name(clg_gemm_engine engine);

/* clg__gemm on a chosen engine (the same checks, the same semantics). */
clg_status clg__gemm_on(clg_device *dev, clg_gemm_engine engine, clg_gemm_type type, bool trans_a,
                        bool trans_b, size_t m, size_t n, size_t k, double alpha,
                        const clg_buffer *a, size_t a_off, size_t lda, size_t stride_a,
                        const clg_buffer *b, size_t b_off, size_t ldb, size_t stride_b,
                        double beta, clg_buffer *c, size_t c_off, size_t ldc, size_t stride_c,
                        size_t batch);

/* ---- between gemm.c and its engines ------------------------------------------------ */

/* One checked call: sizes are non-zero, every operand fits its buffer. */
typedef struct clg_gemm_args {
    clg_gemm_type type;
    bool trans_a, trans_b;
    size_t m, n, k, batch;
    double alpha, beta;
    const clg_buffer *a, *b;
    clg_buffer *c;
    size_t a_off, lda, stride_a, b_off, ldb, stride_b, c_off, ldc, stride_c;
} clg_gemm_args;

clg_status clg__gemm_clblast(clg_device *dev, const clg_gemm_args *g);
/* false when an operand's extent does not fit the kernels' 32-bit in-matrix indexing
 * (then gemm.c uses CLBlast). */
bool clg__gemm_kernel_fits(const clg_gemm_args *g);
clg_status clg__gemm_kernel(clg_device *dev, const clg_gemm_args *g);
/* C = beta * C over m x n (x batch): what a product with k == 0 leaves. */
clg_status clg__gemm_scale(clg_device *dev, const clg_gemm_args *g);

/* The name of a CLBlast status code ("CLBlastInvalidLeadDimA", or the OpenCL error's
 * name for the codes CLBlast shares with OpenCL). Never NULL. */
const char *clg__clblast_status_name(int status);

#endif
