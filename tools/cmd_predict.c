/* clgrad predict: a checkpoint applied to raw inputs (.npy or IDX). The model
 * description inside the checkpoint rebuilds the network and gives the input
 * transforms (scale, normalise), so nothing but the checkpoint is needed. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

typedef struct predict_opts {
    const char *ckpt, *input, *out, *device;
    long long top, batch;
    bool scaled;   /* INPUT already scaled: the checkpoint's scale is skipped */
} predict_opts;

static int parse(int argc, char **argv, predict_opts *o)
{
    static const struct option longs[] = {{"out", 1, 0, 'o'},   {"top", 1, 0, 'k'},    {"device", 1, 0, 'd'},
                                          {"batch", 1, 0, 'b'}, {"scaled", 0, 0, 's'}, {"help", 0, 0, 'h'},
                                          {0, 0, 0, 0}};
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, ":h", longs, NULL)) != -1;) {
        if (c == 'h') {
            printf("Usage: clgrad predict CKPT INPUT [--out OUT.npy] [--top K] [--batch N] [--scaled] [--device SPEC]\n"
                   "Runs the network of a clgrad checkpoint (in eval mode) on INPUT, an .npy array or an\n"
                   "IDX file (gzip too) of raw samples, [N, ...] or one sample (its size-1 axes may be\n"
                   "left out: [28, 28] for a model of [1, 28, 28]), after the input transforms recorded\n"
                   "in the checkpoint: raw values as the training data had them (Fashion-MNIST: bytes\n"
                   "0-255, scaled by the checkpoint). Floats all within [0, 1] for a model that scales\n"
                   "by 1/255 are refused as already scaled unless --scaled says so (then the scale is\n"
                   "skipped; normalisation still applies). --out writes the logits, float32\n"
                   "[N, classes], as .npy; otherwise the top K classes (default 3) of each input are\n"
                   "printed.\n");
            return 0;
        }
        if (c == 'o') o->out = optarg;
        else if (c == 's') o->scaled = true;
        else if (c == 'd') o->device = optarg;
        else if (c == 'k' && cli_int(optarg, 1, 1000, &o->top)) continue;
        else if (c == 'b' && cli_int(optarg, 1, 1 << 20, &o->batch)) continue;
        else if (c == 'k' || c == 'b') return cli_usage_error("predict", c == 'k' ? "--top must be in [1, 1000]" : "--batch must be in [1, 1048576]");
        else return cli_bad_option("predict", c, argv);
    }
    if (optind != argc - 2) return cli_usage_error("predict", "give CKPT and INPUT");
    o->ckpt = argv[optind];
    o->input = argv[optind + 1];
    return -1;
}

/* Whether two shapes are the same once their size-1 axes are dropped ([28, 28] is one
 * [1, 28, 28] sample). */
static bool same_squeezed(int na, const int64_t *a, int nb, const int64_t *b)
{
    int i = 0, j = 0;
    for (;;) {
        while (i < na && a[i] == 1) i++;
        while (j < nb && b[j] == 1) j++;
        if (i == na || j == nb) return i == na && j == nb;
        if (a[i++] != b[j++]) return false;
    }
}

/* INPUT as floats [n, input numel]: .npy by its magic, else IDX. */
static int read_input(const char *path, const clg_model *m, bool scaled, float **x, int64_t *n)
{
    char err[1024], magic[6] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return cli_fail("predict", "%s: cannot open the input", path);
    size_t got = fread(magic, 1, 6, f);
    fclose(f);
    clg_host_array a;
    bool npy = got == 6 && !memcmp(magic, "\x93NUMPY", 6);
    if ((npy ? clg_npy_read(path, &a, err, sizeof err) : clg_idx_read(path, &a, err, sizeof err)) != CLG_OK)
        return cli_fail("predict", "%s%s", err, npy ? "" : " (the input is an .npy or IDX file)");
    int64_t shape[CLG_MAX_DIMS], per = clg_model_input_numel(m), total = clg_host_array_numel(&a);
    int nd = clg_model_input(m, shape);
    bool single = same_squeezed(a.ndim, a.shape, nd, shape);
    *n = single ? 1 : a.ndim >= 1 ? a.shape[0] : 0;
    if (*n < 1 || *n * per != total) {
        clg_host_array_free(&a);
        return cli_fail("predict", "%s: %lld values do not make samples of the model's input (%lld values each)",
                        path, (long long)total, (long long)per);
    }
    *x = malloc((size_t)total * sizeof **x);
    for (int64_t i = 0; *x && i < total; i++) {
        const void *d = a.data;
        (*x)[i] = a.type == CLG_ELEM_U8 ? ((const uint8_t *)d)[i] : a.type == CLG_ELEM_I32 ? (float)((const int32_t *)d)[i]
                : a.type == CLG_ELEM_I64 ? (float)((const int64_t *)d)[i] : a.type == CLG_ELEM_F32 ? ((const float *)d)[i]
                                                                                                  : (float)((const double *)d)[i];
    }
    bool floats = a.type == CLG_ELEM_F32 || a.type == CLG_ELEM_F64;
    clg_host_array_free(&a);
    if (!*x) return cli_fail("predict", "out of host memory");
    /* Floats within [0, 1] for a model that scales raw values by 1/255: scaled twice,
     * every prediction would be wrong, silently. */
    double scale = clg_model_get_data(m)->scale, lo = 0, hi = 0;
    for (int64_t i = 0; i < total; i++) lo = fmin(lo, (*x)[i]), hi = fmax(hi, (*x)[i]);
    if (floats && !scaled && scale > 0 && scale < 0.5 && lo >= 0 && hi > 0 && hi <= 1) {
        free(*x);
        *x = NULL;
        return cli_fail("predict", "%s: its values lie in [0, %g], but the model scales raw inputs by %g (it was "
                        "trained on values up to %g): give raw values, or --scaled if these are already scaled",
                        path, hi, scale, 1 / scale);
    }
    return 0;
}

