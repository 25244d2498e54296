/* bench_dist: what one data-parallel gradient exchange costs (clg_dist_allreduce_grads)
 * for the parameter lists of the reference MLP, the reference CNN and ResNet-18: the
 * whole call (gradients device -> host arena, the replicas' sum, MPI_Allreduce in
 * buckets, arena -> gradients) and the MPI_Allreduce share of it.
 *
 *   mpirun -np 2 ./build/bench/bench_dist [--repeats N] [--bucket-mb X]
 *   ./build/bench/bench_dist --replicas 2        two devices of one process, no MPI
 *
 * Prints one line per model: bytes per step and rank, then min / median / max
 * milliseconds per exchange over the repeats (rank 0's clock; every rank takes part). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clgrad.h>
#include <clgrad/dist_mpi.h>   /* clg_dist_init: libclgrad-dist */

/* Parameter sizes, layer by layer (weights and biases). */
static const int64_t MLP[] = {784 * 512, 512, 512 * 256, 256, 256 * 10, 10};
static const int64_t CNN[] = {16 * 25, 16, 32 * 16 * 25, 32, 1568 * 128, 128, 128 * 10, 10};
/* ResNet-18 for 1000 classes (11,689,512 parameters): conv1, the 4 stages' 3x3 convs
 * and 1x1 downsamples, batch-norm weights and biases, fc. */
static const int64_t RESNET18[] = {
    64 * 3 * 49, 128,
    64 * 64 * 9, 128, 64 * 64 * 9, 128, 64 * 64 * 9, 128, 64 * 64 * 9, 128,
    128 * 64 * 9, 256, 128 * 128 * 9, 256, 128 * 64, 256, 128 * 128 * 9, 256, 128 * 128 * 9, 256,
    256 * 128 * 9, 512, 256 * 256 * 9, 512, 256 * 128, 512, 256 * 256 * 9, 512, 256 * 256 * 9, 512,
    512 * 256 * 9, 1024, 512 * 512 * 9, 1024, 512 * 256, 1024, 512 * 512 * 9, 1024, 512 * 512 * 9, 1024,
    512 * 1000, 1000};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Parameters of the sizes given on each replica's device, with gradients (ones). */
static clg_tensor **make_params(clg_device **devs, int nrep, const int64_t *sizes, int n)
{
    clg_tensor **p = calloc((size_t)(nrep * n), sizeof *p);
    for (int r = 0; p && r < nrep; r++)
        for (int i = 0; i < n; i++) {
            clg_tensor *t = clg_zeros(devs[r], CLG_F32, 1, &sizes[i]);
            clg_tensor_set_requires_grad(t, true);
            clg_backward(clg_sum(t, 0, NULL, false), NULL);
            p[r * n + i] = t;
        }
    return p;
}

static void bench(clg_dist *d, clg_device **devs, int nrep, const char *name, const int64_t *sizes, int n, int repeats)
{
    clg_tensor **p = make_params(devs, nrep, sizes, n);
    int64_t counts[8], bytes = 0;
    for (int r = 0; r < nrep; r++) counts[r] = 64;
    for (int i = 0; i < n; i++) bytes += sizes[i] * 4;
    double *ms = calloc((size_t)repeats, sizeof *ms);
    clg_dist_allreduce_grads(d, nrep, n, p, counts);   /* warm: the arena, the thread, MPI's buffers */
    clg_dist_stats before = clg_dist_get_stats(d);
    for (int k = 0; k < repeats; k++) {
        double t0 = now();
        if (clg_dist_allreduce_grads(d, nrep, n, p, counts) != CLG_OK) {
            fprintf(stderr, "bench_dist: %s\n", clg_dist_error(d));
            exit(1);
        }
        for (int r = 0; r < nrep; r++) clg_device_finish(devs[r]);   /* the writes back landed */
        ms[k] = 1e3 * (now() - t0);
    }
    clg_dist_stats after = clg_dist_get_stats(d);
    qsort(ms, (size_t)repeats, sizeof *ms, cmp);
    printf("%-9s %8.2f MB  %2d buckets  exchange %8.2f / %8.2f / %8.2f ms  all-reduce %8.2f ms\n", name,
           (double)bytes / 1e6, after.buckets, ms[0], ms[repeats / 2], ms[repeats - 1],
           1e3 * (after.reduce_seconds - before.reduce_seconds) / repeats);
    fflush(stdout);
    clg_dist_detach(d);
    for (int k = 0; k < nrep * n; k++) clg_tensor_free(p[k]);
    free(p);
    free(ms);
}

int main(int argc, char **argv)
{
    clg_dist *d;
    char err[512];
    int repeats = 20, nrep = 1;
    double bucket = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--repeats")) repeats = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--replicas")) nrep = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--bucket-mb")) bucket = atof(argv[i + 1]);
    }
    if (repeats < 1 || nrep < 1 || nrep > 8) return fprintf(stderr, "bench_dist: bad options\n"), 2;
    if (clg_dist_init(&argc, &argv, &(clg_dist_options){.bucket_mb = bucket}, &d, err, sizeof err))
        return fprintf(stderr, "bench_dist: %s\n", err), 1;
    if (clg_dist_rank(d) > 0 && !freopen("/dev/null", "w", stdout)) return 1;
    clg_device *devs[8];
    for (int r = 0; r < nrep; r++)
        if (clg_device_open(NULL, &devs[r]) != CLG_OK) return fprintf(stderr, "bench_dist: %s\n", clg_device_error(devs[r])), 1;
    printf("bench_dist: %d rank(s) x %d replica(s) on %s, %d repeats\n", clg_dist_size(d), nrep,
           clg_device_get_info(devs[0])->name, repeats);
    bench(d, devs, nrep, "mlp", MLP, (int)(sizeof MLP / sizeof *MLP), repeats);
    bench(d, devs, nrep, "cnn", CNN, (int)(sizeof CNN / sizeof *CNN), repeats);
    bench(d, devs, nrep, "resnet18", RESNET18, (int)(sizeof RESNET18 / sizeof *RESNET18), repeats);
    for (int r = 0; r < nrep; r++) clg_device_close(devs[r]);
    clg_dist_free(d);
    return 0;
}
