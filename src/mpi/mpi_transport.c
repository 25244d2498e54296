/* mpi_transport.c: the transport of clgrad/dist.h over MPI, the one part of data-parallel
 * training that calls MPI (the reducer, the collectives' ops and the trainer stay in
 * libclgrad, which links no MPI). MPI errors are returned, not fatal
 * (MPI_ERRORS_RETURN), so that they reach the caller named.
 *
 * The gradients' channel is MPI_COMM_WORLD; the layers' is a duplicate of it, so that the
 * two channels' collectives, each in the same order on every rank, can run at once from
 * two threads: that needs MPI_THREAD_MULTIPLE; an MPI without it still reduces gradients
 * (SERIALIZED: libclgrad serialises each channel's calls), its layers' channel refused. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mpi_transport.h"

typedef struct mpi_ctx {
    bool init_here;            /* MPI_Init was ours: MPI_Finalize is too */
    bool have_layers;
    MPI_Comm layers;           /* the layers' channel, when have_layers */
    char no_layers[200];       /* why there is none */
} mpi_ctx;

static clg_status mpi_fail(int rc, const char *call, char *err, size_t errlen)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    if (err) snprintf(err, errlen, "%s failed: %s", call, msg);
    return CLG_ERR_COMM;
}

/* MPI counts are int: parts of at most 2^30 values. */
static clg_status t_allreduce(void *ctx, void *buf, int64_t count, bool f64, char *err, size_t errlen)
{
    (void)ctx;
    size_t esize = f64 ? 8 : 4;
    for (int64_t done = 0; done < count;) {
        int part = count - done > (1 << 30) ? (1 << 30) : (int)(count - done);
        int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)buf + (size_t)done * esize, part, f64 ? MPI_DOUBLE : MPI_FLOAT,
                               MPI_SUM, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Allreduce", err, errlen);
        done += part;
    }
    return CLG_OK;
}

static clg_status t_bcast(void *ctx, void *buf, size_t bytes, char *err, size_t errlen)
{
    (void)ctx;
    for (size_t done = 0; done < bytes;) {
        int part = bytes - done > (1u << 30) ? (1 << 30) : (int)(bytes - done);
        int rc = MPI_Bcast((char *)buf + done, part, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Bcast", err, errlen);
        done += (size_t)part;
    }
    return CLG_OK;
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Waits for request q at most timeout seconds, driving MPI's progress (MPI_Test). */
static clg_status wait_request(MPI_Request *q, double timeout, char *err, size_t errlen)
{
    double start = seconds();
    for (int polls = 0;; polls++) {
        int done = 0, rc = MPI_Test(q, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Test", err, errlen);
        if (done) return CLG_OK;
        if (seconds() - start > timeout) {
            if (err) snprintf(err, errlen, "a collective did not finish in %g s: another rank has died or hangs",
                              timeout);
            return CLG_ERR_COMM;
        }
        if (polls > 1000) nanosleep(&(struct timespec){0, 20000}, NULL);   /* spin briefly, then yield the core */
    }
}

static clg_status t_allreduce_layers(void *ctx, void *buf, int64_t count, bool f64, double timeout, char *err,
                                     size_t errlen)
{
    mpi_ctx *m = ctx;
    if (count > (1 << 30)) {
        if (err) snprintf(err, errlen, "%lld values in one collective (at most 2^30)", (long long)count);
        return CLG_ERR_INVALID_ARGUMENT;
    }
    MPI_Request q;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, f64 ? MPI_DOUBLE : MPI_FLOAT, MPI_SUM, m->layers, &q);
    return rc != MPI_SUCCESS ? mpi_fail(rc, "MPI_Iallreduce", err, errlen) : wait_request(&q, timeout, err, errlen);
}

static void t_abort(void *ctx, int code)
{
    (void)ctx;
    MPI_Abort(MPI_COMM_WORLD, code);
}

void clg__mpi_transport_close(void *ctx)
{
    mpi_ctx *m = ctx;
    if (!m) return;
    if (m->have_layers) MPI_Comm_free(&m->layers);
    if (m->init_here) MPI_Finalize();
    free(m);
}

/* MPI_Init_thread asking for MULTIPLE, unless the program started MPI itself. */
static clg_status start_mpi(mpi_ctx *m, int *argc, char ***argv, int *provided, char *err, size_t errlen)
{
    int inited = 0, rc;
    MPI_Initialized(&inited);
    if (inited) {
        MPI_Query_thread(provided);
        return CLG_OK;
    }
    if ((rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, provided)) != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Init_thread", err, errlen);
    m->init_here = true;
    return CLG_OK;
}

clg_status clg__mpi_transport_open(int *argc, char ***argv, clg_dist_transport *out, char *err, size_t errlen)
{
    mpi_ctx *m = calloc(1, sizeof *m);
    if (!m) {
        if (err) snprintf(err, errlen, "out of host memory");
        return CLG_ERR_OUT_OF_MEMORY;
    }
    int provided = 0, rc;
    clg_status st = start_mpi(m, argc, argv, &provided, err, errlen);
    if (!st && provided < MPI_THREAD_SERIALIZED) {
        if (err) snprintf(err, errlen, "MPI gives thread level %d; clgrad's reduction thread needs "
                          "MPI_THREAD_SERIALIZED (%d)", provided, MPI_THREAD_SERIALIZED);
        st = CLG_ERR_COMM;
    }
    *out = (clg_dist_transport){.ctx = m, .allreduce = t_allreduce, .bcast = t_bcast, .abort = t_abort,
                                .finalize = clg__mpi_transport_close, .no_layers = m->no_layers};
    if (!st) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &out->rank);
        MPI_Comm_size(MPI_COMM_WORLD, &out->size);
    }
    if (!st && provided < MPI_THREAD_MULTIPLE)
        snprintf(m->no_layers, sizeof m->no_layers, "collectives inside a pass need MPI_THREAD_MULTIPLE (%d); this "
                 "MPI gives thread level %d", MPI_THREAD_MULTIPLE, provided);
    else if (!st && (rc = MPI_Comm_dup(MPI_COMM_WORLD, &m->layers)) != MPI_SUCCESS)
        st = mpi_fail(rc, "MPI_Comm_dup", err, errlen);
    else if (!st) {
        MPI_Comm_set_errhandler(m->layers, MPI_ERRORS_RETURN);
        m->have_layers = true;
        out->allreduce_layers = t_allreduce_layers;
    }
    if (st) clg__mpi_transport_close(m);
    return st;
}
