/* onnx_import_attention.c: self-attention in a torch.onnx.export graph as one
 * multihead_attention layer. The region is found from each Softmax whose output is
 * multiplied by another activation (softmax(...) v): back from its output projection to
 * the projections of one input x, forward through the Reshapes and Transposes that give
 * [B, T, C] again; shape arithmetic only the region reads goes with it. The region is then
 * followed tensor by tensor (onnx_attn.h): each axis's factors (batch, time, heads, head
 * dims), each projection's columns, the scale and the mask, so that the layer is made
 * only when the graph computes what clgrad's layer does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_attn.h"

typedef const Onnx__NodeProto node;

/* ---- finding the regions --------------------------------------------------------------------- */

static int producer(const ix_ctx *c, const char *name)
{
    for (size_t i = 0; i < c->g->n_node; i++)
        for (size_t k = 0; k < c->g->node[i]->n_output; k++)
            if (!strcmp(c->g->node[i]->output[k], name)) return (int)i;
    return -1;
}

/* dyn[i]: node i computes on the model's input (not only on its shape). */
static bool *dynamic_nodes(ix_ctx *c)
{
    bool *dyn = calloc(c->g->n_node + 1, sizeof *dyn);
    if (!dyn) return NULL;
    for (size_t i = 0; i < c->g->n_node; i++) {
        node *n = c->g->node[i];
        if (!strcmp(n->op_type, "Shape")) continue;
        for (size_t k = 0; k < n->n_input && !dyn[i]; k++) {
            const ix_value *v = *n->input[k] ? ix_value_find(c, n->input[k]) : NULL;
            int p = *n->input[k] ? producer(c, n->input[k]) : -1;
            dyn[i] = (v && v->kind == IX_ACT && v->layer < 0) || (p >= 0 && dyn[p]);
        }
    }
    return dyn;
}

static bool is_dyn(ix_ctx *c, const bool *dyn, const char *name)
{
    const ix_value *v = *name ? ix_value_find(c, name) : NULL;
    int p = *name ? producer(c, name) : -1;
    return (v && v->kind == IX_ACT && v->layer < 0) || (p >= 0 && dyn[p]);
}

static bool op_is(node *n, const char *ops)
{
    size_t len = strlen(n->op_type);
    if (!len) return false;
    for (const char *s = ops; (s = strstr(s, n->op_type)); s += len)
        if ((s == ops || s[-1] == ' ') && (s[len] == ' ' || !s[len])) return true;
    return false;
}

/* A MatMul or Gemm of one activation by a host weight. */
static bool projection(ix_ctx *c, const bool *dyn, node *n)
{
    return op_is(n, "MatMul Gemm") && n->n_input >= 2 && is_dyn(c, dyn, n->input[0]) && !is_dyn(c, dyn, n->input[1]);
}

/* The one node reading value name apart from Shapes (host arithmetic on its sizes), or -1. */
static int sole_consumer(ix_ctx *c, const char *name)
{
    int found = -1;
    for (size_t i = 0; i < c->g->n_node; i++)
        for (size_t j = 0; j < c->g->node[i]->n_input; j++)
            if (!strcmp(c->g->node[i]->input[j], name) && strcmp(c->g->node[i]->op_type, "Shape")) {
                if (found >= 0) return -1;
                found = (int)i;
            }
    for (size_t g = 0; g < c->g->n_output; g++)
        if (!strcmp(c->g->output[g]->name, name)) return -1;
    return found;
}

/* Region r's nodes back from node i: through attention's ops to the projections (and
 * the Transposes before them), whose input is x. */
static void mark_back(ix_ctx *c, const bool *dyn, int i, int r, const char **x, int depth)
{
    node *n = c->g->node[i];
    if (c->region[i] >= 0 || depth > 1024) return;   /* deeper: not attention, and reading it will say so */   /* this region's already, or another's (which ends here) */
    c->region[i] = r;
    if (projection(c, dyn, n)) {
        const char *in = n->input[0];
        for (int p = producer(c, in); p >= 0 && !strcmp(c->g->node[p]->op_type, "Transpose") && c->region[p] < 0;
             p = producer(c, in)) {
            c->region[p] = r;
            in = c->g->node[p]->input[0];
        }
        if (!*x) *x = in;
        return;
    }
    for (size_t k = 0; k < n->n_input; k++) {
        int p = *n->input[k] && is_dyn(c, dyn, n->input[k]) ? producer(c, n->input[k]) : -1;
        if (p >= 0 && op_is(c->g->node[p], "MatMul Gemm Add Mul Div Transpose Reshape Slice Split Where Softmax Squeeze Unsqueeze"))
            mark_back(c, dyn, p, r, x, depth + 1);
    }
}

/* From Softmax s: the attention around it, or nothing when s is not read by a product
 * with another activation. */
