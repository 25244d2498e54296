/* bench_conv: the two convolutions of the reference CNN at batch 128, forward and
 * backward, with clgrad's forward algorithms side by side, against PyTorch's CPU
 * convolutions on the same shapes in the same run; then a whole training step of the
 * CNN (conv 5x5 1->16 pad 2, ReLU, max pool 2, conv 5x5 16->32 pad 2, ReLU, max pool
 * 2, Linear 1568->128, ReLU, Linear 128->10, cross-entropy).
 *
 *   ./build/bench/bench_conv [--repeats N] [--clblast] [--no-torch] [--cnn-only] [--trace FILE]
 *
 * Times are milliseconds, min / median / max over N repeats after one warm-up, each
 * waited for (clg_device_finish). Forward: y = conv2d(x, w, b). Backward: clg_backward
 * from y with a fixed gradient: dW and db, and dx for the second layer only (the first
 * layer's input is the data, as in training). --clblast adds CLBlast's convgemm
 * (CLBlastSconvgemm, forward only, no bias; ~10-20 s to compile on a CPU). PyTorch runs
 * in a subprocess (bench/conv_torch.py) with 2 threads, OMP_WAIT_POLICY=PASSIVE and
 * OpenBLAS's best core for the CPU (bench/refblas.py); CLG_BENCH_PYTHON names the interpreter. CLG_PROFILE=1 adds
 * the per-kernel device times. --cnn-only times the training step alone (with
 * CLG_PROFILE=1: the per-kernel table of the step, for before/after comparisons);
 * --trace FILE writes every launch's device time (CLG_PROFILE=1) as a Chrome trace.
 */
#include <clblast_c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tensor/conv.h"

typedef struct layer {
    const char *name;
    int64_t N, C, H, W, O, K, pad;
    bool input_grad;
} layer;

static const layer layers[] = {
    {"conv1 1->16 5x5 28x28", 128, 1, 28, 28, 16, 5, 2, false},
    {"conv2 16->32 5x5 14x14", 128, 16, 14, 14, 32, 5, 2, true},
};
#define NLAYERS 2

typedef struct stats { double min, med, max; } stats;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static stats summarize(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return (stats){v[0], n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v[n - 1]};
}

/* ---- one layer ------------------------------------------------------------------------------- */

typedef struct tensors { clg_tensor *x, *w, *b, *gy; } tensors;

static tensors make_layer(clg_device *dev, const layer *l)
{
    int64_t oh = l->H + 2 * l->pad - l->K + 1, ow = l->W + 2 * l->pad - l->K + 1;
    tensors t = {clg_randn(dev, CLG_F32, CLG_SHAPE(l->N, l->C, l->H, l->W), 0, 1),
                 clg_randn(dev, CLG_F32, CLG_SHAPE(l->O, l->C, l->K, l->K), 0, 0.1),
                 clg_randn(dev, CLG_F32, CLG_SHAPE(l->O), 0, 0.1),
                 clg_randn(dev, CLG_F32, CLG_SHAPE(l->N, l->O, oh, ow), 0, 1)};
    clg_tensor_set_requires_grad(t.w, true);
    clg_tensor_set_requires_grad(t.b, true);
    if (l->input_grad) clg_tensor_set_requires_grad(t.x, true);
    return t;
}

static void free_layer(tensors *t)
{
    clg_tensor_free(t->x);
    clg_tensor_free(t->w);
    clg_tensor_free(t->b);
    clg_tensor_free(t->gy);
}

