/* onnx_export_attn.c: attention and the models built on it, as MatMul, Softmax,
 * Transpose and Reshape: multihead_attention (torch.nn.MultiheadAttention as
 * self-attention), transformer_block (torch.nn.TransformerEncoderLayer, post- or
 * pre-norm) and gpt (nanoGPT: token and position embeddings, pre-norm blocks of causal
 * attention and a GELU MLP, the head tied to the token embedding). The fused attention
 * clgrad runs is softmax(q k^T / sqrt(D) + mask) v per head; a causal mask is a
 * constant [T, T] of 0 and -inf (T is the model's fixed input length). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "onnx_impl.h"

/* Rows [k C, (k + 1) C) of the [3C, C] weight `w` transposed ([C, C]), or of the [3C] bias,
 * as an initializer. */
static const char *part(ox_graph *g, clg_module *net, const char *w, int k, int64_t C, bool bias)
{
    int64_t n;
    float *all = ox_weight(net, w, &n, bias ? 1 : 2, NULL);
    if (!all) return NULL;
    char name[300];
    snprintf(name, sizeof name, "%s.onnx_%c%s", w, "qkv"[k], bias ? "" : "_t");
    const char *r = NULL;
    if (n != 3 * C * (bias ? 1 : C)) {
        clg__fail(g->dev, CLG_ERR_SHAPE, "clg_module_export_onnx: %s has %lld values, not 3 x %lld%s", w, (long long)n,
                  (long long)C, bias ? "" : " rows");
    } else if (bias) {
        r = ox_init_f32(g, name, 1, &C, all + k * C);
    } else {
        float *t = malloc((size_t)(C * C) * sizeof *t);
        for (int64_t i = 0; t && i < C; i++)
            for (int64_t j = 0; j < C; j++) t[j * C + i] = all[(k * C + i) * C + j];
        r = t ? ox_init_f32(g, name, 2, (int64_t[]){C, C}, t) : (g->oom = true, NULL);
        free(t);
    }
    free(all);
    return r;
}

/* x [B, T, C] -> q, k or v as [B, H, T, D] (k: [B, H, D, T], ready for q k^T). */
static const char *head_split(ox_graph *g, clg_module *net, const char *w, const char *b, const char *x, int k, int64_t C,
                              int64_t H, const char *hint)
{
    const char *y = ox_binary(g, "MatMul", x, part(g, net, w, k, C, false), hint);
    if (b) y = ox_binary(g, "Add", y, part(g, net, b, k, C, true), hint);
    char name[300];
    snprintf(name, sizeof name, "%s.onnx_heads_shape", hint);
    const char *shape = ox_init_i64(g, name, 1, (int64_t[]){4}, (int64_t[]){0, 0, H, C / H});
    y = ox_op(g, "Transpose", 1, (const char *[]){ox_binary(g, "Reshape", y, shape, hint)}, hint);
    ox_attr_ints(g, "perm", 4, k == 1 ? (int64_t[]){0, 2, 3, 1} : (int64_t[]){0, 2, 1, 3});
    return y;
}

/* [T, T]: 0 on and below the diagonal, -inf above. */
static const char *causal_mask(ox_graph *g, const char *hint, int64_t T)
{
    float *m = malloc((size_t)(T * T) * sizeof *m);
    if (!m) return g->oom = true, NULL;
    for (int64_t i = 0; i < T; i++)
        for (int64_t j = 0; j < T; j++) m[i * T + j] = j > i ? -INFINITY : 0;
    char name[300];
    snprintf(name, sizeof name, "%s.onnx_causal_mask_%d", hint, g->counter++);
    const char *r = ox_init_f32(g, name, 2, (int64_t[]){T, T}, m);
    free(m);
    return r;
}

const char *ox_attention(ox_graph *g, clg_module *net, const char *p, const char *x, int64_t C, int64_t H, bool causal,
                         bool gpt)
{
    char w[280], b[280], out[280];
    snprintf(w, sizeof w, "%s.%s", p, gpt ? "c_attn.weight" : "in_proj_weight");
    snprintf(b, sizeof b, "%s.%s", p, gpt ? "c_attn.bias" : "in_proj_bias");
    snprintf(out, sizeof out, "%s.%s", p, gpt ? "c_proj" : "out_proj");
    const char *bias = clg_module_find(net, b) ? b : NULL;
    const char *q = head_split(g, net, w, bias, x, 0, C, H, p), *k = head_split(g, net, w, bias, x, 1, C, H, p);
    const char *v = head_split(g, net, w, bias, x, 2, C, H, p);
    const char *s = ox_binary(g, "Mul", ox_binary(g, "MatMul", q, k, p), ox_scalar(g, (float)(1 / sqrt((double)(C / H)))), p);
    if (causal) {
        /* the length: the input's axis 1, known when the model file is (its sample [T, C]) */
        int64_t T = g->seq_len;
        s = ox_binary(g, "Add", s, causal_mask(g, p, T), p);
    }
    const char *a = ox_unary(g, "Softmax", s, p);
    ox_attr_i(g, "axis", -1);
    const char *y = ox_op(g, "Transpose", 1, (const char *[]){ox_binary(g, "MatMul", a, v, p)}, p);
    ox_attr_ints(g, "perm", 4, (int64_t[]){0, 2, 1, 3});
    char name[300];
    snprintf(name, sizeof name, "%s.onnx_merge_shape", p);
    y = ox_binary(g, "Reshape", y, ox_init_i64(g, name, 1, (int64_t[]){3}, (int64_t[]){0, 0, C}), p);
    return ox_linear(g, net, out, y, false);
}

