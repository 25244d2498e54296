/* comm.c: the transport between processes. With MPI (CLGRAD_HAVE_MPI, and the process
 * started by a launcher) every rank calls the same collectives in the same order; a
 * single process needs none of it and sums over itself, which is a no-op. MPI errors
 * are returned, not fatal (MPI_ERRORS_RETURN), so that they reach the caller named.
 *
 * Two channels: the gradients' (MPI_COMM_WORLD: the reducer's thread, broadcasts and
 * sums, one call at a time under mu) and the layers' (a duplicate communicator:
 * collectives inside forward and backward passes, synchronised batch norm, under
 * layers_mu). Each channel's collectives come in the same order on every rank, but the
 * two run at once, from two threads, on communicators of their own: that needs
 * MPI_THREAD_MULTIPLE; an MPI without it still reduces gradients (SERIALIZED, the
 * layers' channel refused). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dist_impl.h"

static void mutexes_init(clg__comm *c)
{
    *c = (clg__comm){.rank = 0, .size = 1};
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->layers_mu, NULL);
}

static void mutexes_destroy(clg__comm *c)
{
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->layers_mu);
}

#ifdef CLGRAD_HAVE_MPI
#include <mpi.h>

static clg_status mpi_fail(int rc, const char *call, char *err, size_t errlen)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    if (err) snprintf(err, errlen, "%s failed: %s", call, msg);
    return CLG_ERR_COMM;
}

clg_status clg__comm_init(clg__comm *c, int *argc, char ***argv, char *err, size_t errlen)
{
    mutexes_init(c);
    if (!clg_dist_launched()) return CLG_OK;
    int inited = 0, provided = 0, rc;
    MPI_Initialized(&inited);
    if (!inited) {
        if ((rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided)) != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Init_thread", err, errlen);
        c->init_here = true;
    } else {
        MPI_Query_thread(&provided);
    }
    c->mpi = true;
    c->thread_level = provided;
    if (provided < MPI_THREAD_SERIALIZED) {
        if (err) snprintf(err, errlen, "MPI gives thread level %d; clgrad's reduction thread needs "
                          "MPI_THREAD_SERIALIZED (%d)", provided, MPI_THREAD_SERIALIZED);
        return CLG_ERR_COMM;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    if (provided < MPI_THREAD_MULTIPLE) return CLG_OK;   /* no layers' channel */
    MPI_Comm *layers = malloc(sizeof *layers);
    if (!layers) {
        if (err) snprintf(err, errlen, "out of host memory");
        return CLG_ERR_OUT_OF_MEMORY;
    }
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, layers)) != MPI_SUCCESS) {
        free(layers);
        return mpi_fail(rc, "MPI_Comm_dup", err, errlen);
    }
    MPI_Comm_set_errhandler(*layers, MPI_ERRORS_RETURN);
    c->layers = layers;
    return CLG_OK;
}

void clg__comm_finalize(clg__comm *c)
{
    if (c->layers) MPI_Comm_free((MPI_Comm *)c->layers);
    free(c->layers);
    c->layers = NULL;
    if (c->init_here) MPI_Finalize();
    c->init_here = c->mpi = false;
    mutexes_destroy(c);
}

void clg__comm_abort(clg__comm *c, int code)
{
    if (c->mpi) MPI_Abort(MPI_COMM_WORLD, code);
}

clg_status clg__comm_allreduce(clg__comm *c, void *buf, int64_t count, bool f64, char *err, size_t errlen)
{
    if (!c->mpi || c->size == 1) return CLG_OK;
    size_t esize = f64 ? 8 : 4;
    clg_status st = CLG_OK;
    pthread_mutex_lock(&c->mu);
    for (int64_t done = 0; done < count && st == CLG_OK;) {   /* MPI counts are int */
        int part = count - done > (1 << 30) ? (1 << 30) : (int)(count - done);
        int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)buf + (size_t)done * esize, part, f64 ? MPI_DOUBLE : MPI_FLOAT,
                               MPI_SUM, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) st = mpi_fail(rc, "MPI_Allreduce", err, errlen);
        done += part;
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

