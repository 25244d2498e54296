/* clgrad/tensorboard.h: training curves as TensorBoard event files, for
 * `tensorboard --logdir DIR` (no TensorFlow needed on either side).
 *
 *   clg_tensorboard *tb;
 *   char err[512];
 *   if (clg_tensorboard_open("runs/demo", &tb, err, sizeof err) != CLG_OK) {
 *       fprintf(stderr, "%s\n", err);
 *       return 1;
 *   }
 *   for (int64_t step = 1; step <= 100; step++)               // a curve: one point per step
 *       if (clg_tensorboard_scalar(tb, "train/loss", step, 2.3 / (double)step) != CLG_OK) {
 *           fprintf(stderr, "%s\n", clg_tensorboard_error(tb));
 *           break;
 *       }
 *   clg_metrics_row row = {1, 100, 0.52, 0.81, 0.60, 0.78, 1200, 0.01};   // train.h
 *   clg_tensorboard_metrics(tb, &row);                     // epoch/train_loss, epoch/test_acc, ...
 *   printf("wrote %s\n", clg_tensorboard_path(tb));
 *   if (clg_tensorboard_close(tb) != CLG_OK) fprintf(stderr, "%s\n", clg_last_error());
 *
 * Each call appends one record to DIR/events.out.tfevents.SECONDS.HOST.PID.N
 * (TFRecord framing: the length, the data, each with its masked CRC-32C, around an
 * Event protocol buffer) and writes it out before returning, so a run that dies keeps
 * every point it wrote. A writer is for one thread at a time; several writers may
 * share a directory (each has its own file, and TensorBoard merges them into one run).
 * Failures return a status; the message, naming the file and the cause, is in
 * clg_tensorboard_error (and the thread's clg_last_error). After a failed write the
 * writer refuses further records, so the file never holds a torn one in its middle.
 */
#ifndef CLGRAD_TENSORBOARD_H
#define CLGRAD_TENSORBOARD_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clg_tensorboard clg_tensorboard;

/* Create logdir (and its parents) when missing, and a new event file in it, whose first
 * record says its format ("brain.Event:2"). err (errlen bytes, may be NULL) receives the
 * message of a failure: a directory that cannot be made, a file that cannot be created. */
CLG_API clg_status clg_tensorboard_open(const char *logdir, clg_tensorboard **out, char *err, size_t errlen);
/* One point of the curve `tag` ("train/loss": TensorBoard groups tags by what comes
 * before the '/') at step (any int64; TensorBoard's x axis). value is stored as a
 * float, as TensorBoard keeps scalars; NaN and infinities are stored as they are. */
CLG_API clg_status clg_tensorboard_scalar(clg_tensorboard *tb, const char *tag, int64_t step, double value);
/* n points of n curves at one step, in one record (one Event with n values). */
CLG_API clg_status clg_tensorboard_scalars(clg_tensorboard *tb, int64_t step, int n, const char *const *tags,
                                           const double *values);
/* A metrics row (train.h, as clg_metrics_append writes it to CSV) at step row->step:
 * "epoch/" and the CSV's column names (epoch/train_loss, epoch/train_acc,
 * epoch/test_loss, epoch/test_acc, epoch/images_per_sec, epoch/lr), and epoch/epoch;
 * NaN fields (not measured) are left out. */
CLG_API clg_status clg_tensorboard_metrics(clg_tensorboard *tb, const clg_metrics_row *row);
/* A run resumed at step: a SessionLog START record there, on which TensorBoard drops
 * the points of steps >= step that earlier files of the directory hold (the part of
 * the interrupted run that the resumed one redoes), as clg_metrics_append drops rows. */
CLG_API clg_status clg_tensorboard_restart(clg_tensorboard *tb, int64_t step);
/* The event file's path; "" for NULL. */
CLG_API const char *clg_tensorboard_path(const clg_tensorboard *tb);
/* The last failure's message, "" when none (or for NULL). */
CLG_API const char *clg_tensorboard_error(const clg_tensorboard *tb);
/* Close the file and free the writer (NULL: nothing, CLG_OK). A failure to close is
 * reported in clg_last_error; the writer is freed either way. */
CLG_API clg_status clg_tensorboard_close(clg_tensorboard *tb);

#ifdef __cplusplus
}
#endif
#endif
