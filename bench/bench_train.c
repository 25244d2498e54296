/* bench_train: training throughput of the reference Fashion-MNIST models, the bytes a
 * step moves between host and device, peak device memory, and (--startup) the time
 * from process start to the end of the first training step.
 *
 *   ./build/bench/bench_train --model mlp|cnn [--steps N] [--repeats R] [--graph] [--flat]
 *                             [--precision float32|mixed|mixed-bf16]
 *   ./build/bench/bench_train --model mlp --startup      (one step, then exit: time it)
 *
 * --graph: the library's step (clg_trainer) captured at its second call and replayed
 * (clgrad/graph.h); without it, the same step eagerly. --precision: the trainer's
 * mixed precision (clg_trainer_options.precision; mixed is float16 with loss scaling).
 * --flat: the optimizer's parameters, gradients and state in one buffer each
 * (clg_optimizer_flatten): one update launch per step.
 *
 * Images per second are measured from step 6 on (the first steps compile kernels and
 * fill the pool), over `steps` steps of batch 128 from the real data through the
 * loader, with the device drained at both ends. Prints one line per repeat:
 *   rate <images/s> h2d <bytes/step> d2h <bytes/step> ideal_h2d <bytes> peak <bytes> host_us <us/step>
 * host_us is the CPU time the calling thread spends in the step call (its host work:
 * ops, tape, argument setting, enqueueing), not waiting for kernels.
 * bench/run.sh puts these side by side with PyTorch (bench/torch_train.py).
 */
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

static clg_module *make_model(clg_device *dev, bool cnn)
{
    clg_conv2d_params pad2 = {.padding = {2, 2}};
    if (!cnn)
        return clg_nn_sequential(dev, 6, (clg_module *[]){clg_nn_flatten(dev), clg_nn_linear(dev, 784, 512, true),
                                                           clg_nn_relu(dev), clg_nn_linear(dev, 512, 256, true),
                                                           clg_nn_relu(dev), clg_nn_linear(dev, 256, 10, true)});
    return clg_nn_sequential(dev, 10, (clg_module *[]){
        clg_nn_conv2d(dev, 1, 16, 5, 5, &pad2, true), clg_nn_relu(dev), clg_nn_max_pool2d(dev, 2, 2, 0),
        clg_nn_conv2d(dev, 16, 32, 5, 5, &pad2, true), clg_nn_relu(dev), clg_nn_max_pool2d(dev, 2, 2, 0),
        clg_nn_flatten(dev), clg_nn_linear(dev, 1568, 128, true), clg_nn_relu(dev), clg_nn_linear(dev, 128, 10, true)});
}

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int fail(clg_device *dev)
{
    fprintf(stderr, "bench_train: %s\n", clg_device_error(dev));
    return 1;
}