static bool find_region(ix_ctx *c, const bool *dyn, int s)
{
    node *n = c->g->node[s];
    int i = sole_consumer(c, n->output[0]);
    if (i < 0 || strcmp(c->g->node[i]->op_type, "MatMul") || c->g->node[i]->n_input != 2 ||
        !is_dyn(c, dyn, c->g->node[i]->input[0]) || !is_dyn(c, dyn, c->g->node[i]->input[1]))
        return true;
    ix_region *rs = realloc(c->regions, (size_t)(c->nregions + 1) * sizeof *rs);
    if (!rs) return ix_fail(c, n, "out of host memory");
    c->regions = rs;
    int r = c->nregions++;
    ix_region *reg = &c->regions[r];
    *reg = (ix_region){NULL, NULL};
    mark_back(c, dyn, i, r, &reg->x, 0);
    /* forward to the output projection, then its bias and the layout back to [B, T, C] */
    int last = i;
    while (!projection(c, dyn, c->g->node[last])) {
        int k = sole_consumer(c, c->g->node[last]->output[0]);
        if (k < 0 || !op_is(c->g->node[k], "MatMul Gemm Transpose Reshape Mul Div")) break;
        c->region[last = k] = r;
    }
    if (last != i && projection(c, dyn, c->g->node[last]))
        for (int k = sole_consumer(c, c->g->node[last]->output[0]); k >= 0; k = sole_consumer(c, c->g->node[last]->output[0])) {
            node *m = c->g->node[k], *prev = c->g->node[last];
            bool bias = !strcmp(m->op_type, "Add") && m->n_input == 2 && !strcmp(prev->op_type, "MatMul") &&
                        !is_dyn(c, dyn, m->input[!strcmp(m->input[0], prev->output[0])]);
            if (!bias && !op_is(m, "Transpose Reshape")) break;
            c->region[last = k] = r;
        }
    reg->exit = c->g->node[last]->output[0];
    return true;
}

/* Host-side nodes whose outputs only regions (or other such nodes) read: taken with them. */
static void mark_helpers(ix_ctx *c, const bool *dyn)
{
    for (size_t i = c->g->n_node; i-- > 0;) {
        node *n = c->g->node[i];
        if (dyn[i] || c->region[i] >= 0) continue;
        bool only = n->n_output > 0;
        for (size_t k = 0; only && k < n->n_output; k++) {
            const char *out = n->output[k];
            for (size_t g = 0; only && g < c->g->n_output; g++) only = strcmp(c->g->output[g]->name, out) != 0;
            int uses = 0;
            for (size_t j = i + 1; only && j < c->g->n_node; j++)
                for (size_t q = 0; q < c->g->node[j]->n_input; q++)
                    if (!strcmp(c->g->node[j]->input[q], out)) {
                        uses++;
                        only = only && (c->region[j] >= 0 || c->done[j]);
                    }
            only = only && uses > 0;
        }
        if (only) c->done[i] = true;
    }
}

bool ix_attention_scan(ix_ctx *c)
{
    for (size_t i = 0; i < c->g->n_node; i++)
        if (!c->g->node[i]->n_output) return ix_fail(c, c->g->node[i], "no outputs");
    c->region = malloc((c->g->n_node + 1) * sizeof *c->region);
    bool *dyn = c->region ? dynamic_nodes(c) : NULL;
    if (!dyn) return ix_fail(c, NULL, "out of host memory");
    for (size_t i = 0; i < c->g->n_node; i++) c->region[i] = -1;
    bool ok = true;
    for (size_t i = 0; ok && i < c->g->n_node; i++)
        if (!strcmp(c->g->node[i]->op_type, "Softmax") && dyn[i] && c->region[i] < 0) ok = find_region(c, dyn, (int)i);
    if (ok && c->nregions) mark_helpers(c, dyn);
    free(dyn);
    return ok;
}

/* ---- reading a region ------------------------------------------------------------------------ */

/* The layer's name from its output projection's weight: "h.0.attn.out_proj.weight" -> h_0_attn. */
static void name_layer(ix_ctx *c, ix_layer *l, const char *w)
{
    static const char *const tails[] = {".out_proj.weight", ".c_proj.weight", ".proj.weight"};
    size_t len = strlen(w);
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        size_t t = strlen(tails[i]);
        if (len > t && len - t < 200 && !strcmp(w + len - t, tails[i])) {
            char name[220];
            snprintf(name, sizeof name, "%.*s.w", (int)(len - t), w);
            ix_layer_name_from(c, l, name);
            return;
        }
    }
}

/* Rows r of in_proj [3C, C] from projection part p (x W: W [C, N], or [N, C] transposed). */
static void in_rows(const ax_ctx *a, const ax_part *p, float *w, float *b)
{
    const ax_proj *pr = &a->proj[p->proj];
    int64_t C = a->C;
    for (int64_t r = 0; r < C; r++) {
        int64_t col = p->lo + r;
        for (int64_t j = 0; j < C; j++) w[r * C + j] = pr->trans ? pr->w[col * C + j] : pr->w[j * pr->n + col];
        b[r] = pr->b ? pr->b[col] : 0;
    }
}

