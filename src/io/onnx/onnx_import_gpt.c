/* onnx_import_gpt.c: nanoGPT's model as torch.onnx.export writes it, read back as one gpt
 * layer. A position embedding (rows of a table, Gather'd by Range(0, T), added to the
 * token embedding) has no model-file layer of its own: it is read only when the whole
 * graph is nanoGPT's, which after the nodes are read is a list of layers: embedding; per
 * block layer_norm, causal multihead_attention, add, layer_norm, linear 4C, gelu,
 * linear C, add; layer_norm; a linear head without bias whose weight is the token
 * embedding's (tied). Those layers then become one gpt layer with their weights under
 * nanoGPT's names; anything else with a position embedding fails naming its Add. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_attn.h"

typedef const Onnx__NodeProto node;

bool ix_position_rows(ix_ctx *c, node *n, const ix_value *table, const ix_value *idx)
{
    if (idx->ndim != 1 || idx->symbolic || table->ndim != 2 || ix_attr_i(n, "axis", 0))
        return ix_fail(c, n, "a Gather of a constant table is read only by constant positions (a position embedding)");
    for (int64_t k = 0; k < idx->numel; k++)
        if (idx->i[k] != idx->i[0] + k || idx->i[k] < 0 || idx->i[k] >= table->dims[0])
            return ix_fail(c, n, "a Gather of a constant table is read only by positions first, first + 1, ...");
    ix_value *o = ix_value_get(c, n->output[0]);
    if (!o) return false;
    int64_t C = table->dims[1];
    *o = (ix_value){.name = o->name, .kind = IX_CONST, .ndim = 2, .dims = {idx->numel, C}, .numel = idx->numel * C,
                    .rows_of = table, .rows_from = idx->numel ? idx->i[0] : 0};
    if (!(o->f = malloc((size_t)(o->numel ? o->numel : 1) * sizeof *o->f))) return ix_fail(c, n, "out of host memory");
    memcpy(o->f, table->f + o->rows_from * C, (size_t)o->numel * sizeof *o->f);
    return true;
}

bool ix_position_add(ix_ctx *c, node *n, ix_value *a, ix_value *b)
{
    ix_value *act = a->kind == IX_ACT ? a : b, *rows = a->kind == IX_ACT ? b : a;
    bool ok = act->kind == IX_ACT && rows->rows_of && act->layer == 0 && c->nlayers == 1 &&
              c->layers[0].kind == &mk_embedding && !c->pos_add && act->rank == 3;
    if (!ok) return ix_fail(c, n, "a constant added to an activation is read only as a position embedding added to the "
                            "token embedding (nanoGPT's model)");
    c->pos_add = n;
    c->pos_rows = rows;
    return ix_alias(c, n, 0, act);   /* the gpt layer made at the end adds it */
}

/* ---- the layers of nanoGPT's model ----------------------------------------------------------- */

static double spec_real(const ix_layer *l, const char *key) { return json_real_value(json_object_get(l->spec, key)); }
static int64_t spec_int(const ix_layer *l, const char *key) { return json_integer_value(json_object_get(l->spec, key)); }
static bool spec_true(const ix_layer *l, const char *key) { return json_is_true(json_object_get(l->spec, key)); }

/* Layer i is of kind k and reads exactly the layers given (in any order). */
static bool is(const ix_ctx *c, int i, const model_kind *k, int a, int b)
{
    if (i >= c->nlayers || c->layers[i].kind != k) return false;
    const ix_layer *l = &c->layers[i];
    if (b == -2) return l->ninputs == 1 && l->inputs[0] == a;
    return l->ninputs == 2 && ((l->inputs[0] == a && l->inputs[1] == b) || (l->inputs[0] == b && l->inputs[1] == a));
}

static bool norm_ok(const ix_ctx *c, int i, int from)
{
    return is(c, i, &mk_layer_norm, from, -2) && spec_int(&c->layers[i], "dims") == 1 &&
           fabs(spec_real(&c->layers[i], "eps") - 1e-5) < 1e-12;
}

/* Why layers from 1 are not nanoGPT's blocks, or NULL; *L and *H set. */
static const char *blocks(const ix_ctx *c, int64_t C, int64_t *L, int64_t *H)
{
    if (c->nlayers < 11 || (c->nlayers - 3) % 8)
        return "the layers are not an embedding, blocks of 8 layers, a layer norm and a head";
    *L = (c->nlayers - 3) / 8;
    int r = 0, j = 1;
    for (int64_t b = 0; b < *L; b++, j += 8) {
        const ix_layer *a = &c->layers[j + 1], *fc = &c->layers[j + 4], *pr = &c->layers[j + 6];
        if (!norm_ok(c, j, r) || !is(c, j + 1, &mk_multihead_attention, j, -2) || !is(c, j + 2, &mk_add, r, j + 1) || !norm_ok(c, j + 3, j + 2) ||
            !is(c, j + 4, &mk_linear, j + 3, -2) || !is(c, j + 5, &mk_gelu, j + 4, -2) || !is(c, j + 6, &mk_linear, j + 5, -2) ||
            !is(c, j + 7, &mk_add, j + 2, j + 6))
            return "the layers after it are not nanoGPT's blocks (layer_norm, causal attention, add, layer_norm, linear, "
                   "gelu, linear, add; layer norms of eps 1e-5)";
        if (!spec_true(a, "causal") || !spec_true(a, "bias") || !spec_true(fc, "bias") || !spec_true(pr, "bias") ||
            spec_int(fc, "out") != 4 * C || spec_int(pr, "out") != C || (*H && spec_int(a, "heads") != *H))
            return "a block's attention is not causal, or lacks biases, or its MLP is not C -> 4 C -> C";
        *H = spec_int(a, "heads");
        r = j + 7;
    }
    if (!norm_ok(c, j, r) || !is(c, j + 1, &mk_linear, j, -2) || spec_true(&c->layers[j + 1], "bias"))
        return "the blocks are not followed by a layer norm and a linear head without bias (and nothing else)";
    return NULL;
}

