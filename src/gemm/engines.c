/* engines.c: the table of GEMM engines, the one place that lists them. The dispatcher
 * (dispatch.c) and the tuner (tune.c) go through it: an engine is its file and its row
 * here (CONTRIBUTING.md, "Adding a GEMM engine").
 *
 * The order is the tuner's: its candidates are timed in this order, the fast first, so
 * that the slow are dropped after one run (the host's BLAS, the tiled configurations,
 * CLBlast, then the packed kernels). Engines marked `first` (the matrix units) are tried
 * before the device's own engine for every product they take. */
#include <string.h>

#include "gemm/engine.h"

extern const clg_gemm_engine clg__gemm_host_engine, clg__gemm_tiled_engine, clg__gemm_clblast_engine,
    clg__gemm_packed_engine, clg__gemm_mma_engine, clg__gemm_hostbf16_engine;

static const clg_gemm_engine *const engines[] = {
    &clg__gemm_host_engine,     /* host.c: the host's CBLAS as a command of the queue */
    &clg__gemm_tiled_engine,    /* tiled.c: local-memory tiles (GPUs, llvmpipe) */
    &clg__gemm_clblast_engine,  /* clblast.c: CLBlast */
    &clg__gemm_packed_engine,   /* packed.c: packed panels, register blocks (CPUs) */
    &clg__gemm_mma_engine,      /* mma.c: matrix units, 16-bit operands */
    &clg__gemm_hostbf16_engine, /* hostbf16.c: the CPU's bfloat16 dot products */
};

int clg__gemm_engine_count(void) { return (int)(sizeof engines / sizeof *engines); }

const clg_gemm_engine *clg__gemm_engine_at(int i)
{
    return i >= 0 && i < clg__gemm_engine_count() ? engines[i] : NULL;
}

const clg_gemm_engine *clg__gemm_engine_find(const char *name)
{
    for (int i = 0; name && i < clg__gemm_engine_count(); i++)
        if (!strcmp(engines[i]->name, name)) return engines[i];
    return NULL;
}

const char *clg__gemm_engine_name(const clg_gemm_engine *e) { return e ? e->name : "auto"; }
