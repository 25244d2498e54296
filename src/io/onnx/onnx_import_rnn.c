/* onnx_import_rnn.c: ONNX LSTM, GRU and RNN nodes as lstm, gru and rnn layers. A
 * model file's recurrent layers are batch-first and start from zeros, so a node is read
 * when its X is time-major (a Transpose of a batch-first activation, or the squeezed Y
 * of the node before), it runs forward, its initial state is absent or zeros, and only
 * Y is used. A node on the output of a node of the same kind and size that nothing else
 * reads stacks onto that layer (PyTorch's num_layers > 1 is exported as such a chain).
 * Gates go back from ONNX's order (LSTM i, o, f, c; GRU z, r, h) to PyTorch's (i, f, g, o;
 * r, z, n), and B [1, 2 G H] splits into bias_ih and bias_hh. */
#include <string.h>

#include "onnx_impl.h"

typedef const Onnx__NodeProto node;

/* PyTorch's gate j is ONNX's gate order[j]. */
static const int LSTM_FROM[4] = {0, 2, 3, 1}, GRU_FROM[3] = {1, 0, 2}, RNN_FROM[1] = {0};

static bool attr_string_is(node *n, const char *name, const char *want)
{
    const Onnx__AttributeProto *a = ix_attr(n, name);
    return !a || (a->has_s && a->s.len == strlen(want) && !memcmp(a->s.data, want, a->s.len));
}

/* The activations attribute, when given, must be the defaults (RNN: Tanh or Relu). */
static bool activations(ix_ctx *c, node *n, int gates, bool *relu)
{
    const Onnx__AttributeProto *a = ix_attr(n, "activations");
    *relu = false;
    if (!a) return true;
    static const char *const lstm[3] = {"Sigmoid", "Tanh", "Tanh"}, *const gru[2] = {"Sigmoid", "Tanh"};
    size_t want = gates == 4 ? 3 : gates == 3 ? 2 : 1;
    bool ok = a->n_strings == want;
    for (size_t i = 0; ok && i < want; i++) {
        const ProtobufCBinaryData *s = &a->strings[i];
        const char *d = gates == 4 ? lstm[i] : gates == 3 ? gru[i] : (s->len == 4 && !memcmp(s->data, "Relu", 4)) ? "Relu" : "Tanh";
        ok = s->len == strlen(d) && !memcmp(s->data, d, s->len);
        if (gates == 1) *relu = d[0] == 'R';
    }
    return ok ? true : ix_fail(c, n, "activations other than the defaults (RNN: Tanh or Relu) are not read");
}

/* Rows of m ([G H, cols]) in PyTorch's gate order into dst. */
static void from_onnx(float *dst, const float *m, int gates, const int *from, int64_t hidden, int64_t cols)
{
    size_t block = (size_t)(hidden * cols);
    for (int j = 0; j < gates; j++) memcpy(dst + (size_t)j * block, m + (size_t)from[j] * block, block * sizeof *m);
}

static bool add_gates(ix_ctx *c, ix_layer *l, const char *suffix, int gates, const int *from, int64_t hidden,
                      int64_t cols, bool bias, const float *m)
{
    int64_t dims[2] = {gates * hidden, cols};
    if (!ix_layer_weight(c, l, suffix, bias ? 1 : 2, dims, m, false)) return false;
    from_onnx(l->w[l->nw - 1].data, m, gates, from, hidden, cols);
    return true;
}

static bool check_inputs(ix_ctx *c, node *n)
{
    if (!ix_no_input(n, 4)) return ix_fail(c, n, "sequence_lens is not read: every sequence is whole");
    for (size_t k = 5; k < 7 && k < n->n_input; k++) {
        if (ix_no_input(n, k)) continue;
        ix_value *v = ix_in(c, n, k);
        if (!v) return false;
        if (v->kind != IX_ZEROS) return ix_fail(c, n, "an initial state other than zeros is not read");
    }
    if (!ix_no_input(n, 7)) return ix_fail(c, n, "peepholes (P) are not read");
    for (size_t k = 1; k < n->n_output; k++)
        if (*n->output[k] && ix_uses(c, n->output[k]))
            return ix_fail(c, n, "its final state (output %zu) is used: a model file's layer gives only Y", k);
    if (!attr_string_is(n, "direction", "forward")) return ix_fail(c, n, "only direction forward is read (clgrad's recurrent layers are not bidirectional)");
    if (ix_attr(n, "clip") || ix_attr_i(n, "input_forget", 0) || ix_attr_i(n, "layout", 0))
        return ix_fail(c, n, "clip, input_forget and layout = 1 are not read");
    return true;
}