/* Logits [n, classes] for the transformed inputs, in batches. */
static int run(clg_device *dev, const clg_model *m, clg_module *net, const float *x, int64_t n, int64_t batch,
               float *logits)
{
    int64_t shape[CLG_MAX_DIMS + 1], per = clg_model_input_numel(m), k = clg_model_outputs(m);
    int nd = clg_model_input(m, shape + 1);
    clg_module_train(net, false);
    clg_no_grad_begin(dev);
    clg_status st = CLG_OK;
    for (int64_t i = 0; st == CLG_OK && i < n; i += batch) {
        shape[0] = n - i < batch ? n - i : batch;
        clg_scope_begin(dev);
        clg_tensor *out = clg_module_forward(net, clg_tensor_from_host(dev, CLG_F32, nd + 1, shape, x + i * per));
        st = out ? clg_tensor_to_host(out, logits + i * k, (size_t)(shape[0] * k) * sizeof *logits)
                 : clg_device_last_status(dev);
        clg_scope_end(dev);
    }
    clg_no_grad_end(dev);
    return st == CLG_OK ? 0 : cli_fail("predict", "%s", clg_device_error(dev));
}

/* "i: class name (probability), ..." for the top classes of each input. */
static int print_top(const clg_model *m, const float *logits, int64_t n, int64_t top)
{
    int64_t k = clg_model_outputs(m);
    int64_t *order = malloc((size_t)k * sizeof *order);
    if (!order) return cli_fail("predict", "out of host memory");
    for (int64_t i = 0; i < n; i++) {
        const float *z = logits + i * k;
        double mx = z[0], sum = 0;
        for (int64_t j = 0; j < k; j++) {   /* insertion sort, largest first, ties by index */
            int64_t at = j;
            for (; at > 0 && z[order[at - 1]] < z[j]; at--) order[at] = order[at - 1];
            order[at] = j;
            mx = z[j] > mx ? z[j] : mx;
        }
        for (int64_t j = 0; j < k; j++) sum += exp(z[j] - mx);
        printf("%lld:", (long long)i);
        for (int64_t t = 0; t < top && t < k; t++) {
            const char *name = clg_model_class_name(m, (int)order[t]);
            printf("%s %lld%s%s (%.1f%%)", t ? "," : "", (long long)order[t], name ? " " : "", name ? name : "",
                   100 * exp(z[order[t]] - mx) / sum);
        }
        printf("\n");
    }
    free(order);
    return 0;
}

static int predict(const predict_opts *o, clg_device *dev, clg_model *m, clg_module *net)
{
    float *x = NULL, *logits = NULL;
    int64_t n = 0, k = clg_model_outputs(m);
    int rc = read_input(o->input, m, o->scaled, &x, &n);
    if (!rc && !(logits = malloc((size_t)(n * k) * sizeof *logits))) rc = cli_fail("predict", "out of host memory");
    if (!rc && o->scaled) {   /* the transforms without the scale */
        double s = clg_model_get_data(m)->scale;
        for (int64_t i = 0; s > 0 && i < n * clg_model_input_numel(m); i++) x[i] = (float)(x[i] / s);
    }
    if (!rc) clg_model_transform(m, x, n);
    if (!rc) rc = run(dev, m, net, x, n, o->batch ? o->batch : clg_model_get_train(m)->batch, logits);
    char err[1024];
    clg_host_array a = {CLG_ELEM_F32, 2, {n, k}, logits, (size_t)(n * k) * sizeof(float)};
    if (!rc && o->out && clg_npy_write(o->out, &a, err, sizeof err) != CLG_OK) rc = cli_fail("predict", "%s", err);
    else if (!rc && o->out) printf("logits [%lld, %lld] written to %s\n", (long long)n, (long long)k, o->out);
    else if (!rc) rc = print_top(m, logits, n, o->top ? o->top : 3);
    free(x);
    free(logits);
    return rc;
}

int cmd_predict(int argc, char **argv)
{
    predict_opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    clg_model *m = NULL;
    clg_module *net = NULL;
    clg_device *dev = NULL;
    if (!(rc = cli_checkpoint_model("predict", o.ckpt, &m, NULL)) && clg_model_takes_tokens(m))
        rc = cli_fail("predict", "%s: the model takes tokens, not samples: clgrad sample generates text with it, "
                      "clgrad eval --data text:FILE measures it", o.ckpt);
    if (!rc && !(dev = cli_open_device("predict", o.device, false))) rc = 1;
    clg_model_free(m);
    m = NULL;
    if (!rc) rc = cli_load_checkpoint("predict", o.ckpt, dev, &m, &net);
    if (!rc) rc = predict(&o, dev, m, net);
    clg_module_free(net);
    clg_model_free(m);
    clg_device_close(dev);
    return rc;
}