/* Forward (backward false) or backward times of one layer with algorithm `algo`. */
static int time_layer(clg_device *dev, const layer *l, clg_conv_algo algo, bool backward, int repeats, stats *out)
{
    tensors t = make_layer(dev, l);
    clg_conv2d_params p = {{1, 1}, {(int)l->pad, (int)l->pad}, {1, 1}, 1};
    double *ms = calloc((size_t)repeats, sizeof *ms);
    clg_status st = t.x && t.w && t.b && t.gy && ms ? CLG_OK : CLG_ERR_OUT_OF_MEMORY;
    for (int r = -1; r < repeats && st == CLG_OK; r++) {
        clg_scope_begin(dev);
        if (!backward) clg_no_grad_begin(dev);   /* no tape when only the forward is timed */
        clg_device_finish(dev);
        double t0 = now();
        clg_tensor *y = clg__conv2d_with(t.x, t.w, t.b, &p, algo);
        st = y ? clg_device_finish(dev) : CLG_ERR_OPENCL;
        if (backward && st == CLG_OK) {
            t0 = now();
            st = clg_backward(y, t.gy);
            if (st == CLG_OK) st = clg_device_finish(dev);
        }
        if (r >= 0) ms[r] = 1e3 * (now() - t0);
        if (!backward) clg_no_grad_end(dev);
        clg_scope_end(dev);
        clg_tensor_zero_grad(t.w);
    }
    if (st == CLG_OK) *out = summarize(ms, repeats);
    else fprintf(stderr, "bench_conv: %s\n", clg_device_error(dev));
    free(ms);
    free_layer(&t);
    return st == CLG_OK ? 0 : -1;
}

/* CLBlast's convgemm forward (no bias), checked against clgrad's result. */
static int time_clblast(clg_device *dev, const layer *l, int repeats, stats *out)
{
    tensors t = make_layer(dev, l);
    clg_no_grad_begin(dev);
    clg_conv2d_params p = {{1, 1}, {(int)l->pad, (int)l->pad}, {1, 1}, 1};
    clg_tensor *ref = clg_conv2d(t.x, t.w, NULL, &p), *y = clg_zeros(dev, CLG_F32, 4, clg_tensor_shape(t.gy));
    double *ms = calloc((size_t)repeats, sizeof *ms);
    int rc = ref && y && ms ? 0 : -1;
    cl_command_queue queue = (cl_command_queue)clg__device_queue(dev);   /* clgrad's handles are OpenCL's, cast */
    for (int r = -1; r < repeats && !rc; r++) {
        clg_device_finish(dev);
        double t0 = now();
        CLBlastStatusCode s = CLBlastSconvgemm(CLBlastKernelModeCrossCorrelation, (size_t)l->C, (size_t)l->H,
                                               (size_t)l->W, (size_t)l->K, (size_t)l->K, (size_t)l->pad,
                                               (size_t)l->pad, 1, 1, 1, 1, (size_t)l->O, (size_t)l->N,
                                               (cl_mem)t.x->buf->mem, 0, (cl_mem)t.w->buf->mem, 0,
                                               (cl_mem)y->buf->mem, 0, &queue, NULL);
        if (s != CLBlastSuccess || clg_device_finish(dev) != CLG_OK) {
            fprintf(stderr, "bench_conv: CLBlastSconvgemm: %d\n", (int)s);
            rc = -1;
        }
        if (r >= 0) ms[r] = 1e3 * (now() - t0);
    }
    clg_tensor *diff = rc ? NULL : clg_max(clg_abs(clg_sub(y, ref)), 0, NULL, false);
    double d = -1;
    if (diff && clg_tensor_item(diff, &d) == CLG_OK && d > 1e-3)
        fprintf(stderr, "bench_conv: CLBlast's result differs from clgrad's by %g\n", d);
    clg_tensor_free(diff);
    clg_no_grad_end(dev);
    if (!rc) *out = summarize(ms, repeats);
    free(ms);
    clg_tensor_free(ref);
    clg_tensor_free(y);
    free_layer(&t);
    return rc;
}

/* ---- the whole CNN --------------------------------------------------------------------------------- */

typedef struct cnn { clg_tensor *p[8], *x, *labels; } cnn;

