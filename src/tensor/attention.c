/* attention.c: clg_scaled_dot_product_attention, fused (kernels: cl_kernels/attention.cl).
 *
 * The forward keeps, per query row, a running max, sum and weighted sum of value rows
 * over tiles of keys (online softmax), so the [L, S] scores are never stored; it saves
 * each row's log-sum-exp, from which the backward recomputes the weights. The backward
 * is two kernels, one per query row (dQ) and one per key row (dK, dV), so that no two
 * work-items add into one result: no atomics, and the same bits every run.
 *
 * Long axes: a work-item walks a tile of keys (or queries) per loop trip, and the host
 * splits the axis over launches so that no work-item runs more loop iterations than the
 * device table's item_loops; the forward carries its running state between launches in
 * scratch buffers, the backward adds into its results. Head sizes wider than the
 * ATT_ND columns a work-item keeps are split over launches too.
 */
#include <math.h>
#include <string.h>

#include "tensor_impl.h"

#define PROGRAM "attention"
#define OP "scaled_dot_product_attention"
#define ATT_ND 4   /* cl_kernels/attention.cl: output columns per work-item and launch */

/* The shapes of one call: batch shape (broadcast over q, k, v and the mask), L queries,
 * S keys, head size E, value size Ev. */
typedef struct att_dims {
    int nb;
    int64_t bshape[CLG_MAX_DIMS];
    int64_t B, L, S, E, Ev;
} att_dims;

/* An operand as the kernels read it: buffer, offset, batch strides (0 where broadcast),
 * row and column strides. */
typedef struct att_operand {
    const clg_buffer *buf;
    int64_t off, bstr[CLG_MAX_DIMS], row, col;
} att_operand;

static att_operand operand(const clg_tensor *t, const att_dims *d)
{
    att_operand o = {t->buf, t->offset, {0}, t->strides[t->ndim - 2], t->strides[t->ndim - 1]};
    int lead = t->ndim - 2;
    for (int a = 0; a < d->nb; a++) {
        int ta = a - (d->nb - lead);   /* right-aligned */
        o.bstr[a] = ta >= 0 && t->shape[ta] != 1 ? t->strides[ta] : 0;
    }
    return o;
}

static int push_operand(clg_arg *a, int n, const att_operand *o, int nb)
{
    a[n++] = CLG_ARG_B(o->buf);
    a[n++] = CLG_ARG_I(o->off);
    a[n++] = clg__arg_int8(o->bstr, nb);
    a[n++] = CLG_ARG_I(o->row);
    a[n++] = CLG_ARG_I(o->col);
    return n;
}

/* The dropout draw of one call: p, the generator position (taken by the forward's
 * first launch, whose CLG_ARG_RNG_DRAW moves the generator `blocks` on; every other
 * launch of the op and its backward draws at it again: CLG_ARG_RNG_AT). */
typedef struct att_drop {
    double p;
    clg_rng_pos pos;
    uint64_t blocks;
} att_drop;

/* draw: the forward's first launch. Without dropout, no position (zeros). */
static int push_drop(clg_arg *a, int n, att_drop *dr, clg_dtype cdt, bool draw)
{
    a[n++] = dr->p <= 0 ? CLG_ARG_RNG_NONE : draw ? CLG_ARG_RNG_DRAW(&dr->pos, dr->blocks) : CLG_ARG_RNG_AT(&dr->pos);
    a[n++] = CLG_ARG_I((uint32_t)ceil(dr->p * 16777216.0));   /* keep where a 24-bit uniform >= this */
    a[n++] = clg__arg_scalar(cdt, dr->p < 1 ? 1.0 / (1.0 - dr->p) : 0.0);
    a[n++] = CLG_ARG_I(dr->p > 0);
    return n;
}

/* ---- launch geometry ------------------------------------------------------------------ */

typedef struct att_call {
    att_dims d;
    att_operand q, k, v, m;
    bool has_mask, causal;
    double scale;
    att_drop drop;
    clg_dtype dtype, cdt;   /* storage and compute types */
} att_call;

/* Work-items per group: a power of two, 32 where work-items are SIMD-wide (a group is a
 * loop on one core), else 64; within the kernel's and device's limits. */
