/* Uses libclgrad-dist through its installed files (pkg-config clgrad-dist, CMake
 * clgrad::dist): the group this process is in (one process, or mpirun's ranks) sums a
 * count over its ranks, which must then be the number of ranks. */
#include <clgrad.h>
#include <clgrad/dist_mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    clg_dist *d;
    char err[512];
    if (clg_dist_init(&argc, &argv, NULL, &d, err, sizeof err) != CLG_OK) {
        fprintf(stderr, "consumer_dist: %s\n", err);
        return 1;
    }
    double ones = 1;
    clg_status st = clg_dist_sum(d, &ones, 1);
    int rank = clg_dist_rank(d), size = clg_dist_size(d);
    if (st != CLG_OK || ones != size) {
        fprintf(stderr, "consumer_dist: rank %d of %d summed %g: %s\n", rank, size, ones, clg_dist_error(d));
        if (size > 1) clg_dist_abort(d, 1);
        clg_dist_free(d);
        return 1;
    }
    printf("consumer_dist: rank %d of %d, MPI %s\n", rank, size, clg_dist_mpi_built() ? "built in" : "not built in");
    clg_dist_free(d);
    return 0;
}
