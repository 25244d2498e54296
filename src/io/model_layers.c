/* model_layers.c: the layer types of model files. Each type lists its settings once
 * (key, kind, range, default), and parsing, the canonical form and the settings text
 * all come from that list, so that they cannot disagree. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "model_impl.h"

typedef enum { OPT_INT, OPT_PAIR, OPT_REAL, OPT_BOOL } opt_kind;

typedef struct opt_spec {
    const char *key;
    opt_kind kind;
    size_t off;               /* into model_layer */
    double def, lo, hi;       /* def NAN: required */
} opt_spec;

#define F(field) offsetof(model_layer, field)
#define OUT {"out", OPT_INT, F(out), NAN, 1, MODEL_MAX_DIM}
#define BIAS {"bias", OPT_BOOL, F(bias), 1, 0, 1}
#define EPS {"eps", OPT_REAL, F(eps), 1e-5, 1e-12, 1}
/* Square windows only, as clg_nn_max_pool2d takes them; stride 0 means the kernel size. */
#define POOL {"kernel", OPT_INT, F(kernel), NAN, 1, 1024}, {"stride", OPT_INT, F(stride), 0, 0, 1024}, \
             {"padding", OPT_INT, F(padding), 0, 0, 512}
/* Recurrent layers: dropout acts between stacked layers while training, as torch.nn.LSTM's. */
#define RECURRENT {"hidden", OPT_INT, F(out), NAN, 1, MODEL_MAX_DIM}, {"layers", OPT_INT, F(layers), 1, 1, 64}, BIAS, \
                  {"dropout", OPT_REAL, F(p), 0, 0, 0.99}

