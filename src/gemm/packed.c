/* packed.c: clgrad's own GEMM engine for CPU devices (cl_kernels/gemm.cl).
 *
 * Why not CLBlast on POCL: CLBlast's kernels are built for GPUs (work-groups of many
 * items sharing local memory); POCL runs a work-group as a loop on one core and the
 * result is far from the CPU's peak, after a ~20 s compile. Here, as in CPU BLAS
 * libraries, op(A) and op(B) are first packed into contiguous panels (a row-major B's
 * whole panels are read in place instead), then each work-item computes blocks of
 * 6 x 16 results in registers. All shapes and transposes share one program per element
 * type: a training step compiles it once.
 */
#include <limits.h>
#include <string.h>

#include "gemm/engine.h"

#define MR 6 /* rows of a micro-tile: must match gemm.cl's six accumulators */

/* Columns of a micro-tile (gemm.cl's NR): one vector of 16 floats or 8 doubles. */
static size_t tile_cols(clg_gemm_type type) { return type == CLG_GEMM_F64 ? 8 : 16; }

typedef struct tiles_plan {
    int mpanels, npanels;  /* micro-tiles along m and n */
    int pi, pj;            /* micro-tiles per work-item along m and n */
} tiles_plan;

/* Whether gemm.cl's indexing holds g. */
static bool fits(clg_device *dev, const clg_gemm_args *g)
{
    (void)dev;
    /* gemm.cl indexes rows and columns with int and offsets with long. */
    size_t lim = INT_MAX / 2;
    return g->m < lim && g->n < lim && g->k < lim && g->lda < lim && g->ldb < lim && g->ldc < lim &&
           g->batch < lim;
}

/* How to split the micro-tiles among work-items. Big blocks amortise POCL's per-group
 * cost (a few microseconds) and reuse each packed B panel from cache across PI A
 * panels; but there must be enough blocks to keep every core busy to the end, so blocks
 * shrink until there are at least 8 per compute unit. Blocks are then evened out, so
 * that no core waits on one oversized last block. */
static tiles_plan plan_tiles(const clg_device *dev, const clg_gemm_args *g, size_t mr, int nv)
{
    tiles_plan t;
    size_t nr = tile_cols(g->type);
    t.mpanels = (int)((g->m + mr - 1) / mr);
    t.npanels = (int)((g->n + nr - 1) / nr);
    int pi = 16, pj = nv > 1 ? 2 * nv : 4;
    size_t want = 8 * (size_t)(clg_device_get_info(dev)->compute_units ? clg_device_get_info(dev)->compute_units : 1);
    for (;;) {
        size_t blocks = (size_t)((t.mpanels + pi - 1) / pi) * (size_t)((t.npanels + pj - 1) / pj) * g->batch;
        if (blocks >= want || (pi == 1 && pj == 1)) break;
        if (pi >= pj && pi > 1) pi /= 2;
        else pj /= 2;
    }
    int nbi = (t.mpanels + pi - 1) / pi, nbj = (t.npanels + pj - 1) / pj;
    t.pi = (t.mpanels + nbi - 1) / nbi;
    t.pj = (t.npanels + nbj - 1) / nbj;
    if (nv > 1 && t.pj > nv) t.pj = (t.pj + nv - 1) / nv * nv;   /* whole micro-tiles of nv panels */
    return t;
}

static size_t k_limit(clg_device *dev, const clg_gemm_args *g)
{
    /* gemm_tiles: a work-item walks pi x pj micro-tiles, each over all of k; gemm_pack
     * and gemm_dot stay within item_loops / 4 (PACK_KC steps; 16 columns of k / 4). */
    size_t loops = clg__device_params(dev)->item_loops;
    tiles_plan t = plan_tiles(dev, g, MR, 1);
    size_t per = (size_t)t.pi * (size_t)t.pj + 1, lim = loops / (per > 4 ? per : 4) / 16 * 16;
    return lim > 16 ? lim : 16;
}

/* Pack op(X) (panel side P, depth K) into dst, panels of w; X's batch stride 0 means one
 * matrix for every batch, packed once. */
