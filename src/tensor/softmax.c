/* softmax.c: softmax and log_softmax along an axis, var and argmax over axes, and the
 * losses cross_entropy and mse, with their backward passes. Kernels:
 * cl_kernels/softmax.cl.
 *
 * The row kernels (softmax, var, argmax) see their operands as rows: the kept axes
 * index a row, the reduced axes run along it. Each operand goes to the kernel as an
 * offset plus the strides of both sets of axes, so permuted, sliced and broadcast
 * inputs are read where they lie, with no copy; one work-group reduces one row.
 *
 * cross_entropy is fused: one kernel computes each row's loss (and keeps the row's
 * max and log-sum-exp for the backward), a second reduces the rows for MEAN/SUM, and
 * the backward is one kernel, softmax minus the one-hot label, scaled.
 * Labels out of range: a label outside [0, C) cannot be reported as an error without
 * reading the labels back to the host, which ops never do. Such a row's loss is NaN
 * (so a MEAN or SUM is NaN too) and so is its gradient: the bad label cannot go
 * unnoticed, and nothing reads outside the logits. */
#include <stdio.h>
#include <string.h>

#include "tensor_impl.h"

#define PROGRAM "softmax"
#define ROWS_MAX_OPS 3
#define ROWS_WG_MAX 256

/* ---- rows: operands over kept (k) and reduced (r) axes ----------------------------------- */

/* One operand of a row kernel: its buffer and an element layout over the op's full
 * shape; an axis of size 1 in `shape` is broadcast (stride 0) along the full shape. */
typedef struct rows_operand {
    const clg_buffer *buf;
    int64_t offset;
    const int64_t *shape, *strides;
} rows_operand;

typedef struct rows_plan {
    int nops, nk, nr;
    int64_t kshape[CLG_MAX_DIMS], rshape[CLG_MAX_DIMS];
    int64_t kstr[ROWS_MAX_OPS][CLG_MAX_DIMS], rstr[ROWS_MAX_OPS][CLG_MAX_DIMS];
    int64_t rows, R;
} rows_plan;

static rows_operand operand(const clg_tensor *t)
{
    return (rows_operand){t->buf, t->offset, t->shape, t->strides};
}

/* Append axis `size` with the operands' strides to one group (kept or reduced),
 * merged into the group's last axis where every operand steps over both as one. */
static void group_add(int *n, int64_t *shape, int64_t (*str)[CLG_MAX_DIMS], int nops, int64_t size,
                      const int64_t *s)
{
    bool merge = *n > 0;
    for (int k = 0; k < nops && merge; k++) merge = str[k][*n - 1] == s[k] * size;
    int at = merge ? *n - 1 : (*n)++;
    shape[at] = merge ? shape[at] * size : size;
    for (int k = 0; k < nops; k++) str[k][at] = s[k];
}

static void rows_init(rows_plan *p, int ndim, const int64_t *shape, const bool *mask, int nops,
                      const rows_operand *ops)
{
    memset(p, 0, sizeof *p);
    p->nops = nops;
    p->rows = p->R = 1;
    for (int d = 0; d < ndim; d++) {
        if (mask[d]) p->R *= shape[d];
        else p->rows *= shape[d];
        if (shape[d] == 1) continue;   /* indexes nothing */
        int64_t s[ROWS_MAX_OPS];
        for (int k = 0; k < nops; k++) s[k] = ops[k].shape[d] == 1 ? 0 : ops[k].strides[d];
        if (mask[d]) group_add(&p->nr, p->rshape, p->rstr, nops, shape[d], s);
        else group_add(&p->nk, p->kshape, p->kstr, nops, shape[d], s);
    }
    /* An empty group is one axis of size 1 (strides 0 from the memset). */
    if (!p->nk) p->kshape[p->nk++] = 1;
    if (!p->nr) p->rshape[p->nr++] = 1;
}

/* The work-group size for rows of R elements: 32 for short rows, else 256, halved
 * while the kernel or device allow less. Two sizes only: POCL compiles a kernel anew
 * for every work-group size it meets, and a second or so each adds up. */
static size_t rows_wg(const clg_device *dev, const clg_kernel *k, int64_t R)
{
    size_t wg = R <= 32 ? 32 : ROWS_WG_MAX;
    while (wg > 1 && (wg > k->wg_max || wg > clg__device_params(dev)->max_group)) wg >>= 1;
    return wg;
}

/* Launch `kernel` with one work-group per row: arguments (R, nk, kshape, nr, rshape,
 * per operand: buffer, offset, kept strides, reduced strides, extra..., then local
 * scratch of one T per work-item, plus one int when int_scratch). */
