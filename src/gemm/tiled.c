/* tiled.c: clgrad's GEMM engine for GPU-shaped devices (cl_kernels/gemm_tiled.cl):
 * a work-group per TM x TN block of C, op(A)'s and op(B)'s tiles staged in local memory
 * over k, WM x WN results per work-item in registers.
 *
 * A configuration is the kernel's shape (tile sizes, results per item, vector width,
 * item mapping), fixed at compile time with -D options: one program per configuration
 * and element type, shared by every transpose and size. The configurations below are
 * the few the tuner (tune.c) times; one that does not fit a device (its group
 * larger than the device or the compiled kernel allows, its tiles larger than local
 * memory) is skipped, never launched.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "gemm/tiled.h"

/* In order of preference when nothing was measured (gemm=tiled forced): the first that
 * fits the device is used. Measured on llvmpipe (8-lane AVX2, groups of at most 32
 * items), whose every load is a scalar loop over the lanes: as many results per item as
 * its registers allow, local memory read in pairs; 16 x 16 per item on 64 x 128 tiles ran
 * 256^3 at 2.1 GFLOP/s, 8 x 8 per item 0.57, 4 x 4 0.26, CLBlast 0.15 (bench_matmul). */
static const clg_gemm_tiled_config configs[] = {
    /* tm  tn  tk wm  wn vw map wide dbuf */
    {64, 64, 16, 4, 4, 4, 0, 0, 0},      /* 256 items: the GPU classic (CLBlast's defaults are alike) */
    {128, 128, 16, 8, 8, 4, 1, 1, 0},    /* 256 items of 8 x 8: large GPUs */
    {32, 32, 16, 4, 4, 4, 0, 0, 0},      /* 64 items */
    {64, 128, 16, 16, 16, 4, 1, 1, 0},   /* 32 items of 16 x 16: llvmpipe */
    {64, 64, 16, 16, 8, 4, 1, 1, 0},     /* 32 items of 16 x 8: twice the groups */
    {16, 16, 16, 4, 4, 4, 0, 0, 0},      /* 16 items: small devices */
    {64, 64, 16, 4, 4, 4, 0, 0, 1},      /* the GPU classic double-buffered (DBUF) */
    {128, 128, 16, 8, 8, 4, 1, 0, 1},    /* large GPUs double-buffered: 33 KB of local tiles */
};

int clg__gemm_tiled_count(void) { return (int)(sizeof configs / sizeof configs[0]); }

const clg_gemm_tiled_config *clg__gemm_tiled_config(int i)
{
    return i >= 0 && i < clg__gemm_tiled_count() ? &configs[i] : NULL;
}

void clg__gemm_tiled_describe(const clg_gemm_tiled_config *c, char *buf, size_t len)
{
    snprintf(buf, len, "%dx%dx%d/%dx%d/v%d/m%d%s", c->tm, c->tn, c->tk, c->wm, c->wn, c->vw, c->map,
             c->wide ? "w" : c->dbuf ? "d" : "");
}

static bool pow2_upto(int x, int max) { return x >= 1 && x <= max && (x & (x - 1)) == 0; }

bool clg__gemm_tiled_parse(const char *s, clg_gemm_tiled_config *c)
{
    char tail[4] = "";
    clg_gemm_tiled_config x = {0};
    int got = sscanf(s, "%dx%dx%d/%dx%d/v%d/m%d%3s", &x.tm, &x.tn, &x.tk, &x.wm, &x.wn, &x.vw, &x.map, tail);
    if (got < 7 || (got == 8 && strcmp(tail, "w") && strcmp(tail, "d"))) return false;
    x.wide = got == 8 && tail[0] == 'w';
    x.dbuf = got == 8 && tail[0] == 'd';
    if (x.tm <= 0 || x.tn <= 0 || x.tk <= 0 || x.tm > 1024 || x.tn > 1024 || x.tk > 1024 ||
        !pow2_upto(x.wm, 16) || !pow2_upto(x.wn, 16) || !pow2_upto(x.vw, 8) || (x.map != 0 && x.map != 1) ||
        x.tm % x.wm || x.tn % x.wn || x.tk % x.vw || x.tm % x.vw || x.tn % x.vw ||
        (x.wide && (x.map != 1 || x.wm % 2 || x.wn % 2 || x.vw < 2)))
        return false;
    /* The group loads whole tiles in equal shares (WIDE: in pairs of rows too). */
    int nt = x.tm / x.wm * (x.tn / x.wn);
    if (x.tm * x.tk / x.vw % nt || x.tn * x.tk / x.vw % nt ||
        (x.wide && (x.tm / 2 * x.tk / x.vw % nt || x.tn / 2 * x.tk / x.vw % nt)))
        return false;
    *c = x;
    return true;
}

