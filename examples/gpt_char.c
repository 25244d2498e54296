/* gpt_char: a character-level GPT (nanoGPT's model) on real English text.
 *
 *   ./build/examples/gpt_char [--minutes 5] [--steps N] [--data /usr/share/games/fortunes]
 *                             [--layers 4] [--heads 4] [--width 128] [--context 128] [--batch 32]
 *                             [--lr 1e-3] [--dropout 0] [--eval-every 60] [--save gpt.safetensors]
 *
 * The model is examples/models/gpt_fortunes.json: bytes -> token and position embeddings
 * -> 4 blocks of causal self-attention (4 heads) and an MLP, pre-norm -> layer norm ->
 * the next byte's logits through the token embedding (tied). The text is the fortunes
 * package's files (about 2.5 MB), the last 5% held out. Each step reads `batch` windows
 * of `context` bytes, one from each of `batch` parallel streams through the text, and
 * predicts every byte of each window from those before it in the window.
 *
 * AdamW (weight decay 0.1, betas 0.9 / 0.99), learning rate warmed up over the first
 * 100 steps then cosine-annealed to a tenth over the planned steps (the time budget's
 * estimate after the warm-up, or --steps), gradient norm clipped to 1: nanoGPT's recipe
 * for its character model of Shakespeare.
 *
 * Losses are in bits per byte, as char_lm's (8 knows nothing, about 4.6 knows letter
 * frequencies). Held-out loss: the held-out text in windows of `context` bytes, each
 * byte predicted from those before it in its window. A sample is printed at each
 * evaluation: from a newline, temperature 0.8, top-k 40. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clgrad.h>

typedef struct options {
    const char *data, *save;
    double minutes, eval_every, lr, dropout;
    int seed, layers, heads, width, context, batch;
    int64_t max_steps;   /* 0: the time budget alone */
} options;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int usage(void)
{
    fprintf(stderr, "usage: gpt_char [--minutes M] [--steps N] [--data FILE|DIR] [--layers L] [--heads H]\n"
                    "                [--width C] [--context T] [--batch B] [--lr LR] [--dropout P]\n"
                    "                [--eval-every S] [--save FILE] [--seed N]\n");
    return 2;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){"/usr/share/games/fortunes", NULL, 5, 60, 1e-3, 0, 1, 4, 4, 128, 128, 32, 0};
    for (int i = 1; i + 1 < argc || i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage();
        if (!strcmp(a, "--data")) o->data = v;
        else if (!strcmp(a, "--save")) o->save = v;
        else if (!strcmp(a, "--minutes")) o->minutes = atof(v);
        else if (!strcmp(a, "--eval-every")) o->eval_every = atof(v);
        else if (!strcmp(a, "--lr")) o->lr = atof(v);
        else if (!strcmp(a, "--dropout")) o->dropout = atof(v);
        else if (!strcmp(a, "--seed")) o->seed = atoi(v);
        else if (!strcmp(a, "--steps")) o->max_steps = atoll(v);
        else if (!strcmp(a, "--layers")) o->layers = atoi(v);
        else if (!strcmp(a, "--heads")) o->heads = atoi(v);
        else if (!strcmp(a, "--width")) o->width = atoi(v);
        else if (!strcmp(a, "--context")) o->context = atoi(v);
        else if (!strcmp(a, "--batch")) o->batch = atoi(v);
        else return usage();
    }
    bool ok = o->minutes > 0 && o->layers > 0 && o->heads > 0 && o->width > 0 && o->width % o->heads == 0 &&
              o->context > 1 && o->batch > 0 && o->lr > 0 && o->dropout >= 0 && o->dropout < 1;
    return ok ? 0 : usage();
}

/* The loss of logits [B, T, 256] for bytes [B, T], taken flat; the meter counts it alone. */
static clg_tensor *window_loss(void *user, clg_tensor **out, clg_tensor **y)
{
    (void)user;
    clg_tensor *loss = clg_cross_entropy(clg_reshape(*out, CLG_SHAPE(-1, 256)), clg_reshape(*y, CLG_SHAPE(-1)),
                                         CLG_REDUCE_MEAN);
    *out = NULL;
    return loss;
}

typedef struct run_state {
    clg_device *dev;
    clg_module *model;
    clg_optimizer *opt;
    clg_meter *meter;
    clg_trainer *step;
    clg_lr_schedule sched;
    const uint8_t *train, *held;
    size_t train_len, held_len;
    int64_t windows, w, steps, planned;
} run_state;

static void sample(clg_module *model, int64_t seed)
{
    uint8_t text[300];
    clg_text_sampling s = {.temperature = 0.8, .top_k = 40, .top_p = 1, .seed = (uint64_t)seed};
    if (clg_text_sample_with(model, (const uint8_t *)"\n", 1, text, sizeof text, &s) == CLG_OK)
        printf("---- sample ----\n%.*s\n----------------\n", (int)sizeof text, (const char *)text);
    else
        fprintf(stderr, "gpt_char: sampling: %s\n", clg_device_error(clg_module_device(model)));
}

/* One step: the learning rate of the schedule, a batch of windows, the library's step. */
static clg_status train_step(run_state *r, const options *o)
{
    clg_status st = clg_optimizer_set_lr(r->opt, clg_lr_schedule_at(&r->sched, o->lr, r->steps));
    clg_scope_begin(r->dev);
    clg_tensor *x, *y;
    if (st == CLG_OK) st = clg_text_window(r->dev, r->train, r->train_len, o->batch, o->context, r->w, &x, &y);
    if (st == CLG_OK) st = clg_trainer_step(r->step, x, y, NULL);
    clg_scope_end(r->dev);
    r->w = (r->w + 1) % r->windows;
    r->steps++;
    return st;
}

