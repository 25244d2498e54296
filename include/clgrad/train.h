/* clgrad/train.h: what a training loop shows while it runs: running loss and accuracy
 * kept on the device, a progress bar (or plain lines when the output is not a
 * terminal), and metrics appended to a CSV file.
 *
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) return 1;
 *   int64_t steps_per_epoch = 20, batch = 16;
 *   clg_tensor *w = clg_randn(dev, CLG_F32, CLG_SHAPE(3, 8), 0, 0.3);
 *   clg_meter *meter = clg_meter_new(dev);
 *   clg_progress *bar = clg_progress_new(stdout, steps_per_epoch, "epoch 1/5", 0);
 *   for (int64_t step = 0; step < steps_per_epoch; step++) {
 *       clg_scope_begin(dev);
 *       clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(batch, 8), 0, 1);
 *       clg_tensor *y = clg_zeros(dev, CLG_I32, CLG_SHAPE(batch));
 *       clg_tensor *logits = clg_linear(x, w, NULL);
 *       clg_tensor *loss = clg_cross_entropy(logits, y, CLG_REDUCE_MEAN);
 *       clg_meter_add(meter, loss, logits, y);      // device work only: no wait
 *       clg_progress_step(bar, meter, batch);       // reads the meter a few times a second
 *       clg_scope_end(dev);
 *   }
 *   clg_progress_end(bar, meter);
 *   clg_progress_free(bar);
 *   clg_meter_free(meter);
 *   clg_device_close(dev);
 *
 * The meter sums on the device; reading it (clg_meter_read) is the only thing that
 * moves data back, 8 bytes, and the progress bar does it at most ten times a second.
 */
#ifndef CLGRAD_TRAIN_H
#define CLGRAD_TRAIN_H

#include <stdio.h>

#include "data.h"
#include "dist.h"
#include "graph.h"
#include "nn.h"
#include "optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- running loss and accuracy ----------------------------------------------------------- */
typedef struct clg_meter clg_meter;
CLG_API clg_meter *clg_meter_new(clg_device *dev);
CLG_API void clg_meter_free(clg_meter *m);
/* Add a batch: loss is the batch's mean loss (one element); logits [B, C] and int32
 * labels [B] count the correct predictions (logits may be NULL: loss only). */
CLG_API clg_status clg_meter_add(clg_meter *m, clg_tensor *loss, clg_tensor *logits, clg_tensor *labels);
/* The mean loss and accuracy (0-1) over the samples added since the last reset; waits. */
CLG_API clg_status clg_meter_read(clg_meter *m, double *mean_loss, double *accuracy);
CLG_API int64_t clg_meter_samples(const clg_meter *m);
CLG_API void clg_meter_reset(clg_meter *m);

/* ---- progress ---------------------------------------------------------------------------------- */
typedef struct clg_progress clg_progress;
/* A bar on a terminal (redrawn in place), else a plain line every `every` steps (0: about
 * ten lines per epoch). `title` is shown in front, "epoch 2/5" say. */
CLG_API clg_progress *clg_progress_new(FILE *out, int64_t total_steps, const char *title, int64_t every);
/* One step of `samples` samples done. */
CLG_API void clg_progress_step(clg_progress *p, clg_meter *m, int64_t samples);
/* The last update; the measured rate stays readable. Frees nothing. */
CLG_API void clg_progress_end(clg_progress *p, clg_meter *m);
/* What a sample is called in the rate: "img" (the default: "img/s"), "bytes", ... */
CLG_API void clg_progress_set_unit(clg_progress *p, const char *unit);
/* Samples per second and seconds since the start. */
CLG_API double clg_progress_rate(const clg_progress *p);
CLG_API double clg_progress_elapsed(const clg_progress *p);
CLG_API void clg_progress_free(clg_progress *p);

