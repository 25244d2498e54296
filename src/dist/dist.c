/* dist.c: the public API of data-parallel training (clgrad/dist.h) over the transport
 * (comm.c) and the gradient reducer (reducer.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist_impl.h"

clg_status clg__dist_fail(clg_dist *d, clg_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
    if (status == CLG_ERR_COMM) d->broken = true;
    return status;
}

/* A positive number from the environment, else fallback. */
static double env_number(const char *name, double fallback)
{
    const char *s = getenv(name);
    double v = s ? strtod(s, NULL) : 0;
    return v > 0 ? v : fallback;
}

/* Zeros: clg_dist_new reads the environment's values, else 1 MiB and 600 s. */
clg_dist_options clg_dist_defaults(void) { return (clg_dist_options){0}; }

clg_status clg_dist_new(const clg_dist_transport *transport, const clg_dist_options *options, clg_dist **out,
                        char *err, size_t errlen)
{
    if (!out) return CLG_ERR_INVALID_ARGUMENT;
    *out = NULL;
    clg_dist *d = calloc(1, sizeof *d);
    if (!d) {
        if (err) snprintf(err, errlen, "clg_dist_new: out of host memory");
        return CLG_ERR_OUT_OF_MEMORY;
    }
    if (options) d->o = *options;
    if (!(d->o.bucket_mb > 0)) d->o.bucket_mb = env_number("CLG_DIST_BUCKET_MB", 1);
    if (!(d->o.timeout > 0)) d->o.timeout = env_number("CLG_DIST_TIMEOUT", 600);
    char why[400] = "";
    clg_status st = clg__comm_init(&d->comm, transport, why, sizeof why);
    if (st) {
        if (err) snprintf(err, errlen, "clg_dist_new: %s", why);
        free(d);   /* the transport stays the caller's */
        return st;
    }
    *out = d;
    return CLG_OK;
}

void clg_dist_free(clg_dist *d)
{
    if (!d) return;
    clg__reducer_free(d->reducer);
    clg__comm_finalize(&d->comm, !d->broken);   /* a broken group would hang in it */
    free(d);
}

void clg_dist_abort(clg_dist *d, int code)
{
    if (d) clg__comm_abort(&d->comm, code);
}

int clg_dist_rank(const clg_dist *d) { return d ? d->comm.rank : 0; }
int clg_dist_size(const clg_dist *d) { return d ? d->comm.size : 1; }
const char *clg_dist_error(const clg_dist *d) { return d ? d->err : "no dist"; }

static clg_status usable(clg_dist *d, const char *fn)
{
    if (d->broken) return clg__dist_fail(d, CLG_ERR_COMM, "%s: an earlier failure left the ranks out of step", fn);
    return CLG_OK;
}

clg_status clg_dist_sum(clg_dist *d, double *values, int n)
{
    if (!d || (!values && n > 0) || n < 0) return CLG_ERR_INVALID_ARGUMENT;
    clg_status st = usable(d, "clg_dist_sum");
    char why[400];
    if (!st && (st = clg__comm_allreduce(&d->comm, values, n, true, why, sizeof why)))
        clg__dist_fail(d, st, "clg_dist_sum: %s", why);
    return st;
}

/* One tensor from rank 0's first replica into every replica: read, broadcast, write. */
static clg_status broadcast_one(clg_dist *d, int nrep, int n, clg_tensor *const *t, int i, void *host)
{
    char why[400];
    size_t bytes = (size_t)t[i]->numel * clg_dtype_size(t[i]->dtype);
    clg_status st = d->comm.rank == 0 ? clg_tensor_to_host(t[i], host, bytes) : CLG_OK;
    if (st) return clg__dist_fail(d, st, "clg_dist_broadcast: tensor %d: %s", i, clg_device_error(t[i]->dev));
    if ((st = clg__comm_bcast(&d->comm, host, bytes, why, sizeof why)))
        return clg__dist_fail(d, st, "clg_dist_broadcast: %s", why);
    for (int rep = d->comm.rank == 0 ? 1 : 0; rep < nrep; rep++) {
        clg_tensor *dst = t[rep * n + i];
        st = clg__write(dst->dev, dst->buf, (size_t)dst->offset * clg_dtype_size(dst->dtype), host, bytes);
        if (st) return clg__dist_fail(d, st, "clg_dist_broadcast: replica %d, tensor %d: %s", rep, i,
                                      clg_device_error(dst->dev));
        clg__tensor_written(dst);
    }
    return CLG_OK;
}

