/* onnx_import_ops.c: one ONNX node at a time. A node that computes on activations
 * becomes a model-file layer (its weights copied from the constants it reads); Identity,
 * Dropout of ratio 0 and Transposes around recurrent nodes become aliases; shape
 * arithmetic goes to onnx_import_shape.c, formulas to onnx_import_patterns.c. Anything
 * else fails naming the node. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_attn.h"

typedef const Onnx__NodeProto node;

static bool simple(ix_ctx *c, node *n, const model_kind *kind, const char *type) { return ix_on_input(c, n, kind, ix_typed(type), 0); }

/* ---- linear ---------------------------------------------------------------------------------- */

/* w: [out, in] (or [in, out] when transpose), b: [out] or NULL. */
static bool linear(ix_ctx *c, node *n, node *out_node, int64_t in, int64_t out, const ix_value *w, bool transpose,
                   const ix_value *b, const char *wname, const char *bname)
{
    ix_value *x = ix_act_in(c, n, 0);
    if (!x) return false;
    const ix_value *ins[1] = {x};
    ix_layer *l = ix_layer_new(c, n, &mk_linear, json_pack("{s:s,s:I,s:b}", "type", "linear", "out", (json_int_t)out,
                                                          "bias", b != NULL), 1, ins);
    if (!l) return false;
    ix_layer_name_from(c, l, wname);
    if (bname && l->name[0] >= '0' && l->name[0] <= '9') ix_layer_name_from(c, l, bname);   /* "onnx::MatMul_7" */
    if (!ix_layer_weight(c, l, "weight", 2, (int64_t[]){out, in}, w->f, transpose)) return false;
    if (b && !ix_layer_weight(c, l, "bias", 1, (int64_t[]){out}, b->f, false)) return false;
    return ix_set_act(c, out_node, 0, c->nlayers - 1, x->rank);
}

static bool op_gemm(ix_ctx *c, node *n)
{
    ix_value *w = ix_const_in(c, n, 1, true);
    if (!w) return false;
    bool tb = ix_attr_i(n, "transB", 0) != 0, has_b = !ix_no_input(n, 2);
    if (ix_attr_i(n, "transA", 0) || ix_attr_f(n, "alpha", 1) != 1 || (has_b && ix_attr_f(n, "beta", 1) != 1))
        return ix_fail(c, n, "only Gemm with transA = 0, alpha = 1 and beta = 1 is a linear layer");
    if (w->ndim != 2) return ix_fail(c, n, "B has %d axes, 2 expected", w->ndim);
    int64_t out = tb ? w->dims[0] : w->dims[1], in = tb ? w->dims[1] : w->dims[0];
    ix_value *b = has_b ? ix_const_in(c, n, 2, true) : NULL;
    if (has_b && !b) return false;
    if (b && b->numel != out) return ix_fail(c, n, "C has %lld values, not one per output (%lld)", (long long)b->numel, (long long)out);
    ix_value *x = ix_act_in(c, n, 0);
    if (!x) return false;
    if (x->rank != 2) return ix_fail(c, n, "A has %d axes, 2 expected", x->rank);
    return linear(c, n, n, in, out, w, !tb, b, n->input[1], has_b ? n->input[2] : NULL);
}

/* MatMul by a constant [in, out], and the Add of a bias [out] right after it. */
static bool op_matmul(ix_ctx *c, node *n)
{
    const ix_value *rhs = ix_value_find(c, n->input[1]);
    if (rhs && rhs->kind == IX_ACT)
        return ix_fail(c, n, "a product of two activations is read only within self-attention (softmax(q k^T / sqrt(D)) v "
                       "with q, k, v and the output projections of one activation)");
    ix_value *w = ix_const_in(c, n, 1, true);
    if (!w) return false;
    if (w->ndim != 2) return ix_fail(c, n, "the constant operand has %d axes, 2 expected", w->ndim);
    size_t at;
    node *add = ix_consumer(c, n->output[0], &at);
    const ix_value *b = NULL;
    if (add && !strcmp(add->op_type, "Add") && add->n_input == 2) {
        int k = !strcmp(add->input[0], n->output[0]);
        ix_value *v = ix_value_find(c, add->input[k]);
        bool row = v && v->kind == IX_CONST && !v->is_int && v->numel == w->dims[1] && v->ndim >= 1 &&
                   v->dims[v->ndim - 1] == w->dims[1];
        if (row) b = v, c->done[at] = true;
    }
    return linear(c, n, b ? add : n, w->dims[0], w->dims[1], w, true, b, n->input[1], b ? b->name : NULL);
}

