/* The recurrent modules: RNN, LSTM and GRU stacked over layers (against the layers' ops
 * applied one by one), batch-first against time-first, initial and final states, the
 * carried state of a stateful module against one pass over the whole sequence, the
 * cells in a loop of one's own against the sequence layer (and a 200-step loop's
 * tape freed at the end of its scope), PyTorch's parameter names, the errors, and the
 * summary of a model of tokens. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define SH(...) CLG_SHAPE(__VA_ARGS__)

static double max_diff(clg_tensor *a, clg_tensor *b)
{
    if (!a || !b || clg_tensor_numel(a) != clg_tensor_numel(b)) return INFINITY;
    int64_t n = clg_tensor_numel(a);
    float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
    double d = INFINITY;
    clg_tensor *ac = clg_contiguous(a), *bc = clg_contiguous(b);
    if (ac && bc && clg_tensor_to_host(ac, x, (size_t)n * 4) == CLG_OK && clg_tensor_to_host(bc, y, (size_t)n * 4) == CLG_OK) {
        d = 0;
        for (int64_t i = 0; i < n; i++) d = fmax(d, fabs((double)x[i] - y[i]));
    }
    free(x);
    free(y);
    return d;
}

static clg_tensor *p(clg_module *m, const char *name) { return clg_module_find(m, name); }

/* Two stacked layers against clg_lstm / clg_gru / clg_rnn layer by layer. */
static void stacked(clg_device *dev, clg_rnn_mode mode)
{
    const int T = 5, B = 3, I = 4, H = 6;
    clg_rnn_options o = clg_rnn_defaults();
    o.num_layers = 2;
    o.dropout = 0.5;   /* between the layers, in training only: the module is in eval mode below */
    clg_module *m = mode == CLG_LSTM ? clg_nn_lstm(dev, I, H, &o) : mode == CLG_GRU ? clg_nn_gru(dev, I, H, &o)
                                                                                   : clg_nn_rnn(dev, mode, I, H, &o);
    CHECK_MSG(m != NULL, "%s", clg_device_error(dev));
    if (!m) return;
    clg_module_train(m, false);
    clg_scope_begin(dev);
    clg_tensor *x = clg_randn(dev, CLG_F32, SH(T, B, I), 0, 1);
    clg_tensor *h0 = clg_randn(dev, CLG_F32, SH(2, B, H), 0, 1), *c0 = clg_randn(dev, CLG_F32, SH(2, B, H), 0, 1);
    bool lstm = mode == CLG_LSTM;
    clg_tensor *hn, *cn = NULL;
    clg_tensor *y = clg_rnn_forward(m, x, h0, lstm ? c0 : NULL, &hn, lstm ? &cn : NULL);
    CHECK_MSG(y && hn && (!lstm || cn), "%s", clg_device_error(dev));
    clg_tensor *want = x, *h[2], *c[2] = {NULL, NULL};
    for (int l = 0; l < 2; l++) {
        char s[4][32];
        const char *f[4] = {"weight_ih_l%d", "weight_hh_l%d", "bias_ih_l%d", "bias_hh_l%d"};
        for (int k = 0; k < 4; k++) snprintf(s[k], sizeof s[k], f[k], l);
        clg_tensor *hl = clg_squeeze(clg_narrow(h0, 0, l, 1), 0), *cl = clg_squeeze(clg_narrow(c0, 0, l, 1), 0);
        if (lstm) want = clg_lstm(want, p(m, s[0]), p(m, s[1]), p(m, s[2]), p(m, s[3]), hl, cl, &h[l], &c[l]);
        else if (mode == CLG_GRU) want = clg_gru(want, p(m, s[0]), p(m, s[1]), p(m, s[2]), p(m, s[3]), hl, &h[l]);
        else want = clg_rnn(want, p(m, s[0]), p(m, s[1]), p(m, s[2]), p(m, s[3]), hl, mode == CLG_RNN_RELU, &h[l]);
    }
    CHECK_MSG(max_diff(y, want) == 0, "mode %d: stacked output differs", mode);
    CHECK_MSG(max_diff(hn, clg_stack(2, h, 0)) == 0, "mode %d: h_n differs", mode);
    if (lstm) CHECK_MSG(max_diff(cn, clg_stack(2, c, 0)) == 0, "c_n differs");
    /* batch first: the same numbers, transposed */
    o.batch_first = true;
    clg_manual_seed(dev, 3);
    clg_module *bf = lstm ? clg_nn_lstm(dev, I, H, &o) : mode == CLG_GRU ? clg_nn_gru(dev, I, H, &o)
                                                                        : clg_nn_rnn(dev, mode, I, H, &o);
    clg_named_tensor st[16];
    int n = clg_module_state(m, st, 16);
    clg_no_grad_begin(dev);
    for (int i = 0; i < n; i++) CHECK_OK(dev, clg_copy_(clg_module_find(bf, st[i].name), st[i].tensor));
    clg_no_grad_end(dev);
    clg_module_train(bf, false);
    clg_tensor *ybf = clg_rnn_forward(bf, clg_contiguous(clg_transpose(x, 0, 1)), h0, lstm ? c0 : NULL, NULL, NULL);
    CHECK_MSG(ybf && max_diff(clg_transpose(ybf, 0, 1), y) == 0, "mode %d: batch-first output differs", mode);
    clg_scope_end(dev);
    clg_module_free(bf);
    clg_module_free(m);
}