clg_status clg_dist_broadcast(clg_dist *d, int nreplicas, int n, clg_tensor *const *tensors)
{
    if (!d || nreplicas < 1 || n < 0 || (!tensors && n > 0)) return CLG_ERR_INVALID_ARGUMENT;
    clg_status st = usable(d, "clg_dist_broadcast");
    for (int k = 0; !st && k < nreplicas * n; k++) {
        const clg_tensor *a = tensors[k], *b = tensors[k % n];
        if (!a || a->numel != b->numel || a->dtype != b->dtype || !clg_tensor_is_contiguous(a))
            st = clg__dist_fail(d, CLG_ERR_SHAPE, "clg_dist_broadcast: replica %d's tensor %d is %s (contiguous "
                                "tensors as replica 0's %s)",
                                k / n, k % n, a ? CLG_DESC(a) : "NULL", CLG_DESC(b));
    }
    for (int i = 0; !st && i < n; i++) {
        void *host = malloc((size_t)tensors[i]->numel * clg_dtype_size(tensors[i]->dtype) + 1);
        st = host ? broadcast_one(d, nreplicas, n, tensors, i, host)
                  : clg__dist_fail(d, CLG_ERR_OUT_OF_MEMORY, "clg_dist_broadcast: out of host memory");
        free(host);
    }
    return st;
}

void clg_dist_detach(clg_dist *d)
{
    if (!d || !d->reducer) return;
    clg_dist_stats s;   /* keep what it measured */
    clg__reducer_stats(d->reducer, &s);
    d->done.steps += s.steps;
    d->done.reduce_seconds += s.reduce_seconds;
    d->done.sum_seconds += s.sum_seconds;
    d->done.wait_seconds += s.wait_seconds;
    d->done.exposed_seconds += s.exposed_seconds;
    d->done.bytes = s.bytes;
    d->done.buckets = s.buckets;
    clg__reducer_free(d->reducer);
    d->reducer = NULL;
}

clg__reducer *clg__dist_reducer(clg_dist *d, int nrep, int n, clg_tensor *const *params)
{
    if (clg__reducer_matches(d->reducer, nrep, n, params)) return d->reducer;
    clg_dist_detach(d);
    char why[512];
    d->reducer = clg__reducer_new(d, nrep, n, params, (size_t)(d->o.bucket_mb * 1048576.0), why, sizeof why);
    if (!d->reducer) clg__dist_fail(d, CLG_ERR_INVALID_ARGUMENT, "%s", why);
    return d->reducer;
}

clg_status clg__dist_finish(clg_dist *d, clg__reducer *r)
{
    if (d->broken) {   /* a collective of this step failed already (synchronised batch norm's) */
        clg__reducer_abandon(r);
        return CLG_ERR_COMM;
    }
    clg_status st = clg__reducer_finish(r, d->o.timeout);
    if (st) clg__dist_fail(d, st, "clg_dist_allreduce_grads (rank %d of %d): %s", d->comm.rank, d->comm.size,
                           clg__reducer_error(r));
    return st;
}

clg_status clg_dist_allreduce_grads(clg_dist *d, int nreplicas, int n, clg_tensor *const *params, const int64_t *counts)
{
    if (!d || !counts) return CLG_ERR_INVALID_ARGUMENT;
    clg_status st = usable(d, "clg_dist_allreduce_grads");
    if (st) return st;
    if (d->comm.size == 1 && nreplicas == 1 && counts[0] > 0) return CLG_OK;   /* already the mean */
    clg__reducer *r = clg__dist_reducer(d, nreplicas, n, params);
    if (!r) return CLG_ERR_INVALID_ARGUMENT;
    for (int rep = 0; rep < nreplicas; rep++)
        if (counts[rep] < 0)
            return clg__dist_fail(d, CLG_ERR_INVALID_ARGUMENT, "clg_dist_allreduce_grads: replica %d has %lld samples",
                                  rep, (long long)counts[rep]);
    if ((st = clg__reducer_begin(r, counts))) return clg__dist_fail(d, st, "%s", clg__reducer_error(r));
    return clg__dist_finish(d, r);
}

clg_dist_stats clg_dist_get_stats(const clg_dist *d)
{
    clg_dist_stats s = {0};
    if (!d) return s;
    if (d->reducer) clg__reducer_stats(d->reducer, &s);
    else s.bytes = d->done.bytes, s.buckets = d->done.buckets;
    s.steps += d->done.steps;
    s.reduce_seconds += d->done.reduce_seconds;
    s.sum_seconds += d->done.sum_seconds;
    s.wait_seconds += d->done.wait_seconds;
    s.exposed_seconds += d->done.exposed_seconds;
    return s;
}