static size_t esize(clg_gemm_type type) { return type == CLG_GEMM_F64 ? sizeof(double) : sizeof(float); }

static size_t items_m(const clg_gemm_tiled_config *c) { return (size_t)(c->tm / c->wm); }
static size_t items_n(const clg_gemm_tiled_config *c) { return (size_t)(c->tn / c->wn); }

/* Pairs of floats read as 64-bit words (float only: a double is one already). */
static bool wide(const clg_gemm_tiled_config *c, clg_gemm_type t) { return c->wide && t == CLG_GEMM_F32; }
/* Local rows padded by one element (staggering banks), or two to keep pairs aligned. */
static size_t lpad(const clg_gemm_tiled_config *c, clg_gemm_type t) { return wide(c, t) ? 2 : 1; }

/* Bytes of the two local tiles (gemm_tiled.cl's TK x LA and TK x LB arrays): checked
 * against the device before compiling; the compiled kernel's own need is in k->local. */
static size_t local_a(const clg_gemm_tiled_config *c, clg_gemm_type t)
{
    return (c->dbuf ? 2 : 1) * (size_t)c->tk * ((size_t)c->tm + lpad(c, t)) * esize(t);
}
static size_t local_b(const clg_gemm_tiled_config *c, clg_gemm_type t)
{
    return (c->dbuf ? 2 : 1) * (size_t)c->tk * ((size_t)c->tn + lpad(c, t)) * esize(t);
}

/* rows: the kernel that reads B's rows at offsets (-DROWS=1: clg__gemm_rows, clg__gemm_sum),
 * a program of its own, built on a convolution's first use. -w: as for gemm.cl, POCL's
 * clang warns that double8 / float16 values passed to the (inlined) store_row "change the
 * ABI" without AVX-512: noise on stderr. */
static void options(const clg_gemm_tiled_config *c, clg_gemm_type type, bool rows, char *buf, size_t len)
{
    snprintf(buf, len, "-DT=%s -DTM=%d -DTN=%d -DTK=%d -DWM=%d -DWN=%d -DVW=%d -DMAP=%d -DWIDE=%d -DLPAD=%zu "
             "-DDBUF=%d%s -cl-mad-enable -w", type == CLG_GEMM_F64 ? "double" : "float", c->tm, c->tn, c->tk, c->wm,
             c->wn, c->vw, c->map, wide(c, type), lpad(c, type), c->dbuf, rows ? " -DROWS=1" : "");
}

/* What can be said before compiling: the group and the tiles against the device. */
static bool fits_device(const clg_device *dev, const clg_gemm_tiled_config *c, clg_gemm_type type)
{
    const clg_device_params *p = clg__device_params(dev);
    size_t rn = items_n(c), rm = items_m(c);
    return rn * rm <= p->max_group && rn <= p->max_item[0] && rm <= p->max_item[1] &&
           local_a(c, type) + local_b(c, type) <= p->local_mem;
}

static clg_status kernel_for(clg_device *dev, const clg_gemm_tiled_config *c, clg_gemm_type type, bool rows,
                             clg_kernel **out)
{
    *out = NULL;
    if (type == CLG_GEMM_F64 && !clg_device_get_info(dev)->fp64) return CLG_OK;
    if (!fits_device(dev, c, type)) return CLG_OK;
    char opts[176];
    options(c, type, rows, opts, sizeof opts);
    clg_kernel *k = clg__kernel_get(dev, "gemm_tiled", opts, "gemm_tiled");
    if (!k) return dev->status;
    /* The compiled kernel may allow fewer items per group than the device (registers). */
    if (items_n(c) * items_m(c) <= k->wg_max) *out = k;
    return CLG_OK;
}

clg_status clg__gemm_tiled_kernel(clg_device *dev, const clg_gemm_tiled_config *c, clg_gemm_type type,
                                  clg_kernel **out)
{
    return kernel_for(dev, c, type, false, out);
}

static bool fits(clg_device *dev, const clg_gemm_args *g)
{
    (void)dev;
    /* gemm_tiled.cl indexes rows, columns and leading dimensions with int (a tile's
     * corner may pass the end by up to a tile), offsets with long. */
    size_t lim = INT_MAX / 2;
    return g->m < lim && g->n < lim && g->k < lim && g->lda < lim && g->ldb < lim && g->ldc < lim;
}

