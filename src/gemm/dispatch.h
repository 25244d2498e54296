/* dispatch.h: one product on a given engine (dispatch.c), under clg__gemm_run (gemm.c)
 * and the tuner (tune.c), which both name the engine. */
#ifndef CLGRAD_GEMM_DISPATCH_H
#define CLGRAD_GEMM_DISPATCH_H

#include "gemm/engine.h"

/* g's types, sizes and operands against their buffers, as clg__gemm documents them. */
clg_status clg__gemm_check(clg_device *dev, const clg_gemm_args *g);

/* An empty sum (k == 0): C = beta * C, plus the column bias where g has one. */
clg_status clg__gemm_empty_k(clg_device *dev, const clg_gemm_args *g);

/* The engine that takes g: e, or where e sends what it does not take (`instead`);
 * NULL where none does, with the refusal recorded where `refuse`. */
const clg_gemm_engine *clg__gemm_taker(clg_device *dev, const clg_gemm_engine *e, const clg_gemm_args *g,
                                        bool refuse);
/* The device's own engine for g, as clg__gemm runs it (the `first` engines aside): g's
 * class's choice, its configuration in *cfg and its split in *split (gemm.c), or where
 * that engine leaves g (small products), the one it leaves them to. */
const clg_gemm_engine *clg__gemm_own_engine(clg_device *dev, const clg_gemm_args *g, const clg_gemm_config **cfg,
                                            int *split);
/* Whether e applies g's ReLU as it stores C (one call: it fits, k within its limit, not
 * 16-bit); else the dispatcher runs the product without it and gemm_relu after. */
bool clg__gemm_relu_inside(clg_device *dev, const clg_gemm_engine *e, const clg_gemm_args *g);

/* g on engine e (not NULL) in configuration cfg (NULL: the engine's own): checked; k == 0
 * scales C; then e, or where e sends what it does not take (`instead`), in slices of k
 * past its k_limit, on float32 copies of 16-bit operands it does not store. */
clg_status clg__gemm_dispatch(clg_device *dev, const clg_gemm_engine *e, const clg_gemm_config *cfg,
                              const clg_gemm_args *g);

/* g on e (cfg) split over k in `parts` slices run side by side, summed into C
 * (splitk.c); where a split does not apply (parts < 2 or past CLG_GEMM_SPLIT_MAX (engine.h), k
 * shorter than parts, a batch, not float32), g as clg__gemm_dispatch runs it. */
clg_status clg__gemm_split_k(clg_device *dev, const clg_gemm_engine *e, const clg_gemm_config *cfg,
                             const clg_gemm_args *g, int parts);

#endif
