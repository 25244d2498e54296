/* engine.h: what a GEMM engine is: one row of the table (engines.c), one file each
 * (packed.c, tiled.c, clblast.c, host.c, mma.c). The dispatcher (dispatch.c) and the
 * tuner (tune.c) know engines only through these fields; an engine calls the device
 * layer and the helpers below, never another engine. CONTRIBUTING.md, "Adding a GEMM
 * engine", is the recipe.
 */
#ifndef CLGRAD_GEMM_ENGINE_H
#define CLGRAD_GEMM_ENGINE_H

#include "gemm/gemm.h"

/* A configuration of an engine that has several (the tiled kernels' shapes): opaque to
 * the dispatcher and the tuner, which only pass it back; text through describe/parse. */
struct clg_gemm_config { int v[12]; };

/* A program a candidate builds: cl_kernels/<program>.cl with these options. */
typedef struct clg_gemm_build {
    char program[32];
    char options[224];
} clg_gemm_build;

struct clg_gemm_engine {
    /* As the device table's `gemm` spells it (params.c), and the tuning cache names it. */
    const char *name;
    /* Tried before the device's engine for every product it takes (the matrix units,
     * 16-bit operands); asked for by name where it takes nothing, refuse() says why. */
    bool first;
    /* Reads and writes 16-bit storage itself; else 16-bit products run on float32
     * copies (widen.c). */
    bool stores16;
    /* Adds a column bias (clg_gemm_args.col_bias) as it stores C; else the dispatcher
     * fills C with it first or adds it after. */
    bool col_bias;
    /* Applies clg_gemm_args.relu as it stores C; else the dispatcher runs gemm_relu after. */
    bool relu;
    /* Where a product goes that this engine does not take or fit (the table's name);
     * NULL: nowhere (refused). */
    const char *instead;
    /* Whether the engine runs products of `type` on dev at all (a library found, a
     * validation passed). NULL: every type the device has. */
    bool (*ready)(clg_device *dev, clg_gemm_type type);
    /* Before slicing k and widening 16-bit operands: whether it computes g at all
     * (element types, sizes its interface takes, a graph capture). NULL: everything. */
    bool (*takes)(clg_device *dev, const clg_gemm_args *g);
    /* As the device's own engine (not asked by name): products it takes but leaves to
     * `instead` (the host's BLAS: small ones, whose call costs more than they compute);
     * as a `first` engine, to the device's own. NULL: none. */
    bool (*leaves)(clg_device *dev, const clg_gemm_args *g);
    /* After: whether its kernels' indexing holds g. NULL: everything. */
    bool (*fits)(clg_device *dev, const clg_gemm_args *g);
    /* The longest k one call may take (loop budgets); NULL: no limit. */
    size_t (*k_limit)(clg_device *dev, const clg_gemm_args *g);
    /* The product, checked (sizes non-zero, operands within their buffers); cfg NULL:
     * the engine's own choice. */
    clg_status (*run)(clg_device *dev, const clg_gemm_args *g, const clg_gemm_config *cfg);
    /* The error for a product asked of it by name that it does not take (NULL: a plain one). */
    clg_status (*refuse)(clg_device *dev, const clg_gemm_args *g);

    /* ---- tuning (NULL candidates: never a candidate) ---- */
    /* The configurations to time on dev (flags: CLG_GEMM_TUNE_*), into out; with
     * `fitting` only those that fit dev (may build them). Without configurations: 1 (out
     * left zero) where it is a candidate, else 0. */
    int (*candidates)(clg_device *dev, int flags, bool fitting, clg_gemm_config *out, int cap);
    /* A configuration as text and back (NULL: the engine has none). */
    void (*describe)(const clg_gemm_config *c, char *buf, size_t len);
    bool (*parse)(const char *text, clg_gemm_config *c);
    /* The configuration it runs `type` with on dev when not told (error recorded, false,
     * when none fits). */
    bool (*config_for)(clg_device *dev, clg_gemm_type type, clg_gemm_config *out);
    /* What its results depend on besides the device, for the tuning cache's key: its
     * kernel programs (space-separated names, hashed), an outside library's version. */
    const char *programs;
    void (*version)(char *buf, size_t len);
    /* The programs its float32 products build in configuration cfg (NULL for an engine
     * without configurations), into out: the tuner builds every candidate's side by side
     * before timing them (clg__programs_build). Returns how many; NULL: none to say. */
    int (*builds)(clg_device *dev, const clg_gemm_config *cfg, clg_gemm_build *out, int cap);

    /* ---- C = alpha sum over the batch of A[b] op(B[b]) + beta C into one C (conv's
     * weight gradient); NULL: not offered. ---- */
    bool (*sum_fits)(const clg_device *dev, const clg_gemm_args *g);
    clg_status (*sum)(clg_device *dev, const clg_gemm_args *g);
    /* ---- C = alpha op(A) . B + beta C with B's rows at g->b_rows (gemm.h,
     * clg__gemm_rows); NULL: not offered. sum and sum_fits take g->b_rows too where
     * rows is offered. ---- */
    bool (*rows_fits)(const clg_device *dev, const clg_gemm_args *g);
    clg_status (*rows)(clg_device *dev, const clg_gemm_args *g);
};

