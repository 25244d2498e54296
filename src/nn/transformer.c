/* transformer.c: attention and transformer modules, with PyTorch's parameter names so
 * that state dicts cross both ways:
 *   MultiheadAttention (torch.nn): in_proj_weight [3E, E], in_proj_bias [3E],
 *     out_proj.weight, out_proj.bias;
 *   TransformerEncoderLayer (torch.nn): self_attn.*, linear1, linear2, norm1, norm2
 *     (its dropouts have no parameters).
 * Heads are split by a reshape and a permute (views), which the fused attention op
 * (clg_scaled_dot_product_attention) reads where they lie; only the merge of the heads
 * before the output projection copies. The GPT of nanoGPT is in gpt.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"

/* ---- MultiheadAttention ----------------------------------------------------------------- */

typedef struct mha_data {
    int64_t E, H;
    double dropout;
    bool batch_first, causal;
} mha_data;

/* x [B, T, E] -> [B, H, T, E / H]: views. */
static clg_tensor *split_heads(clg_tensor *x, int64_t H)
{
    const int64_t *s = clg_tensor_shape(x);
    return clg_permute(clg_reshape(x, 4, (int64_t[]){s[0], s[1], H, s[2] / H}), 4, (const int[]){0, 2, 1, 3});
}

/* y [B, H, T, D] -> [B, T, H D] (a copy: the heads side by side). */
clg_tensor *clg__nn_merge_heads(clg_tensor *y)
{
    const int64_t *s = clg_tensor_shape(y);
    int64_t B = s[0], H = s[1], T = s[2], D = s[3];
    return clg_reshape(clg_permute(y, 4, (const int[]){0, 2, 1, 3}), 3, (int64_t[]){B, T, H * D});
}

/* A mask as an additive float one: int32 nonzero (PyTorch's True) -> -inf, else 0;
 * a float mask as it is. */
static clg_tensor *additive(clg_tensor *mask, clg_dtype dt)
{
    if (!mask || clg_tensor_dtype(mask) != CLG_I32) return mask;
    clg_device *dev = clg_tensor_device(mask);
    return clg_where(mask, clg_scalar(dev, dt, -INFINITY), clg_scalar(dev, dt, 0));
}

/* key_padding_mask [B, S] and attn_mask [L, S] or [B H, L, S] (PyTorch's: True or a
 * nonzero int32 means "may not attend") as one additive mask over [B, H, L, S]. */
static clg_tensor *mha_mask(clg_module *m, clg_tensor *kpm, clg_tensor *am, int64_t B, int64_t L, int64_t S,
                            clg_dtype dt)
{
    const mha_data *d = m->data;
    clg_tensor *mask = NULL;
    if (kpm) {
        if (clg_tensor_ndim(kpm) != 2 || clg_tensor_dim(kpm, 0) != B || clg_tensor_dim(kpm, 1) != S)
            return clg__op_fail(m->dev, CLG_ERR_SHAPE, "MultiheadAttention", "key_padding_mask %s: want [%lld, %lld]",
                                CLG_DESC(kpm), (long long)B, (long long)S);
        mask = clg_reshape(additive(kpm, dt), 4, (int64_t[]){B, 1, 1, S});
    }
    if (am) {
        clg_tensor *a = additive(am, dt);
        bool per_head = clg_tensor_ndim(am) == 3 && clg_tensor_dim(am, 0) == B * d->H;
        if (!per_head && !(clg_tensor_ndim(am) == 2 && clg_tensor_dim(am, 0) == L && clg_tensor_dim(am, 1) == S))
            return clg__op_fail(m->dev, CLG_ERR_SHAPE, "MultiheadAttention", "attn_mask %s: want [%lld, %lld] or "
                                "[%lld, %lld, %lld]", CLG_DESC(am), (long long)L, (long long)S,
                                (long long)(B * d->H), (long long)L, (long long)S);
        if (per_head) a = clg_reshape(a, 4, (int64_t[]){B, d->H, L, S});
        mask = mask ? clg_add(mask, a) : a;
    }
    return mask;
}