/* A stateful LSTM over two windows = one pass over both; gradients stop at the window. */
static void stateful(clg_device *dev)
{
    const int T = 4, B = 2, I = 3, H = 5;
    clg_rnn_options o = clg_rnn_defaults();
    o.num_layers = 2;
    o.batch_first = true;
    clg_module *m = clg_nn_lstm(dev, I, H, &o);
    clg_scope_begin(dev);
    clg_tensor *x = clg_randn(dev, CLG_F32, SH(B, 2 * T, I), 0, 1);
    clg_tensor *whole = clg_module_forward(m, x);
    CHECK_OK(dev, clg_rnn_set_stateful(m, true));
    clg_tensor *y1 = clg_module_forward(m, clg_narrow(x, 1, 0, T));
    clg_tensor *y2 = clg_module_forward(m, clg_narrow(x, 1, T, T));
    CHECK_MSG(y1 && y2 && max_diff(clg_concat(2, (clg_tensor *[]){y1, y2}, 1), whole) < 1e-6,
              "stateful windows differ from the whole pass: %g", max_diff(clg_concat(2, (clg_tensor *[]){y1, y2}, 1), whole));
    /* the second window's graph starts at its own input: one backward reaches only it */
    CHECK_OK(dev, clg_backward(clg_sum(y2, 0, NULL, false), NULL));
    clg_tensor *g1 = clg_tensor_grad(clg_module_find(m, "weight_hh_l0"));
    clg_rnn_reset_state(m);
    clg_tensor *w = clg_module_find(m, "weight_hh_l0");
    clg_tensor *gcopy = g1 ? clg_contiguous(clg_mul_scalar(g1, 1.0)) : NULL;
    clg_tensor_zero_grad(w);
    /* same window from the same (detached) state, as a plain forward */
    CHECK_OK(dev, clg_rnn_set_stateful(m, false));
    clg_tensor *hn, *cn;
    CHECK(clg_rnn_forward(m, clg_narrow(x, 1, 0, T), NULL, NULL, &hn, &cn) != NULL);
    clg_tensor *y2b = clg_rnn_forward(m, clg_narrow(x, 1, T, T), clg_detach(hn), clg_detach(cn), NULL, NULL);
    CHECK_OK(dev, clg_backward(clg_sum(y2b, 0, NULL, false), NULL));
    CHECK_MSG(max_diff(clg_tensor_grad(w), gcopy) < 1e-6, "stateful gradient differs from a detached state's");
    /* a new batch size starts from zeros */
    CHECK_OK(dev, clg_rnn_set_stateful(m, true));
    CHECK(clg_module_forward(m, clg_narrow(x, 0, 0, 1)) != NULL);
    clg_tensor *z = clg_module_forward(m, clg_narrow(clg_narrow(x, 0, 0, 2), 1, 0, T));
    CHECK_MSG(max_diff(z, y1) < 1e-6, "a new batch size did not start from zeros");
    clg_scope_end(dev);
    clg_module_free(m);
}

