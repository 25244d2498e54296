/* clgrad eval: a checkpoint on a test set: loss, accuracy, accuracy per class and the
 * confusion matrix, as text and (--confusion-png) as a picture. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

typedef struct eval_opts { const char *ckpt, *data, *device, *png, *batch, *workers; } eval_opts;

static int parse(int argc, char **argv, eval_opts *o)
{
    static const struct option longs[] = {{"data", 1, 0, 'D'}, {"device", 1, 0, 'd'}, {"confusion-png", 1, 0, 'p'},
                                          {"batch", 1, 0, 'b'}, {"workers", 1, 0, 'w'}, {"help", 0, 0, 'h'},
                                          {0, 0, 0, 0}};
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, ":h", longs, NULL)) != -1;) {
        if (c == 'h') {
            printf("usage: clgrad eval CKPT [--data fashion-mnist|DIR|FILE.csv] [--confusion-png FILE.png]\n"
                   "         [--batch N] [--workers N] [--device SPEC]\n"
                   "Evaluates a checkpoint of clgrad train on the test split of --data (default: the\n"
                   "data recorded in the checkpoint; a CSV file is used whole): loss, accuracy, accuracy\n"
                   "per class and the confusion matrix (rows: true class, columns: predicted).\n");
            return 0;
        }
        const char **slot = c == 'D' ? &o->data : c == 'd' ? &o->device : c == 'p' ? &o->png
                          : c == 'b' ? &o->batch : c == 'w' ? &o->workers : NULL;
        if (!slot) return cli_bad_option("eval", c, argv);
        *slot = optarg;
    }
    if (optind != argc - 1) return cli_usage_error("eval", "give one CKPT");
    o->ckpt = argv[optind];
    if (o->png && !cli_plot_path_ok(o->png)) return cli_usage_error("eval", "--confusion-png: a path without quotes");
    return -1;
}

static const char *class_label(const clg_model *m, int i, char *buf, size_t len)
{
    const char *name = clg_model_class_name(m, i);
    if (name) snprintf(buf, len, "%s", name);
    else snprintf(buf, len, "%d", i);
    return buf;
}

static void print_results(const clg_model *m, double loss, double acc, const int64_t *cm, int k)
{
    int64_t total = 0;
    for (int i = 0; i < k * k; i++) total += cm[i];
    printf("samples %lld | loss %.4f | accuracy %.2f%%\n\nper class:\n", (long long)total, loss, 100 * acc);
    char name[64];
    for (int i = 0; i < k; i++) {
        int64_t n = 0;
        for (int j = 0; j < k; j++) n += cm[i * k + j];
        printf("  %2d %-14.14s %6lld samples  %6.2f%%\n", i, class_label(m, i, name, sizeof name), (long long)n,
               n ? 100.0 * cm[i * k + i] / n : 0.0);
    }
    printf("\nconfusion matrix (rows: true class, columns: predicted):\n      ");
    for (int j = 0; j < k; j++) printf(" %6d", j);
    for (int i = 0; i < k; i++) {
        printf("\n  %3d ", i);
        for (int j = 0; j < k; j++) printf(" %6lld", (long long)cm[i * k + j]);
    }
    printf("\n");
}

int eval_confusion_png(const clg_model *m, const int64_t *cm, int k, double acc, const char *png);

static int evaluate(const eval_opts *o, clg_device *dev, clg_model *m, clg_module *net)
{
    char err[1024];
    clg_model_train t = *clg_model_get_train(m);
    long long v;
    if (o->batch) t.batch = cli_int(o->batch, 1, 1 << 20, &v) ? v : 0;
    if (o->workers) t.workers = cli_int(o->workers, 1, 64, &v) ? (int)v : 0;
    if (clg_model_set_train(m, &t, err, sizeof err) || clg_model_set_data(m, o->data, o->data ? "" : NULL, err, sizeof err))
        return cli_usage_error("eval", err);
    clg_dataset *ds = NULL;
    clg_loader *l = NULL;
    clg_loader_config cfg = clg_model_loader_config(m, false);
    if (cli_test_dataset(m, true, &ds, err, sizeof err)) return cli_fail("eval", "%s", err);
    int k = (int)clg_model_outputs(m), rc = 0;
    int64_t *cm = calloc((size_t)k * k, sizeof *cm);
    double loss, acc;
    if (!cm) rc = cli_fail("eval", "out of host memory");
    else if (clg_loader_new(dev, ds, &cfg, &l) || cli_evaluate(net, m, l, &loss, &acc, cm))
        rc = cli_fail("eval", "%s", clg_device_error(dev));
    if (!rc) print_results(m, loss, acc, cm, k);
    if (!rc && o->png) rc = eval_confusion_png(m, cm, k, acc, o->png);
    free(cm);
    clg_loader_free(l);
    clg_dataset_free(ds);
    return rc;
}

int cmd_eval(int argc, char **argv)
{
    eval_opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    clg_model *m = NULL;
    clg_module *net = NULL;
    clg_device *dev = NULL;
    if (!(rc = cli_checkpoint_model("eval", o.ckpt, &m, NULL)) && !(dev = cli_open_device("eval", o.device, true))) rc = 1;
    clg_model_free(m);
    m = NULL;
    if (!rc) rc = cli_load_checkpoint("eval", o.ckpt, dev, &m, &net);
    if (!rc) rc = evaluate(&o, dev, m, net);
    clg_module_free(net);
    clg_model_free(m);
    clg_device_close(dev);
    return rc;
}
