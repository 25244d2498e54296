/* train_run.h: the state of a `clgrad train` run and its epoch loop (train_run.c). */
#ifndef CLGRAD_TOOLS_TRAIN_RUN_H
#define CLGRAD_TOOLS_TRAIN_RUN_H

#include "cli.h"

/* The command line, as given (numbers are checked where they are used). */
typedef struct train_opts {
    const char *model, *data, *test, *device, *out, *resume, *init, *freeze, *metrics;
    const char *epochs, *batch, *lr, *seed, *workers, *steps;
} train_opts;

typedef struct train_run {
    clg_device *dev;
    clg_model *m;
    clg_module *net;
    clg_optimizer *opt;
    clg_dataset *train_set, *test_set;
    clg_loader *train, *test;
    clg_meter *meter;
    int64_t step;               /* optimizer steps so far, over all epochs */
    int64_t max_steps;          /* per epoch; 0: whole epochs */
    const char *out, *metrics;  /* checkpoint and metrics file, or NULL */
} train_run;

/* Device, network (--init, --freeze), optimizer, --resume, data and loaders
 * (train_setup.c); the run owns m from here on. Returns the exit status. */
int train_setup(const train_opts *o, train_run *r, clg_model *m);
void train_teardown(train_run *r);

/* Every epoch from the loader's position to the model's last: train, evaluate,
 * report, append metrics, save the checkpoint. Returns the exit status. */
int train_epochs(train_run *r);

#endif