static const struct layer_type {
    const char *name;
    opt_spec opts[10];   /* ended by an entry without a key */
} types[LK_COUNT] = {
    [LK_LINEAR] = {"linear", {OUT, BIAS}},
    [LK_CONV2D] = {"conv2d", {OUT, {"kernel", OPT_PAIR, F(kernel), NAN, 1, 1024},
                              {"stride", OPT_PAIR, F(stride), 1, 1, 1024}, {"padding", OPT_PAIR, F(padding), 0, 0, 1024},
                              {"dilation", OPT_PAIR, F(dilation), 1, 1, 1024},
                              {"groups", OPT_INT, F(groups), 1, 1, MODEL_MAX_DIM}, BIAS}},
    [LK_MAX_POOL] = {"max_pool2d", {POOL}},
    [LK_AVG_POOL] = {"avg_pool2d", {POOL}},
    [LK_GLOBAL_POOL] = {"global_avg_pool2d", {{0}}},
    [LK_BN1] = {"batch_norm1d", {EPS, {"momentum", OPT_REAL, F(momentum), 0.1, 0, 1}}},
    [LK_BN2] = {"batch_norm2d", {EPS, {"momentum", OPT_REAL, F(momentum), 0.1, 0, 1}}},
    [LK_LAYER_NORM] = {"layer_norm", {EPS, {"dims", OPT_INT, F(dims), 1, 1, CLG_MAX_DIMS}}},
    [LK_DROPOUT] = {"dropout", {{"p", OPT_REAL, F(p), 0.5, 0, 0.99}}},
    [LK_FLATTEN] = {"flatten", {{0}}},
    [LK_RELU] = {"relu", {{0}}},
    [LK_LEAKY_RELU] = {"leaky_relu", {{"slope", OPT_REAL, F(slope), 0.01, -1000, 1000}}},
    [LK_SIGMOID] = {"sigmoid", {{0}}},
    [LK_TANH] = {"tanh", {{0}}},
    [LK_GELU] = {"gelu", {{0}}},
    [LK_SOFTMAX] = {"softmax", {{0}}},
    [LK_CONV1D] = {"conv1d", {OUT, {"kernel", OPT_INT, F(kernel), NAN, 1, 1024},
                              {"stride", OPT_INT, F(stride), 1, 1, 1024}, {"padding", OPT_INT, F(padding), 0, 0, 1024},
                              {"dilation", OPT_INT, F(dilation), 1, 1, 1024},
                              {"groups", OPT_INT, F(groups), 1, 1, MODEL_MAX_DIM}, BIAS}},
    [LK_CONV_T2D] = {"conv_transpose2d",
                     {OUT, {"kernel", OPT_PAIR, F(kernel), NAN, 1, 1024}, {"stride", OPT_PAIR, F(stride), 1, 1, 1024},
                      {"padding", OPT_PAIR, F(padding), 0, 0, 1024},
                      {"output_padding", OPT_PAIR, F(output_padding), 0, 0, 1024},
                      {"dilation", OPT_PAIR, F(dilation), 1, 1, 1024},
                      {"groups", OPT_INT, F(groups), 1, 1, MODEL_MAX_DIM}, BIAS}},
    [LK_UPSAMPLE] = {"upsample", {{"scale", OPT_REAL, F(scale), NAN, 1e-3, 1024},
                                  {"bilinear", OPT_BOOL, F(bilinear), 0, 0, 1}}},
    [LK_GROUP_NORM] = {"group_norm", {{"groups", OPT_INT, F(groups), NAN, 1, MODEL_MAX_DIM}, EPS}},
    [LK_GELU_TANH] = {"gelu_tanh", {{0}}},
    [LK_SILU] = {"silu", {{0}}},
    [LK_ELU] = {"elu", {{"alpha", OPT_REAL, F(alpha), 1, -1000, 1000}}},
    [LK_SOFTPLUS] = {"softplus", {{"beta", OPT_REAL, F(beta), 1, 1e-6, 1000},
                                  {"threshold", OPT_REAL, F(threshold), 20, -1e6, 1e6}}},
    [LK_EMBEDDING] = {"embedding", {{"num", OPT_INT, F(num), NAN, 1, MODEL_MAX_DIM},
                                    {"dim", OPT_INT, F(out), NAN, 1, MODEL_MAX_DIM}}},
    [LK_RNN] = {"rnn", {RECURRENT, {"relu", OPT_BOOL, F(relu), 0, 0, 1}}},
    [LK_LSTM] = {"lstm", {RECURRENT}},
    [LK_GRU] = {"gru", {RECURRENT}},
    /* nanoGPT's whole model: tokens [T] (T <= context) -> next-token scores [T, vocab] */
    [LK_GPT] = {"gpt", {{"vocab", OPT_INT, F(num), 256, 1, MODEL_MAX_DIM},
                        {"context", OPT_INT, F(context), NAN, 1, MODEL_MAX_DIM},
                        {"layers", OPT_INT, F(layers), NAN, 1, 1024}, {"heads", OPT_INT, F(heads), NAN, 1, 4096},
                        {"dim", OPT_INT, F(out), NAN, 1, MODEL_MAX_DIM}, {"dropout", OPT_REAL, F(p), 0, 0, 0.99}, BIAS}},
    /* torch.nn.TransformerEncoderLayer on [T, C], `repeat` of them; ff 0: 4 C */
    [LK_TRANSFORMER] = {"transformer_block", {{"heads", OPT_INT, F(heads), NAN, 1, 4096},
                                              {"ff", OPT_INT, F(ff), 0, 0, MODEL_MAX_DIM},
                                              {"dropout", OPT_REAL, F(p), 0.1, 0, 0.99},
                                              {"gelu", OPT_BOOL, F(gelu), 0, 0, 1},
                                              {"norm_first", OPT_BOOL, F(norm_first), 0, 0, 1},
                                              {"causal", OPT_BOOL, F(causal), 0, 0, 1}, EPS, BIAS,
                                              {"repeat", OPT_INT, F(repeat), 1, 1, 1024}}},
    /* torch.nn.MultiheadAttention as self-attention on [T, C] */
    [LK_MHA] = {"multihead_attention", {{"heads", OPT_INT, F(heads), NAN, 1, 4096},
                                        {"dropout", OPT_REAL, F(p), 0, 0, 0.99},
                                        {"causal", OPT_BOOL, F(causal), 0, 0, 1}, BIAS}},
    /* torchvision's residual blocks, `repeat` of them as its _make_layer: the first with
     * the stride (and a downsample where the shapes change), the rest stride 1; out:
     * planes (a bottleneck gives 4 out channels) */
    [LK_BASIC_BLOCK] = {"basic_block", {OUT, {"stride", OPT_INT, F(stride), 1, 1, 64},
                                        {"repeat", OPT_INT, F(repeat), 1, 1, 1024}}},
    [LK_BOTTLENECK] = {"bottleneck", {OUT, {"stride", OPT_INT, F(stride), 1, 1, 64},
                                      {"repeat", OPT_INT, F(repeat), 1, 1, 1024}}},
    /* the sum of its inputs (of one shape), or their concatenation along a sample axis */
    [LK_ADD] = {"add", {{0}}},
    [LK_CONCAT] = {"concat", {{"axis", OPT_INT, F(axis), 0, 0, CLG_MAX_DIMS - 2}}},
};

const char *model_kind_name(model_kind k) { return k < LK_COUNT ? types[k].name : "?"; }

const char *model_kind_list(void)
{
    return "linear, conv2d, max_pool2d, avg_pool2d, global_avg_pool2d, batch_norm1d, batch_norm2d, layer_norm, "
           "dropout, flatten, relu, leaky_relu, sigmoid, tanh, gelu, softmax, gelu_tanh, silu, elu, softplus, conv1d, "
           "conv_transpose2d, upsample, group_norm, embedding, rnn, lstm, gru, gpt, transformer_block, multihead_attention, "
           "basic_block, bottleneck, add, concat";
}