/* ---- the table (engines.c) ------------------------------------------------------------- */

int clg__gemm_engine_count(void);
const clg_gemm_engine *clg__gemm_engine_at(int i);   /* NULL out of range */

/* ---- for engines: per-device state (slots.c) ---------------------------------------- */

/* e's state on dev: `size` zeroed bytes on first use, freed (after release, when given)
 * when dev closes. NULL, with the error recorded, when out of memory. */
void *clg__gemm_engine_data(clg_device *dev, const clg_gemm_engine *e, size_t size,
                            void (*release)(clg_device *dev, void *data));
/* The configuration the tuner chose for e on dev (NULL: none), as the engine runs it
 * when not told one; set by the choice (choice.c). */
const clg_gemm_config *clg__gemm_preferred(clg_device *dev, const clg_gemm_engine *e);
void clg__gemm_prefer(clg_device *dev, const clg_gemm_engine *e, const clg_gemm_config *c);

/* ---- for engines: the gemm.cl program (gemm_cl.c) ---------------------------------------- */

/* The -D options gemm.cl is built with for g's types on dev (gemm_cl.c). */
const char *clg__gemm_cl_options(const clg_device *dev, const clg_gemm_args *g);
/* C = beta * C over m x n (x batch): what a product with k == 0 leaves, and what an
 * engine that reads C even when beta is 0 runs first. */
clg_status clg__gemm_scale(clg_device *dev, const clg_gemm_args *g);
/* alpha or beta as a kernel argument of g's compute type. */
clg_arg clg__gemm_scalar(clg_gemm_type type, double v);
/* C as a grid (clg_gemm_grid) for the kernels that store one (gemm.cl's and
 * gemm_tiled.cl's store_grid): whether g's grid is one they index with int (or none),
 * and the int8 argument they read it from: cells per slot, row length, rows and columns
 * kept, the step between slots, rows per slot, whether C is a grid, whether rows get the
 * bias (`bias`: g's bias, with the launch that adds it). */
bool clg__gemm_grid_fits(const clg_gemm_args *g);
clg_arg clg__gemm_grid_arg(const clg_gemm_args *g, bool bias);

/* ---- for engines: k split into slices run side by side (splitk.c) ----------------------- */

/* Whether g splits in `parts` slices of k: a float32 product alone (batch 1), 2 to
 * CLG_GEMM_SPLIT_MAX slices (gemm_split_sum's loop), k at least parts, m and n not zero. */
#define CLG_GEMM_SPLIT_MAX 64
bool clg__gemm_split_applies(const clg_gemm_args *g, int parts);
/* g (checked by the caller; clg__gemm_split_applies) as `parts` slices of k: run(dev, s,
 * ctx) computes them as one strided batch s (a batch stride along k, beta 0, C a float32
 * scratch, no column bias) and then once more for the remainder of an uneven split (batch
 * 1, beta 1, into slice 0); gemm.cl's gemm_split_sum then sums the slices into g's C with
 * alpha, beta and the column bias. g's other fields (B's row offsets) pass to run as given. */
typedef clg_status (*clg_gemm_slices_run)(clg_device *dev, const clg_gemm_args *s, void *ctx);
clg_status clg__gemm_split_with(clg_device *dev, const clg_gemm_args *g, int parts, clg_gemm_slices_run run,
                                void *ctx);

/* ---- the host's BLAS (host.c) ------------------------------------------------------------ */

/* How many parts the host engine splits g into over its threads (team.c) on dev: 1 where
 * the library runs threads of its own, or g is too small to share; at most dev's compute
 * units. */
int clg__gemm_host_parts(clg_device *dev, const clg_gemm_args *g);

/* The engines that split a product over those threads (host.c, hostbf16.c): */
/* Whether to split by C's rows (each part then packs all of B, n columns weighted wb)
 * rather than its columns (all of A, m rows weighted wa): the cheaper duplicate. */
bool clg__gemm_split_rows(int64_t m, int64_t n, int64_t wa, int64_t wb);
/* How many parts: at most the team's threads and dev's compute units, the split side's
 * blocks of `unit`, and one per 2^22 multiply-adds (a part then outlasts a helper's
 * wake-up). */
int clg__gemm_split_parts(clg_device *dev, const clg_gemm_args *g, bool by_rows, int64_t unit);
/* Part `part` of `parts` of an m x n product split by C's rows (by_rows) or columns in
 * whole blocks of `unit`: its sizes and the element offsets of its A, B and C from the
 * product's (lda, ldb, ldc; transposes as stored); false where it is empty. */
typedef struct clg_gemm_part { int64_t m, n, da, db, dc; } clg_gemm_part;
bool clg__gemm_part(int64_t m, int64_t n, bool ta, bool tb, int64_t lda, int64_t ldb, int64_t ldc, bool by_rows,
                    int64_t unit, int part, int parts, clg_gemm_part *out);

#endif
