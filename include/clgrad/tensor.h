/* clgrad/tensor.h: n-dimensional tensors on an OpenCL device.
 *
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) return 1;
 *   float host[6] = {1, 2, 3, 4, 5, 6};
 *   clg_tensor *x = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(2, 3), host);
 *   clg_tensor *y = clg_mul_scalar(clg_add(x, x), 0.5f);     // ops: clgrad/ops.h
 *   if (!y) fprintf(stderr, "%s\n", clg_device_error(dev));  // one check for the chain
 *   clg_tensor_print(y, stdout, "y");
 *   clg_device_close(dev);
 *
 * A tensor is a view (shape, strides and offset, in elements) of a pooled device
 * buffer. Views (reshape, permute, narrow, expand, ...) share the buffer; ops write
 * new contiguous tensors. Ops enqueue work and return at once; only reading values
 * to the host (clg_tensor_to_host, clg_tensor_item, clg_tensor_print) waits.
 *
 * Errors: a function that fails returns NULL (or a status) and records a message
 * naming the op and the shapes on the device (clg_device_error). A function given a
 * NULL tensor returns NULL at once, so a chain of calls can be checked at its end.
 *
 * OWNERSHIP. Every tensor belongs to the scope that was innermost when it was made.
 *   - clg_scope_begin(dev) opens a scope; clg_scope_end(dev) frees every tensor made
 *     in it (its values, its autograd history) in one call. A training step runs in
 *     a scope, so nothing it makes outlives it.
 *   - Tensors made outside any scope (parameters, say) live until clg_tensor_free or
 *     clg_device_close.
 *   - clg_tensor_keep(t) moves t to the enclosing scope (or out of scopes), so it
 *     survives the current scope's end. Its history stays behind: a tensor made by
 *     ops on the tape comes out detached (a leaf that requires no gradient, as
 *     clg_detach); a leaf keeps its requires_grad.
 *   - clg_tensor_free(t) frees t now. A tensor's gradient (clg_tensor_grad) belongs
 *     to the tensor, not to a scope, and goes with it.
 *   - Memory goes back to the device's pool, for the next step to reuse. Never use a
 *     tensor after its scope ended or after clg_device_close.
 */
#ifndef CLGRAD_TENSOR_H
#define CLGRAD_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "device.h"

#ifdef __cplusplus
#include <initializer_list>   /* CLG_SHAPE and CLG_AXES in C++ */
extern "C" {
#endif

#define CLG_MAX_DIMS 8

typedef enum clg_dtype {
    CLG_F32 = 0,   /* float32: the training type */
    CLG_F64 = 1,   /* float64: on devices with fp64 (gradient checks) */
    CLG_I32 = 2,   /* int32: labels and indices */
    /* 16-bit floats, stored and converted on every device (cl_khr_fp16 or not): IEEE
     * binary16, and bfloat16 (float32's top half). Host data is their bits (uint16_t).
     * Make, copy and cast them, read and write them (.npy, safetensors). Elementwise
     * ops, reductions, matmul and linear, convolutions, pooling, softmax, norms and
     * dropout compute in float32 and round each result once; losses are float32;
     * gradients cross casts. Mixed-precision training: clg_autocast_begin (ops.h) and
     * clg_trainer_options.precision (train.h). Index ops, sorting, upsampling and the
     * recurrent layers refuse them so far: cast first. */
    CLG_F16 = 3,
    CLG_BF16 = 4,
    CLG_DTYPE_COUNT
} clg_dtype;

CLG_API size_t clg_dtype_size(clg_dtype dtype);
CLG_API const char *clg_dtype_name(clg_dtype dtype);   /* "float32", ... */

/* The host's conversions, as the devices convert: float32 to 16 bits rounds to nearest,
 * ties to even (overflow to infinity, underflow to subnormals and zero, NaN stays NaN
 * with its sign, quieted); 16 bits to float32 is exact. */
CLG_API uint16_t clg_f32_to_f16(float f);
CLG_API float clg_f16_to_f32(uint16_t h);
CLG_API uint16_t clg_f32_to_bf16(float f);
CLG_API float clg_bf16_to_f32(uint16_t b);

/* Shapes and axes as literals: clg_zeros(dev, CLG_F32, CLG_SHAPE(64, 1000)). C++ has no
 * compound literals: there the sizes are an initializer list's, whose array lives to the
 * end of the call (sizes of an unsigned type need a cast there, as list initialisation
 * does not narrow). */
#ifdef __cplusplus
#define CLG_SHAPE(...) \
    (int)std::initializer_list<int64_t>{__VA_ARGS__}.size(), std::initializer_list<int64_t>{__VA_ARGS__}.begin()
#define CLG_AXES(...) (int)std::initializer_list<int>{__VA_ARGS__}.size(), std::initializer_list<int>{__VA_ARGS__}.begin()
#else
#define CLG_SHAPE(...) \
    (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]){__VA_ARGS__}
