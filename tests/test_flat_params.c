/* Parameters in an optimizer's arena (clg_optimizer_flatten): views at offsets of one
 * buffer, which every layer must read from their offsets. Each model is built twice from
 * one seed, one optimizer flattened, and trained three steps on the same batches: the
 * parameters stay the same bits as the twin's, whose parameters start at element 0 of
 * buffers of their own (convolutions on each of their paths, batch norm, layer norm,
 * the recurrent layers, an embedding). The direct convolution kernel is checked with a
 * weight at an offset against the same weight at element 0. */
#include <string.h>

#include "conv.h"
#include "optest.h"

#define STEPS 3

typedef clg_module *(*builder)(clg_device *dev);

static clg_module *conv_model(clg_device *dev)
{
    clg_conv2d_params pad = {.padding = {1, 1}};
    clg_module *l[] = {clg_nn_conv2d(dev, 2, 4, 3, 3, &pad, true), clg_nn_batch_norm2d(dev, 4, 1e-5, 0.1),
                       clg_nn_relu(dev), clg_nn_conv2d(dev, 4, 3, 3, 3, NULL, true), clg_nn_flatten(dev),
                       clg_nn_linear(dev, 3 * 4 * 4, 5, true)};
    return clg_nn_sequential(dev, 6, l);
}

static clg_module *norm_model(clg_device *dev)
{
    clg_module *l[] = {clg_nn_linear(dev, 6, 8, true), clg_nn_layer_norm(dev, 1, (const int64_t[]){8}, 1e-5),
                       clg_nn_linear(dev, 8, 3, false)};
    return clg_nn_sequential(dev, 3, l);
}

static clg_module *lstm_model(clg_device *dev) { return clg_nn_lstm(dev, 5, 7, NULL); }
static clg_module *gru_model(clg_device *dev) { return clg_nn_gru(dev, 5, 7, NULL); }
static clg_module *rnn_model(clg_device *dev) { return clg_nn_rnn(dev, CLG_RNN_TANH, 5, 7, NULL); }
static clg_module *embed_model(clg_device *dev)
{
    clg_module *l[] = {clg_nn_embedding(dev, 10, 6), clg_nn_linear(dev, 6, 4, true)};
    return clg_nn_sequential(dev, 2, l);
}

/* The model's batch for step k: images [2, 2, 6, 6] (conv), rows [4, 6] (norm),
 * sequences [4, 3, 5] (recurrent), or indices [5] (embedding). */
static clg_tensor *batch(clg_device *dev, int which, int k)
{
    static const int64_t shapes[4][4] = {{2, 2, 6, 6}, {4, 6}, {4, 3, 5}, {5}};
    static const int ndims[4] = {4, 2, 3, 1};
    int s = which == 0 ? 0 : which == 1 ? 1 : which == 5 ? 3 : 2;
    if (s == 3) {
        int32_t idx[5] = {k % 10, (k + 3) % 10, 7, (2 * k) % 10, 1};
        return clg_tensor_from_host(dev, CLG_I32, 1, shapes[3], idx);
    }
    int64_t n = 1;
    for (int d = 0; d < ndims[s]; d++) n *= shapes[s][d];
    double v[2 * 2 * 6 * 6];
    optest_fill(v, (int)n, -1, 1, 50 + (uint64_t)k);
    return optest_tensor(dev, CLG_F32, ndims[s], shapes[s], v, OPTEST_CONTIGUOUS);
}

/* One step: loss = sum(y * y) / 2 of the model's output, backward, SGD with momentum. */
static void train_step(clg_device *dev, clg_module *m, clg_optimizer *opt, clg_tensor *x)
{
    clg_scope_begin(dev);
    clg_optimizer_zero_grad(opt);
    clg_tensor *y = clg_module_forward(m, x);
    clg_tensor *loss = y ? clg_mul_scalar(clg_sum(clg_mul(y, y), 0, NULL, false), 0.5) : NULL;
    CHECK_OK(dev, loss ? clg_backward(loss, NULL) : clg_device_last_status(dev));
    CHECK_OK(dev, clg_optimizer_step(opt));
    clg_scope_end(dev);
}

static bool same(clg_tensor *a, clg_tensor *b)
{
    double *x = optest_read(a), *y = optest_read(b);
    bool s = x && y && !memcmp(x, y, (size_t)clg_tensor_numel(a) * sizeof *x);
    free(x);
    free(y);
    return s;
}