/* ---- elementwise ----------------------------------------------------------------------------- */
/* Add of two activations: an add layer. */
static bool op_add(ix_ctx *c, node *n)
{
    ix_value *a = ix_in(c, n, 0), *b = ix_in(c, n, 1);
    if (!a || !b) return false;
    if ((a->kind == IX_CONST && a->rows_of) || (b->kind == IX_CONST && b->rows_of)) return ix_position_add(c, n, a, b);
    if (a->kind != IX_ACT || b->kind != IX_ACT)
        return ix_fail(c, n, "it adds a constant to an activation (only a bias right after MatMul is read)");
    if (!(a = ix_act_in(c, n, 0)) || !(b = ix_act_in(c, n, 1))) return false;
    if (a->rank != b->rank) return ix_fail(c, n, "its operands have %d and %d axes (broadcasting is not read)", a->rank, b->rank);
    const ix_value *ins[2] = {a, b};
    return ix_layer_new(c, n, &mk_add, ix_typed("add"), 2, ins) && ix_set_act(c, n, 0, c->nlayers - 1, a->rank);
}

static bool op_activation(ix_ctx *c, node *n)
{
    const char *op = n->op_type;
    if (!strcmp(op, "Relu")) return simple(c, n, &mk_relu, "relu");
    if (!strcmp(op, "Tanh")) return simple(c, n, &mk_tanh, "tanh");
    if (!strcmp(op, "LeakyRelu"))
        return ix_on_input(c, n, &mk_leaky_relu, json_pack("{s:s,s:f}", "type", "leaky_relu", "slope", ix_tidy(ix_attr_f(n, "alpha", 0.01f))), 0);
    if (!strcmp(op, "Elu"))
        return ix_on_input(c, n, &mk_elu, json_pack("{s:s,s:f}", "type", "elu", "alpha", ix_tidy(ix_attr_f(n, "alpha", 1))), 0);
    return simple(c, n, &mk_softplus, "softplus");   /* beta 1; threshold 20 changes < 1e-8 relative */
}

static bool op_softmax(ix_ctx *c, node *n)
{
    ix_value *x = ix_act_in(c, n, 0);
    if (!x) return false;
    int64_t axis = ix_attr_i(n, "axis", -1);
    if (axis != -1 && axis != x->rank - 1) return ix_fail(c, n, "axis %lld: only the last axis is read", (long long)axis);
    return simple(c, n, &mk_softmax, "softmax");
}

static bool op_dropout(ix_ctx *c, node *n)
{
    if (!ix_unused_output(c, n, 1, "the mask")) return false;
    ix_value *x = ix_act_in(c, n, 0);
    if (!x) return false;
    double p = 0.5;
    if (!ix_no_input(n, 1)) {
        ix_value *r = ix_const_in(c, n, 1, true);
        if (!r || r->numel != 1) return r ? ix_fail(c, n, "ratio is not one value") : false;
        p = ix_tidy(r->f[0]);
    }
    if (p == 0) return ix_alias(c, n, 0, x);
    return ix_on_input(c, n, &mk_dropout, json_pack("{s:s,s:f}", "type", "dropout", "p", p), 0);
}

/* ---- convolutions, pools, norms ------------------------------------------------------------- */