/* ---- one training step ------------------------------------------------------------------- */
/*   clg_trainer_options to = clg_trainer_defaults();
 *   to.graph = true;  to.meter = meter;
 *   clg_trainer *tr = clg_trainer_new(model, opt, &to);
 *   for (each batch x, y) {
 *       clg_scope_begin(dev);
 *       clg_trainer_step(tr, x, y, NULL);        // zero_grad, forward, loss, backward, step
 *       clg_scope_end(dev);
 *   }
 *   clg_trainer_free(tr);
 *
 * With .graph the first step runs eagerly, the second is captured (clgrad/graph.h) and
 * later steps whose batches have the captured shapes, with the model in the captured
 * mode, replay it: the same results, bit for bit, without the host work of an eager
 * step. Other batches (a smaller last one) run eagerly. clg_trainer_new flattens the
 * optimizer (clg_optimizer_flatten: one update launch for all parameters) where its
 * parameters allow. */
typedef struct clg_trainer clg_trainer;
typedef struct clg_trainer_options {
    bool graph;                /* capture the second step and replay it */
    double clip_grad_norm;     /* > 0: clip the gradients' global norm before the step */
    clg_meter *meter;          /* NULL, or where the loss and accuracy are summed */
    /* The model's input from the batch (a cast, say); NULL: the batch. */
    clg_tensor *(*input)(void *user, clg_tensor *x);
    /* The loss of the model's output *out for targets *y; NULL: mean cross-entropy. It
     * may replace *out and *y by what the meter should count (flattened logits and
     * labels of a sequence model), or set *out to NULL: the meter counts the loss only,
     * one sample per step. */
    clg_tensor *(*loss)(void *user, clg_tensor **out, clg_tensor **y);
    void *user;
    /* Mixed precision: CLG_F16 or CLG_BF16 runs the forward pass and the loss under
     * clg_autocast_begin (ops.h): products in 16 bits, float32 weights, gradients and
     * optimizer state. CLG_F16 also scales the loss (clg_grad_scaler, optim.h, with
     * PyTorch's defaults): a step whose gradients overflow is skipped, decided on the
     * device (nothing is read back; graph replays it too). CLG_F32 (0): off. */
    clg_dtype precision;
    /* Data-parallel training (clgrad/dist.h): the gradients are averaged over every
     * replica before the step (this rank's replicas: clg_trainer_step_replicas). The
     * batch is this replica's shard of the global batch. Not with graph. */
    clg_dist *dist;
} clg_trainer_options;
/* Every field off (what NULL options mean): eager steps, mean cross-entropy, float32. */
CLG_API clg_trainer_options clg_trainer_defaults(void);
/* model and opt (and the meter) must outlive the trainer. */
CLG_API clg_trainer *clg_trainer_new(clg_module *model, clg_optimizer *opt, const clg_trainer_options *options);
CLG_API void clg_trainer_free(clg_trainer *t);
/* One step on batch x with targets y; *loss (may be NULL) receives the mean loss, a
 * one-element tensor in the current scope. Enqueues; waits for nothing. */
CLG_API clg_status clg_trainer_step(clg_trainer *t, clg_tensor *x, clg_tensor *y, clg_tensor **loss);
/* One data-parallel step of the n local replicas (trainers made with the same
 * options.dist, one per device, over models of the same parameters): replica r's
 * forward and backward on its shard x[r], y[r] (NULL or 0 samples: none, its gradients
 * count as zeros), the gradients averaged over every replica of every rank, then each
 * replica's step. loss (may be NULL) receives n mean losses, NULL for empty shards.
 * Waits for the reduction. clg_trainer_step on one such trainer is this with n = 1. */
CLG_API clg_status clg_trainer_step_replicas(int n, clg_trainer *const *t, clg_tensor *const *x, clg_tensor *const *y,
                                             clg_tensor **loss);
/* Steps that were replays, and the graph (NULL before the capture, or when eager). */
CLG_API int64_t clg_trainer_replays(const clg_trainer *t);
CLG_API clg_graph *clg_trainer_graph(const clg_trainer *t);
/* The loss scaler of a float16 mixed-precision trainer (for its state in checkpoints),
 * else NULL. */
CLG_API clg_grad_scaler *clg_trainer_scaler(const clg_trainer *t);

/* ---- evaluation ----------------------------------------------------------------------------- */
/* Run a classifier (logits [B, C] from int32-labelled batches) over one epoch of the
 * loader in eval mode and without the tape, then restore its mode. Gives the mean
 * cross-entropy and the accuracy; confusion (may be NULL) receives num_classes^2 counts,
 * row = true class, column = predicted class (this reads the predictions back). */
