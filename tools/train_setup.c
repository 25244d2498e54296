/* train_setup.c: everything `clgrad train` needs before its first step, in the order
 * that makes runs reproducible: seed, build (initial weights from the seeded
 * generator), pretrained weights, freezing, the optimizer over what stays trainable,
 * the data (loaders, or the text of a model of tokens: train_text.c), then the
 * checkpoint to resume (which restores the generator and optimizer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_run.h"

/* The layer that takes the most of path's tensors under their own names (a state dict
 * saved from one module, nanoGPT's GPT or a ResNet stage, has no layer prefix); NULL when
 * none takes any. Strict loads change nothing unless all of a layer matches, and their
 * reports say how many would match: a layer that takes the whole file is loaded at once. */
static clg_module *layer_for(train_run *r, const char *path, bool *loaded)
{
    clg_module *best = NULL;
    int most = 0;
    *loaded = false;
    for (int i = 0; i < clg_module_child_count(r->net) && !*loaded; i++) {
        clg_load_report rep;
        clg_module *layer = clg_module_child_at(r->net, i);
        *loaded = clg_module_load(layer, path, true, &rep) == CLG_OK;
        int match = clg_module_state(layer, NULL, 0) - rep.nmissing - rep.nmismatched;
        if (*loaded || match > most) {
            most = match;
            best = layer;
        }
        clg_load_report_free(&rep);
    }
    return best;
}

static int init_from(train_run *r, const char *path)
{
    clg_load_report rep;
    if (clg_module_load(r->net, path, false, &rep) != CLG_OK) {
        clg_load_report_free(&rep);
        return cli_fail("train", "%s", clg_device_error(r->dev));
    }
    bool whole = false;
    clg_module *layer = rep.loaded ? NULL : layer_for(r, path, &whole);
    if (layer) {   /* into the layer that takes most (again, when it took all, for the report) */
        clg_load_report_free(&rep);
        if (clg_module_load(layer, path, false, &rep) != CLG_OK) {
            clg_load_report_free(&rep);
            return cli_fail("train", "%s", clg_device_error(r->dev));
        }
    }
    char text[4096];
    if (layer) printf("init: %d tensors loaded into layer %s from %s\n", rep.loaded, clg_module_name(layer), path);
    else printf("init: %d tensors loaded from %s\n", rep.loaded, path);
    if (rep.nmissing + rep.nunexpected + rep.nmismatched) printf("%s", clg_load_report_text(&rep, text, sizeof text));
    int loaded = rep.loaded;
    clg_load_report_free(&rep);
    return loaded ? 0 : cli_fail("train", "%s: no tensor matches the model (nothing to start from)", path);
}

/* "0,conv1": layer names (indices for unnamed layers). */
static int freeze(train_run *r, const char *list)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        clg_module *layer = clg_module_child(r->net, tok);
        if (!layer) {
            char names[512] = "";
            for (int i = 0; i < clg_module_child_count(r->net) && strlen(names) < 400; i++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                         clg_module_name(clg_module_child_at(r->net, i)));
            return cli_fail("train", "--freeze: no layer \"%s\" (layers: %s)", tok, names);
        }
        clg_module_set_trainable(layer, false);
    }
    printf("frozen: %s (%lld of %lld parameters train)\n", list, (long long)clg_module_numel(r->net, true),
           (long long)clg_module_numel(r->net, false));
    return 0;
}

/* Exact resume needs the batch size, seed, learning rate and precision the checkpoint
 * was trained with: a change would quietly make "exact" a lie, so it is refused, naming it. */
static int same_settings(train_run *r, const char *path)
{
    char err[1024], *desc = NULL;
    clg_model *was = NULL;
    if (clg_checkpoint_info(path, NULL, &desc, err, sizeof err) != CLG_OK) return cli_fail("train", "%s", err);
    if (!desc) return 0;   /* a checkpoint without its model: nothing to compare */
    char name[1100];   /* a position in the embedded model, not in the checkpoint's bytes */
    snprintf(name, sizeof name, "%s (its model description)", path);
    clg_status st = clg_model_parse(desc, strlen(desc), name, &was, err, sizeof err);
    free(desc);
    if (st != CLG_OK) return cli_fail("train", "%s", err);
    const clg_model_train *a = clg_model_get_train(was), *b = clg_model_get_train(r->m);
    double lra = clg_model_get_optim(was)->lr, lrb = clg_model_get_optim(r->m)->lr;
    int rc = 0;
    if (a->batch != b->batch)
        rc = cli_fail("train", "--resume %s: trained with batch %lld, this run has %lld; an exact resume needs the same "
                      "(drop --batch, or start afresh with --init)", path, (long long)a->batch, (long long)b->batch);
    else if (a->seed != b->seed)
        rc = cli_fail("train", "--resume %s: trained with seed %llu, this run has %llu; an exact resume needs the same "
                      "(drop --seed, or start afresh with --init)", path, (unsigned long long)a->seed,
                      (unsigned long long)b->seed);
    else if (lra != lrb)
        rc = cli_fail("train", "--resume %s: trained with lr %g, this run has %g; an exact resume needs the same "
                      "(drop --lr, or start afresh with --init)", path, lra, lrb);
    else if (a->precision != b->precision)
        rc = cli_fail("train", "--resume %s: trained with precision %s, this run has %s; an exact resume needs the "
                      "same (give --precision %s)", path, clg_precision_name(a->precision),
                      clg_precision_name(b->precision), clg_precision_name(a->precision));
    clg_model_free(was);
    return rc;
}

