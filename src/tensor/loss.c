/* loss.c: l1, smooth_l1 (Huber), bce_with_logits, nll and cross-entropy with label
 * smoothing, with their backward passes. Kernels: cl_kernels/loss.cl.
 *
 * The elementwise losses are one kernel for the per-element loss (broadcasting as
 * torch.nn.functional does), then, for MEAN and SUM, the device reduction of
 * reduce.c; the gradient of each input is one kernel. nll is one kernel per row plus
 * the reduction, and its gradient one kernel. cross_entropy_smooth is log_softmax
 * followed by nll with the smoothing term (the same kernel): two fused ops on the
 * tape. */
#include <string.h>

#include "tensor_impl.h"

#define PROGRAM "loss"

static bool check_reduction(const char *op, const clg_tensor *t, clg_reduction reduction)
{
    if ((unsigned)reduction <= CLG_REDUCE_NONE) return true;
    clg__op_fail(t->dev, CLG_ERR_INVALID_ARGUMENT, op, "unknown reduction %d", (int)reduction);
    return false;
}

/* The per-element (or per-row) losses `each`, off the tape, reduced as asked. */
static clg_tensor *reduce_loss(clg_tensor *each, clg_reduction reduction)
{
    if (!each || reduction == CLG_REDUCE_NONE) return each;
    /* each has no history, so these add no node; MEAN of nothing is NaN, as PyTorch */
    clg_tensor *y = reduction == CLG_REDUCE_MEAN ? clg_mean(each, 0, NULL, false) : clg_sum(each, 0, NULL, false);
    clg_tensor_free(each);
    return y;
}

/* The reduction's factor in the gradient: 1/n for MEAN, else 1. */
static double reduction_scale(clg_reduction reduction, int64_t n)
{
    return reduction == CLG_REDUCE_MEAN && n > 0 ? 1.0 / (double)n : 1.0;
}

/* ---- elementwise losses ---------------------------------------------------------------------- */

typedef struct elem_loss {
    const char *op, *kernel;
    const char *grad[2];   /* per input: gradient kernel (sign folded into the scale) */
    double sign[2];
    int id;
} elem_loss;

static const elem_loss L1 = {"l1_loss", "l1_elem", {"l1_grad", "l1_grad"}, {1, -1}, CLG_OP_l1_loss};
static const elem_loss SMOOTH_L1 = {"smooth_l1_loss", "smooth_l1_elem", {"smooth_l1_grad", "smooth_l1_grad"},
                                    {1, -1}, CLG_OP_smooth_l1_loss};
static const elem_loss BCE = {"bce_with_logits", "bce_elem", {"bce_grad_logits", "bce_grad_targets"}, {1, 1},
                              CLG_OP_bce_with_logits};

static const elem_loss *elem_loss_of(int id)
{
    return id == CLG_OP_l1_loss ? &L1 : id == CLG_OP_smooth_l1_loss ? &SMOOTH_L1 : &BCE;
}

/* f[0]: the loss's parameter (beta), f[1]: the reduction's scale. g is the result's
 * shape (one value for MEAN/SUM); the engine sums each gradient back to its input. */
static clg_status elem_loss_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    const elem_loss *L = elem_loss_of(n->op);
    for (int i = 0; i < 2; i++) {
        if (!clg__wants_grad(n, i)) continue;
        clg_tensor *in[3] = {n->inputs[0], n->inputs[1], g};
        gin[i] = clg__elementwise(L->op, PROGRAM, L->grad[i], 3, in, n->f[0], L->sign[i] * n->f[1], false);
        if (!gin[i]) return g->dev->status;
    }
    return CLG_OK;
}

static clg_tensor *elem_loss_f(const elem_loss *L, clg_tensor *a, clg_tensor *b, clg_reduction reduction,
                               double param)
{
    if (!check_reduction(L->op, a, reduction)) return NULL;
    clg_tensor *each = clg__elementwise(L->op, PROGRAM, L->kernel, 2, (clg_tensor *const[]){a, b}, param, 0, false);
    int64_t n = each ? each->numel : 0;
    clg_node *node = NULL;
    clg_tensor *y = clg__taped(reduce_loss(each, reduction), L->id, elem_loss_bw, 2, (clg_tensor *const[]){a, b},
                               &node);
    if (node) {
        node->f[0] = param;
        node->f[1] = reduction_scale(reduction, n);
    }
    return y;
}

