/* fashion_mlp: a multilayer perceptron learns Fashion-MNIST, the shape of a PyTorch
 * tutorial: dataset, loader, model, loss, optimizer, training loop, evaluation,
 * checkpoint.
 *
 *   ./build/examples/fashion_mlp                      5 epochs, the reference settings
 *   ./build/examples/fashion_mlp --epochs 1 --device cpu --out mlp.safetensors
 *
 * Reference settings: 784-512-256-10 with ReLU, SGD with momentum 0.9, lr 0.05,
 * batch 128, pixels scaled to [0, 1] and normalised with mean 0.2860 and std 0.3530.
 * PyTorch 1.13 reaches 88.0% test accuracy after 5 epochs with them.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <clgrad.h>

typedef struct options {
    const char *device, *data, *out, *metrics;
    int epochs, workers;
    int64_t batch, steps;      /* steps: stop each epoch early (0: whole epochs) */
    double lr;
    uint64_t seed;
} options;

static int parse(int argc, char **argv, options *o)
{
    *o = (options){.epochs = 5, .workers = 2, .batch = 128, .lr = 0.05, .seed = 1};
    static const struct option longs[] = {
        {"device", required_argument, 0, 'd'}, {"data", required_argument, 0, 'D'}, {"out", required_argument, 0, 'o'},
        {"metrics", required_argument, 0, 'm'}, {"epochs", required_argument, 0, 'e'},
        {"batch", required_argument, 0, 'b'}, {"lr", required_argument, 0, 'l'}, {"seed", required_argument, 0, 's'},
        {"steps", required_argument, 0, 'n'}, {"workers", required_argument, 0, 'w'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    for (int c; (c = getopt_long(argc, argv, "h", longs, NULL)) != -1;) {
        switch (c) {
        case 'd': o->device = optarg; break;
        case 'D': o->data = optarg; break;
        case 'o': o->out = optarg; break;
        case 'm': o->metrics = optarg; break;
        case 'e': o->epochs = atoi(optarg); break;
        case 'b': o->batch = atoll(optarg); break;
        case 'l': o->lr = atof(optarg); break;
        case 's': o->seed = strtoull(optarg, NULL, 10); break;
        case 'n': o->steps = atoll(optarg); break;
        case 'w': o->workers = atoi(optarg); break;
        default:
            printf("usage: fashion_mlp [--device SPEC] [--data DIR] [--epochs N] [--batch N] [--lr X] [--seed N]\n"
                   "                  [--steps N] [--workers N] [--out CKPT] [--metrics FILE.csv]\n");
            return c == 'h' ? 0 : 2;
        }
    }
    if (o->epochs < 1 || o->batch < 1 || !(o->lr > 0) || o->workers < 1) {
        fprintf(stderr, "fashion_mlp: epochs, batch, lr and workers must be positive\n");
        return 2;
    }
    return -1;
}

static clg_module *make_model(clg_device *dev)
{
    return clg_sequential_new(dev, 6, (clg_module *[]){
        clg_nn_flatten(dev),
        clg_nn_linear(dev, 784, 512, true), clg_nn_relu(dev),
        clg_nn_linear(dev, 512, 256, true), clg_nn_relu(dev),
        clg_nn_linear(dev, 256, 10, true)});
}

/* A loader over Fashion-MNIST with the reference transforms. */
static clg_loader *make_loader(clg_device *dev, clg_dataset *ds, const options *o, bool train)
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
    clg_loader *l = NULL;
    return clg_loader_new(dev, ds, &cfg, &l) == CLG_OK ? l : NULL;
}

/* One epoch: forward, loss, backward, update, for every batch. */
static clg_status train_epoch(clg_module *model, clg_optimizer *opt, clg_loader *loader, clg_meter *meter,
                              clg_progress *bar, int64_t max_steps)
{
    clg_device *dev = clg_module_device(model);
    clg_module_train(model, true);
    for (int64_t step = 0; !max_steps || step < max_steps; step++) {
        clg_scope_begin(dev);                                  /* frees the step's tensors at its end */
        clg_tensor *x, *y;
        if (clg_loader_next(loader, &x, &y) != CLG_OK) return clg_device_last_status(dev);
        if (!x) {                                              /* the epoch is over */
            clg_scope_end(dev);
            return CLG_OK;
        }
        clg_optimizer_zero_grad(opt);
        clg_tensor *logits = clg_module_forward(model, x);     /* [B, 10] */
        clg_tensor *loss = clg_cross_entropy(logits, y, CLG_REDUCE_MEAN);
        if (!loss || clg_backward(loss, NULL) != CLG_OK || clg_optimizer_step(opt) != CLG_OK ||
            clg_meter_add(meter, loss, logits, y) != CLG_OK)
            return clg_device_last_status(dev);
        clg_progress_step(bar, meter, clg_tensor_dim(x, 0));
        clg_scope_end(dev);
    }
    /* stopped early: skip the rest of the epoch */
    clg_loader_position pos = clg_loader_get_position(loader);
    return clg_loader_set_position(loader, (clg_loader_position){pos.epoch + 1, 0, pos.seed});
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;

    clg_device *dev;
    if (clg_device_open(o.device, &dev) != CLG_OK) {
        fprintf(stderr, "fashion_mlp: %s\n", clg_device_error(dev));
        clg_device_close(dev);
        return 1;
    }
    printf("device: %s (%s)\n", clg_device_get_info(dev)->name, clg_device_get_info(dev)->platform);
    clg_manual_seed(dev, o.seed);

    char err[1024];
    clg_dataset *train_set = NULL, *test_set = NULL;
    if (clg_dataset_fashion_mnist(o.data, true, &train_set, err, sizeof err) != CLG_OK ||
        clg_dataset_fashion_mnist(o.data, false, &test_set, err, sizeof err) != CLG_OK) {
        fprintf(stderr, "fashion_mlp: %s\n", err);
        return 1;
    }
    clg_loader *train_loader = make_loader(dev, train_set, &o, true);
    clg_loader *test_loader = make_loader(dev, test_set, &o, false);
    clg_module *model = make_model(dev);
    clg_tensor *params[16];
    int n = model ? clg_module_parameters(model, params, 16, true) : 0;
    clg_optimizer *opt = clg_sgd_new(n, params, &(clg_sgd_options){.lr = o.lr, .momentum = 0.9});
    clg_meter *meter = clg_meter_new(dev);
    if (!train_loader || !test_loader || !opt || !meter) {
        fprintf(stderr, "fashion_mlp: %s\n", clg_device_error(dev));
        return 1;
    }
    clg_module_summary(model, CLG_SHAPE(1, 1, 28, 28), stdout);

    int64_t steps = o.steps ? o.steps : clg_loader_num_batches(train_loader), done = 0;
    double test_loss = 0, test_acc = 0;
    for (int epoch = 1; epoch <= o.epochs; epoch++) {
        char title[32];
        snprintf(title, sizeof title, "epoch %d/%d", epoch, o.epochs);
        clg_progress *bar = clg_progress_new(stdout, steps, title, 0);
        clg_meter_reset(meter);
        clg_status st = train_epoch(model, opt, train_loader, meter, bar, o.steps);
        clg_progress_end(bar, meter);
        double train_loss = 0, train_acc = 0, rate = clg_progress_rate(bar);
        clg_progress_free(bar);
        if (st == CLG_OK) st = clg_meter_read(meter, &train_loss, &train_acc);
        if (st == CLG_OK) st = clg_evaluate(model, test_loader, &test_loss, &test_acc, NULL, 0);
        if (st != CLG_OK) {
            fprintf(stderr, "fashion_mlp: %s\n", clg_device_error(dev));
            return 1;
        }
        done += steps;
        printf("epoch %d/%d: train loss %.4f acc %.2f%% | test loss %.4f acc %.2f%% | %.0f img/s\n", epoch, o.epochs,
               train_loss, 100 * train_acc, test_loss, 100 * test_acc, rate);
        clg_metrics_row row = {epoch, done, train_loss, train_acc, test_loss, test_acc, rate, o.lr};
        if (o.metrics && clg_metrics_append(o.metrics, &row, err, sizeof err) != CLG_OK)
            fprintf(stderr, "fashion_mlp: %s\n", err);
    }
    printf("test accuracy: %.2f%%\n", 100 * test_acc);
    if (o.out && clg_module_save(model, o.out, 0, NULL) != CLG_OK) {
        fprintf(stderr, "fashion_mlp: %s\n", clg_device_error(dev));
        return 1;
    }
    if (o.out) printf("saved the weights to %s\n", o.out);
    clg_meter_free(meter);
    clg_optimizer_free(opt);
    clg_module_free(model);
    clg_loader_free(train_loader);
    clg_loader_free(test_loader);
    clg_dataset_free(train_set);
    clg_dataset_free(test_set);
    clg_device_close(dev);
    return 0;
}
