/* fashion_common.c: see fashion_common.h. */
#include "fashion_common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fashion_parse(const char *prog, int argc, char **argv, fashion_options *o)
{
    static const struct option longs[] = {
        {"device", required_argument, 0, 'd'}, {"data", required_argument, 0, 'D'}, {"out", required_argument, 0, 'o'},
        {"metrics", required_argument, 0, 'm'}, {"epochs", required_argument, 0, 'e'},
        {"batch", required_argument, 0, 'b'}, {"lr", required_argument, 0, 'l'}, {"seed", required_argument, 0, 's'},
        {"steps", required_argument, 0, 'n'}, {"workers", required_argument, 0, 'w'},
        {"recipe", required_argument, 0, 'r'}, {"graph", no_argument, 0, 'g'}, {"precision", required_argument, 0, 'p'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    bool epochs_given = false;
    char best_note[40] = "";
    if (o->epochs_best)
        snprintf(best_note, sizeof best_note, " (%d with --recipe best)", o->epochs_best);
    for (int c; (c = getopt_long(argc, argv, "h", longs, NULL)) != -1;) {
        switch (c) {
        case 'd': o->device = optarg; break;
        case 'D': o->data = optarg; break;
        case 'o': o->out = optarg; break;
        case 'm': o->metrics = optarg; break;
        case 'e': o->epochs = atoi(optarg), epochs_given = true; break;
        case 'b': o->batch = atoll(optarg); break;
        case 'l': o->lr = atof(optarg); break;
        case 's': o->seed = strtoull(optarg, NULL, 10); break;
        case 'n': o->steps = atoll(optarg); break;
        case 'w': o->workers = atoi(optarg); break;
        case 'r': o->recipe = optarg; break;
        case 'g': o->graph = true; break;
        case 'p':
            if (clg_precision_parse(optarg, &o->precision)) break;
            fprintf(stderr, "%s: --precision %s: want float32, mixed or mixed-bf16\n", prog, optarg);
            return 2;
        default:
            printf("usage: %s [--device SPEC] [--data DIR] [--epochs N] [--batch N] [--lr X] [--seed N]\n"
                   "       [--steps N] [--workers N] [--out FILE.safetensors] [--metrics FILE.csv] [--graph]\n"
                   "       [--precision float32|mixed|mixed-bf16]%s\n"
                   "defaults: --epochs %d%s --batch %lld --lr %g --seed %llu; Fashion-MNIST from\n"
                   "$CLG_FASHION_MNIST_DIR or %s; the device from $CLG_DEVICE or the first GPU.\n",
                   prog, o->recipe ? " [--recipe reference|best]" : "", o->epochs, best_note, (long long)o->batch, o->lr,
                   (unsigned long long)o->seed, CLG_FASHION_MNIST_DEFAULT_DIR);
            return c == 'h' ? 0 : 2;
        }
    }
    if (!epochs_given && o->epochs_best && o->recipe && !strcmp(o->recipe, "best")) o->epochs = o->epochs_best;
    if (optind < argc || o->epochs < 1 || o->batch < 1 || !(o->lr > 0) || o->workers < 1 || o->steps < 0) {
        fprintf(stderr, "%s: epochs, batch, lr and workers must be positive (try --help)\n", prog);
        return 2;
    }
    return -1;
}

static clg_loader *make_loader(clg_device *dev, clg_dataset *ds, const fashion_options *o, bool train, bool augment)
{
    static const float mean = 0.2860f, std = 0.3530f;
    clg_loader_config cfg = clg_loader_defaults(o->batch);
    cfg.shuffle = train;
    cfg.seed = o->seed;
    cfg.workers = o->workers;
    cfg.scale = 1.0f / 255;
    cfg.norm_channels = 1;
    cfg.mean = &mean;
    cfg.std = &std;
    cfg.crop_padding = augment ? 2 : 0;
    cfg.hflip = augment;
    clg_loader *l = NULL;
    return clg_loader_new(dev, ds, &cfg, &l) == CLG_OK ? l : NULL;
}

int fashion_open(const char *prog, const fashion_options *o, bool augment, fashion_data *d)
{
    *d = (fashion_data){0};
    if (clg_device_open(o->device, &d->dev) != CLG_OK) {
        fprintf(stderr, "%s: %s\n", prog, clg_device_error(d->dev));
        return 1;
    }
    const clg_device_info *in = clg_device_get_info(d->dev);
    printf("device: %s (%s, driver %s)\n", in->name, in->platform, in->driver);
    clg_manual_seed(d->dev, o->seed);
    char err[1024];
    if (clg_dataset_fashion_mnist(o->data, true, &d->train_set, err, sizeof err) != CLG_OK ||
        clg_dataset_fashion_mnist(o->data, false, &d->test_set, err, sizeof err) != CLG_OK) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return 1;
    }
    d->train = make_loader(d->dev, d->train_set, o, true, augment);
    d->test = d->train ? make_loader(d->dev, d->test_set, o, false, false) : NULL;
    if (!d->test) {
        fprintf(stderr, "%s: %s\n", prog, clg_device_error(d->dev));
        return 1;
    }
    return 0;
}

void fashion_close(fashion_data *d)
{
    if (clg_device_profiling(d->dev)) clg_device_profile_print(d->dev, stdout);   /* CLG_PROFILE=1 */
    clg_loader_free(d->train);
    clg_loader_free(d->test);
    clg_dataset_free(d->train_set);
    clg_dataset_free(d->test_set);
    clg_device_close(d->dev);
}

int fashion_report(const char *prog, const fashion_options *o, fashion_data *d, clg_module *model, int epoch,
                   int64_t steps_done, clg_meter *meter, double rate, double lr, double *test_acc)
{
    double train_loss = 0, train_acc = 0, test_loss = 0;
    if (clg_meter_read(meter, &train_loss, &train_acc) != CLG_OK ||
        clg_evaluate(model, d->test, &test_loss, test_acc, NULL, 0) != CLG_OK) {
        fprintf(stderr, "%s: %s\n", prog, clg_device_error(d->dev));
        return 1;
    }
    printf("epoch %d/%d: train loss %.4f acc %.2f%% | test loss %.4f acc %.2f%% | %.0f img/s | lr %.4g\n", epoch,
           o->epochs, train_loss, 100 * train_acc, test_loss, 100 * *test_acc, rate, lr);
    clg_metrics_row row = {epoch, steps_done, train_loss, train_acc, test_loss, *test_acc, rate, lr};
    char err[512];
    if (o->metrics && clg_metrics_append(o->metrics, &row, err, sizeof err) != CLG_OK) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return 1;
    }
    return 0;
}

