/* bench_elementwise: memory bandwidth of elementwise ops (y = a + b, y = relu(a), and
 * an in-place axpy) on 16M floats against the same loops in plain C on the host, in
 * one run. Prints "<name> <clgrad GB/s> <C GB/s>" per repeat; bench/run.sh tabulates.
 *
 *   ./build/bench/bench_elementwise [--repeats R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clgrad.h>

enum { N = 1 << 24 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Seconds per call of the device op, over `iters` calls after one warm-up call. */
static double time_device(clg_device *dev, clg_tensor *a, clg_tensor *b, clg_tensor *y, int which, int iters)
{
    double t0 = 0;
    for (int i = 0; i <= iters; i++) {
        if (i == 1) {
            clg_device_finish(dev);
            t0 = now();
        }
        clg_scope_begin(dev);
        if (which == 0) clg_add(a, b);
        else if (which == 1) clg_relu(a);
        else clg_axpy_(y, 0.5, a);
        clg_scope_end(dev);
    }
    clg_device_finish(dev);
    return (now() - t0) / iters;
}

static double time_host(const float *a, const float *b, float *y, int which, int iters)
{
    double t0 = now();
    for (int it = 0; it < iters; it++) {
        if (which == 0)
            for (int i = 0; i < N; i++) y[i] = a[i] + b[i];
        else if (which == 1)
            for (int i = 0; i < N; i++) y[i] = a[i] > 0 ? a[i] : 0;
        else
            for (int i = 0; i < N; i++) y[i] += 0.5f * a[i];
        __asm__ volatile("" ::"r"(y) : "memory");   /* keep the stores */
    }
    return (now() - t0) / iters;
}

int main(int argc, char **argv)
{
    int repeats = argc > 2 && !strcmp(argv[1], "--repeats") ? atoi(argv[2]) : 5;
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) {
        fprintf(stderr, "bench_elementwise: %s\n", clg_device_error(dev));
        return 1;
    }
    float *ha = malloc(N * sizeof *ha), *hb = malloc(N * sizeof *hb), *hy = malloc(N * sizeof *hy);
    for (int i = 0; i < N; i++) ha[i] = (float)(i % 97) - 48, hb[i] = (float)(i % 13), hy[i] = 0;
    clg_tensor *a = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(N), ha);
    clg_tensor *b = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(N), hb);
    clg_tensor *y = clg_zeros(dev, CLG_F32, CLG_SHAPE(N));
    const char *names[3] = {"add", "relu", "axpy_"};
    const double bytes[3] = {3.0 * N * 4, 2.0 * N * 4, 3.0 * N * 4};   /* read + written */
    for (int r = 0; r < repeats; r++)
        for (int w = 0; w < 3; w++) {
            double td = time_device(dev, a, b, y, w, 10), th = time_host(ha, hb, hy, w, 10);
            printf("%s %.2f %.2f\n", names[w], bytes[w] / td / 1e9, bytes[w] / th / 1e9);
            fflush(stdout);
        }
    free(ha);
    free(hb);
    free(hy);
    clg_device_close(dev);
    return 0;
}