static size_t group_width(const clg_device *dev, const clg_kernel *k)
{
    const clg_device_params *p = clg__device_params(dev);
    size_t w = p->vector_float > 1 ? 32 : 64;
    while (w > 1 && (w > k->wg_max || w > p->max_group || w > p->max_item[0])) w >>= 1;
    return w;
}

static int log2i(size_t w)
{
    int n = 0;
    while (w > 1) {
        w >>= 1;
        n++;
    }
    return n;
}

/* A kernel of one of three shapes (the device table's attention): "rows" (a work-item per
 * row, tiles of 1, ATT_RD columns), the rows kernels along the head in vectors (vec: a
 * work-item per row, every column; chosen by att_vectors) or "tiles" (a group of w per
 * row, ATT_ND w columns). */
#define ATT_RD 64   /* cl_kernels/attention.cl: columns per work-item in the rows kernels */
#define ATT_VN 8    /* cl_kernels/attention.cl: float16 vectors per row in the vector kernels */

typedef struct att_kernel {
    clg_kernel *k;
    bool rows, vec;
    size_t w;          /* keys (or queries) per loop trip */
    int64_t ncols;     /* output columns per launch */
} att_kernel;

/* Whether the vector kernels take the call: float32, head and value sizes in whole
 * vectors of 16 (ATT_VN at most), and adjacent columns in every operand they read (g: the
 * incoming gradient, NULL in the forward). */
static bool att_vectors(const att_call *c, const att_operand *g)
{
    const att_dims *d = &c->d;
    bool heads = d->E > 0 && d->Ev > 0 && d->E % 16 == 0 && d->Ev % 16 == 0 && d->E <= 16 * ATT_VN &&
                 d->Ev <= 16 * ATT_VN;
    return c->dtype == CLG_F32 && heads && c->q.col == 1 && c->k.col == 1 && c->v.col == 1 && (!g || g->col == 1);
}

static bool att_get(clg_device *dev, const att_call *c, const char *name, const att_operand *g, att_kernel *ak)
{
    char full[32];
    ak->rows = clg__device_params(dev)->attention_rows;
    ak->vec = ak->rows && att_vectors(c, g);
    /* heads of 16, 32 or 64 (keys and values alike) have kernels of their own, whose
     * vector loops unroll and keep their accumulators in registers */
    int64_t hd = c->d.E == c->d.Ev && (c->d.E == 16 || c->d.E == 32 || c->d.E == 64) ? c->d.E : 0;
    if (ak->vec && hd && strcmp(name, "attn_bwd_pre"))
        snprintf(full, sizeof full, "%s_vec%lld", name, (long long)hd);
    else
        snprintf(full, sizeof full, "%s%s", name, ak->vec ? "_vec" : ak->rows ? "_rows" : "");
    ak->k = clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(c->dtype), full);
    if (!ak->k) return false;
    ak->w = ak->rows ? 1 : group_width(dev, ak->k);
    ak->ncols = ak->vec ? 16 * ATT_VN : ak->rows ? ATT_RD : (int64_t)ATT_ND * (int64_t)ak->w;
    return true;
}

/* Launch over n rows of each of the B batch entries: exactly (rows), in groups of 16
 * rounded up (vec: POCL compiles one group shape, not one per tail), or a group of w per
 * row with `nlocal` local scratch arrays of w values (tiles). */
static clg_status att_launch(clg_device *dev, const att_kernel *ak, clg_arg *a, int n, int nlocal, int64_t rows,
                             const att_call *c)
{
    if (ak->vec) {   /* groups of 16 rows, the last one checked in the kernel */
        size_t global[2] = {((size_t)rows + 15) / 16 * 16, (size_t)c->d.B}, local[2] = {16, 1};
        return clg__launch(dev, ak->k, a, n, 2, global, local);
    }
    if (ak->rows) return clg__launch_rows(dev, ak->k, a, n, (size_t)rows, (size_t)c->d.B);
    for (int i = 0; i < nlocal; i++) a[n++] = CLG_ARG_LOCAL(ak->w * clg_dtype_size(c->cdt));
    size_t global[3] = {ak->w, (size_t)rows, (size_t)c->d.B}, local[3] = {ak->w, 1, 1};
    return clg__launch(dev, ak->k, a, n, 3, global, local);
}

