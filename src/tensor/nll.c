/* nll.c: the negative log-likelihood and the cross-entropies built on it: clg_nll_loss,
 * clg_cross_entropy_smooth, and clg_nll_loss_ex / clg_cross_entropy_ex with PyTorch's
 * other arguments (class weights, ignore_index, label smoothing together). Kernels:
 * cl_kernels/loss.cl (nll_rows, nll_sum, nll_total, nll_bwd, nll_bwd_w).
 *
 * One op on the tape whatever the options. A MEAN or SUM over a few rows is one launch
 * of one work-group (nll_sum) that gathers each row's weighted loss, sums the losses and
 * the weights and divides; over more rows, a work-item per row (nll_rows, as NONE is)
 * and nll_total's sum, or the device reductions past item_loops. Label smoothing's
 * sums over each row come from a reduction first. The gradient is one kernel. (It was
 * ~10 launches of ops: gathers, masks, index_select, sums, a division; 0.05x PyTorch
 * over 16 rows.) */
#include <math.h>
#include <string.h>

#include "tensor_impl.h"

#define PROGRAM "loss"

/* What one nll computes: log-probabilities lp [N, C], int32 labels [N], class weights
 * [C] or NULL, the label skipped (when useign), smoothing eps and the reduction. */
typedef struct nll_spec {
    const char *op;
    clg_tensor *lp, *lab, *w;
    clg_tensor *sm;   /* [N]: sum_c w_c lp[i, c] when eps != 0 (nll() fills it), else NULL */
    int ign;
    bool useign;
    double eps;
    clg_reduction red;
} nll_spec;

clg_ce_options clg_ce_defaults(void) { return (clg_ce_options){.reduction = CLG_REDUCE_MEAN, .ignore_index = -100}; }

/* ---- kernels --------------------------------------------------------------------------------- */

/* NLL_ARGS of loss.cl (NLL_NARGS arguments) into a, with the kernel's own three integers
 * own[0..2] packed beside them (opt.s5-s7); `word` and `code` from the label check. A
 * missing weight or sm passes lp's buffer, which the kernels then read at 0 only. The
 * integers travel in two int8 arguments: POCL copies each argument of a launch apart
 * (loss.cl), and a loss over a few rows is one launch. */
enum { NLL_NARGS = 8, ARGS_MORE = 3 };
static int nll_args(const nll_spec *s, const clg_buffer *word, int code, const int64_t own[3], clg_arg *a)
{
    const clg_tensor *x = s->lp, *lab = s->lab, *w = s->w;
    int n = 0;
    a[n++] = clg__arg_int8((const int64_t[]){x->shape[1], x->offset, x->strides[0], x->strides[1], lab->offset,
                                             lab->strides[0], w ? w->offset : 0, w ? w->strides[0] : 0}, 8);
    a[n++] = clg__arg_int8((const int64_t[]){w != NULL, s->ign, s->useign, s->sm ? s->sm->offset : 0, code, own[0],
                                             own[1], own[2]}, 8);
    a[n++] = CLG_ARG_B(x->buf), a[n++] = CLG_ARG_B(lab->buf), a[n++] = CLG_ARG_B(w ? w->buf : x->buf);
    a[n++] = CLG_ARG_B(s->sm ? s->sm->buf : x->buf), a[n++] = clg__arg_scalar(x->dtype, s->eps);
    a[n++] = CLG_ARG_B(word);
    return n;
}

/* The device's error word for labels out of range. Without ignore_index, labels known
 * on the host are checked there (clg__index_check); with it, the skipped value may lie
 * outside [0, C), so the kernel alone judges. */
static clg_buffer *label_word(const nll_spec *s, int *code)
{
    if (!s->useign) return clg__index_check(s->op, "label", s->lab, s->lp->shape[1], s->lp, code);
    return clg__kernel_error_word(s->lp->dev, s->op, "label", code);
}

/* The group of nll_sum and nll_total: a power of two (clg_group_sum), one fixed size
 * so that POCL compiles one shape. 64, not 256: over 1024 rows nll_sum took 9 us with
 * 256 work-items (the group sums' barriers), 4 with 64. */
