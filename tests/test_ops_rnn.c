/* clg_rnn (tanh, relu), clg_lstm and clg_gru: the outputs and final states against a
 * plain-C reference of PyTorch's equations (with and without biases and initial states,
 * sequence length 1), the memory of a 1,000-step sequence given back at the end of its
 * scope, and the errors. Gradient checks: test_grad_rnn.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "optest.h"

#define IN(...) ((optest_input[]){__VA_ARGS__})
#define SH(...) CLG_SHAPE(__VA_ARGS__)

enum { RNN_TANH, RNN_RELU, LSTM, GRU };
static const int GATES[] = {1, 1, 4, 3};
static const char *const NAMES[] = {"rnn tanh", "rnn relu", "lstm", "gru"};

static double sigm(double x) { return 1 / (1 + exp(-x)); }

/* One layer in double: x [T, B, I], weights as PyTorch's; h0, c0 NULL for zeros.
 * out [T, B, H], hn and cn [B, H]. */
typedef struct ref_args {
    int kind, T, B, I, H;
    const double *x, *wih, *whh, *bih, *bhh, *h0, *c0;
} ref_args;

static void ref_layer(const ref_args *a, double *out, double *hn, double *cn)
{
    int B = a->B, H = a->H, I = a->I, G = GATES[a->kind];
    double *h = calloc((size_t)(B * H), sizeof *h), *c = calloc((size_t)(B * H), sizeof *c);
    double *xg = malloc(sizeof *xg * (size_t)(G * H)), *hg = malloc(sizeof *hg * (size_t)(G * H));
    if (a->h0) memcpy(h, a->h0, sizeof *h * (size_t)(B * H));
    if (a->c0) memcpy(c, a->c0, sizeof *c * (size_t)(B * H));
    for (int t = 0; t < a->T; t++) {
        double *hnew = out + (size_t)t * B * H;
        for (int b = 0; b < B; b++) {
            for (int r = 0; r < G * H; r++) {   /* the two projections, apart (the GRU needs them so) */
                xg[r] = a->bih ? a->bih[r] : 0;
                hg[r] = a->bhh ? a->bhh[r] : 0;
                for (int k = 0; k < I; k++) xg[r] += a->wih[r * I + k] * a->x[((size_t)t * B + b) * I + k];
                for (int k = 0; k < H; k++) hg[r] += a->whh[r * H + k] * h[b * H + k];
            }
            for (int j = 0; j < H; j++) {
                double *hj = &hnew[b * H + j], hp = h[b * H + j];
                if (a->kind == RNN_TANH) *hj = tanh(xg[j] + hg[j]);
                else if (a->kind == RNN_RELU) *hj = fmax(xg[j] + hg[j], 0);
                else if (a->kind == LSTM) {
                    double i = sigm(xg[j] + hg[j]), f = sigm(xg[H + j] + hg[H + j]);
                    double g = tanh(xg[2 * H + j] + hg[2 * H + j]), o = sigm(xg[3 * H + j] + hg[3 * H + j]);
                    c[b * H + j] = f * c[b * H + j] + i * g;   /* c of other units is not read again this step */
                    *hj = o * tanh(c[b * H + j]);
                } else {
                    double r = sigm(xg[j] + hg[j]), z = sigm(xg[H + j] + hg[H + j]);
                    double n = tanh(xg[2 * H + j] + r * hg[2 * H + j]);
                    *hj = (1 - z) * n + z * hp;
                }
            }
        }
        memcpy(h, hnew, sizeof *h * (size_t)(B * H));
    }
    memcpy(hn, h, sizeof *h * (size_t)(B * H));
    if (cn) memcpy(cn, c, sizeof *c * (size_t)(B * H));
    free(h);
    free(c);
    free(xg);
    free(hg);
}

static clg_tensor *run_layer(int kind, clg_tensor *x, clg_tensor *wih, clg_tensor *whh, clg_tensor *bih,
                             clg_tensor *bhh, clg_tensor *h0, clg_tensor *c0, clg_tensor **hn, clg_tensor **cn)
{
    if (cn) *cn = NULL;
    if (kind == LSTM) return clg_lstm(x, wih, whh, bih, bhh, h0, c0, hn, cn);
    if (kind == GRU) return clg_gru(x, wih, whh, bih, bhh, h0, hn);
    return clg_rnn(x, wih, whh, bih, bhh, h0, kind == RNN_RELU, hn);
}