static void twins(clg_device *dev, const char *what, builder make, int which)
{
    clg_manual_seed(dev, 11);
    clg_module *a = make(dev);
    clg_manual_seed(dev, 11);
    clg_module *b = make(dev);
    clg_tensor *pa[16], *pb[16];
    int n = a && b ? clg_module_parameters(a, pa, 16, true) : 0;
    CHECK_MSG(n > 0 && n == clg_module_parameters(b, pb, 16, true), "%s: %s", what, clg_device_error(dev));
    clg_sgd_options so = {.lr = 0.05, .momentum = 0.9};
    clg_optimizer *oa = n ? clg_sgd_new(n, pa, &so) : NULL, *ob = n ? clg_sgd_new(n, pb, &so) : NULL;
    CHECK_OK(dev, oa ? clg_optimizer_flatten(oa) : clg_device_last_status(dev));
    for (int i = 1; i < n; i++)   /* past the first segment, every parameter starts past element 0 */
        CHECK_MSG(pa[i]->offset > 0 && pb[i]->offset == 0, "%s: parameter %d at %lld", what, i, (long long)pa[i]->offset);
    for (int k = 1; k <= STEPS && oa && ob; k++) {
        clg_scope_begin(dev);
        clg_tensor *x = batch(dev, which, k);
        train_step(dev, a, oa, x);
        train_step(dev, b, ob, x);
        clg_scope_end(dev);
        for (int i = 0; i < n; i++)
            CHECK_MSG(same(pa[i], pb[i]), "%s step %d: parameter %d differs in the arena", what, k, i);
    }
    clg_optimizer_free(oa);
    clg_optimizer_free(ob);
    clg_module_free(a);
    clg_module_free(b);
}

/* conv2d_direct with the weight (and bias) at offsets of a larger buffer. */
static void direct_offsets(clg_device *dev)
{
    clg_scope_begin(dev);
    double xv[2 * 3 * 5 * 5], wv[4 * 3 * 3 * 3 + 7], bv[4 + 3];
    optest_fill(xv, 150, -1, 1, 3);
    optest_fill(wv, 115, -1, 1, 4);
    optest_fill(bv, 7, -1, 1, 5);
    clg_tensor *x = optest_tensor(dev, CLG_F32, 4, (const int64_t[]){2, 3, 5, 5}, xv, OPTEST_CONTIGUOUS);
    clg_tensor *wbig = optest_tensor(dev, CLG_F32, 1, (const int64_t[]){115}, wv, OPTEST_CONTIGUOUS);
    clg_tensor *bbig = optest_tensor(dev, CLG_F32, 1, (const int64_t[]){7}, bv, OPTEST_CONTIGUOUS);
    clg_tensor *w = clg_reshape(clg_narrow(wbig, 0, 7, 108), CLG_SHAPE(4, 3, 3, 3)), *b = clg_narrow(bbig, 0, 3, 4);
    clg_tensor *w0 = clg_contiguous(clg_mul_scalar(w, 1.0)), *b0 = clg_contiguous(clg_mul_scalar(b, 1.0));
    clg_conv2d_params p = {.padding = {1, 1}};
    clg_tensor *y = clg__conv2d_with(x, w, b, &p, CLG_CONV_DIRECT), *y0 = clg__conv2d_with(x, w0, b0, &p, CLG_CONV_DIRECT);
    CHECK_MSG(y && y0 && same(y, y0), "conv2d_direct with the weight at element 7: %s", clg_device_error(dev));
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    int64_t live = clg_tensor_live_count(dev);
    twins(dev, "conv, batch norm, linear", conv_model, 0);
    twins(dev, "linear, layer norm", norm_model, 1);
    twins(dev, "lstm", lstm_model, 2);
    twins(dev, "gru", gru_model, 3);
    twins(dev, "rnn", rnn_model, 4);
    twins(dev, "embedding, linear", embed_model, 5);
    /* the convolutions again on the other path: with columns where the table reads the
     * padded input shifted (no columns), and without where it keeps them */
    const char *shift = clg__device_params(dev)->conv_shift ? "off" : "on";
    CHECK_OK(dev, clg_device_set_param(dev, "conv_shift", shift));
    twins(dev, "conv, conv_shift switched", conv_model, 0);
    direct_offsets(dev);
    CHECK_MSG(clg_tensor_live_count(dev) == live, "%lld tensors leaked", (long long)(clg_tensor_live_count(dev) - live));
    clg_device_close(dev);
    return check_report("test_flat_params");
}