/* Whether rows of R elements take kernel's work-item-per-row variant (NAME_item): on
 * devices whose table says row_reduce = items, for the kernels that have one, when the
 * row's passes (three at most) stay within item_loops. */
/* A row kernel's work-item makes up to 3 passes over its part of the row, with index
 * arithmetic that some drivers (llvmpipe) count as loop steps even on branches not
 * taken: 12 steps per element visited, measured there, is the cost that item_loops
 * bounds. */
enum { ROW_STEPS = 12 };

/* With vec (the launch can take NAME_vec), a work-item's loops step 16 elements at a
 * time, plus at most 15 one by one, with no index arithmetic: 4 steps per vector (3
 * passes and a margin) bound them. Rows of 65,536 then fit item_loops (softmax over
 * [16, 65536] took the group kernels: 2.6 ms against 0.5 by vectors). */
static int64_t item_steps(int64_t R, bool vec)
{
    return vec ? 4 * (R / 16 + 16) : ROW_STEPS * R;
}

static bool rows_by_item_as(const clg_device *dev, const char *kernel, int64_t R, bool vec)
{
    static const char *const with_item[] = {"softmax_fwd", "softmax_bwd", "var_fwd", "var_bwd", "ce_fwd"};
    const clg_device_params *dp = clg__device_params(dev);
    if (!dp->row_items || item_steps(R, vec) > (int64_t)dp->item_loops) return false;
    for (size_t i = 0; i < sizeof with_item / sizeof *with_item; i++)
        if (!strcmp(kernel, with_item[i])) return true;
    return false;
}

static bool rows_by_item(const clg_device *dev, const char *kernel, int64_t R)
{
    return rows_by_item_as(dev, kernel, R, false);
}

/* Whether rows of R are too long for kernel on this device: its work-items (one per row,
 * or a group of wg per row) would step past item_loops. The ops then compose the same
 * result from reductions, which split long sums. */
static bool rows_too_long_as(clg_device *dev, clg_dtype dtype, const char *kernel, int64_t R, bool vec)
{
    if (rows_by_item_as(dev, kernel, R, vec)) return false;
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(dtype), kernel);
    if (!k) return false;   /* the launch reports the build error */
    int64_t wg = (int64_t)rows_wg(dev, k, R);
    return ROW_STEPS * ((R + wg - 1) / wg) > (int64_t)clg__device_params(dev)->item_loops;
}

static bool rows_too_long(clg_device *dev, clg_dtype dtype, const char *kernel, int64_t R)
{
    return rows_too_long_as(dev, dtype, kernel, R, false);
}

/* Whether the work-item-per-row launch can take kernel's NAME_vec variant (softmax.cl:
 * 16 elements at a time along the row): softmax's float32 rows of at least 16 elements
 * that lie next to each other in every operand. */
static bool rows_by_vector(clg_dtype dtype, const char *kernel, const rows_plan *p)
{
    if (dtype != CLG_F32 || p->nr != 1 || p->R < 16) return false;
    if (strcmp(kernel, "softmax_fwd") && strcmp(kernel, "softmax_bwd")) return false;
    for (int i = 0; i < p->nops; i++)
        if (p->rstr[i][0] != 1) return false;
    return true;
}

/* The NAME_vec launch: per operand its buffer, offset and kept strides, then extra. */
static clg_status rows_launch_vec(clg_device *dev, const char *kernel, const rows_plan *p, const rows_operand *ops,
                                  const clg_arg *extra, int nextra)
{
    char name[64];
    snprintf(name, sizeof name, "%s_vec", kernel);
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(CLG_F32), name);
    if (!k) return dev->status;
    clg_arg a[3 + 3 * ROWS_MAX_OPS + 2];
    int na = 0;
    a[na++] = CLG_ARG_I(p->R);
    a[na++] = CLG_ARG_I(p->nk);
    a[na++] = clg__arg_int8(p->kshape, p->nk);
    for (int i = 0; i < p->nops; i++) {
        a[na++] = CLG_ARG_B(ops[i].buf);
        a[na++] = CLG_ARG_I(ops[i].offset);
        a[na++] = clg__arg_int8(p->kstr[i], p->nk);
    }
    for (int i = 0; i < nextra && i < 2; i++) a[na++] = extra[i];
    return clg__launch_1d(dev, k, a, na, (size_t)p->rows);
}

/* On devices whose table says row_reduce = items, rows too long for a work-item each
 * (past item_loops) are few and long: a work-group per row leaves most of a CPU's cores
 * idle and pays POCL's barriers, where the composed reductions split each row over many
 * work-items (softmax on POCL: [16, 65536] 9.2 -> 3.2 ms, [64, 16384] 8.2 -> 3.0 ms). */