static clg_status pack(clg_device *dev, clg_kernel *kp, const clg_buffer *src, size_t off, size_t ld,
                       size_t stride, size_t P, int w, size_t K, bool pmajor, size_t batch, clg_buffer *dst,
                       size_t dst_stride)
{
    /* Work-item: one panel, PACK_KC (256, gemm.cl) steps of k. */
    const size_t kc = 256;
    clg_arg args[] = {
        CLG_ARG_B(src), CLG_ARG_L(off), CLG_ARG_I(ld), CLG_ARG_L(stride), CLG_ARG_I(P), CLG_ARG_I(K),
        CLG_ARG_I(pmajor), CLG_ARG_I(w), CLG_ARG_B(dst), CLG_ARG_L(dst_stride),
    };
    size_t global[3] = {(P + (size_t)w - 1) / (size_t)w, (K + kc - 1) / kc, batch};
    size_t local[3] = {1, 1, 1};
    return clg__launch(dev, kp, args, 10, 3, global, local);
}

/* Where gemm_tiles finds B's panels (gemm.cl): packed, or a row-major B read in place. */
typedef struct b_panels {
    const clg_buffer *buf;
    size_t off, stride;    /* first panel; between batches (0: shared) */
    size_t panel, kstep;   /* between panels; between steps of k */
} b_panels;

/* C when it is the whole contiguous result from its buffer's start, else NULL: a
 * launch writing its final values then says so (clg__launch_final), and a graph may
 * fold a ReLU of C into it (gemm.cl, CLG_EPI_RELU). */
static const clg_buffer *final_c(const clg_gemm_args *g)
{
    return g->c_off == 0 && g->ldc == g->n && (g->batch == 1 || g->stride_c == g->m * g->n) ? g->c : NULL;
}

/* The micro-kernels over C's n columns from column j0, with B's panels as described. */
static clg_status tiles(clg_device *dev, clg_kernel *k, const clg_gemm_args *g, size_t n, size_t j0,
                        const clg_buffer *ap, size_t ap_stride, b_panels bp)
{
    clg_gemm_args part = *g;
    part.n = n;
    tiles_plan t = plan_tiles(dev, &part, MR, 1);
    clg_arg args[] = {
        CLG_ARG_I(g->m), CLG_ARG_I(n), CLG_ARG_I(g->k), CLG_ARG_I(t.pi), CLG_ARG_I(t.pj),
        CLG_ARG_B(ap), CLG_ARG_L(g->stride_a ? ap_stride : 0), CLG_ARG_B(bp.buf), CLG_ARG_L(bp.off),
        CLG_ARG_L(bp.stride), CLG_ARG_L(bp.panel), CLG_ARG_I(bp.kstep), CLG_ARG_B(g->c),
        CLG_ARG_L(g->c_off + j0), CLG_ARG_I(g->ldc), CLG_ARG_L(g->stride_c), clg__gemm_scalar(g->type, g->alpha),
        clg__gemm_scalar(g->type, g->beta),
    };
    size_t global[3] = {(size_t)((t.npanels + t.pj - 1) / t.pj), (size_t)((t.mpanels + t.pi - 1) / t.pi),
                        g->batch};
    size_t local[3] = {1, 1, 1};
    return clg__launch_final(dev, k, args, 18, 3, global, local, final_c(g), g->m * g->n * g->batch);
}

/* gemm_tiles_rows' rows per micro-tile (gemm.cl RMR), from the device table's gemm_rows:
 * 8 where float vectors are 16 wide (32 vector registers hold the 8 x 16 accumulators),
 * else 6. Programs with RMR 8 also take 6 columns per gemm_dot block (DOTC). */
static size_t rows_mr(const clg_device *dev) { return clg__device_params(dev)->gemm_rows8 ? 8 : 6; }

/* Whether g's programs are built with RMR 8: float32 and float64 where the table says so. */
static bool rows8(const clg_device *dev, const clg_gemm_args *g)
{
    return rows_mr(dev) == 8 && (g->type == CLG_GEMM_F64 || g->type == CLG_GEMM_F32);
}

/* The options of every packed kernel of a product of g's types: gemm.cl's one program
 * per type (clg__gemm_cl_options: RMR, which gemm_tiles_rows and gemm_dot read, where
 * rows8 says so). */
static const char *options(const clg_device *dev, const clg_gemm_args *g) { return clg__gemm_cl_options(dev, g); }

/* gemm_dot's columns per block (gemm.cl DOTC): 6 in the programs built with RMR 8 (32
 * vector registers), else 3. */
