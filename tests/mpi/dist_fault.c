/* dist_fault: a data-parallel run (clgrad/dist.h) in which rank 1 fails at step 5:
 *   dist_fault none   every rank trains 20 steps and says "done"
 *   dist_fault die    rank 1 is killed (SIGKILL), as by a crash or the OOM killer
 *   dist_fault hang   rank 1 stops answering (sleeps) but stays alive
 *   dist_fault hang-bn  the same, with synchronised batch norm: rank 0 waits for it
 *                     inside its forward pass, not in the gradients' reduction
 * The others must not wait for ever: mpirun ends the job when a rank dies, and a
 * reduction that outlives CLG_DIST_TIMEOUT fails with an error naming the cause, after
 * which the rank reports it and calls clg_dist_abort. Run by tests/mpi/fault.sh. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <clgrad.h>
#include <clgrad/dist_mpi.h>   /* clg_dist_init: libclgrad-dist */

enum { B = 8, IN = 16, OUT = 4, STEPS = 20 };

static int fail(clg_dist *d, int rank, const char *what)
{
    fprintf(stderr, "dist_fault: rank %d: %s\n", rank, what);
    fflush(stderr);
    clg_dist_abort(d, 3);
    return 3;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "none";
    clg_dist *d;
    char err[512];
    if (clg_dist_init(&argc, &argv, NULL, &d, err, sizeof err)) return fprintf(stderr, "%s\n", err), 2;
    int rank = clg_dist_rank(d);
    clg_device *dev;
    if (clg_device_open(NULL, &dev)) return fail(d, rank, clg_device_error(dev));
    clg_manual_seed(dev, 1);
    bool bn = !strcmp(mode, "hang-bn");
    clg_module *m = bn ? clg_nn_sequential(dev, 3, (clg_module *[]){clg_nn_linear(dev, IN, OUT, true),
                                                                    clg_nn_batch_norm1d(dev, OUT, 0, 0),
                                                                    clg_nn_relu(dev)})
                       : clg_nn_linear(dev, IN, OUT, true);
    if (bn && clg_dist_sync_batch_norm(d, m, NULL)) return fail(d, rank, clg_dist_error(d));
    clg_tensor *p[4];
    int n = clg_module_parameters(m, p, 4, true);
    clg_optimizer *opt = clg_sgd_new(n, p, &(clg_sgd_options){.lr = 0.1});
    clg_trainer *t = clg_trainer_new(m, opt, &(clg_trainer_options){.dist = d});
    if (!t) return fail(d, rank, clg_device_error(dev));
    for (int s = 0; s < STEPS; s++) {
        if (rank == 1 && s == 5 && !strcmp(mode, "die")) raise(SIGKILL);
        if (rank == 1 && s == 5 && (!strcmp(mode, "hang") || bn)) sleep(3600);
        float x[B * IN];
        int32_t y[B];
        for (int i = 0; i < B * IN; i++) x[i] = (float)((i * 5 + s + rank) % 11) / 5.0f - 1.0f;
        for (int i = 0; i < B; i++) y[i] = (i + s) % OUT;
        clg_scope_begin(dev);
        clg_tensor *tx = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(B, IN), x);
        clg_tensor *ty = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(B), y);
        clg_status st = clg_trainer_step(t, tx, ty, NULL);
        clg_scope_end(dev);
        if (st) return fail(d, rank, clg_device_error(dev));
    }
    printf("dist_fault: rank %d of %d: done\n", rank, clg_dist_size(d));
    clg_trainer_free(t);
    clg_optimizer_free(opt);
    clg_module_free(m);
    clg_device_close(dev);
    clg_dist_free(d);
    return 0;
}