/* Train for the budget; *held_bits gets the last held-out loss. */
static int run(run_state *r, const options *o, double *held_bits)
{
    const double ln2 = log(2.0), budget = o->minutes * 60;
    double trained = 0, next_eval = o->eval_every;
    for (bool last = false; !last;) {
        double t0 = now();
        clg_status st = train_step(r, o);
        if (st == CLG_OK && r->steps % 10 == 0) st = clg_device_finish(r->dev);
        if (st != CLG_OK) return fprintf(stderr, "gpt_char: %s\n", clg_device_error(r->dev)), 1;
        trained += now() - t0;
        if (r->steps == r->sched.warmup && !o->max_steps)   /* the cosine's length from the warm-up's pace */
            r->sched.t_max = r->steps + (int64_t)((budget - trained) / (trained / (double)r->steps));
        last = trained >= budget || r->steps == o->max_steps;
        if (trained < next_eval && !last) continue;
        double train_loss, acc, held_nats;
        clg_meter_read(r->meter, &train_loss, &acc);
        clg_meter_reset(r->meter);
        if (clg_text_loss(r->model, r->held, r->held_len, o->batch, o->context, &held_nats, NULL) != CLG_OK)
            return fprintf(stderr, "gpt_char: %s\n", clg_device_error(r->dev)), 1;
        printf("%6.1f min  step %6lld  lr %.2e  train %.3f bits/byte  held-out %.3f bits/byte  %.0f tokens/s\n",
               trained / 60, (long long)r->steps, clg_optimizer_lr(r->opt), train_loss / ln2, held_nats / ln2,
               (double)r->steps * o->batch * o->context / trained);
        *held_bits = held_nats / ln2;
        sample(r->model, r->steps);
        fflush(stdout);
        next_eval += o->eval_every;
    }
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    if (parse(argc, argv, &o)) return 2;
    char err[512];
    clg_text text;
    if (clg_text_read(o.data, &text, err, sizeof err) != CLG_OK) return fprintf(stderr, "gpt_char: %s\n", err), 1;
    size_t split = text.len - text.len / 20;
    printf("%s: %zu bytes; training on %zu, held out %zu\n", o.data, text.len, split, text.len - split);
    int64_t windows = clg_text_windows(split, o.batch, o.context, false);
    if (windows == 0 || clg_text_windows(text.len - split, o.batch, o.context, true) == 0)
        return fprintf(stderr, "gpt_char: %s: too short for %d streams of %d bytes\n", o.data, o.batch, o.context),
               clg_text_free(&text), 1;
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) return fprintf(stderr, "gpt_char: %s\n", clg_device_error(dev)), 1;
    printf("device: %s\n", clg_device_get_info(dev)->name);
    clg_manual_seed(dev, (uint64_t)o.seed);
    clg_gpt_config c = {256, o.context, o.layers, o.heads, o.width, o.dropout, true};
    run_state r = {dev, clg_nn_gpt(dev, &c), NULL, clg_meter_new(dev), NULL, {0}, text.bytes, text.bytes + split,
                   split, text.len - split, windows, 0, 0, 0};
    clg_tensor *params[256];
    int np = r.model ? clg_module_parameters(r.model, params, 256, true) : 0;
    if (r.model) printf("GPT: %d layers, %d heads, width %d, context %d: %lld parameters\n", o.layers, o.heads, o.width,
                        o.context, (long long)clg_module_numel(r.model, false));
    r.opt = np ? clg_adamw_new(np, params, &(clg_adam_options){.lr = o.lr, .beta1 = 0.9, .beta2 = 0.99,
                                                                 .weight_decay = 0.1}) : NULL;
    r.sched = (clg_lr_schedule){.kind = CLG_LR_COSINE, .t_max = o.max_steps ? o.max_steps : 1000000,
                                .eta_min = o.lr / 10, .warmup = o.max_steps && o.max_steps < 1000 ? o.max_steps / 10 : 100,
                                .warmup_start = 0.01};
    clg_trainer_options to = {.clip_grad_norm = 1.0, .meter = r.meter, .loss = window_loss};
    r.step = r.opt && r.meter ? clg_trainer_new(r.model, r.opt, &to) : NULL;
    double held_bits = NAN;
    int rc = r.step ? run(&r, &o, &held_bits) : (fprintf(stderr, "gpt_char: %s\n", clg_device_error(dev)), 1);
    if (rc == 0) printf("held-out %.3f bits/byte after %lld steps\n", held_bits, (long long)r.steps);
    if (rc == 0 && o.save) {
        rc = clg_module_save(r.model, o.save, 0, NULL) == CLG_OK ? 0 : 1;
        printf(rc ? "gpt_char: %s\n" : "saved %s\n", rc ? clg_device_error(dev) : o.save);
    }
    if (clg_device_profiling(dev)) clg_device_profile_print(dev, stdout);   /* CLG_PROFILE=1 */
    clg_trainer_free(r.step);
    clg_optimizer_free(r.opt);
    clg_meter_free(r.meter);
    clg_module_free(r.model);
    clg_device_close(dev);
    clg_text_free(&text);
    return rc;
}
