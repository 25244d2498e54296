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

static bool has_recurrent(const clg_module *m)
{
    if (clg_module_is_recurrent(m)) return true;
    for (int i = 0; i < clg_module_child_count(m); i++)
        if (has_recurrent(clg_module_child_at(m, i))) return true;
    return false;
}
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
    return clg_text_loss_ex(model, bytes, len, streams, window, NULL, nats, count);
}

/* Every window, no progress calls. */
clg_text_eval_options clg_text_eval_defaults(void) { return (clg_text_eval_options){0}; }

clg_status clg_text_loss_ex(clg_module *model, const uint8_t *bytes, size_t len, int streams, int window,
                            const clg_text_eval_options *opt, double *nats, int64_t *count)
{
    if (!model || !bytes || streams < 1 || window < 1 || !nats) return CLG_ERR_INVALID_ARGUMENT;
    clg_device *dev = clg_module_device(model);
    int64_t windows = clg_text_windows(len, streams, window, true);
    if (opt && opt->max_windows > 0 && windows > opt->max_windows) {   /* each stream's first windows */
        size_t part = (size_t)opt->max_windows * (size_t)window + 1;
        len = part * (size_t)streams;
        windows = clg_text_windows(len, streams, window, true);
    }
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
        if (st == CLG_OK && opt && opt->progress) opt->progress(w + 1, windows, opt->user);
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

/* The index picked from 1-D values by drawing from `probs` (a tensor of their order):
 * order[draw], or the draw itself when order is NULL. */
static clg_tensor *through(clg_tensor *order, clg_tensor *draw)
{
    return order ? clg_gather(order, 0, draw) : draw;
}

/* The next byte from the last position's logits [256], on the device: softmax(logits /
 * temperature) restricted to the top_k largest (0: all), then to the smallest set of
 * the most likely whose probabilities reach top_p (1: all), renormalised and drawn
 * with clg_multinomial from the device's generator; the argmax at temperature 0. */
static clg_tensor *pick(clg_tensor *logits, const clg_text_sampling *o)
{
    if (o->temperature <= 0) return clg_argmax(logits, 0, true);
    clg_tensor *z = clg_div_scalar(logits, o->temperature), *top = NULL;
    if (z && o->top_k > 0 && o->top_k < clg_tensor_dim(z, 0)) {   /* z becomes the k largest */
        clg_tensor *all = z;
        if (clg_topk(all, o->top_k, 0, true, &z, &top) != CLG_OK) return NULL;
    }
    clg_tensor *p = clg_softmax(z, 0), *order = NULL;
    if (p && o->top_p < 1) {   /* nucleus: keep the sorted ones whose predecessors sum below top_p */
        clg_tensor *sorted = NULL;
        if (clg_sort(p, 0, true, &sorted, &order) != CLG_OK) return NULL;
        clg_tensor *before = clg_sub(clg_cumsum(sorted, 0), sorted);
        clg_tensor *cut = before ? clg_full(clg_tensor_device(p), clg_tensor_dtype(p), 1, (int64_t[]){1}, o->top_p) : NULL;
        p = clg_mul(sorted, clg_lt(before, cut));
    }
    clg_tensor *draw = clg_multinomial(p, 1, true);
    return through(top, through(order, draw));
}

/* Feed tokens [1, n] and pick the byte that follows them. */
static clg_status feed(clg_module *model, const int32_t *tokens, int64_t n, const clg_text_sampling *o, int *next)
{
    clg_device *dev = clg_module_device(model);
    clg_scope_begin(dev);
    clg_tensor *x = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(1, n), tokens);
    clg_tensor *logits = x ? clg_module_forward(model, x) : NULL;
    clg_status st = logits ? CLG_OK : dev->status;
    if (st == CLG_OK && (clg_tensor_ndim(logits) != 3 || clg_tensor_dim(logits, 2) != 256))
        st = clg__fail(dev, CLG_ERR_SHAPE, "clg_text_sample: the model gives %s for tokens [1, %lld]; a character "
                       "model gives [1, T, 256]", CLG_DESC(logits), (long long)n);
    if (st == CLG_OK) {
        clg_tensor *last = clg_reshape(clg_narrow(logits, 1, n - 1, 1), 1, (int64_t[]){256});
        clg_tensor *byte = last ? pick(clg__widen16(last), o) : NULL;
        int32_t b = 0;
        st = byte ? clg_tensor_to_host(byte, &b, sizeof b) : dev->status;
        *next = b;
    }
    clg_scope_end(dev);
    return st;
}

clg_status clg_text_sample_with(clg_module *model, const uint8_t *prime, size_t prime_len, uint8_t *out, size_t n,
                                const clg_text_sampling *o)
{
    if (!model || !out || !prime || prime_len == 0 || !o) return CLG_ERR_INVALID_ARGUMENT;
    clg_device *dev = clg_module_device(model);
    if (!(o->temperature >= 0) || o->top_k < 0 || !(o->top_p > 0 && o->top_p <= 1))
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_text_sample: temperature %g (want >= 0), top_k %d (want "
                         ">= 0), top_p %g (want in (0, 1])", o->temperature, o->top_k, o->top_p);
    /* A recurrent model reads the prime once, then one byte at a time from its state; any
     * other (a transformer) reads its whole context, at most its longest, each time. */
    bool recurrent = has_recurrent(model);
    int64_t ctx = clg_module_context(model);
    int32_t *tokens = malloc(sizeof *tokens * (prime_len + n));
    if (!tokens) return clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_text_sample: out of host memory");
    for (size_t i = 0; i < prime_len; i++) tokens[i] = prime[i];
    /* draw from the device's generator at the seed, and give it back as it was */
    uint64_t kept_seed, kept_offset;
    clg_rng_get_state(dev, &kept_seed, &kept_offset);
    clg_manual_seed(dev, o->seed);
    bool training = clg_module_is_training(model);
    clg_module_train(model, false);
    clg_text_model_stateful(model, true);   /* the prime once, then one byte at a time */
    clg_no_grad_begin(dev);
    int next = 0;
    int64_t have = (int64_t)prime_len, from = ctx > 0 && have > ctx ? have - ctx : 0;
    clg_status st = feed(model, tokens + from, have - from, o, &next);
    for (size_t i = 0; st == CLG_OK && i < n; i++) {
        out[i] = (uint8_t)next;
        tokens[have++] = next;
        from = recurrent ? have - 1 : ctx > 0 && have > ctx ? have - ctx : 0;
        if (i + 1 < n) st = feed(model, tokens + from, have - from, o, &next);
    }
    clg_no_grad_end(dev);
    clg_text_model_stateful(model, false);
    clg_module_train(model, training);
    clg_rng_set_state(dev, kept_seed, kept_offset);
    free(tokens);
    return st;
}

clg_status clg_text_sample(clg_module *model, const uint8_t *prime, size_t prime_len, uint8_t *out, size_t n,
                           double temperature, uint64_t seed)
{
    clg_text_sampling o = {.temperature = temperature, .top_k = 0, .top_p = 1, .seed = seed};
    return clg_text_sample_with(model, prime, prime_len, out, n, &o);
}