static bool rows_by_reductions(const clg_device *dev, int64_t R, bool vec)
{
    const clg_device_params *dp = clg__device_params(dev);
    return dp->row_items && item_steps(R, vec) > (int64_t)dp->item_loops;
}

static clg_status rows_launch(clg_device *dev, clg_dtype dtype, const char *kernel, const rows_plan *p,
                              const rows_operand *ops, const clg_arg *extra, int nextra, bool int_scratch)
{
    if (p->rows == 0) return CLG_OK;
    bool vec = rows_by_vector(dtype, kernel, p);
    if (vec && rows_by_item_as(dev, kernel, p->R, true)) return rows_launch_vec(dev, kernel, p, ops, extra, nextra);
    bool item = rows_by_item(dev, kernel, p->R);
    char name[64];
    snprintf(name, sizeof name, "%s%s", kernel, item ? "_item" : "");
    /* 16-bit tensors reach only the kernels that store TS (softmax.cl), and compute in
     * float32: their local scratch is float32 too. */
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(dtype), name);
    if (!k) return dev->status;
    size_t wg = item ? 1 : rows_wg(dev, k, p->R), global = (size_t)p->rows * wg;
    clg_arg a[5 + 4 * ROWS_MAX_OPS + 4];
    int na = 0;
    a[na++] = CLG_ARG_I(p->R);
    a[na++] = CLG_ARG_I(p->nk);
    a[na++] = clg__arg_int8(p->kshape, p->nk);
    a[na++] = CLG_ARG_I(p->nr);
    a[na++] = clg__arg_int8(p->rshape, p->nr);
    for (int i = 0; i < p->nops; i++) {
        a[na++] = CLG_ARG_B(ops[i].buf);
        a[na++] = CLG_ARG_I(ops[i].offset);
        a[na++] = clg__arg_int8(p->kstr[i], p->nk);
        a[na++] = clg__arg_int8(p->rstr[i], p->nr);
    }
    for (int i = 0; i < nextra && i < 2; i++) a[na++] = extra[i];
    if (item) return clg__launch_1d(dev, k, a, na, (size_t)p->rows);
    a[na++] = CLG_ARG_LOCAL(wg * (clg__is_half(dtype) ? sizeof(float) : clg_dtype_size(dtype)));
    if (int_scratch) a[na++] = CLG_ARG_LOCAL(wg * sizeof(int32_t));
    return clg__launch(dev, k, a, na, 1, &global, &wg);
}

/* A failed launch: the device's message, prefixed with the op and its input. */
static clg_tensor *launch_fail(const char *op, const clg_tensor *in, clg_tensor *y)
{
    clg_device *dev = in->dev;
    char err[CLG_ERROR_MAX];
    memcpy(err, dev->error, sizeof err);
    clg_tensor_free(y);
    return clg__op_fail(dev, dev->status, op, "%s: %.7000s", CLG_DESC(in), err);
}

/* ---- softmax and log_softmax ---------------------------------------------------------------- */

static clg_status softmax_bw_common(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *y = n->out;
    bool mask[CLG_MAX_DIMS] = {false};
    if (y->ndim) mask[n->i[0]] = true;
    clg_tensor *dx = clg__tensor_new(y->dev, y->dtype, y->ndim, y->shape);
    if (!dx) return y->dev->status;
    rows_operand ops[3] = {operand(y), operand(g), operand(dx)};
    rows_plan p;
    rows_init(&p, y->ndim, y->shape, mask, 3, ops);
    clg_arg mode = CLG_ARG_I(n->i[1]);
    if (rows_launch(y->dev, y->dtype, "softmax_bwd", &p, ops, &mode, 1, false) != CLG_OK) {
        clg_tensor_free(dx);
        return y->dev->status;
    }
    gin[0] = dx;
    return CLG_OK;
}

/* Long rows: z = a - max (a constant), log_softmax = z - log(sum(exp(z))), softmax its
 * exp; in float32 for 16-bit a, on the tape. */
static clg_tensor *softmax_composed(clg_tensor *a, int ax, int log_mode)
{
    clg_device *dev = a->dev;
    clg_tensor *af = clg__is_half(a->dtype) ? clg_cast(a, CLG_F32) : a;
    clg_no_grad_begin(dev);
    clg_tensor *m = af ? clg_max(af, 1, &ax, true) : NULL;
    clg_no_grad_end(dev);
    clg_tensor *z = clg_sub(af, m);
    clg_tensor *ls = clg_sub(z, clg_log(clg_sum(clg_exp(z), 1, &ax, true)));
    clg_tensor *y = log_mode ? ls : clg_exp(ls);
    return y && af != a ? clg_cast(y, a->dtype) : y;
}