static bool op_conv(ix_ctx *c, node *n)
{
    ix_value *x = ix_act_in(c, n, 0), *w = x ? ix_const_in(c, n, 1, true) : NULL;
    if (!w || !ix_no_auto_pad(c, n)) return false;
    int k = w->ndim - 2;
    if ((k != 1 && k != 2) || x->rank != w->ndim)
        return ix_fail(c, n, "a %d-d convolution on %d axes (conv1d and conv2d are read)", k, x->rank);
    int64_t ks[2], st[2], pads[4], dil[2];
    if (!ix_ints(c, n, "kernel_shape", (size_t)k, 0, ks) || !ix_ints(c, n, "strides", (size_t)k, 1, st) ||
        !ix_ints(c, n, "pads", 2 * (size_t)k, 0, pads) || !ix_ints(c, n, "dilations", (size_t)k, 1, dil))
        return false;
    for (int i = 0; i < k; i++)
        if (pads[i] != pads[i + k]) return ix_fail(c, n, "pads differ at the start and end of axis %d (only symmetric padding is read)", i);
    ix_value *b = ix_no_input(n, 2) ? NULL : ix_const_in(c, n, 2, true);
    if (!ix_no_input(n, 2) && !b) return false;
    json_t *spec;
    if (k == 2)
        spec = json_pack("{s:s,s:I,s:[I,I],s:[I,I],s:[I,I],s:[I,I],s:I,s:b}", "type", "conv2d", "out", (json_int_t)w->dims[0],
                         "kernel", (json_int_t)w->dims[2], (json_int_t)w->dims[3], "stride", (json_int_t)st[0], (json_int_t)st[1],
                         "padding", (json_int_t)pads[0], (json_int_t)pads[1], "dilation", (json_int_t)dil[0], (json_int_t)dil[1],
                         "groups", (json_int_t)ix_attr_i(n, "group", 1), "bias", b != NULL);
    else
        spec = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "type", "conv1d", "out", (json_int_t)w->dims[0], "kernel",
                         (json_int_t)w->dims[2], "stride", (json_int_t)st[0], "padding", (json_int_t)pads[0], "dilation",
                         (json_int_t)dil[0], "groups", (json_int_t)ix_attr_i(n, "group", 1), "bias", b != NULL);
    ix_layer *l = ix_on_input(c, n, k == 2 ? &mk_conv2d : &mk_conv1d, spec, 0);
    if (!l) return false;
    ix_layer_name_from(c, l, n->input[1]);
    return ix_layer_weight(c, l, "weight", w->ndim, w->dims, w->f, false) &&
           (!b || ix_layer_weight(c, l, "bias", 1, b->dims, b->f, false));
}

static bool op_pool(ix_ctx *c, node *n, bool max)
{
    if (!ix_no_auto_pad(c, n) || !ix_unused_output(c, n, 1, "the indices")) return false;
    int64_t ks[2], st[2], pads[4], dil[2];
    if (!ix_ints(c, n, "kernel_shape", 2, 0, ks) || !ix_ints(c, n, "strides", 2, 1, st) || !ix_ints(c, n, "pads", 4, 0, pads) ||
        !ix_ints(c, n, "dilations", 2, 1, dil))
        return false;
    if (ks[0] != ks[1] || st[0] != st[1] || pads[0] != pads[1] || pads[0] != pads[2] || pads[0] != pads[3])
        return ix_fail(c, n, "only square kernels, strides and padding, the same on every side, are read");
    if (ix_attr_i(n, "ceil_mode", 0) || dil[0] != 1 || dil[1] != 1)
        return ix_fail(c, n, "ceil_mode and dilation are not read");
    if (!max && pads[0] && !ix_attr_i(n, "count_include_pad", 0))
        return ix_fail(c, n, "padding left out of the average (count_include_pad = 0) is not read");
    return ix_on_input(c, n, max ? &mk_max_pool2d : &mk_avg_pool2d,
                    json_pack("{s:s,s:I,s:I,s:I}", "type", max ? "max_pool2d" : "avg_pool2d", "kernel", (json_int_t)ks[0],
                              "stride", (json_int_t)st[0], "padding", (json_int_t)pads[0]), 0);
}

