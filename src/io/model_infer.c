/* model_infer.c: shape inference. Each layer's input is the previous layer's output,
 * so a file states only what layers produce; this derives the rest (in_features,
 * in_channels, layer-norm shapes) and refuses layers that do not fit their input,
 * with the shapes in the message. Sizes are capped (MODEL_MAX_NUMEL) and products are
 * checked as they grow, so that no file can overflow them. */
#include <stdio.h>

#include <math.h>

#include "model_impl.h"

static int64_t numel(int ndim, const int64_t *s)
{
    int64_t n = 1;
    for (int i = 0; i < ndim && n <= MODEL_MAX_NUMEL; i++) n *= s[i];
    return n;
}

static const char *shape_text(int ndim, const int64_t *s, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)s[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
    return buf;
}

/* Product of factors, false when it passes the cap on the way. */
static bool product(int64_t *out, int n, const int64_t *f)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        p *= f[i];
        if (p > MODEL_MAX_NUMEL) return false;
    }
    *out = p;
    return true;
}

static bool window(model_ctx *c, const model_layer *l, int64_t in, int axis, int64_t *out)
{
    int64_t k = l->kernel[axis], s = l->stride[axis], p = l->padding[axis];
    int64_t d = l->kind == LK_CONV2D ? l->dilation[axis] : 1;
    int64_t span = d * (k - 1) + 1;
    if (in + 2 * p < span)
        return model_fail(c, false, "a %s window of %lld (kernel %lld, dilation %lld) does not fit the input's %lld "
                          "(+ 2 x %lld padding)", axis ? "width" : "height", (long long)span, (long long)k,
                          (long long)d, (long long)in, (long long)p);
    *out = (in + 2 * p - span) / s + 1;
    return true;
}

static bool conv_or_pool(model_ctx *c, model_layer *l, const int64_t *in)
{
    bool conv = l->kind == LK_CONV2D;
    if (!conv) {   /* square windows; stride 0: the kernel size */
        l->kernel[1] = l->kernel[0];
        l->stride[0] = l->stride[1] = l->stride[0] ? l->stride[0] : l->kernel[0];
        l->padding[1] = l->padding[0];
        if (2 * l->padding[0] > l->kernel[0])
            return model_fail(c, false, "padding %lld is more than half the kernel %lld", (long long)l->padding[0],
                              (long long)l->kernel[0]);
    }
    int64_t ch = conv ? l->out : in[0];
    if (conv && (in[0] % l->groups || l->out % l->groups))
        return model_fail(c, false, "groups %lld must divide the input's %lld channels and out %lld",
                          (long long)l->groups, (long long)in[0], (long long)l->out);
    int64_t h = 0, w = 0;
    if (!window(c, l, in[1], 0, &h) || !window(c, l, in[2], 1, &w)) return false;
    l->ndim = 3;
    l->shape[0] = ch, l->shape[1] = h, l->shape[2] = w;
    if (!conv) return true;
    int64_t f[4] = {l->out, in[0] / l->groups, l->kernel[0], l->kernel[1]};
    if (!product(&l->params, 4, f)) return model_fail(c, false, "too many parameters");
    l->params += l->bias ? l->out : 0;
    return true;
}

static bool groups_divide(model_ctx *c, const model_layer *l, int64_t in)
{
    if (in % l->groups == 0 && l->out % l->groups == 0) return true;
    return model_fail(c, false, "groups %lld must divide the input's %lld channels and out %lld", (long long)l->groups,
                      (long long)in, (long long)l->out);
}

/* conv1d on [C, L] */
static bool conv1d(model_ctx *c, model_layer *l, const int64_t *in)
{
    int64_t span = l->dilation[0] * (l->kernel[0] - 1) + 1;
    if (!groups_divide(c, l, in[0])) return false;
    if (in[1] + 2 * l->padding[0] < span)
        return model_fail(c, false, "a window of %lld does not fit the input's %lld (+ 2 x %lld padding)",
                          (long long)span, (long long)in[1], (long long)l->padding[0]);
    l->shape[0] = l->out;
    l->shape[1] = (in[1] + 2 * l->padding[0] - span) / l->stride[0] + 1;
    int64_t f[3] = {l->out, in[0] / l->groups, l->kernel[0]};
    if (!product(&l->params, 3, f)) return model_fail(c, false, "too many parameters");
    l->params += l->bias ? l->out : 0;
    return true;
}

