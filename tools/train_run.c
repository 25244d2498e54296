/* train_run.c: the epochs of `clgrad train`, as the example trainers run them: a
 * progress bar per epoch, then the test set, one summary line, a metrics row and a
 * training checkpoint that resumes exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_run.h"

/* The rest of the epoch is skipped (--steps): the next batch is the next epoch's first. */
static clg_status skip_rest(clg_loader *l)
{
    clg_loader_position pos = clg_loader_get_position(l);
    return clg_loader_set_position(l, (clg_loader_position){pos.epoch + 1, 0, pos.seed});
}

static clg_status train_step(train_run *r, clg_tensor *x, clg_tensor *y)
{
    clg_status st = CLG_OK;
    if (clg_model_get_optim(r->m)->schedule_steps)   /* a schedule over steps: this step's rate */
        st = clg_optimizer_set_lr(r->opt, clg_model_lr_at(r->m, r->step));
    if (st == CLG_OK) st = clg_trainer_step(r->trainer, x, y, NULL);
    if (st == CLG_OK) r->step++;
    return st;
}

/* Samples in batch b of the epoch, over all ranks (this rank's x has its part). */
static int64_t global_count(const train_run *r, int64_t b)
{
    int64_t batch = clg_model_get_train(r->m)->batch, left = clg_dataset_length(r->train_set) - b * batch;
    return left < batch ? left : batch;
}

/* Batches from the loader's position to the epoch's end (or max_steps of it). */
static clg_status train_epoch(train_run *r, clg_progress *bar)
{
    clg_module_train(r->net, true);
    for (int64_t b = clg_loader_get_position(r->train).batch; !r->max_steps || b < r->max_steps; b++) {
        clg_scope_begin(r->dev);
        clg_tensor *x, *y;
        clg_status st = clg_loader_next(r->train, &x, &y);
        if (st == CLG_OK && !x) {
            clg_scope_end(r->dev);
            return CLG_OK;
        }
        if (st == CLG_OK) st = train_step(r, x, y);
        if (st == CLG_OK) clg_progress_step(bar, r->meter, global_count(r, b));
        if (st == CLG_OK) st = train_tb_step(r, global_count(r, b));
        clg_scope_end(r->dev);
        if (st != CLG_OK) return st;
    }
    return skip_rest(r->train);
}

int train_save(train_run *r, int64_t epoch, int64_t batch, uint64_t loader_seed)
{
    clg_train_state ts = {.step = r->step, .epoch = epoch, .batch = batch, .loader_seed = loader_seed,
                          .base_lr = clg_model_get_optim(r->m)->lr, .world_size = r->world};
    snprintf(ts.lr_schedule, sizeof ts.lr_schedule, "%s", clg_model_get_optim(r->m)->schedule);
    clg_grad_scaler *sc = clg_trainer_scaler(r->trainer);
    if (sc) {
        ts.loss_scale = clg_grad_scaler_get_scale(sc);
        ts.loss_scale_growth = clg_grad_scaler_growth_tracker(sc);
    }
    char *json = clg_model_json(r->m);
    clg_status st = json ? clg_checkpoint_save(r->net, r->opt, &ts, json, r->out) : CLG_ERR_OUT_OF_MEMORY;
    free(json);
    if (st != CLG_OK) return cli_fail("train", "%s", json ? clg_device_error(r->dev) : "out of host memory");
    return 0;
}

static int save(train_run *r)
{
    clg_loader_position pos = clg_loader_get_position(r->train);
    return train_save(r, (int64_t)pos.epoch, pos.batch, pos.seed);
}

/* The epoch's training loss and accuracy over every rank's samples. */
static clg_status all_ranks(train_run *r, double *loss, double *acc)
{
    if (r->world == 1) return CLG_OK;
    double n = (double)clg_meter_samples(r->meter), v[3] = {*loss * n, *acc * n, n};
    if (n == 0) v[0] = v[1] = 0;
    clg_status st = clg_dist_sum(r->dist, v, 3);
    if (!st && v[2] > 0) *loss = v[0] / v[2], *acc = v[1] / v[2];
    return st;
}

