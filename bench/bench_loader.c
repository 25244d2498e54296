/* bench_loader: the DataLoader on the real Fashion-MNIST train set (60000 x 28 x 28),
 * batch 128, shuffled, scaled to [0, 1], with 1, 2 and 4 worker threads:
 *   - throughput: batches per second through clg_loader_next with no work between
 *     calls (the loader's ceiling), one epoch per repeat;
 *   - wait per step: a training loop whose step is device work (a 784x256 matmul,
 *     ReLU and a sum, read back to the host as a loss would be) asks for the next
 *     batch; how long clg_loader_next blocked, per step.
 * min / median / max over the repeats (throughput) or over the steps (waits).
 *
 *   ./build/bench/bench_loader [REPEATS] [DIR]   (default 3, $CLG_FASHION_MNIST_DIR or
 *                                                 /usr/share/datasets/fashion-mnist)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clgrad.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void stats3(double *v, int n, double *mn, double *med, double *mx)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    *mn = v[0];
    *med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    *mx = v[n - 1];
}

static clg_loader_config config(int workers)
{
    clg_loader_config c = clg_loader_defaults(128);
    c.shuffle = true;
    c.seed = 1;
    c.workers = workers;
    c.prefetch = 2 * workers;
    c.scale = 1.0f / 255;
    return c;
}

/* One epoch without work between batches; batches per second. */
static double throughput(clg_device *dev, clg_dataset *ds, int workers)
{
    clg_loader_config c = config(workers);
    clg_loader *l;
    if (clg_loader_new(dev, ds, &c, &l) != CLG_OK) return -1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int64_t n = 0;
    for (;;) {
        clg_scope_begin(dev);
        clg_tensor *x, *y;
        clg_status st = clg_loader_next(l, &x, &y);
        clg_scope_end(dev);
        if (st != CLG_OK) return -1;
        if (!x) break;
        n++;
    }
    clg_device_finish(dev);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clg_loader_free(l);
    return (double)n / ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
}

/* `steps` training-like steps; waits[i] = seconds step i waited for its batch. */
static int step_waits(clg_device *dev, clg_dataset *ds, int workers, clg_tensor *w, int steps, double *waits,
                      double *step_ms)
{
    clg_loader_config c = config(workers);
    clg_loader *l;
    if (clg_loader_new(dev, ds, &c, &l) != CLG_OK) return -1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < steps; i++) {
        clg_scope_begin(dev);
        clg_tensor *x, *y;
        if (clg_loader_next(l, &x, &y) != CLG_OK || !x) return -1;
        waits[i] = clg_loader_get_stats(l).last_wait;
        clg_tensor *h = clg_relu(clg_matmul(clg_reshape(x, CLG_SHAPE(128, 784)), w));
        double loss;
        if (clg_tensor_item(clg_sum(h, 0, NULL, false), &loss) != CLG_OK) return -1;
        clg_scope_end(dev);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *step_ms = 1e3 * ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)) / steps;
    clg_loader_free(l);
    return 0;
}

int main(int argc, char **argv)
{
    int repeats = argc > 1 ? atoi(argv[1]) : 3;
    if (repeats < 1 || repeats > 100) repeats = 3;
    const char *dir = argc > 2 ? argv[2] : NULL;
    char err[1024];
    clg_dataset *ds;
    if (clg_dataset_fashion_mnist(dir, true, &ds, err, sizeof err) != CLG_OK) {
        fprintf(stderr, "bench_loader: %s\n", err);
        return 1;
    }
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) {
        fprintf(stderr, "bench_loader: %s\n", clg_device_error(dev));
        return 1;
    }
    const clg_device_info *in = clg_device_get_info(dev);
    printf("device: %s | %s | driver %s\n", in->name, in->platform, in->driver);
    printf("Fashion-MNIST train, batch 128, shuffle, scale 1/255; %d repeats\n\n", repeats);
    clg_tensor *w = clg_rand(dev, CLG_F32, CLG_SHAPE(784, 256), -0.05, 0.05);
    enum { STEPS = 200 };
    double *tp = calloc((size_t)repeats, sizeof *tp), waits[STEPS];
    printf("| workers | batches/s min / median / max | step ms | wait per step ms min / median / max | waits > 1 ms |\n");
    printf("| ---: | ---: | ---: | ---: | ---: |\n");
    const int counts[3] = {1, 2, 4};
    for (int k = 0; k < 3; k++) {
        for (int r = 0; r < repeats; r++)
            if ((tp[r] = throughput(dev, ds, counts[k])) < 0) return fprintf(stderr, "%s\n", clg_device_error(dev)), 1;
        double step_ms;
        if (step_waits(dev, ds, counts[k], w, STEPS, waits, &step_ms) != 0)
            return fprintf(stderr, "%s\n", clg_device_error(dev)), 1;
        int over = 0;
        for (int i = 1; i < STEPS; i++) over += waits[i] > 1e-3;
        double a, b, c, d, e, f;
        stats3(tp, repeats, &a, &b, &c);
        stats3(waits + 1, STEPS - 1, &d, &e, &f);   /* step 0 waits for the pipeline to fill */
        printf("| %d | %.0f / %.0f / %.0f | %.2f | %.3f / %.3f / %.3f | %d of %d |\n", counts[k], a, b, c, step_ms,
               d * 1e3, e * 1e3, f * 1e3, over, STEPS - 1);
    }
    free(tp);
    clg_tensor_free(w);
    clg_device_close(dev);
    clg_dataset_free(ds);
    return 0;
}