/* conv_transpose2d on [C, H, W]: (in - 1) s - 2 p + d (k - 1) + output_padding + 1 */
static bool conv_transpose(model_ctx *c, model_layer *l, const int64_t *in)
{
    if (!groups_divide(c, l, in[0])) return false;
    l->shape[0] = l->out;
    for (int a = 0; a < 2; a++) {
        int64_t op = l->output_padding[a], s = l->stride[a], d = l->dilation[a];
        if (op >= s && op >= d)
            return model_fail(c, false, "output_padding %lld must be below the stride %lld or the dilation %lld",
                              (long long)op, (long long)s, (long long)d);
        l->shape[1 + a] = (in[1 + a] - 1) * s - 2 * l->padding[a] + d * (l->kernel[a] - 1) + op + 1;
        if (l->shape[1 + a] < 1)
            return model_fail(c, false, "the padding %lld leaves no output along %s", (long long)l->padding[a],
                              a ? "the width" : "the height");
    }
    int64_t f[4] = {in[0], l->out / l->groups, l->kernel[0], l->kernel[1]};
    if (!product(&l->params, 4, f)) return model_fail(c, false, "too many parameters");
    l->params += l->bias ? l->out : 0;
    return true;
}

/* embedding: integer tokens of any shape -> [..., dim]; the batch axis and dim must fit. */
static bool embedding(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    char s[160];
    if (ndim + 2 > CLG_MAX_DIMS)
        return model_fail(c, false, "embedding adds an axis to its input %s: at most %d axes of tokens",
                          shape_text(ndim, in, s, sizeof s), CLG_MAX_DIMS - 2);
    l->ndim = ndim + 1;
    l->shape[ndim] = l->out;
    int64_t f[2] = {l->num, l->out};
    return product(&l->params, 2, f) || model_fail(c, false, "too many parameters");
}

/* rnn, lstm, gru on [T, features] -> [T, hidden]: per layer G gates of weight_ih
 * [G hidden, in] (in: the features, then hidden), weight_hh [G hidden, hidden] and two
 * biases [G hidden]. */
static bool recurrent(model_ctx *c, model_layer *l, const int64_t *in)
{
    int64_t g = l->kind == LK_LSTM ? 4 : l->kind == LK_GRU ? 3 : 1, h = l->out, total = 0;
    if (l->p > 0 && l->layers < 2)
        return model_fail(c, false, "dropout %g acts between stacked layers: it needs layers >= 2 (or dropout 0)", l->p);
    for (int64_t k = 0; k < l->layers; k++) {
        int64_t w = 0, f[3] = {g, h, (k ? h : in[1]) + h + (l->bias ? 2 : 0)};
        if (!product(&w, 3, f) || (total += w) > MODEL_MAX_NUMEL) return model_fail(c, false, "too many parameters");
    }
    l->params = total;
    l->shape[1] = h;
    return true;
}

/* Parameters of one transformer layer of width C, feed-forward width F: attention's
 * in_proj (3 C^2 + 3 C) and out_proj (C^2 + C), the two linear layers, two norms (biases
 * and the norms' bias only with bias). Products of at most 2^24 squared fit int64. */
static int64_t transformer_params(int64_t C, int64_t F, bool bias)
{
    return 4 * C * C + 2 * C * F + 2 * C + (bias ? 4 * C + F + C + 2 * C : 0);
}

/* gpt: tokens [T] -> scores [T, vocab]; wte [V, C] (tied to lm_head), wpe [context, C],
 * per layer 12 C^2 (+ 13 C with biases, else 2 C: the norms' weights), ln_f. */