/* One configuration against the reference. */
static void forward_case(clg_device *dev, clg_dtype dt, int kind, int T, int B, int I, int H, bool bias, bool state,
                         optest_layout lay)
{
    int G = GATES[kind];
    size_t nx = (size_t)T * B * I, nw = (size_t)G * H * I, nh = (size_t)G * H * H, nb = (size_t)G * H,
           ns = (size_t)B * H;
    double *v = malloc(sizeof *v * (nx + nw + nh + 2 * nb + 2 * ns));
    optest_fill(v, (int64_t)(nx + nw + nh + 2 * nb + 2 * ns), -1, 1, 1000u + (uint64_t)kind * 17 + (uint64_t)T);
    for (size_t i = nx; i < nx + nw + nh; i++) v[i] /= sqrt((double)H);   /* PyTorch's scale: no blow-up */
    ref_args a = {kind, T, B, I, H, v, v + nx, v + nx + nw, NULL, NULL, NULL, NULL};
    if (bias) a.bih = v + nx + nw + nh, a.bhh = a.bih + nb;
    if (state) a.h0 = v + nx + nw + nh + 2 * nb, a.c0 = a.h0 + ns;
    optest_round(dt, v, (int64_t)(nx + nw + nh + 2 * nb + 2 * ns));
    double *out = malloc(sizeof *out * (size_t)T * ns), hn[512], cn[512];
    ref_layer(&a, out, hn, kind == LSTM ? cn : NULL);

    clg_scope_begin(dev);
    clg_tensor *x = optest_tensor(dev, dt, SH(T, B, I), a.x, lay), *wih = optest_tensor(dev, dt, SH(G * H, I), a.wih, lay);
    clg_tensor *whh = optest_tensor(dev, dt, SH(G * H, H), a.whh, lay);
    clg_tensor *bih = bias ? optest_tensor(dev, dt, SH(G * H), a.bih, lay) : NULL;
    clg_tensor *bhh = bias ? optest_tensor(dev, dt, SH(G * H), a.bhh, lay) : NULL;
    clg_tensor *h0 = state ? optest_tensor(dev, dt, SH(B, H), a.h0, lay) : NULL;
    clg_tensor *c0 = state && kind == LSTM ? optest_tensor(dev, dt, SH(B, H), a.c0, lay) : NULL;
    clg_tensor *hT, *cT;
    clg_tensor *y = run_layer(kind, x, wih, whh, bih, bhh, h0, c0, &hT, kind == LSTM ? &cT : NULL);
    char what[160];
    snprintf(what, sizeof what, "%s %s T=%d B=%d I=%d H=%d%s%s %s", NAMES[kind], clg_dtype_name(dt), T, B, I, H,
             bias ? " bias" : "", state ? " h0" : "", optest_layout_names[lay]);
    CHECK_MSG(y != NULL, "%s: %s", what, clg_device_error(dev));
    double tol = optest_tol(dt, 1e-12, 2e-5);
    if (y) {
        optest_close(what, y, out, (int64_t)T * (int64_t)ns, tol, tol);
        optest_close(what, hT, hn, (int64_t)ns, tol, tol);
        if (kind == LSTM) optest_close(what, cT, cn, (int64_t)ns, tol, tol);
    }
    clg_scope_end(dev);
    free(out);
    free(v);
}

static void forward_checks(clg_device *dev)
{
    clg_dtype dts[2];
    int ndt = optest_float_dtypes(dev, dts);
    for (int di = 0; di < ndt; di++)
        for (int kind = 0; kind < 4; kind++) {
            for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++)   /* operands in every layout */
                forward_case(dev, dts[di], kind, 5, 3, 4, 6, true, true, (optest_layout)l);
            forward_case(dev, dts[di], kind, 5, 3, 4, 6, false, false, OPTEST_CONTIGUOUS);
            forward_case(dev, dts[di], kind, 1, 2, 3, 5, true, false, OPTEST_CONTIGUOUS);   /* one step */
            forward_case(dev, dts[di], kind, 3, 1, 7, 4, false, true, OPTEST_SLICED);
            if (!optest_small()) forward_case(dev, dts[di], kind, 17, 8, 24, 32, true, true, OPTEST_CONTIGUOUS);
        }
}

