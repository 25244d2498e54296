/* train_run.h: the state of a `clgrad train` run and its epoch loop (train_run.c). */
#ifndef CLGRAD_TOOLS_TRAIN_RUN_H
#define CLGRAD_TOOLS_TRAIN_RUN_H

#include "cli.h"

/* The command line, as given (numbers are checked where they are used). */
typedef struct train_opts {
    const char *model, *data, *test, *device, *out, *resume, *init, *freeze, *metrics;
    const char *epochs, *batch, *lr, *seed, *workers, *steps, *precision, *eval_steps;
    const char *tensorboard, *tensorboard_every;
    bool graph;                 /* --graph: capture the step once, replay it */
    bool sync_bn;               /* --sync-bn: batch-norm statistics over all ranks */
} train_opts;

/* Text for a model of tokens: no loader, but windows of the bytes (train_text.c). */
typedef struct train_text {
    clg_text corpus;
    size_t split;               /* bytes [0, split) train, [split, len) are held out */
    int streams, window;        /* the batch, and the model's sequence length T */
    int64_t windows;            /* per epoch */
    int64_t epoch, next;        /* where the run starts: a resumed checkpoint's epoch and window */
} train_text;

/* What the points of --tensorboard-every start from (train_tb.c): the meter's sums at
 * the last point, and the samples and time since it. */
typedef struct train_tb_window {
    double loss_sum, hits, samples;
    int64_t counted;
    double t0;
} train_tb_window;

typedef struct train_run {
    clg_device *dev;
    clg_model *m;
    clg_module *net;
    clg_optimizer *opt;
    clg_tensor **params;        /* what the optimizer trains, for gradient clipping */
    int nparams;
    clg_dataset *train_set, *test_set;
    clg_loader *train, *test;   /* NULL for text */
    bool text_mode;
    train_text text;
    clg_meter *meter;
    clg_trainer *trainer;       /* the library's step, eager or replayed (--graph) */
    int64_t step;               /* optimizer steps so far, over all epochs */
    int64_t max_steps;          /* per epoch; 0: whole epochs */
    int64_t eval_steps;         /* text: held-out windows per evaluation; 0: all (--steps caps it too) */
    const char *out, *metrics;  /* checkpoint and metrics file, or NULL */
    int out_lock, metrics_lock; /* their advisory locks (cli_lock_output), -1 when none */
    clg_tensorboard *tb;        /* --tensorboard's event file (rank 0), or NULL */
    int64_t tb_every;           /* steps between its points (every rank); 0: epochs only */
    train_tb_window tb_window;
    clg_dist *dist;             /* the ranks under mpirun (dist.h); one rank otherwise */
    int rank, world;            /* this rank, and how many train together */
} train_run;

/* Device, network (--init, --freeze), optimizer, --resume, data and loaders or text
 * (train_setup.c); the run owns m from here on. Returns the exit status. */
int train_setup(const train_opts *o, train_run *r, clg_model *m);
void train_teardown(train_run *r);

/* Every epoch from the loader's position to the model's last: train, evaluate,
 * report, append metrics, save the checkpoint. Returns the exit status. */
int train_epochs(train_run *r);

/* The model file's gradient clipping (optimizer.clip_grad_norm), between backward and step. */

/* A training checkpoint whose next step is window/batch `batch` of epoch `epoch` (0-based). */
int train_save(train_run *r, int64_t epoch, int64_t batch, uint64_t loader_seed);

/* Text (train_text.c): the corpus and its split, stateful recurrent layers; then every
 * epoch: the windows in order, the held-out loss, metrics and checkpoints. */
int train_text_data(train_run *r);
int train_text_epochs(train_run *r);

/* --tensorboard (train_tb.c): open the event file on rank 0 (every: the steps between
 * points, on every rank, as they sum together); after a resume, a restart at the next
 * step; each epoch's start, each step of `samples` (over all ranks), each epoch's row
 * (the metrics CSV's); closed at the end. The int ones return the exit status. */
int train_tb_open(train_run *r, const char *dir, long long every);
int train_tb_resumed(train_run *r);
void train_tb_epoch_start(train_run *r);
clg_status train_tb_step(train_run *r, int64_t samples);
int train_tb_epoch(train_run *r, const clg_metrics_row *row);
int train_tb_close(train_run *r);
/* The message of a failed step: the event file's, the ranks', else the device's. */
const char *train_step_error(const train_run *r);

#endif
