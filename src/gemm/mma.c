/* mma.c: 16-bit products on matrix units (issue 35; cl_kernels/gemm_mma.cl).
 *
 * Where the device table's `mma` names a warp instruction, float16 and bfloat16 products
 * (mixed precision's, or a 16-bit model's) run on gemm_mma.cl rather than on float32
 * copies: "ptx" is NVIDIA's mma.sync through inline PTX (the table's default on devices
 * that report compute capability 8.0 or later through cl_nv_device_attribute_query);
 * "xmx" Intel's dpas through cl_intel_subgroup_matrix_multiply_accumulate on sub-groups
 * of `mma_lanes` work-items (the default where the device reports the extension);
 * "emulate" and "emulate-xmx" run the same kernel with the instruction computed by the
 * warp's or sub-group's work-items (any device: what the suite uses to prove the kernel
 * on POCL, rusticl and Oclgrind); "none" (elsewhere) keeps the other engines.
 *
 * Before its first product of a type, the engine is validated on the device: two small
 * products (both transposes, partial tiles) on each of its blocks must equal the host's
 * exact integer results.
 * A device whose compiler rejects the kernel, or whose results differ, refuses the engine
 * once, with a log line naming why; its products then take the path they took before.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/engine.h"
#include "half.h"

/* A kernel shape: warps along m and n, fragments per warp along m and n, k tile, tiles
 * staged; and from the kind of instruction, a warp's work-items and a fragment's rows and
 * columns (NVIDIA's: warps of 32, 16 x 8; Intel's: sub-groups of `mma_lanes`, 8 x lanes). */
typedef struct mma_config { int warps_m, warps_n, fm, fn, tk, stages, lanes, fh, fw; } mma_config;

static bool emulated(const clg_device *dev)
{
    clg_mma_kind k = clg__device_params(dev)->mma;
    return k == CLG_MMA_EMULATE || k == CLG_MMA_EMULATE_XMX;
}
static bool intel(const clg_device *dev)
{
    clg_mma_kind k = clg__device_params(dev)->mma;
    return k == CLG_MMA_XMX || k == CLG_MMA_EMULATE_XMX;
}
/* gemm_mma.cl's -DMMA for the table's kind. */
static int mma_define(const clg_device *dev) { return 1 + emulated(dev) + 2 * intel(dev); }

/* The device table's block first (mma_block; by default 128 x 128 blocks of 8 warps with
 * 64 x 32 each, 64 accumulators per work-item: 4 warps of 64 x 64 needed 255 registers
 * and spilled in ptxas for sm_90, scripts/gpu/ptx-check.sh), then 64 x 64 blocks of 4
 * warps and 32 x 32 blocks of one warp for products too small to fill the device with
 * larger ones, and where groups hold no more. */
/* Intel's, where sub-groups are 8 (16) wide: 32 x 32 (32 x 64) blocks of 4 sub-groups,
 * and 16 x 16 (16 x 32) blocks of one, with 2 x 2 fragments each (more spilled registers
 * on DG2 in ocloc's report, scripts/gpu/xmx-check.sh). */
#define NCONFIGS 3
static mma_config config_at(const clg_device *dev, int i)
{
    const clg_device_params *p = clg__device_params(dev);
    const int *b = p->mma_block;
    static const mma_config smaller[2][NCONFIGS - 1] = {
        {{2, 2, 2, 4, 32, 3, 0, 0, 0}, {1, 1, 2, 4, 32, 3, 0, 0, 0}},   /* 64 x 64 of 4 warps; 32 x 32 of one (llvmpipe's groups hold 32) */
        {{2, 2, 2, 2, 32, 2, 0, 0, 0}, {1, 1, 2, 2, 32, 2, 0, 0, 0}},
    };
    mma_config c = i ? smaller[intel(dev)][i - 1] : (mma_config){b[0], b[1], b[2], b[3], b[4], b[5], 0, 0, 0};
    c.lanes = intel(dev) ? p->mma_lanes : 32;
    c.fh = intel(dev) ? 8 : 16;
    c.fw = intel(dev) ? p->mma_lanes : 8;
    return c;
}

