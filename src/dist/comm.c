/* comm.c: the transport between processes. With MPI (CLGRAD_HAVE_MPI, and the process
 * started by a launcher) every rank calls the same collectives in the same order; a
 * single process needs none of it and sums over itself, which is a no-op. MPI errors
 * are returned, not fatal (MPI_ERRORS_RETURN), so that they reach the caller named. */
#include <stdio.h>
#include <stdlib.h>

#include "dist_impl.h"

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
    *c = (clg__comm){.rank = 0, .size = 1};
    pthread_mutex_init(&c->mu, NULL);
    if (!clg_dist_launched()) return CLG_OK;
    int inited = 0, provided = 0, rc;
    MPI_Initialized(&inited);
    if (!inited) {
        if ((rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided)) != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Init_thread", err, errlen);
        c->init_here = true;
    } else {
        MPI_Query_thread(&provided);
    }
    c->mpi = true;
    if (provided < MPI_THREAD_SERIALIZED) {
        if (err) snprintf(err, errlen, "MPI gives thread level %d; clgrad's reduction thread needs "
                          "MPI_THREAD_SERIALIZED (%d)", provided, MPI_THREAD_SERIALIZED);
        return CLG_ERR_COMM;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    return CLG_OK;
}

void clg__comm_finalize(clg__comm *c)
{
    if (c->init_here) MPI_Finalize();
    c->init_here = c->mpi = false;
    pthread_mutex_destroy(&c->mu);
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

bool clg_dist_mpi_built(void) { return true; }

#else /* no MPI: a group of one */

clg_status clg__comm_init(clg__comm *c, int *argc, char ***argv, char *err, size_t errlen)
{
    (void)argc, (void)argv;
    *c = (clg__comm){.rank = 0, .size = 1};
    pthread_mutex_init(&c->mu, NULL);
    if (!clg_dist_launched()) return CLG_OK;
    if (err) snprintf(err, errlen, "started by an MPI launcher, but this clgrad was built without MPI: each process "
                      "would train alone on all the data (install libopenmpi-dev and rebuild)");
    return CLG_ERR_UNSUPPORTED;
}

void clg__comm_finalize(clg__comm *c) { pthread_mutex_destroy(&c->mu); }

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

bool clg_dist_mpi_built(void) { return false; }

#endif

/* The variables Open MPI (OMPI_COMM_WORLD_SIZE), PMIx (PMIX_RANK) and MPICH or Intel
 * MPI (PMI_SIZE) launchers set in every process they start. */
bool clg_dist_launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_SIZE");
}