/* q, k, v projections: one product when the three inputs are one tensor. */
static bool project(clg_module *m, clg_tensor *q, clg_tensor *k, clg_tensor *v, clg_tensor **out)
{
    const mha_data *d = m->data;
    clg_tensor *w = clg_module_param(m, "in_proj_weight"), *b = clg_module_param(m, "in_proj_bias");
    if (q == k && k == v) {
        clg_tensor *qkv = clg_linear(q, w, b);
        for (int i = 0; i < 3; i++) out[i] = clg_narrow(qkv, 2, i * d->E, d->E);
    } else {
        clg_tensor *in[3] = {q, k, v};
        for (int i = 0; i < 3; i++)
            out[i] = clg_linear(in[i], clg_narrow(w, 0, i * d->E, d->E), b ? clg_narrow(b, 0, i * d->E, d->E) : NULL);
    }
    return out[0] && out[1] && out[2];
}

clg_tensor *clg_mha_forward(clg_module *m, clg_tensor *query, clg_tensor *key, clg_tensor *value,
                            clg_tensor *key_padding_mask, clg_tensor *attn_mask, bool is_causal)
{
    if (!m || !query) return NULL;
    if (strcmp(clg_module_type(m), "MultiheadAttention"))
        return clg__op_fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "clg_mha_forward", "a %s is not a MultiheadAttention",
                            clg_module_type(m));
    const mha_data *d = m->data;
    if (!key) key = query;
    if (!value) value = key;
    clg_tensor *x[3] = {query, key, value};
    for (int i = 0; i < 3; i++) {
        if (clg_tensor_ndim(x[i]) != 3 || clg_tensor_dim(x[i], 2) != d->E)
            return clg__op_fail(m->dev, CLG_ERR_SHAPE, "MultiheadAttention", "%s %s: want [%s, %lld]",
                                i == 0 ? "query" : i == 1 ? "key" : "value", CLG_DESC(x[i]),
                                d->batch_first ? "B, T" : "T, B", (long long)d->E);
        if (!d->batch_first) x[i] = clg_transpose(x[i], 0, 1);   /* [T, B, E] -> [B, T, E], a view */
    }
    if (query == key) x[1] = x[0];
    if (key == value) x[2] = x[1];
    int64_t B = clg_tensor_dim(x[0], 0), L = clg_tensor_dim(x[0], 1), S = clg_tensor_dim(x[1], 1);
    clg_tensor *p[3];
    if (!project(m, x[0], x[1], x[2], p)) return NULL;
    clg_dtype mdt = clg_tensor_dtype(p[0]) == CLG_F64 ? CLG_F64 : CLG_F32;
    clg_tensor *mask = mha_mask(m, key_padding_mask, attn_mask, B, L, S, mdt);
    if ((key_padding_mask || attn_mask) && !mask) return NULL;
    clg_tensor *y = clg_scaled_dot_product_attention(split_heads(p[0], d->H), split_heads(p[1], d->H),
                                                     split_heads(p[2], d->H), mask, is_causal,
                                                     m->training ? d->dropout : 0, 0);
    y = clg_module_forward(clg_module_child(m, "out_proj"), clg__nn_merge_heads(y));
    return d->batch_first || !y ? y : clg_transpose(y, 0, 1);
}

static clg_tensor *mha_forward_n(clg_module *m, int n, clg_tensor *const *in)
{
    const mha_data *d = m->data;
    if (n < 1 || n > 5 || !in)
        return clg__op_fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "MultiheadAttention", "%d inputs: want query, key, value, "
                            "key_padding_mask, attn_mask (the last four may be left out or NULL)", n);
    return clg_mha_forward(m, in[0], n > 1 ? in[1] : NULL, n > 2 ? in[2] : NULL, n > 3 ? in[3] : NULL,
                           n > 4 ? in[4] : NULL, d->causal);
}

static clg_tensor *mha_forward(clg_module *m, clg_tensor *x) { return mha_forward_n(m, 1, &x); }

static void mha_describe(const clg_module *m, char *buf, size_t len)
{
    const mha_data *d = m->data;
    snprintf(buf, len, "embed_dim=%lld, num_heads=%lld, dropout=%g, batch_first=%s%s", (long long)d->E, (long long)d->H,
             d->dropout, d->batch_first ? "True" : "False", d->causal ? ", causal" : "");
}

static const clg_module_i mha_i = {"MultiheadAttention", mha_forward, mha_describe, free};