#define CLG_AXES(...) (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int)), (const int[]){__VA_ARGS__}
#endif

typedef struct clg_tensor clg_tensor;

/* ---- creation (shape: ndim sizes, ndim 0 is a scalar) ---------------------------- */
CLG_API clg_tensor *clg_empty(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape);
/* int64 index data (NumPy's, PyTorch's) as the int32 tensor index ops take; fails
 * naming the first value outside int32. */
CLG_API clg_tensor *clg_indices_from_int64(clg_device *dev, int ndim, const int64_t *shape, const int64_t *data);
/* Copies numel * dtype size bytes from host memory (row-major). */
CLG_API clg_tensor *clg_tensor_from_host(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape,
                                         const void *data);
CLG_API clg_tensor *clg_zeros(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape);
CLG_API clg_tensor *clg_ones(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape);
CLG_API clg_tensor *clg_full(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape, double value);
CLG_API clg_tensor *clg_scalar(clg_device *dev, clg_dtype dtype, double value);  /* 0-d */
/* start, start+step, ... < stop (> stop for a negative step), as NumPy's arange. */
CLG_API clg_tensor *clg_arange(clg_device *dev, clg_dtype dtype, double start, double stop, double step);
/* Counter-based random numbers (Philox-4x32-10) from the device's generator: the
 * same seed gives the same bits on every device. Uniform in [lo, hi); normal by
 * Box-Muller. Each call advances the generator by the numbers it used. */
CLG_API clg_tensor *clg_rand(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape, double lo, double hi);
CLG_API clg_tensor *clg_randn(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape, double mean,
                              double std);
/* The generator: a seed and a position in its stream (for checkpoints). */
CLG_API void clg_manual_seed(clg_device *dev, uint64_t seed);
CLG_API void clg_rng_get_state(const clg_device *dev, uint64_t *seed, uint64_t *offset);
CLG_API void clg_rng_set_state(clg_device *dev, uint64_t seed, uint64_t offset);

/* ---- what a tensor is -------------------------------------------------------------- */
CLG_API int clg_tensor_ndim(const clg_tensor *t);
CLG_API const int64_t *clg_tensor_shape(const clg_tensor *t);
CLG_API int64_t clg_tensor_dim(const clg_tensor *t, int axis);      /* axis < 0 counts from the end */
CLG_API const int64_t *clg_tensor_strides(const clg_tensor *t);     /* elements */
CLG_API int64_t clg_tensor_numel(const clg_tensor *t);
CLG_API clg_dtype clg_tensor_dtype(const clg_tensor *t);
CLG_API clg_device *clg_tensor_device(const clg_tensor *t);
CLG_API bool clg_tensor_is_contiguous(const clg_tensor *t);
/* "[2, 3]" into buf; returns buf. */
CLG_API const char *clg_shape_str(int ndim, const int64_t *shape, char *buf, size_t len);

