/* bench_models: training throughput of the models people train today, beside PyTorch's
 * twins in bench/torch_models.py (the same shapes, optimizer and step):
 *   gpt       nanoGPT's character GPT of examples/models/gpt_fortunes.json: 4 layers,
 *             4 heads, width 128, context 128, batch 32; AdamW, gradients clipped to 1
 *   gpt_tiny  the tiny GPT of the transformer issue: 2 layers, width 128, context 64
 *   resnet    the ResNet-20 of examples/models/resnet_fashion.json on [128, 1, 28, 28];
 *             SGD, momentum 0.9, weight decay 5e-4
 * Random tokens and images (fixed seeds), uploaded every step as a loader's batch would be.
 *
 *   ./build/bench/bench_models --model gpt|gpt_tiny|resnet [--steps N] [--repeats R] [--profile]
 *
 * After 3 warm-up steps, times `steps` steps with the device drained at both ends and
 * prints one line per repeat: "rate <tokens or images per second>"; --profile (with
 * CLG_PROFILE=1) then prints the per-kernel table of the last repeat's timed steps (the
 * warm-up steps' first launches, builds and the tuner's trials left out).
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

/* The ResNet-20 of resnet_fashion.json, from its model file's layers. */
static clg_module *resnet(clg_device *dev)
{
    const char *text = "{\"input\": [1, 28, 28], \"layers\": ["
                       "{\"type\": \"conv2d\", \"name\": \"conv1\", \"out\": 16, \"kernel\": 3, \"padding\": 1, \"bias\": false},"
                       "{\"type\": \"batch_norm2d\", \"name\": \"bn1\"}, \"relu\","
                       "{\"type\": \"basic_block\", \"name\": \"layer1\", \"out\": 16, \"repeat\": 3},"
                       "{\"type\": \"basic_block\", \"name\": \"layer2\", \"out\": 32, \"stride\": 2, \"repeat\": 3},"
                       "{\"type\": \"basic_block\", \"name\": \"layer3\", \"out\": 64, \"stride\": 2, \"repeat\": 3},"
                       "\"global_avg_pool2d\", \"flatten\", {\"type\": \"linear\", \"name\": \"fc\", \"out\": 10}]}";
    char err[512];
    clg_model *m = NULL;
    if (clg_model_parse(text, strlen(text), "resnet", &m, err, sizeof err) != CLG_OK) {
        fprintf(stderr, "bench_models: %s\n", err);
        return NULL;
    }
    clg_module *net = clg_model_build(m, dev);
    clg_model_free(m);
    return net;
}

typedef struct bench { const char *name; int64_t batch, T; bool tokens; } bench;

/* One batch: tokens [B, T] and their next tokens, or images [B, 1, 28, 28] and labels. */
static void batch(clg_device *dev, const bench *b, uint32_t *seed, clg_tensor **x, clg_tensor **y)
{
    int64_t n = b->tokens ? b->batch * b->T : b->batch * 784, nl = b->tokens ? n : b->batch;
    float *f = malloc(sizeof *f * (size_t)n);
    int32_t *t = malloc(sizeof *t * (size_t)(n + 1));
    for (int64_t i = 0; i <= n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        t[i] = (int32_t)(*seed >> 24);   /* a byte */
        if (i < n) f[i] = (float)(*seed >> 8) / 16777216.0f - 0.5f;
    }
    if (b->tokens) {
        *x = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(b->batch, b->T), t);
        *y = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(b->batch, b->T), t + 1);
    } else {
        for (int64_t i = 0; i < nl; i++) t[i] %= 10;
        *x = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(b->batch, 1, 28, 28), f);
        *y = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(b->batch), t);
    }
    free(f);
    free(t);
}

/* The loss of logits [B, T, 256] for tokens [B, T], flattened. */
static clg_tensor *token_loss(void *user, clg_tensor **out, clg_tensor **y)
{
    (void)user;
    clg_tensor *loss = clg_cross_entropy(clg_reshape(*out, CLG_SHAPE(-1, 256)), clg_reshape(*y, CLG_SHAPE(-1)),
                                         CLG_REDUCE_MEAN);
    *out = NULL;
    return loss;
}

int main(int argc, char **argv)
{
    const char *which = "gpt";
    int steps = 20, repeats = 3;
    bool profile = false;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--profile")) profile = true;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model")) which = argv[i + 1];
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeats")) repeats = atoi(argv[i + 1]);
    }
    static const bench benches[] = {{"gpt", 32, 128, true}, {"gpt_tiny", 32, 64, true}, {"resnet", 128, 0, false}};
    const bench *b = NULL;
    for (size_t i = 0; i < sizeof benches / sizeof *benches; i++)
        if (!strcmp(which, benches[i].name)) b = &benches[i];
    if (!b || steps < 1 || repeats < 1) {
        fprintf(stderr, "usage: bench_models --model gpt|gpt_tiny|resnet [--steps N] [--repeats R]\n");
        return 2;
    }
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) return fprintf(stderr, "bench_models: %s\n", clg_device_error(dev)), 1;
    clg_manual_seed(dev, 1);
    clg_gpt_config g = {256, b->T, strcmp(b->name, "gpt") ? 2 : 4, 4, 128, 0.0, true};
    clg_module *model = b->tokens ? clg_nn_gpt(dev, &g) : resnet(dev);
    clg_tensor *params[256];
    int n = model ? clg_module_parameters(model, params, 256, true) : 0;
    clg_optimizer *opt = !n ? NULL : b->tokens
        ? clg_adamw_new(n, params, &(clg_adam_options){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.99, .weight_decay = 0.1})
        : clg_sgd_new(n, params, &(clg_sgd_options){.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4});
    clg_trainer_options to = {.clip_grad_norm = b->tokens ? 1.0 : 0, .loss = b->tokens ? token_loss : NULL};
    clg_trainer *tr = opt ? clg_trainer_new(model, opt, &to) : NULL;
    if (!tr) return fprintf(stderr, "bench_models: %s\n", clg_device_error(dev)), 1;
    uint32_t seed = 12345;
    double per_step = b->tokens ? (double)(b->batch * b->T) : (double)b->batch;
    for (int r = 0; r < repeats; r++) {
        double t0 = 0;
        for (int s = 0; s < steps + 3; s++) {
            if (s == 3) {
                clg_device_finish(dev);
                if (profile) clg_device_profile_reset(dev);
                t0 = now();
            }
            clg_scope_begin(dev);
            clg_tensor *x, *y;
            batch(dev, b, &seed, &x, &y);
            clg_status st = clg_trainer_step(tr, x, y, NULL);
            clg_scope_end(dev);
            if (st != CLG_OK) return fprintf(stderr, "bench_models: %s\n", clg_device_error(dev)), 1;
        }
        clg_device_finish(dev);
        printf("rate %.1f\n", per_step * steps / (now() - t0));
        fflush(stdout);
    }
    if (profile && clg_device_profiling(dev)) clg_device_profile_print(dev, stdout);
    clg_trainer_free(tr);
    clg_optimizer_free(opt);
    clg_module_free(model);
    clg_device_close(dev);
    return 0;
}