int main(int argc, char **argv)
{
    bool cnn = false, startup = false, graph = false, flat = false;
    clg_dtype precision = CLG_F32;
    int steps = 60, repeats = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) cnn = !strcmp(argv[++i], "cnn");
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--startup")) startup = true;
        else if (!strcmp(argv[i], "--graph")) graph = true;
        else if (!strcmp(argv[i], "--flat")) flat = true;
        else if (!(!strcmp(argv[i], "--precision") && i + 1 < argc && clg_precision_parse(argv[++i], &precision))) {
            fprintf(stderr, "usage: bench_train --model mlp|cnn [--steps N] [--repeats R] [--startup] [--graph] [--flat]\n"
                            "                   [--precision float32|mixed|mixed-bf16]\n");
            return 2;
        }
    }
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) return fail(dev);
    clg_manual_seed(dev, 1);
    char err[512];
    clg_dataset *ds;
    if (clg_dataset_fashion_mnist(NULL, true, &ds, err, sizeof err) != CLG_OK) {
        fprintf(stderr, "bench_train: %s\n", err);
        return 1;
    }
    static const float mean = 0.2860f, std = 0.3530f;
    clg_loader_config cfg = clg_loader_defaults(128);
    cfg.shuffle = true;
    cfg.seed = 1;
    cfg.workers = 2;
    cfg.scale = 1.0f / 255;
    cfg.norm_channels = 1;
    cfg.mean = &mean;
    cfg.std = &std;
    cfg.drop_last = true;
    clg_loader *loader;
    if (clg_loader_new(dev, ds, &cfg, &loader) != CLG_OK) return fail(dev);
    clg_module *model = make_model(dev, cnn);
    clg_tensor *params[16];
    int n = clg_module_parameters(model, params, 16, true);
    clg_optimizer *opt = clg_sgd_new(n, params, &(clg_sgd_options){.lr = 0.05, .momentum = 0.9});
    if (opt && flat && clg_optimizer_flatten(opt) != CLG_OK) return fail(dev);
    clg_trainer *tr = opt ? clg_trainer_new(model, opt, &(clg_trainer_options){.graph = graph, .precision = precision}) : NULL;
    if (!tr) return fail(dev);

    int total = startup ? 1 : repeats * (steps + 5);
    double t0 = 0, host = 0;
    int64_t images = 0;
    clg_transfer_stats t_start = {0};
    for (int s = 0, in_rep = 0; s < total; s++, in_rep++) {
        if (!startup && in_rep == steps + 5) in_rep = 0;
        if (!startup && in_rep == 5) {        /* from step 6 on */
            clg_device_finish(dev);
            t0 = now();
            images = 0;
            host = 0;
            t_start = clg_device_transfers(dev);
        }
        clg_scope_begin(dev);
        clg_tensor *x, *y;
        if (clg_loader_next(loader, &x, &y) != CLG_OK) return fail(dev);
        if (!x) {                             /* end of an epoch: go on with the next */
            clg_scope_end(dev);
            s--, in_rep--;
            continue;
        }
        clg_tensor *loss;
        double h0 = thread_cpu();
        if (clg_trainer_step(tr, x, y, &loss) != CLG_OK) return fail(dev);
        host += thread_cpu() - h0;
        images += clg_tensor_dim(x, 0);
        if (startup || in_rep == steps + 4) {
            double l;   /* the step's end: the loss back on the host */
            if (clg_tensor_item(loss, &l) != CLG_OK) return fail(dev);
        }
        clg_scope_end(dev);
        if (!startup && in_rep == steps + 4) {
            double dt = now() - t0;
            clg_transfer_stats t = clg_device_transfers(dev);
            printf("rate %.1f h2d %.1f d2h %.1f ideal_h2d %d peak %llu host_us %.1f\n", images / dt,
                   (double)(t.h2d_bytes - t_start.h2d_bytes) / steps, (double)(t.d2h_bytes - t_start.d2h_bytes) / steps,
                   128 * 784 * 4 + 128 * 4, (unsigned long long)clg_device_pool_stats(dev).peak_bytes,
                   1e6 * host / steps);
            fflush(stdout);
        }
    }
    if (startup) printf("first step done\n");
    if (clg_device_profiling(dev)) clg_device_profile_print(dev, stdout); /* CLG_PROFILE=1: builds too */
    if (graph && clg_trainer_replays(tr) == 0) {
        fprintf(stderr, "bench_train: --graph replayed no step\n");
        return 1;
    }
    if (graph) {   /* what the capture holds, on stderr: the rate lines stay one per repeat */
        clg_graph_stats g = clg_graph_get_stats(clg_trainer_graph(tr));
        fprintf(stderr, "graph: %d launches (%d enqueues; %d of the eager step's left out, %d ReLUs fused, %d elementwise pairs), %d copies, %d writes, "
                "%d refreshed, %d host steps; %d buffers of the step (%.2f MiB) planned into %d (%.2f MiB); %.2f MiB "
                "used in place\n",
                g.launches, g.enqueues, g.removed, g.fused, g.chains, g.copies, g.writes, g.refreshed, g.host_steps, g.planned,
                g.planned_bytes / 1048576.0, g.slots, g.slot_bytes / 1048576.0, g.held_bytes / 1048576.0);
    }
    clg_trainer_free(tr);
    clg_optimizer_free(opt);
    clg_module_free(model);
    clg_loader_free(loader);
    clg_dataset_free(ds);
    clg_device_close(dev);
    return 0;
}