/* How many rows of the walked axis one launch takes: whole tiles of w while a work-item's
 * loop iterations stay under item_loops (per_tile: one tile's; fixed: the rest). 0 (with
 * the error recorded) when not even one tile fits. */
static int64_t rows_per_launch(clg_device *dev, size_t w, int64_t per_tile, int64_t fixed, const att_dims *d)
{
    int64_t budget = (int64_t)clg__device_params(dev)->item_loops - fixed;
    if (budget < per_tile) {
        clg__op_fail(dev, CLG_ERR_INVALID_ARGUMENT, OP,
                     "head sizes E = %lld, Ev = %lld need %lld loop iterations per work-item and tile of %zu, over "
                     "the device's limit (item_loops = %zu)", (long long)d->E, (long long)d->Ev,
                     (long long)(per_tile + fixed), w, clg__device_params(dev)->item_loops);
        return 0;
    }
    return budget / per_tile * (int64_t)w;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ---- forward ------------------------------------------------------------------------------- */


static int push_common(clg_arg *a, const att_call *c)
{
    int n = 0;
    a[n++] = CLG_ARG_I(c->d.L);
    a[n++] = CLG_ARG_I(c->d.S);
    a[n++] = CLG_ARG_I(c->d.E);
    a[n++] = CLG_ARG_I(c->d.Ev);
    a[n++] = CLG_ARG_I(c->d.nb);
    a[n++] = clg__arg_int8(c->d.bshape, c->d.nb);
    n = push_operand(a, n, &c->q, c->d.nb);
    n = push_operand(a, n, &c->k, c->d.nb);
    n = push_operand(a, n, &c->v, c->d.nb);
    n = push_operand(a, n, &c->m, c->d.nb);
    a[n++] = CLG_ARG_I(c->has_mask);
    return n;
}

/* O and lse: every column range of Ev (one at least, for lse) over every key range.
 * Loop trips per work-item and key: the score's E, the columns' nu (tiles: and two group
 * reductions); plus the state's read and write. With dropout, the first launch takes the
 * generator's position into c->drop.pos. */
static clg_status forward(clg_device *dev, att_call *c, clg_tensor *o, clg_tensor *lse)
{
    att_kernel ak;
    if (!att_get(dev, c, "attn_fwd", NULL, &ak)) return dev->status;
    int64_t w = (int64_t)ak.w, nu = ak.rows ? min64(ATT_RD, c->d.Ev) : min64(ATT_ND, cdiv(c->d.Ev, w));
    int64_t ne = c->d.E / 16, nv = c->d.Ev / 16;   /* the vector kernels' trips per key */
    int64_t per = ak.vec ? rows_per_launch(dev, 1, ne + nv + 3, 2 * (ne + nv) + 8, &c->d)
                         : rows_per_launch(dev, ak.w, c->d.E + nu * w + (ak.rows ? 4 : 4 * log2i(ak.w) + 8),
                                           2 * nu + 4, &c->d);
    if (!per) return dev->status;
    int64_t nkeys = c->d.S ? cdiv(c->d.S, per) : 1, ncol = c->d.Ev ? cdiv(c->d.Ev, ak.ncols) : 1;
    clg_tensor *acc = NULL, *ml = NULL;
    if (nkeys > 1) {
        acc = clg__tensor_new(dev, c->cdt, 1, (int64_t[]){c->d.B * c->d.L * c->d.Ev});
        ml = clg__tensor_new(dev, c->cdt, 1, (int64_t[]){c->d.B * c->d.L * 2});
        if (!acc || !ml) {
            clg_tensor_free(acc);
            return dev->status;
        }
    }
    const clg_buffer *accm = acc ? acc->buf : lse->buf, *mlm = ml ? ml->buf : lse->buf;
    clg_status st = CLG_OK;
    for (int64_t cc = 0; cc < ncol && !st; cc++)
        for (int64_t kc = 0; kc < nkeys && !st; kc++) {
            clg_arg a[64];
            int n = push_common(a, c);
            a[n++] = CLG_ARG_B(o->buf);
            a[n++] = CLG_ARG_B(lse->buf);
            a[n++] = CLG_ARG_B(accm);
            a[n++] = CLG_ARG_B(mlm);
            a[n++] = CLG_ARG_I(kc * per);
            a[n++] = CLG_ARG_I(min64(c->d.S, (kc + 1) * per));
            a[n++] = CLG_ARG_I(cc * ak.ncols);
            a[n++] = CLG_ARG_I(min64(ak.ncols, c->d.Ev - cc * ak.ncols));
            a[n++] = CLG_ARG_I(kc == 0);
            a[n++] = CLG_ARG_I(kc == nkeys - 1);
            a[n++] = CLG_ARG_I(c->causal);
            a[n++] = clg__arg_scalar(c->cdt, c->scale);
            n = push_drop(a, n, &c->drop, c->cdt, cc == 0 && kc == 0);
            st = att_launch(dev, &ak, a, n, 2, c->d.L, c);
        }
    clg_tensor_free(acc);
    clg_tensor_free(ml);
    return st;
}

/* ---- backward ------------------------------------------------------------------------------ */

/* Dr_i = sum_d dO_i O_i, per query row. */
static clg_tensor *row_dots(clg_device *dev, const att_call *c, clg_tensor *o, const att_operand *g)
{
    att_kernel ak;
    if (!att_get(dev, c, "attn_bwd_pre", g, &ak)) return NULL;
    if (cdiv(c->d.Ev, (int64_t)ak.w) + log2i(ak.w) + 4 > (int64_t)clg__device_params(dev)->item_loops)
        return clg__op_fail(dev, CLG_ERR_INVALID_ARGUMENT, OP, "value size Ev = %lld over the device's loop limit "
                            "(item_loops = %zu)", (long long)c->d.Ev, clg__device_params(dev)->item_loops);
    clg_tensor *dr = clg__tensor_new(dev, c->cdt, 1, (int64_t[]){c->d.B * c->d.L});
    if (!dr) return NULL;
    clg_arg a[16];
    int n = 0;
    a[n++] = CLG_ARG_I(c->d.L);
    a[n++] = CLG_ARG_I(c->d.Ev);
    a[n++] = CLG_ARG_I(c->d.nb);
    a[n++] = clg__arg_int8(c->d.bshape, c->d.nb);
    a[n++] = CLG_ARG_B(o->buf);
    a[n++] = CLG_ARG_B(g->buf);
    a[n++] = CLG_ARG_I(g->off);
    a[n++] = clg__arg_int8(g->bstr, c->d.nb);
    a[n++] = CLG_ARG_I(g->row);
    a[n++] = CLG_ARG_I(g->col);
    a[n++] = CLG_ARG_B(dr->buf);
    if (att_launch(dev, &ak, a, n, 1, c->d.L, c) != CLG_OK) {
        clg_tensor_free(dr);
        return NULL;
    }
    return dr;
}

/* dQ into dq (compute type, contiguous [B, L, E]); per key: the score, dP's Ev, the columns. */
static clg_status grad_q(clg_device *dev, const att_call *c, const att_operand *g, clg_tensor *lse, clg_tensor *dr,
                         clg_tensor *dq)
{
    att_kernel ak;
    if (!att_get(dev, c, "attn_bwd_dq", g, &ak)) return dev->status;
    int64_t w = (int64_t)ak.w, nu = ak.rows ? min64(ATT_RD, c->d.E) : min64(ATT_ND, cdiv(c->d.E, w));
    int64_t ne = c->d.E / 16, nv = c->d.Ev / 16;   /* the vector kernels' trips per key */
    int64_t per = ak.vec ? rows_per_launch(dev, 1, 2 * ne + nv + 3, 2 * ne + nv + 8, &c->d)
                         : rows_per_launch(dev, ak.w, c->d.E + c->d.Ev + nu * w + 8, nu + 4, &c->d);
    if (!per) return dev->status;
    int64_t nkeys = c->d.S ? cdiv(c->d.S, per) : 1, ncol = cdiv(c->d.E, ak.ncols);
    att_drop drop = c->drop;   /* drawn at again, never drawn */
    clg_status st = CLG_OK;
    for (int64_t cc = 0; cc < ncol && !st; cc++)
        for (int64_t kc = 0; kc < nkeys && !st; kc++) {
            clg_arg a[64];
            int n = push_common(a, c);
            n = push_operand(a, n, g, c->d.nb);
            a[n++] = CLG_ARG_B(lse->buf);
            a[n++] = CLG_ARG_B(dr->buf);
            a[n++] = CLG_ARG_B(dq->buf);
            a[n++] = CLG_ARG_I(kc * per);
            a[n++] = CLG_ARG_I(min64(c->d.S, (kc + 1) * per));
            a[n++] = CLG_ARG_I(cc * ak.ncols);
            a[n++] = CLG_ARG_I(min64(ak.ncols, c->d.E - cc * ak.ncols));
            a[n++] = CLG_ARG_I(kc == 0);
            a[n++] = CLG_ARG_I(c->causal);
            a[n++] = clg__arg_scalar(c->cdt, c->scale);
            n = push_drop(a, n, &drop, c->cdt, false);
            st = att_launch(dev, &ak, a, n, 1, c->d.L, c);
        }
    return st;
}

/* dK and dV into dk [B, S, E] and dv [B, S, Ev] (compute type, contiguous); per query:
 * the score, dP's Ev, both gradients' columns. */
static clg_status grad_kv(clg_device *dev, const att_call *c, const att_operand *g, clg_tensor *lse, clg_tensor *dr,
                          clg_tensor *dk, clg_tensor *dv)
{
    att_kernel ak;
    if (!att_get(dev, c, "attn_bwd_dkv", g, &ak)) return dev->status;
    int64_t wide = c->d.E > c->d.Ev ? c->d.E : c->d.Ev, w = (int64_t)ak.w;
    int64_t nu = ak.rows ? min64(ATT_RD, wide) : min64(ATT_ND, cdiv(wide, w));
    int64_t ne = c->d.E / 16, nv = c->d.Ev / 16;   /* the vector kernels' trips per query */
    /* (+ 4: the kernels of one head size count a trip more per query where llvmpipe runs
     * their unrolled loops as loops) */
    int64_t per = ak.vec ? rows_per_launch(dev, 1, 2 * (ne + nv) + 4, 2 * (ne + nv) + 8, &c->d)
                         : rows_per_launch(dev, ak.w, c->d.E + c->d.Ev + 2 * nu * w + 8, 2 * nu + 4, &c->d);
    if (!per) return dev->status;
    int64_t nq = c->d.L ? cdiv(c->d.L, per) : 1, ncol = wide ? cdiv(wide, ak.ncols) : 1;
    att_drop drop = c->drop;   /* drawn at again, never drawn */
    clg_status st = CLG_OK;
    for (int64_t cc = 0; cc < ncol && !st; cc++)
        for (int64_t qc = 0; qc < nq && !st; qc++) {
            clg_arg a[64];
            int n = push_common(a, c);
            n = push_operand(a, n, g, c->d.nb);
            a[n++] = CLG_ARG_B(lse->buf);
            a[n++] = CLG_ARG_B(dr->buf);
            a[n++] = CLG_ARG_B(dk->buf);
            a[n++] = CLG_ARG_B(dv->buf);
            a[n++] = CLG_ARG_I(qc * per);
            a[n++] = CLG_ARG_I(min64(c->d.L, (qc + 1) * per));
            a[n++] = CLG_ARG_I(cc * ak.ncols);
            a[n++] = CLG_ARG_I(min64(ak.ncols, wide - cc * ak.ncols));
            a[n++] = CLG_ARG_I(qc == 0);
            a[n++] = CLG_ARG_I(c->causal);
            a[n++] = clg__arg_scalar(c->cdt, c->scale);
            n = push_drop(a, n, &drop, c->cdt, false);
            st = att_launch(dev, &ak, a, n, 2, c->d.S, c);
        }
    return st;
}

/* ---- the op ---------------------------------------------------------------------------------- */

/* Shapes: q [..., L, E], k [..., S, E], v [..., S, Ev] (batch axes broadcast), the mask
 * (compute type, already converted) broadcast to [..., L, S]. */
static bool plan(att_call *c, clg_tensor *q, clg_tensor *k, clg_tensor *v, clg_tensor *mask)
{
    memset(c, 0, sizeof *c);
    clg_device *dev = q->dev;
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2) {
        clg__op_fail(dev, CLG_ERR_SHAPE, OP, "q %s, k %s, v %s: each needs at least 2 axes ([..., L, E], [..., S, E], "
                     "[..., S, Ev])", CLG_DESC(q), CLG_DESC(k), CLG_DESC(v));
        return false;
    }
    att_dims *d = &c->d;
    d->L = q->shape[q->ndim - 2];
    d->E = q->shape[q->ndim - 1];
    d->S = k->shape[k->ndim - 2];
    d->Ev = v->shape[v->ndim - 1];
    bool ok = k->shape[k->ndim - 1] == d->E && v->shape[v->ndim - 2] == d->S;
    int n = q->ndim - 2;
    memcpy(d->bshape, q->shape, sizeof(int64_t) * (size_t)n);
    ok = ok && clg__broadcast_shapes(n, d->bshape, k->ndim - 2, k->shape, &n, d->bshape);
    ok = ok && clg__broadcast_shapes(n, d->bshape, v->ndim - 2, v->shape, &n, d->bshape);
    if (ok && mask) {
        int64_t full[CLG_MAX_DIMS], got[CLG_MAX_DIMS];
        memcpy(full, d->bshape, sizeof(int64_t) * (size_t)n);
        full[n] = d->L;
        full[n + 1] = d->S;
        int m = 0;
        ok = mask->ndim <= n + 2 && clg__broadcast_shapes(n + 2, full, mask->ndim, mask->shape, &m, got) &&
             !memcmp(got, full, sizeof(int64_t) * (size_t)(n + 2));
    }
    if (!ok) {
        clg__op_fail(dev, CLG_ERR_SHAPE, OP, "q %s, k %s, v %s%s%s: want q [..., L, E], k [..., S, E], v [..., S, Ev] "
                     "with batch axes that broadcast, and a mask that broadcasts to [..., L, S]", CLG_DESC(q),
                     CLG_DESC(k), CLG_DESC(v), mask ? ", mask " : "", mask ? CLG_DESC(mask) : "");
        return false;
    }
    d->nb = n;
    d->B = 1;
    for (int a = 0; a < n; a++) d->B *= d->bshape[a];
    if (!clg__check_numel(OP, dev, d->B * d->L * (d->Ev > d->E ? d->Ev : d->E)) ||
        !clg__check_numel(OP, dev, d->B * d->S * (d->Ev > d->E ? d->Ev : d->E)))
        return false;
    c->q = operand(q, d);
    c->k = operand(k, d);
    c->v = operand(v, d);
    c->has_mask = mask != NULL;
    if (mask) {
        /* the mask as a [..., L, S] operand: a tensor with fewer axes lines up on the right */
        c->m = (att_operand){mask->buf, mask->offset, {0}, 0, 0};
        int lead = mask->ndim - 2;
        for (int a = 0; a < n; a++) {
            int ma = a - (n - lead);
            c->m.bstr[a] = ma >= 0 && mask->shape[ma] != 1 ? mask->strides[ma] : 0;
        }
        int r = mask->ndim - 2, col = mask->ndim - 1;
        c->m.row = r >= 0 && mask->shape[r] != 1 ? mask->strides[r] : 0;
        c->m.col = col >= 0 && mask->shape[col] != 1 ? mask->strides[col] : 0;
    } else {
        c->m = c->q;   /* never read */
    }
    c->dtype = q->dtype;
    c->cdt = clg__compute_dtype(q->dtype);
    return true;
}

