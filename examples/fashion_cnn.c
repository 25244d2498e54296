/* fashion_cnn: a small convolutional network learns Fashion-MNIST.
 *
 *   ./build/examples/fashion_cnn                        the reference CNN, 5 epochs
 *   ./build/examples/fashion_cnn --recipe best          batch norm, augmentation and a
 *                                                       cosine schedule, 15 epochs
 *
 * Reference: conv 5x5 1->16 pad 2, ReLU, max-pool 2, conv 5x5 16->32 pad 2, ReLU,
 * max-pool 2, Linear 1568->128, ReLU, Linear 128->10; SGD momentum 0.9, lr 0.05,
 * batch 128 (PyTorch 1.13: 89.6% test accuracy after 5 epochs).
 * Best: the same with batch norm after each convolution and the hidden Linear,
 * dropout 0.3 before the last layer, random crops (padding 2) and flips, weight decay
 * 5e-4 and cosine annealing of the rate over the epochs (the Fashion-MNIST authors
 * report 91.6% for two conv+pool layers).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fashion_common.h"

static clg_module *make_model(clg_device *dev, bool best)
{
    clg_conv2d_params pad2 = {.padding = {2, 2}};
    if (!best)
        return clg_nn_sequential(dev, 10, (clg_module *[]){
            clg_nn_conv2d(dev, 1, 16, 5, 5, &pad2, true), clg_nn_relu(dev), clg_nn_max_pool2d(dev, 2, 2, 0),  /* 16x14x14 */
            clg_nn_conv2d(dev, 16, 32, 5, 5, &pad2, true), clg_nn_relu(dev), clg_nn_max_pool2d(dev, 2, 2, 0), /* 32x7x7 */
            clg_nn_flatten(dev),
            clg_nn_linear(dev, 1568, 128, true), clg_nn_relu(dev),
            clg_nn_linear(dev, 128, 10, true)});
    return clg_nn_sequential(dev, 15, (clg_module *[]){
        clg_nn_conv2d(dev, 1, 16, 5, 5, &pad2, false), clg_nn_batch_norm2d(dev, 16, 0, 0), clg_nn_relu(dev),
        clg_nn_max_pool2d(dev, 2, 2, 0),
        clg_nn_conv2d(dev, 16, 32, 5, 5, &pad2, false), clg_nn_batch_norm2d(dev, 32, 0, 0), clg_nn_relu(dev),
        clg_nn_max_pool2d(dev, 2, 2, 0),
        clg_nn_flatten(dev),
        clg_nn_linear(dev, 1568, 128, false), clg_nn_batch_norm1d(dev, 128, 0, 0), clg_nn_relu(dev),
        clg_nn_dropout(dev, 0.3),
        clg_nn_linear(dev, 128, 10, true), clg_nn_flatten(dev)});
}

int main(int argc, char **argv)
{
    fashion_options o = {.epochs = 5, .epochs_best = 15, .workers = 2, .batch = 128, .lr = 0.05, .seed = 1,
                         .recipe = "reference"};
    int rc = fashion_parse("fashion_cnn", argc, argv, &o);
    if (rc >= 0) return rc;
    bool best = !strcmp(o.recipe, "best");
    if (!best && strcmp(o.recipe, "reference")) {
        fprintf(stderr, "fashion_cnn: --recipe is reference or best\n");
        return 2;
    }
    fashion_data d;
    if (fashion_open("fashion_cnn", &o, best, &d)) return 1;

    clg_module *model = make_model(d.dev, best);
    clg_tensor *params[32];
    int n = model ? clg_module_parameters(model, params, 32, true) : 0;
    clg_optimizer *opt = clg_sgd_new(n, params, &(clg_sgd_options){.lr = o.lr, .momentum = 0.9,
                                                                   .weight_decay = best ? 5e-4 : 0});
    clg_lr_schedule cosine = {.kind = best ? CLG_LR_COSINE : CLG_LR_CONSTANT, .t_max = o.epochs};
    clg_meter *meter = clg_meter_new(d.dev);
    clg_trainer *trainer = opt && meter ? clg_trainer_new(model, opt, &(clg_trainer_options){.graph = o.graph, .meter = meter, .precision = o.precision})
                                        : NULL;
    if (!trainer) {
        fprintf(stderr, "fashion_cnn: %s\n", clg_device_error(d.dev));
        return 1;
    }
    clg_module_summary(model, CLG_SHAPE(1, 1, 28, 28), stdout);

    int64_t steps = o.steps ? o.steps : clg_loader_num_batches(d.train);
    double test_acc = 0;
    for (int epoch = 1; epoch <= o.epochs; epoch++) {
        double lr = clg_lr_schedule_at(&cosine, o.lr, epoch - 1);
        clg_optimizer_set_lr(opt, lr);
        char title[32];
        snprintf(title, sizeof title, "epoch %d/%d", epoch, o.epochs);
        clg_progress *bar = clg_progress_new(stdout, steps, title, 0);
        clg_meter_reset(meter);
        clg_status st = fashion_train_epoch(model, trainer, d.train, meter, bar, o.steps);
        clg_progress_end(bar, meter);
        double rate = clg_progress_rate(bar);
        clg_progress_free(bar);
        if (st != CLG_OK) {
            fprintf(stderr, "fashion_cnn: %s\n", clg_device_error(d.dev));
            return 1;
        }
        if (fashion_report("fashion_cnn", &o, &d, model, epoch, epoch * steps, meter, rate, lr, &test_acc)) return 1;
    }
    printf("test accuracy: %.2f%% after %d epochs (%s recipe)\n", 100 * test_acc, o.epochs, o.recipe);
    if (o.out) {
        if (clg_module_save(model, o.out, 0, NULL) != CLG_OK) {
            fprintf(stderr, "fashion_cnn: %s\n", clg_device_error(d.dev));
            return 1;
        }
        printf("saved the weights to %s\n", o.out);
    }
    clg_trainer_free(trainer);
    clg_meter_free(meter);
    clg_optimizer_free(opt);
    clg_module_free(model);
    fashion_close(&d);
    return 0;
}
