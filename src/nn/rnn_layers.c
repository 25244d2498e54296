/* rnn_layers.c: the recurrent modules RNN, LSTM and GRU (stacked layers over a whole
 * sequence, clg_lstm and friends per layer) and the single-step cells RNNCell, LSTMCell
 * and GRUCell. Parameters are named and laid out as PyTorch's (weight_ih_l0 [G H, in],
 * weight_hh_l0, bias_ih_l0, bias_hh_l0, ...; the cells' weight_ih, ...), so a state
 * dict moves between them unchanged. A stateful module (clg_rnn_set_stateful) keeps
 * the final state of each forward, detached, and starts the next one from it: truncated
 * backpropagation through time over windows of a long stream. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"

typedef struct rnn_data {
    clg_rnn_mode mode;
    int64_t in, hidden;
    bool cell;                    /* a single-step cell: one layer, [B, in] in */
    clg_rnn_options opt;
    bool stateful;
    clg_tensor *state_h, *state_c;   /* [layers, B, H], out of every scope; NULL: zeros */
} rnn_data;

static const char *const TYPE_NAME[] = {"RNN", "RNN", "LSTM", "GRU"};
static const char *const CELL_NAME[] = {"RNNCell", "RNNCell", "LSTMCell", "GRUCell"};
static int gates(clg_rnn_mode mode) { return mode == CLG_LSTM ? 4 : mode == CLG_GRU ? 3 : 1; }

static void drop_state(rnn_data *d)
{
    clg__tensor_release(d->state_h);
    clg__tensor_release(d->state_c);
    d->state_h = d->state_c = NULL;
}

static void rnn_free(void *p)
{
    rnn_data *d = p;
    if (d) drop_state(d);
    free(d);
}

clg_rnn_options clg_rnn_defaults(void) { return (clg_rnn_options){1, true, false, 0.0}; }

/* One layer's (or a cell's) four parameters; suffix "_l0" or "". */
static clg_tensor *param(const clg_module *m, const char *what, const char *suffix)
{
    char name[48];
    snprintf(name, sizeof name, "%s%s", what, suffix);
    return clg_module_param(m, name);
}

/* x [T, B, in] through layer l from h0 (c0) [B, H] or NULL. */
static clg_tensor *run_layer(const clg_module *m, int l, clg_tensor *x, clg_tensor *h0, clg_tensor *c0,
                             clg_tensor **hn, clg_tensor **cn)
{
    const rnn_data *d = m->data;
    char sfx[16] = "";
    if (!d->cell) snprintf(sfx, sizeof sfx, "_l%d", l);
    clg_tensor *wih = param(m, "weight_ih", sfx), *whh = param(m, "weight_hh", sfx);
    clg_tensor *bih = param(m, "bias_ih", sfx), *bhh = param(m, "bias_hh", sfx);
    switch (d->mode) {
    case CLG_LSTM: return clg_lstm(x, wih, whh, bih, bhh, h0, c0, hn, cn);
    case CLG_GRU: return clg_gru(x, wih, whh, bih, bhh, h0, hn);
    default: return clg_rnn(x, wih, whh, bih, bhh, h0, d->mode == CLG_RNN_RELU, hn);
    }
}

/* Layer l's slice [B, H] of a [layers, B, H] state, or NULL. */
static clg_tensor *layer_state(clg_tensor *s, int l)
{
    if (!s) return NULL;
    clg_tensor *row = clg_narrow(s, 0, l, 1);
    clg_tensor *v = row ? clg_squeeze(row, 0) : NULL;
    clg_tensor_free(row);
    return v;
}

static bool check_state(const clg_module *m, const char *name, const clg_tensor *s, int64_t batch)
{
    const rnn_data *d = m->data;
    if (!s) return true;
    if (s->ndim == 3 && s->shape[0] == d->opt.num_layers && s->shape[1] == batch && s->shape[2] == d->hidden)
        return true;
    clg__op_fail(m->dev, CLG_ERR_SHAPE, TYPE_NAME[d->mode], "%s %s, want [%d, %lld, %lld] (layers, batch, hidden)",
                 name, CLG_DESC(s), d->opt.num_layers, (long long)batch, (long long)d->hidden);
    return false;
}

/* The stacked layers over time-first x, collecting each layer's final state. */
static clg_tensor *run_stack(clg_module *m, clg_tensor *x, clg_tensor *h0, clg_tensor *c0, clg_tensor **hs,
                             clg_tensor **cs)
{
    const rnn_data *d = m->data;
    clg_tensor *y = x;
    for (int l = 0; l < d->opt.num_layers && y; l++) {
        if (l > 0 && d->opt.dropout > 0) y = clg_dropout(y, d->opt.dropout, m->training);
        clg_tensor *hl = layer_state(h0, l), *cl = layer_state(c0, l);
        y = y ? run_layer(m, l, y, hl, cl, &hs[l], d->mode == CLG_LSTM ? &cs[l] : NULL) : NULL;
    }
    return y;
}