static size_t sum_group(const clg_device *dev, const clg_kernel *k)
{
    size_t wg = 64;
    while (wg > 1 && (wg > k->wg_max || wg > clg__device_params(dev)->max_group)) wg >>= 1;
    return wg;
}

/* Each row's loss into loss [N] and its weight into wts [N] (every time: a store behind
 * a flag kept POCL from vectorizing nll_rows). */
static clg_status launch_rows(const nll_spec *s, clg_tensor *loss, clg_tensor *wts)
{
    clg_device *dev = s->lp->dev;
    int code = 0;
    clg_buffer *word = label_word(s, &code);
    const char *name = clg__index_known_in_range(s->lab, s->lp->shape[1]) ? "nll_rows_known" : "nll_rows";
    clg_kernel *k = word ? clg__kernel_get(dev, PROGRAM, clg__dtype_options(s->lp->dtype), name) : NULL;
    if (!k) return dev->status;
    clg_arg a[NLL_NARGS + ARGS_MORE];
    int n = nll_args(s, word, code, (const int64_t[]){loss->offset, 0, 0}, a);
    a[n++] = CLG_ARG_B(loss->buf), a[n++] = CLG_ARG_B(wts->buf);
    return clg__launch_1d(dev, k, a, n, (size_t)s->lp->shape[0]);
}

/* Rows per work-item past which nll_sum's one group gathers slower than nll_rows over
 * every core and nll_total's sum ([16384, 64] took 74 us by nll_sum, on one core), and
 * the rows one work-item alone takes. */
enum { SUM_ROWS = 16, ONE_ITEM = 1024 };

/* The reduced loss into y and 1 / the sum of the rows' weights into winv (one value each),
 * by one work-group (or one work-item); CLG_ERR_UNSUPPORTED (nothing recorded) for more
 * rows than it takes. */
static clg_status launch_sum(const nll_spec *s, clg_tensor *y, clg_tensor *winv)
{
    clg_device *dev = s->lp->dev;
    int64_t N = s->lp->shape[0];
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options(s->lp->dtype), "nll_sum");
    if (!k) return dev->status;
    /* one work-item walks up to ONE_ITEM rows: no barrier (over 16 rows, 0.2-0.3 us of
     * device time against 1.5 for a group of 64; over 1024, 2-4 us against 4.5-5.6) */
    size_t wg = N <= ONE_ITEM && N <= (int64_t)clg__device_params(dev)->item_loops / 2 ? 1 : sum_group(dev, k);
    if ((N + (int64_t)wg - 1) / (int64_t)wg > (wg == 1 ? ONE_ITEM : SUM_ROWS)) return CLG_ERR_UNSUPPORTED;
    int code = 0;
    clg_buffer *word = label_word(s, &code);
    if (!word) return dev->status;
    clg_arg a[NLL_NARGS + ARGS_MORE];
    int n = nll_args(s, word, code, (const int64_t[]){N, s->red == CLG_REDUCE_MEAN, y->offset}, a);
    a[n++] = CLG_ARG_B(y->buf), a[n++] = CLG_ARG_B(winv->buf);
    a[n++] = CLG_ARG_LOCAL(wg * clg_dtype_size(s->lp->dtype));
    return clg__launch(dev, k, a, n, 1, &wg, &wg);
}

/* y and winv as launch_sum's from the rows' losses and weights, by one work-group;
 * CLG_ERR_UNSUPPORTED (nothing recorded) where its loops would pass item_loops. */
