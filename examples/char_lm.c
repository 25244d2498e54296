/* char_lm: a character-level language model on real English text.
 *
 *   ./build/examples/char_lm [--minutes 5] [--steps N] [--data /usr/share/games/fortunes]
 *                            [--cell lstm|gru] [--hidden 256] [--window 128] [--eval-every 60]
 *                            [--sample-every 120] [--save char_lstm.safetensors] [--graph]
 *
 * The model is char_lstm (examples/models/char_lstm.json): bytes -> Embedding(256, 64) ->
 * a 2-layer LSTM of 256 -> Linear(256, 256) -> the next byte's logits. The text is the
 * fortunes package's files (about 2.5 MB of quotations and jokes), the last 5% held out.
 * Training reads the rest as 32 parallel streams in windows of 128 bytes: the LSTM's
 * state at the end of a window is where the next window of that stream starts, so the
 * model sees each stream as one long sequence, but gradients stop at the window's edge
 * (truncated backpropagation through time). Adam, gradient norm clipped to 5.
 *
 * Losses are in bits per byte: 8 knows nothing, the bytes' unigram entropy (about 4.6
 * here) knows only letter frequencies; a good character model of English gets below 2.
 * Every so often it prints a sample, generated from a newline at temperature 0.8. The
 * time budget counts training only, not the evaluations and samples in between.
 *
 * The step is the library's (clg_trainer); --graph captures it once and replays it
 * (clgrad/graph.h): the same numbers, with less host work per step. After each
 * evaluation the state's batch changes back, the graph is found stale, and the trainer
 * captures the step again. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <clgrad.h>

enum { STREAMS = 32 };

typedef struct options {
    const char *data, *cell, *save;
    double minutes, eval_every, sample_every;
    int seed, hidden, window;
    int64_t max_steps;   /* 0: the time budget alone */
    bool graph;
} options;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int usage(void)
{
    fprintf(stderr, "usage: char_lm [--minutes M] [--steps N] [--data FILE|DIR] [--cell lstm|gru] [--hidden H]\n"
                    "               [--window T] [--eval-every S] [--sample-every S] [--save FILE] [--seed N]\n"
                    "               [--graph]\n");
    return 2;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){"/usr/share/games/fortunes", "lstm", NULL, 5, 60, 120, 1, 256, 128, 0, false};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--graph")) {
            o->graph = true;
            continue;
        }
        if (!v) return usage();
        if (!strcmp(a, "--data")) o->data = v;
        else if (!strcmp(a, "--cell") && (!strcmp(v, "lstm") || !strcmp(v, "gru"))) o->cell = v;
        else if (!strcmp(a, "--save")) o->save = v;
        else if (!strcmp(a, "--minutes")) o->minutes = atof(v);
        else if (!strcmp(a, "--eval-every")) o->eval_every = atof(v);
        else if (!strcmp(a, "--sample-every")) o->sample_every = atof(v);
        else if (!strcmp(a, "--seed")) o->seed = atoi(v);
        else if (!strcmp(a, "--steps")) o->max_steps = atoll(v);
        else if (!strcmp(a, "--hidden")) o->hidden = atoi(v);
        else if (!strcmp(a, "--window")) o->window = atoi(v);
        else return usage();
        i++;
    }
    return o->minutes > 0 && o->hidden > 0 && o->window > 0 ? 0 : usage();
}

/* char_lstm (hidden 256), or narrower for a quick run. */
static clg_module *make_model(clg_device *dev, const char *cell, int hidden)
{
    clg_rnn_options o = clg_rnn_defaults();
    o.num_layers = 2;
    o.batch_first = true;
    clg_module *rnn = !strcmp(cell, "gru") ? clg_nn_gru(dev, 64, hidden, &o) : clg_nn_lstm(dev, 64, hidden, &o);
    return clg_nn_sequential(dev, 3, (clg_module *[]){clg_nn_embedding(dev, 256, 64), rnn,
                                                       clg_nn_linear(dev, hidden, 256, true)});
}

/* The unigram entropy of the bytes, bits: what a model that ignores context can reach. */
static double unigram_bits(const uint8_t *b, size_t n)
{
    double count[256] = {0}, h = 0;
    for (size_t i = 0; i < n; i++) count[b[i]]++;
    for (int c = 0; c < 256; c++)
        if (count[c] > 0) h -= count[c] / (double)n * log2(count[c] / (double)n);
    return h;
}

typedef struct trainer {
    clg_device *dev;
    clg_module *model;
    clg_optimizer *opt;
    clg_tensor *params[32];
    int nparams;
    clg_meter *meter;
    clg_trainer *step;   /* the library's step: forward, loss, backward, clip, update, meter */
    const uint8_t *train;
    size_t train_len;
    int64_t windows, w, steps;
    int window;
} trainer;

/* The loss of logits [B, T, 256] for bytes [B, T], taken flat; the meter counts the
 * loss only (*out NULL), as the mean over windows. */
static clg_tensor *window_loss(void *user, clg_tensor **out, clg_tensor **y)
{
    (void)user;
    clg_tensor *loss = clg_cross_entropy(clg_reshape(*out, CLG_SHAPE(-1, 256)), clg_reshape(*y, CLG_SHAPE(-1)),
                                         CLG_REDUCE_MEAN);
    *out = NULL;
    return loss;
}

/* One window: forward, loss, backward, clip, step; the loss goes to the meter. */
static clg_status train_step(trainer *t)
{
    clg_scope_begin(t->dev);
    clg_tensor *x, *y;
    clg_status st = clg_text_window(t->dev, t->train, t->train_len, STREAMS, t->window, t->w, &x, &y);
    if (st == CLG_OK) st = clg_trainer_step(t->step, x, y, NULL);
    clg_scope_end(t->dev);
    t->steps++;
    if (++t->w == t->windows) {   /* an epoch: the streams start over, from a zero state */
        t->w = 0;
        clg_text_model_reset(t->model);
    }
    return st;
}