clg_tensor *clg_rnn_forward(clg_module *m, clg_tensor *x, clg_tensor *h0, clg_tensor *c0, clg_tensor **hn,
                            clg_tensor **cn)
{
    if (hn) *hn = NULL;
    if (cn) *cn = NULL;
    if (!m || !x) return NULL;
    rnn_data *d = m->data;
    if (m->iface->free_data != rnn_free || d->cell)
        return clg__op_fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "rnn_forward", "module %s is not RNN, LSTM or GRU",
                            m->iface->type);
    if (x->ndim != 3)
        return clg__op_fail(m->dev, CLG_ERR_SHAPE, TYPE_NAME[d->mode], "x %s, want [%s, %lld]", CLG_DESC(x),
                            d->opt.batch_first ? "batch, time" : "time, batch", (long long)d->in);
    int64_t batch = x->shape[d->opt.batch_first ? 0 : 1];
    if (!check_state(m, "h0", h0, batch) || !check_state(m, "c0", c0, batch)) return NULL;
    if (c0 && d->mode != CLG_LSTM)
        return clg__op_fail(m->dev, CLG_ERR_INVALID_ARGUMENT, TYPE_NAME[d->mode], "c0 given to a %s (only LSTMs have a cell state)", TYPE_NAME[d->mode]);
    clg_tensor *xt = d->opt.batch_first ? clg_contiguous(clg_transpose(x, 0, 1)) : x;
    clg_tensor *hs[64] = {0}, *cs[64] = {0};
    clg_tensor *y = xt ? run_stack(m, xt, h0, c0, hs, cs) : NULL;
    if (y && hn) *hn = clg_stack(d->opt.num_layers, hs, 0);
    if (y && cn && d->mode == CLG_LSTM) *cn = clg_stack(d->opt.num_layers, cs, 0);
    if (y && d->opt.batch_first) y = clg_transpose(y, 0, 1);
    if (y && ((hn && !*hn) || (cn && d->mode == CLG_LSTM && !*cn))) return NULL;
    return y;
}

/* A detached copy of s, out of every scope, for the module to keep. */
static clg_tensor *keep(clg_tensor *s)
{
    clg_device *dev = s->dev;
    clg_no_grad_begin(dev);
    clg_tensor *t = clg__copy_as(s, s->dtype);
    clg_no_grad_end(dev);
    if (t) clg__tensor_unscope(t);
    return t;
}

/* Zeros as the state of a layer that has none, made outside the open capture, as a
 * step before it would have made them: the captured step then reads and writes its
 * state in place like every later step. From zeros or from no state, the arithmetic
 * is the same. */
typedef struct zero_ref { clg_module *m; rnn_data *d; int64_t batch; clg_dtype dtype; } zero_ref;

static clg_status make_zero_state(void *data)
{
    zero_ref *r = data;
    clg_module *m = r->m;
    rnn_data *d = r->d;
    int64_t batch = r->batch;
    clg_dtype dtype = r->dtype;
    clg_no_grad_begin(m->dev);
    const int64_t shape[3] = {d->opt.num_layers, batch, d->hidden};
    clg_tensor *h = clg__tensor_new(m->dev, dtype, 3, shape);
    clg_tensor *cs = d->mode == CLG_LSTM ? clg__tensor_new(m->dev, dtype, 3, shape) : NULL;
    clg_status st = h && (cs || d->mode != CLG_LSTM) ? clg_fill_(h, 0.0) : m->dev->status;
    if (st == CLG_OK && cs) st = clg_fill_(cs, 0.0);
    clg_no_grad_end(m->dev);
    if (h) clg__tensor_unscope(h);
    if (cs) clg__tensor_unscope(cs);
    d->state_h = h;
    d->state_c = cs;
    if (st != CLG_OK) drop_state(d);
    return st;
}

static clg_status zero_state(clg_module *m, rnn_data *d, int64_t batch, clg_dtype dtype)
{
    return clg__uncaptured(m->dev, make_zero_state, &(zero_ref){m, d, batch, dtype});
}