static int items(const mma_config *c) { return c->warps_m * c->warps_n * c->lanes; }
static int tile_m(const mma_config *c) { return c->warps_m * c->fm * c->fh; }
static int tile_n(const mma_config *c) { return c->warps_n * c->fn * c->fw; }

/* Per device, per kind of instruction (device table) and 16-bit type (float16,
 * bfloat16): 0 untried, 1 validated, -1 refused; for the table's block `block` and
 * sub-group width `lanes` (new ones are validated anew). */
typedef struct mma_state { int ready[CLG_MMA_KINDS][2], block[6], lanes; } mma_state;

extern const clg_gemm_engine clg__gemm_mma_engine;

static mma_state *state(clg_device *dev)
{
    return clg__gemm_engine_data(dev, &clg__gemm_mma_engine, sizeof(mma_state), NULL);
}

/* The first configuration to try for g: the largest that makes at least two blocks per
 * compute unit, else the smallest (most blocks, least padding). */
static int first_config(clg_device *dev, const clg_gemm_args *g)
{
    size_t cus = clg_device_get_info(dev)->compute_units;
    for (int i = 0; i < NCONFIGS; i++) {
        mma_config c = config_at(dev, i);
        size_t tm = (size_t)tile_m(&c), tn = (size_t)tile_n(&c);
        if ((g->m + tm - 1) / tm * ((g->n + tn - 1) / tn) * g->batch >= 2 * (cus ? cus : 1)) return i;
    }
    return NCONFIGS - 1;
}

/* 16-bit values of one operand's tile of r rows (of k) in either layout (gemm_mma.cl). */
static size_t tile_values(size_t r, size_t tk) { return r * (tk + 8) > tk * (r + 8) ? r * (tk + 8) : tk * (r + 8); }

/* Bytes of local memory: the stages' tiles of 16-bit values, and when emulated each
 * warp's float32 fragments of a k step and its ldmatrix row offsets (NVIDIA's), or each
 * sub-group's A fragments as 32-bit values (Intel's). */
static size_t local_bytes(const clg_device *dev, const mma_config *c)
{
    size_t tk = (size_t)c->tk, warps = (size_t)(c->warps_m * c->warps_n);
    size_t tiles = (size_t)c->stages * (tile_values((size_t)tile_m(c), tk) + tile_values((size_t)tile_n(c), tk)) * 2;
    size_t scratch = intel(dev) ? warps * (size_t)(c->fm * 8 * c->lanes) * sizeof(uint32_t)
                                : warps * ((size_t)(c->fm * 256 + c->fn * 128) * sizeof(float) +
                                           (size_t)(c->fm + c->fn / 2) * 32 * sizeof(int));
    return tiles + (emulated(dev) ? scratch : 0);
}

/* The compiled kernel of c, or NULL: with the error recorded when the build failed, with
 * none when its group does not fit the device or the compiled kernel (*fits false). */
static clg_kernel *kernel(clg_device *dev, const mma_config *c, clg_gemm_type type, bool cf32, bool *fits)
{
    const clg_device_params *p = clg__device_params(dev);
    /* Each work-item moves whole shares of 8 values of both tiles (gemm_mma.cl). */
    size_t n = (size_t)items(c), a8 = (size_t)(tile_m(c) * c->tk / 8), b8 = (size_t)(tile_n(c) * c->tk / 8);
    *fits = n <= p->max_group && local_bytes(dev, c) <= p->local_mem && a8 % n == 0 && b8 % n == 0 && a8 >= n &&
            b8 >= n && (intel(dev) || c->fn % 2 == 0);
    if (!*fits) return NULL;
    char opts[240];
    /* -w: "loop not unrolled" notes where a count is not a constant (POCL); emulated, the
     * device table's mma_opt says whether the compiler optimizes (POCL: 4-7 s a block). */
    snprintf(opts, sizeof opts,
             "-DT=float -D%s -DCF32=%d -DWARPS_M=%d -DWARPS_N=%d -DFM=%d -DFN=%d -DTK=%d -DSTAGES=%d -DMMA=%d -DSG=%d -w%s",
             type == CLG_GEMM_BF16 ? "CLG_BF16_STORE" : "CLG_F16_STORE", cf32, c->warps_m, c->warps_n, c->fm,
             c->fn, c->tk, c->stages, mma_define(dev), c->lanes, emulated(dev) && !p->mma_opt ? " -cl-opt-disable" : "");
    clg_kernel *k = clg__kernel_get(dev, "gemm_mma", opts, "gemm_mma");
    *fits = !k || k->wg_max >= (size_t)items(c);
    return *fits ? k : NULL;
}