static int resume(train_run *r, const char *path)
{
    if (same_settings(r, path)) return 1;
    clg_train_state ts;
    if (clg_checkpoint_load(r->net, r->opt, path, &ts, NULL) != CLG_OK)
        return cli_fail("train", "%s", clg_device_error(r->dev));
    int64_t was = ts.world_size > 1 ? ts.world_size : 1;
    if (was != r->world)   /* shards, and so the sums' order, would differ: not the same run */
        return cli_fail("train", "--resume %s: trained on %lld rank%s, this run has %d; an exact resume needs the same "
                        "(mpirun -np %lld)", path, (long long)was, was > 1 ? "s" : "", r->world, (long long)was);
    r->step = ts.step;
    r->text.epoch = ts.epoch, r->text.next = ts.batch;   /* text: no loader, windows in order */
    clg_grad_scaler *sc = clg_trainer_scaler(r->trainer);   /* mixed precision's loss scale */
    if (!sc != !(ts.loss_scale > 0))
        return cli_fail("train", "--resume %s: %s loss scaling, this run %s (give the same --precision)", path,
                        ts.loss_scale > 0 ? "trained with" : "trained without", sc ? "has it" : "has none");
    if (sc && clg_grad_scaler_set_state(sc, ts.loss_scale, ts.loss_scale_growth))
        return cli_fail("train", "%s", clg_device_error(r->dev));
    /* a position past this data's epoch: another dataset, or a damaged checkpoint */
    if (r->train && ts.batch > clg_loader_num_batches(r->train))
        return cli_fail("train", "--resume %s: it stopped at batch %lld of epoch %lld, past the %lld batches of an "
                        "epoch of this data (another dataset or batch size?)", path, (long long)ts.batch,
                        (long long)ts.epoch + 1, (long long)clg_loader_num_batches(r->train));
    if (r->text_mode && ts.batch > r->text.windows)
        return cli_fail("train", "--resume %s: it stopped at window %lld of epoch %lld, past the %lld windows of an "
                        "epoch of this text (another text or batch size?)", path, (long long)ts.batch,
                        (long long)ts.epoch + 1, (long long)r->text.windows);
    if (r->train && clg_loader_set_position(r->train, (clg_loader_position){(uint64_t)ts.epoch, ts.batch, ts.loader_seed}))
        return cli_fail("train", "--resume %s: %s", path, clg_device_error(r->dev));
    printf("resumed from %s: epoch %lld, batch %lld, step %lld\n", path, (long long)ts.epoch + 1,
           (long long)ts.batch, (long long)ts.step);
    return 0;
}

static int data(train_run *r)
{
    char err[1024];
    const clg_model_data *d = clg_model_get_data(r->m);
    if (cli_dataset(d->dataset, true, r->m, &r->train_set, err, sizeof err) ||
        (r->rank == 0 && cli_test_dataset(r->m, false, &r->test_set, err, sizeof err)))   /* rank 0 evaluates */
        return cli_fail("train", "%s", err);
    clg_loader_config tc = clg_model_loader_config(r->m, true), ec = clg_model_loader_config(r->m, false);
    tc.shard_index = r->rank;   /* this rank's part of every batch */
    tc.shard_count = r->world;
    if (clg_loader_new(r->dev, r->train_set, &tc, &r->train) ||
        (r->test_set && clg_loader_new(r->dev, r->test_set, &ec, &r->test)))
        return cli_fail("train", "%s", clg_device_error(r->dev));
    if (r->test_set) printf("data: %lld training samples, %lld test samples\n",
                            (long long)clg_dataset_length(r->train_set), (long long)clg_dataset_length(r->test_set));
    else printf("data: %lld training samples, no test set (give --test-data)\n",
                (long long)clg_dataset_length(r->train_set));
    return 0;
}

