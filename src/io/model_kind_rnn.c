/* model_kind_rnn.c: rnn, lstm and gru on a sequence [T, features] -> [T, hidden],
 * batch-first (a model's batch axis comes first, whatever its layers). */
#include "model_kind.h"

/* Dropout acts between stacked layers while training, as torch.nn.LSTM's. */
#define RECURRENT {"hidden", OPT_INT, MK_F(out), NAN, 1, MODEL_MAX_DIM}, {"layers", OPT_INT, MK_F(layers), 1, 1, 64}, \
                  MK_BIAS, {"dropout", OPT_REAL, MK_F(p), 0, 0, 0.99}

/* Per layer G gates of weight_ih [G hidden, in] (in: the features, then hidden),
 * weight_hh [G hidden, hidden] and two biases [G hidden]. */
static bool recurrent_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    if (!model_need_axes(c, l, ndim, in, 2, 2, "[T, features] inputs (a sequence)")) return false;
    int64_t g = l->kind == &mk_lstm ? 4 : l->kind == &mk_gru ? 3 : 1, h = l->out, total = 0;
    if (l->p > 0 && l->layers < 2)
        return model_fail(c, false, "dropout %g acts between stacked layers: it needs layers >= 2 (or dropout 0)", l->p);
    for (int64_t k = 0; k < l->layers; k++) {
        int64_t w = 0, f[3] = {g, h, (k ? h : in[1]) + h + (l->bias ? 2 : 0)};
        if (!model_product(&w, 3, f) || (total += w) > MODEL_MAX_NUMEL)
            return model_fail(c, false, "too many parameters");
    }
    l->params = total;
    l->shape[1] = h;
    return true;
}

static clg_module *recurrent_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    clg_rnn_options o = {(int)l->layers, l->bias, true, l->p};
    clg_rnn_mode mode = l->kind == &mk_lstm ? CLG_LSTM : l->kind == &mk_gru ? CLG_GRU
                      : l->relu ? CLG_RNN_RELU : CLG_RNN_TANH;
    return clg_nn_rnn(dev, mode, in[ndim - 1], l->out, &o);
}

const model_kind mk_rnn = {.name = "rnn", .settings = {RECURRENT, {"relu", OPT_BOOL, MK_F(relu), 0, 0, 1}},
                           .shape = recurrent_shape, .build = recurrent_build, .onnx = MODEL_ONNX(ox_layer_rnn)};
const model_kind mk_lstm = {.name = "lstm", .settings = {RECURRENT}, .shape = recurrent_shape, .build = recurrent_build,
                            .onnx = MODEL_ONNX(ox_layer_rnn)};
const model_kind mk_gru = {.name = "gru", .settings = {RECURRENT}, .shape = recurrent_shape, .build = recurrent_build,
                           .onnx = MODEL_ONNX(ox_layer_rnn)};
