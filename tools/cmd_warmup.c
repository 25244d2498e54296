/* clgrad warmup: compile ahead of time what training and evaluating a model needs, and
 * store it in clgrad's program cache, so that the first real run starts warm.
 *
 * One training step (loader, forward, loss, backward, optimizer) and one evaluation
 * pass of each model run on a batch of zeros, on the device with the parameter
 * binary_cache=on: every program they build is stored. Where binary_cache is off by
 * default (POCL, whose binaries cost a compile of every kernel in a program but which
 * caches the kernels a run compiles itself), this is the one place that pays for
 * clgrad's faster cache: once, here, for example after installing. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static void usage(void)
{
    printf("Usage: clgrad warmup MODEL.json... [--device SPEC]\n"
           "Compiles the kernels that training and evaluating each model file need (one step on a\n"
           "batch of zeros) and stores them in clgrad's program cache (clgrad devices --params:\n"
           "binary_cache), so that the next `clgrad train` or program on this device starts warm.\n");
}

/* A dataset of one batch of zero samples of the model's input shape and label 0. */
static clg_status zeros_dataset(const clg_model *m, int64_t batch, clg_dataset **out, char *err, size_t errlen)
{
    clg_host_array x = {.type = CLG_ELEM_U8}, y = {.type = CLG_ELEM_I32, .ndim = 1, .shape = {batch}};
    x.ndim = 1 + clg_model_input(m, x.shape + 1);
    x.shape[0] = batch;
    x.bytes = (size_t)(batch * clg_model_input_numel(m));
    y.bytes = (size_t)batch * sizeof(int32_t);
    x.data = calloc(1, x.bytes);
    y.data = calloc(1, y.bytes);
    if (!x.data || !y.data) {
        free(x.data);
        free(y.data);
        snprintf(err, errlen, "out of host memory");
        return CLG_ERR_OUT_OF_MEMORY;
    }
    return clg_dataset_from_arrays(&x, &y, (int)clg_model_outputs(m), out, err, errlen);
}

/* The model file's clipping of every trainable gradient, as clgrad train does it. */
static clg_status clip(const clg_model *m, clg_module *net)
{
    double max_norm = clg_model_get_optim(m)->clip_grad_norm;
    int n = max_norm > 0 ? clg_module_parameters(net, NULL, 0, true) : 0;
    clg_tensor **p = n ? malloc((size_t)n * sizeof *p) : NULL;
    if (n && !p) return CLG_ERR_OUT_OF_MEMORY;
    clg_status st = n ? clg_clip_grad_norm(clg_module_parameters(net, p, n, true), p, max_norm, NULL) : CLG_OK;
    free(p);
    return st;
}

/* A model of tokens: one training step on a window of zero bytes [batch, T] (forward,
 * loss, backward, clipping, step), then an evaluation of [1, T] bytes, as clgrad train
 * and eval run them on text. */
static clg_status warm_tokens(clg_device *dev, const clg_model *m, clg_module *net, clg_optimizer *opt)
{
    int64_t in[CLG_MAX_DIMS], n = 0;
    clg_model_input(m, in);
    int streams = (int)clg_model_get_train(m)->batch, window = (int)in[0];
    size_t len = (size_t)streams * (size_t)(window + 1);
    uint8_t *zeros = calloc(len, 1);
    if (!zeros) return CLG_ERR_OUT_OF_MEMORY;
    double nats;
    clg_scope_begin(dev);
    clg_tensor *x, *y, *loss = NULL;
    clg_module_train(net, true);
    clg_optimizer_zero_grad(opt);
    if (clg_text_window(dev, zeros, len, streams, window, 0, &x, &y) == CLG_OK &&
        (loss = clg_model_loss(m, clg_module_forward(net, x), y)) && !clg_backward(loss, NULL) && !clip(m, net))
        clg_optimizer_step(opt);
    clg_status st = clg_device_last_status(dev);
    clg_scope_end(dev);
    if (st == CLG_OK) st = clg_text_loss(net, zeros, (size_t)window + 1, 1, window, &nats, &n);
    free(zeros);
    return st;
}