static clg_tensor *softmax_op(const char *op, int id, clg_tensor *a, int axis, int log_mode)
{
    if (!a) return NULL;
    if (!clg__check_floating(op, a) || !clg__check_numel(op, a->dev, a->numel)) return NULL;
    int ax = clg__axis(op, a, axis, a->ndim ? a->ndim : 1);   /* a 0-d tensor is one row of one */
    if (ax < 0) return NULL;
    /* Whether the rows can take softmax_fwd_vec: float32 with the axis contiguous (y is) */
    bool vec = a->ndim && a->dtype == CLG_F32 && a->strides[ax] == 1 && a->shape[ax] >= 16;
    if (a->ndim && a->numel && (rows_too_long_as(a->dev, a->dtype, "softmax_fwd", a->shape[ax], vec) ||
                                rows_by_reductions(a->dev, a->shape[ax], vec)))
        return softmax_composed(a, ax, log_mode);
    clg_tensor *y = clg__tensor_new(a->dev, a->dtype, a->ndim, a->shape);
    if (!y) return NULL;
    bool mask[CLG_MAX_DIMS] = {false};
    if (a->ndim) mask[ax] = true;
    rows_operand ops[2] = {operand(a), operand(y)};
    rows_plan p;
    rows_init(&p, a->ndim, a->shape, mask, 2, ops);
    clg_arg mode = CLG_ARG_I(log_mode);
    if (y->numel && rows_launch(a->dev, a->dtype, "softmax_fwd", &p, ops, &mode, 1, false) != CLG_OK)
        return launch_fail(op, a, y);
    clg_node *node = NULL;
    y = clg__taped(y, id, softmax_bw_common, 1, &a, &node);
    if (node) {
        node->i[0] = ax;
        node->i[1] = log_mode;
    }
    return y;
}

clg_tensor *clg_softmax(clg_tensor *a, int axis) { return softmax_op("softmax", CLG_OP_softmax, a, axis, 0); }

clg_tensor *clg_log_softmax(clg_tensor *a, int axis)
{
    return softmax_op("log_softmax", CLG_OP_log_softmax, a, axis, 1);
}

/* ---- var ------------------------------------------------------------------------------------------ */

typedef struct axes_plan {
    bool mask[CLG_MAX_DIMS];
    int out_ndim;
    int64_t out_shape[CLG_MAX_DIMS];
    int64_t keep_shape[CLG_MAX_DIMS];     /* the result with keepdim (input's ndim) */
    int64_t keep_strides[CLG_MAX_DIMS];   /* contiguous over keep_shape */
    int64_t R;
} axes_plan;

static bool plan_axes(const char *op, const clg_tensor *t, int naxes, const int *axes, bool keepdim, axes_plan *p)
{
    memset(p, 0, sizeof *p);
    if (!clg__axes_mask(op, t, naxes, axes, p->mask)) return false;
    p->R = 1;
    for (int d = 0; d < t->ndim; d++) {
        p->keep_shape[d] = p->mask[d] ? 1 : t->shape[d];
        if (p->mask[d]) p->R *= t->shape[d];
        if (keepdim || !p->mask[d]) p->out_shape[p->out_ndim++] = p->keep_shape[d];
    }
    clg__contiguous_strides(t->ndim, p->keep_shape, p->keep_strides);
    return true;
}

/* dx = g * 2 (x - mean) / div. g has the result's shape; the kernel reads it over the
 * input's axes, with stride 0 along the reduced ones. */
static clg_status var_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *x = n->inputs[0];
    bool mask[CLG_MAX_DIMS];
    int64_t keep[CLG_MAX_DIMS], gstr[CLG_MAX_DIMS];
    bool keepdim = n->f[1] != 0;
    for (int d = 0, gd = 0; d < x->ndim; d++) {
        mask[d] = n->i[CLG_MAX_DIMS + d] != 0;
        keep[d] = n->i[d];
        gstr[d] = (keepdim || !mask[d]) ? g->strides[gd++] : 0;
    }
    clg_tensor *dx = clg__tensor_new(x->dev, x->dtype, x->ndim, x->shape);
    if (!dx) return x->dev->status;
    rows_operand ops[3] = {operand(x), {g->buf, g->offset, keep, gstr}, operand(dx)};
    rows_plan p;
    rows_init(&p, x->ndim, x->shape, mask, 3, ops);
    clg_arg div = clg__arg_scalar(x->dtype, n->f[0]);   /* float32 for 16-bit x */
    if (dx->numel && rows_launch(x->dev, x->dtype, "var_bwd", &p, ops, &div, 1, false) != CLG_OK) {
        clg_tensor_free(dx);
        return x->dev->status;
    }
    gin[0] = dx;
    return CLG_OK;
}

