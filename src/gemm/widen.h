/* widen.h: 16-bit operands as float32 scratch, for the engines that compute only in
 * float32 (widen.c); the dispatcher runs the product in between. */
#ifndef CLGRAD_GEMM_WIDEN_H
#define CLGRAD_GEMM_WIDEN_H

#include "gemm/gemm.h"

typedef struct clg_gemm_widened {
    clg_gemm_args g;           /* the float32 product to run */
    clg_buffer *a, *b, *c;     /* scratch (c NULL when C is float32 already: written in place) */
} clg_gemm_widened;

/* Widen g's A and B (and C when beta != 0) into scratch; w->g is the product to run. */
clg_status clg__gemm_widen(clg_device *dev, const clg_gemm_args *g, clg_gemm_widened *w);
/* After the product (its status st): round the results into g's C, free the scratch.
 * Returns st, or the rounding's error. */
clg_status clg__gemm_narrow(clg_device *dev, const clg_gemm_args *g, clg_gemm_widened *w, clg_status st);

#endif