/* ---- reading values (these wait for the device) ------------------------------------ */
/* Copies all numel elements, row-major, into dst (bytes must be numel * dtype size). */
CLG_API clg_status clg_tensor_to_host(const clg_tensor *t, void *dst, size_t bytes);
/* The value of a one-element tensor, as a double. */
CLG_API clg_status clg_tensor_item(const clg_tensor *t, double *value);
CLG_API clg_status clg_tensor_print(const clg_tensor *t, FILE *out, const char *name);

/* ---- views: no copy, share the buffer; differentiable ------------------------------ */
/* Same elements, new shape; one size may be -1. A view when the strides allow it
 * (always for contiguous tensors), else a copy, as torch.reshape. */
CLG_API clg_tensor *clg_reshape(clg_tensor *t, int ndim, const int64_t *shape);
CLG_API clg_tensor *clg_permute(clg_tensor *t, int ndim, const int *axes);
CLG_API clg_tensor *clg_transpose(clg_tensor *t, int axis0, int axis1);
/* Elements start .. start+length-1 along axis. */
CLG_API clg_tensor *clg_narrow(clg_tensor *t, int axis, int64_t start, int64_t length);
/* Python's t[..., start:stop:step, ...] along axis (step > 0; bounds clipped as Python does). */
CLG_API clg_tensor *clg_slice(clg_tensor *t, int axis, int64_t start, int64_t stop, int64_t step);
/* Broadcast size-1 axes (and new leading axes) to shape; -1 keeps a size. */
CLG_API clg_tensor *clg_expand(clg_tensor *t, int ndim, const int64_t *shape);
CLG_API clg_tensor *clg_squeeze(clg_tensor *t, int axis);      /* drop a size-1 axis */
CLG_API clg_tensor *clg_unsqueeze(clg_tensor *t, int axis);    /* insert a size-1 axis */
CLG_API clg_tensor *clg_flatten(clg_tensor *t, int start_axis, int end_axis);
/* A contiguous tensor with t's values: a view of t when t is contiguous, else a copy. */
CLG_API clg_tensor *clg_contiguous(clg_tensor *t);
/* A copy with another dtype (float <-> int truncates toward zero). Not differentiable
 * into int32. */
CLG_API clg_tensor *clg_cast(clg_tensor *t, clg_dtype dtype);
CLG_API clg_tensor *clg_clone(clg_tensor *t);

/* ---- in place: for updates outside autograd (no-grad regions, optimizers) ------------ */
/* These refuse (NULL result / error status) a tensor that needs a gradient while grad
 * mode is on, as PyTorch refuses in-place ops on leaves that require grad, and an
 * expanded view (stride 0: one element in several places; clone it first). */
CLG_API clg_status clg_copy_(clg_tensor *dst, const clg_tensor *src);      /* src broadcast to dst */
CLG_API clg_status clg_fill_(clg_tensor *dst, double value);
CLG_API clg_status clg_axpy_(clg_tensor *y, double alpha, const clg_tensor *x);  /* y += alpha * x */
CLG_API clg_status clg_scale_(clg_tensor *y, double alpha);                    /* y *= alpha */

/* ---- ownership (see the top of this file) ------------------------------------------- */
CLG_API void clg_scope_begin(clg_device *dev);
CLG_API void clg_scope_end(clg_device *dev);
CLG_API int clg_scope_depth(const clg_device *dev);   /* 0 outside any scope */
CLG_API clg_tensor *clg_tensor_keep(clg_tensor *t);
CLG_API void clg_tensor_free(clg_tensor *t);
/* Tensors alive on the device (for leak checks). */
CLG_API int64_t clg_tensor_live_count(const clg_device *dev);

/* Deprecated name (until 0.2): factories are named as PyTorch's (clg_zeros, clg_empty). */
#define clg_tensor_empty clg_empty

#ifdef __cplusplus
}
#endif
#endif