clg_tensor *clg_var(clg_tensor *a, int naxes, const int *axes, int correction, bool keepdim)
{
    if (!a) return NULL;
    axes_plan ap;
    if (!clg__check_floating("var", a) || !clg__check_numel("var", a->dev, a->numel) ||
        !plan_axes("var", a, naxes, axes, keepdim, &ap))
        return NULL;
    /* PyTorch's divisor: max(0, R - correction); a zero one gives NaN (or inf). */
    double div = (double)ap.R - correction > 0 ? (double)ap.R - correction : 0.0;
    if (a->numel && rows_too_long(a->dev, a->dtype, "var_fwd", ap.R)) {   /* long rows: by reductions */
        clg_tensor *af = clg__is_half(a->dtype) ? clg_cast(a, CLG_F32) : a;
        clg_tensor *d = clg_sub(af, clg_mean(af, naxes, axes, true));
        clg_tensor *v = clg_div_scalar(clg_sum(clg_mul(d, d), naxes, axes, keepdim), div);
        return v && af != a ? clg_cast(v, a->dtype) : v;
    }
    clg_tensor *y = clg__tensor_new(a->dev, a->dtype, ap.out_ndim, ap.out_shape);
    if (!y) return NULL;
    rows_operand ops[2] = {operand(a), {y->buf, y->offset, ap.keep_shape, ap.keep_strides}};
    rows_plan p;
    rows_init(&p, a->ndim, a->shape, ap.mask, 2, ops);
    clg_arg d = clg__arg_scalar(a->dtype, div);
    if (rows_launch(a->dev, a->dtype, "var_fwd", &p, ops, &d, 1, false) != CLG_OK) return launch_fail("var", a, y);
    clg_node *node = NULL;
    y = clg__taped(y, CLG_OP_var, var_bw, 1, &a, &node);
    if (node) {
        for (int k = 0; k < a->ndim; k++) {
            node->i[k] = ap.keep_shape[k];
            node->i[CLG_MAX_DIMS + k] = ap.mask[k];
        }
        node->f[0] = div;
        node->f[1] = keepdim;
    }
    return y;
}

/* ---- argmax ---------------------------------------------------------------------------------------- */

/* op: "argmax" or "argmin", whose kernel is <op>_fwd. */
/* Rows too long for one work-group's loops: the first position of the row's extremum,
 * or of its first NaN where it has one (PyTorch's), from reductions: the least of
 * where(hit, position, R). Positions count in a's float type: exact up to 2^24 in
 * float32, longer rows are refused there. */
static clg_tensor *arg_composed(const char *op, clg_tensor *a, int ax, bool keepdim)
{
    clg_device *dev = a->dev;
    int64_t R = a->shape[ax], pshape[CLG_MAX_DIMS];
    if (a->dtype == CLG_F32 && R > (1 << 24))
        return clg__op_fail(dev, CLG_ERR_SHAPE, op, "%s: %lld elements along axis %d: over what one work-group walks "
                            "(item_loops) and over 2^24 positions in float32", CLG_DESC(a), (long long)R, ax);
    for (int d = 0; d < a->ndim; d++) pshape[d] = d == ax ? R : 1;
    clg_no_grad_begin(dev);
    clg_tensor *m = !strcmp(op, "argmax") ? clg_max(a, 1, &ax, true) : clg_min(a, 1, &ax, true);   /* NaN wins */
    clg_tensor *hit = clg_where(clg_ne(m, m), clg_ne(a, a), clg_eq(a, m));
    clg_tensor *pos = clg_reshape(clg_arange(dev, a->dtype, 0, (double)R, 1), a->ndim, pshape);
    clg_tensor *cand = clg_where(hit, pos, clg_full(dev, a->dtype, 0, NULL, (double)R));
    clg_tensor *y = clg_cast(clg_min(cand, 1, &ax, keepdim), CLG_I32);
    clg_no_grad_end(dev);
    return y;
}

