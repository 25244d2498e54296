/* half.h: float16 and bfloat16 on the host (half.c: these and the public clg_f32_to_f16
 * family of clgrad/tensor.h), below the tensors and the GEMM engines, which both convert. */
#ifndef CLGRAD_DEVICE_HALF_H
#define CLGRAD_DEVICE_HALF_H

#include <stdint.h>

#include "clgrad/tensor.h"

/* A 16-bit float's value, and a value as one (through float32), as the device converts. */
double clg__half_to_double(clg_dtype d, uint16_t v);
uint16_t clg__half_from_double(clg_dtype d, double v);

#endif