static clg_status launch_total(const nll_spec *s, const clg_tensor *loss, const clg_tensor *wts, clg_tensor *y,
                               clg_tensor *winv)
{
    clg_device *dev = s->lp->dev;
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options(s->lp->dtype), "nll_total");
    if (!k) return dev->status;
    size_t wg = sum_group(dev, k);
    if ((loss->numel + (int64_t)wg - 1) / (int64_t)wg > (int64_t)clg__device_params(dev)->item_loops / 2)
        return CLG_ERR_UNSUPPORTED;
    clg_arg a[] = {CLG_ARG_I(loss->numel), CLG_ARG_B(loss->buf), CLG_ARG_B(wts->buf),
                   CLG_ARG_I(s->red == CLG_REDUCE_MEAN), CLG_ARG_B(y->buf), CLG_ARG_I(y->offset), CLG_ARG_B(winv->buf),
                   CLG_ARG_LOCAL(wg * clg_dtype_size(s->lp->dtype))};
    return clg__launch(dev, k, a, (int)(sizeof a / sizeof *a), 1, &wg, &wg);
}

/* ---- the op ---------------------------------------------------------------------------------- */

/* The gradient's kernel and launch into dx: without smoothing only each row's label
 * has one (nll_bwd_pick, a work-item per row, into zeros: a fill and N values, where
 * writing every value took 180 us for [16, 65536] against the fill's ~70); else every
 * class has, 16 a work-item where they fit (float32, C % 16 == 0). */
static clg_status bw_launch(const nll_spec *s, const clg_tensor *g, const clg_tensor *winv, clg_tensor *dx)
{
    clg_device *dev = s->lp->dev;
    int64_t N = s->lp->shape[0], C = s->lp->shape[1];
    bool pick = s->eps == 0, vec = !pick && s->lp->dtype == CLG_F32 && C % 16 == 0;
    const char *name = pick ? "nll_bwd_pick" : vec ? "nll_bwd_vec" : s->w ? "nll_bwd_w" : "nll_bwd";
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options(s->lp->dtype), name);
    int code = 0;
    clg_buffer *word = k ? clg__kernel_error_word(dev, s->op, "label", &code) : NULL;
    if (!word || (pick && clg_fill_(dx, 0.0) != CLG_OK)) return dev->status;
    clg_arg a[NLL_NARGS + ARGS_MORE];
    int64_t own[3] = {g->offset, g->ndim ? g->strides[0] : 0, s->red == CLG_REDUCE_MEAN};
    int n = nll_args(s, word, code, own, a);
    a[n++] = CLG_ARG_B(g->buf), a[n++] = CLG_ARG_B(winv ? winv->buf : g->buf), a[n++] = CLG_ARG_B(dx->buf);
    if (pick) return clg__launch_1d(dev, k, a, n, (size_t)N);
    return clg__launch_rows(dev, k, a, n, (size_t)(vec ? C / 16 : C), (size_t)N);
}

/* saved[0]: the weights (or NULL), saved[1]: 1 / the sum of the rows' weights (MEAN);
 * f[0]: eps; i[0]: ignore_index, i[1]: useign, i[2]: the reduction. */
static clg_status nll_bw(clg_node *nd, clg_tensor *g, clg_tensor **gin)
{
    nll_spec s = {.op = "nll_loss", .lp = nd->inputs[0], .lab = nd->inputs[1], .w = nd->saved[0],
                  .ign = (int)nd->i[0], .useign = nd->i[1] != 0, .eps = nd->f[0], .red = (clg_reduction)nd->i[2]};
    clg_device *dev = s.lp->dev;
    /* nll_bwd_w and nll_bwd_vec read the weights with unit stride */
    clg_tensor *wc = s.w && s.w->strides[0] != 1 ? clg_contiguous(s.w) : NULL;
    if (s.w && s.w->strides[0] != 1 && !wc) return dev->status;
    if (wc) s.w = wc;
    clg_tensor *dx = clg__tensor_new(dev, s.lp->dtype, 2, s.lp->shape);
    clg_status st = dx ? bw_launch(&s, g, nd->saved[1], dx) : dev->status;
    clg_tensor_free(wc);
    if (st != CLG_OK) {
        clg_tensor_free(dx);
        return dev->status;
    }
    gin[0] = dx;
    return CLG_OK;
}

/* The reduced loss (and 1 / the weights' sum) by rows, then nll_total, or for more rows than
 * its group may walk, reductions that split long sums. Off the tape; *y and *winv new
 * tensors, or NULL on failure. */
