/* loss_ex.c: cross-entropy and the negative log-likelihood with PyTorch's other
 * arguments (class weights, ignore_index, label smoothing together), composed of ops on
 * the tape: log_softmax, a gather of each row's label, the weights looked up by label,
 * masks and reductions. The labels skipped by ignore_index are replaced by class 0
 * before any lookup, so that no kernel sees an index out of range; their rows weigh 0. */
#include <math.h>

#include "tensor_impl.h"

clg_ce_options clg_ce_defaults(void) { return (clg_ce_options){.reduction = CLG_REDUCE_MEAN, .ignore_index = -100}; }

static bool check(const char *op, clg_tensor *lp, clg_tensor *labels, const clg_ce_options *o)
{
    if (!clg__check_same_device(op, lp, labels) || !clg__check_float(op, lp)) return false;
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

/* The loss from log-probabilities lp [N, C]. */
static clg_tensor *nll_ex(clg_tensor *lp, clg_tensor *labels, const clg_ce_options *o)
{
    clg_device *dev = lp->dev;
    int64_t N = lp->shape[0], C = lp->shape[1];
    /* the rows kept, and their labels made safe to look up (0 where skipped) */
    clg_tensor *keep = clg_ne(labels, clg_full(dev, CLG_I32, 0, NULL, (double)o->ignore_index));   /* 1 or 0 */
    clg_tensor *safe = clg_mul(labels, keep);
    clg_tensor *keepf = clg_cast(keep, lp->dtype);
    /* labels of the rows kept must lie in [0, C): the gather's check reports the others */
    clg_tensor *picked = clg_reshape(clg_gather(lp, 1, clg_reshape(safe, 2, (const int64_t[]){N, 1})), 1, &N);
    clg_tensor *wy = o->weight ? clg_mul(clg_index_select(o->weight, 0, safe), keepf) : keepf;   /* [N] */
    clg_tensor *loss = clg_neg(clg_mul(picked, wy));
    if (o->label_smoothing > 0) {   /* (1 - eps) nll + eps / C sum_c w_c (-lp_c), skipped rows 0 */
        clg_tensor *all = o->weight ? clg_mul(lp, clg_reshape(o->weight, 2, (const int64_t[]){1, C})) : lp;
        clg_tensor *smooth = clg_mul(clg_neg(clg_sum(all, CLG_AXES(1), false)), keepf);
        loss = clg_add(clg_mul_scalar(loss, 1 - o->label_smoothing),
                       clg_mul_scalar(smooth, o->label_smoothing / (double)C));
    }
    if (!loss) return NULL;
    switch (o->reduction) {
    case CLG_REDUCE_NONE: return loss;
    case CLG_REDUCE_SUM: return clg_sum(loss, 0, NULL, false);
    default: return clg_div(clg_sum(loss, 0, NULL, false), clg_sum(wy, 0, NULL, false));
    }
}

clg_tensor *clg_nll_loss_ex(clg_tensor *logp, clg_tensor *labels, const clg_ce_options *o)
{
    static const char op[] = "nll_loss_ex";
    if (!logp || !labels) return NULL;
    clg_ce_options d = clg_ce_defaults();
    if (!o) o = &d;
    if (clg__is_half(logp->dtype)) {   /* float32, as nll_loss */
        clg_tensor *wide = clg_cast(logp, CLG_F32);
        clg_ce_options ow = *o;
        if (o->weight && o->weight->dtype != CLG_F32) ow.weight = clg_cast(o->weight, CLG_F32);
        return wide ? clg_nll_loss_ex(wide, labels, &ow) : NULL;
    }
    return check(op, logp, labels, o) ? nll_ex(logp, labels, o) : NULL;
}

clg_tensor *clg_cross_entropy_ex(clg_tensor *logits, clg_tensor *labels, const clg_ce_options *o)
{
    static const char op[] = "cross_entropy_ex";
    if (!logits || !labels) return NULL;
    clg_ce_options d = clg_ce_defaults();
    if (!o) o = &d;
    if (clg__is_half(logits->dtype)) {
        clg_tensor *wide = clg_cast(logits, CLG_F32);
        clg_ce_options ow = *o;
        if (o->weight && o->weight->dtype != CLG_F32) ow.weight = clg_cast(o->weight, CLG_F32);
        return wide ? clg_cross_entropy_ex(wide, labels, &ow) : NULL;
    }
    if (!check(op, logits, labels, o)) return NULL;
    return nll_ex(clg_log_softmax(logits, 1), labels, o);
}
