/* conformance_rnn.c: the cases of `clgrad conformance` for the recurrent layers (clg_rnn,
 * clg_lstm, clg_gru), with a plain-C reference of PyTorch's equations in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conformance_cases.h"

enum { R_TANH, R_RELU, R_LSTM, R_GRU };
static const int GATES[] = {1, 1, 4, 3};

/* A case: the layer, biases or not, initial states or not, steps (small / normal). */
typedef struct rnn_entry { int kind; bool bias, state; int steps, steps_big; } rnn_entry;

/* inputs: x [T, B, I], w_ih [G H, I], w_hh [G H, H], then b_ih, b_hh, then h0 (c0);
 * outputs: every step's h [T, B, H], h_T [B, H] (and c_T). ia: T, B, I, H. */
static void rnn_setup(cf_prob *p)
{
    const rnn_entry *e = p->arg;
    /* relu's kink: among thousands of pre-activations some lie within the central
     * differences' step of 0, so its case keeps the small size */
    bool big = p->big && e->kind != R_RELU;
    int T = big ? e->steps_big : e->steps, B = big ? 8 : 2, I = big ? 24 : 3, H = big ? 32 : 4, G = GATES[e->kind];
    double w = 1 / sqrt((double)H);   /* PyTorch's initial scale: the states stay away from saturation */
    cf_in(p, CF_GRAD, -1, 1, 3, T, B, I);
    cf_in(p, CF_GRAD, -w, w, 2, G * H, I);
    cf_in(p, CF_GRAD, -w, w, 2, G * H, H);
    if (e->bias) {
        cf_in(p, CF_GRAD, -w, w, 1, G * H);
        cf_in(p, CF_GRAD, -w, w, 1, G * H);
    }
    if (e->state) cf_in(p, CF_GRAD, -1, 1, 2, B, H);
    if (e->state && e->kind == R_LSTM) cf_in(p, CF_GRAD, -1, 1, 2, B, H);
    cf_out(p, 3, T, B, H);
    cf_out(p, 2, B, H);
    if (e->kind == R_LSTM) cf_out(p, 2, B, H);
    p->ia[0] = T, p->ia[1] = B, p->ia[2] = I, p->ia[3] = H;
}

static void rnn_run(cf_prob *p, clg_tensor **in, clg_tensor **out)
{
    const rnn_entry *e = p->arg;
    int k = 3;
    clg_tensor *bih = e->bias ? in[k++] : NULL, *bhh = e->bias ? in[k++] : NULL;
    clg_tensor *h0 = e->state ? in[k++] : NULL, *c0 = e->state && e->kind == R_LSTM ? in[k++] : NULL;
    if (e->kind == R_LSTM) out[0] = clg_lstm(in[0], in[1], in[2], bih, bhh, h0, c0, &out[1], &out[2]);
    else if (e->kind == R_GRU) out[0] = clg_gru(in[0], in[1], in[2], bih, bhh, h0, &out[1]);
    else out[0] = clg_rnn(in[0], in[1], in[2], bih, bhh, h0, e->kind == R_RELU, &out[1]);
}

static double sigm(double x) { return 1 / (1 + exp(-x)); }

/* The new state of unit j from the two projections xg, hg (biases in) and the old h, c. */
static double cell(int kind, int H, int j, const double *xg, const double *hg, double hp, double *c)
{
    switch (kind) {
    case R_TANH: return tanh(xg[j] + hg[j]);
    case R_RELU: return fmax(xg[j] + hg[j], 0);
    case R_LSTM: {
        double i = sigm(xg[j] + hg[j]), f = sigm(xg[H + j] + hg[H + j]);
        double g = tanh(xg[2 * H + j] + hg[2 * H + j]), o = sigm(xg[3 * H + j] + hg[3 * H + j]);
        *c = f * *c + i * g;
        return o * tanh(*c);
    }
    default: {
        double r = sigm(xg[j] + hg[j]), z = sigm(xg[H + j] + hg[H + j]);
        double n = tanh(xg[2 * H + j] + r * hg[2 * H + j]);
        return (1 - z) * n + z * hp;
    }
    }
}

static void rnn_ref(const cf_prob *p, double *const *in, double *const *out)
{
    const rnn_entry *e = p->arg;
    int T = p->ia[0], B = p->ia[1], I = p->ia[2], H = p->ia[3], G = GATES[e->kind], k = 3;
    const double *x = in[0], *wih = in[1], *whh = in[2];
    const double *bih = e->bias ? in[k++] : NULL, *bhh = e->bias ? in[k++] : NULL;
    const double *h0 = e->state ? in[k++] : NULL, *c0 = e->state && e->kind == R_LSTM ? in[k++] : NULL;
    double *h = calloc((size_t)(B * H), sizeof *h), *c = calloc((size_t)(B * H), sizeof *c);
    double *xg = malloc(sizeof *xg * (size_t)(G * H)), *hg = malloc(sizeof *hg * (size_t)(G * H));
    if (h0) memcpy(h, h0, sizeof *h * (size_t)(B * H));
    if (c0) memcpy(c, c0, sizeof *c * (size_t)(B * H));
    for (int t = 0; t < T; t++) {
        double *hnew = out[0] + (size_t)t * B * H;
        for (int b = 0; b < B; b++) {
            for (int r = 0; r < G * H; r++) {
                xg[r] = bih ? bih[r] : 0;
                hg[r] = bhh ? bhh[r] : 0;
                for (int q = 0; q < I; q++) xg[r] += wih[r * I + q] * x[((size_t)t * B + b) * I + q];
                for (int q = 0; q < H; q++) hg[r] += whh[r * H + q] * h[b * H + q];
            }
            for (int j = 0; j < H; j++) hnew[b * H + j] = cell(e->kind, H, j, xg, hg, h[b * H + j], &c[b * H + j]);
        }
        memcpy(h, hnew, sizeof *h * (size_t)(B * H));
    }
    memcpy(out[1], h, sizeof *h * (size_t)(B * H));
    if (e->kind == R_LSTM) memcpy(out[2], c, sizeof *c * (size_t)(B * H));
    free(h);
    free(c);
    free(xg);
    free(hg);
}

static const rnn_entry E_TANH = {R_TANH, true, true, 4, 12}, E_RELU = {R_RELU, false, false, 3, 10};
static const rnn_entry E_LSTM = {R_LSTM, true, true, 4, 12}, E_LSTM1 = {R_LSTM, false, false, 1, 1};
static const rnn_entry E_GRU = {R_GRU, true, true, 4, 12}, E_GRU_NB = {R_GRU, false, false, 3, 10};

#define RNN(name, e) {name, rnn_setup, rnn_run, rnn_ref, NULL, &e}

const cf_case cf_rnn_cases[] = {
    RNN("rnn (tanh, biases, h0)", E_TANH),
    RNN("rnn (relu, no biases)", E_RELU),
    RNN("lstm (biases, h0, c0)", E_LSTM),
    RNN("lstm (one step, no biases)", E_LSTM1),
    RNN("gru (biases, h0)", E_GRU),
    RNN("gru (no biases)", E_GRU_NB),
};
const int cf_rnn_count = (int)(sizeof cf_rnn_cases / sizeof *cf_rnn_cases);
