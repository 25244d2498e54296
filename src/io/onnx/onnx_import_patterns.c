/* onnx_import_patterns.c: layers that torch.onnx.export (opset 17) writes as several
 * nodes, read back as one layer when the whole formula is there, node for node, each
 * intermediate read by the next alone: GELU (erf and tanh forms), SiLU, GroupNorm; and
 * the ops whose reading needs care: Reshape (a flatten only), ConvTranspose, Resize. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_impl.h"

typedef const Onnx__NodeProto node;

/* The one node reading value `name` if it is an `op`, its index in *at. */
static node *next(ix_ctx *c, const char *name, const char *op, size_t *at)
{
    node *n = name ? ix_consumer(c, name, at) : NULL;
    return n && n->op_type && !strcmp(n->op_type, op) ? n : NULL;
}

static bool gelu_layer(ix_ctx *c, node *first, const ix_value *x, node *last, bool tanh_form)
{
    const ix_value *ins[1] = {x};
    return ix_layer_new(c, first, tanh_form ? &mk_gelu_tanh : &mk_gelu, ix_typed(tanh_form ? "gelu_tanh" : "gelu"), 1, ins) &&
           ix_set_act(c, last, 0, c->nlayers - 1, x->rank);
}

/* Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5), read at its Div. */
bool ix_gelu(ix_ctx *c, const Onnx__NodeProto *n)
{
    ix_value *x = ix_act_in(c, n, 0);
    if (!x) return false;
    size_t at[4];
    node *erf = next(c, n->output[0], "Erf", &at[0]);
    node *add = erf ? next(c, erf->output[0], "Add", &at[1]) : NULL;
    node *mul = add ? next(c, add->output[0], "Mul", &at[2]) : NULL;
    node *half = mul ? next(c, mul->output[0], "Mul", &at[3]) : NULL;
    bool ok = half && ix_scalar_is(ix_constant_ahead(c, n->input[1]), sqrt(2.0)) &&
              ix_scalar_is(ix_other(c, add, erf->output[0]), 1) && ix_other(c, mul, add->output[0]) == x &&
              ix_scalar_is(ix_other(c, half, mul->output[0]), 0.5);
    if (!ok) return ix_fail(c, n, "Div is read only as the start of GELU's formula x * 0.5 * (1 + erf(x / sqrt(2)))");
    for (int k = 0; k < 4; k++) c->done[at[k]] = true;
    return gelu_layer(c, n, x, half, false);
}

/* GELU's tanh form as torch.onnx.export writes it, read at Mul(x, x): b = x (x x),
 * d = x + 0.044715 b, h = 1 + tanh(sqrt(2 / pi) d), out = 0.5 (x h). Each step: its op,
 * and its other operand: x, or a constant. */
static bool gelu_tanh(ix_ctx *c, node *n, ix_value *x)
{
    static const struct { const char *op; double k; bool is_x; } steps[] = {
        {"Mul", 0, true}, {"Mul", 0.044715, false}, {"Add", 0, true}, {"Mul", 0.7978845608028654, false},
        {"Tanh", 0, false}, {"Add", 1, false}, {"Mul", 0, true}, {"Mul", 0.5, false}};
    size_t at[8];
    node *cur = n, *last = NULL;
    for (int s = 0; s < 8; s++) {
        node *m = next(c, cur->output[0], steps[s].op, &at[s]);
        bool ok = m && (!strcmp(steps[s].op, "Tanh") ||
                        (steps[s].is_x ? ix_other(c, m, cur->output[0]) == x
                                       : ix_scalar_is(ix_other(c, m, cur->output[0]), steps[s].k)));
        if (!ok) return false;
        cur = last = m;
    }
    for (int s = 0; s < 8; s++) c->done[at[s]] = true;
    return gelu_layer(c, n, x, last, true);
}

/* Mul of activations: only as the start of GELU's tanh form (Mul(x, x)); SiLU's Mul is
 * taken at its Sigmoid. */
bool ix_mul(ix_ctx *c, const Onnx__NodeProto *n)
{
    ix_value *a = ix_in(c, n, 0), *b = a ? ix_in(c, n, 1) : NULL;
    if (!b) return false;
    if (a == b && a->kind == IX_ACT && (a = ix_act_in(c, n, 0)) && gelu_tanh(c, n, a)) return true;
    if (c->failed) return false;
    return ix_fail(c, n, "Mul is read only within GELU's tanh formula or SiLU's x * sigmoid(x) (not as a layer of its own)");
}