static bool emit(ix_ctx *c, ax_ctx *a, node *last, ix_value *xv, const char *exit)
{
    const ax_val *o = ax_get(a, exit);
    bool ok = o && o->kind == AV_TRACED && o->what == AW_OUT && o->nax == 3 && o->scale == 1;
    static const ax_factor want[3] = {AF_B, AF_T, AF_O};
    for (int k = 0; ok && k < 3; k++) ok = o->ax[k].n == 1 && o->ax[k].f[0] == want[k];
    if (!ok) return ix_fail(c, last, "the attention's result is read only as the output projection's [batch, T, C] "
                            "(the region ends here with something else)");
    const ax_part *p[3] = {&o->q, &o->k, &o->v};
    int64_t C = a->C, H = o->q.heads;
    for (int i = 0; i < 3; i++)
        if (p[i]->hi - p[i]->lo != C || p[i]->heads != H)
            return ix_fail(c, last, "%c has %lld columns in %lld heads; clgrad's attention takes %lld in %lld", "qkv"[i],
                           (long long)(p[i]->hi - p[i]->lo), (long long)p[i]->heads, (long long)C, (long long)H);
    bool bias = o->ob;
    for (int i = 0; i < 3; i++) bias = bias || a->proj[p[i]->proj].b;
    float *w = malloc((size_t)(4 * C * C + 4 * C) * sizeof *w);
    if (!w) return ix_fail(c, last, "out of host memory");
    float *b = w + 3 * C * C, *ow = b + 3 * C, *ob = ow + C * C;
    for (int i = 0; i < 3; i++) in_rows(a, p[i], w + i * C * C, b + i * C);
    for (int64_t r = 0; r < C; r++) {
        for (int64_t j = 0; j < C; j++) ow[r * C + j] = o->otrans ? o->ow[r * C + j] : o->ow[j * C + r];
        ob[r] = o->ob ? o->ob[r] : 0;
    }
    const ix_value *ins[1] = {xv};
    ix_layer *l = ix_layer_new(c, last, &mk_multihead_attention, json_pack("{s:s,s:I,s:b,s:b}", "type", "multihead_attention", "heads",
                                                          (json_int_t)H, "causal", o->causal, "bias", bias), 1, ins);
    if (l) name_layer(c, l, o->oname);
    ok = l && ix_layer_weight(c, l, "in_proj_weight", 2, (int64_t[]){3 * C, C}, w, false) &&
         ix_layer_weight(c, l, "out_proj.weight", 2, (int64_t[]){C, C}, ow, false) &&
         (!bias || (ix_layer_weight(c, l, "in_proj_bias", 1, (int64_t[]){3 * C}, b, false) &&
                    ix_layer_weight(c, l, "out_proj.bias", 1, (int64_t[]){C}, ob, false))) &&
         ix_set_act(c, last, 0, c->nlayers - 1, 3);
    free(w);
    return ok;
}

bool ix_attention_run(ix_ctx *c, int r)
{
    const ix_region *reg = &c->regions[r];
    node *first = NULL, *last = NULL;
    for (size_t i = 0; i < c->g->n_node; i++)
        if (c->region[i] == r) {
            if (!first) first = c->g->node[i];
            if (!strcmp(c->g->node[i]->output[0], reg->exit)) last = c->g->node[i];
        }
    ix_value *xv = reg->x ? ix_value_find(c, reg->x) : NULL;
    if (!xv || xv->kind != IX_ACT || xv->tmajor || xv->tokens || !last)
        return ix_fail(c, first, "attention is read only as self-attention: q, k and v projections of one activation [batch, T, C]");
    int nd;
    ix_sym d[CLG_MAX_DIMS + 1];
    if (!ix_act_dims(c, first, xv, &nd, d)) return false;
    if (nd != 3) return ix_fail(c, first, "the attention's input \"%s\" has %d axes ([batch, T, C] expected)", xv->name, nd);
    ax_ctx a = {.c = c, .T = d[1].k, .C = d[2].k};
    ax_val *x = ax_get(&a, xv->name);
    bool ok = x != NULL;
    if (ok) {
        x->kind = AV_TRACED, x->what = AW_X, x->nax = 3, x->scale = 1, x->part.proj = -1;
        x->ax[0] = (ax_axis){1, {AF_B}}, x->ax[1] = (ax_axis){1, {AF_T}}, x->ax[2] = (ax_axis){1, {AF_C}};
    }
    for (size_t i = 0; ok && i < c->g->n_node; i++)
        if (c->region[i] == r) {
            c->done[i] = true;
            ok = ax_trace_node(&a, c->g->node[i]);
        }
    ok = ok && emit(c, &a, last, xv, reg->exit);
    ax_free(&a);
    return ok;
}
