/* sync.c: collectives inside a model's passes. clg_dist_all_reduce is a differentiable
 * sum over the ranks (its backward sums the gradients over the ranks, weighted by the
 * ranks' shares of the loss); synchronised batch norm (clg_dist_sync_batch_norm) hands
 * it to the model's batch-norm layers, which then normalise with the statistics of the
 * global batch (src/nn/norm_layers.c). Both run on the transport's layers' channel
 * (comm.c), beside the gradients' reduction, and wait for every rank at most the dist's
 * timeout. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "dist_impl.h"
#include "nn_impl.h"

/* x's values summed over the ranks into a new tensor: read, all-reduce, write; each
 * value times `in` before the sum and `out` after it (backward's weights). Waits. */
static clg_tensor *sum_over_ranks(clg_dist *d, clg_tensor *x, const char *op, double in, double out)
{
    size_t bytes = (size_t)x->numel * clg_dtype_size(x->dtype);
    void *host = malloc(bytes + 1);
    if (!host) return clg__op_fail(x->dev, CLG_ERR_OUT_OF_MEMORY, op, "x %s: out of host memory", CLG_DESC(x));
    bool f64 = x->dtype == CLG_F64;
    clg_status st = clg_tensor_to_host(x, host, bytes);
    for (int64_t i = 0; !st && in != 1 && i < x->numel; i++)
        if (f64) ((double *)host)[i] *= in;
        else ((float *)host)[i] = (float)(((float *)host)[i] * in);
    char why[400] = "";
    if (!st && (st = clg__comm_allreduce_layers(&d->comm, host, x->numel, f64, d->o.timeout, why, sizeof why))) {
        clg__dist_fail(d, st, "%s (rank %d of %d): %s", op, d->comm.rank, d->comm.size, why);
        clg__op_fail(x->dev, st, op, "x %s, rank %d of %d: %s", CLG_DESC(x), d->comm.rank, d->comm.size, why);
    }
    for (int64_t i = 0; !st && out != 1 && i < x->numel; i++)
        if (f64) ((double *)host)[i] *= out;
        else ((float *)host)[i] = (float)(((float *)host)[i] * out);
    clg_tensor *y = st ? NULL : clg_tensor_from_host(x->dev, x->dtype, x->ndim, x->shape, host);
    free(host);
    return y;
}

/* i[0]: the dist's address (dist.h: the dist outlives the passes that use it); f[0]: share.
 * The gradient: (sum over ranks of share * g) / share (dist.h says why). */
static clg_status all_reduce_bw(clg_node *node, clg_tensor *g, clg_tensor **gin)
{
    clg_dist *d = (clg_dist *)(intptr_t)node->i[0];
    double share = node->f[0];
    if (d->comm.size == 1) gin[0] = share == 1 ? g : clg_mul_scalar(g, share > 0 ? 1.0 : 0.0);
    else gin[0] = sum_over_ranks(d, g, "dist_all_reduce (backward)", share, share > 0 ? 1 / share : 1);
    return gin[0] ? CLG_OK : g->dev->status;
}

clg_tensor *clg_dist_all_reduce(clg_dist *d, clg_tensor *x, double share)
{
    if (!x) return NULL;
    const char *op = "dist_all_reduce";
    if (!d) return clg__op_fail(x->dev, CLG_ERR_INVALID_ARGUMENT, op, "no dist (x %s)", CLG_DESC(x));
    if (!clg__check_float(op, x)) return NULL;
    if (!(share >= 0 && share <= 1))
        return clg__op_fail(x->dev, CLG_ERR_INVALID_ARGUMENT, op, "share %g is not in [0, 1] (x %s)", share,
                            CLG_DESC(x));
    if (clg__capturing(x->dev))   /* a replay could not meet the other ranks' collectives */
        return clg__op_fail(x->dev, CLG_ERR_UNSUPPORTED, op, "x %s: not in a captured graph", CLG_DESC(x));
    if (d->broken)
        return clg__op_fail(x->dev, CLG_ERR_COMM, op, "x %s: an earlier failure left the ranks out of step",
                            CLG_DESC(x));
    clg_tensor *y = d->comm.size == 1 ? clg__tensor_view(x, x->ndim, x->shape, x->strides, x->offset)
                                      : sum_over_ranks(d, x, op, 1, 1);
    clg_node *node = NULL;
    y = clg__taped(y, CLG_OP_dist_all_reduce, all_reduce_bw, 1, &x, &node);
    if (node) {
        node->i[0] = (int64_t)(intptr_t)d;
        node->f[0] = share;
    }
    return y;
}

/* ---- synchronised batch norm ------------------------------------------------------------- */

static clg_tensor *group_sum(void *ctx, clg_tensor *t, double share) { return clg_dist_all_reduce(ctx, t, share); }

/* Host numbers on the layers' channel: the gradients' may be busy on the other thread. */
static clg_status group_count(void *ctx, double *v, int n, char *err, size_t errlen)
{
    clg_dist *d = ctx;
    char why[400] = "an earlier failure left the ranks out of step";
    clg_status st = d->broken ? CLG_ERR_COMM
                              : clg__comm_allreduce_layers(&d->comm, v, n, true, d->o.timeout, why, sizeof why);
    if (st) {
        clg__dist_fail(d, st, "synchronised batch norm (rank %d of %d): %s", d->comm.rank, d->comm.size, why);
        snprintf(err, errlen, "%s", d->err);
    }
    return st;
}

/* Every batch norm under m (m included). */
static int sync_tree(clg_dist *d, clg_module *m)
{
    const clg__nn_group g = {group_sum, group_count, d};
    int n = clg__nn_batch_norm_sync(m, &g) ? 1 : 0;
    for (int i = 0; i < clg_module_child_count(m); i++) n += sync_tree(d, clg_module_child_at(m, i));
    return n;
}

clg_status clg_dist_sync_batch_norm(clg_dist *d, clg_module *model, int *converted)
{
    if (converted) *converted = 0;
    if (!d || !model) return CLG_ERR_INVALID_ARGUMENT;
    if (!clg__comm_has_layers(&d->comm))
        return clg__dist_fail(d, CLG_ERR_UNSUPPORTED, "clg_dist_sync_batch_norm: batch-norm statistics are summed "
                              "during forward and backward, beside the gradients' reduction: %s",
                              clg__comm_no_layers(&d->comm));
    if (d->comm.size == 1) return CLG_OK;   /* one process: its statistics are the global batch's */
    int n = sync_tree(d, model);
    if (converted) *converted = n;
    return CLG_OK;
}