/* The mask in the compute type: a boolean (int32) one as 0 where nonzero (take part) and
 * -inf where zero, as PyTorch's bool masks; a float one added as it is (a taped cast
 * when its type differs). NULL with the error recorded on failure; *none when no mask. */
static clg_tensor *additive_mask(clg_tensor *mask, clg_dtype cdt)
{
    clg_device *dev = mask->dev;
    if (mask->dtype == CLG_I32) {
        clg_tensor *zero = clg_scalar(dev, cdt, 0), *ninf = clg_scalar(dev, cdt, -INFINITY);
        clg_tensor *m = zero && ninf ? clg_where(mask, zero, ninf) : NULL;
        clg_tensor_free(zero);
        clg_tensor_free(ninf);
        return m;
    }
    if (!clg__check_floating(OP, mask)) return NULL;
    return mask->dtype == cdt ? mask : clg_cast(mask, cdt);
}

static clg_status attention_bw(clg_node *node, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *q = node->inputs[0], *k = node->inputs[1], *v = node->inputs[2], *m = node->inputs[3];
    clg_tensor *y = node->out, *lse = node->saved[0];
    clg_device *dev = y->dev;
    att_call c;
    if (!plan(&c, q, k, v, m)) return dev->status;
    c.causal = node->i[3];
    c.scale = node->f[1];
    c.drop = (att_drop){node->f[0], {(uint64_t)node->i[0], (uint64_t)node->i[1], (int)node->i[2]}, 0};
    clg_tensor *gc = g->dtype == y->dtype ? g : clg__copy_as(g, y->dtype);
    if (!gc) return dev->status;
    att_operand go = operand(gc, &c.d);
    int64_t sh[CLG_MAX_DIMS];
    memcpy(sh, c.d.bshape, sizeof(int64_t) * (size_t)c.d.nb);
    int nd = c.d.nb + 2;
    clg_tensor *dr = row_dots(dev, &c, y, &go), *dq = NULL, *dk = NULL, *dv = NULL;
    clg_status st = dr ? CLG_OK : dev->status;
    bool wq = clg__wants_grad(node, 0), wkv = clg__wants_grad(node, 1) || clg__wants_grad(node, 2);
    if (!st && wq) {
        sh[nd - 2] = c.d.L;
        sh[nd - 1] = c.d.E;
        dq = clg__tensor_new(dev, c.cdt, nd, sh);
        st = dq ? grad_q(dev, &c, &go, lse, dr, dq) : dev->status;
    }
    if (!st && wkv) {
        sh[nd - 2] = c.d.S;
        sh[nd - 1] = c.d.E;
        dk = clg__tensor_new(dev, c.cdt, nd, sh);
        sh[nd - 1] = c.d.Ev;
        dv = dk ? clg__tensor_new(dev, c.cdt, nd, sh) : NULL;
        st = dv ? grad_kv(dev, &c, &go, lse, dr, dk, dv) : dev->status;
    }
    clg_tensor_free(dr);
    clg__release_copy(gc, g);
    clg_tensor *out[3] = {dq, dk, dv};
    for (int i = 0; i < 3; i++) {
        if (!st && out[i] && c.dtype != c.cdt) {   /* 16-bit inputs: their gradients rounded once */
            clg_tensor *h = clg__copy_as(out[i], c.dtype);
            clg_tensor_free(out[i]);
            out[i] = h;
            if (!h) st = dev->status;
        }
        gin[i] = st || !clg__wants_grad(node, i) ? NULL : out[i];
        if (!gin[i]) clg_tensor_free(out[i]);
    }
    return st;
}

