/* model_kind_attention.c: self-attention on a sequence [T, C] (multihead_attention,
 * transformer_block) and nanoGPT's whole model (gpt: tokens [T] -> scores [T, vocab]). */
#include "model_kind.h"

/* Parameters of one transformer layer of width C, feed-forward width F: attention's
 * in_proj (3 C^2 + 3 C) and out_proj (C^2 + C), the two linear layers, two norms (biases
 * and the norms' bias only with bias). Products of at most 2^24 squared fit int64. */
static int64_t transformer_params(int64_t C, int64_t F, bool bias)
{
    return 4 * C * C + 2 * C * F + 2 * C + (bias ? 4 * C + F + C + 2 * C : 0);
}

/* transformer_block and multihead_attention on [T, C]. */
static bool attention_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    char s[160];
    if (ndim != 2)
        return model_fail(c, false, "%s takes a sequence [T, C], got an input of shape %s", l->kind->name,
                          model_shape_text(ndim, in, s, sizeof s));
    int64_t C = in[1];
    if (C % l->heads) return model_fail(c, false, "heads %lld must divide the input's %lld features", (long long)l->heads,
                                        (long long)C);
    if (C > (1 << 20) || l->ff > (1 << 20)) return model_fail(c, false, "too many parameters");
    if (l->kind == &mk_multihead_attention) {
        l->params = 4 * C * C + (l->bias ? 4 * C : 0);
        return true;
    }
    int64_t p = l->repeat * transformer_params(C, l->ff ? l->ff : 4 * C, l->bias);
    if (p > MODEL_MAX_NUMEL) return model_fail(c, false, "too many parameters");
    l->params = p;
    return true;
}

static clg_module *mha_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    clg_module *a = clg_nn_multihead_attention(dev, in[ndim - 1], l->heads, l->p, l->bias, true);
    if (a && l->causal) clg_attention_set_causal(a, true);
    return a;
}

/* torch.nn.MultiheadAttention as self-attention on [T, C] */
const model_kind mk_multihead_attention = {
    .name = "multihead_attention",
    .settings = {{"heads", OPT_INT, MK_F(heads), NAN, 1, 4096}, {"dropout", OPT_REAL, MK_F(p), 0, 0, 0.99},
                 {"causal", OPT_BOOL, MK_F(causal), 0, 0, 1}, MK_BIAS},
    .shape = attention_shape, .build = mha_build, .onnx = MODEL_ONNX(ox_layer_multihead_attention)};

/* One torch.nn.TransformerEncoderLayer of width *in (which it keeps). */
static clg_module *encoder_layer(clg_device *dev, const model_layer *l, int64_t i, int64_t *in)
{
    (void)i;
    int64_t C = *in;
    clg_transformer_options o = {l->ff ? l->ff : 4 * C, l->p, l->gelu, l->eps, true, l->norm_first, l->bias};
    clg_module *t = clg_nn_transformer_encoder_layer(dev, C, l->heads, &o);
    if (t && l->causal) clg_attention_set_causal(t, true);
    return t;
}

static clg_module *transformer_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    return model_repeat(dev, l, in[ndim - 1], encoder_layer);
}

/* torch.nn.TransformerEncoderLayer on [T, C], `repeat` of them; ff 0: 4 C */
const model_kind mk_transformer_block = {
    .name = "transformer_block",
    .settings = {{"heads", OPT_INT, MK_F(heads), NAN, 1, 4096}, {"ff", OPT_INT, MK_F(ff), 0, 0, MODEL_MAX_DIM},
                 {"dropout", OPT_REAL, MK_F(p), 0.1, 0, 0.99}, {"gelu", OPT_BOOL, MK_F(gelu), 0, 0, 1},
                 {"norm_first", OPT_BOOL, MK_F(norm_first), 0, 0, 1}, {"causal", OPT_BOOL, MK_F(causal), 0, 0, 1},
                 MK_EPS, MK_BIAS, {"repeat", OPT_INT, MK_F(repeat), 1, 1, 1024}},
    .shape = attention_shape, .build = transformer_build, .onnx = MODEL_ONNX(ox_layer_transformer_block)};

/* tokens [T] -> scores [T, vocab]; wte [V, C] (tied to lm_head), wpe [context, C], per
 * layer 12 C^2 (+ 13 C with biases, else 2 C: the norms' weights), ln_f. */
static bool gpt_shape(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    char s[160];
    if (ndim != 1)
        return model_fail(c, false, "gpt takes a sequence of tokens [T], got an input of shape %s",
                          model_shape_text(ndim, in, s, sizeof s));
    if (in[0] > l->context)
        return model_fail(c, false, "the input's %lld tokens are more than the context %lld", (long long)in[0],
                          (long long)l->context);
    int64_t C = l->out;
    if (C % l->heads) return model_fail(c, false, "heads %lld must divide dim %lld", (long long)l->heads, (long long)C);
    double p = (double)(l->num + l->context) * (double)C + (double)l->layers * (12.0 * (double)C * (double)C +
               (l->bias ? 13.0 : 2.0) * (double)C) + (l->bias ? 2.0 : 1.0) * (double)C;
    if (p > (double)MODEL_MAX_NUMEL) return model_fail(c, false, "too many parameters");
    l->params = (int64_t)p;
    l->ndim = 2;
    l->shape[0] = in[0];
    l->shape[1] = l->num;
    return true;
}

static clg_module *gpt_build(clg_device *dev, const model_layer *l, int ndim, const int64_t *in)
{
    (void)ndim, (void)in;
    clg_gpt_config g = {l->num, l->context, l->layers, l->heads, l->out, l->p, l->bias};
    return clg_nn_gpt(dev, &g);
}

/* nanoGPT's whole model: tokens [T] (T <= context) -> next-token scores [T, vocab] */
const model_kind mk_gpt = {
    .name = "gpt",
    .settings = {{"vocab", OPT_INT, MK_F(num), 256, 1, MODEL_MAX_DIM},
                 {"context", OPT_INT, MK_F(context), NAN, 1, MODEL_MAX_DIM},
                 {"layers", OPT_INT, MK_F(layers), NAN, 1, 1024}, {"heads", OPT_INT, MK_F(heads), NAN, 1, 4096},
                 {"dim", OPT_INT, MK_F(out), NAN, 1, MODEL_MAX_DIM}, {"dropout", OPT_REAL, MK_F(p), 0, 0, 0.99},
                 MK_BIAS},
    .tokens = true, .shape = gpt_shape, .build = gpt_build, .onnx = MODEL_ONNX(ox_layer_gpt)};