static bool op_batch_norm(ix_ctx *c, node *n)
{
    if (ix_attr_i(n, "training_mode", 0)) return ix_fail(c, n, "training_mode = 1 is not read");
    if (!ix_unused_output(c, n, 1, "running mean") || !ix_unused_output(c, n, 2, "running var")) return false;
    ix_value *x = ix_act_in(c, n, 0), *p[4];
    if (!x) return false;
    for (size_t k = 0; k < 4; k++)
        if (!(p[k] = ix_const_in(c, n, k + 1, true))) return false;
    if (x->rank < 2 || x->rank > 4) return ix_fail(c, n, "on %d axes (2 to 4 are read)", x->rank);
    bool two = x->rank == 4;
    double m = 1 - (double)ix_attr_f(n, "momentum", 0.9f);   /* ONNX keeps the old value's share */
    ix_layer *l = ix_on_input(c, n, two ? &mk_batch_norm2d : &mk_batch_norm1d,
                           json_pack("{s:s,s:f,s:f}", "type", two ? "batch_norm2d" : "batch_norm1d", "eps",
                                     ix_tidy(ix_attr_f(n, "epsilon", 1e-5f)), "momentum", ix_tidy((float)m)), 0);
    if (!l) return false;
    ix_layer_name_from(c, l, n->input[1]);
    static const char *const names[4] = {"weight", "bias", "running_mean", "running_var"};
    for (int k = 0; k < 4; k++)
        if (!ix_layer_weight(c, l, names[k], 1, (int64_t[]){p[k]->numel}, p[k]->f, false)) return false;
    return true;
}

static bool op_layer_norm(ix_ctx *c, node *n)
{
    if (!ix_unused_output(c, n, 1, "the mean") || !ix_unused_output(c, n, 2, "the inverse deviation")) return false;
    ix_value *x = ix_act_in(c, n, 0), *s = x ? ix_const_in(c, n, 1, true) : NULL, *b = NULL;
    if (!s) return false;
    if (!ix_no_input(n, 2) && !(b = ix_const_in(c, n, 2, true))) return false;
    int64_t axis = ix_attr_i(n, "axis", -1), dims = axis < 0 ? -axis : x->rank - axis;
    if (dims < 1 || dims >= x->rank) return ix_fail(c, n, "axis %lld of %d axes", (long long)axis, x->rank);
    ix_layer *l = ix_on_input(c, n, &mk_layer_norm, json_pack("{s:s,s:f,s:I}", "type", "layer_norm", "eps",
                                                          ix_tidy(ix_attr_f(n, "epsilon", 1e-5f)), "dims", (json_int_t)dims), 0);
    if (!l) return false;
    ix_layer_name_from(c, l, n->input[1]);
    float *zeros = b ? NULL : calloc((size_t)s->numel, sizeof *zeros);
    if (!b && !zeros) return ix_fail(c, n, "out of host memory");
    bool ok = ix_layer_weight(c, l, "weight", s->ndim, s->dims, s->f, false) &&
              ix_layer_weight(c, l, "bias", s->ndim, s->dims, b ? b->f : zeros, false);
    free(zeros);
    return ok;
}

static bool op_flatten(ix_ctx *c, node *n)
{
    ix_value *x = ix_act_in(c, n, 0);
    if (!x) return false;
    int64_t axis = ix_attr_i(n, "axis", 1);
    if (axis != 1 && axis != 1 - x->rank) return ix_fail(c, n, "axis %lld: only flattening after the batch axis is read", (long long)axis);
    return ix_on_input(c, n, &mk_flatten, ix_typed("flatten"), 2);
}

/* ---- tokens, joins, layout ------------------------------------------------------------------ */