/* ---- a long sequence's memory comes back with its scope ------------------------------------------ */

static void long_sequence(clg_device *dev)
{
    const int T = optest_small() ? 50 : 1000, B = 2, I = 3, H = 8;
    clg_scope_begin(dev);
    clg_tensor *w[4] = {clg_rand(dev, CLG_F32, SH(4 * H, I), -0.3, 0.3), clg_rand(dev, CLG_F32, SH(4 * H, H), -0.3, 0.3),
                        clg_rand(dev, CLG_F32, SH(4 * H), -0.3, 0.3), clg_rand(dev, CLG_F32, SH(4 * H), -0.3, 0.3)};
    for (int i = 0; i < 4; i++) CHECK_OK(dev, clg_tensor_set_requires_grad(w[i], true));
    uint64_t before = clg_device_pool_stats(dev).in_use_bytes;
    for (int round = 0; round < 2; round++) {
        clg_scope_begin(dev);
        clg_tensor *x = clg_rand(dev, CLG_F32, SH(T, B, I), -1, 1);
        clg_tensor *y = clg_lstm(x, w[0], w[1], w[2], w[3], NULL, NULL, NULL, NULL);
        clg_tensor *loss = y ? clg_mean(clg_mul(y, y), 0, NULL, false) : NULL;
        CHECK_MSG(loss != NULL, "lstm over %d steps: %s", T, clg_device_error(dev));
        if (loss) CHECK_OK(dev, clg_backward(loss, NULL));
        double v = 0;
        if (loss) CHECK_OK(dev, clg_tensor_item(loss, &v));
        CHECK_MSG(isfinite(v), "lstm over %d steps: loss %g", T, v);
        clg_scope_end(dev);
        /* the gradients stay (made in the first round, reused after); nothing else */
        uint64_t after = clg_device_pool_stats(dev).in_use_bytes;
        uint64_t grads = 0;
        for (int i = 0; i < 4; i++) grads += (uint64_t)clg_tensor_numel(w[i]) * 4;
        CHECK_MSG(after <= before + 2 * grads, "lstm over %d steps: %llu bytes in use before, %llu after (round %d)",
                  T, (unsigned long long)before, (unsigned long long)after, round);
    }
    clg_scope_end(dev);
}

/* ---- errors name the op and the shapes ---------------------------------------------------------- */

static void error_checks(clg_device *dev)
{
    clg_scope_begin(dev);
    clg_tensor *x = clg_zeros(dev, CLG_F32, SH(4, 2, 3));
    clg_tensor *wih = clg_zeros(dev, CLG_F32, SH(8, 3)), *whh = clg_zeros(dev, CLG_F32, SH(8, 2));
    clg_tensor *bad = clg_zeros(dev, CLG_F32, SH(8, 3));
    CHECK(clg_lstm(x, wih, bad, NULL, NULL, NULL, NULL, NULL, NULL) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "lstm") && strstr(clg_device_error(dev), "weight_hh"), "%s",
              clg_device_error(dev));
    clg_tensor *h0 = clg_zeros(dev, CLG_F32, SH(3, 2));
    CHECK(clg_lstm(x, wih, whh, NULL, NULL, h0, NULL, NULL, NULL) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "h0"), "%s", clg_device_error(dev));
    CHECK(clg_gru(x, wih, whh, NULL, NULL, NULL, NULL) == NULL);   /* 8 rows are not 3 gates */
    CHECK_MSG(strstr(clg_device_error(dev), "gru"), "%s", clg_device_error(dev));
    clg_tensor *x2 = clg_zeros(dev, CLG_F32, SH(2, 3));
    CHECK(clg_rnn(x2, wih, whh, NULL, NULL, NULL, false, NULL) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "[T, B, input]"), "%s", clg_device_error(dev));
    clg_device_clear_error(dev);
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    forward_checks(dev);
    long_sequence(dev);
    error_checks(dev);
    clg_device_close(dev);
    return check_report("test_ops_rnn");
}
