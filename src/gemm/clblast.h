/* clblast.h: the CLBlast engine's status names (clblast.c), for its test. */
#ifndef CLGRAD_GEMM_CLBLAST_H
#define CLGRAD_GEMM_CLBLAST_H

#include "gemm/engine.h"

extern const clg_gemm_engine clg__gemm_clblast_engine;

/* The name of a CLBlast status code ("CLBlastInvalidLeadDimA", or the OpenCL error's
 * name for the codes CLBlast shares with OpenCL). Never NULL. */
const char *clg__clblast_status_name(int status);

#endif
