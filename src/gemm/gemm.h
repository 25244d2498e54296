/* gemm.h: the matrix-product engine under every matmul, linear and conv layer.
 *
 *   // y[128x512] = x[128x784] . W^T, with W stored [512, 784] (a linear layer's forward)
 *   clg_status st = clg__gemm(dev, CLG_GEMM_F32, false, true, 128, 512, 784, 1.0,
 *                             x, 0, 784, 0, w, 0, 784, 0, 0.0, y, 0, 512, 0, 1);
 *
 * Five engines behind one call; the device's parameter table (`gemm`, params.c) names
 * one, or says "tune" (gemm_tune.c): time them on first use, keep the fastest that
 * computes correctly, remember the choice on disk. No op asks what kind of device it is.
 *   - packed (gemm_kernel.c, cl_kernels/gemm.cl), for devices whose work-items are SIMD
 *     threads (POCL on a CPU): op(A) (and B, unless row-major) packed into panels, then
 *     a register-blocked 6 x 16 (float) / 6 x 8 (double) micro-kernel per work-item;
 *   - tiled (gemm_tiled.c, cl_kernels/gemm_tiled.cl), for devices whose work-items are
 *     SIMD lanes (GPUs, llvmpipe): work-groups share op(A)'s and op(B)'s tiles in local
 *     memory, each item keeps a block of results in registers; a handful of
 *     configurations (tile sizes, results per item), the tuner picks among those that
 *     fit the device;
 *   - CLBlast: CLBlastXgemm and CLBlastXgemmStridedBatched with its tuned parameters;
 *   - host (gemm_host.c): the host's CBLAS (OpenBLAS) run as a command of the queue, on
 *     devices whose buffers are host memory and that run host functions (POCL);
 *   - mma (gemm_mma.c): float16 and bfloat16 products on matrix units (NVIDIA's mma.sync
 *     from inline PTX), where the device table says the device has them.
 * Each program (per element type and configuration) serves every transpose and shape,
 * so a training step compiles one program, not one per shape.
 */
#ifndef CLGRAD_GEMM_GEMM_H
#define CLGRAD_GEMM_GEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "clgrad/tensor.h"
#include "device_impl.h"

/* The element type of A, B and C. 16-bit types are storage: products and sums are
 * float32, and each result is rounded once to the storage type (alpha, beta float32). */
typedef enum clg_gemm_type { CLG_GEMM_F32, CLG_GEMM_F64, CLG_GEMM_F16, CLG_GEMM_BF16 } clg_gemm_type;

/* The GEMM type of a float dtype. */
static inline clg_gemm_type clg__gemm_type_of(clg_dtype d)
{
    return d == CLG_F64 ? CLG_GEMM_F64 : d == CLG_F16 ? CLG_GEMM_F16 : d == CLG_BF16 ? CLG_GEMM_BF16 : CLG_GEMM_F32;
}
static inline bool clg__gemm_type_is_half(clg_gemm_type t) { return t == CLG_GEMM_F16 || t == CLG_GEMM_BF16; }

/* C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b] for b < batch, row-major.
 * op(X) = X or X^T (trans_a/trans_b). A is m x k after op (so stored k x m when trans_a), B is k x n after op,
 * C is m x n. Offsets, leading dimensions and batch strides are in ELEMENTS. Enqueues work and returns;
 * never waits (no clFinish, no host reads), except on the first call on a device whose
 * table says "tune" and whose choice is not cached yet: that call tunes (seconds). m, n, k or batch of 0: nothing to do (with k == 0, C = beta*C).
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

/* ---- engines, and the choice among them ---------------------------------------------- */

typedef enum clg_gemm_engine {
    CLG_GEMM_AUTO,     /* what clg__gemm uses: the device's engine (clg__gemm_engine_for) */
    CLG_GEMM_CLBLAST,  /* CLBlast */
    CLG_GEMM_PACKED,   /* clgrad's packed register-blocked kernels (cl_kernels/gemm.cl): CPUs */
    CLG_GEMM_TILED,    /* clgrad's local-memory tiled kernels (cl_kernels/gemm_tiled.cl): GPUs */
    CLG_GEMM_HOST,     /* the host's CBLAS on the device's queue (gemm_host.c): CPUs that run host functions */
    CLG_GEMM_MMA       /* matrix units, 16-bit operands only (gemm_mma.c, cl_kernels/gemm_mma.cl) */
} clg_gemm_engine;