/* Losses are float32 for 16-bit inputs, as autocast computes them (autocast.c). */
static clg_tensor *elem_loss_op(const elem_loss *L, clg_tensor *a, clg_tensor *b, clg_reduction reduction,
                                double param)
{
    if (!a || !b) return NULL;
    clg_tensor *a32 = clg__widen16(a), *b32 = a32 ? clg__widen16(b) : NULL;
    clg_tensor *y = b32 ? elem_loss_f(L, a32, b32, reduction, param) : NULL;
    clg__drop_cast(a32, a);
    clg__drop_cast(b32, b);
    return y;
}

clg_tensor *clg_l1_loss(clg_tensor *a, clg_tensor *b, clg_reduction reduction)
{
    return elem_loss_op(&L1, a, b, reduction, 0);
}

clg_tensor *clg_smooth_l1_loss(clg_tensor *a, clg_tensor *b, clg_reduction reduction, double beta)
{
    if (a && !(beta >= 0))
        return clg__op_fail(a->dev, CLG_ERR_INVALID_ARGUMENT, "smooth_l1_loss", "beta = %g must be >= 0", beta);
    return elem_loss_op(&SMOOTH_L1, a, b, reduction, beta);
}

clg_tensor *clg_bce_with_logits(clg_tensor *logits, clg_tensor *targets, clg_reduction reduction)
{
    /* Targets of the logits' own shape, as PyTorch requires (no broadcasting). */
    if (logits && targets &&
        (logits->ndim != targets->ndim ||
         memcmp(logits->shape, targets->shape, (size_t)logits->ndim * sizeof *logits->shape)))
        return clg__op_fail(logits->dev, CLG_ERR_SHAPE, "bce_with_logits",
                            "targets %s must have the shape of logits %s", CLG_DESC(targets), CLG_DESC(logits));
    return elem_loss_op(&BCE, logits, targets, reduction, 0);
}

/* ---- nll and cross-entropy with label smoothing ------------------------------------------------ */

static bool check_nll(const char *op, const clg_tensor *x, const clg_tensor *lab, clg_reduction reduction)
{
    if (!clg__check_same_device(op, x, lab) || !clg__check_float(op, x) || !clg__check_numel(op, x->dev, x->numel) ||
        !check_reduction(op, x, reduction))
        return false;
    if (x->ndim != 2)
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "input must be [N, C], got %s", CLG_DESC(x)), false;
    if (lab->dtype != CLG_I32)
        return clg__op_fail(x->dev, CLG_ERR_DTYPE, op, "labels must be int32, got %s", CLG_DESC(lab)), false;
    if (lab->ndim != 1 || lab->shape[0] != x->shape[0])
        return clg__op_fail(x->dev, CLG_ERR_SHAPE, op, "labels %s do not match input %s: want [%lld]", CLG_DESC(lab),
                            CLG_DESC(x), (long long)x->shape[0]), false;
    return true;
}

/* f[0]: the reduction's scale, f[1]: the label smoothing. */
static clg_status nll_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *x = n->inputs[0], *lab = n->inputs[1];
    clg_device *dev = x->dev;
    int64_t N = x->shape[0], C = x->shape[1];
    clg_tensor *dx = clg__tensor_new(dev, x->dtype, 2, x->shape);
    if (!dx) return dev->status;
    clg_kernel *k = clg__kernel_get(dev, PROGRAM, clg__dtype_options(x->dtype), "nll_bwd");
    clg_arg a[] = {CLG_ARG_I(N), CLG_ARG_I(C), CLG_ARG_B(lab->buf), CLG_ARG_I(lab->offset),
                   CLG_ARG_I(lab->strides[0]), CLG_ARG_B(g->buf), CLG_ARG_I(g->offset),
                   CLG_ARG_I(g->ndim ? g->strides[0] : 0), clg__arg_scalar(x->dtype, n->f[0]),
                   clg__arg_scalar(x->dtype, n->f[1]), CLG_ARG_B(dx->buf)};
    if (!k || clg__launch_rows(dev, k, a, (int)(sizeof a / sizeof *a), (size_t)C, (size_t)N) != CLG_OK) {
        clg_tensor_free(dx);
        return dev->status;
    }
    gin[0] = dx;
    return CLG_OK;
}

