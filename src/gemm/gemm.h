/* gemm.h: the matrix-product engine under every matmul, linear and conv layer.
 *
 *   // y[128x512] = x[128x784] . W^T, with W stored [512, 784] (a linear layer's forward)
 *   clg_status st = clg__gemm(dev, CLG_GEMM_F32, false, true, 128, 512, 784, 1.0,
 *                             x, 0, 784, 0, w, 0, 784, 0, 0.0, y, 0, 512, 0, 1);
 *
 * Five engines behind one call, one row each in one table (engines.c; what a row holds:
 * engine.h); the device's parameter table (`gemm`, params.c) names
 * one, or says "tune" (tune.c): time them on first use, keep the fastest that
 * computes correctly, remember the choice on disk. No op asks what kind of device it is.
 *   - packed (packed.c, cl_kernels/gemm.cl), for devices whose work-items are SIMD
 *     threads (POCL on a CPU): op(A) (and B, unless row-major) packed into panels, then
 *     a register-blocked 6 x 16 (float) / 6 x 8 (double) micro-kernel per work-item;
 *   - tiled (tiled.c, cl_kernels/gemm_tiled.cl), for devices whose work-items are
 *     SIMD lanes (GPUs, llvmpipe): work-groups share op(A)'s and op(B)'s tiles in local
 *     memory, each item keeps a block of results in registers; a handful of
 *     configurations (tile sizes, results per item), the tuner picks among those that
 *     fit the device;
 *   - clblast (clblast.c): CLBlastXgemm and CLBlastXgemmStridedBatched with its tuned parameters;
 *   - host (host.c): the host's CBLAS (OpenBLAS) run as a command of the queue, on
 *     devices whose buffers are host memory and that run host functions (POCL);
 *   - mma (mma.c): float16 and bfloat16 products on matrix units (NVIDIA's mma.sync
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

/* An engine: a row of the table (engines.c; its fields in engine.h). */
typedef struct clg_gemm_engine clg_gemm_engine;

/* The engine named `name` as the device table spells it ("packed", "tiled", "clblast",
 * "host", "mma"), or NULL. */
const clg_gemm_engine *clg__gemm_engine_find(const char *name);
const char *clg__gemm_engine_name(const clg_gemm_engine *e);   /* "auto" for NULL */

/* The engine clg__gemm uses on dev, from its parameter table's `gemm`: "packed",
 * "tiled", "clblast" or "host" as said; "tune" (the default on devices whose work-items
 * are SIMD lanes) times the candidates on first use, validates their results against a
 * host reference and keeps the fastest, cached on disk (tune.c). Never fails: a
 * tuning that finds nothing usable falls back to the packed kernels, with a warning. */
const clg_gemm_engine *clg__gemm_engine_for(clg_device *dev);

/* What clg__gemm runs on dev, for conformance tables and logs: "packed", "clblast", or
 * "tiled 64x64x16/4x4/v4/m0" (the tiled configuration); *gflops (when not NULL) gets the
 * float32 rate the tuner measured for it, 0 when it was configured, not measured. The
 * string lives as long as the device. */
const char *clg__gemm_choice(clg_device *dev, double *gflops);

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

/* ---- one checked call, on a chosen engine ------------------------------------------------ */

/* C's columns as cells of a grid: column j is slot j / (slot_rows * ws), then row r and
 * column c of that slot's slot_rows x ws cells; cells with r < rows and c < cols are
 * stored at C + row i's start (c_off + i * ldc) + slot * slot_step + r * cols + c, the
 * others dropped. A stride-1 convolution computes its outputs on the padded planes' grid
 * (src/tensor/conv_shift.c); so they land cropped, in [N, P, OH, OW] (ldc = OH * OW,
 * slot_step = P * OH * OW), with no pass of their own. */
typedef struct clg_gemm_grid {
    size_t slot_rows, ws, rows, cols, slot_step;
} clg_gemm_grid;

