/* text_eval.c: a character language model's loss on held-out text, text sampled from
 * it, and setting its recurrent layers to carry their state, as the text trainers,
 * `clgrad eval` and `clgrad sample` need. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clgrad/train.h"
#include "tensor_impl.h"

/* Every recurrent module in m's tree, depth first. */
static void each_recurrent(clg_module *m, void (*fn)(clg_module *, bool), bool arg)
{
    if (clg_module_is_recurrent(m)) fn(m, arg);
    for (int i = 0; i < clg_module_child_count(m); i++) each_recurrent(clg_module_child_at(m, i), fn, arg);
}

static void set_stateful(clg_module *m, bool on) { clg_rnn_set_stateful(m, on); }
static void reset(clg_module *m, bool unused) { (void)unused; clg_rnn_reset_state(m); }

void clg_text_model_stateful(clg_module *model, bool on) { each_recurrent(model, set_stateful, on); }
void clg_text_model_reset(clg_module *model) { each_recurrent(model, reset, false); }

/* The summed loss of one window into *total (a 0-d device tensor, out of scopes). */
static clg_status window_loss(clg_module *model, const uint8_t *bytes, size_t len, int streams, int window,
                              int64_t w, clg_tensor *total)
{
    clg_device *dev = clg_module_device(model);
    clg_tensor *x, *y;
    clg_status st = clg_text_window(dev, bytes, len, streams, window, w, &x, &y);
    if (st != CLG_OK) return st;
    clg_tensor *logits = clg_module_forward(model, x);
    int64_t classes = logits ? clg_tensor_dim(logits, -1) : 0;
    if (!logits || clg_tensor_ndim(logits) != 3 || classes < 256)
        return logits ? clg__fail(dev, CLG_ERR_SHAPE, "clg_text_loss: the model gives %s for tokens %s; a character "
                                  "model gives [streams, T, 256]", CLG_DESC(logits), CLG_DESC(x))
                      : dev->status;
    clg_tensor *l = clg_cross_entropy(clg_reshape(logits, CLG_SHAPE(-1, classes)), clg_reshape(y, CLG_SHAPE(-1)),
                                      CLG_REDUCE_SUM);
    return l ? clg_axpy_(total, 1.0, l) : dev->status;
}

clg_status clg_text_loss(clg_module *model, const uint8_t *bytes, size_t len, int streams, int window,
                         double *nats, int64_t *count)
{
    if (!model || !bytes || streams < 1 || window < 1 || !nats) return CLG_ERR_INVALID_ARGUMENT;
    clg_device *dev = clg_module_device(model);
    int64_t windows = clg_text_windows(len, streams, window, true);
    if (windows == 0)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_text_loss: %zu bytes make no window of %d streams", len,
                         streams);
    clg_tensor *total = clg_zeros(dev, CLG_F32, 0, NULL);
    if (!total) return dev->status;
    clg__tensor_unscope(total);
    bool training = clg_module_is_training(model);
    clg_module_train(model, false);
    clg_text_model_stateful(model, true);   /* from zeros, carried across the windows */
    clg_no_grad_begin(dev);
    clg_status st = CLG_OK;
    for (int64_t w = 0; st == CLG_OK && w < windows; w++) {
        clg_scope_begin(dev);
        st = window_loss(model, bytes, len, streams, window, w, total);
        clg_scope_end(dev);
    }
    clg_no_grad_end(dev);
    clg_text_model_stateful(model, false);
    clg_module_train(model, training);
    double sum = NAN;
    if (st == CLG_OK) st = clg_tensor_item(total, &sum);
    clg__tensor_release(total);
    int64_t n = (int64_t)streams * ((int64_t)(len / (size_t)streams) - 1);   /* positions 1..part-1 of each */
    *nats = sum / (double)n;
    if (count) *count = n;
    return st;
}

/* ---- sampling ---------------------------------------------------------------------------------- */

static uint64_t next_random(uint64_t *s)   /* xorshift64*: reproducible for a seed, any platform */
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* A byte from the last position's logits: softmax(logits / temperature) sampled, or
 * the most likely byte at temperature 0. */
static int pick(const float *logits, int n, double temperature, uint64_t *rng)
{
    int best = 0;
    for (int i = 1; i < n; i++) if (logits[i] > logits[best]) best = i;
    if (temperature <= 0) return best;
    double p[256], sum = 0;
    for (int i = 0; i < n; i++) sum += p[i] = exp((logits[i] - logits[best]) / temperature);
    double u = (double)(next_random(rng) >> 11) / 9007199254740992.0 * sum;
    for (int i = 0; i < n; i++) if ((u -= p[i]) < 0) return i;
    return n - 1;
}

/* Feed tokens [1, n] and pick the byte that follows them. */
static clg_status feed(clg_module *model, const int32_t *tokens, int64_t n, double temperature, uint64_t *rng,
                       int *next)
{
    clg_device *dev = clg_module_device(model);
    clg_scope_begin(dev);
    clg_tensor *x = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(1, n), tokens);
    clg_tensor *logits = x ? clg_module_forward(model, x) : NULL;
    clg_status st = logits ? CLG_OK : dev->status;
    if (st == CLG_OK && (clg_tensor_ndim(logits) != 3 || clg_tensor_dim(logits, 2) != 256))
        st = clg__fail(dev, CLG_ERR_SHAPE, "clg_text_sample: the model gives %s for tokens [1, %lld]; a character "
                       "model gives [1, T, 256]", CLG_DESC(logits), (long long)n);
    float last[256];
    if (st == CLG_OK) {
        clg_tensor *row = clg_contiguous(clg_narrow(logits, 1, n - 1, 1));
        st = row ? clg_tensor_to_host(row, last, sizeof last) : dev->status;
    }
    if (st == CLG_OK) *next = pick(last, 256, temperature, rng);
    clg_scope_end(dev);
    return st;
}

clg_status clg_text_sample(clg_module *model, const uint8_t *prime, size_t prime_len, uint8_t *out, size_t n,
                           double temperature, uint64_t seed)
{
    if (!model || !out || !prime || prime_len == 0) return CLG_ERR_INVALID_ARGUMENT;
    clg_device *dev = clg_module_device(model);
    int32_t *tokens = malloc(sizeof *tokens * prime_len);
    if (!tokens) return clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_text_sample: out of host memory");
    for (size_t i = 0; i < prime_len; i++) tokens[i] = prime[i];
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
    bool training = clg_module_is_training(model);
    clg_module_train(model, false);
    clg_text_model_stateful(model, true);   /* the prime once, then one byte at a time */
    clg_no_grad_begin(dev);
    int next = 0;
    clg_status st = feed(model, tokens, (int64_t)prime_len, temperature, &rng, &next);
    for (size_t i = 0; st == CLG_OK && i < n; i++) {
        out[i] = (uint8_t)next;
        int32_t t = next;
        if (i + 1 < n) st = feed(model, &t, 1, temperature, &rng, &next);
    }
    clg_no_grad_end(dev);
    clg_text_model_stateful(model, false);
    clg_module_train(model, training);
    free(tokens);
    return st;
}