/* Layer i's weight of that suffix (NULL when missing). */
static ix_weight *weight(ix_ctx *c, int i, const char *suffix)
{
    for (int k = 0; k < c->layers[i].nw; k++)
        if (!strcmp(c->layers[i].w[k].suffix, suffix)) return &c->layers[i].w[k];
    return NULL;
}

/* Layer i's weight `from` into g as `to` (the data moved, not copied). */
static bool move(ix_ctx *c, ix_layer *g, int i, const char *from, const char *to)
{
    ix_weight *w = weight(c, i, from);
    if (!w) return ix_fail(c, c->pos_add, "layer %s has no %s", c->layers[i].name, from);
    if (g->nw == IX_MAX_WEIGHTS) return ix_fail(c, c->pos_add, "more than %d weights in one gpt layer", IX_MAX_WEIGHTS);
    g->w[g->nw] = *w;
    snprintf(g->w[g->nw++].suffix, sizeof w->suffix, "%s", to);
    w->data = NULL;
    return true;
}

static bool move_block(ix_ctx *c, ix_layer *g, int j, int64_t b)
{
    static const struct { int at; const char *from, *to; } map[] = {
        {0, "weight", "ln_1.weight"}, {0, "bias", "ln_1.bias"},
        {1, "in_proj_weight", "attn.c_attn.weight"}, {1, "in_proj_bias", "attn.c_attn.bias"},
        {1, "out_proj.weight", "attn.c_proj.weight"}, {1, "out_proj.bias", "attn.c_proj.bias"},
        {3, "weight", "ln_2.weight"}, {3, "bias", "ln_2.bias"}, {4, "weight", "mlp.c_fc.weight"}, {4, "bias", "mlp.c_fc.bias"},
        {6, "weight", "mlp.c_proj.weight"}, {6, "bias", "mlp.c_proj.bias"}};
    for (size_t k = 0; k < sizeof map / sizeof *map; k++) {
        char to[48];
        snprintf(to, sizeof to, "transformer.h.%lld.%s", (long long)b, map[k].to);
        if (!move(c, g, j + map[k].at, map[k].from, to)) return false;
    }
    return true;
}

bool ix_gpt_merge(ix_ctx *c)
{
    if (!c->pos_add) return true;
    const ix_weight *wte = c->nlayers ? weight(c, 0, "weight") : NULL;
    int64_t V = wte ? wte->dims[0] : 0, C = wte ? wte->dims[1] : 0, L, H = 0;
    const char *why = wte ? blocks(c, C, &L, &H) : "no token embedding";
    const ix_value *pos = c->pos_rows;
    const ix_weight *head = why ? NULL : weight(c, c->nlayers - 1, "weight");
    if (!why && (!head || head->dims[0] != V || head->dims[1] != C || memcmp(head->data, wte->data, (size_t)(V * C) * sizeof *wte->data)))
        why = "the head's weight is not the token embedding's (clgrad's gpt ties them)";
    if (!why && (pos->rows_from != 0 || pos->rows_of->dims[1] != C)) why = "the positions do not start at 0";
    if (why)
        return ix_fail(c, c->pos_add, "a position embedding is read only as part of nanoGPT's whole model (a gpt layer): %s", why);
    ix_layer g = {.kind = &mk_gpt, .ninputs = 1, .inputs = {-1}};
    snprintf(g.name, sizeof g.name, "0");
    g.spec = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:f,s:b}", "type", "gpt", "vocab", (json_int_t)V, "context",
                       (json_int_t)pos->rows_of->dims[0], "layers", (json_int_t)L, "heads", (json_int_t)H, "dim",
                       (json_int_t)C, "dropout", 0.0, "bias", 1);
    bool ok = g.spec && move(c, &g, 0, "weight", "transformer.wte.weight") &&
              ix_layer_weight(c, &g, "transformer.wpe.weight", 2, pos->rows_of->dims, pos->rows_of->f, false);
    for (int64_t b = 0; ok && b < L; b++) ok = move_block(c, &g, 1 + 8 * (int)b, b);
    ok = ok && move(c, &g, c->nlayers - 2, "weight", "transformer.ln_f.weight") &&
         move(c, &g, c->nlayers - 2, "bias", "transformer.ln_f.bias");
    int last = c->nlayers - 1;
    for (int i = 0; i < c->nlayers; i++) {   /* the old layers go; g takes layer 0's place */
        json_decref(c->layers[i].spec);
        for (int k = 0; k < c->layers[i].nw; k++) free(c->layers[i].w[k].data);
    }
    c->layers[0] = g;
    c->nlayers = 1;
    for (int i = 0; i < c->nvals; i++)
        if (c->vals[i]->kind == IX_ACT && c->vals[i]->layer == last) c->vals[i]->layer = 0;
    return ok || ix_fail(c, c->pos_add, "out of host memory");
}