/* The engine clg__gemm uses on dev, from its parameter table's `gemm`: "packed",
 * "tiled" or "clblast" as said; "tune" (the default on devices whose work-items are
 * SIMD lanes) times the candidates on first use, validates their results against a
 * host reference and keeps the fastest, cached on disk (gemm_tune.c). Never fails: a
 * tuning that finds nothing usable falls back to the packed kernels, with a warning. */
clg_gemm_engine clg__gemm_engine_for(clg_device *dev);

/* "auto", "clblast", "packed", "tiled", "host", "mma". */
const char *clg__gemm_engine_name(clg_gemm_engine engine);

/* What clg__gemm runs on dev, for conformance tables and logs: "packed", "clblast", or
 * "tiled 64x64x16/4x4/v4/m0" (the tiled configuration); *gflops (when not NULL) gets the
 * float32 rate the tuner measured for it, 0 when it was configured, not measured. The
 * string lives as long as the device. */
const char *clg__gemm_choice(clg_device *dev, double *gflops);

/* clg__gemm on a chosen engine (the same checks, the same semantics). */
clg_status clg__gemm_on(clg_device *dev, clg_gemm_engine engine, clg_gemm_type type, bool trans_a,
                        bool trans_b, size_t m, size_t n, size_t k, double alpha,
                        const clg_buffer *a, size_t a_off, size_t lda, size_t stride_a,
                        const clg_buffer *b, size_t b_off, size_t ldb, size_t stride_b,
                        double beta, clg_buffer *c, size_t c_off, size_t ldc, size_t stride_c,
                        size_t batch);

/* A configuration of the tiled kernel (gemm_tiled.cl's -D options): a group computes a
 * tm x tn block of C over k tiles of tk, each of its (tm/wm) x (tn/wn) work-items wm x wn
 * results (wm, wn: 1, 2, 4, 8 or 16); global loads of vw elements; map 0: an item's rows
 * strided by the group's extent, 1: consecutive; wide: local memory read as pairs of
 * floats (map 1, even wm and wn). Written "tmxtnxtk/wmxwn/vVW/mMAP" plus "w" if wide. */
typedef struct clg_gemm_tiled_config { int tm, tn, tk, wm, wn, vw, map, wide; } clg_gemm_tiled_config;

/* The configurations the tuner times, in the order used when nothing was measured. */
int clg__gemm_tiled_count(void);
const clg_gemm_tiled_config *clg__gemm_tiled_config(int i);   /* NULL out of range */
void clg__gemm_tiled_describe(const clg_gemm_tiled_config *c, char *buf, size_t len);
bool clg__gemm_tiled_parse(const char *s, clg_gemm_tiled_config *c); /* false: malformed or inconsistent */
/* The configuration the tiled engine uses on dev for `type`: the tuned one when it fits,
 * else the first of the list that fits the device and its compiled kernel. NULL, with
 * the error recorded, when none does. */
const clg_gemm_tiled_config *clg__gemm_tiled_for(clg_device *dev, clg_gemm_type type);

/* Choose the engine now by timing (what "tune" does on first use), for tests and tools:
 * read the cached choice, or time every candidate, adopt the fastest that computes
 * correctly and save it. A candidate that fails or computes wrongly is logged and
 * skipped, and the device's error is left as it was. Flags: */
#define CLG_GEMM_TUNE_QUICK 1   /* small shapes, and no CLBlast (tests); cached under its own key */
#define CLG_GEMM_TUNE_FORCE 2   /* ignore a cached choice */
clg_status clg__gemm_tune(clg_device *dev, int flags);
/* Where the current choice came from: 0 not chosen yet, 1 the parameter table, 2 timed
 * in this process, 3 read from the tuning cache. */
int clg__gemm_choice_origin(clg_device *dev);

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
    bool c_f32;   /* 16-bit types: C is float32 (sums never rounded to 16 bits) */
} clg_gemm_args;

/* Check g as clg__gemm does, then run it on `engine` (AUTO: the device's); for the
 * tiled engine in configuration `tiled` (NULL: clg__gemm_tiled_for). For tests, the
 * benchmark and the tuner. */