/* One TransformerEncoderLayer at prefix b. */
static const char *encoder_layer(ox_graph *g, clg_module *net, const model_layer *l, const char *b, const char *x,
                                 int64_t C)
{
    char n1[240], n2[240], sa[240], l1[240], l2[240];
    snprintf(n1, sizeof n1, "%s.norm1", b);
    snprintf(n2, sizeof n2, "%s.norm2", b);
    snprintf(sa, sizeof sa, "%s.self_attn", b);
    snprintf(l1, sizeof l1, "%s.linear1", b);
    snprintf(l2, sizeof l2, "%s.linear2", b);
    bool pre = l->norm_first;
    const char *h = ox_attention(g, net, sa, pre ? ox_layer_norm(g, net, n1, x, 1, l->eps) : x, C, l->heads, l->causal, false);
    x = ox_binary(g, "Add", x, h, b);
    if (!pre) x = ox_layer_norm(g, net, n1, x, 1, l->eps);
    h = ox_linear(g, net, l1, pre ? ox_layer_norm(g, net, n2, x, 1, l->eps) : x, false);
    h = ox_linear(g, net, l2, l->gelu ? ox_gelu(g, h, b) : ox_unary(g, "Relu", h, b), false);
    x = ox_binary(g, "Add", x, h, b);
    return pre ? x : ox_layer_norm(g, net, n2, x, 1, l->eps);
}

const char *ox_layer_multihead_attention(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x,
                                         int ndim, const int64_t *in)
{
    return ox_attention(g, net, l->name, x[0], in[ndim - 1], l->heads, l->causal, false);
}

/* repeat TransformerEncoderLayers on x [B, T, C] */
const char *ox_layer_transformer_block(ox_graph *g, clg_module *net, const model_layer *l, const char *const *xs,
                                       int ndim, const int64_t *in)
{
    const char *x = xs[0];
    int64_t C = in[ndim - 1];
    for (int64_t i = 0; x && i < l->repeat; i++) {
        char b[200];
        if (l->repeat == 1) snprintf(b, sizeof b, "%s", l->name);
        else snprintf(b, sizeof b, "%s.%lld", l->name, (long long)i);
        x = encoder_layer(g, net, l, b, x, C);
    }
    return x;
}

/* nanoGPT's Block at prefix b. */
static const char *gpt_block(ox_graph *g, clg_module *net, const model_layer *l, const char *b, const char *x)
{
    char ln1[240], ln2[240], at[240], fc[240], pr[240];
    snprintf(ln1, sizeof ln1, "%s.ln_1", b);
    snprintf(ln2, sizeof ln2, "%s.ln_2", b);
    snprintf(at, sizeof at, "%s.attn", b);
    snprintf(fc, sizeof fc, "%s.mlp.c_fc", b);
    snprintf(pr, sizeof pr, "%s.mlp.c_proj", b);
    x = ox_binary(g, "Add", x, ox_attention(g, net, at, ox_layer_norm(g, net, ln1, x, 1, 1e-5), l->out, l->heads, true, true), b);
    const char *h = ox_gelu(g, ox_linear(g, net, fc, ox_layer_norm(g, net, ln2, x, 1, 1e-5), false), b);
    return ox_binary(g, "Add", x, ox_linear(g, net, pr, h, false), b);
}

/* gpt on tokens x [B, T] */
const char *ox_layer_gpt(ox_graph *g, clg_module *net, const model_layer *l, const char *const *xs, int ndim,
                         const int64_t *in)
{
    (void)ndim;
    const char *x = xs[0];
    int64_t T = in[0];
    char name[200];
    const char *p = l->name;
    int64_t C = l->out;
    snprintf(name, sizeof name, "%s.transformer.wpe.weight", p);
    float *wpe = ox_weight(net, name, NULL, 2, NULL);   /* positions 0 .. T-1: the first T rows */
    snprintf(name, sizeof name, "%s.transformer.wpe.onnx_first_%lld", p, (long long)T);
    const char *pos = wpe ? ox_init_f32(g, name, 2, (int64_t[]){T, C}, wpe) : NULL;
    free(wpe);
    snprintf(name, sizeof name, "%s.transformer.wte", p);
    const char *h = ox_binary(g, "Add", ox_binary(g, "Gather", ox_weight_init(g, net, name, "weight"), x, p), pos, p);
    for (int64_t i = 0; h && i < l->layers; i++) {
        snprintf(name, sizeof name, "%s.transformer.h.%lld", p, (long long)i);
        h = gpt_block(g, net, l, name, h);
    }
    snprintf(name, sizeof name, "%s.transformer.ln_f", p);
    h = ox_layer_norm(g, net, name, h, 1, 1e-5);
    snprintf(name, sizeof name, "%s.lm_head", p);   /* tied to wte: the same values */
    return ox_linear(g, net, name, h, false);
}
