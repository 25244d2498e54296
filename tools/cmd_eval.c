/* clgrad eval: a checkpoint on a test set: loss, accuracy, accuracy per class and the
 * confusion matrix, as text and (--confusion-png) as a picture. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

typedef struct eval_opts { const char *ckpt, *data, *device, *png, *batch, *workers, *eval_steps, *streams; } eval_opts;

static int parse(int argc, char **argv, eval_opts *o)
{
    static const struct option longs[] = {{"data", 1, 0, 'D'}, {"device", 1, 0, 'd'}, {"confusion-png", 1, 0, 'p'},
                                          {"batch", 1, 0, 'b'}, {"workers", 1, 0, 'w'}, {"help", 0, 0, 'h'},
                                          {"eval-steps", 1, 0, 'n'}, {"streams", 1, 0, 's'}, {0, 0, 0, 0}};
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, ":h", longs, NULL)) != -1;) {
        if (c == 'h') {
            printf("Usage: clgrad eval CKPT [--data fashion-mnist|DIR|FILE.csv|text:FILE|text:DIR]\n"
                   "         [--confusion-png FILE.png] [--batch N] [--workers N] [--device SPEC]\n"
                   "         [--eval-steps N] [--streams S]\n"
                   "Evaluates a checkpoint of clgrad train on the test split of --data (default: the\n"
                   "data recorded in the checkpoint; a CSV file is used whole): loss, accuracy, accuracy\n"
                   "per class and the confusion matrix (rows: true class, columns: predicted).\n"
                   "A character model reads text as one sequence from a zero state and gives the mean\n"
                   "loss of predicting each byte from those before it, in nats and bits per byte: of\n"
                   "text:PATH whole, or by default of the held-out tail of the text it was trained on.\n"
                   "  --streams S     text: read it as S contiguous streams at once, each from a zero\n"
                   "                  state (default 1: one sequence; the training batch runs at the\n"
                   "                  training step's speed)\n"
                   "  --eval-steps N  text: at most N windows of each stream (a quick estimate); a long\n"
                   "                  evaluation prints its progress\n");
            return 0;
        }
        const char **slot = c == 'D' ? &o->data : c == 'd' ? &o->device : c == 'p' ? &o->png
                          : c == 'b' ? &o->batch : c == 'w' ? &o->workers : c == 'n' ? &o->eval_steps
                          : c == 's' ? &o->streams : NULL;
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

/* Text: the file given whole, else the held-out tail of the training text (all of it
 * when the model file holds none out). */
static int text_range(const eval_opts *o, const char *path, const clg_model *m, const clg_text *t, size_t *from)
{
    const clg_model_data *d = clg_model_get_data(m);
    *from = o->data ? 0 : cli_text_split(t->len, d->holdout);
    if (t->len - *from >= 2) return 0;
    if (o->data)   /* the file given: it is the one too short */
        return cli_fail("eval", "%s: %zu bytes: no byte to predict from one before it (a text needs 2 at least)", path,
                        t->len);
    return cli_fail("eval", "%s: %zu bytes held out of %zu: no byte to predict (give --data text:FILE)", path,
                    t->len - *from, t->len);
}

/* A character model on text, one sequence from a zero state: nats and bits per byte. */
static int evaluate_text(const eval_opts *o, clg_device *dev, const clg_model *m, clg_module *net)
{
    char err[512];
    const char *path = o->data ? cli_text_path(o->data) : clg_model_get_data(m)->text;
    if (clg_model_check_text(m, err, sizeof err) != CLG_OK) return cli_fail("eval", "%s: %s", o->ckpt, err);
    if (!path || !*path)
        return cli_usage_error("eval", o->data ? "the model takes tokens (its first layer is an embedding): give "
                               "--data text:FILE|DIR" : "the checkpoint names no text: give --data text:FILE|DIR");
    if (o->png || o->batch || o->workers) return cli_usage_error("eval", "--confusion-png, --batch and --workers are "
                                                                 "for samples, not text");
    long long max_windows = 0, streams = 1;
    if (o->eval_steps && !cli_int(o->eval_steps, 1, 1LL << 40, &max_windows))
        return cli_usage_error("eval", "--eval-steps must be a positive integer");
    if (o->streams && !cli_int(o->streams, 1, 1 << 16, &streams))
        return cli_usage_error("eval", "--streams must be an integer in [1, 65536]");
    clg_text t;
    size_t from = 0;
    int rc = cli_read_text("eval", path, &t) ? 1 : text_range(o, path, m, &t, &from);
    int64_t in[CLG_MAX_DIMS], n = 0;
    double nats = 0;
    clg_model_input(m, in);
    if (!rc && (t.len - from) / (size_t)streams < 2)
        rc = cli_fail("eval", "%s: %zu bytes make no stream of 2 bytes in %lld streams", path, t.len - from, streams);
    cli_eval_progress pr = {.dev = dev, .what = "evaluating"};
    clg_text_eval_options eo = {.max_windows = max_windows, .progress = cli_eval_progress_fn, .user = &pr};
    if (!rc && clg_text_loss_ex(net, t.bytes + from, t.len - from, (int)streams, (int)in[0], &eo, &nats, &n) != CLG_OK)
        rc = cli_fail("eval", "%s", clg_device_error(dev));
    if (!rc) {
        printf("text: %s, bytes %zu to %zu of %zu%s%s\n", path, from, t.len, t.len,
               o->data ? "" : from ? " (held out in training)" : " (the training text: none was held out)",
               max_windows ? " (the first --eval-steps windows of each stream)" : "");
        printf("bytes %lld | loss %.4f | %.4f bits per byte\n", (long long)n, nats, nats / CLI_LN2);
    }
    clg_text_free(&t);
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
    bool text = !rc && (cli_text_path(o.data) || clg_model_takes_tokens(m));
    if (!rc && !text && (o.eval_steps || o.streams))
        rc = cli_usage_error("eval", "--eval-steps and --streams are for text, not samples");
    if (!rc) rc = text ? evaluate_text(&o, dev, m, net) : evaluate(&o, dev, m, net);
    clg_module_free(net);
    clg_model_free(m);
    clg_device_close(dev);
    return rc;
}
