/* mpi_transport.h: libclgrad-dist's internals (src/mpi/). Not installed.
 *
 *   mpi_transport.c   clgrad/dist.h's transport over MPI (built with MPI only)
 *   dist_init.c       clg_dist_init: that transport under a launcher, else a group of one
 */
#ifndef CLGRAD_MPI_TRANSPORT_H
#define CLGRAD_MPI_TRANSPORT_H

#include "clgrad/dist_mpi.h"

/* MPI_Init_thread (unless the program did it), then *out over MPI_COMM_WORLD and, with
 * MPI_THREAD_MULTIPLE, a duplicate of it for the layers' channel. On failure nothing is
 * left open and err says why. */
clg_status clg__mpi_transport_open(int *argc, char ***argv, clg_dist_transport *out, char *err, size_t errlen);
/* The transport's finalize: frees the duplicate, MPI_Finalize when MPI_Init was ours. */
void clg__mpi_transport_close(void *ctx);

#endif
