/* fashion_common.h: what the Fashion-MNIST trainers share: command-line options, the
 * datasets and loaders, one epoch of training steps, and the per-epoch report. The model,
 * optimizer and the loop over epochs are in each trainer. */
#ifndef FASHION_COMMON_H
#define FASHION_COMMON_H

#include <clgrad.h>

typedef struct fashion_options {
    const char *device, *data, *out, *metrics, *recipe;
    int epochs, workers;
    int epochs_best;           /* the default --epochs under --recipe best (0: same) */
    int64_t batch, steps;      /* steps: stop each epoch early (0: whole epochs) */
    double lr;
    uint64_t seed;
    bool graph;                /* --graph: capture the step once and replay it (clgrad/graph.h) */
    clg_dtype precision;       /* --precision mixed|mixed-bf16: clg_trainer_options.precision */
} fashion_options;

/* Parse argv over the defaults already in *o. Returns -1 to go on, else an exit status. */
int fashion_parse(const char *prog, int argc, char **argv, fashion_options *o);

/* The device, the datasets and their loaders, made from the options. The train loader
 * shuffles and (augment) crops with padding 2 and flips; both scale pixels to [0, 1]
 * and normalise with Fashion-MNIST's mean 0.2860 and std 0.3530. */
typedef struct fashion_data {
    clg_device *dev;
    clg_dataset *train_set, *test_set;
    clg_loader *train, *test;
} fashion_data;
int fashion_open(const char *prog, const fashion_options *o, bool augment, fashion_data *d);
void fashion_close(fashion_data *d);

/* Evaluate on the test set, print the epoch's line and append the metrics row. */
int fashion_report(const char *prog, const fashion_options *o, fashion_data *d, clg_module *model, int epoch,
                   int64_t steps_done, clg_meter *meter, double rate, double lr, double *test_acc);

/* One epoch: for every batch, one training step (clg_trainer_step: zero the gradients,
 * forward, the mean cross-entropy, backward, the optimizer's update, the running loss
 * and accuracy; with --graph the step is captured once and replayed); at most max_steps
 * of them (0: all), the rest of the epoch skipped. */
clg_status fashion_train_epoch(clg_module *model, clg_trainer *trainer, clg_loader *loader, clg_meter *meter,
                               clg_progress *bar, int64_t max_steps);

/* Stop the current epoch of the loader early (for --steps). */
clg_status fashion_skip_rest(clg_loader *loader);

#endif