static cnn make_cnn(clg_device *dev)
{
    const int64_t shapes[8][4] = {{16, 1, 5, 5}, {16}, {32, 16, 5, 5}, {32}, {128, 1568}, {128}, {10, 128}, {10}};
    const int nd[8] = {4, 1, 4, 1, 2, 1, 2, 1};
    cnn m;
    for (int i = 0; i < 8; i++) {
        m.p[i] = clg_randn(dev, CLG_F32, nd[i], shapes[i], 0, 0.05);
        clg_tensor_set_requires_grad(m.p[i], true);
    }
    m.x = clg_randn(dev, CLG_F32, CLG_SHAPE(128, 1, 28, 28), 0, 1);
    m.labels = clg_cast(clg_rand(dev, CLG_F32, CLG_SHAPE(128), 0, 10), CLG_I32);
    return m;
}

static clg_tensor *cnn_loss(cnn *m)
{
    clg_conv2d_params pad2 = {{1, 1}, {2, 2}, {1, 1}, 1};
    clg_tensor *h = clg_max_pool2d(clg_relu(clg_conv2d(m->x, m->p[0], m->p[1], &pad2)), 2, 2, 2, 2, 0, 0);
    h = clg_max_pool2d(clg_relu(clg_conv2d(h, m->p[2], m->p[3], &pad2)), 2, 2, 2, 2, 0, 0);
    h = clg_relu(clg_linear(clg_flatten(h, 1, 3), m->p[4], m->p[5]));
    return clg_cross_entropy(clg_linear(h, m->p[6], m->p[7]), m->labels, CLG_REDUCE_MEAN);
}

static int time_cnn(clg_device *dev, int repeats, stats *out)
{
    cnn m = make_cnn(dev);
    double *ms = calloc((size_t)repeats, sizeof *ms);
    clg_status st = m.x && m.labels && ms ? CLG_OK : CLG_ERR_OUT_OF_MEMORY;
    for (int r = -1; r < repeats && st == CLG_OK; r++) {
        clg_device_finish(dev);
        double t0 = now();
        clg_scope_begin(dev);
        clg_tensor *loss = cnn_loss(&m);
        st = loss ? clg_backward(loss, NULL) : CLG_ERR_OPENCL;
        if (st == CLG_OK) st = clg_device_finish(dev);
        clg_scope_end(dev);
        if (r >= 0) ms[r] = 1e3 * (now() - t0);
        for (int i = 0; i < 8; i++) clg_tensor_zero_grad(m.p[i]);
    }
    if (st == CLG_OK) *out = summarize(ms, repeats);
    else fprintf(stderr, "bench_conv: cnn: %s\n", clg_device_error(dev));
    free(ms);
    for (int i = 0; i < 8; i++) clg_tensor_free(m.p[i]);
    clg_tensor_free(m.x);
    clg_tensor_free(m.labels);
    return st == CLG_OK ? 0 : -1;
}

/* ---- PyTorch ----------------------------------------------------------------------------------------- */

/* Lines "<what> min med max" from bench/conv_torch.py: conv1 fwd, conv1 bwd, conv2 fwd,
 * conv2 bwd, cnn step (in that order); false when it did not run. */
static bool torch_times(int repeats, stats out[5], char *version, size_t vlen)
{
    char script[1024];
    snprintf(script, sizeof script, "%s", __FILE__);
    char *slash = strrchr(script, '/');
    snprintf(slash ? slash + 1 : script, sizeof script - (size_t)(slash ? slash + 1 - script : 0), "conv_torch.py");
    const char *py = getenv("CLG_BENCH_PYTHON");
    if (!py) py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    char cmd[2300];
    snprintf(cmd, sizeof cmd, "%s '%s' %d", py, script, repeats);
    FILE *p = popen(cmd, "r");
    if (!p) return false;
    char line[512];
    int got = 0;
    while (fgets(line, sizeof line, p)) {
        if (!strncmp(line, "torch ", 6)) snprintf(version, vlen, "%.*s", (int)strcspn(line + 6, "\n"), line + 6);
        else if (got < 5 && sscanf(line, "%*s %*s %lf %lf %lf", &out[got].min, &out[got].med, &out[got].max) == 3)
            got++;
    }
    return pclose(p) == 0 && got == 5;
}

/* ---- main ------------------------------------------------------------------------------------------------ */

