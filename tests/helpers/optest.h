/* optest.h: what the op tests share: inputs in several memory layouts, comparison
 * with a plain-C reference, and finite-difference gradient checks.
 *
 *   double x[6] = {...};
 *   clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(2, 3), x, OPTEST_PERMUTED);
 *   optest_close("exp permuted", clg_exp(t), want, 6, 1e-6, 1e-5);
 *
 *   optest_gradcheck(dev, "mul broadcast", fn, ctx, 2, (optest_input[]){{CLG_SHAPE(2,3)}, {CLG_SHAPE(3)}});
 */
#ifndef CLGRAD_TESTS_OPTEST_H
#define CLGRAD_TESTS_OPTEST_H

#include <stdbool.h>

#include "check.h"

/* How a test tensor's values sit in memory; every op must give the same results. */
typedef enum optest_layout {
    OPTEST_CONTIGUOUS,  /* row-major */
    OPTEST_PERMUTED,    /* stored with the last two axes swapped, viewed back (strides not row-major) */
    OPTEST_SLICED,      /* every other element of a larger buffer, at an offset (step-2 slice) */
    OPTEST_OFFSET,      /* row-major, but starting 3 elements into its buffer (a contiguous narrow) */
    OPTEST_LAYOUT_COUNT
} optest_layout;

extern const char *const optest_layout_names[OPTEST_LAYOUT_COUNT];

/* A tensor holding `values` (row-major, logical order) in the given layout. */
clg_tensor *optest_tensor(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape, const double *values,
                          optest_layout layout);

/* ---- what the device offers ------------------------------------------------------------------- */

/* Whether the tests use float64 on dev: the device has cl_khr_fp64, and CLG_TEST_FP64
 * is not 0. CLG_TEST_FP64=0 runs the float32 paths (the ones a device without float64
 * takes) on a device that has it, so that they can be tried anywhere. */
bool optest_fp64(clg_device *dev);
/* The most precise float type of the tests on dev: float64 where optest_fp64, else
 * float32. */
clg_dtype optest_precise(clg_device *dev);
/* The float types the tests cover on dev: float32, then float64 where optest_fp64.
 * Returns the count (1 or 2). */
int optest_float_dtypes(clg_device *dev, clg_dtype out[2]);
/* A comparison tolerance for dtype: `f64` for float64, `f32` for float32. */
static inline double optest_tol(clg_dtype dt, double f64, double f32) { return dt == CLG_F64 ? f64 : f32; }
/* Values as the device holds them in dtype: rounded to float for float32 (references
 * then start from the same inputs as the device). */
void optest_round(clg_dtype dt, double *v, int64_t n);
/* Small shapes for the simulators (CLG_TEST_SMALL=1, as the oclgrind label sets):
 * a test then covers every kernel on the fewest elements it can. */
bool optest_small(void);

/* How many launches clg__launch_1d makes for n work-items of kernel k on dev, from
 * the device's parameter table (clg__device_params) and the kernel's group limit, by
 * src/device/launch.c's rule: one launch where a group of at least group_1d_min (capped
 * by the group size) divides n; else whole groups of group_1d, then the tail. For the
 * tests that count launches: the count differs between devices. */
struct clg_kernel;
uint64_t optest_launches_1d(clg_device *dev, const struct clg_kernel *k, size_t n);

/* Deterministic values in [lo, hi) for inputs and references (xorshift, seeded). */
void optest_fill(double *v, int64_t n, double lo, double hi, uint64_t seed);

/* t's values as doubles (any dtype; row-major, logical order), NULL on failure. free() it. */
double *optest_read(clg_tensor *t);

/* Check t against expect: same element count, |t - e| <= atol + rtol |e| elementwise,
 * NaN where expected, equal infinities. Records a CHECK failure naming `what`. */
bool optest_close(const char *what, clg_tensor *t, const double *expect, int64_t n, double atol, double rtol);

/* ---- gradient checks -------------------------------------------------------------------------- */

/* The function under test: builds one tensor from the inputs (any shape). */
typedef clg_tensor *(*optest_fn)(clg_tensor **inputs, void *ctx);

typedef struct optest_input {
    int ndim;
    const int64_t *shape;
    double lo, hi;          /* value range; 0, 0 means [-1, 1) */
    bool constant;          /* no gradient wanted (indices, masks) */
    const double *values;   /* fixed values instead of random ones (may be NULL) */
    clg_dtype dtype;        /* CLG_I32 for index inputs (constant); else the check's float type */
} optest_input;

/* Central differences against clg_backward for the scalar sum(f(inputs) * w), w
 * random, for every element of every non-constant input (8 of each under the simulators,
 * CLG_TEST_SMALL: see gc_sample in optest.c), in every layout.
 * float64 where optest_fp64: eps 1e-6, atol 1e-5, rtol 1e-3 (as PyTorch's gradcheck);
 * else float32 (see optest_gradcheck_as). Every op on the tape is recorded for the
 * coverage test (CLG_GRAD_COVERAGE_DIR). */
bool optest_gradcheck(clg_device *dev, const char *what, optest_fn f, void *ctx, int n, const optest_input *inputs);
/* The same check in the given float type. float32 (for devices without float64, or
 * forced by CLG_TEST_FP64=0): eps 1e-3, atol 1e-3, rtol 1e-2. The loss is summed in
 * double on the host, and outputs that do not depend on the perturbed element cancel
 * exactly, so the noise of the numeric derivative is the float32 rounding of the few
 * outputs that do, over 2 eps: about 1e-4; the truncation error, eps^2 f''' / 6, is
 * below 1e-6. A gradient wrong by a few percent still fails (tests/test_gradcheck.c). */
bool optest_gradcheck_as(clg_device *dev, clg_dtype dtype, const char *what, optest_fn f, void *ctx, int n,
                         const optest_input *inputs);
/* While on, the numeric derivatives of a check are kept, and a later check of the same
 * name, function, float type and input values takes them instead of computing them
 * again: for the same checks repeated under device parameters that choose other
 * kernels (the backward's, or the forward's, which the op tests check against plain-C
 * references): their analytic gradients are each compared anew. Off frees them. */
void optest_gradcheck_keep(bool on);

#endif
