/* cli_data.c: datasets and text named on the command line, batches shaped for the
 * model, and the evaluation pass that train and eval share. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

bool cli_is_csv(const char *spec)
{
    size_t n = strlen(spec);
    return n > 4 && !strcmp(spec + n - 4, ".csv");
}

/* <dir>/<base>.gz, else <dir>/<base>. */
static bool find_idx(const char *dir, const char *base, char *path, size_t len)
{
    struct stat sb;
    snprintf(path, len, "%s/%s.gz", dir, base);
    if (stat(path, &sb) == 0) return true;
    snprintf(path, len, "%s/%s", dir, base);
    return stat(path, &sb) == 0;
}

static clg_status idx_dir(const char *dir, bool train, clg_dataset **out, char *err, size_t errlen)
{
    char x[4200], y[4200], bx[64], by[64];
    snprintf(bx, sizeof bx, "%s-images-idx3-ubyte", train ? "train" : "t10k");
    snprintf(by, sizeof by, "%s-labels-idx1-ubyte", train ? "train" : "t10k");
    if (!find_idx(dir, bx, x, sizeof x) || !find_idx(dir, by, y, sizeof y)) {
        snprintf(err, errlen, "%s: no %s[.gz] and %s[.gz] in this directory", dir, bx, by);
        return CLG_ERR_IO;
    }
    return clg_dataset_idx(x, y, out, err, errlen);
}

static clg_status open_spec(const char *spec, bool train, const clg_model *m, clg_dataset **out, char *err,
                            size_t errlen)
{
    struct stat sb;
    if (!strcmp(spec, "fashion-mnist")) return clg_dataset_fashion_mnist(NULL, train, out, err, errlen);
    if (cli_is_csv(spec)) {
        clg_csv_options o = {.label_column = clg_model_get_data(m)->label_column, .header = -1};
        return clg_dataset_csv(spec, &o, out, err, errlen);
    }
    if (stat(spec, &sb) == 0 && S_ISDIR(sb.st_mode)) return idx_dir(spec, train, out, err, errlen);
    int e = stat(spec, &sb) == 0 ? 0 : errno;
    snprintf(err, errlen, "%s: %s", spec, !e ? "not fashion-mnist, a directory of IDX files or a .csv file"
                                          : e == ENOENT ? "no such file or directory"
                                          : e == ELOOP  ? "a loop of symbolic links"
                                                        : strerror(e));
    return CLG_ERR_IO;
}

/* The samples must fill the model's input and the labels fit its outputs. */
static clg_status fits(const char *spec, clg_dataset *ds, const clg_model *m, char *err, size_t errlen)
{
    int64_t in = clg_model_input_numel(m), outs = clg_model_outputs(m);
    if (clg_dataset_sample_numel(ds) != in)
        snprintf(err, errlen, "%s: samples of %lld values do not fit the model's input of %lld", spec,
                 (long long)clg_dataset_sample_numel(ds), (long long)in);
    else if (clg_dataset_num_classes(ds) > outs)
        snprintf(err, errlen, "%s: labels reach %d, the model has %lld outputs", spec, clg_dataset_num_classes(ds) - 1,
                 (long long)outs);
    else if (clg_dataset_length(ds) < 1)
        snprintf(err, errlen, "%s: no samples", spec);
    else
        return CLG_OK;
    return CLG_ERR_FORMAT;
}

clg_status cli_dataset(const char *spec, bool train, const clg_model *m, clg_dataset **out, char *err, size_t errlen)
{
    *out = NULL;
    clg_status st = open_spec(spec, train, m, out, err, errlen);
    if (st == CLG_OK && (st = fits(spec, *out, m, err, errlen)) != CLG_OK) {
        clg_dataset_free(*out);
        *out = NULL;
    }
    return st;
}

clg_status cli_test_dataset(const clg_model *m, bool csv_itself, clg_dataset **out, char *err, size_t errlen)
{
    const clg_model_data *d = clg_model_get_data(m);
    *out = NULL;
    if (d->test[0]) return cli_dataset(d->test, false, m, out, err, errlen);
    if (cli_is_csv(d->dataset) && !csv_itself) return CLG_OK;
    return cli_dataset(d->dataset, false, m, out, err, errlen);
}

const char *cli_text_path(const char *spec)
{
    return spec && !strncmp(spec, "text:", 5) ? spec + 5 : NULL;
}

int cli_read_text(const char *cmd, const char *path, clg_text *t)
{
    char err[1024];
    if (clg_text_read(path, t, err, sizeof err) != CLG_OK) return cli_fail(cmd, "%s", err);
    return 0;
}

size_t cli_text_split(size_t len, double holdout) { return len - (size_t)((double)len * holdout); }

clg_tensor *cli_as_input(const clg_model *m, clg_tensor *x)
{
    int64_t shape[CLG_MAX_DIMS];
    int n = clg_model_input(m, shape + 1);
    shape[0] = clg_tensor_dim(x, 0);
    return clg_reshape(x, n + 1, shape);
}

/* Adds the batch's predictions to the confusion counts (reads them back). */
static clg_status count(clg_tensor *out, clg_tensor *y, int64_t *confusion, int64_t classes)
{
    int64_t b = clg_tensor_dim(y, 0);
    int32_t *h = malloc(2 * (size_t)b * sizeof *h);
    clg_status st = h ? CLG_OK : CLG_ERR_OUT_OF_MEMORY;
    if (!st) st = clg_tensor_to_host(clg_argmax(out, 1, false), h, (size_t)b * sizeof *h);
    if (!st) st = clg_tensor_to_host(y, h + b, (size_t)b * sizeof *h);
    for (int64_t i = 0; !st && i < b; i++)
        if (h[b + i] >= 0 && h[b + i] < classes) confusion[h[b + i] * classes + h[i]]++;
    free(h);
    return st;
}

static clg_status eval_pass(clg_module *net, const clg_model *m, clg_loader *l, clg_meter *meter, int64_t *confusion)
{
    clg_device *dev = clg_module_device(net);
    for (;;) {
        clg_scope_begin(dev);
        clg_tensor *x, *y;
        if (clg_loader_next(l, &x, &y) != CLG_OK) break;
        if (!x) {
            clg_scope_end(dev);
            return CLG_OK;
        }
        clg_tensor *out = clg_module_forward(net, cli_as_input(m, x));
        if (clg_meter_add(meter, clg_model_loss(m, out, y), out, y) != CLG_OK) break;
        if (confusion && count(out, y, confusion, clg_model_outputs(m)) != CLG_OK) break;
        clg_scope_end(dev);
    }
    clg_status st = clg_device_last_status(dev);
    clg_scope_end(dev);
    return st ? st : CLG_ERR_OUT_OF_MEMORY;
}

clg_status cli_evaluate(clg_module *net, const clg_model *m, clg_loader *l, double *loss, double *acc,
                        int64_t *confusion)
{
    clg_device *dev = clg_module_device(net);
    clg_meter *meter = clg_meter_new(dev);
    if (!meter) return clg_device_last_status(dev);
    bool training = clg_module_is_training(net);
    clg_module_train(net, false);
    clg_no_grad_begin(dev);
    clg_status st = eval_pass(net, m, l, meter, confusion);
    clg_no_grad_end(dev);
    clg_module_train(net, training);
    if (st == CLG_OK) st = clg_meter_read(meter, loss, acc);
    clg_meter_free(meter);
    return st;
}