static size_t dot_cols(const clg_device *dev, const clg_gemm_args *g) { return rows8(dev, g) ? 6 : 3; }

/* JB, gemm_dot's blocks of DOTC columns per work-item: as many as leave at least 8 items
 * per compute unit (A's 4 rows are then reused from L1 across more of B). */
static int dot_blocks(const clg_device *dev, const clg_gemm_args *g)
{
    size_t cu = clg_device_get_info(dev)->compute_units, want = 8 * (cu ? cu : 1), nc = dot_cols(dev, g);
    size_t mb = (g->m + 3) / 4, nb = (g->n + nc - 1) / nc;
    int jb = 16;
    while (jb > 1 && (nb + (size_t)jb - 1) / (size_t)jb * mb * g->batch < want) jb /= 2;
    return jb;
}

/* A . B^T with A not transposed: both read along k in place, one launch (gemm.cl). */
static clg_status dot(clg_device *dev, const clg_gemm_args *g)
{
    clg_kernel *k = clg__kernel_get(dev, "gemm", options(dev, g), "gemm_dot");
    if (!k) return dev->status;
    int jb = dot_blocks(dev, g);
    clg_arg args[] = {
        CLG_ARG_I(g->m), CLG_ARG_I(g->n), CLG_ARG_I(g->k), CLG_ARG_I(jb),
        CLG_ARG_B(g->a), CLG_ARG_L(g->a_off), CLG_ARG_I(g->lda), CLG_ARG_L(g->stride_a),
        CLG_ARG_B(g->b), CLG_ARG_L(g->b_off), CLG_ARG_I(g->ldb), CLG_ARG_L(g->stride_b),
        CLG_ARG_B(g->c), CLG_ARG_L(g->c_off), CLG_ARG_I(g->ldc), CLG_ARG_L(g->stride_c),
        clg__gemm_scalar(g->type, g->alpha), clg__gemm_scalar(g->type, g->beta), CLG_ARG_I(1), CLG_ARG_I(0),
        CLG_ARG_B(g->b),
    };
    size_t nc = dot_cols(dev, g), nb = (g->n + nc - 1) / nc;
    size_t global[3] = {(nb + (size_t)jb - 1) / (size_t)jb, (g->m + 3) / 4, g->batch};
    size_t local[3] = {1, 1, 1};
    return clg__launch_final(dev, k, args, (int)(sizeof args / sizeof *args), 3, global, local, final_c(g),
                             g->m * g->n * g->batch);
}

/* gemm_dot's loop trips per row of k: k / DW vector steps and at most DW - 1 after them
 * (gemm.cl DW: 16 floats in the programs built with RMR 8, else 8; 4 doubles), counted
 * as 8 at least. */
static size_t dot_trips(const clg_device *dev, const clg_gemm_args *g)
{
    size_t w = g->type == CLG_GEMM_F64 ? 4 : rows8(dev, g) ? 16 : 8;
    return g->k / w + (w > 8 ? w : 8);
}

static bool sum_fits(const clg_device *dev, const clg_gemm_args *g)
{
    const clg_device_params *p = clg__device_params(dev);
    /* The device table names this engine (the dispatcher asked it); gemm_dot on (B's
     * rows at offsets: 32- and 64-bit types, as gemm_tiles_rows). */
    if ((g->b_rows && clg__gemm_type_is_half(g->type)) || g->grid.cols || g->bias) return false;
    return p->gemm_dot && !g->trans_a && g->trans_b && (g->m <= 256 || g->n <= 256) &&
           g->type != CLG_GEMM_F16 && fits(NULL, g) && 16 * dot_trips(dev, g) <= p->item_loops;
}

/* C = alpha sum over the batch of A[b] . B[b]^T + beta C (one C): gemm_dot with each
 * work-item summing the products of nsum matrices, in launches of as many as keep its
 * loops within item_loops, each adding to the last (beta 1 after the first). */