static bool check_inputs(clg_tensor *q, clg_tensor *k, clg_tensor *v, clg_tensor *mask, double p, double scale)
{
    if (!clg__check_floating(OP, q) || !clg__check_same_dtype(OP, q, k) || !clg__check_same_dtype(OP, q, v) ||
        !clg__check_same_device(OP, q, k) || !clg__check_same_device(OP, q, v) ||
        (mask && !clg__check_same_device(OP, q, mask)))
        return false;
    if (!(p >= 0 && p <= 1)) {
        clg__op_fail(q->dev, CLG_ERR_INVALID_ARGUMENT, OP, "dropout_p = %g is not a probability (q %s)", p, CLG_DESC(q));
        return false;
    }
    if (!isfinite(scale)) {
        clg__op_fail(q->dev, CLG_ERR_INVALID_ARGUMENT, OP, "scale = %g is not finite (q %s)", scale, CLG_DESC(q));
        return false;
    }
    return true;
}

/* The forward on checked, cast inputs. */
static clg_tensor *attend(clg_tensor *q, clg_tensor *k, clg_tensor *v, clg_tensor *m, bool causal, double p,
                          double scale)
{
    clg_device *dev = q->dev;
    att_call c;
    if (!plan(&c, q, k, v, m)) return NULL;
    c.causal = causal;
    c.scale = scale != 0 ? scale : c.d.E ? 1.0 / sqrt((double)c.d.E) : 1.0;
    if (m && clg__needs_grad(dev, 1, &m))
        return clg__op_fail(dev, CLG_ERR_INVALID_ARGUMENT, OP, "the mask %s requires a gradient, which is not "
                            "computed: add a learned bias to the scores with the composed ops", CLG_DESC(m));
    /* the position: taken by the forward's first launch; four draws per Philox block */
    c.drop = (att_drop){p, {0, 0, -1}, ((uint64_t)(c.d.B * c.d.L * c.d.S) + 3) / 4};
    int64_t sh[CLG_MAX_DIMS];
    memcpy(sh, c.d.bshape, sizeof(int64_t) * (size_t)c.d.nb);
    sh[c.d.nb] = c.d.L;
    sh[c.d.nb + 1] = c.d.Ev;
    clg_tensor *y = clg__tensor_new(dev, c.dtype, c.d.nb + 2, sh);
    clg_tensor *lse = y ? clg__tensor_new(dev, c.cdt, 1, (int64_t[]){c.d.B * c.d.L}) : NULL;
    if (!lse || forward(dev, &c, y, lse) != CLG_OK) {
        char err[CLG_ERROR_MAX];
        memcpy(err, dev->error, sizeof err);
        clg_tensor_free(y);
        clg_tensor_free(lse);
        return clg__op_fail(dev, dev->status, OP, "q %s: %.7000s", CLG_DESC(q), err);
    }
    clg_node *node = NULL;
    y = clg__taped(y, CLG_OP_scaled_dot_product_attention, attention_bw, 4, (clg_tensor *const[]){q, k, v, m}, &node);
    if (node) {
        clg__node_save(node, 0, lse);
        node->f[0] = p;
        node->f[1] = c.scale;
        node->i[0] = (int64_t)c.drop.pos.seed;
        node->i[1] = (int64_t)c.drop.pos.offset;
        node->i[2] = c.drop.pos.reg;
        node->i[3] = causal;
    }
    clg_tensor_free(lse);
    return y;
}

