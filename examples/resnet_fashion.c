/* resnet_fashion: a residual network learns Fashion-MNIST.
 *
 *   ./build/examples/resnet_fashion [--epochs 10] [--batch 128] [--lr 0.1] [--steps N] [--graph]
 *
 * The network is examples/models/resnet_fashion.json, a ResNet-20 in the style of He et
 * al.'s CIFAR networks: a 3x3 convolution of 16 with batch norm, three stages of three
 * BasicBlocks (torchvision's: two 3x3 convolutions with batch norm, added to the block's
 * input) of 16, 32 and 64 channels, the second and third stages starting with stride 2
 * and a 1x1-convolution shortcut, global average pooling and a linear layer: 272,186
 * parameters whose names are torchvision's (layer2.0.downsample.0.weight, ...). SGD with
 * momentum 0.9 and weight decay 5e-4, the rate cosine-annealed over the epochs, random
 * crops (padding 2) and flips.
 */
#include <stdio.h>

#include "fashion_common.h"

/* torchvision's ResNet._make_layer: `blocks` BasicBlocks, the first with the stride. */
static clg_module *stage(clg_device *dev, int64_t in, int64_t planes, int stride, int blocks)
{
    clg_module *s = clg_nn_sequential(dev, 0, NULL);
    for (int i = 0; s && i < blocks; i++) {
        clg_module *b = clg_nn_basic_block(dev, i ? planes : in, planes, i ? 1 : stride, false);
        if (!b || clg_sequential_append(s, NULL, b) != CLG_OK) {
            clg_module_free(b);
            clg_module_free(s);
            return NULL;
        }
    }
    return s;
}

static clg_module *make_model(clg_device *dev)
{
    clg_conv2d_params pad1 = {.padding = {1, 1}};
    clg_module *net = clg_nn_sequential(dev, 0, NULL);
    const char *names[] = {"conv1", "bn1", "relu", "layer1", "layer2", "layer3", "pool", "flatten", "fc"};
    clg_module *layers[] = {clg_nn_conv2d(dev, 1, 16, 3, 3, &pad1, false), clg_nn_batch_norm2d(dev, 16, 0, 0),
                            clg_nn_relu(dev), stage(dev, 16, 16, 1, 3), stage(dev, 16, 32, 2, 3), stage(dev, 32, 64, 2, 3),
                            clg_nn_global_avg_pool2d(dev), clg_nn_flatten(dev), clg_nn_linear(dev, 64, 10, true)};
    for (int i = 0; i < 9; i++)
        if (!net || clg_sequential_append(net, names[i], layers[i]) != CLG_OK) {
            clg_module_free(layers[i]);
            clg_module_free(net);
            net = NULL;
        }
    return net;
}

int main(int argc, char **argv)
{
    fashion_options o = {.epochs = 10, .workers = 2, .batch = 128, .lr = 0.1, .seed = 1};
    int rc = fashion_parse("resnet_fashion", argc, argv, &o);
    if (rc >= 0) return rc;
    fashion_data d;
    if (fashion_open("resnet_fashion", &o, true, &d)) return 1;
    clg_module *model = make_model(d.dev);
    clg_tensor *params[128];
    int n = model ? clg_module_parameters(model, params, 128, true) : 0;
    clg_optimizer *opt = n ? clg_sgd_new(n, params, &(clg_sgd_options){.lr = o.lr, .momentum = 0.9, .weight_decay = 5e-4})
                           : NULL;
    clg_lr_schedule cosine = {.kind = CLG_LR_COSINE, .t_max = o.epochs};
    clg_meter *meter = clg_meter_new(d.dev);
    clg_trainer_options to = {.graph = o.graph, .meter = meter, .precision = o.precision};
    clg_trainer *trainer = opt && meter ? clg_trainer_new(model, opt, &to) : NULL;
    if (!trainer) return fprintf(stderr, "resnet_fashion: %s\n", clg_device_error(d.dev)), 1;
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
        if (st != CLG_OK) return fprintf(stderr, "resnet_fashion: %s\n", clg_device_error(d.dev)), 1;
        if (fashion_report("resnet_fashion", &o, &d, model, epoch, epoch * steps, meter, rate, lr, &test_acc)) return 1;
    }
    printf("test accuracy: %.2f%% after %d epochs\n", 100 * test_acc, o.epochs);
    if (o.out && clg_module_save(model, o.out, 0, NULL) != CLG_OK)
        return fprintf(stderr, "resnet_fashion: %s\n", clg_device_error(d.dev)), 1;
    if (o.out) printf("saved the weights to %s\n", o.out);
    clg_trainer_free(trainer);
    clg_meter_free(meter);
    clg_optimizer_free(opt);
    clg_module_free(model);
    fashion_close(&d);
    return 0;
}