static clg_status sum(clg_device *dev, const clg_gemm_args *g)
{
    clg_kernel *k = clg__kernel_get(dev, "gemm", options(dev, g), "gemm_dot");
    if (!k) return dev->status;
    clg_gemm_args one = *g;
    one.batch = 1;
    int jb = dot_blocks(dev, &one);
    size_t trips = (size_t)jb * dot_trips(dev, g), per = clg__device_params(dev)->item_loops / trips;
    if (per < 1) per = 1;
    size_t nc = dot_cols(dev, &one), nb = (g->n + nc - 1) / nc;
    size_t global[3] = {(nb + (size_t)jb - 1) / (size_t)jb, (g->m + 3) / 4, 1}, local[3] = {1, 1, 1};
    clg_status st = CLG_OK;
    for (size_t b0 = 0; st == CLG_OK && b0 < g->batch; b0 += per) {
        size_t cnt = g->batch - b0 < per ? g->batch - b0 : per;
        clg_arg args[] = {
            CLG_ARG_I(g->m), CLG_ARG_I(g->n), CLG_ARG_I(g->k), CLG_ARG_I(jb),
            CLG_ARG_B(g->a), CLG_ARG_L(g->a_off + b0 * g->stride_a), CLG_ARG_I(g->lda), CLG_ARG_L(g->stride_a),
            CLG_ARG_B(g->b), CLG_ARG_L(g->b_off + b0 * g->stride_b), CLG_ARG_I(g->ldb), CLG_ARG_L(g->stride_b),
            CLG_ARG_B(g->c), CLG_ARG_L(g->c_off), CLG_ARG_I(g->ldc), CLG_ARG_L(0),
            clg__gemm_scalar(g->type, g->alpha), clg__gemm_scalar(g->type, b0 ? 1.0 : g->beta), CLG_ARG_I(cnt),
            CLG_ARG_I(g->b_rows != NULL), CLG_ARG_B(g->b_rows ? g->b_rows : g->b),
        };
        st = clg__launch(dev, k, args, (int)(sizeof args / sizeof *args), 3, global, local);
    }
    return st;
}

/* ---- small products: gemm_small, one launch, nothing packed ------------------------------ */

/* Whether g is small enough (device parameter gemm_small: m n k at most that many
 * multiply-adds) for gemm_small, with k within item_loops (a work-item walks all of k
 * for each of its panels). A transposed B is packed first (one gemm_pack); where A is
 * not transposed gemm_dot comes first (run()): fc1's and fc2's forward (128x512x784 and
 * 128x256x512 B^T) ran on pack + gemm_small at 60-160 GFLOP/s medians against gemm_dot's
 * 75-161, alternating on a busy host: no clear winner, so the one launch stays. */
static bool small_fits(const clg_device *dev, const clg_gemm_args *g)
{
    const clg_device_params *p = clg__device_params(dev);
    double work = (double)g->m * (double)g->n * (double)g->k;
    return p->gemm_small && work <= (double)p->gemm_small && g->k <= p->item_loops && fits(NULL, g) &&
           !(g->trans_b && clg__gemm_type_is_half(g->type));
}

/* gemm_small's rows per work-item: its program's RMR (options()). */
static size_t small_mr(const clg_device *dev, const clg_gemm_args *g)
{
    return strstr(options(dev, g), "-DRMR=8") ? 8 : 6;
}

/* Panels of NR columns per work-item: as many as leave at least 8 items per compute
 * unit (fewer launches' worth of per-item cost), within item_loops. */
static int small_panels(const clg_device *dev, const clg_gemm_args *g, size_t mr)
{
    size_t cu = clg_device_get_info(dev)->compute_units, want = 8 * (cu ? cu : 1);
    size_t rows = (g->m + mr - 1) / mr, npanels = (g->n + tile_cols(g->type) - 1) / tile_cols(g->type);
    size_t most = clg__device_params(dev)->item_loops / g->k;
    int pj = 8;
    while (pj > 1 && ((size_t)pj > most || (npanels + (size_t)pj - 1) / (size_t)pj * rows * g->batch < want)) pj /= 2;
    return pj;
}