static int warm_text(clg_device *dev, clg_model *m, const char *path)
{
    clg_module *net = clg_model_build(m, dev);
    clg_optimizer *opt = net ? clg_model_build_optimizer(m, net) : NULL;
    clg_status st = opt ? warm_tokens(dev, m, net, opt) : clg_device_last_status(dev);
    if (st == CLG_OK) st = clg_device_finish(dev);
    int rc = st == CLG_OK ? 0 : cli_fail("warmup", "%s: %s", path, clg_device_error(dev));
    clg_optimizer_free(opt);
    clg_module_free(net);
    clg_model_free(m);
    return rc;
}

/* One training step and one evaluation of model m on dev; 0 or the exit status. */
static int warm_model(clg_device *dev, const char *path)
{
    char err[1024];
    clg_model *m = NULL;
    if (clg_model_read(path, &m, err, sizeof err) != CLG_OK) return cli_fail("warmup", "%s", err);
    if (clg_model_takes_tokens(m)) return warm_text(dev, m, path);
    clg_loader_config tc = clg_model_loader_config(m, true), ec = clg_model_loader_config(m, false);
    clg_dataset *ds = NULL;
    clg_loader *train = NULL, *test = NULL;
    clg_module *net = NULL;
    clg_optimizer *opt = NULL;
    int rc = 0;
    if (zeros_dataset(m, tc.batch_size, &ds, err, sizeof err) != CLG_OK) {
        rc = cli_fail("warmup", "%s: %s", path, err);
        goto done;
    }
    if (clg_loader_new(dev, ds, &tc, &train) || clg_loader_new(dev, ds, &ec, &test) ||
        !(net = clg_model_build(m, dev)) || !(opt = clg_model_build_optimizer(m, net))) {
        rc = cli_fail("warmup", "%s: %s", path, clg_device_error(dev));
        goto done;
    }
    clg_scope_begin(dev);
    clg_tensor *x, *y, *loss = NULL;
    clg_module_train(net, true);
    clg_optimizer_zero_grad(opt);
    if (clg_loader_next(train, &x, &y) == CLG_OK && x &&
        (loss = clg_model_loss(m, clg_module_forward(net, cli_as_input(m, x)), y)) && !clg_backward(loss, NULL))
        clg_optimizer_step(opt);
    double l, acc;
    clg_status st = clg_device_last_status(dev);
    clg_scope_end(dev);
    if (st == CLG_OK) st = cli_evaluate(net, m, test, &l, &acc, NULL);
    if (st == CLG_OK) st = clg_device_finish(dev);
    if (st != CLG_OK) rc = cli_fail("warmup", "%s: %s", path, clg_device_error(dev));
done:
    clg_optimizer_free(opt);
    clg_module_free(net);
    clg_loader_free(test);
    clg_loader_free(train);
    clg_dataset_free(ds);
    clg_model_free(m);
    return rc;
}

int cmd_warmup(int argc, char **argv)
{
    static const struct option longs[] = {{"device", 1, 0, 'd'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char *spec = NULL;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, ":h", longs, NULL)) != -1;) {
        if (c == 'h') return usage(), 0;
        if (c != 'd') return cli_bad_option("warmup", c, argv);
        spec = optarg;
    }
    if (optind >= argc) return cli_usage_error("warmup", "give one or more MODEL files");
    clg_device *dev = cli_open_device("warmup", spec, true);
    if (!dev) return 1;
    if (clg_device_set_param(dev, "binary_cache", "on") != CLG_OK) {
        int rc = cli_fail("warmup", "%s", clg_device_error(dev));
        clg_device_close(dev);
        return rc;
    }
    int rc = 0;
    for (int i = optind; i < argc && !rc; i++) rc = warm_model(dev, argv[i]);
    if (!rc) {
        clg_program_stats s = clg_device_program_stats(dev);
        const char *dir = clg_device_cache_dir(dev);
        printf("%llu programs compiled and stored, %llu already cached, in %.1f s; cache: %s\n",
               (unsigned long long)s.built_from_source, (unsigned long long)s.loaded_from_cache, s.compile_seconds,
               dir ? dir : "disabled (CLG_CACHE_DIR=off): nothing stored");
        if (!dir) rc = 1;
    }
    clg_device_close(dev);
    return rc;
}