static clg_tensor *arg_extremum(const char *op, clg_tensor *a, int axis, bool keepdim)
{
    if (!a) return NULL;
    if (!clg__check_numel(op, a->dev, a->numel)) return NULL;
    if (clg__is_half(a->dtype)) {   /* widening is exact: the same positions */
        clg_no_grad_begin(a->dev);
        clg_tensor *w = clg__widen16(a);
        clg_tensor *r = w ? arg_extremum(op, w, axis, keepdim) : NULL;
        clg_no_grad_end(a->dev);
        clg__drop_cast(w, a);
        return r;
    }
    int ax = clg__axis(op, a, axis, a->ndim ? a->ndim : 1);
    if (ax < 0) return NULL;
    axes_plan ap;
    if (!plan_axes(op, a, a->ndim ? 1 : 0, &ax, keepdim, &ap)) return NULL;
    if (ap.R == 0) return clg__op_fail(a->dev, CLG_ERR_SHAPE, op, "axis %d of %s is empty", axis, CLG_DESC(a));
    char kname[16];
    snprintf(kname, sizeof kname, "%s_fwd", op);
    if (a->ndim && rows_too_long(a->dev, a->dtype, kname, ap.R)) return arg_composed(op, a, ax, keepdim);
    clg_tensor *y = clg__tensor_new(a->dev, CLG_I32, ap.out_ndim, ap.out_shape);
    if (!y) return NULL;
    rows_operand ops[2] = {operand(a), {y->buf, y->offset, ap.keep_shape, ap.keep_strides}};
    rows_plan p;
    rows_init(&p, a->ndim, a->shape, ap.mask, 2, ops);
    char kernel[16];
    snprintf(kernel, sizeof kernel, "%s_fwd", op);
    if (rows_launch(a->dev, a->dtype, kernel, &p, ops, NULL, 0, true) != CLG_OK) return launch_fail(op, a, y);
    return y;   /* an index: not on the tape */
}

clg_tensor *clg_argmax(clg_tensor *a, int axis, bool keepdim) { return arg_extremum("argmax", a, axis, keepdim); }
clg_tensor *clg_argmin(clg_tensor *a, int axis, bool keepdim) { return arg_extremum("argmin", a, axis, keepdim); }

/* ---- cross_entropy ---------------------------------------------------------------------------------- */

/* Whether cross_entropy's logits take the vector kernels (ce_fwd_vec, ce_bwd_vec):
 * float32 rows of unit stride, a work-item per row. */
static bool ce_by_vector(const clg_tensor *x)
{
    return x->dtype == CLG_F32 && x->strides[1] == 1 && rows_by_item_as(x->dev, "ce_fwd", x->shape[1], true);
}

/* dx = scale * g_i * (softmax(x) - onehot(label)); for MEAN/SUM g is one value. */
static clg_status cross_entropy_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *x = n->inputs[0], *lab = n->inputs[1], *stats = n->saved[0];
    clg_device *dev = x->dev;
    int64_t N = x->shape[0], C = x->shape[1];
    clg_tensor *dx = clg__tensor_new(dev, x->dtype, 2, x->shape);
    if (!dx) return dev->status;
    /* A work-item per row, 16 logits at a time, where the forward ran so (float32 rows of
     * unit stride); else as rows where they are long enough (no division per element),
     * else flat. */
    bool vec = ce_by_vector(x);
    bool rows = !vec && C >= (int64_t)clg__device_params(dev)->rows_min;
    const char *name = vec ? "ce_bwd_vec" : rows ? "ce_bwd_rows" : "ce_bwd";
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options(x->dtype), name);
    clg_arg a[] = {CLG_ARG_I(N), CLG_ARG_I(C), CLG_ARG_B(x->buf), CLG_ARG_I(x->offset),
                   CLG_ARG_I(x->strides[0]), CLG_ARG_I(x->strides[1]), CLG_ARG_B(lab->buf),
                   CLG_ARG_I(lab->offset), CLG_ARG_I(lab->strides[0]), CLG_ARG_B(stats->buf),
                   CLG_ARG_B(g->buf), CLG_ARG_I(g->offset), CLG_ARG_I(g->ndim ? g->strides[0] : 0),
                   clg__arg_scalar(x->dtype, n->f[0]), CLG_ARG_B(dx->buf)};
    int na = (int)(sizeof a / sizeof *a);
    clg_status st = !k ? dev->status
                    : vec  ? clg__launch_1d(dev, k, a, na, (size_t)N)
                    : rows ? clg__launch_rows(dev, k, a, na, (size_t)C, (size_t)N)
                           : clg__launch_1d(dev, k, a, na, (size_t)(N * C));
    if (st != CLG_OK) {
        clg_tensor_free(dx);
        return dev->status;
    }
    gin[0] = dx;
    return CLG_OK;
}