static bool op_gather(ix_ctx *c, node *n)
{
    ix_value *d = ix_in(c, n, 0), *t = d ? ix_in(c, n, 1) : NULL;
    if (!t) return false;
    if (d->kind == IX_CONST && d->is_int) return ix_fold_gather(c, n, d);
    if (d->kind == IX_CONST && t->kind == IX_CONST && t->is_int) return ix_position_rows(c, n, d, t);
    if (d->kind != IX_CONST || d->is_int || d->ndim != 2 || t->kind != IX_ACT || !t->tokens || ix_attr_i(n, "axis", 0))
        return ix_fail(c, n, "only a Gather of rows of a constant [num, dim] table by the model's integer input is read (an embedding)");
    if (c->nlayers) return ix_fail(c, n, "an embedding must be the first layer");
    const ix_value *ins[1] = {t};
    ix_layer *l = ix_layer_new(c, n, &mk_embedding, json_pack("{s:s,s:I,s:I}", "type", "embedding", "num",
                                                              (json_int_t)d->dims[0], "dim", (json_int_t)d->dims[1]), 1, ins);
    if (!l) return false;
    ix_layer_name_from(c, l, n->input[0]);
    return ix_layer_weight(c, l, "weight", 2, d->dims, d->f, false) && ix_set_act(c, n, 0, c->nlayers - 1, t->rank + 1);
}

