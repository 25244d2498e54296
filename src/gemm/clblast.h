/* clblast.h: the CLBlast engine (clblast.c); its calls and status names are the
 * device's (src/device/clblast.c, runtime.h). */
#ifndef CLGRAD_GEMM_CLBLAST_H
#define CLGRAD_GEMM_CLBLAST_H

#include "gemm/engine.h"

extern const clg_gemm_engine clg__gemm_clblast_engine;

#endif