/* Sigmoid(x), or SiLU when the one node reading it is Mul(x, Sigmoid(x)). */
bool ix_sigmoid(ix_ctx *c, const Onnx__NodeProto *n)
{
    ix_value *x = ix_act_in(c, n, 0);
    if (!x) return false;
    size_t at;
    node *mul = next(c, n->output[0], "Mul", &at);
    if (mul && ix_other(c, mul, n->output[0]) == x) {
        c->done[at] = true;
        const ix_value *ins[1] = {x};
        return ix_layer_new(c, n, &mk_silu, ix_typed("silu"), 1, ins) && ix_set_act(c, mul, 0, c->nlayers - 1, x->rank);
    }
    return ix_on_input(c, n, &mk_sigmoid, ix_typed("sigmoid"), 0) != NULL;
}

/* Whether v is the Shape of the value named x (its node may come later in the list). */
static bool shape_of(ix_ctx *c, const char *v, const char *x)
{
    for (size_t i = 0; i < c->g->n_node; i++) {
        node *k = c->g->node[i];
        if (k->n_output && !strcmp(k->output[0], v))
            return k->op_type && !strcmp(k->op_type, "Shape") && k->n_input == 1 && !strcmp(k->input[0], x) &&
                   !ix_attr(k, "start") && !ix_attr(k, "end");
    }
    return false;
}

/* A constant [C, 1, ...] (of rank r - 1) as weights [C]. */
static bool per_channel(const ix_value *v, int rank)
{
    if (!v || v->kind != IX_CONST || v->is_int || v->symbolic || v->ndim != rank - 1) return false;
    for (int d = 1; d < v->ndim; d++)
        if (v->dims[d] != 1) return false;
    return true;
}

/* GroupNorm below opset 18, read at Reshape(x, [0, G, -1]): InstanceNormalization (scale
 * 1, bias 0), Reshape back to Shape(x), Mul by the weight [C, 1, ...], Add the bias. */
static bool group_norm(ix_ctx *c, node *n, ix_value *x, int64_t G)
{
    size_t at[4];
    node *in = next(c, n->output[0], "InstanceNormalization", &at[0]);
    node *back = in ? next(c, in->output[0], "Reshape", &at[1]) : NULL;
    node *mul = back ? next(c, back->output[0], "Mul", &at[2]) : NULL;
    node *add = mul ? next(c, mul->output[0], "Add", &at[3]) : NULL;
    ix_value *s = in && in->n_input == 3 ? ix_constant_ahead(c, in->input[1]) : NULL;
    ix_value *z = in && in->n_input == 3 ? ix_constant_ahead(c, in->input[2]) : NULL;
    bool ok = add && s && z && s->kind == IX_CONST && z->kind == IX_CONST && !s->is_int && !z->is_int &&
              s->numel == G && z->numel == G && back->n_input == 2 && shape_of(c, back->input[1], x->name);
    for (int64_t k = 0; ok && k < G; k++) ok = s->f[k] == 1 && z->f[k] == 0;
    ix_value *w = ok ? ix_other(c, mul, back->output[0]) : NULL, *b = ok ? ix_other(c, add, mul->output[0]) : NULL;
    if (!ok || !per_channel(w, x->rank) || !per_channel(b, x->rank) || w->dims[0] != b->dims[0])
        return ix_fail(c, n, "a Reshape to [0, %lld, -1] is read only as the start of GroupNorm's nodes "
                       "(InstanceNormalization, Reshape back, Mul, Add)", (long long)G);
    for (int k = 0; k < 4; k++) c->done[at[k]] = true;
    const ix_value *ins[1] = {x};
    ix_layer *l = ix_layer_new(c, n, &mk_group_norm, json_pack("{s:s,s:I,s:f}", "type", "group_norm", "groups", (json_int_t)G,
                                                               "eps", ix_tidy(ix_attr_f(in, "epsilon", 1e-5f))), 1, ins);
    if (!l) return false;
    ix_layer_name_from(c, l, w->name);
    return ix_layer_weight(c, l, "weight", 1, w->dims, w->f, false) && ix_layer_weight(c, l, "bias", 1, b->dims, b->f, false) &&
           ix_set_act(c, add, 0, c->nlayers - 1, x->rank);
}

/* Reshape of an activation: to [batch, -1] (torch.flatten(x, 1) written as x.view(x.size(0),
 * -1)) a flatten; to [0, G, -1] GroupNorm's start; zeros stay zeros. Nothing else: a shape
 * that moves the batch axis would make another model. */
bool ix_reshape(ix_ctx *c, const Onnx__NodeProto *n)
{
    ix_value *x = ix_in(c, n, 0), *s = x ? ix_in(c, n, 1) : NULL;
    if (!s) return false;
    if (x->kind == IX_ZEROS) return ix_alias(c, n, 0, x);
    if (!(x = ix_act_in(c, n, 0))) return false;
    if (s->kind != IX_CONST || !s->is_int || s->ndim != 1)
        return ix_fail(c, n, "the shape must be a constant (or the batch size and constants)");
    bool first_batch = s->numel >= 1 && (s->i[0] == IX_DIM_BATCH || (s->i[0] == 0 && !ix_attr_i(n, "allowzero", 0)));
    if (first_batch && s->numel == 2 && s->i[1] == -1) return ix_on_input(c, n, &mk_flatten, ix_typed("flatten"), 2) != NULL;
    if (s->numel == 3 && s->i[0] == 0 && s->i[1] > 0 && s->i[2] == -1 && x->rank >= 3) return group_norm(c, n, x, s->i[1]);
    return ix_fail(c, n, "a Reshape of an activation is read only as a flatten to [batch, -1] (or GroupNorm's)");
}

