/* clgrad/train.h: what a training loop shows while it runs: running loss and accuracy
 * kept on the device, a progress bar (or plain lines when the output is not a
 * terminal), and metrics appended to a CSV file.
 *
 *   clg_meter *meter = clg_meter_new(dev);
 *   clg_progress *bar = clg_progress_new(stdout, steps_per_epoch, "epoch 1/5");
 *   for (int64_t step = 0; ...; step++) {
 *       ... loss = clg_cross_entropy(logits, y, CLG_REDUCE_MEAN) ...
 *       clg_meter_add(meter, loss, logits, y);      // device work only: no wait
 *       clg_progress_step(bar, meter, batch);       // reads the meter a few times a second
 *   }
 *   clg_progress_end(bar, meter);
 *
 * The meter sums on the device; reading it (clg_meter_read) is the only thing that
 * moves data back, 8 bytes, and the progress bar does it at most ten times a second.
 */
#ifndef CLGRAD_TRAIN_H
#define CLGRAD_TRAIN_H

#include <stdio.h>

#include "data.h"
#include "nn.h"

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
/* Samples per second and seconds since the start. */
CLG_API double clg_progress_rate(const clg_progress *p);
CLG_API double clg_progress_elapsed(const clg_progress *p);
CLG_API void clg_progress_free(clg_progress *p);

/* ---- evaluation ----------------------------------------------------------------------------- */
/* Run a classifier (logits [B, C] from int32-labelled batches) over one epoch of the
 * loader in eval mode and without the tape, then restore its mode. Gives the mean
 * cross-entropy and the accuracy; confusion (may be NULL) receives num_classes^2 counts,
 * row = true class, column = predicted class (this reads the predictions back). */
CLG_API clg_status clg_evaluate(clg_module *model, clg_loader *loader, double *loss, double *accuracy,
                                int64_t *confusion, int num_classes);

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
