/* dist_impl.h: the internals of data-parallel training (src/dist/). Not installed.
 *
 *   comm.c      the transport between processes: the one given (libclgrad-dist's MPI), else none
 *   reducer.c   gradients -> host arena -> buckets reduced on a thread -> gradients
 *   dist.c      the public API over both
 */
#ifndef CLGRAD_DIST_IMPL_H
#define CLGRAD_DIST_IMPL_H

#include <pthread.h>

#include "clgrad/dist.h"
#include "tensor_impl.h"

/* ---- comm.c: between processes, through the transport given to clg_dist_new (dist.h;
 * none: a group of one), on its two channels: the gradients' (mu serialises its calls:
 * the reducer's thread and the caller's both make them) and the layers' (collectives
 * inside forward and backward, under layers_mu). */
typedef struct clg__comm {
    int rank, size;
    bool have;               /* a transport was given: t */
    clg_dist_transport t;
    pthread_mutex_t mu, layers_mu;
} clg__comm;

/* A group of one for NULL (refused under an MPI launcher), else over t. */
clg_status clg__comm_init(clg__comm *c, const clg_dist_transport *t, char *err, size_t errlen);
/* clean: the transport's finalize too (dist.h says when not). */
void clg__comm_finalize(clg__comm *c, bool clean);
void clg__comm_abort(clg__comm *c, int code);
/* Sums in place over the ranks: count values of float32 (f64 false) or float64. */
clg_status clg__comm_allreduce(clg__comm *c, void *buf, int64_t count, bool f64, char *err, size_t errlen);
/* Whether the layers' channel is there (always in a group of one); the reason if not. */
bool clg__comm_has_layers(const clg__comm *c);
const char *clg__comm_no_layers(const clg__comm *c);
/* The same on the layers' channel, waiting at most timeout seconds (a dead or hung
 * rank is an error, not a hang). Refused (CLG_ERR_UNSUPPORTED) without that channel. */
clg_status clg__comm_allreduce_layers(clg__comm *c, void *buf, int64_t count, bool f64, double timeout, char *err,
                                      size_t errlen);
/* bytes of rank 0's buf into every rank's. */
clg_status clg__comm_bcast(clg__comm *c, void *buf, size_t bytes, char *err, size_t errlen);

/* ---- reducer.c: the gradients of nrep local replicas of n parameters ---------------- */
typedef struct clg__reducer clg__reducer;
/* Registers post-accumulate hooks on every parameter and starts the thread. */
clg__reducer *clg__reducer_new(clg_dist *d, int nrep, int n, clg_tensor *const *params, size_t bucket_bytes,
                               char *err, size_t errlen);
void clg__reducer_free(clg__reducer *r);
/* Whether r was made for these parameters. */
bool clg__reducer_matches(const clg__reducer *r, int nrep, int n, clg_tensor *const *params);
/* A step's reduction may start: counts[r] samples behind replica r's gradients. Call
 * before (overlap) or after the step's backward passes. */
clg_status clg__reducer_begin(clg__reducer *r, const int64_t *counts);
/* Waits (at most timeout seconds) for every bucket and enqueues the writes of the
 * means into every replica's gradients. */
clg_status clg__reducer_finish(clg__reducer *r, double timeout);
/* Gives up the step begun (the ranks are out of step: it could only time out); its
 * thread may be stuck in MPI, and is left behind when r is freed. */
void clg__reducer_abandon(clg__reducer *r);
const char *clg__reducer_error(const clg__reducer *r);
void clg__reducer_stats(const clg__reducer *r, clg_dist_stats *s);

/* ---- dist.c ------------------------------------------------------------------------------ */
struct clg_dist {
    clg__comm comm;
    clg_dist_options o;
    clg__reducer *reducer;    /* for the last parameter list given */
    bool broken;              /* a reduction failed or timed out: the ranks disagree now */
    clg_dist_stats done;      /* stats of reducers replaced */
    char err[512];
};

/* The reducer for these parameters (made, or the one from the last call). */
clg__reducer *clg__dist_reducer(clg_dist *d, int nrep, int n, clg_tensor *const *params);
/* Records a failure (d->err) and returns status. */
clg_status clg__dist_fail(clg_dist *d, clg_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Waits for the reduction of the step begun on reducer r and writes the means. */
clg_status clg__dist_finish(clg_dist *d, clg__reducer *r);

#endif