/* g on configuration c: the plain kernel, or where g has B's row offsets the ROWS one,
 * reading them from entry rows_off on (a slice of k's). */
static clg_status launch_config(clg_device *dev, const clg_gemm_args *g, const clg_gemm_tiled_config *c,
                                size_t rows_off)
{
    char cfg[64];
    clg__gemm_tiled_describe(c, cfg, sizeof cfg);
    clg_kernel *k;
    clg_status st = kernel_for(dev, c, g->type, g->b_rows != NULL, &k);
    if (st) return st;
    if (!k)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                         "clg__gemm (tiled %s, %s, m=%zu n=%zu k=%zu): the configuration does not fit %s "
                         "(group of %zu items, %zu bytes of local memory)", cfg,
                         g->type == CLG_GEMM_F64 ? "float64" : "float32", g->m, g->n, g->k,
                         clg_device_get_info(dev)->name, items_n(c) * items_m(c),
                         local_a(c, g->type) + local_b(c, g->type));
    if (!fits(dev, g))
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                         "clg__gemm (tiled %s, m=%zu n=%zu k=%zu, lda=%zu ldb=%zu ldc=%zu): sizes beyond the "
                         "kernel's 32-bit indexing", cfg, g->m, g->n, g->k, g->lda, g->ldb, g->ldc);
    clg_arg args[] = {
        CLG_ARG_I(g->m), CLG_ARG_I(g->n), CLG_ARG_I(g->k), CLG_ARG_I(g->trans_a), CLG_ARG_I(g->trans_b),
        CLG_ARG_B(g->a), CLG_ARG_L(g->a_off), CLG_ARG_I(g->lda), CLG_ARG_L(g->stride_a),
        CLG_ARG_B(g->b), CLG_ARG_L(g->b_off), CLG_ARG_I(g->ldb), CLG_ARG_L(g->stride_b),
        CLG_ARG_B(g->c), CLG_ARG_L(g->c_off), CLG_ARG_I(g->ldc), CLG_ARG_L(g->stride_c),
        clg__gemm_scalar(g->type, g->alpha), clg__gemm_scalar(g->type, g->beta),
        CLG_ARG_B(g->col_bias ? g->col_bias : g->c), CLG_ARG_L(g->col_bias_off), CLG_ARG_I(g->col_bias != NULL),
        CLG_ARG_I(g->relu),
        /* ROWS only (gemm_tiled.cl's cg as gemm.cl's store_grid reads it) */
        CLG_ARG_B(g->b_rows ? g->b_rows : g->c), CLG_ARG_I(rows_off), clg__gemm_grid_arg(g, g->bias != NULL),
        CLG_ARG_B(g->bias ? g->bias : g->c), CLG_ARG_L(g->bias_off), CLG_ARG_I(g->bias_step),
    };
    int nargs = (int)(sizeof args / sizeof args[0]) - (g->b_rows ? 0 : 6);
    size_t tm = (size_t)c->tm, tn = (size_t)c->tn;
    size_t local[3] = {items_n(c), items_m(c), 1};
    size_t global[3] = {(g->n + tn - 1) / tn * local[0], (g->m + tm - 1) / tm * local[1], g->batch};
    return clg__launch(dev, k, args, nargs, 3, global, local);
}

static clg_status run_config(clg_device *dev, const clg_gemm_args *g, const clg_gemm_tiled_config *c)
{
    return launch_config(dev, g, c, 0);
}

/* ---- the engine's row ------------------------------------------------------------------- */

_Static_assert(sizeof(clg_gemm_tiled_config) <= sizeof(clg_gemm_config), "a tiled configuration fits a clg_gemm_config");

clg_gemm_config clg__gemm_tiled_as_config(const clg_gemm_tiled_config *c)
{
    clg_gemm_config x = {{0}};   /* the rest zero: configurations compare whole (memcmp) */
    memcpy(&x, c, sizeof *c);
    return x;
}

static clg_gemm_tiled_config from_config(const clg_gemm_config *c)
{
    clg_gemm_tiled_config x;
    memcpy(&x, c, sizeof x);
    return x;
}

/* Per device: the configuration each type runs with when not told (float32, float64),
 * resolved once for the tuner's preference it was resolved with. */
typedef struct tiled_state {
    bool resolved[2];
    clg_gemm_tiled_config tiled_for[2];
    bool had_pref;
    clg_gemm_config pref;
} tiled_state;

