/* bench_attention: the ops of the transformer issue, timed on the device (forward and
 * backward): clg_scaled_dot_product_attention fused against the same attention composed
 * from matmul, softmax and matmul (the tiny GPT's [32, 4, 64, 32], causal), alternating;
 * clg_tril / clg_triu on [32, 512, 512]; clg_multinomial drawing 1 of 256 for 4,096 rows.
 *
 *   ./build/bench/bench_attention [--repeats R]
 *
 * Prints "op <name> ms <min> <median> <max>" per op (ms per call, forward + backward where
 * the op has one). The per-op table against PyTorch is the speed issue's (bench_ops). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clgrad.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef clg_tensor *(*op_fn)(clg_tensor **in);
static clg_tensor *fused(clg_tensor **in) { return clg_scaled_dot_product_attention(in[0], in[1], in[2], NULL, true, 0, 0); }
static clg_tensor *composed(clg_tensor **in)
{
    clg_tensor *s = clg_mul_scalar(clg_matmul(in[0], clg_transpose(in[1], 2, 3)), 1 / sqrt(32.0));
    return clg_matmul(clg_softmax(clg_add(s, in[3]), -1), in[2]);
}
static clg_tensor *tril(clg_tensor **in) { return clg_tril(in[4], 0); }
static clg_tensor *triu(clg_tensor **in) { return clg_triu(in[4], 1); }
static clg_tensor *multinomial(clg_tensor **in) { return clg_multinomial(in[5], 1, true); }

/* ms per call of f (forward, and backward from the output's sum when it has history). */
static double once(clg_device *dev, op_fn f, clg_tensor **in, int calls)
{
    clg_device_finish(dev);
    double t0 = now();
    for (int i = 0; i < calls; i++) {
        clg_scope_begin(dev);
        clg_tensor *y = f(in);
        if (y && clg_tensor_has_history(y)) clg_backward(clg_sum(y, 0, NULL, false), NULL);
        clg_scope_end(dev);
    }
    clg_device_finish(dev);
    return (now() - t0) * 1e3 / calls;
}

int main(int argc, char **argv)
{
    int repeats = argc > 2 && !strcmp(argv[1], "--repeats") ? atoi(argv[2]) : 5;
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) return fprintf(stderr, "bench_attention: %s\n", clg_device_error(dev)), 1;
    float *fb = malloc(sizeof(float) * 64 * 64);
    for (int i = 0; i < 64 * 64; i++) fb[i] = i % 64 > i / 64 ? -INFINITY : 0;
    clg_tensor *in[6] = {clg_randn(dev, CLG_F32, CLG_SHAPE(32, 4, 64, 32), 0, 1),
                         clg_randn(dev, CLG_F32, CLG_SHAPE(32, 4, 64, 32), 0, 1),
                         clg_randn(dev, CLG_F32, CLG_SHAPE(32, 4, 64, 32), 0, 1),
                         clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(64, 64), fb),
                         clg_randn(dev, CLG_F32, CLG_SHAPE(32, 512, 512), 0, 1),
                         clg_rand(dev, CLG_F32, CLG_SHAPE(4096, 256), 0, 1)};
    free(fb);
    for (int i = 0; i < 5; i++)
        if (!in[i]) return fprintf(stderr, "bench_attention: %s\n", clg_device_error(dev)), 1;
    for (int i = 0; i < 3; i++) clg_tensor_set_requires_grad(in[i], true);
    clg_tensor_set_requires_grad(in[4], true);
    const char *names[] = {"scaled_dot_product_attention", "attention_composed", "tril", "triu", "multinomial"};
    op_fn fns[] = {fused, composed, tril, triu, multinomial};
    double t[5][64];
    for (int k = 0; k < 5; k++) once(dev, fns[k], in, 1);   /* compile and warm up */
    for (int r = 0; r < repeats && r < 64; r++)
        for (int k = 0; k < 5; k++) t[k][r] = once(dev, fns[k], in, 3);
    for (int k = 0; k < 5; k++) {
        qsort(t[k], (size_t)repeats, sizeof(double), cmp);
        printf("op %s ms %.3f %.3f %.3f\n", names[k], t[k][0], t[k][repeats / 2], t[k][repeats - 1]);
    }
    clg_device_close(dev);
    return 0;
}