static clg_tensor *rnn_module_forward(clg_module *m, clg_tensor *x)
{
    rnn_data *d = m->data;
    if (!d->stateful) return clg_rnn_forward(m, x, NULL, NULL, NULL, NULL);
    int64_t batch = x && x->ndim == 3 ? x->shape[d->opt.batch_first ? 0 : 1] : -1;
    if (d->state_h && d->state_h->shape[1] != batch) drop_state(d);   /* a new batch size starts from zeros */
    if (!d->state_h && batch >= 0 && clg__capturing(m->dev) && zero_state(m, d, batch, x->dtype) != CLG_OK)
        return NULL;
    clg_tensor *hn = NULL, *cn = NULL, *h0 = NULL, *c0 = NULL;
    if (d->state_h) {   /* snapshots: the state is overwritten below, and the backward reads h0 */
        clg_no_grad_begin(m->dev);
        h0 = clg__copy_as(d->state_h, d->state_h->dtype);
        c0 = d->state_c ? clg__copy_as(d->state_c, d->state_c->dtype) : NULL;
        clg_no_grad_end(m->dev);
        if (!h0 || (d->state_c && !c0)) return NULL;
    }
    clg_tensor *y = clg_rnn_forward(m, x, h0, c0, &hn, d->mode == CLG_LSTM ? &cn : NULL);
    if (!y) return NULL;
    if (d->state_h) {   /* written in place: a captured graph (clgrad/graph.h) reads it there next step */
        clg_no_grad_begin(m->dev);
        clg_status st = clg_copy_(d->state_h, hn);
        if (st == CLG_OK && cn) st = clg_copy_(d->state_c, cn);
        clg_no_grad_end(m->dev);
        return st == CLG_OK ? y : NULL;
    }
    clg_tensor *h = keep(hn), *c = cn ? keep(cn) : NULL;
    if (!h || (cn && !c)) {
        clg__tensor_release(h);
        return NULL;
    }
    d->state_h = h;
    d->state_c = c;
    return y;
}

clg_status clg_rnn_set_stateful(clg_module *m, bool on)
{
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    if (m->iface->free_data != rnn_free || ((rnn_data *)m->data)->cell)
        return clg__fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "clg_rnn_set_stateful: module %s is not RNN, LSTM or GRU",
                         m->iface->type);
    rnn_data *d = m->data;
    d->stateful = on;
    drop_state(d);
    return CLG_OK;
}

void clg_rnn_reset_state(clg_module *m)
{
    if (!m || m->iface->free_data != rnn_free) return;
    /* zeros in place rather than no state: the same values, in the buffer a captured
     * step reads */
    rnn_data *d = m->data;
    clg_no_grad_begin(m->dev);
    if (d->state_h) clg_fill_(d->state_h, 0.0);
    if (d->state_c) clg_fill_(d->state_c, 0.0);
    clg_no_grad_end(m->dev);
}

bool clg_module_is_recurrent(const clg_module *m) { return m && m->iface->free_data == rnn_free; }

void clg__rnn_drop_state(clg_module *m)
{
    if (clg_module_is_recurrent(m)) drop_state(m->data);
}

static void rnn_describe(const clg_module *m, char *buf, size_t len)
{
    const rnn_data *d = m->data;
    int n = snprintf(buf, len, "%lld, %lld", (long long)d->in, (long long)d->hidden);
    if (d->cell) {
        if (!d->opt.bias && n >= 0 && (size_t)n < len) n += snprintf(buf + n, len - (size_t)n, ", bias=False");
        if (d->mode == CLG_RNN_RELU && n >= 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, ", nonlinearity=relu");
        return;
    }
    const clg_rnn_options *o = &d->opt;
    if (o->num_layers != 1 && n >= 0 && (size_t)n < len) n += snprintf(buf + n, len - (size_t)n, ", num_layers=%d", o->num_layers);
    if (d->mode == CLG_RNN_RELU && n >= 0 && (size_t)n < len) n += snprintf(buf + n, len - (size_t)n, ", nonlinearity=relu");
    if (!o->bias && n >= 0 && (size_t)n < len) n += snprintf(buf + n, len - (size_t)n, ", bias=False");
    if (o->batch_first && n >= 0 && (size_t)n < len) n += snprintf(buf + n, len - (size_t)n, ", batch_first=True");
    if (o->dropout > 0 && n >= 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, ", dropout=%g", o->dropout);
}

static const clg_module_i rnn_i[] = {{"RNN", rnn_module_forward, rnn_describe, rnn_free},
                                     {"RNN", rnn_module_forward, rnn_describe, rnn_free},
                                     {"LSTM", rnn_module_forward, rnn_describe, rnn_free},
                                     {"GRU", rnn_module_forward, rnn_describe, rnn_free}};

/* ---- cells: x [B, in] and the state [B, H] ----------------------------------------------------- */