CLG_API clg_status clg_evaluate(clg_module *model, clg_loader *loader, double *loss, double *accuracy,
                                int64_t *confusion, int num_classes);

/* ---- character language models ------------------------------------------------------------- */
/* Make every recurrent layer of model carry its state from one forward to the next
 * (clg_rnn_set_stateful; off: each forward from zeros), or start them from zeros again. */
CLG_API void clg_text_model_stateful(clg_module *model, bool on);
CLG_API void clg_text_model_reset(clg_module *model);
/* The mean cross-entropy, nats per byte, of a model mapping tokens [streams, T] to
 * logits [streams, T, 256] over the len bytes read as `streams` contiguous streams
 * (clg_text_window, the last window shorter) from a zero state carried between
 * windows: every byte but each stream's first is predicted from those before it in its
 * stream (*count of them). In eval mode, without the tape; the model's mode is restored
 * and its recurrent layers are left not stateful. One stream is the whole text as one
 * sequence. */
CLG_API clg_status clg_text_loss(clg_module *model, const uint8_t *bytes, size_t len, int streams, int window,
                                 double *nats, int64_t *count);
/* The same over at most max_windows windows (the streams' first bytes: a smoke run's or
 * a quick estimate's), calling progress after every window (done of total), so that
 * a long evaluation shows it is moving (Keras' validation_steps, Lightning's
 * limit_val_batches). NULL options: clg_text_loss. */
typedef struct clg_text_eval_options {
    int64_t max_windows;                                         /* 0: every window */
    void (*progress)(int64_t done, int64_t total, void *user);  /* NULL: none */
    void *user;
} clg_text_eval_options;
CLG_API clg_text_eval_options clg_text_eval_defaults(void);   /* every window, no progress */
CLG_API clg_status clg_text_loss_ex(clg_module *model, const uint8_t *bytes, size_t len, int streams, int window,
                                    const clg_text_eval_options *opt, double *nats, int64_t *count);
/* n bytes of text generated by such a model into out: from a zero state it reads the
 * prime (at least one byte), then samples each next byte from softmax(logits /
 * temperature) (the most likely byte at temperature 0) and feeds it back (a model
 * without recurrent layers, a transformer, reads the whole text so far each time, its
 * last clg_module_context bytes where it has a limit). The same
 * seed gives the same text. clg_text_sample_with with top_k 0 and top_p 1. */
CLG_API clg_status clg_text_sample(clg_module *model, const uint8_t *prime, size_t prime_len, uint8_t *out, size_t n,
                                   double temperature, uint64_t seed);
/* How clg_text_sample_with draws each byte. */
typedef struct clg_text_sampling {
    double temperature;   /* >= 0: logits divided by it; 0: always the most likely byte */
    int top_k;            /* >= 0: draw among the k most likely only (0: all 256) */
    double top_p;         /* in (0, 1]: among the fewest most likely whose probabilities
                             reach top_p (nucleus sampling; 1: all) */
    uint64_t seed;        /* the device generator's seed for the draws (its state is restored) */
} clg_text_sampling;
/* clg_text_sample with top-k and top-p: the draw runs on the device (clg_topk, clg_sort,
 * clg_multinomial), one int32 read back per byte. Bad options fail (CLG_ERR_INVALID_ARGUMENT,
 * naming them). */
CLG_API clg_status clg_text_sample_with(clg_module *model, const uint8_t *prime, size_t prime_len, uint8_t *out,
                                        size_t n, const clg_text_sampling *o);

/* ---- metrics file ------------------------------------------------------------------------------ */
typedef struct clg_metrics_row {
    int epoch;
    int64_t step;                   /* steps so far */
    double train_loss, train_acc, test_loss, test_acc;  /* NaN when not measured */
    double images_per_sec, lr;
} clg_metrics_row;
/* Append a row to a CSV file, writing the header first when the file is new or empty:
 * epoch,step,train_loss,train_acc,test_loss,test_acc,images_per_sec,lr
 * Rows already there for the row's epoch or later are dropped first: a run resumed
 * from a checkpoint older than its last row redoes those epochs, once each. */
CLG_API clg_status clg_metrics_append(const char *path, const clg_metrics_row *row, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