static bool check_cross_entropy(const clg_tensor *x, const clg_tensor *lab, clg_reduction reduction)
{
    const char *op = "cross_entropy";
    if (!clg__check_same_device(op, x, lab) || !clg__check_float(op, x) || !clg__check_numel(op, x->dev, x->numel))
        return false;
    if (x->ndim != 2)
        clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "logits must be [N, C], got %s", CLG_DESC(x));
    else if (lab->dtype != CLG_I32)
        clg__op_fail(x->dev, CLG_ERR_DTYPE, op, "labels must be int32, got %s", CLG_DESC(lab));
    else if (lab->ndim != 1 || lab->shape[0] != x->shape[0])
        clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "labels %s do not match logits %s: want [%lld]", CLG_DESC(lab),
                     CLG_DESC(x), (long long)x->shape[0]);
    else if ((unsigned)reduction > CLG_REDUCE_NONE)
        clg__op_fail(x->dev, CLG_ERR_INVALID_ARGUMENT, op, "unknown reduction %d", (int)reduction);
    else
        return true;
    return false;
}

/* Per-row losses [N] and stats [N, 2] (max, log-sum-exp of x - max). */
static clg_status cross_entropy_rows(clg_tensor *x, clg_tensor *lab, clg_tensor *loss, clg_tensor *stats)
{
    clg_device *dev = x->dev;
    int code;
    clg_buffer *word = clg__index_check("cross_entropy", "label", lab, x->shape[1], x, &code);
    /* float32 rows with unit stride: 16 logits at a time (ce_fwd_vec) */
    bool vec = ce_by_vector(x);
    bool item = vec || rows_by_item(dev, "ce_fwd", x->shape[1]);
    const char *name = vec ? "ce_fwd_vec" : item ? "ce_fwd_item" : "ce_fwd";
    clg_kernel *k = word ? clg__kernel_get(dev, PROGRAM, clg__dtype_options(x->dtype), name) : NULL;
    if (!k) return dev->status;
    size_t wg = item ? 1 : rows_wg(dev, k, x->shape[1]), global = (size_t)x->shape[0] * wg;
    clg_arg a[14];
    int na = 0;
    a[na++] = CLG_ARG_I(x->shape[1]);
    a[na++] = CLG_ARG_B(x->buf), a[na++] = CLG_ARG_I(x->offset);
    a[na++] = CLG_ARG_I(x->strides[0]), a[na++] = CLG_ARG_I(x->strides[1]);
    a[na++] = CLG_ARG_B(lab->buf), a[na++] = CLG_ARG_I(lab->offset), a[na++] = CLG_ARG_I(lab->strides[0]);
    a[na++] = CLG_ARG_B(loss->buf), a[na++] = CLG_ARG_I(loss->offset), a[na++] = CLG_ARG_B(stats->buf);
    if (!item) a[na++] = CLG_ARG_LOCAL(wg * clg_dtype_size(x->dtype));   /* the group kernel's scratch */
    a[na++] = CLG_ARG_B(word), a[na++] = CLG_ARG_I(code);
    if (item) return clg__launch_1d(dev, k, a, na, (size_t)x->shape[0]);
    return clg__launch(dev, k, a, na, 1, &global, &wg);
}

/* y = sum(loss) / div by one work-group; by the reduction (which splits long sums) when
 * the rows are more than the group's items may walk. */
static clg_status cross_entropy_reduce(clg_tensor *loss, clg_tensor *y, double div)
{
    clg_device *dev = loss->dev;
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options(loss->dtype), "ce_reduce");
    if (!k) return dev->status;
    size_t wg = rows_wg(dev, k, loss->numel), global = wg;
    if (ROW_STEPS * ((loss->numel + (int64_t)wg - 1) / (int64_t)wg) > (int64_t)clg__device_params(dev)->item_loops) {
        clg_no_grad_begin(dev);
        clg_tensor *m = clg_mul_scalar(clg_sum(loss, 0, NULL, false), 1.0 / div);
        clg_status st = m ? clg_copy_(y, m) : dev->status;
        clg_tensor_free(m);
        clg_no_grad_end(dev);
        return st;
    }
    clg_arg a[] = {CLG_ARG_I(loss->numel), CLG_ARG_B(loss->buf), CLG_ARG_B(y->buf), CLG_ARG_I(y->offset),
                   clg__arg_scalar(loss->dtype, div), CLG_ARG_LOCAL(wg * clg_dtype_size(loss->dtype))};
    return clg__launch(dev, k, a, (int)(sizeof a / sizeof *a), 1, &global, &wg);
}