/* The configuration the tiled engine uses on dev for `type`: the tuned one when it fits,
 * else the first of the list that fits the device and its compiled kernel. NULL, with
 * the error recorded, when none does. */
static const clg_gemm_tiled_config *tiled_for(clg_device *dev, clg_gemm_type type)
{
    tiled_state *s = clg__gemm_engine_data(dev, &clg__gemm_tiled_engine, sizeof(tiled_state), NULL);
    if (!s) return NULL;
    const clg_gemm_config *pref = clg__gemm_preferred(dev, &clg__gemm_tiled_engine);
    if (s->had_pref != (pref != NULL) || (pref && memcmp(pref, &s->pref, sizeof *pref))) {
        s->resolved[0] = s->resolved[1] = false;   /* tuned anew */
        s->had_pref = pref != NULL;
        if (pref) s->pref = *pref;
    }
    int ti = type == CLG_GEMM_F64;
    if (s->resolved[ti]) return &s->tiled_for[ti];
    clg_kernel *k = NULL;
    clg_status st = CLG_OK;
    if (pref) {
        clg_gemm_tiled_config c = from_config(pref);
        st = clg__gemm_tiled_kernel(dev, &c, type, &k);
        if (!st && k) s->tiled_for[ti] = c;
    }
    for (int i = 0; !st && !k && i < clg__gemm_tiled_count(); i++) {
        st = clg__gemm_tiled_kernel(dev, clg__gemm_tiled_config(i), type, &k);
        if (!st && k) s->tiled_for[ti] = *clg__gemm_tiled_config(i);
    }
    if (st) return NULL;
    if (!k) {
        clg__fail(dev, type == CLG_GEMM_F64 && !clg_device_get_info(dev)->fp64 ? CLG_ERR_DTYPE : CLG_ERR_INVALID_ARGUMENT,
                  "clg__gemm (tiled, %s): no configuration of gemm_tiled.cl fits %s (max group %zu, local memory %llu)",
                  type == CLG_GEMM_F64 ? "float64" : "float32", clg_device_get_info(dev)->name,
                  clg__device_params(dev)->max_group, (unsigned long long)clg__device_params(dev)->local_mem);
        return NULL;
    }
    s->resolved[ti] = true;
    return &s->tiled_for[ti];
}

static bool config_for(clg_device *dev, clg_gemm_type type, clg_gemm_config *out)
{
    const clg_gemm_tiled_config *c = tiled_for(dev, type);
    if (c) *out = clg__gemm_tiled_as_config(c);
    return c != NULL;
}

/* Padded work: the elements of C that a launch of c's groups computes for g. */
static size_t padded(const clg_gemm_tiled_config *c, const clg_gemm_args *g)
{
    size_t tm = (size_t)c->tm, tn = (size_t)c->tn;
    return (g->m + tm - 1) / tm * tm * ((g->n + tn - 1) / tn * tn);
}

/* A product that lies inside one tile of c and fills at most a quarter of it runs on the
 * list's smallest configuration where that fits the device: a fraction of one group's
 * padded work, over groups of fewer items (on llvmpipe, tuned to 64 x 128 tiles, an
 * RNN's gradient checks of 3 x 8 products took 29 s, 12 s on 16 x 16 tiles). Larger
 * products keep c: more, smaller groups would be a choice for the tuner to measure. */
const clg_gemm_tiled_config *clg__gemm_tiled_by_size(clg_device *dev, const clg_gemm_args *g)
{
    const clg_gemm_tiled_config *c = tiled_for(dev, g->type), *small = NULL;
    if (!c) return NULL;
    for (int i = 0; i < clg__gemm_tiled_count(); i++)
        if (!small || configs[i].tm * configs[i].tn < small->tm * small->tn) small = &configs[i];
    if (g->m > (size_t)c->tm || g->n > (size_t)c->tn || 4 * padded(small, g) > padded(c, g)) return c;
    clg_kernel *k = NULL;
    if (clg__gemm_tiled_kernel(dev, small, g->type, &k)) return NULL;   /* its build failed: the error says so */
    return k ? small : c;
}

static clg_status run(clg_device *dev, const clg_gemm_args *g, const clg_gemm_config *cfg)
{
    clg_gemm_tiled_config told;
    if (cfg) told = from_config(cfg);
    const clg_gemm_tiled_config *c = cfg ? &told : clg__gemm_tiled_by_size(dev, g);
    return c ? run_config(dev, g, c) : dev->status;
}

/* The longest k one launch may take: each work-item loops over all of k, with a few loop
 * iterations per k in the tile loads, and some drivers end a work-item's loops silently
 * past a count (item_loops, device table). */