/* LSTMCell / GRUCell / RNNCell in a loop = the one-layer module with the same weights. */
static void cells(clg_device *dev, clg_rnn_mode mode)
{
    const int T = 6, B = 2, I = 3, H = 4;
    clg_module *cell = clg_nn_rnn_cell(dev, mode, I, H, true);
    clg_module *seq = clg_nn_rnn(dev, mode, I, H, NULL);
    CHECK_MSG(cell && seq, "%s", clg_device_error(dev));
    if (!cell || !seq) return;
    const char *names[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    clg_no_grad_begin(dev);
    for (int k = 0; k < 4; k++) {
        char n[32];
        snprintf(n, sizeof n, "%s_l0", names[k]);
        CHECK_MSG(clg_module_find(cell, names[k]) != NULL, "cell parameter %s", names[k]);
        CHECK_OK(dev, clg_copy_(clg_module_find(seq, n), clg_module_find(cell, names[k])));
    }
    clg_no_grad_end(dev);
    clg_scope_begin(dev);
    clg_tensor *x = clg_randn(dev, CLG_F32, SH(T, B, I), 0, 1);
    clg_tensor *want = clg_module_forward(seq, x);
    clg_tensor *h = NULL, *c = NULL, *hs[6];
    for (int t = 0; t < T; t++) {
        clg_tensor *c2 = NULL;
        h = clg_cell_forward(cell, clg_squeeze(clg_narrow(x, 0, t, 1), 0), h, c, &c2);
        c = c2;
        hs[t] = h;
    }
    CHECK_MSG(h && max_diff(clg_stack(T, hs, 0), want) < 1e-6, "mode %d: cell loop differs from the layer", mode);
    CHECK(mode != CLG_LSTM || c != NULL);
    clg_scope_end(dev);
    clg_module_free(cell);
    clg_module_free(seq);
}

/* 200 steps of an LSTMCell, backward, and the scope gives every buffer back (a buffer
 * kept per step would show 200 times over). */
static void long_loop(clg_device *dev)
{
    const char *small = getenv("CLG_TEST_SMALL");
    const int T = small && *small == '1' ? 60 : 200, B = 2, I = 3, H = 8;
    clg_module *cell = clg_nn_rnn_cell(dev, CLG_LSTM, I, H, true);
    for (int round = 0; round < 2; round++) {
        clg_scope_begin(dev);
        clg_tensor *x = clg_randn(dev, CLG_F32, SH(T, B, I), 0, 1);
        uint64_t before = clg_device_pool_stats(dev).in_use_bytes;
        clg_scope_begin(dev);
        clg_tensor *h = NULL, *c = NULL, *loss = NULL;
        for (int t = 0; t < T && (t == 0 || h); t++) {
            clg_tensor *c2 = NULL;
            h = clg_cell_forward(cell, clg_squeeze(clg_narrow(x, 0, t, 1), 0), h, c, &c2);
            c = c2;
        }
        loss = h ? clg_mean(h, 0, NULL, false) : NULL;
        CHECK_MSG(loss && clg_backward(loss, NULL) == CLG_OK, "%d-step loop: %s", T, clg_device_error(dev));
        clg_scope_end(dev);
        uint64_t after = clg_device_pool_stats(dev).in_use_bytes, grads = 0;
        clg_named_tensor st[4];
        int n = clg_module_state(cell, st, 4);
        for (int i = 0; i < n; i++) grads += (uint64_t)clg_tensor_numel(st[i].tensor) * 4;
        CHECK_MSG(after <= before + 2 * grads, "%d-step loop: %llu bytes in use before its scope, %llu after", T,
                  (unsigned long long)before, (unsigned long long)after);
        clg_scope_end(dev);
    }
    clg_module_free(cell);
}

static void names_and_errors(clg_device *dev)
{
    clg_rnn_options o = clg_rnn_defaults();
    o.num_layers = 2;
    o.bias = false;
    clg_module *m = clg_nn_gru(dev, 7, 5, &o);
    clg_named_tensor st[8];
    int n = clg_module_state(m, st, 8);
    CHECK(n == 4);
    const char *want[4] = {"weight_ih_l0", "weight_hh_l0", "weight_ih_l1", "weight_hh_l1"};
    const int64_t rows[4] = {15, 15, 15, 15}, cols[4] = {7, 5, 5, 5};
    for (int i = 0; i < n && i < 4; i++) {
        CHECK_MSG(!strcmp(st[i].name, want[i]), "parameter %d is %s, want %s", i, st[i].name, want[i]);
        const int64_t *s = clg_tensor_shape(st[i].tensor);
        CHECK(s[0] == rows[i] && s[1] == cols[i]);
    }
    CHECK(clg_module_is_recurrent(m));
    clg_scope_begin(dev);
    clg_tensor *x = clg_zeros(dev, CLG_F32, SH(3, 2, 7));
    CHECK(clg_rnn_forward(m, x, clg_zeros(dev, CLG_F32, SH(1, 2, 5)), NULL, NULL, NULL) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "h0") && strstr(clg_device_error(dev), "[2, 2, 5]"), "%s",
              clg_device_error(dev));
    CHECK(clg_rnn_forward(m, x, NULL, clg_zeros(dev, CLG_F32, SH(2, 2, 5)), NULL, NULL) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "c0"), "%s", clg_device_error(dev));
    CHECK(clg_module_forward(m, clg_zeros(dev, CLG_F32, SH(3, 2, 6))) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "weight_ih"), "%s", clg_device_error(dev));
    clg_device_clear_error(dev);
    clg_scope_end(dev);
    CHECK(clg_nn_lstm(dev, 0, 4, NULL) == NULL);
    clg_device_clear_error(dev);
    clg_module *relu = clg_nn_relu(dev);
    CHECK(clg_rnn_set_stateful(relu, true) != CLG_OK);
    CHECK(!clg_module_is_recurrent(relu));
    clg_device_clear_error(dev);
    clg_module_free(relu);
    clg_module_free(m);
}

