/* onnx_import_transformer.c: torch.nn.TransformerEncoderLayer, read back as
 * transformer_block layers. After the nodes are read (attention already one
 * multihead_attention layer), an encoder layer is a run of 8 layers:
 *   post-norm: attention, add (x), layer_norm, linear ff, relu or gelu, linear C, add, layer_norm
 *   pre-norm:  layer_norm, attention, add (x), layer_norm, linear ff, relu or gelu, linear C, add
 * with biases everywhere, both norms of one eps, and nothing else reading its inner
 * layers. Such layers in a row of one configuration are nn.TransformerEncoder's stack:
 * one transformer_block of that repeat, with PyTorch's names. The graph holds no
 * dropout (torch.onnx.export writes evaluation mode), so the block's is 0. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_impl.h"

typedef struct enc {
    int first, last, from;
    int attn, norm1, norm2, lin1, lin2;   /* layer indices */
    bool pre, gelu, causal;
    int64_t heads, ff;
    double eps;
} enc;

static bool reads1(const ix_ctx *c, int i, int from, const model_kind *k)
{
    return i < c->nlayers && c->layers[i].kind == k && c->layers[i].ninputs == 1 && c->layers[i].inputs[0] == from;
}

static bool adds(const ix_ctx *c, int i, int a, int b)
{
    const ix_layer *l = i < c->nlayers ? &c->layers[i] : NULL;
    return l && l->kind == &mk_add && l->ninputs == 2 &&
           ((l->inputs[0] == a && l->inputs[1] == b) || (l->inputs[0] == b && l->inputs[1] == a));
}

static bool truth(const ix_layer *l, const char *key) { return json_is_true(json_object_get(l->spec, key)); }

/* The feed-forward half from layer j (linear, activation, linear, add with `res`). */
static bool feed_forward(const ix_ctx *c, int j, int from, int res, enc *e)
{
    e->lin1 = j, e->lin2 = j + 2;
    e->gelu = reads1(c, j + 1, j, &mk_gelu);
    return reads1(c, j, from, &mk_linear) && (e->gelu || reads1(c, j + 1, j, &mk_relu)) && reads1(c, j + 2, j + 1, &mk_linear) &&
           adds(c, j + 3, res, j + 2) && truth(&c->layers[j], "bias") && truth(&c->layers[j + 2], "bias");
}

static bool encoder_at(const ix_ctx *c, int i, enc *e)
{
    if (i >= c->nlayers || c->layers[i].ninputs != 1) return false;
    *e = (enc){.first = i, .last = i + 7, .from = c->layers[i].inputs[0]};
    int r = e->from;
    if (reads1(c, i, r, &mk_multihead_attention)) {   /* post-norm */
        e->attn = i, e->norm1 = i + 2, e->norm2 = i + 7;
        if (!adds(c, i + 1, r, i) || !reads1(c, i + 2, i + 1, &mk_layer_norm) || !feed_forward(c, i + 3, i + 2, i + 2, e) ||
            !reads1(c, i + 7, i + 6, &mk_layer_norm))
            return false;
    } else {
        e->pre = true, e->norm1 = i, e->attn = i + 1, e->norm2 = i + 3;
        if (!reads1(c, i, r, &mk_layer_norm) || !reads1(c, i + 1, i, &mk_multihead_attention) || !adds(c, i + 2, r, i + 1) ||
            !reads1(c, i + 3, i + 2, &mk_layer_norm) || !feed_forward(c, i + 4, i + 3, i + 2, e))
            return false;
    }
    const ix_layer *a = &c->layers[e->attn], *n1 = &c->layers[e->norm1], *n2 = &c->layers[e->norm2];
    e->heads = json_integer_value(json_object_get(a->spec, "heads"));
    e->causal = truth(a, "causal");
    e->ff = json_integer_value(json_object_get(c->layers[e->lin1].spec, "out"));
    e->eps = json_real_value(json_object_get(n1->spec, "eps"));
    bool ok = truth(a, "bias") && e->eps == json_real_value(json_object_get(n2->spec, "eps")) &&
              json_integer_value(json_object_get(n1->spec, "dims")) == 1 && json_integer_value(json_object_get(n2->spec, "dims")) == 1;
    for (int k = 0; ok && k < c->nlayers; k++)   /* nothing else reads inside */
        for (int q = 0; (k < e->first || k > e->last) && q < c->layers[k].ninputs; q++)
            ok = !(c->layers[k].inputs[q] >= e->first && c->layers[k].inputs[q] < e->last);
    return ok;
}