static size_t k_limit(clg_device *dev, const clg_gemm_args *g)
{
    (void)g;
    size_t loops = clg__device_params(dev)->item_loops / 3 / 16 * 16;
    return loops > 16 ? loops : 16;
}

/* The configurations of 16 x 16 and 16 x 8 results per item were written for llvmpipe (a
 * CPU running a GPU's work-items in groups of 32); on a GPU their 128 to 256 accumulators
 * per item never won: on the H100, 164 and 440 GFLOP/s against 948 for 64x64x16/4x4
 * (session 24's cold starts). The tuner times them on devices of the CPU type only. */
static bool for_device_class(clg_device *dev, const clg_gemm_tiled_config *c)
{
    return c->wm * c->wn < 128 || clg_device_get_info(dev)->type == CLG_DEVICE_CPU;
}

/* Where the device table's gemm_tiles says so: every configuration (with `fitting`, those
 * that fit dev: each is built to learn the compiled kernel's group limit; one whose
 * build fails stays, and the tuning rejects it, saying why). */
static int candidates(clg_device *dev, int flags, bool fitting, clg_gemm_config *out, int cap)
{
    (void)flags;
    int n = 0;
    for (int i = 0; clg__device_params(dev)->gemm_tiles && i < clg__gemm_tiled_count() && n < cap; i++) {
        clg_kernel *k = NULL;
        if (!for_device_class(dev, clg__gemm_tiled_config(i))) continue;
        if (fitting && clg__gemm_tiled_kernel(dev, clg__gemm_tiled_config(i), CLG_GEMM_F32, &k) == CLG_OK && !k)
            continue;
        out[n++] = clg__gemm_tiled_as_config(clg__gemm_tiled_config(i));
    }
    return n;
}

/* gemm_tiled.cl with the configuration's options, where it fits dev before compiling. */
static int builds(clg_device *dev, const clg_gemm_config *cfg, clg_gemm_build *out, int cap)
{
    clg_gemm_tiled_config c = from_config(cfg);
    if (cap < 1 || !fits_device(dev, &c, CLG_GEMM_F32)) return 0;
    snprintf(out->program, sizeof out->program, "gemm_tiled");
    options(&c, CLG_GEMM_F32, false, out->options, sizeof out->options);
    return 1;
}

static void describe(const clg_gemm_config *c, char *buf, size_t len)
{
    clg_gemm_tiled_config x = from_config(c);
    clg__gemm_tiled_describe(&x, buf, len);
}

static bool parse(const char *text, clg_gemm_config *c)
{
    clg_gemm_tiled_config x;
    if (!clg__gemm_tiled_parse(text, &x)) return false;
    *c = clg__gemm_tiled_as_config(&x);
    return true;
}

/* ---- B's rows at offsets (clg__gemm_rows, clg__gemm_sum; gemm.h) --------------------------
 * A convolution without a column matrix (src/tensor/conv_shift.c) on GPU-shaped devices:
 * the tiles of B are read from the zero-padded input at each row's offset (implicit GEMM),
 * the outputs cropped as they are stored. */

/* The configuration for g with the ROWS kernel: the one the engine would run g on, else
 * the first of the list whose ROWS kernel fits (it may take more registers). */
static const clg_gemm_tiled_config *rows_config(clg_device *dev, const clg_gemm_args *g)
{
    const clg_gemm_tiled_config *c = clg__gemm_tiled_by_size(dev, g);
    clg_kernel *k = NULL;
    if (!c || kernel_for(dev, c, g->type, true, &k)) return NULL;
    for (int i = 0; !k && i < clg__gemm_tiled_count(); i++) {
        c = clg__gemm_tiled_config(i);
        if (kernel_for(dev, c, g->type, true, &k)) return NULL;
    }
    if (!k)
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm_rows (tiled): no configuration of gemm_tiled.cl with row "
                  "offsets fits %s", clg_device_get_info(dev)->name);
    return k ? c : NULL;
}

/* The element types and sizes the ROWS kernel takes. */
static bool rows_common(clg_device *dev, const clg_gemm_args *g)
{
    return (g->type == CLG_GEMM_F32 || g->type == CLG_GEMM_F64) && !g->c_f32 && g->batch == 1 && !g->relu &&
           fits(dev, g) && clg__gemm_grid_fits(g) && g->bias_step < INT_MAX;
}