static clg_status small_launch(clg_device *dev, clg_kernel *k, const clg_gemm_args *g, b_panels bp, bool padded)
{
    size_t mr = small_mr(dev, g), npanels = (g->n + tile_cols(g->type) - 1) / tile_cols(g->type);
    int pj = small_panels(dev, g, mr);
    clg_arg args[] = {
        CLG_ARG_I(g->m), CLG_ARG_I(g->n), CLG_ARG_I(g->k), CLG_ARG_I(pj), CLG_ARG_I(g->trans_a),
        CLG_ARG_B(g->a), CLG_ARG_L(g->a_off), CLG_ARG_I(g->lda), CLG_ARG_L(g->stride_a),
        CLG_ARG_B(bp.buf), CLG_ARG_L(bp.off), CLG_ARG_L(bp.panel), CLG_ARG_I(bp.kstep), CLG_ARG_L(bp.stride),
        CLG_ARG_I(padded), CLG_ARG_B(g->c), CLG_ARG_L(g->c_off), CLG_ARG_I(g->ldc), CLG_ARG_L(g->stride_c),
        clg__gemm_scalar(g->type, g->alpha), clg__gemm_scalar(g->type, g->beta),
    };
    size_t global[3] = {(npanels + (size_t)pj - 1) / (size_t)pj, (g->m + mr - 1) / mr, g->batch};
    size_t local[3] = {1, 1, 1};
    return clg__launch_final(dev, k, args, (int)(sizeof args / sizeof *args), 3, global, local, final_c(g),
                             g->m * g->n * g->batch);
}

/* A row-major B read in place; a transposed one packed first into zero-padded panels
 * of NR columns (32- and 64-bit types: gemm_pack writes float panels, and gemm_small
 * reads B as stored). */
static clg_status small(clg_device *dev, const clg_gemm_args *g)
{
    const char *opts = options(dev, g);
    clg_kernel *k = clg__kernel_get(dev, "gemm", opts, "gemm_small");
    if (!k) return dev->status;
    size_t nr = tile_cols(g->type);
    if (!g->trans_b) return small_launch(dev, k, g, (b_panels){g->b, g->b_off, g->stride_b, nr, g->ldb}, false);
    clg_kernel *kpack = clg__kernel_get(dev, "gemm", opts, "gemm_pack");
    if (!kpack) return dev->status;
    size_t bbatch = g->stride_b ? g->batch : 1, bp_stride = (g->n + nr - 1) / nr * nr * g->k;
    clg_buffer *bp = clg__buffer_alloc(dev, bp_stride * bbatch * (g->type == CLG_GEMM_F64 ? sizeof(double) : sizeof(float)));
    if (!bp) return dev->status;
    clg_status st = pack(dev, kpack, g->b, g->b_off, g->ldb, g->stride_b, g->n, (int)nr, g->k, true, bbatch, bp, bp_stride);
    if (!st) st = small_launch(dev, k, g, (b_panels){bp, 0, g->stride_b ? bp_stride : 0, nr * g->k, nr}, true);
    clg__buffer_release(bp);
    return st;
}

/* Packed B panels of a batch above this are made a part of the batch at a time: a
 * convolution's weight gradient packs its whole column matrix otherwise (for float16,
 * whose dot products convert too slowly, twice the columns' size in float32 panels). */
#define PANELS_MAX ((size_t)16 << 20)

static clg_status packed(clg_device *dev, const clg_gemm_args *g);

static clg_status run(clg_device *dev, const clg_gemm_args *g, const clg_gemm_config *cfg)
{
    (void)cfg;
    size_t nr = tile_cols(g->type), es = g->type == CLG_GEMM_F64 ? sizeof(double) : sizeof(float);
    size_t per = (g->n + nr - 1) / nr * nr * g->k * es;   /* one matrix's B panels, at most */
    /* Packing costs O(k (m + n)) against O(m n k) of products: negligible when m and n
     * are both large (1024^3 ran at 60 GFLOP/s packed, 45-57 by dot products), the
     * larger share the smaller either is (128 x 10 x 256: 26 by dot, 12-14 packed; the
     * MLP's 128 x 512 x 784: 64-72 against 48-55; side by side on POCL, AVX2). Not for
     * float16: its conversions in the dot products' inner loop cost more than packing
     * (which converts each element once) saves (the CNN's step ran 0.55x of float32's
     * with them, 0.87x without); bfloat16's are shifts. */
    bool dot_path = !g->trans_a && g->trans_b && clg__device_params(dev)->gemm_dot && (g->m <= 256 || g->n <= 256) &&
                    g->type != CLG_GEMM_F16;
    if (dot_path) return dot(dev, g);
    if (small_fits(dev, g)) return small(dev, g);
    if (!g->stride_b || g->batch < 2 || per * g->batch <= PANELS_MAX) return packed(dev, g);
    size_t chunk = PANELS_MAX / per ? PANELS_MAX / per : 1;
    clg_status st = CLG_OK;
    for (size_t b0 = 0; st == CLG_OK && b0 < g->batch; b0 += chunk) {
        clg_gemm_args part = *g;
        part.batch = g->batch - b0 < chunk ? g->batch - b0 : chunk;
        part.a_off += b0 * g->stride_a;
        part.b_off += b0 * g->stride_b;
        part.c_off += b0 * g->stride_c;
        st = packed(dev, &part);
    }
    return st;
}

