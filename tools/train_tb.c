/* train_tb.c: `clgrad train --tensorboard DIR`: the run's curves as TensorBoard event
 * files (include/clgrad/tensorboard.h). Every epoch, the row the metrics CSV gets, under
 * epoch/ (train_run.c and train_text.c hand the same row to both). Every
 * --tensorboard-every N steps, points of the steps since the last: train/loss and
 * train/accuracy (their mean over those steps' samples), train/throughput (samples,
 * or bytes for text, per second over them) and train/lr. The running sums are the
 * meter's (kept on the device, summed over the epoch), so a point costs one 8-byte read;
 * the differences of two reads give the steps between them. The meter starts again
 * with each epoch, and so do the points' steps: an epoch's last steps after its last
 * point are in its epoch/ row only. Under mpirun every rank sums its part (the point's
 * read is collective) and rank 0 writes. */
#include <time.h>

#include "train_run.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int train_tb_open(train_run *r, const char *dir, long long every)
{
    r->tb_every = every;
    if (!dir) r->tb_every = 0;
    if (!dir || r->rank > 0) return 0;
    char err[1024];
    if (clg_tensorboard_open(dir, &r->tb, err, sizeof err) != CLG_OK) return cli_fail("train", "--tensorboard: %s", err);
    return 0;
}

int train_tb_resumed(train_run *r)
{
    /* the earlier files' points past the checkpoint were of steps this run redoes */
    if (r->tb && clg_tensorboard_restart(r->tb, r->step + 1) != CLG_OK)
        return cli_fail("train", "--tensorboard: %s", clg_tensorboard_error(r->tb));
    return 0;
}

void train_tb_epoch_start(train_run *r) { r->tb_window = (train_tb_window){.t0 = now()}; }

/* After each step of `samples` (over all ranks): every tb_every-th step of the run, the
 * points of the window since the last. */
clg_status train_tb_step(train_run *r, int64_t samples)
{
    train_tb_window *w = &r->tb_window;
    w->counted += samples;
    if (!r->tb_every || r->step % r->tb_every) return CLG_OK;
    double mean = 0, acc = 0;
    clg_status st = clg_meter_read(r->meter, &mean, &acc);
    if (st != CLG_OK) return st;
    double n = (double)clg_meter_samples(r->meter);
    double v[3] = {mean * n - w->loss_sum, acc * n - w->hits, n - w->samples};   /* this window */
    w->loss_sum = mean * n, w->hits = acc * n, w->samples = n;
    if (r->world > 1 && (st = clg_dist_sum(r->dist, v, 3)) != CLG_OK) return st;
    double t = now(), rate = t > w->t0 ? (double)w->counted / (t - w->t0) : 0;
    w->t0 = t, w->counted = 0;
    if (!r->tb || v[2] <= 0) return CLG_OK;
    const char *tags[] = {"train/loss", "train/accuracy", "train/throughput", "train/lr"};
    double values[] = {v[0] / v[2], v[1] / v[2], rate, clg_optimizer_lr(r->opt)};
    return clg_tensorboard_scalars(r->tb, r->step, 4, tags, values);
}

int train_tb_epoch(train_run *r, const clg_metrics_row *row)
{
    if (r->tb && clg_tensorboard_metrics(r->tb, row) != CLG_OK)
        return cli_fail("train", "--tensorboard: %s", clg_tensorboard_error(r->tb));
    return 0;
}

const char *train_step_error(const train_run *r)
{
    if (r->tb && clg_tensorboard_error(r->tb)[0]) return clg_tensorboard_error(r->tb);
    if (r->world > 1 && clg_dist_error(r->dist)[0]) return clg_dist_error(r->dist);
    return clg_device_error(r->dev);
}

int train_tb_close(train_run *r)
{
    clg_status st = clg_tensorboard_close(r->tb);
    r->tb = NULL;
    return st != CLG_OK ? cli_fail("train", "--tensorboard: %s", clg_last_error()) : 0;
}
