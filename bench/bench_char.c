/* bench_char: training throughput of the character language model char_lstm
 * (examples/char_lm.c, examples/models/char_lstm.json): Embedding(256, 64), a 2-layer
 * LSTM (or GRU, or tanh RNN) of 256, Linear(256, 256); Adam lr 2e-3, gradient norm
 * clipped to 5, 32 parallel streams of the fortunes corpus in windows of 128 bytes,
 * the state carried between windows. The same model and step as PyTorch's in
 * bench/torch_char_lm.py --throughput.
 *
 *   ./build/bench/bench_char [--cell lstm|gru|rnn] [--steps N] [--repeats R] [--data PATH] [--graph]
 *
 * The step is the library's (clg_trainer); --graph captures it and replays it. After 3
 * warm-up steps, times `steps` steps with the device drained at both ends and prints
 * one line per repeat:
 *   throughput cell lstm chars_per_s X steps N seconds S h2d <bytes/step> peak <bytes> host_us U
 * host_us is the CPU time the calling thread spends in the step call (ops, tape,
 * enqueueing; not waiting for kernels).
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

static int fail(clg_device *dev)
{
    fprintf(stderr, "bench_char: %s\n", clg_device_error(dev));
    return 1;
}

/* char_lstm with the recurrent layer of the given kind, stateful (state carried). */
static clg_module *make_model(clg_device *dev, const char *cell, clg_module **rnn)
{
    clg_rnn_options o = clg_rnn_defaults();
    o.num_layers = 2;
    o.batch_first = true;
    *rnn = !strcmp(cell, "gru") ? clg_nn_gru(dev, 64, 256, &o)
           : !strcmp(cell, "rnn") ? clg_nn_rnn(dev, CLG_RNN_TANH, 64, 256, &o)
                                  : clg_nn_lstm(dev, 64, 256, &o);
    if (*rnn && clg_rnn_set_stateful(*rnn, true) != CLG_OK) return NULL;
    return clg_nn_sequential(dev, 3, (clg_module *[]){clg_nn_embedding(dev, 256, 64), *rnn,
                                                       clg_nn_linear(dev, 256, 256, true)});
}

/* The loss of logits [B, T, 256] for bytes [B, T], both taken flat. */
static clg_tensor *flat_loss(void *user, clg_tensor **out, clg_tensor **y)
{
    (void)user;
    *out = clg_reshape(*out, CLG_SHAPE(-1, 256));
    *y = clg_reshape(*y, CLG_SHAPE(-1));
    return clg_cross_entropy(*out, *y, CLG_REDUCE_MEAN);
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    const char *cell = "lstm", *data = "/usr/share/games/fortunes";
    int steps = 20, repeats = 1;
    bool graph = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cell") && i + 1 < argc) cell = argv[++i];
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(argv[i], "--graph")) graph = true;
        else {
            fprintf(stderr, "usage: bench_char [--cell lstm|gru|rnn] [--steps N] [--repeats R] [--data PATH] [--graph]\n");
            return 2;
        }
    }
    char err[512];
    clg_text text;
    if (clg_text_read(data, &text, err, sizeof err) != CLG_OK) {
        fprintf(stderr, "bench_char: %s\n", err);
        return 1;
    }
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) return fail(dev);
    clg_manual_seed(dev, 1);
    clg_module *rnn, *model = make_model(dev, cell, &rnn);
    clg_tensor *params[32];
    int n = model ? clg_module_parameters(model, params, 32, true) : 0;
    clg_optimizer *opt = model ? clg_adam_new(n, params, &(clg_adam_options){.lr = 2e-3}) : NULL;
    clg_trainer *tr = opt ? clg_trainer_new(model, opt, &(clg_trainer_options){.graph = graph, .clip_grad_norm = 5.0,
                                                                                .loss = flat_loss})
                          : NULL;
    if (!tr) return fail(dev);
    const int B = 32, T = 128;
    size_t train_len = text.len - text.len / 20;   /* as the trainer: the last 5% held out */
    int64_t windows = clg_text_windows(train_len, B, T, false), w = 0;
    for (int r = 0; r < repeats; r++) {
        double t0 = 0, host = 0;
        clg_transfer_stats t_start = {0};
        for (int s = 0; s < steps + 3; s++) {
            if (s == 3) {
                clg_device_finish(dev);
                t0 = now();
                host = 0;
                t_start = clg_device_transfers(dev);
            }
            clg_scope_begin(dev);
            clg_tensor *x, *y;
            if (clg_text_window(dev, text.bytes, train_len, B, T, w, &x, &y) != CLG_OK) return fail(dev);
            if (++w == windows) w = 0, clg_rnn_reset_state(rnn);
            double h0 = cpu_seconds();
            if (clg_trainer_step(tr, x, y, NULL) != CLG_OK) return fail(dev);
            host += cpu_seconds() - h0;
            clg_scope_end(dev);
        }
        clg_device_finish(dev);
        double dt = now() - t0;
        clg_transfer_stats t = clg_device_transfers(dev);
        printf("throughput cell %s chars_per_s %.1f steps %d seconds %.3f h2d %.1f peak %llu host_us %.1f\n", cell,
               (double)B * T * steps / dt, steps, dt, (double)(t.h2d_bytes - t_start.h2d_bytes) / steps,
               (unsigned long long)clg_device_pool_stats(dev).peak_bytes, 1e6 * host / steps);
        fflush(stdout);
    }
    if (clg_device_profiling(dev)) clg_device_profile_print(dev, stdout);   /* CLG_PROFILE=1 */
    if (graph) fprintf(stderr, "bench_char: %lld of the steps were replays\n", (long long)clg_trainer_replays(tr));
    clg_trainer_free(tr);
    clg_optimizer_free(opt);
    clg_module_free(model);
    clg_text_free(&text);
    clg_device_close(dev);
    return 0;
}