static bool op_concat(ix_ctx *c, node *n)
{
    ix_value *first = ix_in(c, n, 0);
    if (!first) return false;
    if (first->kind == IX_CONST) return ix_fold_concat(c, n);
    if (n->n_input < 2 || n->n_input > MODEL_MAX_INPUTS) return ix_fail(c, n, "%zu inputs (2 to %d are read)", n->n_input, MODEL_MAX_INPUTS);
    const ix_value *ins[MODEL_MAX_INPUTS];
    for (size_t k = 0; k < n->n_input; k++)
        if (!(ins[k] = ix_act_in(c, n, k))) return false;
    int rank = first->rank;
    int64_t axis = ix_attr_i(n, "axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 1 || axis >= rank) return ix_fail(c, n, "axis %lld: only sample axes (after the batch) are read", (long long)axis);
    return ix_layer_new(c, n, &mk_concat, json_pack("{s:s,s:I}", "type", "concat", "axis", (json_int_t)(axis - 1)), (int)n->n_input, ins) &&
           ix_set_act(c, n, 0, c->nlayers - 1, rank);
}

/* Transpose [B, T, F] <-> [T, B, F] around recurrent nodes: an alias that says which. */
static bool op_transpose(ix_ctx *c, node *n)
{
    ix_value *x = ix_in(c, n, 0);
    if (!x) return false;
    int64_t perm[3];
    const Onnx__AttributeProto *a = ix_attr(n, "perm");
    bool swap = x->kind == IX_ACT && x->rank == 3 && a && a->n_ints == 3 && ix_ints(c, n, "perm", 3, 0, perm) && perm[0] == 1 &&
                perm[1] == 0 && perm[2] == 2;
    if (!swap) return ix_fail(c, n, "only the swap of the first two of three axes (perm [1, 0, 2]) around a recurrent node is read");
    if (!ix_alias(c, n, 0, x)) return false;
    ix_value *y = ix_value_find(c, n->output[0]);
    y->tmajor = !x->tmajor;
    return true;
}
bool ix_node(ix_ctx *c, size_t at)
{
    node *n = c->g->node[at];
    const char *op = n->op_type ? n->op_type : "";
    if (c->region && c->region[at] >= 0) return ix_attention_run(c, c->region[at]);   /* its first node */
    if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))
        return ix_fail(c, n, "op of domain \"%s\": only the default ONNX domain is read", n->domain);
    if (!n->n_output) return ix_fail(c, n, "no outputs");
    /* arithmetic on sizes read from the graph outside attention (whose region reads its own) */
    bool arith = !strcmp(op, "Div") || !strcmp(op, "Mul") || !strcmp(op, "Add") || !strcmp(op, "Sub");
    for (size_t k = 0; arith && k < n->n_input; k++) {
        const ix_value *v = ix_value_find(c, n->input[k]);
        if (v && v->kind == IX_CONST && v->symbolic)
            return ix_fail(c, n, "arithmetic on the graph's own sizes (shapes computed at run time) is followed only "
                           "within self-attention");
    }
    if (!strcmp(op, "Gemm")) return op_gemm(c, n);
    if (!strcmp(op, "MatMul")) return op_matmul(c, n);
    if (!strcmp(op, "Add")) return op_add(c, n);
    if (!strcmp(op, "Div")) return ix_gelu(c, n);
    if (!strcmp(op, "Mul")) return ix_mul(c, n);
    if (!strcmp(op, "ConvTranspose")) return ix_conv_transpose(c, n);
    if (!strcmp(op, "Resize")) return ix_resize(c, n);
    if (!strcmp(op, "Conv")) return op_conv(c, n);
    if (!strcmp(op, "MaxPool") || !strcmp(op, "AveragePool")) return op_pool(c, n, op[0] == 'M');
    if (!strcmp(op, "GlobalAveragePool")) return simple(c, n, &mk_global_avg_pool2d, "global_avg_pool2d");
    if (!strcmp(op, "BatchNormalization")) return op_batch_norm(c, n);
    if (!strcmp(op, "LayerNormalization")) return op_layer_norm(c, n);
    if (!strcmp(op, "Flatten")) return op_flatten(c, n);
    if (!strcmp(op, "Sigmoid")) return ix_sigmoid(c, n);
    if (!strcmp(op, "Relu") || !strcmp(op, "Tanh") || !strcmp(op, "LeakyRelu") ||
        !strcmp(op, "Elu") || !strcmp(op, "Softplus"))
        return op_activation(c, n);
    if (!strcmp(op, "Softmax")) return op_softmax(c, n);
    if (!strcmp(op, "Dropout")) return op_dropout(c, n);
    if (!strcmp(op, "Identity")) return ix_in(c, n, 0) && ix_alias(c, n, 0, ix_in(c, n, 0));
    if (!strcmp(op, "Gather")) return op_gather(c, n);
    if (!strcmp(op, "Concat")) return op_concat(c, n);
    if (!strcmp(op, "Transpose")) return op_transpose(c, n);
    if (!strcmp(op, "LSTM") || !strcmp(op, "GRU") || !strcmp(op, "RNN")) return ix_rnn(c, n);
    if (!strcmp(op, "Constant")) return ix_op_constant(c, n);
    if (!strcmp(op, "Pad")) return ix_pad(c, n);
    if (!strcmp(op, "Range")) return ix_range(c, n);
    if (!strcmp(op, "Shape")) return ix_shape(c, n);
    if (!strcmp(op, "Unsqueeze") || !strcmp(op, "Squeeze")) return ix_squeeze(c, n, op[0] == 'U');
    if (!strcmp(op, "ConstantOfShape")) return ix_constant_of_shape(c, n);
    if (!strcmp(op, "Reshape")) return ix_reshape(c, n);
    if (!strcmp(op, "Slice") || !strcmp(op, "Expand") || !strcmp(op, "Tile") || !strcmp(op, "Cast"))
        return ix_of_zeros(c, n);
    if (!strcmp(op, "LogSoftmax"))   /* the usual last node of a classifier trained with NLLLoss */
        return ix_fail(c, n, "op LogSoftmax is not supported (no model-file layer computes it: clgrad's cross_entropy "
                       "loss takes the scores before it, so export the network without its LogSoftmax)");
    return ix_fail(c, n, "op %s is not supported (read: Gemm, MatMul, Add, Conv, MaxPool, AveragePool, GlobalAveragePool, "
                   "BatchNormalization, LayerNormalization, Flatten, Relu, LeakyRelu, Sigmoid, Tanh, Elu, Softplus, Softmax, "
                   "GELU's formulas, SiLU's Sigmoid and Mul, GroupNorm's InstanceNormalization, ConvTranspose, Resize, Reshape to "
                   "[batch, -1], Pad of 0, Dropout, Identity, Gather, Concat, Transpose, LSTM, GRU, RNN, self-attention's "
                   "nodes, a position embedding's Range, and shape arithmetic for zero states)", op);
}