/* Per-row losses [N] of log-probabilities x, off the tape. */
static clg_tensor *nll_rows(const char *op, clg_tensor *x, clg_tensor *lab, double eps)
{
    clg_device *dev = x->dev;
    int64_t N = x->shape[0], C = x->shape[1];
    int code = 0;
    clg_buffer *word = clg__index_check(op, "label", lab, C, x, &code);
    if (!word) return NULL;
    clg_tensor *loss = clg__tensor_new(dev, x->dtype, 1, &N);
    clg_kernel *k = loss ? clg__kernel_get(dev, PROGRAM, clg__dtype_options(x->dtype), "nll_fwd") : NULL;
    clg_arg a[] = {CLG_ARG_I(N), CLG_ARG_I(C), CLG_ARG_B(x->buf), CLG_ARG_I(x->offset),
                   CLG_ARG_I(x->strides[0]), CLG_ARG_I(x->strides[1]), CLG_ARG_B(lab->buf),
                   CLG_ARG_I(lab->offset), CLG_ARG_I(lab->strides[0]), clg__arg_scalar(x->dtype, eps),
                   CLG_ARG_B(loss ? loss->buf : x->buf), CLG_ARG_B(word),
                   CLG_ARG_I(code)};
    if (!k || clg__launch_1d(dev, k, a, (int)(sizeof a / sizeof *a), (size_t)N) != CLG_OK) {
        char err[CLG_ERROR_MAX];
        memcpy(err, dev->error, sizeof err);
        clg_tensor_free(loss);
        return clg__op_fail(dev, dev->status, op, "%s: %.7000s", CLG_DESC(x), err);
    }
    return loss;
}

/* nll with label smoothing eps over log-probabilities logp: the op behind both
 * clg_nll_loss (eps 0) and clg_cross_entropy_smooth. */
static clg_tensor *nll_smooth_f(const char *op, clg_tensor *logp, clg_tensor *labels, clg_reduction reduction,
                                double eps)
{
    if (!check_nll(op, logp, labels, reduction)) return NULL;
    /* With smoothing, nll_fwd's work-item walks its row's C classes: past item_loops,
     * (1 - eps) nll - eps mean(logp) per row from a reduction that splits long sums. */
    if (eps != 0 && logp->shape[1] > (int64_t)clg__device_params(logp->dev)->item_loops / 2) {
        clg_tensor *rows = clg_sub(clg_mul_scalar(nll_smooth_f(op, logp, labels, CLG_REDUCE_NONE, 0), 1 - eps),
                                   clg_mul_scalar(clg_mean(logp, CLG_AXES(1), false), eps));
        return reduction == CLG_REDUCE_NONE ? rows
               : reduction == CLG_REDUCE_SUM ? clg_sum(rows, 0, NULL, false)
                                             : clg_mean(rows, 0, NULL, false);
    }
    clg_node *node = NULL;
    clg_tensor *y = reduce_loss(nll_rows(op, logp, labels, eps), reduction);
    y = clg__taped(y, CLG_OP_nll_loss, nll_bw, 2, (clg_tensor *const[]){logp, labels}, &node);
    if (node) {
        node->f[0] = reduction_scale(reduction, logp->shape[0]);
        node->f[1] = eps;
    }
    return y;
}

static clg_tensor *nll_smooth(const char *op, clg_tensor *logp, clg_tensor *labels, clg_reduction reduction,
                              double eps)
{
    if (!logp || !labels) return NULL;
    clg_tensor *wide = clg__widen16(logp);   /* float32 for 16-bit log-probabilities */
    clg_tensor *y = wide ? nll_smooth_f(op, wide, labels, reduction, eps) : NULL;
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