/* Loop trips per k tile, all loops counted: the copies of both tiles (up to 10 trips each,
 * 8 values at a matrix's edge), then per 16 of k the fragments and the products (when
 * emulated, NVIDIA's: per ldmatrix a row offset and 4 matrices, per fragment 4 stores,
 * and per product 4 results of 16 terms and the loops around them, 70; Intel's: 8 values
 * per fragment loaded and published, per product 8 results of 16 terms, 140). */
static size_t trips_per_tile(const clg_device *dev, const mma_config *c)
{
    size_t loads = (size_t)(tile_m(c) + tile_n(c)) * (size_t)c->tk / 8 / (size_t)items(c);
    size_t per16 = intel(dev) ? (size_t)(16 * c->fm + 8 * c->fn + c->fm * c->fn * (emulated(dev) ? 140 : 1))
                              : (size_t)(4 * (c->fm + c->fn) + 6 * (c->fm + c->fn / 2) +
                                         c->fm * c->fn * (emulated(dev) ? 70 : 1));
    return 10 * loads + (size_t)c->tk / 16 * per16;
}

static size_t mma_k_limit(const clg_device *dev)
{
    size_t most = 1, tk = 1 << 30;
    for (int i = 0; i < NCONFIGS; i++) {
        mma_config c = config_at(dev, i);
        size_t t = trips_per_tile(dev, &c);
        most = t > most ? t : most;
        tk = (size_t)c.tk < tk ? (size_t)c.tk : tk;
    }
    size_t tiles = clg__device_params(dev)->item_loops / most;
    return (tiles > 1 ? tiles : 1) * tk;
}

/* Rows of 8 values on 16-byte boundaries in every matrix of the batch. */
static int vec_ok(size_t off, size_t ld, size_t stride, size_t batch)
{
    return off % 8 == 0 && ld % 8 == 0 && (batch == 1 || stride % 8 == 0);
}

/* g on configuration `only` (validation; *ran false where the device cannot hold it), or
 * from the first that suits g (-1). */
static clg_status run_mma(clg_device *dev, const clg_gemm_args *g, int only, bool *ran)
{
    mma_config c = {0};
    clg_kernel *k = NULL;
    bool fits = false;
    for (int i = only < 0 ? first_config(dev, g) : only; i < (only < 0 ? NCONFIGS : only + 1) && !k; i++) {
        c = config_at(dev, i);
        k = kernel(dev, &c, g->type, g->c_f32, &fits);
        if (!k && fits) return dev->status;   /* the build failed */
    }
    if (ran) *ran = k != NULL;
    if (!k && only >= 0) return CLG_OK;   /* a block this device cannot hold is never chosen */
    if (!k)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg__gemm (mma): no configuration of gemm_mma.cl fits %s "
                         "(groups of %zu work-items at most, %d needed)", clg_device_get_info(dev)->name,
                         clg__device_params(dev)->max_group, c.lanes);
    clg_arg args[] = {
        CLG_ARG_I(g->m), CLG_ARG_I(g->n), CLG_ARG_I(g->k), CLG_ARG_I(g->trans_a), CLG_ARG_I(g->trans_b),
        CLG_ARG_B(g->a), CLG_ARG_L(g->a_off), CLG_ARG_I(g->lda), CLG_ARG_L(g->stride_a),
        CLG_ARG_I(vec_ok(g->a_off, g->lda, g->stride_a, g->batch)),
        CLG_ARG_B(g->b), CLG_ARG_L(g->b_off), CLG_ARG_I(g->ldb), CLG_ARG_L(g->stride_b),
        CLG_ARG_I(vec_ok(g->b_off, g->ldb, g->stride_b, g->batch)),
        CLG_ARG_B(g->c), CLG_ARG_L(g->c_off), CLG_ARG_I(g->ldc), CLG_ARG_L(g->stride_c),
        CLG_ARG_F(g->alpha), CLG_ARG_F(g->beta),
    };
    size_t tm = (size_t)tile_m(&c), tn = (size_t)tile_n(&c);
    size_t local[3] = {(size_t)items(&c), 1, 1};
    size_t global[3] = {(g->n + tn - 1) / tn * local[0], (g->m + tm - 1) / tm, g->batch};
    return clg__launch(dev, k, args, (int)(sizeof args / sizeof args[0]), 3, global, local);
}