static clg_status sum_by_rows(const nll_spec *s, clg_tensor **y, clg_tensor **winv)
{
    clg_device *dev = s->lp->dev;
    int64_t N = s->lp->shape[0];
    clg_tensor *loss = clg__tensor_new(dev, s->lp->dtype, 1, &N), *wts = clg__tensor_new(dev, s->lp->dtype, 1, &N);
    *y = clg__tensor_new(dev, s->lp->dtype, 0, NULL), *winv = clg__tensor_new(dev, s->lp->dtype, 0, NULL);
    clg_status st = loss && wts && *y && *winv ? launch_rows(s, loss, wts) : dev->status;
    if (st == CLG_OK) st = launch_total(s, loss, wts, *y, *winv);
    if (st == CLG_ERR_UNSUPPORTED) {
        clg_tensor_free(*y);
        clg_tensor_free(*winv);
        clg_no_grad_begin(dev);
        clg_tensor *sum = clg_sum(loss, 0, NULL, false);
        clg_tensor *W = clg_sum(wts, 0, NULL, false);
        *winv = clg_rdiv_scalar(1, W);
        *y = s->red == CLG_REDUCE_MEAN ? clg_div(sum, W) : sum;
        if (*y != sum) clg_tensor_free(sum);
        clg_tensor_free(W);
        clg_no_grad_end(dev);
        st = *y && *winv ? CLG_OK : dev->status;
    }
    if (st != CLG_OK) {
        clg_tensor_free(*y);
        clg_tensor_free(*winv);
        *y = *winv = NULL;
    }
    clg_tensor_free(loss);
    clg_tensor_free(wts);
    return st;
}

/* The loss as s asks, from the kernels, as one op on the tape. */
static clg_tensor *nll_fused(const nll_spec *s)
{
    clg_device *dev = s->lp->dev;
    int64_t N = s->lp->shape[0];
    clg_tensor *y = NULL, *winv = NULL;
    clg_status st;
    if (s->red == CLG_REDUCE_NONE) {
        y = clg__tensor_new(dev, s->lp->dtype, 1, &N);
        clg_tensor *wts = clg__tensor_new(dev, s->lp->dtype, 1, &N);
        st = y && wts ? launch_rows(s, y, wts) : dev->status;
        clg_tensor_free(wts);
    } else {
        y = clg__tensor_new(dev, s->lp->dtype, 0, NULL);
        winv = clg__tensor_new(dev, s->lp->dtype, 0, NULL);
        st = y && winv ? launch_sum(s, y, winv) : dev->status;
        if (st == CLG_ERR_UNSUPPORTED) {
            clg_tensor_free(y);
            clg_tensor_free(winv);
            y = winv = NULL;
            st = sum_by_rows(s, &y, &winv);
        }
    }
    if (st != CLG_OK) {
        char err[CLG_ERROR_MAX];
        memcpy(err, dev->error, sizeof err);
        clg_tensor_free(y);
        clg_tensor_free(winv);
        return clg__op_fail(dev, st, s->op, "%s: %.7000s", CLG_DESC(s->lp), err);
    }
    clg_node *node = NULL;
    y = clg__taped(y, CLG_OP_nll_loss, nll_bw, 2, (clg_tensor *const[]){s->lp, s->lab}, &node);
    if (node) {
        if (s->w) clg__node_save(node, 0, s->w);
        if (winv) clg__node_save(node, 1, winv);
        node->f[0] = s->eps;
        node->i[0] = s->ign, node->i[1] = s->useign, node->i[2] = s->red;
    }
    clg_tensor_free(winv);   /* the node, if any, holds it */
    return y;
}

/* The smoothing's sums sum_c w_c lp[i, c] [N], off the tape (nll_bw gives their gradient). */
static clg_tensor *smoothing_sums(const nll_spec *s)
{
    clg_device *dev = s->lp->dev;
    clg_no_grad_begin(dev);
    clg_tensor *all = s->w ? clg_mul(s->lp, clg_reshape(s->w, 2, (const int64_t[]){1, s->lp->shape[1]})) : s->lp;
    clg_tensor *sm = all ? clg_sum(all, CLG_AXES(1), false) : NULL;
    if (all != s->lp) clg_tensor_free(all);
    clg_no_grad_end(dev);
    return sm;
}