clg_status clg__comm_bcast(clg__comm *c, void *buf, size_t bytes, char *err, size_t errlen)
{
    if (!c->mpi || c->size == 1) return CLG_OK;
    clg_status st = CLG_OK;
    pthread_mutex_lock(&c->mu);
    for (size_t done = 0; done < bytes && st == CLG_OK;) {
        int part = bytes - done > (1u << 30) ? (1 << 30) : (int)(bytes - done);
        int rc = MPI_Bcast((char *)buf + done, part, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) st = mpi_fail(rc, "MPI_Bcast", err, errlen);
        done += (size_t)part;
    }
    pthread_mutex_unlock(&c->mu);
    return st;
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

clg_status clg__comm_allreduce_layers(clg__comm *c, void *buf, int64_t count, bool f64, double timeout, char *err,
                                      size_t errlen)
{
    if (!c->mpi || c->size == 1) return CLG_OK;
    if (!c->layers) {
        if (err) snprintf(err, errlen, "collectives inside a pass need MPI_THREAD_MULTIPLE (%d); this MPI gives %d",
                          MPI_THREAD_MULTIPLE, c->thread_level);
        return CLG_ERR_UNSUPPORTED;
    }
    if (count > (1 << 30)) {
        if (err) snprintf(err, errlen, "%lld values in one collective (at most 2^30)", (long long)count);
        return CLG_ERR_INVALID_ARGUMENT;
    }
    pthread_mutex_lock(&c->layers_mu);
    MPI_Request q;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, f64 ? MPI_DOUBLE : MPI_FLOAT, MPI_SUM,
                            *(MPI_Comm *)c->layers, &q);
    clg_status st = rc != MPI_SUCCESS ? mpi_fail(rc, "MPI_Iallreduce", err, errlen)
                                      : wait_request(&q, timeout, err, errlen);
    pthread_mutex_unlock(&c->layers_mu);
    return st;
}

bool clg_dist_mpi_built(void) { return true; }

#else /* no MPI: a group of one */

clg_status clg__comm_init(clg__comm *c, int *argc, char ***argv, char *err, size_t errlen)
{
    (void)argc, (void)argv;
    mutexes_init(c);
    if (!clg_dist_launched()) return CLG_OK;
    if (err) snprintf(err, errlen, "started by an MPI launcher, but this clgrad was built without MPI: each process "
                      "would train alone on all the data (install libopenmpi-dev and rebuild)");
    return CLG_ERR_UNSUPPORTED;
}

void clg__comm_finalize(clg__comm *c) { mutexes_destroy(c); }

void clg__comm_abort(clg__comm *c, int code) { (void)c, (void)code; }

clg_status clg__comm_allreduce(clg__comm *c, void *buf, int64_t count, bool f64, char *err, size_t errlen)
{
    (void)c, (void)buf, (void)count, (void)f64, (void)err, (void)errlen;
    return CLG_OK;
}

clg_status clg__comm_bcast(clg__comm *c, void *buf, size_t bytes, char *err, size_t errlen)
{
    (void)c, (void)buf, (void)bytes, (void)err, (void)errlen;
    return CLG_OK;
}

clg_status clg__comm_allreduce_layers(clg__comm *c, void *buf, int64_t count, bool f64, double timeout, char *err,
                                      size_t errlen)
{
    (void)c, (void)buf, (void)count, (void)f64, (void)timeout, (void)err, (void)errlen;
    return CLG_OK;
}

bool clg_dist_mpi_built(void) { return false; }

#endif

/* The variables Open MPI (OMPI_COMM_WORLD_SIZE), PMIx (PMIX_RANK) and MPICH or Intel
 * MPI (PMI_SIZE) launchers set in every process they start. */
bool clg_dist_launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_SIZE");
}
