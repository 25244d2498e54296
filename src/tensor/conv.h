/* conv.h: conv2d's forward algorithms, for tests and benchmarks (clg_conv2d uses
 * CLG_CONV_GEMM; bench/RESULTS.md, "Convolution", says why). */
#ifndef CLGRAD_TENSOR_CONV_H
#define CLGRAD_TENSOR_CONV_H

#include "tensor_impl.h"

typedef enum clg_conv_algo {
    CLG_CONV_GEMM,    /* im2col of the whole batch, then one batched GEMM per group */
    CLG_CONV_DIRECT   /* one work-item per output element (cl_kernels/conv.cl conv2d_direct) */
} clg_conv_algo;

/* Everything about one convolution's shapes. */
typedef struct conv_geo {
    int64_t N, C, H, W;      /* input */
    int64_t O, KH, KW, G;    /* weight [O, C/G, KH, KW], groups */
    int64_t OH, OW;          /* output */
    int64_t sh, sw, ph, pw, dh, dw;
} conv_geo;

/* The pieces of conv2d, off the tape, for conv_transpose2d (its forward is conv2d's
 * input gradient, its backward conv2d's forward and weight gradient): y [N, O, OH, OW]
 * from x; dx [N, C, H, W] from dy; dW from x and dy. dy and x contiguous. */
clg_tensor *clg__conv_forward(clg_tensor *x, clg_tensor *w, clg_tensor *b, const conv_geo *g, clg_conv_algo algo,
                              clg_tensor **cols);   /* cols: the column matrix kept, or NULL */
clg_tensor *clg__conv_grad_input(clg_tensor *w, clg_tensor *gy, const conv_geo *g);
/* Where a weight gradient goes: with t NULL a new tensor, returned; else t (w's .grad from
 * clg__grad_direct: contiguous, w's shape, float32 or float64), written over (beta 0) or
 * added to (beta 1, only where clg__conv_grad_weight_adds), and t returned (the caller's,
 * not a new reference). kept: the forward's columns or padded planes (n->saved[0]). */
typedef struct conv_into {
    clg_tensor *t;
    double beta;
} conv_into;
clg_tensor *clg__conv_grad_weight(clg_tensor *x, clg_tensor *w, clg_tensor *gy, const conv_geo *g, clg_tensor *kept,
                                  const conv_into *into);
bool clg__conv_grad_weight_adds(clg_tensor *x, const conv_geo *g, const clg_tensor *kept);

/* clg_conv2d with the forward computed by `algo`; the same checks, tape and backward. */
clg_tensor *clg__conv2d_with(clg_tensor *x, clg_tensor *w, clg_tensor *b, const clg_conv2d_params *p,
                             clg_conv_algo algo);

/* Stride-1 convolutions without a column matrix (conv_shift.c): whether the device
 * table's conv_shift and the GEMM engine take g's pass for dtype, and the passes (y;
 * dW shaped as w; dx [N, C, H, W]), NULL with the error recorded; the forward writes
 * y [N, O, OH, OW] and returns the status. The forward hands
 * out its padded input planes (a 1-D tensor) in *planes when asked, for the weight
 * gradient's `planes` (NULL: it pads x again). */
typedef enum clg_conv_pass { CLG_CONV_PASS_FORWARD, CLG_CONV_PASS_WEIGHT, CLG_CONV_PASS_INPUT } clg_conv_pass;
bool clg__conv_shift_ok(clg_device *dev, clg_dtype dtype, const conv_geo *g, clg_conv_pass pass);
clg_status clg__conv_shift_forward(clg_tensor *x, clg_tensor *w, clg_tensor *b, const conv_geo *g, clg_tensor *y,
                                   clg_tensor **planes);
clg_tensor *clg__conv_shift_grad_weight(clg_tensor *x, clg_tensor *w, clg_tensor *gy, const conv_geo *g,
                                        clg_tensor *planes, const conv_into *into);
clg_tensor *clg__conv_shift_grad_input(clg_tensor *w, clg_tensor *gy, const conv_geo *g);
/* Both gradients (both passes ok), dy padded once where one layout serves both. */
clg_status clg__conv_shift_backward(clg_tensor *x, clg_tensor *w, clg_tensor *gy, const conv_geo *g,
                                    clg_tensor *planes, const conv_into *into, clg_tensor **dw, clg_tensor **dx);

/* Runs `kernel` of conv.cl on exactly the 3-D range n[0] x n[1] x n[2]: work-group
 * sizes are divisors of the range, so kernels need no bounds check (on POCL an early
 * `return` for the items past the end stops the work-group loop from being vectorized:
 * a plain copy ran 3x slower with one). Groups span dimension 0 whole where they can,
 * then 1, then 2, up to ~1024 items: POCL vectorizes its loop over dimension 0 and pays
 * a few microseconds per group. Used by conv.c and pool.c. */
clg_status clg__conv_launch_grid(clg_device *dev, clg_dtype dtype, const char *kernel, const clg_arg *args,
                                 int nargs, const int64_t n[3]);

#endif
