/* comm.c: the transport between processes as the core sees it: the clg_dist_transport
 * given to clg_dist_new (libclgrad-dist's MPI, src/mpi/), or none, a group of one
 * process, whose sums over itself are no-ops. libclgrad holds no MPI symbol: whoever
 * links MPI brings it here through the transport's calls.
 *
 * Two channels (dist.h): the gradients' (the reducer's thread, broadcasts and sums) and
 * the layers' (collectives inside forward and backward passes, synchronised batch norm).
 * The transport is promised one call at a time per channel: each has its mutex here, so
 * that no transport has to serialise its own calls. */
#include <stdio.h>
#include <stdlib.h>

#include "dist_impl.h"

clg_status clg__comm_init(clg__comm *c, const clg_dist_transport *t, char *err, size_t errlen)
{
    *c = (clg__comm){.rank = 0, .size = 1};
    if (!t && clg_dist_launched()) {
        if (err) snprintf(err, errlen, "started by an MPI launcher, but given no transport between the processes: "
                          "each would train alone on all the data (clg_dist_init of libclgrad-dist, "
                          "clgrad/dist_mpi.h, trains over MPI)");
        return CLG_ERR_UNSUPPORTED;
    }
    if (t && (t->size < 1 || t->rank < 0 || t->rank >= t->size || !t->allreduce || !t->bcast)) {
        if (err) snprintf(err, errlen, "the transport is rank %d of %d%s%s: a rank in [0, size) and the "
                          "allreduce and bcast calls are needed", t->rank, t->size,
                          t->allreduce ? "" : ", without allreduce", t->bcast ? "" : ", without bcast");
        return CLG_ERR_INVALID_ARGUMENT;
    }
    if (t) {
        c->have = true;
        c->t = *t;
        c->rank = t->rank;
        c->size = t->size;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->layers_mu, NULL);
    return CLG_OK;
}

void clg__comm_finalize(clg__comm *c, bool clean)
{
    /* After a failure a thread may still be inside the transport, holding mu. */
    if (!clean) return;
    if (c->have && c->t.finalize) c->t.finalize(c->t.ctx);
    c->have = false;
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->layers_mu);
}

void clg__comm_abort(clg__comm *c, int code)
{
    if (c->have && c->t.abort) c->t.abort(c->t.ctx, code);
}

clg_status clg__comm_allreduce(clg__comm *c, void *buf, int64_t count, bool f64, char *err, size_t errlen)
{
    if (!c->have || c->size == 1) return CLG_OK;
    pthread_mutex_lock(&c->mu);
    clg_status st = c->t.allreduce(c->t.ctx, buf, count, f64, err, errlen);
    pthread_mutex_unlock(&c->mu);
    return st;
}

clg_status clg__comm_bcast(clg__comm *c, void *buf, size_t bytes, char *err, size_t errlen)
{
    if (!c->have || c->size == 1) return CLG_OK;
    pthread_mutex_lock(&c->mu);
    clg_status st = c->t.bcast(c->t.ctx, buf, bytes, err, errlen);
    pthread_mutex_unlock(&c->mu);
    return st;
}

bool clg__comm_has_layers(const clg__comm *c) { return !c->have || c->size == 1 || c->t.allreduce_layers; }

const char *clg__comm_no_layers(const clg__comm *c)
{
    if (clg__comm_has_layers(c)) return "";
    return c->t.no_layers ? c->t.no_layers : "the transport has no channel for collectives inside a pass";
}

clg_status clg__comm_allreduce_layers(clg__comm *c, void *buf, int64_t count, bool f64, double timeout, char *err,
                                      size_t errlen)
{
    if (!c->have || c->size == 1) return CLG_OK;
    if (!c->t.allreduce_layers) {
        if (err) snprintf(err, errlen, "%s", clg__comm_no_layers(c));
        return CLG_ERR_UNSUPPORTED;
    }
    pthread_mutex_lock(&c->layers_mu);
    clg_status st = c->t.allreduce_layers(c->t.ctx, buf, count, f64, timeout, err, errlen);
    pthread_mutex_unlock(&c->layers_mu);
    return st;
}

/* The variables Open MPI (OMPI_COMM_WORLD_SIZE), PMIx (PMIX_RANK) and MPICH or Intel
 * MPI (PMI_SIZE) launchers set in every process they start. */
bool clg_dist_launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_SIZE");
}