/* The trainable parameters (after --freeze), which the optimizer steps and clipping scales. */
static int trainable(train_run *r)
{
    int n = clg_module_parameters(r->net, NULL, 0, true);
    if (!(r->params = malloc(((size_t)n + 1) * sizeof *r->params))) return cli_fail("train", "out of host memory");
    r->nparams = clg_module_parameters(r->net, r->params, n, true);
    return 0;
}

/* The layers and their output shapes: from a forward pass of zeros, or for a model of
 * tokens (which zeros of float cannot feed) from the model file's shape inference. */
static int summary(train_run *r)
{
    if (clg_model_takes_tokens(r->m)) return cli_print_layers(r->m), 0;
    int64_t shape[CLG_MAX_DIMS + 1] = {1};
    int n = clg_model_input(r->m, shape + 1);
    if (clg_module_summary(r->net, n + 1, shape, stdout) != CLG_OK) return cli_fail("train", "%s", clg_device_error(r->dev));
    return 0;
}

/* Every rank starts from rank 0's weights (they agree anyway: same seed, same
 * generator; the broadcast makes it a fact, whatever the devices). */
static int same_start(train_run *r)
{
    if (r->world == 1) return 0;
    int n = clg_module_parameters(r->net, NULL, 0, false);
    clg_tensor **all = malloc(((size_t)n + 1) * sizeof *all);
    if (!all) return cli_fail("train", "out of host memory");
    n = clg_module_parameters(r->net, all, n, false);
    clg_status st = clg_dist_broadcast(r->dist, 1, n, all);
    free(all);
    return st ? cli_fail("train", "%s", clg_dist_error(r->dist)) : 0;
}

static clg_tensor *as_input(void *user, clg_tensor *x) { return cli_as_input(user, x); }

/* The model file's loss; a model of tokens gives logits [B, T, 256] for bytes [B, T],
 * which the loss and the meter take flat. */
static clg_tensor *model_loss(void *user, clg_tensor **out, clg_tensor **y)
{
    const clg_model *m = user;
    if (clg_model_get_data(m)->text[0]) {
        *out = clg_reshape(*out, CLG_SHAPE(-1, 256));
        *y = clg_reshape(*y, CLG_SHAPE(-1));
    }
    return clg_model_loss(m, *out, *y);
}

static int make_trainer(const train_opts *o, train_run *r)
{
    clg_trainer_options to = {.graph = o->graph, .clip_grad_norm = clg_model_get_optim(r->m)->clip_grad_norm,
                              .meter = r->meter, .input = as_input, .loss = model_loss, .user = r->m,
                              .precision = clg_model_get_train(r->m)->precision,
                              .dist = r->world > 1 ? r->dist : NULL};
    if (!(r->trainer = clg_trainer_new(r->net, r->opt, &to))) return cli_fail("train", "%s", clg_device_error(r->dev));
    return 0;
}

int train_setup(const train_opts *o, train_run *r, clg_model *m)
{
    r->m = m;
    if (!(r->dev = cli_open_device("train", o->device, true))) return 1;
    clg_manual_seed(r->dev, clg_model_get_train(m)->seed);
    if (!(r->net = clg_model_build(m, r->dev))) return cli_fail("train", "%s", clg_device_error(r->dev));
    int rc = o->init ? init_from(r, o->init) : 0;
    if (!rc && o->freeze) rc = freeze(r, o->freeze);
    if (!rc) rc = same_start(r);
    if (!rc && o->sync_bn && clg_dist_sync_batch_norm(r->dist, r->net, NULL))
        rc = cli_fail("train", "--sync-bn: %s", clg_dist_error(r->dist));
    if (rc || (rc = trainable(r))) return rc;
    if (!(r->opt = clg_model_build_optimizer(m, r->net)) || !(r->meter = clg_meter_new(r->dev)))
        return cli_fail("train", "%s", clg_device_error(r->dev));
    if ((rc = make_trainer(o, r))) return rc;
    r->text_mode = clg_model_get_data(m)->text[0] != '\0';
    if (r->text_mode && r->world > 1)
        return cli_fail("train", "text is not split between ranks yet: train a model of tokens on one rank");
    if ((rc = r->text_mode ? train_text_data(r) : data(r)) || (o->resume && (rc = resume(r, o->resume)))) return rc;
    return summary(r);
}

void train_teardown(train_run *r)
{
    if (r->dev && clg_device_profiling(r->dev)) clg_device_profile_print(r->dev, stdout);
    clg_loader_free(r->train);
    clg_loader_free(r->test);
    clg_dataset_free(r->train_set);
    clg_dataset_free(r->test_set);
    clg_text_free(&r->text.corpus);
    free(r->params);
    clg_trainer_free(r->trainer);
    clg_meter_free(r->meter);
    clg_optimizer_free(r->opt);
    clg_module_free(r->net);
    clg_model_free(r->m);
    clg_device_close(r->dev);
}