clg_tensor *clg_cell_forward(clg_module *m, clg_tensor *x, clg_tensor *h, clg_tensor *c, clg_tensor **c_out)
{
    if (c_out) *c_out = NULL;
    if (!m || !x) return NULL;
    rnn_data *d = m->data;
    if (m->iface->free_data != rnn_free || !d->cell)
        return clg__op_fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "cell_forward", "module %s is not a cell",
                            m->iface->type);
    if (x->ndim != 2)
        return clg__op_fail(m->dev, CLG_ERR_SHAPE, CELL_NAME[d->mode], "x %s, want [batch, %lld]", CLG_DESC(x),
                            (long long)d->in);
    clg_tensor *x1 = clg_unsqueeze(x, 0), *hn = NULL, *cn = NULL;
    clg_tensor *y = x1 ? run_layer(m, 0, x1, h, c, &hn, d->mode == CLG_LSTM ? &cn : NULL) : NULL;
    clg_tensor_free(x1);
    clg_tensor_free(y);   /* the same values as hn */
    if (!y) return NULL;
    if (c_out) *c_out = cn;
    return hn;
}

static clg_tensor *cell_module_forward(clg_module *m, clg_tensor *x) { return clg_cell_forward(m, x, NULL, NULL, NULL); }

static const clg_module_i cell_i[] = {{"RNNCell", cell_module_forward, rnn_describe, rnn_free},
                                      {"RNNCell", cell_module_forward, rnn_describe, rnn_free},
                                      {"LSTMCell", cell_module_forward, rnn_describe, rnn_free},
                                      {"GRUCell", cell_module_forward, rnn_describe, rnn_free}};

/* ---- construction ------------------------------------------------------------------------------ */

/* Layer l's parameters (suffix "_l<l>", or "" for a cell), U(-1/sqrt(H), 1/sqrt(H)) as PyTorch. */
static clg_status add_layer(clg_module *m, const rnn_data *d, int64_t in, const char *sfx)
{
    int64_t gh = gates(d->mode) * d->hidden;
    double bound = 1.0 / sqrt((double)d->hidden);
    const char *names[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int k = 0; k < (d->opt.bias ? 4 : 2); k++) {
        int64_t shape[2] = {gh, k == 0 ? in : d->hidden};
        clg_tensor *t = clg__nn_uniform_param(m->dev, k < 2 ? 2 : 1, shape, bound);
        char name[48];
        snprintf(name, sizeof name, "%s%s", names[k], sfx);
        clg_status st = t ? clg_module_add_param(m, name, t) : m->dev->status;
        if (st != CLG_OK) {
            clg__tensor_release(t);
            return st;
        }
    }
    return CLG_OK;
}

static clg_module *make(clg_device *dev, clg_rnn_mode mode, int64_t in, int64_t hidden, const clg_rnn_options *opt,
                        bool cell)
{
    if (!dev) return NULL;
    clg_rnn_options o = opt ? *opt : clg_rnn_defaults();
    const char *what = cell ? CELL_NAME[mode] : TYPE_NAME[mode];
    if ((int)mode < 0 || mode > CLG_GRU || in <= 0 || hidden <= 0 || o.num_layers < 1 || o.num_layers > 64 ||
        !(o.dropout >= 0 && o.dropout < 1)) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_nn_%s: input %lld, hidden %lld, %d layers, dropout %g", what,
                  (long long)in, (long long)hidden, o.num_layers, o.dropout);
        return NULL;
    }
    rnn_data *d = calloc(1, sizeof *d);
    clg_module *m = d ? clg_module_new(dev, cell ? &cell_i[mode] : &rnn_i[mode], d) : NULL;
    if (!m) {
        free(d);
        if (!d) clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_nn_%s: out of host memory", what);
        return NULL;
    }
    *d = (rnn_data){mode, in, hidden, cell, o, false, NULL, NULL};
    clg_status st = CLG_OK;
    for (int l = 0; st == CLG_OK && l < o.num_layers; l++) {
        char sfx[16] = "";
        if (!cell) snprintf(sfx, sizeof sfx, "_l%d", l);
        st = add_layer(m, d, l ? hidden : in, sfx);
    }
    if (st != CLG_OK) {
        clg_module_free(m);
        return NULL;
    }
    return m;
}

clg_module *clg_nn_rnn(clg_device *dev, clg_rnn_mode mode, int64_t input_size, int64_t hidden_size,
                       const clg_rnn_options *opt)
{
    return make(dev, mode, input_size, hidden_size, opt, false);
}

clg_module *clg_nn_lstm(clg_device *dev, int64_t input_size, int64_t hidden_size, const clg_rnn_options *opt)
{
    return make(dev, CLG_LSTM, input_size, hidden_size, opt, false);
}

clg_module *clg_nn_gru(clg_device *dev, int64_t input_size, int64_t hidden_size, const clg_rnn_options *opt)
{
    return make(dev, CLG_GRU, input_size, hidden_size, opt, false);
}

clg_module *clg_nn_rnn_cell(clg_device *dev, clg_rnn_mode mode, int64_t input_size, int64_t hidden_size, bool bias)
{
    clg_rnn_options o = {1, bias, false, 0.0};
    return make(dev, mode, input_size, hidden_size, &o, true);
}
