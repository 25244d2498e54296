/* clgrad/dist_mpi.h: data-parallel training over MPI ranks, from the separate library
 * libclgrad-dist (pkg-config clgrad-dist; CMake: find_package(clgrad COMPONENTS dist),
 * target clgrad::dist). libclgrad links no MPI; this library gives its dist
 * (clgrad/dist.h) MPI's transport. Everything after clg_dist_init is dist.h's.
 *
 *   #include <clgrad/dist_mpi.h>
 *   clg_dist *d;
 *   char err[256];
 *   if (clg_dist_init(&argc, &argv, NULL, &d, err, sizeof err)) { puts(err); return 1; }
 *   printf("rank %d of %d (MPI %s)\n", clg_dist_rank(d), clg_dist_size(d),
 *          clg_dist_mpi_built() ? "built in" : "not built in");
 *   clg_dist_free(d);                                // MPI_Finalize, if clg_dist_init started MPI
 *
 * Built with `cc prog.c $(pkg-config --cflags --libs clgrad-dist)` and run with
 * `mpirun -np 4 ./prog`, each process is a rank; run alone, it is a group of one
 * process, which needs no MPI. dist.h shows a training loop over d.
 */
#ifndef CLGRAD_DIST_MPI_H
#define CLGRAD_DIST_MPI_H

#include "dist.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether this libclgrad-dist was built with MPI (CMake found it). */
CLG_API bool clg_dist_mpi_built(void);

/* Under an MPI launcher (clg_dist_launched): MPI_Init_thread (unless the program did
 * it) and a group of MPI_COMM_WORLD's ranks over MPI's transport. Otherwise a group of
 * one process (clg_dist_new(NULL, ...)), which needs no MPI. A launcher without MPI
 * built in is an error: the ranks would train alone, each on all the data. argc and
 * argv may be NULL. err (may be NULL) receives the reason of a failure. */
CLG_API clg_status clg_dist_init(int *argc, char ***argv, const clg_dist_options *options, clg_dist **out,
                                 char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