static bool same_config(const enc *a, const enc *b)
{
    return a->pre == b->pre && a->gelu == b->gelu && a->causal == b->causal && a->heads == b->heads && a->ff == b->ff &&
           a->eps == b->eps;
}

/* Layer i's weight `from` moved into g as prefix + to. */
static bool take(ix_ctx *c, ix_layer *g, int i, const char *from, const char *prefix, const char *to)
{
    for (int k = 0; k < c->layers[i].nw; k++) {
        ix_weight *w = &c->layers[i].w[k];
        if (strcmp(w->suffix, from)) continue;
        if (g->nw == IX_MAX_WEIGHTS) return ix_fail(c, NULL, "more than %d weights in one transformer_block", IX_MAX_WEIGHTS);
        g->w[g->nw] = *w;
        snprintf(g->w[g->nw++].suffix, sizeof w->suffix, "%s%s", prefix, to);
        w->data = NULL;
        return true;
    }
    return ix_fail(c, NULL, "layer %s has no %s", c->layers[i].name, from);
}

static bool take_encoder(ix_ctx *c, ix_layer *g, const enc *e, const char *p)
{
    static const char *const attn[4] = {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"};
    bool ok = true;
    for (int k = 0; ok && k < 4; k++) {
        char to[48];
        snprintf(to, sizeof to, "self_attn.%s", attn[k]);
        ok = take(c, g, e->attn, attn[k], p, to);
    }
    return ok && take(c, g, e->lin1, "weight", p, "linear1.weight") && take(c, g, e->lin1, "bias", p, "linear1.bias") &&
           take(c, g, e->lin2, "weight", p, "linear2.weight") && take(c, g, e->lin2, "bias", p, "linear2.bias") &&
           take(c, g, e->norm1, "weight", p, "norm1.weight") && take(c, g, e->norm1, "bias", p, "norm1.bias") &&
           take(c, g, e->norm2, "weight", p, "norm2.weight") && take(c, g, e->norm2, "bias", p, "norm2.bias");
}

static bool merge_run(ix_ctx *c, const enc *e, int n)
{
    ix_layer g = {.kind = &mk_transformer_block, .ninputs = 1, .inputs = {e[0].from}};
    g.spec = json_pack("{s:s,s:I,s:I,s:f,s:b,s:b,s:b,s:f,s:b,s:I}", "type", "transformer_block", "heads",
                       (json_int_t)e[0].heads, "ff", (json_int_t)e[0].ff, "dropout", 0.0, "gelu", e[0].gelu, "norm_first",
                       e[0].pre, "causal", e[0].causal, "eps", e[0].eps, "bias", 1, "repeat", (json_int_t)n);
    snprintf(g.name, sizeof g.name, "%d", e[0].first);
    bool ok = g.spec != NULL;
    for (int k = 0; ok && k < n; k++) {
        char prefix[24] = "";
        if (n > 1) snprintf(prefix, sizeof prefix, "%d.", k);
        ok = take_encoder(c, &g, &e[k], prefix);
    }
    /* PyTorch's names: "enc.layers.0.self_attn..." (the attention layer enc_layers_0_self_attn) -> enc_layers */
    const char *src = c->layers[e[0].attn].name;
    const char *tail = n > 1 ? "_0_self_attn" : "_self_attn";
    size_t len = strlen(src), t = strlen(tail);
    char name[MODEL_NAME_MAX + 8] = "";
    if (len > t && !strcmp(src + len - t, tail)) snprintf(name, sizeof name, "%.*s.w", (int)(len - t), src);
    ix_replace_layers(c, e[0].first, e[n - 1].last, &g);
    if (*name) ix_layer_name_from(c, &c->layers[e[0].first], name);
    return ok;
}

bool ix_transformer_merge(ix_ctx *c)
{
    for (int i = 0; i < c->nlayers; i++) {
        enc e[64];
        if (!encoder_at(c, i, &e[0])) continue;
        int n = 1;
        while (n < 64 && encoder_at(c, e[n - 1].last + 1, &e[n]) && e[n].from == e[n - 1].last && same_config(&e[0], &e[n]))
            n++;
        if (!merge_run(c, e, n)) return false;
    }
    return true;
}