static void print_sample(clg_module *model, uint64_t seed)
{
    uint8_t text[300];
    if (clg_text_sample(model, (const uint8_t *)"\n", 1, text, sizeof text, 0.8, seed) != CLG_OK) {
        fprintf(stderr, "char_lm: sampling: %s\n", clg_device_error(clg_module_device(model)));
        return;
    }
    printf("---- sample ----\n%.*s\n----------------\n", (int)sizeof text, (const char *)text);
}

/* Train for the budget, evaluating and sampling on the way; *held_bits gets the last
 * held-out loss. Returns the exit status. */
static int run(trainer *t, const options *o, const uint8_t *held, size_t held_len, double *held_bits)
{
    const double ln2 = log(2.0), budget = o->minutes * 60;
    double trained = 0, next_eval = o->eval_every, next_sample = o->sample_every;
    clg_text_model_stateful(t->model, true);
    for (bool last = false; !last;) {
        double t0 = now();
        clg_status st = train_step(t);
        if (st == CLG_OK && (t->steps % 10 == 0 || trained + now() - t0 >= budget)) st = clg_device_finish(t->dev);
        if (st != CLG_OK) return fprintf(stderr, "char_lm: %s\n", clg_device_error(t->dev)), 1;
        trained += now() - t0;
        last = trained >= budget || t->steps == o->max_steps;
        if (trained >= next_eval || last) {
            double train_loss, acc, held_nats;
            clg_meter_read(t->meter, &train_loss, &acc);
            clg_meter_reset(t->meter);
            /* the held-out text as 32 streams of its own, from zeros; training's streams then
             * go on from a zero state too (once per evaluation: a small bump in the loss) */
            if (clg_text_loss(t->model, held, held_len, STREAMS, t->window, &held_nats, NULL) != CLG_OK)
                return fprintf(stderr, "char_lm: %s\n", clg_device_error(t->dev)), 1;
            clg_text_model_stateful(t->model, true);
            printf("%6.1f min  step %6lld  train %.3f bits/byte  held-out %.3f bits/byte  %.0f chars/s\n",
                   trained / 60, (long long)t->steps, train_loss / ln2, held_nats / ln2,
                   (double)t->steps * STREAMS * t->window / trained);
            fflush(stdout);
            *held_bits = held_nats / ln2;
            next_eval += o->eval_every;
        }
        if (trained >= next_sample || last) {
            print_sample(t->model, (uint64_t)t->steps);
            clg_text_model_stateful(t->model, true);
            next_sample += o->sample_every;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    if (parse(argc, argv, &o)) return 2;
    char err[512];
    clg_text text;
    if (clg_text_read(o.data, &text, err, sizeof err) != CLG_OK) return fprintf(stderr, "char_lm: %s\n", err), 1;
    size_t split = text.len - text.len / 20;
    printf("%s: %zu bytes in %d files; training on %zu, held out %zu; unigram entropy %.3f bits/byte\n", o.data,
           text.len, text.files, split, text.len - split, unigram_bits(text.bytes, split));
    if (clg_text_windows(split, STREAMS, o.window, false) == 0 ||
        clg_text_windows(text.len - split, STREAMS, o.window, true) == 0)
        return fprintf(stderr, "char_lm: %s: too short for %d streams of windows of %d bytes\n", o.data, STREAMS,
                       o.window), clg_text_free(&text), 1;
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) return fprintf(stderr, "char_lm: %s\n", clg_device_error(dev)), 1;
    printf("device: %s\n", clg_device_get_info(dev)->name);
    clg_manual_seed(dev, (uint64_t)o.seed);
    trainer t = {dev, make_model(dev, o.cell, o.hidden), NULL, {0}, 0, clg_meter_new(dev), NULL, text.bytes, split,
                 0, 0, 0, o.window};
    t.windows = clg_text_windows(split, STREAMS, o.window, false);
    t.nparams = t.model ? clg_module_parameters(t.model, t.params, 32, true) : 0;
    t.opt = t.model ? clg_adam_new(t.nparams, t.params, &(clg_adam_options){.lr = 2e-3}) : NULL;
    clg_trainer_options to = {.graph = o.graph, .clip_grad_norm = 5.0, .meter = t.meter, .loss = window_loss};
    t.step = t.opt && t.meter ? clg_trainer_new(t.model, t.opt, &to) : NULL;
    double held_bits = NAN, unigram = unigram_bits(text.bytes, split);
    int rc = t.step ? run(&t, &o, text.bytes + split, text.len - split, &held_bits)
                              : (fprintf(stderr, "char_lm: %s\n", clg_device_error(dev)), 1);
    if (rc == 0)   /* what a model learned beyond letter frequencies */
        printf("held-out %.3f bits/byte: %s the unigram entropy %.3f\n", held_bits,
               held_bits < unigram ? "below" : "not below", unigram);
    if (rc == 0 && o.graph)
        printf("graph: %lld of %lld steps were replays\n", (long long)clg_trainer_replays(t.step), (long long)t.steps);
    if (rc == 0 && o.save && clg_module_save(t.model, o.save, 0, NULL) != CLG_OK)
        rc = (fprintf(stderr, "char_lm: %s\n", clg_device_error(dev)), 1);
    else if (rc == 0 && o.save)
        printf("saved %s\n", o.save);
    clg_trainer_free(t.step);
    clg_optimizer_free(t.opt);
    clg_meter_free(t.meter);
    clg_module_free(t.model);
    clg_device_close(dev);
    clg_text_free(&text);
    return rc;
}