/* PyTorch's _reset_parameters: xavier_uniform_ on in_proj_weight [3E, E] (fan_in E,
 * fan_out 3E), biases 0; out_proj a Linear's weight (kaiming-uniform). */
static clg_status mha_params(clg_module *m, int64_t E, bool bias)
{
    clg_device *dev = m->dev;
    clg_tensor *w = clg__nn_uniform_param(dev, CLG_SHAPE(3 * E, E), sqrt(6.0 / (double)(4 * E)));
    clg_status st = clg_module_add_param(m, "in_proj_weight", w);
    if (st) clg__tensor_release(w);
    clg_tensor *b = !st && bias ? clg_zeros(dev, CLG_F32, CLG_SHAPE(3 * E)) : NULL;
    if (b && (st = clg_module_add_param(m, "in_proj_bias", b)) != CLG_OK) clg_tensor_free(b);
    clg_module *out = st ? NULL : clg_nn_linear(dev, E, E, bias);
    if (!st && !out) st = dev->status;
    if (!st && (st = clg_module_add_child(m, "out_proj", out)) != CLG_OK) clg_module_free(out);
    if (!st && bias) {
        clg_no_grad_begin(dev);   /* an initialisation, not a step to differentiate */
        st = clg_fill_(clg_module_param(out, "bias"), 0);
        clg_no_grad_end(dev);
    }
    return st;
}

clg_module *clg_nn_multihead_attention(clg_device *dev, int64_t embed_dim, int64_t num_heads, double dropout,
                                       bool bias, bool batch_first)
{
    if (!dev) return NULL;
    if (embed_dim <= 0 || num_heads <= 0 || embed_dim % num_heads || !(dropout >= 0 && dropout <= 1)) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_nn_multihead_attention: embed_dim %lld, num_heads %lld, dropout "
                  "%g: embed_dim must be a multiple of num_heads, dropout in [0, 1]", (long long)embed_dim,
                  (long long)num_heads, dropout);
        return NULL;
    }
    mha_data *d = malloc(sizeof *d);
    clg_module *m = d ? clg_module_new(dev, &mha_i, d) : NULL;
    if (!m) {
        free(d);
        return NULL;
    }
    *d = (mha_data){embed_dim, num_heads, dropout, batch_first, false};
    clg_module_set_forward_n(m, mha_forward_n);
    if (mha_params(m, embed_dim, bias) != CLG_OK) {
        clg_module_free(m);
        return NULL;
    }
    return m;
}

/* ---- TransformerEncoderLayer ----------------------------------------------------------------- */

typedef struct tel_data {
    clg_transformer_options o;
    bool causal;
} tel_data;

clg_transformer_options clg_transformer_defaults(void)
{
    return (clg_transformer_options){2048, 0.1, false, 1e-5, false, false, true};
}

static clg_tensor *sa_block(clg_module *m, clg_tensor *x, clg_tensor *mask, clg_tensor *kpm, bool causal)
{
    return clg__nn_child(m, "dropout1", clg_mha_forward(clg_module_child(m, "self_attn"), x, x, x, kpm, mask, causal));
}

static clg_tensor *ff_block(clg_module *m, clg_tensor *x)
{
    const tel_data *d = m->data;
    clg_tensor *h = clg__nn_child(m, "linear1", x);
    h = d->o.gelu ? clg_gelu(h) : clg_relu(h);
    return clg__nn_child(m, "dropout2", clg__nn_child(m, "linear2", clg__nn_child(m, "dropout", h)));
}

clg_tensor *clg_transformer_layer_forward(clg_module *m, clg_tensor *src, clg_tensor *src_mask,
                                          clg_tensor *src_key_padding_mask, bool is_causal)
{
    if (!m || !src) return NULL;
    if (strcmp(clg_module_type(m), "TransformerEncoderLayer"))
        return clg__op_fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "clg_transformer_layer_forward",
                            "a %s is not a TransformerEncoderLayer", clg_module_type(m));
    const tel_data *d = m->data;
    clg_tensor *x = src;
    if (d->o.norm_first) {
        x = clg_add(x, sa_block(m, clg__nn_child(m, "norm1", x), src_mask, src_key_padding_mask, is_causal));
        return clg_add(x, ff_block(m, clg__nn_child(m, "norm2", x)));
    }
    x = clg__nn_child(m, "norm1", clg_add(x, sa_block(m, x, src_mask, src_key_padding_mask, is_causal)));
    return clg__nn_child(m, "norm2", clg_add(x, ff_block(m, x)));
}

