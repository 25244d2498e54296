/* conv.h: conv2d's forward algorithms, for tests and benchmarks (clg_conv2d uses
 * CLG_CONV_GEMM; bench/RESULTS.md, "Convolution", says why). */
#ifndef CLGRAD_TENSOR_CONV_H
#define CLGRAD_TENSOR_CONV_H

#include "tensor_impl.h"

typedef enum clg_conv_algo {
    CLG_CONV_GEMM,    /* im2col of the whole batch, then one batched GEMM per group */
    CLG_CONV_DIRECT   /* one work-item per output element (cl_kernels/conv.cl conv2d_direct) */
} clg_conv_algo;

/* clg_conv2d with the forward computed by `algo`; the same checks, tape and backward. */
clg_tensor *clg__conv2d_with(clg_tensor *x, clg_tensor *w, clg_tensor *b, const clg_conv2d_params *p,
                             clg_conv_algo algo);

#endif