/* 16-bit heads that the float32 vector kernels take, on a device whose attention runs a
 * work-item per row (the table's attention = rows: CPUs): computed on float32 casts of
 * q, k and v (exact) and the output narrowed once, as the 16-bit kernels round it; their
 * gradients come back through the casts, rounded once too. The 16-bit kernels are the
 * generic row ones, ~20x slower there (bench/RESULTS.md, session 37: the GPT's
 * mixed-bf16 step spent 75% of its time in them). */
static bool widened_heads(const clg_tensor *q, const clg_tensor *v)
{
    int64_t E = q->shape[q->ndim - 1], Ev = v->shape[v->ndim - 1];
    return clg__is_half(q->dtype) && q->ndim >= 2 && v->ndim >= 2 && clg__device_params(q->dev)->attention_rows &&
           E > 0 && Ev > 0 && E % 16 == 0 && Ev % 16 == 0 && E <= 16 * ATT_VN && Ev <= 16 * ATT_VN;
}

clg_tensor *clg_scaled_dot_product_attention(clg_tensor *q, clg_tensor *k, clg_tensor *v, clg_tensor *attn_mask,
                                             bool is_causal, double dropout_p, double scale)
{
    if (!q || !k || !v) return NULL;
    if (!check_inputs(q, k, v, attn_mask, dropout_p, scale)) return NULL;
    clg_tensor *qa = clg__autocast(q), *ka = qa ? clg__autocast(k) : NULL, *va = ka ? clg__autocast(v) : NULL;
    clg_tensor *m = va && attn_mask ? additive_mask(attn_mask, clg__compute_dtype(va->dtype)) : NULL;
    clg_tensor *y = NULL;
    if (va && (m || !attn_mask) && widened_heads(qa, va)) {
        clg_tensor *q32 = clg_cast(qa, CLG_F32), *k32 = q32 ? clg_cast(ka, CLG_F32) : NULL;
        clg_tensor *v32 = k32 ? clg_cast(va, CLG_F32) : NULL;
        clg_tensor *y32 = v32 ? attend(q32, k32, v32, m, is_causal, dropout_p, scale) : NULL;
        y = y32 ? clg_cast(y32, va->dtype) : NULL;
        clg_tensor *made[4] = {y32, v32, k32, q32};
        for (int i = 0; i < 4; i++) clg_tensor_free(made[i]);   /* the tape keeps what backward needs */
    } else if (va && (m || !attn_mask))
        y = attend(qa, ka, va, m, is_causal, dropout_p, scale);
    if (attn_mask) clg__drop_cast(m, attn_mask);
    clg__drop_cast(va, v);
    clg__drop_cast(ka, k);
    clg__drop_cast(qa, q);
    return y;
}
