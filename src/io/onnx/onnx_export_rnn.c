/* onnx_export_rnn.c: rnn, lstm and gru layers as ONNX RNN, LSTM and GRU nodes, one per
 * stacked layer, between the Transposes that make a batch-first [B, T, F] time-major.
 * clgrad keeps PyTorch's layout: weight_ih_l<k> [G H, in] with the gates of LSTM in the
 * order i, f, g, o and of GRU r, z, n; ONNX wants W [1, G H, in] with i, o, f, c and
 * z, r, h, and both biases in one B [1, 2 G H]. PyTorch's GRU applies r after the hidden
 * product (n = tanh(W_in x + b_in + r (W_hn h + b_hn))): ONNX's linear_before_reset = 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "onnx_impl.h"

/* ONNX's gate j is PyTorch's gate order[j]. */
static const int LSTM_ORDER[4] = {0, 3, 1, 2}, GRU_ORDER[3] = {1, 0, 2}, RNN_ORDER[1] = {0};

/* Rows of w ([G H, cols]) reordered by gate into dst. */
static void reorder(float *dst, const float *w, int gates, const int *order, int64_t hidden, int64_t cols)
{
    size_t block = (size_t)(hidden * cols);
    for (int j = 0; j < gates; j++) memcpy(dst + (size_t)j * block, w + (size_t)order[j] * block, block * sizeof *w);
}

/* weight_<what>_l<k>, or bias_<what>_l<k>, of the layer, reordered by gate. */
static float *gate_weight(clg_module *net, const char *prefix, const char *kind, const char *what, int k, int gates,
                          const int *order, int64_t hidden, int64_t *cols)
{
    char name[256];
    snprintf(name, sizeof name, "%s.%s_%s_l%d", prefix, kind, what, k);
    int64_t d[2] = {0, 1}, n;
    float *w = ox_weight(net, name, &n, !strcmp(kind, "weight") ? 2 : 1, d);
    float *r = w ? malloc((size_t)n * sizeof *r) : NULL;
    if (w && !r) clg__fail(clg_module_device(net), CLG_ERR_OUT_OF_MEMORY, "clg_module_export_onnx: out of host memory");
    if (r) reorder(r, w, gates, order, hidden, d[1]);
    if (cols) *cols = d[1];
    free(w);
    return r;
}

/* Layer k's W, R and B initializers (B NULL without biases). */
static bool layer_inits(ox_graph *g, clg_module *net, const model_layer *l, const char *prefix, int k, int gates,
                        const int *order, const char **W, const char **R, const char **B)
{
    int64_t H = l->out, in, h;
    float *wi = gate_weight(net, prefix, "weight", "ih", k, gates, order, H, &in);
    float *wh = gate_weight(net, prefix, "weight", "hh", k, gates, order, H, &h);
    char name[256];
    snprintf(name, sizeof name, "%s.onnx_W_l%d", prefix, k);
    *W = wi ? ox_init_f32(g, name, 3, (int64_t[]){1, gates * H, in}, wi) : NULL;
    snprintf(name, sizeof name, "%s.onnx_R_l%d", prefix, k);
    *R = wh ? ox_init_f32(g, name, 3, (int64_t[]){1, gates * H, h}, wh) : NULL;
    free(wi);
    free(wh);
    *B = "";
    if (!l->bias) return *W && *R;
    float *bi = gate_weight(net, prefix, "bias", "ih", k, gates, order, H, NULL);
    float *bh = gate_weight(net, prefix, "bias", "hh", k, gates, order, H, NULL);
    float *b = bi && bh ? malloc((size_t)(2 * gates * H) * sizeof *b) : NULL;
    if (b) {
        memcpy(b, bi, (size_t)(gates * H) * sizeof *b);
        memcpy(b + gates * H, bh, (size_t)(gates * H) * sizeof *b);
    }
    snprintf(name, sizeof name, "%s.onnx_B_l%d", prefix, k);
    *B = b ? ox_init_f32(g, name, 2, (int64_t[]){1, 2 * gates * H}, b) : NULL;
    free(bi);
    free(bh);
    free(b);
    return *W && *R && *B;
}

static const char *transpose_bt(ox_graph *g, const char *x, const char *hint)
{
    const char *y = ox_op(g, "Transpose", 1, &x, hint);
    ox_attr_ints(g, "perm", 3, (int64_t[]){1, 0, 2});
    return y;
}

const char *ox_layer_rnn(ox_graph *g, clg_module *net, const model_layer *l, const char *const *xs, int ndim,
                         const int64_t *in)
{
    (void)ndim, (void)in;
    const char *x = xs[0], *prefix = l->name;
    bool lstm = l->kind == &mk_lstm, gru = l->kind == &mk_gru;
    int gates = lstm ? 4 : gru ? 3 : 1;
    const int *order = lstm ? LSTM_ORDER : gru ? GRU_ORDER : RNN_ORDER;
    const char *op = lstm ? "LSTM" : gru ? "GRU" : "RNN";
    char axes_name[256];
    snprintf(axes_name, sizeof axes_name, "%s.onnx_axis1", prefix);
    const char *axis1 = ox_init_i64(g, axes_name, 1, (int64_t[]){1}, (int64_t[]){1});
    const char *h = transpose_bt(g, x, prefix);   /* [T, B, F] */
    for (int k = 0; h && k < l->layers; k++) {
        const char *W, *R, *B;
        if (!layer_inits(g, net, l, prefix, k, gates, order, &W, &R, &B)) return NULL;
        const char *in[4] = {h, W, R, B};
        const char *y = ox_op(g, op, l->bias ? 4 : 3, in, prefix);   /* Y [T, 1, B, H] */
        ox_attr_i(g, "hidden_size", l->out);
        if (gru) ox_attr_i(g, "linear_before_reset", 1);
        if (!lstm && !gru) ox_attr_strings(g, "activations", 1, (const char *[]){l->relu ? "Relu" : "Tanh"});
        const char *sq[2] = {y, axis1};
        h = ox_op(g, "Squeeze", 2, sq, prefix);   /* dropout between layers: none in evaluation */
    }
    return h ? transpose_bt(g, h, prefix) : NULL;
}
