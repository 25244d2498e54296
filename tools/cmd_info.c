/* clgrad info: what a checkpoint holds, without a device: the network from its model
 * description (layers, output shapes, parameters), the training state, the settings,
 * and the tensors stored. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static void print_settings(const clg_model *m)
{
    const clg_model_optim *o = clg_model_get_optim(m);
    const clg_model_train *t = clg_model_get_train(m);
    const clg_model_data *d = clg_model_get_data(m);
    printf("loss: %s | optimizer: %s, lr %g, schedule %s", clg_model_get_loss(m)->type, o->type, o->lr, o->schedule);
    if (o->clip_grad_norm > 0) printf(", gradient norm clipped to %g", o->clip_grad_norm);
    printf("\n");
    printf("train: batch %lld, epochs %d, seed %llu, workers %d, precision %s\n", (long long)t->batch, t->epochs,
           (unsigned long long)t->seed, t->workers, clg_precision_name(t->precision));
    if (d->text[0]) printf("data: text %s, the last %g held out", d->text, d->holdout);
    else printf("data: %s%s%s | scale %g", d->dataset[0] ? d->dataset : "(none)", d->test[0] ? ", test " : "", d->test,
                d->scale);
    for (int i = 0; i < d->norm_channels; i++) printf("%s%g/%g", i ? ", " : " | normalize mean/std ", d->mean[i], d->std[i]);
    printf("%s%s\n", d->crop_padding ? " | random crops" : "", d->hflip ? " | flips" : "");
    if (clg_model_class_name(m, 0)) {
        printf("classes:");
        for (int i = 0; clg_model_class_name(m, i); i++) printf("%s %s", i ? "," : "", clg_model_class_name(m, i));
        printf("\n");
    }
    if (*clg_model_comment(m)) printf("comment: %s\n", clg_model_comment(m));
}

static void print_state(const clg_train_state *ts)
{
    printf("training state: checkpoint format %d | step %lld | next epoch %lld, batch %lld | %s lr %g "
           "(base %g, schedule %s) | generator seed %llu, offset %llu\n",
           ts->version, (long long)ts->step, (long long)ts->epoch + 1, (long long)ts->batch,
           ts->optimizer[0] ? ts->optimizer : "no optimizer", ts->lr, ts->base_lr,
           ts->lr_schedule[0] ? ts->lr_schedule : "none", (unsigned long long)ts->rng_seed,
           (unsigned long long)ts->rng_offset);
    if (ts->loss_scale > 0)
        printf("loss scale: %g, %lld clean steps since it changed\n", ts->loss_scale, (long long)ts->loss_scale_growth);
    if (ts->world_size > 1)
        printf("data-parallel: trained on %lld ranks (resume with mpirun -np %lld)\n", (long long)ts->world_size,
               (long long)ts->world_size);
}

static void print_tensors(const clg_safetensors *st)
{
    size_t bytes = 0, optim = 0;
    for (int i = 0; i < clg_safetensors_count(st); i++) {
        const clg_safetensors_entry *t = clg_safetensors_at(st, i);
        bytes += t->bytes;
        optim += !strncmp(t->name, "optim.", 6);
    }
    printf("tensors: %d (%zu of optimizer state), %.1f KiB\n", clg_safetensors_count(st), optim, bytes / 1024.0);
}

int cmd_info(int argc, char **argv)
{
    static const struct option longs[] = {{"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, ":h", longs, NULL)) != -1;) {
        if (c != 'h') return cli_bad_option("info", c, argv);
        printf("Usage: clgrad info CKPT\nPrints what a checkpoint holds: the layers with their output shapes and\n"
               "parameters (from its model description), the settings it was trained with, the\n"
               "training state (step, epoch, optimizer, schedule, generator) and its tensors.\n");
        return 0;
    }
    if (optind != argc - 1) return cli_usage_error("info", "give one CKPT");
    const char *path = argv[optind];
    char err[1024];
    clg_safetensors *st;
    if (clg_safetensors_open(path, &st, err, sizeof err) != CLG_OK) return cli_fail("info", "%s", err);
    clg_model *m = NULL;
    clg_train_state ts;
    int rc = clg_safetensors_meta(st, "model") ? cli_checkpoint_model("info", path, &m, &ts) : 0;
    if (!rc) {
        printf("%s\n", path);
        if (m) cli_print_layers(m), print_settings(m), print_state(&ts);
        else printf("weights only: no model description (not a checkpoint of clgrad train)\n");
        print_tensors(st);
    }
    clg_model_free(m);
    clg_safetensors_close(st);
    return rc;
}
