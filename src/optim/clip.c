/* clip.c: clipping gradients by their global L2 norm, as torch.nn.utils.clip_grad_norm_,
 * entirely on the device: the sum of squares (each gradient's chunks side by side, then
 * one reduction), then one work item turns it into the norm and the scale
 * (cl_kernels/optim.cl clip_coef), and each gradient is scaled in place by that device
 * scalar. Nothing is read back. */
#include <string.h>

#include "optim_impl.h"

static const char *const FN = "clg_clip_grad_norm";

/* The gradients to clip: those that exist, as PyTorch takes p.grad for every p whose
 * grad is not None; all of one dtype so that one norm covers them. */
static clg_status check_params(clg_device *dev, int n, clg_tensor *const *params, double max_norm, clg_dtype *dtype)
{
    if (!(max_norm >= 0))
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: max_norm %g must be >= 0", FN, max_norm);
    bool found = false;
    for (int i = 0; i < n; i++) {
        clg_tensor *p = params[i];
        if (!p || p->dev != dev)
            return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: parameter %d is %s", FN, i,
                             p ? "on another device than the first" : "NULL");
        const clg_tensor *g = clg__grad(p);
        if (!g) continue;
        if (!clg_tensor_is_contiguous(g) || g->offset + g->numel > INT32_MAX)
            return clg__fail(dev, CLG_ERR_UNSUPPORTED, "%s: the gradient %s of parameter %d is not contiguous "
                             "or too large", FN, CLG_DESC(g), i);
        if (found && g->dtype != *dtype)
            return clg__fail(dev, CLG_ERR_DTYPE, "%s: gradients of %s and %s: all must have one dtype", FN,
                             clg_dtype_name(*dtype), clg_dtype_name(g->dtype));
        *dtype = g->dtype;
        found = true;
    }
    return CLG_OK;
}

/* The sum of the squares of every gradient, a 0-d tensor (NULL with the error recorded).
 * float32/64: each gradient's chunks in one launch (clg__sumsq_chunks) into one vector of
 * partial sums, which one reduction adds up: two launches per gradient fewer than squares,
 * a sum and an add each, and no squares stored. 16-bit gradients through those ops.
 * Intermediates are freed as soon as the next op is queued: the queue is in order. */
static clg_tensor *sum_of_squares(clg_device *dev, clg_dtype dtype, int n, clg_tensor *const *params)
{
    if (dtype == CLG_F32 || dtype == CLG_F64) {
        int64_t total = 0, at = 0;
        for (int i = 0; i < n; i++)
            if (clg__grad(params[i])) total += clg__sumsq_chunk_count(dev, clg__grad(params[i])->numel);
        clg_tensor *parts = total ? clg__tensor_new(dev, dtype, 1, (const int64_t[]){total}) : NULL;
        clg_status st = total && !parts ? dev->status : CLG_OK;
        for (int i = 0; parts && !st && i < n; i++) {
            clg_tensor *g = clg__grad(params[i]);
            if (!g || !g->numel) continue;
            int64_t C = clg__sumsq_chunk_count(dev, g->numel);
            clg_tensor *slot = clg__tensor_view(parts, 1, (const int64_t[]){C}, (const int64_t[]){1}, at);
            st = slot ? clg__sumsq_chunks(g, slot, C) : dev->status;
            clg_tensor_free(slot);
            at += C;
        }
        if (!st && parts && at < total) {   /* empty gradients: their slots hold zeros */
            clg_tensor *rest = clg__tensor_view(parts, 1, (const int64_t[]){total - at}, (const int64_t[]){1}, at);
            st = rest ? clg_fill_(rest, 0) : dev->status;
            clg_tensor_free(rest);
        }
        clg_tensor *sum = st ? NULL : parts ? clg_sum(parts, 0, NULL, false) : clg_zeros(dev, dtype, 0, NULL);
        clg_tensor_free(parts);
        return sum;
    }
    clg_tensor *acc = clg_zeros(dev, dtype, 0, NULL);
    for (int i = 0; acc && i < n; i++) {
        clg_tensor *g = clg__grad(params[i]);
        if (!g) continue;
        clg_tensor *sq = clg_mul(g, g);
        clg_tensor *s = clg_sum(sq, 0, NULL, false);
        clg_tensor *next = clg_add(acc, s);
        clg_tensor_free(sq);
        clg_tensor_free(s);
        clg_tensor_free(acc);
        acc = next;
    }
    return acc;
}

static clg_status launch(clg_device *dev, clg_dtype dtype, const char *kernel, const clg_arg *args, int nargs,
                         size_t n)
{
    clg_kernel *k = clg__kernel_get(dev, "optim", clg__dtype_options(dtype), kernel);
    return k ? clg__launch_1d(dev, k, args, nargs, n) : dev->status;
}

#define MEM(t) CLG_ARG_B((t)->buf), CLG_ARG_I((t)->offset)

/* norm and scale (fresh 0-d tensors) from the sum of squares; then every grad *= scale. */
static clg_status clip(clg_device *dev, clg_dtype dtype, int n, clg_tensor *const *params, double max_norm,
                       clg_tensor *sumsq, clg_tensor *norm, clg_tensor *scale)
{
    clg_arg coef[] = {MEM(sumsq), MEM(norm), MEM(scale), clg__arg_scalar(dtype, max_norm)};
    clg_status st = launch(dev, dtype, "clip_coef", coef, 7, 1);
    for (int i = 0; st == CLG_OK && i < n; i++) {
        clg_tensor *g = clg__grad(params[i]);
        if (!g) continue;
        clg_arg args[] = {CLG_ARG_I(g->numel), MEM(g), MEM(scale)};
        st = launch(dev, dtype, "scale_by", args, 5, (size_t)g->numel);
        if (st == CLG_OK) clg__tensor_written(g);
    }
    return st;
}

clg_status clg_clip_grad_norm(int n, clg_tensor *const *params, double max_norm, clg_tensor **total_norm)
{
    if (total_norm) *total_norm = NULL;
    clg_device *dev = clg__optim_device(n, params);
    if (!dev) return CLG_ERR_INVALID_ARGUMENT;
    clg_dtype dtype = params[0] && clg__is_float(params[0]->dtype) ? params[0]->dtype : CLG_F32;
    clg_status st = check_params(dev, n, params, max_norm, &dtype);
    if (st != CLG_OK) return st;
    /* Gradients never require a gradient themselves, but keep the ops off any tape. */
    clg_no_grad_begin(dev);
    clg_tensor *sumsq = sum_of_squares(dev, dtype, n, params);
    clg_tensor *norm = clg__tensor_new(dev, dtype, 0, NULL);
    clg_tensor *scale = clg__tensor_new(dev, dtype, 0, NULL);
    st = sumsq && norm && scale ? clip(dev, dtype, n, params, max_norm, sumsq, norm, scale) : dev->status;
    clg_no_grad_end(dev);
    clg_tensor_free(sumsq);
    clg_tensor_free(scale);
    if (st == CLG_OK && total_norm) *total_norm = norm;
    else clg_tensor_free(norm);
    if (st != CLG_OK && dev->error[0]) {   /* say which call failed; the op's message is copied */
        char err[CLG_ERROR_MAX];
        memcpy(err, dev->error, sizeof err);
        return clg__fail(dev, st, "%s: %.7000s", FN, err);
    }
    return st;
}