static bool set_defaults_and_keys(model_ctx *c, json_t *o, model_layer *l, char *allowed, size_t cap)
{
    snprintf(allowed, cap, "type, name, inputs");
    for (const opt_spec *s = types[l->kind].opts; s->key; s++) {
        size_t n = strlen(allowed);
        snprintf(allowed + n, cap - n, ", %s", s->key);
        void *p = (char *)l + s->off;
        if (s->kind == OPT_PAIR) ((int64_t *)p)[0] = ((int64_t *)p)[1] = isnan(s->def) ? 0 : (int64_t)s->def;
        else if (s->kind == OPT_INT) *(int64_t *)p = isnan(s->def) ? 0 : (int64_t)s->def;
        else if (s->kind == OPT_REAL) *(double *)p = s->def;
        else *(bool *)p = s->def != 0;
        if (isnan(s->def) && !(o && json_object_get(o, s->key)))
            return model_fail(c, false, "missing \"%s\" (%s needs it)", s->key, types[l->kind].name);
    }
    return o ? model_check_keys(c, o, allowed) : true;
}

static bool read_opts(model_ctx *c, json_t *o, model_layer *l)
{
    bool ok = true;
    for (const opt_spec *s = types[l->kind].opts; ok && s->key; s++) {
        void *p = (char *)l + s->off;
        if (s->kind == OPT_PAIR) ok = model_get_pair(c, o, s->key, (int64_t)s->lo, (int64_t)s->hi, p);
        else if (s->kind == OPT_INT) ok = model_get_int(c, o, s->key, (int64_t)s->lo, (int64_t)s->hi, p);
        else if (s->kind == OPT_REAL) ok = model_get_real(c, o, s->key, s->lo, s->hi, p);
        else ok = model_get_bool(c, o, s->key, p);
    }
    return ok;
}

static bool parse_name(model_ctx *c, json_t *o, model_layer *l)
{
    json_t *n = json_object_get(o, "name");
    if (!n) return true;
    const char *s = json_is_string(n) ? json_string_value(n) : "";
    bool ok = (s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')) &&
              strlen(s) < MODEL_NAME_MAX && strlen(s) == json_string_length(n);
    for (const char *p = s; ok && *p; p++)
        ok = *p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
    char got[64];
    if (!ok) {
        model_push_key(c, "name");
        model_fail(c, false, "must be a letter or '_' then letters, digits or '_', at most %d characters, got %s",
                   MODEL_NAME_MAX - 1, model_show(n, got, sizeof got));
        model_pop(c);
        return false;
    }
    snprintf(l->name, sizeof l->name, "%s", s);
    return true;
}

bool model_parse_layer(model_ctx *c, json_t *v, model_layer *l)
{
    char got[64], allowed[256];
    json_t *type = json_is_string(v) ? v : json_object_get(v, "type");
    if (!json_is_object(v) && !json_is_string(v))
        return model_fail(c, false, "a layer is an object {\"type\": ...} or a type name, got %s",
                          model_show(v, got, sizeof got));
    if (!type) return model_fail(c, false, "missing \"type\" (one of: %s)", model_kind_list());
    int k = 0;
    while (k < LK_COUNT && !(json_is_string(type) && !strcmp(json_string_value(type), types[k].name))) k++;
    if (k == LK_COUNT) {
        if (json_is_object(v)) model_push_key(c, "type");
        model_fail(c, false, "unknown layer type %s (allowed: %s)", model_show(type, got, sizeof got),
                   model_kind_list());
        if (json_is_object(v)) model_pop(c);
        return false;
    }
    l->kind = (model_kind)k;
    json_t *o = json_is_object(v) ? v : NULL;
    if (!set_defaults_and_keys(c, o, l, allowed, sizeof allowed)) return false;
    if (!o) return true;
    return read_opts(c, o, l) && parse_name(c, o, l);
}

json_t *model_layer_json(const model_layer *l)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string(types[l->kind].name));
    if (!(l->name[0] >= '0' && l->name[0] <= '9')) json_object_set_new(o, "name", json_string(l->name));
    for (const opt_spec *s = types[l->kind].opts; s->key; s++) {
        const void *p = (const char *)l + s->off;
        json_t *v;
        if (s->kind == OPT_PAIR)
            v = json_pack("[II]", (json_int_t)((const int64_t *)p)[0], (json_int_t)((const int64_t *)p)[1]);
        else if (s->kind == OPT_INT) v = json_integer(*(const int64_t *)p);
        else if (s->kind == OPT_REAL) v = json_real(*(const double *)p);
        else v = json_boolean(*(const bool *)p);
        json_object_set_new(o, s->key, v);
    }
    return o;
}

void model_layer_settings(const model_layer *l, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (const opt_spec *s = types[l->kind].opts; s->key && n < len; s++) {
        const void *p = (const char *)l + s->off;
        const int64_t *i = p;
        int w = s->kind == OPT_PAIR  ? snprintf(buf + n, len - n, "%s%s=[%lld, %lld]", n ? ", " : "", s->key,
                                                (long long)i[0], (long long)i[1])
                : s->kind == OPT_INT ? snprintf(buf + n, len - n, "%s%s=%lld", n ? ", " : "", s->key, (long long)*i)
                : s->kind == OPT_REAL ? snprintf(buf + n, len - n, "%s%s=%g", n ? ", " : "", s->key, *(const double *)p)
                                      : snprintf(buf + n, len - n, "%s%s=%s", n ? ", " : "", s->key,
                                                 *(const bool *)p ? "true" : "false");
        if (w < 0) break;
        n += (size_t)w;
    }
}
