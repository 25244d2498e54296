/* bench_elementwise: memory bandwidth of elementwise ops (y = a + b, y = relu(a), and
 * an in-place axpy) on 16M floats against the same loops in plain C on the host, in
 * one run. Prints "<name> <clgrad GB/s> <C GB/s>" per repeat; bench/run.sh tabulates.
 * --chain: a step of elementwise ops on 16M floats, y = relu(a * b + 0.5) * 0.25 (the
 * pairs (mul, add_scalar) and (relu, mul_scalar)), eagerly, replayed as a
 * graph, and replayed with CLG_GRAPH_SKIP=chains, alternating: "chain <eager ms>
 * <graph ms> <graph without pairs ms> <pairs>" per repeat.
 *
 *   ./build/bench/bench_elementwise [--chain] [--repeats R]
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

static clg_tensor *chain(clg_tensor *a, clg_tensor *b)
{
    return clg_mul_scalar(clg_relu(clg_add_scalar(clg_mul(a, b), 0.5)), 0.25);
}

/* Seconds per call of the device op (which: add, relu, axpy_, the chain; or a replay of
 * g), over `iters` calls after one warm-up call. */
static double time_device(clg_device *dev, clg_tensor *a, clg_tensor *b, clg_tensor *y, int which, clg_graph *g,
                          int iters)
{
    double t0 = 0;
    for (int i = 0; i <= iters; i++) {
        if (i == 1) {
            clg_device_finish(dev);
            t0 = now();
        }
        clg_scope_begin(dev);
        if (g) clg_graph_replay(g);
        else if (which == 0) clg_add(a, b);
        else if (which == 1) clg_relu(a);
        else if (which == 2) clg_axpy_(y, 0.5, a);
        else chain(a, b);
        clg_scope_end(dev);
    }
    clg_device_finish(dev);
    return (now() - t0) / iters;
}

static clg_graph *capture_chain(clg_device *dev, clg_tensor *a, clg_tensor *b, bool pairs)
{
    if (!pairs) setenv("CLG_GRAPH_SKIP", "chains", 1);
    clg_graph *g = NULL;
    if (clg_graph_begin(dev) == CLG_OK) {
        clg_tensor *y = chain(a, b);
        if (clg_graph_end(dev, &g) == CLG_OK && clg_graph_output(g, "y", y) != CLG_OK) {
            clg_graph_free(g);
            g = NULL;
        }
    }
    unsetenv("CLG_GRAPH_SKIP");
    return g;
}

static int bench_chain(clg_device *dev, clg_tensor *a, clg_tensor *b, int repeats)
{
    clg_graph *g[2] = {capture_chain(dev, a, b, true), capture_chain(dev, a, b, false)};
    if (!g[0] || !g[1]) {
        fprintf(stderr, "bench_elementwise: %s\n", clg_device_error(dev));
        return 1;
    }
    for (int r = 0; r < repeats; r++) {
        double te = time_device(dev, a, b, NULL, 3, NULL, 10), tg = time_device(dev, a, b, NULL, 3, g[0], 10);
        double ts = time_device(dev, a, b, NULL, 3, g[1], 10);
        printf("chain %.3f %.3f %.3f %d\n", te * 1e3, tg * 1e3, ts * 1e3, clg_graph_get_stats(g[0]).chains);
        fflush(stdout);
    }
    clg_graph_free(g[0]);
    clg_graph_free(g[1]);
    return 0;
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
    int repeats = 5;
    bool chains = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--chain")) chains = true;
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
    }
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
    if (chains) {
        int rc = bench_chain(dev, a, b, repeats);
        free(ha), free(hb), free(hy);
        clg_device_close(dev);
        return rc;
    }
    const char *names[3] = {"add", "relu", "axpy_"};
    const double bytes[3] = {3.0 * N * 4, 2.0 * N * 4, 3.0 * N * 4};   /* read + written */
    for (int r = 0; r < repeats; r++)
        for (int w = 0; w < 3; w++) {
            double td = time_device(dev, a, b, y, w, NULL, 10), th = time_host(ha, hb, hy, w, 10);
            printf("%s %.2f %.2f\n", names[w], bytes[w] / td / 1e9, bytes[w] / th / 1e9);
            fflush(stdout);
        }
    free(ha);
    free(hb);
    free(hy);
    clg_device_close(dev);
    return 0;
}