clg_status clg__gemm_run(clg_device *dev, clg_gemm_engine engine, const clg_gemm_tiled_config *tiled,
                         const clg_gemm_args *g);

clg_status clg__gemm_clblast(clg_device *dev, const clg_gemm_args *g);
/* C = alpha sum over b of A[b] . B[b]^T + beta C into one C (c's batch stride unused),
 * by the packed engine's dot products (gemm_kernel.c): a convolution's weight gradient
 * summed over images without a product per image. Whether dev's engine takes g so
 * (the packed engine with gemm_dot on; A not transposed, B transposed, m or n at most
 * 256, not float16), and the product. */
bool clg__gemm_dot_sum_fits(const clg_device *dev, const clg_gemm_args *g);
clg_status clg__gemm_dot_sum(clg_device *dev, const clg_gemm_args *g);
/* The host's BLAS (gemm_host.c): the library found ("libopenblas.so.0"), or NULL; whether
 * dev can run it (a library, and a device that runs host functions as commands);
 * whether it takes g (float32 or float64, sizes within CBLAS's int); and the product. */
const char *clg__gemm_host_library(void);
bool clg__gemm_host_available(clg_device *dev);
bool clg__gemm_host_fits(const clg_gemm_args *g);
clg_status clg__gemm_host(clg_device *dev, const clg_gemm_args *g);
/* The matrix-unit engine (gemm_mma.c), for float16 and bfloat16 operands where the
 * device table's `mma` is not "none": whether it is validated on dev for type (the first
 * call validates it: a few small products against the host's), whether it takes g, the
 * longest k one launch may take (gemm.c slices longer ones when C is float32), and the
 * product. clg__gemm uses it for every 16-bit product it takes; CLG_GEMM_MMA asked for
 * where it is absent or refused is an error. */
bool clg__gemm_mma_ready(clg_device *dev, clg_gemm_type type);
bool clg__gemm_mma_fits(const clg_device *dev, const clg_gemm_args *g);
size_t clg__gemm_mma_k_limit(const clg_device *dev);
clg_status clg__gemm_mma(clg_device *dev, const clg_gemm_args *g);
/* CLBlast ran on dev: its program cache is cleared when dev closes (gemm_tune.c). */
clg_status clg__gemm_note_clblast(clg_device *dev);
/* false when an operand's extent does not fit the tiled kernel's 32-bit indexing. */
bool clg__gemm_tiled_fits(const clg_gemm_args *g);
/* The compiled kernel of configuration c for type; *out NULL (and CLG_OK) when c does
 * not fit the device (group, item sizes, local memory), the compiled kernel's group
 * limit, or the type (float64 without cl_khr_fp64). An error only when the build fails. */
clg_status clg__gemm_tiled_kernel(clg_device *dev, const clg_gemm_tiled_config *c, clg_gemm_type type,
                                  clg_kernel **out);
clg_status clg__gemm_tiled(clg_device *dev, const clg_gemm_args *g, const clg_gemm_tiled_config *c);
/* false when an operand's extent does not fit the kernels' 32-bit in-matrix indexing
 * (then gemm.c uses CLBlast). */
bool clg__gemm_kernel_fits(const clg_gemm_args *g);
clg_status clg__gemm_kernel(clg_device *dev, const clg_gemm_args *g);
/* The longest k one call of the packed engine may take for g's m, n and batch, so that
 * no work-item loops past the device's item_loops (gemm.c slices longer ones). */
size_t clg__gemm_kernel_k_limit(const clg_device *dev, const clg_gemm_args *g);
/* 16-bit operands on an engine that computes only float32 or float64 (tiled, CLBlast):
 * widen A and B (and C when beta != 0) into float32 scratch, run g as float32 there,
 * round the results into C (gemm_widen.c). */
clg_status clg__gemm_widened(clg_device *dev, clg_gemm_engine engine, const clg_gemm_tiled_config *tiled,
                             const clg_gemm_args *g);
/* C = beta * C over m x n (x batch): what a product with k == 0 leaves. */
clg_status clg__gemm_scale(clg_device *dev, const clg_gemm_args *g);

/* The name of a CLBlast status code ("CLBlastInvalidLeadDimA", or the OpenCL error's
 * name for the codes CLBlast shares with OpenCL). Never NULL. */
const char *clg__clblast_status_name(int status);

#endif
