/* loss.c: l1, smooth_l1 (Huber) and bce_with_logits, with their backward passes.
 * Kernels: cl_kernels/loss.cl. (nll and its cross-entropies: nll.c.)
 *
 * The elementwise losses are one kernel for the per-element loss (broadcasting as
 * torch.nn.functional does), then, for MEAN and SUM, the device reduction of
 * reduce.c; the gradient of each input is one kernel. */
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