static int report(train_run *r, int epoch, double rate, double lr, double *test_acc)
{
    double loss = NAN, acc = NAN, tloss = NAN;
    *test_acc = NAN;
    if (clg_meter_read(r->meter, &loss, &acc) != CLG_OK || all_ranks(r, &loss, &acc) ||
        (r->test && cli_evaluate(r->net, r->m, r->test, &tloss, test_acc, NULL) != CLG_OK))
        return cli_fail("train", "%s", r->world > 1 && clg_dist_error(r->dist)[0] ? clg_dist_error(r->dist)
                                                                                : clg_device_error(r->dev));
    int epochs = clg_model_get_train(r->m)->epochs;
    /* A diverged run is a failure, not a result: stop before its checkpoint and metrics
     * row are written (the last epoch's checkpoint stays as it was). */
    if (!isfinite(loss))
        return cli_fail("train", "the training loss became %s in epoch %d (by step %lld); stopped without saving "
                        "(try a lower learning rate)", isnan(loss) ? "NaN" : "infinite", epoch, (long long)r->step);
    printf("epoch %d/%d: train loss %.4f acc %.2f%%", epoch, epochs, loss, 100 * acc);
    if (r->test) printf(" | test loss %.4f acc %.2f%%", tloss, 100 * *test_acc);
    printf(" | %.0f img/s | lr %.4g\n", rate, lr);
    clg_metrics_row row = {epoch, r->step, loss, acc, tloss, *test_acc, rate, lr};
    char err[512];
    if (r->metrics && clg_metrics_append(r->metrics, &row, err, sizeof err) != CLG_OK) return cli_fail("train", "%s", err);
    return train_tb_epoch(r, &row);
}

static int one_epoch(train_run *r, int epoch, double *test_acc)
{
    int epochs = clg_model_get_train(r->m)->epochs;
    double lr = clg_model_lr_at(r->m, clg_model_get_optim(r->m)->schedule_steps ? r->step : epoch);
    if (clg_optimizer_set_lr(r->opt, lr) != CLG_OK) return cli_fail("train", "%s", clg_device_error(r->dev));
    int64_t nb = clg_loader_num_batches(r->train), start = clg_loader_get_position(r->train).batch;
    int64_t total = (r->max_steps && r->max_steps < nb ? r->max_steps : nb) - start;
    char title[48];
    snprintf(title, sizeof title, "epoch %d/%d", epoch + 1, epochs);
    clg_progress *bar = clg_progress_new(stdout, total > 0 ? total : 1, title, 0);
    clg_meter_reset(r->meter);
    train_tb_epoch_start(r);
    clg_status st = train_epoch(r, bar);
    clg_progress_end(bar, r->meter);
    double rate = clg_progress_rate(bar);
    clg_progress_free(bar);
    if (st != CLG_OK) return cli_fail("train", "%s", train_step_error(r));
    int rc = report(r, epoch + 1, rate, clg_optimizer_lr(r->opt), test_acc);
    return rc ? rc : r->out ? save(r) : 0;
}

int train_epochs(train_run *r)
{
    int epochs = clg_model_get_train(r->m)->epochs;
    /* a checkpoint's epoch may be any counter up to 2^53: compared as it is */
    int64_t at = (int64_t)clg_loader_get_position(r->train).epoch;
    int first = at < epochs ? (int)at : epochs;
    double test_acc = NAN;
    if (at >= epochs) {
        printf("the checkpoint is at epoch %lld of %d: nothing to train\n", (long long)at, epochs);
        /* --out is still written (the same state), so that the line below is true */
        int rc = r->out ? save(r) : 0;
        if (rc) return rc;
    }
    for (int e = first; e < epochs; e++) {
        int rc = one_epoch(r, e, &test_acc);
        if (rc) return rc;
    }
    if (!isnan(test_acc)) printf("test accuracy: %.2f%% after %d epochs\n", 100 * test_acc, epochs);
    clg_dist_stats ds = clg_dist_get_stats(r->dist);
    if (r->world > 1 && ds.steps > 0)   /* what the ranks' gradient exchange cost */
        printf("data-parallel: %.2f MB of gradients per step and rank in %d bucket%s; all-reduce %.2f ms per step, "
               "%.2f ms of it not hidden behind backward\n", (double)ds.bytes / 1e6, ds.buckets, ds.buckets > 1 ? "s" : "",
               1e3 * ds.reduce_seconds / (double)ds.steps, 1e3 * ds.exposed_seconds / (double)ds.steps);
    if (r->out) printf("checkpoint: %s\n", r->out);
    return 0;
}