bool ix_rnn(ix_ctx *c, const Onnx__NodeProto *n)
{
    bool lstm = !strcmp(n->op_type, "LSTM"), gru = !strcmp(n->op_type, "GRU"), relu;
    int gates = lstm ? 4 : gru ? 3 : 1;
    const int *from = lstm ? LSTM_FROM : gru ? GRU_FROM : RNN_FROM;
    const model_kind *kind = lstm ? &mk_lstm : gru ? &mk_gru : &mk_rnn;
    if (!check_inputs(c, n) || !activations(c, n, gates, &relu)) return false;
    if (gru && ix_attr_i(n, "linear_before_reset", 0) != 1)
        return ix_fail(c, n, "linear_before_reset = 0 is not PyTorch's GRU (which applies r after the hidden product)");
    ix_value *x = ix_in(c, n, 0), *W = x ? ix_in(c, n, 1) : NULL, *R = W ? ix_in(c, n, 2) : NULL, *B = NULL;
    if (!R) return false;
    if (!ix_no_input(n, 3) && !(B = ix_in(c, n, 3))) return false;
    if (x->kind != IX_ACT || !x->tmajor || x->rank != 3)
        return ix_fail(c, n, "X must be time-major [T, B, F]: a Transpose (perm [1, 0, 2]) of a batch-first activation");
    int64_t H = ix_attr_i(n, "hidden_size", 0);
    bool shapes = W->kind == IX_CONST && !W->is_int && R->kind == IX_CONST && !R->is_int && W->ndim == 3 && R->ndim == 3 &&
                  W->dims[0] == 1 && H > 0 && W->dims[1] == gates * H && R->dims[1] == gates * H && R->dims[2] == H &&
                  (!B || (B->kind == IX_CONST && !B->is_int && B->numel == 2 * gates * H));
    if (!shapes) return ix_fail(c, n, "W, R and B must be constants of one direction, [1, %d H, in], [1, %d H, H], [1, %d H]",
                                gates, gates, 2 * gates);
    /* stack onto the layer whose output this is, when nothing else reads it */
    ix_layer *l = x->layer >= 0 ? &c->layers[x->layer] : NULL;
    bool stack = l && x->layer == c->nlayers - 1 && l->kind == kind && l->hidden == H && l->bias == (B != NULL) &&
                 ix_uses(c, n->input[0]) == 1 && l->out_uses == 1 && (kind != &mk_rnn || relu == json_is_true(json_object_get(l->spec, "relu")));
    if (stack) {
        l->stacked++;
        json_object_set_new(l->spec, "layers", json_integer(l->stacked));
    } else {
        const ix_value *ins[1] = {x};
        json_t *spec = json_pack("{s:s,s:I,s:b}", "type", lstm ? "lstm" : gru ? "gru" : "rnn", "hidden", (json_int_t)H, "bias", B != NULL);
        if (spec && kind == &mk_rnn) json_object_set_new(spec, "relu", json_boolean(relu));
        if (!(l = ix_layer_new(c, n, kind, spec, 1, ins))) return false;
        l->hidden = H, l->stacked = 1, l->bias = B != NULL;
        ix_layer_name_from(c, l, n->input[1]);
    }
    char sfx[48];
    int k = l->stacked - 1;
    snprintf(sfx, sizeof sfx, "weight_ih_l%d", k);
    if (!add_gates(c, l, sfx, gates, from, H, W->dims[2], false, W->f)) return false;
    snprintf(sfx, sizeof sfx, "weight_hh_l%d", k);
    if (!add_gates(c, l, sfx, gates, from, H, H, false, R->f)) return false;
    if (B) {
        snprintf(sfx, sizeof sfx, "bias_ih_l%d", k);
        if (!add_gates(c, l, sfx, gates, from, H, 1, true, B->f)) return false;
        snprintf(sfx, sizeof sfx, "bias_hh_l%d", k);
        if (!add_gates(c, l, sfx, gates, from, H, 1, true, B->f + gates * H)) return false;
    }
    /* Y's squeeze is the layer's output; how many read that decides stacking the next node */
    size_t at;
    const Onnx__NodeProto *sq = ix_consumer(c, n->output[0], &at);
    l->out_uses = sq && !strcmp(sq->op_type, "Squeeze") ? ix_uses(c, sq->output[0]) : 0;
    ix_value *y = ix_value_get(c, n->output[0]);
    if (!y) return false;
    y->kind = IX_RNN_Y;
    y->layer = c->nlayers - 1;
    return true;
}