static clg_status packed(clg_device *dev, const clg_gemm_args *g)
{
    const char *opts = options(dev, g);
    clg_kernel *kpack = clg__kernel_get(dev, "gemm", opts, "gemm_pack");
    clg_kernel *ktiles = kpack ? clg__kernel_get(dev, "gemm", opts, "gemm_tiles") : NULL;
    if (!ktiles) return dev->status;
    /* Panels hold the compute type: float for 16-bit operands too. */
    size_t nr = tile_cols(g->type), es = g->type == CLG_GEMM_F64 ? sizeof(double) : sizeof(float);
    /* A row-major B gives its whole panels of nr columns in place; only the rest (and
     * a transposed B) is packed. Not when B's rows lie a multiple of 512 bytes apart:
     * then a panel's rows fall into a few cache sets and evict each other (1024^3 ran
     * at 0.6x of packed), which is what packing is for; nor when B is 16-bit (the
     * micro-kernel reads float panels). */
    bool in_place = !g->trans_b && g->ldb * es % 512 != 0 && !clg__gemm_type_is_half(g->type);
    size_t direct = in_place ? g->n / nr * nr : 0, rest = g->n - direct;
    size_t rest_panels = (rest + nr - 1) / nr;
    /* A matrix shared by the whole batch (stride 0) is packed once. */
    size_t abatch = g->stride_a ? g->batch : 1, bbatch = g->stride_b ? g->batch : 1;
    size_t ap_stride = (g->m + MR - 1) / MR * MR * g->k, bp_stride = rest_panels * nr * g->k;
    clg_buffer *ap = clg__buffer_alloc(dev, ap_stride * abatch * es);
    clg_buffer *bp = ap && rest ? clg__buffer_alloc(dev, bp_stride * bbatch * es) : NULL;
    clg_status st = ap && (bp || !rest) ? CLG_OK : dev->status;
    /* op(A) has m rows: stored row-major unless transposed. op(B)'s panel side is n:
     * contiguous along k only when B is stored transposed. */
    if (!st)
        st = pack(dev, kpack, g->a, g->a_off, g->lda, g->stride_a, g->m, MR, g->k, !g->trans_a, abatch, ap,
                  ap_stride);
    if (!st && direct)
        st = tiles(dev, ktiles, g, direct, 0, ap, ap_stride,
                   (b_panels){g->b, g->b_off, g->stride_b, nr, g->ldb});
    if (!st && rest)
        st = pack(dev, kpack, g->b, g->b_off + direct, g->ldb, g->stride_b, rest, (int)nr, g->k, g->trans_b, bbatch,
                  bp, bp_stride);
    if (!st && rest)
        st = tiles(dev, ktiles, g, rest, direct, ap, ap_stride,
                   (b_panels){bp, 0, g->stride_b ? bp_stride : 0, nr * g->k, nr});
    /* The in-order queue runs whoever gets these buffers next after the kernels above. */
    clg__buffer_release(ap);
    clg__buffer_release(bp);
    return st;
}

/* ---- B's rows at offsets (clg__gemm_rows, gemm.h) ----------------------------------------- */


static bool rows_fits(const clg_device *dev, const clg_gemm_args *g)
{
    (void)dev;
    size_t nr = tile_cols(g->type);
    return !g->trans_b && g->batch == 1 && !clg__gemm_type_is_half(g->type) && !g->c_f32 && fits(NULL, g) &&
           (g->n + nr - 1) / nr * nr < INT_MAX / 2 && clg__gemm_grid_fits(g) && g->bias_step < INT_MAX;
}

/* op(A) packed in panels of rows_mr, then gemm_tiles_rows over every panel of B in
 * place, in slices of k that keep a work-item's loops within item_loops (each slice
 * adding to C). */
