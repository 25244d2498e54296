/* Gradient checks of clg_rnn (tanh, relu), clg_lstm and clg_gru: every input (x, both
 * weights, both biases, the initial states) through the output and the final states,
 * with and without biases and initial states, and a sequence of length 1. */
#include <stdio.h>

#include "optest.h"

#define SH(...) CLG_SHAPE(__VA_ARGS__)

enum { RNN_TANH, RNN_RELU, LSTM, GRU };
static const int GATES[] = {1, 1, 4, 3};
static const char *const NAMES[] = {"rnn tanh", "rnn relu", "lstm", "gru"};

static clg_tensor *run_layer(int kind, clg_tensor *x, clg_tensor *wih, clg_tensor *whh, clg_tensor *bih,
                             clg_tensor *bhh, clg_tensor *h0, clg_tensor *c0, clg_tensor **hn, clg_tensor **cn)
{
    if (kind == LSTM) return clg_lstm(x, wih, whh, bih, bhh, h0, c0, hn, cn);
    if (kind == GRU) return clg_gru(x, wih, whh, bih, bhh, h0, hn);
    return clg_rnn(x, wih, whh, bih, bhh, h0, kind == RNN_RELU, hn);
}

typedef struct grad_ctx { int kind; bool bias, state; } grad_ctx;

/* inputs: x, w_ih, w_hh, then b_ih, b_hh when bias, then h0 (c0) when state. Returns
 * out, hn (and cn) flattened and joined, so one check covers every output. */
static clg_tensor *f_layer(clg_tensor **in, void *ctx)
{
    const grad_ctx *c = ctx;
    int k = 3;
    clg_tensor *bih = c->bias ? in[k++] : NULL, *bhh = c->bias ? in[k++] : NULL;
    clg_tensor *h0 = c->state ? in[k++] : NULL, *c0 = c->state && c->kind == LSTM ? in[k++] : NULL;
    clg_tensor *hn, *cn = NULL;
    clg_tensor *y = run_layer(c->kind, in[0], in[1], in[2], bih, bhh, h0, c0, &hn, c->kind == LSTM ? &cn : NULL);
    if (!y) return NULL;
    clg_tensor *parts[3] = {clg_reshape(y, SH(-1)), clg_reshape(hn, SH(-1)), cn ? clg_reshape(cn, SH(-1)) : NULL};
    return clg_concat(cn ? 3 : 2, parts, 0);
}

static void grad_checks(clg_device *dev)
{
    const int T = 3, B = 2, I = 3, H = 2;
    for (int kind = 0; kind < 4; kind++) {
        int G = GATES[kind];
        for (int v = 0; v < 3; v++) {
            grad_ctx c = {kind, v != 1, v != 0};
            int steps = v == 2 ? 1 : T;   /* sequence length 1 too */
            /* shapes in this block: compound literals inside the ifs would end with them */
            const int64_t gh[1] = {G * H}, bh[2] = {B, H};
            optest_input in[7] = {{SH(steps, B, I)}, {SH(G * H, I)}, {SH(G * H, H)}};
            int n = 3;
            if (c.bias) in[n++] = (optest_input){1, gh}, in[n++] = (optest_input){1, gh};
            if (c.state) in[n++] = (optest_input){2, bh};
            if (c.state && kind == LSTM) in[n++] = (optest_input){2, bh};
            char what[96];
            snprintf(what, sizeof what, "%s T=%d%s%s", NAMES[kind], steps, c.bias ? " bias" : "", c.state ? " h0" : "");
            optest_gradcheck(dev, what, f_layer, &c, n, in);
        }
    }
}

int main(void)
{
    clg_device *dev = check_open_device();
    grad_checks(dev);
    clg_device_close(dev);
    return check_report("test_grad_rnn");
}