static clg_status run(clg_device *dev, const clg_gemm_args *g, const clg_gemm_config *cfg)
{
    (void)cfg;
    return run_mma(dev, g, -1, NULL);
}

/* ---- validation before first use -------------------------------------------------------- */

/* One product of small integers (exact in 16 bits and in float32 sums, in any order):
 * m x k times k x n over k tiles the last of which is partial, and partial blocks along m
 * and n. */
static clg_status check_product(clg_device *dev, clg_gemm_type type, int config, bool ta, bool tb, bool *same)
{
    enum { M = 40, N = 36, K = 72 };
    clg_dtype dt = type == CLG_GEMM_BF16 ? CLG_BF16 : CLG_F16;
    uint16_t ha[M * K], hb[K * N];
    float want[M * N], got[M * N];
    for (int i = 0; i < M * K; i++) ha[i] = clg__half_from_double(dt, (double)((i * 7 + 3) % 9 - 4));
    for (int i = 0; i < K * N; i++) hb[i] = clg__half_from_double(dt, (double)((i * 5 + 1) % 7 - 3));
    for (int r = 0; r < M; r++)
        for (int col = 0; col < N; col++) {
            double s = 0;
            for (int x = 0; x < K; x++)
                s += clg__half_to_double(dt, ha[ta ? x * M + r : r * K + x]) *
                     clg__half_to_double(dt, hb[tb ? col * K + x : x * N + col]);
            want[r * N + col] = (float)s;
        }
    clg_buffer *a = clg__buffer_alloc(dev, sizeof ha), *b = a ? clg__buffer_alloc(dev, sizeof hb) : NULL;
    clg_buffer *cb = b ? clg__buffer_alloc(dev, sizeof got) : NULL;
    clg_status st = cb ? CLG_OK : dev->status;
    clg_gemm_args g = {
        .type = type, .trans_a = ta, .trans_b = tb, .m = M, .n = N, .k = K, .batch = 1, .alpha = 1.0,
        .beta = 0.0, .a = a, .b = b, .c = cb, .lda = ta ? M : K, .ldb = tb ? K : N, .ldc = N, .c_f32 = true,
    };
    if (!st) st = clg__write(dev, a, 0, ha, sizeof ha);
    if (!st) st = clg__write(dev, b, 0, hb, sizeof hb);
    bool ran = false;
    if (!st) st = run_mma(dev, &g, config, &ran);
    if (!st && ran) st = clg__read(dev, cb, 0, got, sizeof got);
    *same = !st && (!ran || !memcmp(want, got, sizeof got));
    clg__buffer_release(a);
    clg__buffer_release(b);
    clg__buffer_release(cb);
    return st;
}

typedef struct check_ref { clg_device *dev; clg_gemm_type type; bool *same; } check_ref;

