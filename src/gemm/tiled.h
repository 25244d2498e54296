/* tiled.h: the tiled engine's configurations (tiled.c), for its tests and the benchmark;
 * the dispatcher and the tuner see them only as clg_gemm_config (engine.h). */
#ifndef CLGRAD_GEMM_TILED_H
#define CLGRAD_GEMM_TILED_H

#include "gemm/engine.h"

/* A configuration of the tiled kernel (gemm_tiled.cl's -D options): a group computes a
 * tm x tn block of C over k tiles of tk, each of its (tm/wm) x (tn/wn) work-items wm x wn
 * results (wm, wn: 1, 2, 4, 8 or 16); global loads of vw elements; map 0: an item's rows
 * strided by the group's extent, 1: consecutive; wide: local memory read as pairs of
 * floats (map 1, even wm and wn). Written "tmxtnxtk/wmxwn/vVW/mMAP" plus "w" if wide. */
typedef struct clg_gemm_tiled_config { int tm, tn, tk, wm, wn, vw, map, wide, dbuf; } clg_gemm_tiled_config;

extern const clg_gemm_engine clg__gemm_tiled_engine;

/* The configurations the tuner times, in the order used when nothing was measured. */
int clg__gemm_tiled_count(void);
const clg_gemm_tiled_config *clg__gemm_tiled_config(int i);   /* NULL out of range */
void clg__gemm_tiled_describe(const clg_gemm_tiled_config *c, char *buf, size_t len);
bool clg__gemm_tiled_parse(const char *s, clg_gemm_tiled_config *c); /* false: malformed or inconsistent */
/* As the engine's opaque configuration, for clg__gemm_run. */
clg_gemm_config clg__gemm_tiled_as_config(const clg_gemm_tiled_config *c);
/* The compiled kernel of configuration c for type; *out NULL (and CLG_OK) when c does
 * not fit the device (group, item sizes, local memory), the compiled kernel's group
 * limit, or the type (float64 without cl_khr_fp64). An error only when the build fails. */
clg_status clg__gemm_tiled_kernel(clg_device *dev, const clg_gemm_tiled_config *c, clg_gemm_type type,
                                  clg_kernel **out);
/* The configuration the engine runs g on when not told one: the device's (tuned or
 * first fitting), or for a product inside a quarter of one of its tiles the smallest that
 * fits. NULL, with the error recorded, when none does or a build fails. */
const clg_gemm_tiled_config *clg__gemm_tiled_by_size(clg_device *dev, const clg_gemm_args *g);

#endif