static clg_tensor *nll(const nll_spec *s)
{
    /* rows but no class: every label is out of range or skipped, and the kernels would
     * read lp's (empty) rows at class 0 */
    if (s->lp->shape[1] == 0 && s->lp->shape[0] > 0)
        return clg__op_fail(s->lp->dev, CLG_ERR_SHAPE, s->op, "%s has rows but no classes", CLG_DESC(s->lp));
    if (s->eps == 0) return nll_fused(s);
    nll_spec ss = *s;
    if (!(ss.sm = smoothing_sums(s))) return NULL;
    clg_tensor *y = nll_fused(&ss);
    clg_tensor_free(ss.sm);
    return y;
}

/* ---- the API --------------------------------------------------------------------------------- */

static bool check_nll(const char *op, const clg_tensor *x, const clg_tensor *lab, clg_reduction reduction)
{
    if (!clg__check_same_device(op, x, lab) || !clg__check_float(op, x) || !clg__check_numel(op, x->dev, x->numel))
        return false;
    if ((unsigned)reduction > CLG_REDUCE_NONE)
        return clg__op_fail(x->dev, CLG_ERR_INVALID_ARGUMENT, op, "unknown reduction %d", (int)reduction), false;
    if (x->ndim != 2)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "input must be [N, C], got %s", CLG_DESC(x)), false;
    if (lab->dtype != CLG_I32)
        return clg__op_fail(x->dev, CLG_ERR_DTYPE, op, "labels must be int32, got %s", CLG_DESC(lab)), false;
    if (lab->ndim != 1 || lab->shape[0] != x->shape[0])
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "labels %s do not match input %s: want [%lld]", CLG_DESC(lab),
                            CLG_DESC(x), (long long)x->shape[0]), false;
    return true;
}

/* nll with label smoothing eps over log-probabilities logp (float32 for 16 bits): the
 * op behind clg_nll_loss (eps 0) and clg_cross_entropy_smooth. */
static clg_tensor *nll_smooth(const char *op, clg_tensor *logp, clg_tensor *labels, clg_reduction reduction,
                              double eps)
{
    if (!logp || !labels) return NULL;
    clg_tensor *wide = clg__widen16(logp);
    clg_tensor *y = NULL;
    if (wide && check_nll(op, wide, labels, reduction))
        y = nll(&(nll_spec){.op = op, .lp = wide, .lab = labels, .eps = eps, .red = reduction});
    clg__drop_cast(wide, logp);
    return y;
}

clg_tensor *clg_nll_loss(clg_tensor *logp, clg_tensor *labels, clg_reduction reduction)
{
    return nll_smooth("nll_loss", logp, labels, reduction, 0);
}

clg_tensor *clg_cross_entropy_smooth(clg_tensor *logits, clg_tensor *labels, clg_reduction reduction,
                                     double label_smoothing)
{
    const char *op = "cross_entropy_smooth";
    if (!logits || !labels) return NULL;
    if (clg__is_half(logits->dtype)) {   /* float32, as cross_entropy */
        clg_tensor *wide = clg__widen16(logits);
        clg_tensor *y = wide ? clg_cross_entropy_smooth(wide, labels, reduction, label_smoothing) : NULL;
        clg__drop_cast(wide, logits);
        return y;
    }
    if (!(label_smoothing >= 0 && label_smoothing <= 1))
        return clg__op_fail(logits->dev, CLG_ERR_INVALID_ARGUMENT, op, "label_smoothing = %g is outside [0, 1]",
                            label_smoothing);
    /* Checked before log_softmax runs, so errors name this op and the user's shapes. */
    if (!check_nll(op, logits, labels, reduction)) return NULL;
    clg_tensor *logp = clg_log_softmax(logits, 1);
    clg_tensor *y = nll_smooth(op, logp, labels, reduction, label_smoothing);
    clg_tensor_free(logp);   /* y's node, if any, holds it */
    return y;
}