static clg_status check_all(void *data)
{
    check_ref *r = data;
    clg_status st = CLG_OK;
    for (int i = 0; i < NCONFIGS && !st && (*r->same || !i); i++) {   /* every block the engine may choose */
        st = check_product(r->dev, r->type, i, false, true, r->same);
        if (!st && *r->same) st = check_product(r->dev, r->type, i, true, false, r->same);
    }
    return st;
}

static int validate(clg_device *dev, clg_gemm_type type)
{
    const char *name = type == CLG_GEMM_BF16 ? "bfloat16" : "float16";
    clg_saved_error saved = clg__error_save(dev);
    bool same = false;
    /* not part of a step being recorded */
    clg_status st = clg__uncaptured(dev, check_all, &(check_ref){dev, type, &same});
    int ready = !st && same ? 1 : -1;
    if (ready < 0)
        clg__log(dev, 2, "GEMM on %s: the matrix-unit engine (mma = %s) is refused for %s: %s", clg_device_get_info(dev)->name,
                 clg__mma_kind_name(clg__device_params(dev)->mma), name, st ? dev->error : "its results differ from the host's");
    else
        clg__log(dev, 1, "GEMM on %s: %s products on the matrix-unit engine (mma = %s)", clg_device_get_info(dev)->name,
                 name, clg__mma_kind_name(clg__device_params(dev)->mma));
    clg__error_restore(dev, &saved);
    clg__error_drop(&saved);
    return ready;
}

static bool ready(clg_device *dev, clg_gemm_type type)
{
    if (!clg__gemm_type_is_half(type) || clg__device_params(dev)->mma == CLG_MMA_NONE) return false;
    mma_state *s = state(dev);
    if (!s) return false;
    const int *block = clg__device_params(dev)->mma_block;
    int lanes = clg__device_params(dev)->mma_lanes;
    if (memcmp(s->block, block, sizeof s->block) || s->lanes != lanes) {
        memset(s->ready, 0, sizeof s->ready);
        memcpy(s->block, block, sizeof s->block);
        s->lanes = lanes;
    }
    int *r = &s->ready[clg__device_params(dev)->mma][type == CLG_GEMM_BF16];
    if (!*r) *r = validate(dev, type);
    return *r > 0;
}

/* The longest k one launch may take (the dispatcher slices longer ones when C is float32). */
static size_t k_limit(clg_device *dev, const clg_gemm_args *g)
{
    (void)g;
    return mma_k_limit(dev);
}

/* 16-bit operands where the engine is validated on dev (the first call validates it);
 * 32-bit indexing of rows, columns and leading dimensions, as the tiled kernel; k
 * within one launch's loop budget unless C is float32 (then sliced). */
static bool takes(clg_device *dev, const clg_gemm_args *g)
{
    size_t lim = INT_MAX / 2;
    return clg__gemm_type_is_half(g->type) && ready(dev, g->type) && g->m < lim && g->n < lim && g->k < lim &&
           g->lda < lim && g->ldb < lim && g->ldc < lim && (g->c_f32 || g->k <= mma_k_limit(dev));
}

/* Asked for by name where absent or refused: an error. */
static clg_status refuse(clg_device *dev, const clg_gemm_args *g)
{
    return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                     "clg__gemm (mma, %s, m=%zu n=%zu k=%zu): the matrix-unit engine does not take it on %s "
                     "(16-bit operands only; device table mma = %s, validated on first use; see the log)",
                     g->type == CLG_GEMM_F16 ? "float16" : g->type == CLG_GEMM_BF16 ? "bfloat16" : "float32/64",
                     g->m, g->n, g->k, clg_device_get_info(dev)->name,
                     clg__mma_kind_name(clg__device_params(dev)->mma));
}

/* Every 16-bit product it takes, whatever the device's engine: not a tuning candidate. */
const clg_gemm_engine clg__gemm_mma_engine = {
    .name = "mma",
    .first = true,
    .stores16 = true,
    .ready = ready,
    .takes = takes,
    .k_limit = k_limit,
    .run = run,
    .refuse = refuse,
};