static clg_tensor *tel_forward_n(clg_module *m, int n, clg_tensor *const *in)
{
    const tel_data *d = m->data;
    if (n < 1 || n > 3 || !in)
        return clg__op_fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "TransformerEncoderLayer",
                            "%d inputs: want src, src_mask, src_key_padding_mask (the last two may be left out)", n);
    return clg_transformer_layer_forward(m, in[0], n > 1 ? in[1] : NULL, n > 2 ? in[2] : NULL, d->causal);
}

static clg_tensor *tel_forward(clg_module *m, clg_tensor *x) { return tel_forward_n(m, 1, &x); }

static void tel_describe(const clg_module *m, char *buf, size_t len)
{
    const tel_data *d = m->data;
    snprintf(buf, len, "dim_feedforward=%lld, dropout=%g, activation=%s, norm_first=%s%s", (long long)d->o.dim_feedforward,
             d->o.dropout, d->o.gelu ? "gelu" : "relu", d->o.norm_first ? "True" : "False", d->causal ? ", causal" : "");
}

static const clg_module_i tel_i = {"TransformerEncoderLayer", tel_forward, tel_describe, free};

clg_module *clg_nn_transformer_encoder_layer(clg_device *dev, int64_t d_model, int64_t nhead,
                                             const clg_transformer_options *opt)
{
    if (!dev) return NULL;
    clg_transformer_options o = opt ? *opt : clg_transformer_defaults();
    if (d_model <= 0 || nhead <= 0 || o.dim_feedforward <= 0 || !(o.layer_norm_eps >= 0)) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_nn_transformer_encoder_layer: d_model %lld, nhead %lld, "
                  "dim_feedforward %lld, layer_norm_eps %g", (long long)d_model, (long long)nhead,
                  (long long)o.dim_feedforward, o.layer_norm_eps);
        return NULL;
    }
    tel_data *d = malloc(sizeof *d);
    clg_module *m = d ? clg_module_new(dev, &tel_i, d) : NULL;
    if (!m) {
        free(d);
        return NULL;
    }
    *d = (tel_data){o, false};
    clg_module_set_forward_n(m, tel_forward_n);
    clg_status st = clg__nn_adopt(m, "self_attn", clg_nn_multihead_attention(dev, d_model, nhead, o.dropout, o.bias,
                                                                             o.batch_first));
    /* The projections inside see [B, T, E] or [T, B, E] alike: Linear and LayerNorm act on the last axis. */
    if (!st) st = clg__nn_adopt(m, "linear1", clg_nn_linear(dev, d_model, o.dim_feedforward, o.bias));
    if (!st) st = clg__nn_adopt(m, "dropout", clg_nn_dropout(dev, o.dropout));
    if (!st) st = clg__nn_adopt(m, "linear2", clg_nn_linear(dev, o.dim_feedforward, d_model, o.bias));
    if (!st) st = clg__nn_adopt(m, "norm1", clg__nn_layer_norm(dev, d_model, o.layer_norm_eps, o.bias));
    if (!st) st = clg__nn_adopt(m, "norm2", clg__nn_layer_norm(dev, d_model, o.layer_norm_eps, o.bias));
    if (!st) st = clg__nn_adopt(m, "dropout1", clg_nn_dropout(dev, o.dropout));
    if (!st) st = clg__nn_adopt(m, "dropout2", clg_nn_dropout(dev, o.dropout));
    if (st) {
        clg_module_free(m);
        return NULL;
    }
    return m;
}

/* ---- causal switch ------------------------------------------------------------------------- */

clg_status clg_attention_set_causal(clg_module *m, bool causal)
{
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    const char *t = clg_module_type(m);
    if (!strcmp(t, "MultiheadAttention")) ((mha_data *)m->data)->causal = causal;
    else if (!strcmp(t, "TransformerEncoderLayer")) ((tel_data *)m->data)->causal = causal;
    else
        return clg__fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "clg_attention_set_causal: a %s has no attention", t);
    return CLG_OK;
}