clg_status fashion_skip_rest(clg_loader *loader)
{
    clg_loader_position pos = clg_loader_get_position(loader);
    return clg_loader_set_position(loader, (clg_loader_position){pos.epoch + 1, 0, pos.seed});
}

/* One epoch: for every batch, one training step: zero the gradients, forward, the
 * mean cross-entropy, backward, the optimizer's update, and the running loss and
 * accuracy (clg_trainer_step; with --graph the step is captured once and replayed). */
clg_status fashion_train_epoch(clg_module *model, clg_trainer *trainer, clg_loader *loader, clg_meter *meter,
                               clg_progress *bar, int64_t max_steps)
{
    clg_device *dev = clg_module_device(model);
    clg_module_train(model, true);
    for (int64_t step = 0; !max_steps || step < max_steps; step++) {
        clg_scope_begin(dev);                                  /* the step's tensors go at its end */
        clg_tensor *x, *y;
        if (clg_loader_next(loader, &x, &y) != CLG_OK) return clg_device_last_status(dev);
        if (!x) {                                              /* the epoch is over */
            clg_scope_end(dev);
            return CLG_OK;
        }
        if (clg_trainer_step(trainer, x, y, NULL) != CLG_OK) return clg_device_last_status(dev);
        clg_progress_step(bar, meter, clg_tensor_dim(x, 0));
        clg_scope_end(dev);
    }
    return fashion_skip_rest(loader);
}
