/* train_text.c: `clgrad train` on text, for a model of tokens (its first layer an
 * embedding). The bytes before the held-out tail are cut into `batch` contiguous
 * streams, and each epoch reads them in windows of the model's sequence length T, in
 * order: window w + 1 of a stream continues window w, so the recurrent layers carry
 * their state from one to the next (detached: truncated backpropagation through time),
 * and start from zeros at every epoch. Per step only the window's bytes go to the
 * device. After every epoch the held-out tail is read as one sequence from a zero
 * state, and its loss per byte is printed beside the training loss (and in bits per
 * byte, loss / ln 2). Checkpoints fall at epoch ends, where the state is zeros anyway,
 * so a resumed run continues exactly. */
#include <math.h>
#include <stdio.h>

#include "train_run.h"

int train_text_data(train_run *r)
{
    train_text *t = &r->text;
    const clg_model_data *d = clg_model_get_data(r->m);
    int64_t in[CLG_MAX_DIMS];
    clg_model_input(r->m, in);
    t->streams = (int)clg_model_get_train(r->m)->batch;
    t->window = (int)in[0];
    if (cli_read_text("train", d->text, &t->corpus)) return 1;
    t->split = cli_text_split(t->corpus.len, d->holdout);
    t->windows = clg_text_windows(t->split, t->streams, t->window, false);
    if (t->windows < 1)
        return cli_fail("train", "%s: %zu bytes to train on make no window: %d streams (the batch) of %d bytes (the "
                        "model's input) and the byte after need %lld", d->text, t->split, t->streams, t->window,
                        (long long)t->streams * (t->window + 1));
    printf("data: text %s: %zu bytes in %d file%s; the first %zu as %d streams of %lld windows of %d bytes, "
           "%zu held out\n", d->text, t->corpus.len, t->corpus.files, t->corpus.files == 1 ? "" : "s", t->split,
           t->streams, (long long)t->windows, t->window, t->corpus.len - t->split);
    return 0;
}

/* Window w: forward, the mean loss per byte, backward, clipping, step. */
static clg_status text_step(train_run *r, int64_t w)
{
    train_text *t = &r->text;
    clg_tensor *x, *y;
    clg_status st = clg_text_window(r->dev, t->corpus.bytes, t->split, t->streams, t->window, w, &x, &y);
    if (st == CLG_OK && clg_model_get_optim(r->m)->schedule_steps)   /* a schedule over steps: this step's rate */
        st = clg_optimizer_set_lr(r->opt, clg_model_lr_at(r->m, r->step));
    if (st != CLG_OK) return st;
    st = clg_trainer_step(r->trainer, x, y, NULL);   /* the loss flattens [B, T, 256] (train_setup.c) */
    if (st == CLG_OK) r->step++;
    return st;
}

/* Windows [from, to) of the epoch, from a zero state carried from window to window. */
static clg_status text_windows(train_run *r, int64_t from, int64_t to, clg_progress *bar)
{
    clg_module_train(r->net, true);
    clg_text_model_stateful(r->net, true);
    clg_text_model_reset(r->net);
    int64_t bytes = (int64_t)r->text.streams * r->text.window;
    for (int64_t w = from; w < to; w++) {
        clg_scope_begin(r->dev);
        clg_status st = text_step(r, w);
        if (st == CLG_OK) clg_progress_step(bar, r->meter, bytes);
        if (st == CLG_OK) st = train_tb_step(r, bytes);
        clg_scope_end(r->dev);
        if (st != CLG_OK) return st;
    }
    return CLG_OK;
}

/* The held-out tail in nats per byte, NaN when there is none (holdout 0): as the
 * training batch's streams when it holds a window for each (the training step's speed),
 * else as one sequence, from a zero state; at most --eval-steps windows of each stream,
 * or --steps in a short run; a long one prints its progress. clg_text_loss_ex leaves the
 * layers not stateful. */