/* A model of tokens: the summary feeds it token 0, not floats. */
static void token_summary(clg_device *dev)
{
    clg_module *m = clg_nn_sequential(dev, 3, (clg_module *[]){clg_nn_embedding(dev, 16, 4),
                                                               clg_nn_lstm(dev, 4, 6, NULL),
                                                               clg_nn_linear(dev, 6, 3, true)});
    FILE *f = tmpfile();
    CHECK_OK(dev, clg_module_summary(m, SH(2, 5), f));
    char text[2048] = "";
    rewind(f);
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = 0;
    fclose(f);
    /* 16*4 + LSTM 4*(6*4 + 6*6 + 2*6) + 6*3 + 3 */
    CHECK_MSG(strstr(text, "[2, 5, 4]") && strstr(text, "[2, 5, 6]") && strstr(text, "[2, 5, 3]") &&
                  strstr(text, "total parameters: 373"),
              "%s", text);
    clg_module_free(m);
}

int main(void)
{
    clg_device *dev = check_open_device();
    clg_manual_seed(dev, 11);
    for (int mode = CLG_RNN_TANH; mode <= CLG_GRU; mode++) {
        stacked(dev, (clg_rnn_mode)mode);
        cells(dev, (clg_rnn_mode)mode);
    }
    stateful(dev);
    long_loop(dev);
    names_and_errors(dev);
    token_summary(dev);
    clg_device_close(dev);
    return check_report("test_nn_rnn");
}