bool ix_conv_transpose(ix_ctx *c, const Onnx__NodeProto *n)
{
    ix_value *x = ix_act_in(c, n, 0), *w = x ? ix_const_in(c, n, 1, true) : NULL, *b = NULL;
    if (!w || !ix_no_auto_pad(c, n)) return false;
    if (x->rank != 4 || w->ndim != 4) return ix_fail(c, n, "only 2-d transposed convolutions are read");
    if (ix_attr(n, "output_shape")) return ix_fail(c, n, "output_shape is not read (give pads and output_padding)");
    if (!ix_no_input(n, 2) && !(b = ix_const_in(c, n, 2, true))) return false;
    int64_t st[2], pads[4], dil[2], op[2], groups = ix_attr_i(n, "group", 1);
    if (!ix_ints(c, n, "strides", 2, 1, st) || !ix_ints(c, n, "pads", 4, 0, pads) || !ix_ints(c, n, "dilations", 2, 1, dil) ||
        !ix_ints(c, n, "output_padding", 2, 0, op))
        return false;
    if (pads[0] != pads[2] || pads[1] != pads[3]) return ix_fail(c, n, "only symmetric padding is read");
    json_t *spec = json_pack("{s:s,s:I,s:[I,I],s:[I,I],s:[I,I],s:[I,I],s:[I,I],s:I,s:b}", "type", "conv_transpose2d", "out",
                             (json_int_t)(w->dims[1] * groups), "kernel", (json_int_t)w->dims[2], (json_int_t)w->dims[3],
                             "stride", (json_int_t)st[0], (json_int_t)st[1], "padding", (json_int_t)pads[0],
                             (json_int_t)pads[1], "output_padding", (json_int_t)op[0], (json_int_t)op[1], "dilation",
                             (json_int_t)dil[0], (json_int_t)dil[1], "groups", (json_int_t)groups, "bias", b != NULL);
    ix_layer *l = ix_on_input(c, n, &mk_conv_transpose2d, spec, 0);
    if (!l) return false;
    ix_layer_name_from(c, l, n->input[1]);
    return ix_layer_weight(c, l, "weight", 4, w->dims, w->f, false) && (!b || ix_layer_weight(c, l, "bias", 1, b->dims, b->f, false));
}

static bool attr_is(node *n, const char *name, const char *want)
{
    const Onnx__AttributeProto *a = ix_attr(n, name);
    return a && a->has_s && a->s.len == strlen(want) && !memcmp(a->s.data, want, a->s.len);
}

/* Resize by constant scales [1, 1, s, s] with s a whole number (so that every size is
 * s times the input's and clgrad's coordinates are ONNX's): nearest (asymmetric, floor) or
 * bilinear (half_pixel or pytorch_half_pixel). */
bool ix_resize(ix_ctx *c, const Onnx__NodeProto *n)
{
    ix_value *x = ix_act_in(c, n, 0);
    if (!x) return false;
    ix_value *s = ix_no_input(n, 2) ? NULL : ix_in(c, n, 2);
    bool ok = s && s->kind == IX_CONST && !s->is_int && s->numel == 4 && x->rank == 4 && ix_no_input(n, 3) &&
              s->f[0] == 1 && s->f[1] == 1 && s->f[2] == s->f[3] && s->f[2] >= 1 && s->f[2] == floorf(s->f[2]);
    if (!ok) return ix_fail(c, n, "only constant scales [1, 1, s, s] with s a whole number are read");
    bool nearest = attr_is(n, "mode", "nearest") && attr_is(n, "coordinate_transformation_mode", "asymmetric") &&
                   (!ix_attr(n, "nearest_mode") || attr_is(n, "nearest_mode", "floor"));
    bool linear = attr_is(n, "mode", "linear") && (attr_is(n, "coordinate_transformation_mode", "half_pixel") ||
                                                   attr_is(n, "coordinate_transformation_mode", "pytorch_half_pixel"));
    if (!nearest && !linear)
        return ix_fail(c, n, "only nearest (asymmetric, floor) and linear (half_pixel) resizing are read");
    return ix_on_input(c, n, &mk_upsample, json_pack("{s:s,s:f,s:b}", "type", "upsample", "scale", (double)s->f[2],
                                                    "bilinear", linear), 0) != NULL;
}