static void row(const char *what, stats s, const stats *t)
{
    printf("| %-34s | %7.2f / %7.2f / %7.2f |", what, s.min, s.med, s.max);
    if (t && t->med > 0) printf(" %7.2f / %7.2f / %7.2f | %5.2f |\n", t->min, t->med, t->max, s.med / t->med);
    else printf(" - | - |\n");
}

int main(int argc, char **argv)
{
    int repeats = 10;
    bool with_clblast = false, with_torch = true, cnn_only = false;
    const char *trace = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--clblast")) with_clblast = true;
        else if (!strcmp(argv[i], "--no-torch")) with_torch = false;
        else if (!strcmp(argv[i], "--cnn-only")) cnn_only = true;
        else if (!strcmp(argv[i], "--trace") && i + 1 < argc) trace = argv[++i];
        else return fprintf(stderr, "usage: %s [--repeats N] [--clblast] [--no-torch] [--cnn-only] [--trace FILE]\n", argv[0]), 2;
    }
    if (repeats < 1) repeats = 1;
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) {
        fprintf(stderr, "bench_conv: %s\n", clg_device_error(dev));
        clg_device_close(dev);
        return 1;
    }
    stats th[5] = {{0, 0, 0}};
    char version[128] = "?";
    bool have_torch = with_torch && torch_times(repeats, th, version, sizeof version);
    if (with_torch && !have_torch) fprintf(stderr, "bench_conv: the PyTorch run failed (CLG_BENCH_PYTHON?)\n");
    if (have_torch && strstr(version, "reference")) { /* its Linear layers would run 50x slow: no ratios */
        fprintf(stderr, "bench_conv: PyTorch runs %s: no comparison (install libopenblas0-pthread)\n", version);
        have_torch = false;
    }
    const clg_device_info *in = clg_device_get_info(dev);
    printf("float32, batch 128, ms (min / median / max of %d); PyTorch %s, 2 threads; ratio = clgrad / torch median\n",
           repeats, have_torch ? version : "not run");
    printf("device: %s | %s | %u compute units\n\n", in->name, in->platform, in->compute_units);
    printf("| %-34s | %-25s | %-25s | ratio |\n| --- | ---: | ---: | ---: |\n", "what", "clgrad", "torch");
    int failed = 0;
    for (int i = 0; i < NLAYERS && !cnn_only; i++) {
        const layer *l = &layers[i];
        stats s;
        char what[96];
        const struct { clg_conv_algo algo; const char *name; } algos[] = {{CLG_CONV_GEMM, "im2col+gemm"},
                                                                          {CLG_CONV_DIRECT, "direct"}};
        for (int a = 0; a < 2; a++) {
            snprintf(what, sizeof what, "%.5s fwd %s", l->name, algos[a].name);
            if (time_layer(dev, l, algos[a].algo, false, repeats, &s)) failed = 1;
            else row(what, s, have_torch ? &th[2 * i] : NULL);
        }
        if (with_clblast) {
            snprintf(what, sizeof what, "%.5s fwd CLBlast convgemm (no bias)", l->name);
            if (time_clblast(dev, l, repeats, &s)) failed = 1;
            else row(what, s, have_torch ? &th[2 * i] : NULL);
        }
        snprintf(what, sizeof what, "%.5s bwd (dW, db%s)", l->name, l->input_grad ? ", dx" : "");
        if (time_layer(dev, l, CLG_CONV_GEMM, true, repeats, &s)) failed = 1;
        else row(what, s, have_torch ? &th[2 * i + 1] : NULL);
        fflush(stdout);
    }
    stats s;
    if (time_cnn(dev, repeats, &s)) failed = 1;
    else row("CNN step (fwd + loss + bwd)", s, have_torch ? &th[4] : NULL);
    if (clg_device_profiling(dev)) clg_device_profile_print(dev, stdout); /* CLG_PROFILE=1 */
    if (trace && clg_device_profile_write_trace(dev, trace) != CLG_OK) failed = 1;
    clg_device_close(dev);
    return failed;
}
