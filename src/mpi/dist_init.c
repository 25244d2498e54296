/* dist_init.c: clg_dist_init (clgrad/dist_mpi.h), libclgrad-dist's entry: under an MPI
 * launcher a group over MPI's transport (mpi_transport.c), else libclgrad's group of one
 * process. Built without MPI, the library still links and says so when a launcher
 * starts it, rather than letting each rank train alone on all the data. */
#include <stdio.h>

#include "mpi_transport.h"

#ifdef CLGRAD_HAVE_MPI

bool clg_dist_mpi_built(void) { return true; }

clg_status clg_dist_init(int *argc, char ***argv, const clg_dist_options *options, clg_dist **out, char *err,
                         size_t errlen)
{
    if (!out) return CLG_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!clg_dist_launched()) return clg_dist_new(NULL, options, out, err, errlen);
    clg_dist_transport t;
    char why[400] = "";
    clg_status st = clg__mpi_transport_open(argc, argv, &t, why, sizeof why);
    if (st) {
        if (err) snprintf(err, errlen, "clg_dist_init: %s", why);
        return st;
    }
    if ((st = clg_dist_new(&t, options, out, err, errlen))) clg__mpi_transport_close(t.ctx);
    return st;
}

#else /* no MPI: a group of one */

bool clg_dist_mpi_built(void) { return false; }

clg_status clg_dist_init(int *argc, char ***argv, const clg_dist_options *options, clg_dist **out, char *err,
                         size_t errlen)
{
    (void)argc, (void)argv;
    if (!out) return CLG_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (clg_dist_launched()) {
        if (err) snprintf(err, errlen, "clg_dist_init: started by an MPI launcher, but this libclgrad-dist was built "
                          "without MPI: each process would train alone on all the data (install libopenmpi-dev "
                          "and rebuild)");
        return CLG_ERR_UNSUPPORTED;
    }
    return clg_dist_new(NULL, options, out, err, errlen);
}

#endif