clg_tensor *clg_cross_entropy(clg_tensor *logits, clg_tensor *labels, clg_reduction reduction)
{
    if (!logits || !labels) return NULL;
    /* 16-bit logits: the loss in float32, as PyTorch's autocast computes it (the cast is
     * taped, so the gradient goes back as 16 bits) */
    if (clg__is_half(logits->dtype)) {
        clg_tensor *wide = clg__widen16(logits);
        clg_tensor *loss = wide ? clg_cross_entropy(wide, labels, reduction) : NULL;
        clg__drop_cast(wide, logits);
        return loss;
    }
    if (!check_cross_entropy(logits, labels, reduction)) return NULL;
    /* Rows of more classes than one work-group's loops may walk: log_softmax (which
     * composes them from reductions) and the negative log-likelihood. */
    if (logits->numel && rows_too_long(logits->dev, logits->dtype, "ce_fwd", logits->shape[1]))
        return clg_nll_loss(clg_log_softmax(logits, 1), labels, reduction);
    clg_device *dev = logits->dev;
    int64_t N = logits->shape[0];
    clg_tensor *loss = clg__tensor_new(dev, logits->dtype, 1, (const int64_t[]){N});
    clg_tensor *stats = clg__tensor_new(dev, logits->dtype, 2, (const int64_t[]){N, 2});
    clg_tensor *y = reduction == CLG_REDUCE_NONE ? loss : clg__tensor_new(dev, logits->dtype, 0, NULL);
    clg_status st = loss && stats && y ? cross_entropy_rows(logits, labels, loss, stats) : dev->status;
    /* MEAN of no rows is NaN (0 / 0), as PyTorch; SUM is 0. */
    if (st == CLG_OK && y != loss) st = cross_entropy_reduce(loss, y, reduction == CLG_REDUCE_MEAN ? (double)N : 1.0);
    if (y != loss) clg_tensor_free(loss);
    if (st != CLG_OK) {
        clg_tensor_free(stats);
        return launch_fail("cross_entropy", logits, y);
    }
    clg_node *node = NULL;
    y = clg__taped(y, CLG_OP_cross_entropy, cross_entropy_bw, 2, (clg_tensor *const[]){logits, labels}, &node);
    if (node) {
        clg__node_save(node, 0, stats);
        node->f[0] = reduction == CLG_REDUCE_MEAN ? 1.0 / (double)N : 1.0;
    }
    clg_tensor_free(stats);   /* the node, if any, holds it */
    return y;
}

/* ---- mse --------------------------------------------------------------------------------------------- */

/* d/da = s (a - b) g, d/db = -s (a - b) g with s = 2/n (MEAN) or 2; the engine sums
 * each back from the broadcast shape to its input's. */
static clg_status mse_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    for (int i = 0; i < 2; i++) {
        if (!clg__wants_grad(n, i)) continue;
        clg_tensor *in[3] = {n->inputs[0], n->inputs[1], g};
        gin[i] = clg__elementwise("mse", PROGRAM, "mse_grad", 3, in, i ? -n->f[0] : n->f[0], 0, false);
        if (!gin[i]) return g->dev->status;
    }
    return CLG_OK;
}

static clg_tensor *mse(clg_tensor *a, clg_tensor *b, clg_reduction reduction)
{
    if ((unsigned)reduction > CLG_REDUCE_NONE)
        return clg__op_fail(a->dev, CLG_ERR_INVALID_ARGUMENT, "mse", "unknown reduction %d", (int)reduction);
    /* (a - b)^2 broadcast as torch.nn.functional.mse_loss does (without its warning). */
    clg_tensor *sq = clg__elementwise("mse", PROGRAM, "mse_sq", 2, (clg_tensor *const[]){a, b}, 0, 0, false);
    if (!sq) return NULL;
    int64_t n = sq->numel;
    clg_tensor *y = sq;
    if (reduction != CLG_REDUCE_NONE) {   /* sq is off the tape, so these add no node */
        y = reduction == CLG_REDUCE_MEAN ? clg_mean(sq, 0, NULL, false) : clg_sum(sq, 0, NULL, false);
        clg_tensor_free(sq);
        if (!y) return NULL;
    }
    clg_node *node = NULL;
    y = clg__taped(y, CLG_OP_mse, mse_bw, 2, (clg_tensor *const[]){a, b}, &node);
    if (node) node->f[0] = reduction == CLG_REDUCE_MEAN ? 2.0 / (double)n : 2.0;
    return y;
}

/* float32 for 16-bit inputs, as autocast computes losses (autocast.c) */
clg_tensor *clg_mse(clg_tensor *a, clg_tensor *b, clg_reduction reduction)
{
    if (!a || !b) return NULL;
    clg_tensor *a32 = clg__widen16(a), *b32 = a32 ? clg__widen16(b) : NULL;
    clg_tensor *y = b32 ? mse(a32, b32, reduction) : NULL;
    clg__drop_cast(a32, a);
    clg__drop_cast(b32, b);
    return y;
}