static clg_status rows(clg_device *dev, const clg_gemm_args *g)
{
    const char *opts = options(dev, g);
    clg_kernel *kpack = clg__kernel_get(dev, "gemm", opts, "gemm_pack");
    clg_kernel *krows = kpack ? clg__kernel_get(dev, "gemm", opts, "gemm_tiles_rows") : NULL;
    if (!krows) return dev->status;
    size_t mr = rows_mr(dev), es = g->type == CLG_GEMM_F64 ? sizeof(double) : sizeof(float);
    clg_buffer *ap = clg__buffer_alloc(dev, (g->m + mr - 1) / mr * mr * g->k * es);
    if (!ap) return dev->status;
    clg_status st = pack(dev, kpack, g->a, g->a_off, g->lda, 0, g->m, (int)mr, g->k, !g->trans_a, 1, ap, 0);
    tiles_plan t = plan_tiles(dev, g, mr, mr == 8 ? 3 : 1);   /* gemm.cl RNV */
    size_t loops = clg__device_params(dev)->item_loops, per = (size_t)t.pi * (size_t)t.pj + 1;
    size_t slice = loops / per > 16 ? loops / per : 16;
    size_t global[3] = {(size_t)((t.npanels + t.pj - 1) / t.pj), (size_t)((t.mpanels + t.pi - 1) / t.pi), 1};
    size_t local[3] = {1, 1, 1};
    for (size_t k0 = 0; st == CLG_OK && k0 < g->k; k0 += slice) {
        size_t k1 = g->k - k0 < slice ? g->k : k0 + slice;
        clg_arg args[] = {
            CLG_ARG_I(g->m), CLG_ARG_I(g->n), CLG_ARG_I(g->k), CLG_ARG_I(k0), CLG_ARG_I(k1), CLG_ARG_I(t.pi),
            CLG_ARG_I(t.pj), CLG_ARG_B(ap), CLG_ARG_B(g->b), CLG_ARG_L(g->b_off), CLG_ARG_B(g->b_rows),
            CLG_ARG_B(g->c), CLG_ARG_L(g->c_off), CLG_ARG_I(g->ldc), clg__gemm_scalar(g->type, g->alpha),
            /* the bias with the last slice, after the others' sums */
            clg__gemm_scalar(g->type, k0 ? 1.0 : g->beta), clg__gemm_grid_arg(g, g->bias && k1 == g->k),
            CLG_ARG_B(g->bias ? g->bias : g->c), CLG_ARG_L(g->bias_off), CLG_ARG_I(g->bias_step),
        };
        st = clg__launch(dev, krows, args, (int)(sizeof args / sizeof *args), 3, global, local);
    }
    clg__buffer_release(ap);
    return st;
}

/* One candidate of the tuner where the device table's vector_float is above 1 (work-items
 * that loop over vectors: CPUs). Where it is 1, work-items are SIMD lanes (GPUs, llvmpipe)
 * and the packed kernels, one work-item per group, ran at a fiftieth of the tiled ones
 * (llvmpipe: 0.013 against 0.15 GFLOP/s at 64^3): the tuner dropped them at its screen,
 * after their compiles, 14 s of its 30 on a cold llvmpipe. They stay every device's
 * fallback (choice.c), which gemm = packed names. */
static int candidates(clg_device *dev, int flags, bool fitting, clg_gemm_config *out, int cap)
{
    (void)flags, (void)fitting, (void)out;
    return cap > 0 && clg__device_params(dev)->vector_float > 1;
}

/* gemm.cl with float32's options: every kernel of a float32 product is in it. */
static int builds(clg_device *dev, const clg_gemm_config *cfg, clg_gemm_build *out, int cap)
{
    (void)cfg;
    if (cap < 1) return 0;
    snprintf(out->program, sizeof out->program, "gemm");
    snprintf(out->options, sizeof out->options, "%s", options(dev, &(clg_gemm_args){.type = CLG_GEMM_F32}));
    return 1;
}

const clg_gemm_engine clg__gemm_packed_engine = {
    .name = "packed",
    .stores16 = true,
    .instead = "clblast",   /* sizes past gemm.cl's 32-bit indexing */
    .fits = fits,
    .k_limit = k_limit,
    .run = run,
    .candidates = candidates,
    .programs = "common gemm",
    .builds = builds,
    .sum_fits = sum_fits,
    .sum = sum,
    .rows_fits = rows_fits,
    .rows = rows,
};