/* One call: sizes, operands, types. */
typedef struct clg_gemm_args {
    clg_gemm_type type;
    bool trans_a, trans_b;
    size_t m, n, k, batch;
    double alpha, beta;
    const clg_buffer *a, *b;
    clg_buffer *c;
    size_t a_off, lda, stride_a, b_off, ldb, stride_b, c_off, ldc, stride_c;
    bool c_f32;   /* 16-bit types: C is float32 (sums never rounded to 16 bits) */
    /* Only for clg__gemm_rows and clg__gemm_sum (NULL elsewhere): int32 offsets, one
     * per row of the stored B, where that row starts (from b_off + b * stride_b) instead
     * of at row * ldb: a convolution's input read shifted, with no column matrix. */
    const clg_buffer *b_rows;
    /* Only for clg__gemm_rows (zero elsewhere): C's columns as a grid (cols 0: plain
     * columns), and a bias added to each row of C after beta's term (with a grid only). */
    clg_gemm_grid grid;
    const clg_buffer *bias;
    size_t bias_off, bias_step;
    /* For clg__gemm (NULL for the others): one value per column of C, in C's type at
     * col_bias_off, added to every row of every batch entry after beta's term (a linear
     * layer's bias). Engines that add it as they store (col_bias) do; for the others the
     * dispatcher fills C with it and runs the product with beta 1 (beta 0), or adds it
     * after the product (other betas): the same sums either way. A 16-bit C takes a
     * column bias with beta 0 only (one rounding). */
    const clg_buffer *col_bias;
    size_t col_bias_off;
    /* For clg__gemm: C's stored values through ReLU, after beta's term and the column
     * bias (as cl_kernels/relu.cl computes it: NaN and -0 kept), by engines that apply it
     * as they store (relu), else by a pass after the product (gemm.cl gemm_relu). */
    bool relu;
} clg_gemm_args;

/* A configuration of an engine that has several (engine.h). */
typedef struct clg_gemm_config clg_gemm_config;

/* Check g as clg__gemm does, then run it on `engine` (NULL: the device's, with the
 * engines that take products first, the matrix units); in configuration `cfg` (NULL:
 * the engine's own, the tuned one where there is one). For tests, the benchmark. */
clg_status clg__gemm_run(clg_device *dev, const clg_gemm_engine *engine, const clg_gemm_config *cfg,
                         const clg_gemm_args *g);

/* The engine for g's product (its configuration in *cfg, or NULL; in *split the slices of
 * k it runs in, 0 for none: splitk.c): where the device's choice was tuned, its float32
 * products' shape class's (tune.h), tuned on the class's first product and cached like the
 * device's choice; else clg__gemm_engine_for's. */
const clg_gemm_engine *clg__gemm_engine_for_args(clg_device *dev, const clg_gemm_args *g, const clg_gemm_config **cfg,
                                                 int *split);
/* Whether g's ReLU (clg_gemm_args.relu) would be applied in the write-out of the engine
 * that runs g, with no pass of its own: where a ReLU after a product may be folded into
 * it eagerly (a linear layer followed by ReLU: src/nn/sequential.c). May tune g's class. */
bool clg__gemm_stores_relu(clg_device *dev, const clg_gemm_args *g);

/* What g's class runs on ("tiled 64x64x16/4x4/v4/m0"), the rate measured for it (0 where
 * not timed) and whether it was read from the cache; the device's choice where classes do
 * not apply. For tests and bench_matmul. */
const char *clg__gemm_class_choice(clg_device *dev, const clg_gemm_args *g, double *gflops, bool *cached);

/* C = alpha sum over b of A[b] . op(B[b]) + beta C into one C (c's batch stride unused):
 * a convolution's weight gradient summed over images without a product per image.
 * Whether the engine the device table names takes g so (the packed engine's dot
 * products, with gemm_dot on; A not transposed, B transposed, m or n at most 256, not
 * float16; the tiled engine's, batch 1 with B's rows at offsets, any k), and the product. */
bool clg__gemm_sum_fits(clg_device *dev, const clg_gemm_args *g);
clg_status clg__gemm_sum(clg_device *dev, const clg_gemm_args *g);

/* C = alpha op(A) . B + beta C (one product: batch 1) with B's rows at g->b_rows (B not
 * transposed; ldb unused): a stride-1 convolution over its zero-padded input
 * (src/tensor/conv_shift.c).
 * Every panel of 16 (float) columns is read whole: B's buffer must hold the columns past
 * n of the last panel (reads only). Whether the engine the device table names takes g so
 * (float32 and float64: the packed engine; the tiled, where the table says "tune" on
 * GPU-shaped devices), and the product. */
bool clg__gemm_rows_fits(clg_device *dev, const clg_gemm_args *g);
clg_status clg__gemm_rows(clg_device *dev, const clg_gemm_args *g);

#endif