static bool rows_fits(const clg_device *dev, const clg_gemm_args *g)
{
    return !g->trans_b && rows_common((clg_device *)dev, g);
}

/* g in slices of k within the work-items' loop budget (k_limit), each adding to the last;
 * the row bias with the last. B's rows: stored rows are k's (rows_off moves along the
 * table) unless B is transposed (then its rows are n's and a slice moves along them). */
static clg_status rows_slices(clg_device *dev, const clg_gemm_args *g, void *ctx)
{
    const clg_gemm_tiled_config *c = ctx;
    size_t lim = k_limit(dev, g);
    clg_status st = CLG_OK;
    for (size_t k0 = 0; st == CLG_OK && k0 < g->k; k0 += lim) {
        clg_gemm_args s = *g;
        s.k = g->k - k0 < lim ? g->k - k0 : lim;
        s.a_off += g->trans_a ? k0 * g->lda : k0;
        if (g->trans_b) s.b_off += k0;
        if (k0) s.beta = 1.0;
        if (k0 + s.k < g->k) s.bias = NULL;
        st = launch_config(dev, &s, c, g->trans_b ? 0 : k0);
    }
    return st;
}

static clg_status rows(clg_device *dev, const clg_gemm_args *g)
{
    const clg_gemm_tiled_config *c = rows_config(dev, g);
    return c ? rows_slices(dev, g, (void *)c) : dev->status;
}

/* The weight gradient dW = dy . shift(x)^T (B transposed, its rows at offsets) over the
 * whole grid: k long, m x n small (a handful of groups). */
static bool sum_fits(const clg_device *dev, const clg_gemm_args *g)
{
    return g->b_rows && !g->trans_a && g->trans_b && !g->grid.cols && !g->bias && rows_common((clg_device *)dev, g);
}

/* Slices of k run side by side (float32): enough to give the device four groups per
 * compute unit, each slice at least 256 long, as many as the loop budget needs, at most
 * CLG_GEMM_SPLIT_MAX (sum() hands this chunks of k that need no more). */
static int sum_parts(clg_device *dev, const clg_gemm_args *g, const clg_gemm_tiled_config *c)
{
    size_t groups = (g->m + (size_t)c->tm - 1) / (size_t)c->tm * ((g->n + (size_t)c->tn - 1) / (size_t)c->tn);
    size_t want = 4 * (size_t)clg_device_get_info(dev)->compute_units, lim = k_limit(dev, g);
    size_t parts = groups >= want ? 1 : (want + groups - 1) / groups;
    if (parts > g->k / 256) parts = g->k / 256;
    if (parts > CLG_GEMM_SPLIT_MAX) parts = CLG_GEMM_SPLIT_MAX;   /* a large GPU's 4 x 132 groups */
    if (parts < (g->k + lim - 1) / lim) parts = (g->k + lim - 1) / lim;
    return parts > 1 ? (int)parts : 1;
}

static clg_status sum(clg_device *dev, const clg_gemm_args *g)
{
    const clg_gemm_tiled_config *c = rows_config(dev, g);
    if (!c) return dev->status;
    /* at most CLG_GEMM_SPLIT_MAX slices at a time: longer k in chunks, each adding to the last */
    size_t chunk = CLG_GEMM_SPLIT_MAX * k_limit(dev, g);
    clg_status st = CLG_OK;
    for (size_t k0 = 0; st == CLG_OK && k0 < g->k; k0 += chunk) {
        clg_gemm_args s = *g;
        s.k = g->k - k0 < chunk ? g->k - k0 : chunk;
        s.a_off += k0, s.b_off += k0;
        if (k0) s.beta = 1.0;
        int parts = sum_parts(dev, &s, c);
        st = clg__gemm_split_applies(&s, parts) ? clg__gemm_split_with(dev, &s, parts, rows_slices, (void *)c)
                                                : rows_slices(dev, &s, (void *)c);
    }
    return st;
}

const clg_gemm_engine clg__gemm_tiled_engine = {
    .name = "tiled",
    .instead = "clblast",   /* sizes past gemm_tiled.cl's 32-bit indexing */
    .col_bias = true,       /* gemm_tiled.cl adds it as it stores */
    .relu = true,           /* and applies the ReLU */
    .fits = fits,
    .k_limit = k_limit,
    .run = run,
    .candidates = candidates,
    .describe = describe,
    .parse = parse,
    .config_for = config_for,
    .programs = "common gemm_tiled",
    .builds = builds,
    .sum_fits = sum_fits,
    .sum = sum,
    .rows_fits = rows_fits,
    .rows = rows,
};