static bool gpt(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    char s[160];
    if (ndim != 1)
        return model_fail(c, false, "gpt takes a sequence of tokens [T], got an input of shape %s",
                          shape_text(ndim, in, s, sizeof s));
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

/* transformer_block and multihead_attention on [T, C]. */
static bool attention(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    char s[160];
    if (ndim != 2)
        return model_fail(c, false, "%s takes a sequence [T, C], got an input of shape %s", model_kind_name(l->kind),
                          shape_text(ndim, in, s, sizeof s));
    int64_t C = in[1];
    if (C % l->heads) return model_fail(c, false, "heads %lld must divide the input's %lld features", (long long)l->heads,
                                        (long long)C);
    if (C > (1 << 20) || l->ff > (1 << 20)) return model_fail(c, false, "too many parameters");
    if (l->kind == LK_MHA) {
        l->params = 4 * C * C + (l->bias ? 4 * C : 0);
        return true;
    }
    int64_t p = l->repeat * transformer_params(C, l->ff ? l->ff : 4 * C, l->bias);
    if (p > MODEL_MAX_NUMEL) return model_fail(c, false, "too many parameters");
    l->params = p;
    return true;
}

/* basic_block / bottleneck on [C, H, W] -> [planes * e, ceil(H / s), ceil(W / s)] (3x3
 * convolutions of padding 1); parameters: convolutions without bias, batch norms' weight
 * and bias, the downsample (1x1 conv and norm) where the first block changes the shape. */
static bool residual(model_ctx *c, model_layer *l, const int64_t *in)
{
    bool bottle = l->kind == LK_BOTTLENECK;
    int64_t p = l->out, e = bottle ? 4 : 1, s = l->stride[0], total = 0, cin = in[0];
    if (p > (1 << 16) || cin > (1 << 20)) return model_fail(c, false, "too many parameters");
    for (int64_t b = 0; b < l->repeat; b++) {
        int64_t w = bottle ? cin * p + 9 * p * p + p * e * p + 2 * (p + p + e * p) : 9 * cin * p + 9 * p * p + 4 * p;
        if (cin != p * e || (b == 0 && s != 1)) w += cin * p * e + 2 * p * e;   /* downsample */
        if ((total += w) > MODEL_MAX_NUMEL) return model_fail(c, false, "too many parameters");
        cin = p * e;
    }
    l->params = total;
    l->shape[0] = p * e;
    l->shape[1] = (in[1] + s - 1) / s;
    l->shape[2] = (in[2] + s - 1) / s;
    return true;
}

static bool need_axes(model_ctx *c, const model_layer *l, int ndim, const int64_t *in, int lo, int hi,
                      const char *what)
{
    if (ndim >= lo && ndim <= hi) return true;
    char s[160];
    return model_fail(c, false, "%s takes %s, got an input of shape %s", model_kind_name(l->kind), what,
                      shape_text(ndim, in, s, sizeof s));
}

static bool infer(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    switch (l->kind) {
    case LK_LINEAR: {
        l->shape[ndim - 1] = l->out;
        int64_t f[2] = {l->out, in[ndim - 1]};
        if (!product(&l->params, 2, f)) return model_fail(c, false, "too many parameters");
        l->params += l->bias ? l->out : 0;
        return true;
    }
    case LK_CONV2D: case LK_MAX_POOL: case LK_AVG_POOL:
        return need_axes(c, l, ndim, in, 3, 3, "[C, H, W] inputs") && conv_or_pool(c, l, in);
    case LK_GLOBAL_POOL:
        l->shape[1] = l->shape[2] = 1;
        return need_axes(c, l, ndim, in, 3, 3, "[C, H, W] inputs");
    case LK_BN1:
        l->params = 2 * in[0];
        return need_axes(c, l, ndim, in, 1, 2, "[C] or [C, L] inputs");
    case LK_BN2:
        l->params = 2 * in[0];
        return need_axes(c, l, ndim, in, 3, 3, "[C, H, W] inputs");
    case LK_LAYER_NORM:
        if (l->dims > ndim) return need_axes(c, l, ndim, in, (int)l->dims, CLG_MAX_DIMS, "at least `dims` axes");
        l->params = 2 * numel((int)l->dims, in + ndim - l->dims);
        return true;
    case LK_CONV1D:
        return need_axes(c, l, ndim, in, 2, 2, "[C, L] inputs") && conv1d(c, l, in);
    case LK_CONV_T2D:
        return need_axes(c, l, ndim, in, 3, 3, "[C, H, W] inputs") && conv_transpose(c, l, in);
    case LK_UPSAMPLE:
        if (!need_axes(c, l, ndim, in, 3, 3, "[C, H, W] inputs")) return false;
        l->shape[1] = (int64_t)floor((double)in[1] * l->scale);
        l->shape[2] = (int64_t)floor((double)in[2] * l->scale);
        if (l->shape[1] < 1 || l->shape[2] < 1)
            return model_fail(c, false, "scale %g leaves no output of %lld x %lld", l->scale, (long long)in[1],
                              (long long)in[2]);
        return true;
    case LK_GROUP_NORM:
        if (!need_axes(c, l, ndim, in, 1, CLG_MAX_DIMS - 1, "[C, ...] inputs")) return false;
        if (in[0] % l->groups)
            return model_fail(c, false, "groups %lld must divide the input's %lld channels", (long long)l->groups,
                              (long long)in[0]);
        l->params = 2 * in[0];
        return true;
    case LK_EMBEDDING:
        return embedding(c, l, ndim, in);
    case LK_RNN: case LK_LSTM: case LK_GRU:
        return need_axes(c, l, ndim, in, 2, 2, "[T, features] inputs (a sequence)") && recurrent(c, l, in);
    case LK_GPT:
        return gpt(c, l, ndim, in);
    case LK_TRANSFORMER: case LK_MHA:
        return attention(c, l, ndim, in);
    case LK_BASIC_BLOCK: case LK_BOTTLENECK:
        return need_axes(c, l, ndim, in, 3, 3, "[C, H, W] inputs") && residual(c, l, in);
    case LK_FLATTEN:
        l->ndim = 1;
        l->shape[0] = numel(ndim, in);
        return true;
    default:   /* elementwise */
        return true;
    }
}

bool model_infer_layer(model_ctx *c, model_layer *l, int ndim, const int64_t *in)
{
    l->ndim = ndim;
    for (int i = 0; i < ndim; i++) l->shape[i] = in[i];
    l->params = 0;
    if (!infer(c, l, ndim, in)) return false;
    char s[160];
    if (numel(l->ndim, l->shape) > MODEL_MAX_NUMEL)
        return model_fail(c, false, "the output %s has more than %lld values", shape_text(l->ndim, l->shape, s, sizeof s),
                          (long long)MODEL_MAX_NUMEL);
    return true;
}

bool model_layer_wired(const model_layer *l, int i)
{
    return l->ninputs > 1 || (l->ninputs == 1 && l->inputs[0] != i - 1);
}

/* add: inputs of one shape; concat: the same shape but along axis, whose sizes add up. */
bool model_infer_join(model_ctx *c, model_layer *l, int n, const model_layer *const *ins, int in_ndim,
                      const int64_t *in)
{
    char a[160], b[160];
    int nd = ins[0] ? ins[0]->ndim : in_ndim;
    const int64_t *first = ins[0] ? ins[0]->shape : in;
    if (n < 2) return model_fail(c, false, "%s joins 2 to %d inputs, got %d", model_kind_name(l->kind), MODEL_MAX_INPUTS, n);
    if (l->kind == LK_CONCAT && l->axis >= nd)
        return model_fail(c, false, "axis %lld is not an axis of the inputs' %d-axis samples", (long long)l->axis, nd);
    l->ndim = nd;
    for (int d = 0; d < nd; d++) l->shape[d] = first[d];
    for (int k = 1; k < n; k++) {
        int kd = ins[k] ? ins[k]->ndim : in_ndim;
        const int64_t *s = ins[k] ? ins[k]->shape : in;
        bool ok = kd == nd;
        for (int d = 0; ok && d < nd; d++) ok = s[d] == first[d] || (l->kind == LK_CONCAT && d == l->axis);
        if (!ok)
            return model_fail(c, false, "%s: input %d is %s, input 0 is %s%s", model_kind_name(l->kind), k,
                              shape_text(kd, s, a, sizeof a), shape_text(nd, first, b, sizeof b),
                              l->kind == LK_CONCAT ? " (they may differ along the axis alone)" : " (want one shape)");
        if (l->kind == LK_CONCAT && (l->shape[l->axis] += s[l->axis]) > MODEL_MAX_DIM)
            return model_fail(c, false, "the joined axis is over %d long", MODEL_MAX_DIM);
    }
    l->params = 0;
    return true;
}