static clg_status held_out(train_run *r, double *nats)
{
    train_text *t = &r->text;
    size_t n = t->corpus.len - t->split;
    *nats = NAN;
    if (n < 2) return CLG_OK;
    int streams = n / (size_t)t->streams > (size_t)t->window ? t->streams : 1;
    int64_t cap = r->eval_steps;
    if (r->max_steps && (!cap || r->max_steps < cap)) cap = r->max_steps;
    cli_eval_progress pr = {.dev = r->dev, .what = "held-out evaluation"};
    clg_text_eval_options eo = {.max_windows = cap, .progress = cli_eval_progress_fn, .user = &pr};
    return clg_text_loss_ex(r->net, t->corpus.bytes + t->split, n, streams, t->window, &eo, nats, NULL);
}

static int text_report(train_run *r, int epoch, double rate, double lr)
{
    double loss = NAN, acc = NAN, held = NAN;
    if (clg_meter_read(r->meter, &loss, &acc) != CLG_OK) return cli_fail("train", "%s", clg_device_error(r->dev));
    if (!isfinite(loss))   /* as train_run.c: a diverged run stops before its checkpoint */
        return cli_fail("train", "the training loss became %s in epoch %d (by step %lld); stopped without saving "
                        "(try a lower learning rate)", isnan(loss) ? "NaN" : "infinite", epoch, (long long)r->step);
    if (held_out(r, &held) != CLG_OK) return cli_fail("train", "%s", clg_device_error(r->dev));
    printf("epoch %d/%d: train loss %.4f (%.3f bits/byte) acc %.2f%%", epoch, clg_model_get_train(r->m)->epochs, loss,
           loss / CLI_LN2, 100 * acc);
    if (!isnan(held)) printf(" | held-out loss %.4f (%.3f bits/byte)", held, held / CLI_LN2);
    printf(" | %.0f bytes/s, %.2f steps/s | lr %.4g\n", rate, rate / ((double)r->text.streams * r->text.window), lr);
    clg_metrics_row row = {epoch, r->step, loss, acc, held, NAN, rate, lr};
    char err[512];
    if (r->metrics && clg_metrics_append(r->metrics, &row, err, sizeof err) != CLG_OK) return cli_fail("train", "%s", err);
    return train_tb_epoch(r, &row);
}

static int text_epoch(train_run *r, int epoch)
{
    train_text *t = &r->text;
    double lr = clg_model_lr_at(r->m, clg_model_get_optim(r->m)->schedule_steps ? r->step : epoch);
    if (clg_optimizer_set_lr(r->opt, lr) != CLG_OK) return cli_fail("train", "%s", clg_device_error(r->dev));
    int64_t from = epoch == t->epoch ? t->next : 0;
    int64_t to = r->max_steps && r->max_steps < t->windows ? r->max_steps : t->windows;
    char title[48];
    snprintf(title, sizeof title, "epoch %d/%d", epoch + 1, clg_model_get_train(r->m)->epochs);
    clg_progress *bar = clg_progress_new(stdout, to > from ? to - from : 1, title, 0);
    clg_progress_set_unit(bar, "bytes");
    clg_meter_reset(r->meter);
    train_tb_epoch_start(r);
    clg_status st = text_windows(r, from, to, bar);
    clg_progress_end(bar, r->meter);
    double rate = clg_progress_rate(bar);
    clg_progress_free(bar);
    if (st != CLG_OK) return cli_fail("train", "%s", train_step_error(r));
    int rc = text_report(r, epoch + 1, rate, clg_optimizer_lr(r->opt));
    return rc ? rc : r->out ? train_save(r, epoch + 1, 0, 0) : 0;
}

int train_text_epochs(train_run *r)
{
    int epochs = clg_model_get_train(r->m)->epochs;
    int64_t at = r->text.epoch;   /* any counter up to 2^53: compared as it is */
    int first = at < epochs ? (int)at : epochs;
    if (at >= epochs) {
        printf("the checkpoint is at epoch %lld of %d: nothing to train\n", (long long)at, epochs);
        int rc = r->out ? train_save(r, at, 0, 0) : 0;
        if (rc) return rc;
    }
    for (int e = first; e < epochs; e++) {
        int rc = text_epoch(r, e);
        if (rc) return rc;
    }
    if (r->out) printf("checkpoint: %s\n", r->out);
    return 0;
}