static bool check_ex(const char *op, clg_tensor *lp, clg_tensor *labels, const clg_ce_options *o)
{
    if (!clg__check_same_device(op, lp, labels) || !clg__check_float(op, lp) ||
        !clg__check_numel(op, lp->dev, lp->numel))
        return false;
    if (lp->ndim != 2)
        return clg__op_fail(lp->dev, CLG_ERR_SHAPE, op, "want [N, C] scores, got %s", CLG_DESC(lp)), false;
    if (labels->dtype != CLG_I32 || labels->ndim != 1 || labels->shape[0] != lp->shape[0])
        return clg__op_fail(lp->dev, CLG_ERR_SHAPE, op, "labels %s: want int32 [%lld] for %s", CLG_DESC(labels),
                            (long long)lp->shape[0], CLG_DESC(lp)), false;
    if ((unsigned)o->reduction > CLG_REDUCE_NONE)
        return clg__op_fail(lp->dev, CLG_ERR_INVALID_ARGUMENT, op, "unknown reduction %d", (int)o->reduction), false;
    if (!(o->label_smoothing >= 0 && o->label_smoothing <= 1))
        return clg__op_fail(lp->dev, CLG_ERR_INVALID_ARGUMENT, op, "label_smoothing = %g is outside [0, 1]",
                            o->label_smoothing), false;
    clg_tensor *w = o->weight;
    if (w && (!clg__check_same_device(op, lp, w) || w->dtype != lp->dtype || w->ndim != 1 || w->shape[0] != lp->shape[1]))
        return clg__op_fail(lp->dev, CLG_ERR_SHAPE, op, "weight %s: want %s [%lld]", CLG_DESC(w),
                            clg_dtype_name(lp->dtype), (long long)lp->shape[1]), false;
    return true;
}

/* 16-bit scores and weights as float32, as nll_loss and cross_entropy compute them. */
static clg_tensor *ex_wide(clg_tensor *(*f)(clg_tensor *, clg_tensor *, const clg_ce_options *), clg_tensor *x,
                           clg_tensor *labels, const clg_ce_options *o)
{
    clg_tensor *wide = clg_cast(x, CLG_F32);
    clg_ce_options ow = *o;
    if (o->weight && o->weight->dtype != CLG_F32) ow.weight = clg_cast(o->weight, CLG_F32);
    return wide && (!o->weight || ow.weight) ? f(wide, labels, &ow) : NULL;
}

clg_tensor *clg_nll_loss_ex(clg_tensor *logp, clg_tensor *labels, const clg_ce_options *o)
{
    static const char op[] = "nll_loss_ex";
    if (!logp || !labels) return NULL;
    clg_ce_options d = clg_ce_defaults();
    if (!o) o = &d;
    if (clg__is_half(logp->dtype)) return ex_wide(clg_nll_loss_ex, logp, labels, o);
    if (!check_ex(op, logp, labels, o)) return NULL;
    return nll(&(nll_spec){.op = op, .lp = logp, .lab = labels, .w = o->weight, .ign = o->ignore_index, .useign = true,
                           .eps = o->label_smoothing, .red = o->reduction});
}

clg_tensor *clg_cross_entropy_ex(clg_tensor *logits, clg_tensor *labels, const clg_ce_options *o)
{
    static const char op[] = "cross_entropy_ex";
    if (!logits || !labels) return NULL;
    clg_ce_options d = clg_ce_defaults();
    if (!o) o = &d;
    if (clg__is_half(logits->dtype)) return ex_wide(clg_cross_entropy_ex, logits, labels, o);
    if (!check_ex(op, logits, labels, o)) return NULL;
    clg_tensor *lp = clg_log_softmax(logits, 1);
    clg_tensor *y = lp ? nll(&(nll_spec){.op = op, .lp = lp, .lab = labels, .w = o->weight, .ign = o->ignore_index,
                                         .useign = true, .eps = o->label_smoothing, .red = o->reduction})
                       : NULL;
    clg_tensor_free(lp);   /* y's node, if any, holds it */
    return y;
}
