/* onnx_export_act.c: the activations' ONNX nodes (model_kind_act.c's kinds), each
 * as torch.onnx.export writes its PyTorch module, so that import reads them back. */
#include "onnx_impl.h"

#define unary ox_unary
#define binary ox_binary

const char *ox_layer_relu(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                          const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    return unary(g, "Relu", x[0], l->name);
}

const char *ox_layer_sigmoid(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                             const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    return unary(g, "Sigmoid", x[0], l->name);
}

const char *ox_layer_tanh(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                          const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    return unary(g, "Tanh", x[0], l->name);
}

const char *ox_layer_leaky_relu(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                                const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    const char *y = unary(g, "LeakyRelu", x[0], l->name);
    ox_attr_f(g, "alpha", (float)l->slope);
    return y;
}

const char *ox_layer_elu(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                         const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    const char *y = unary(g, "Elu", x[0], l->name);
    ox_attr_f(g, "alpha", (float)l->alpha);
    return y;
}

const char *ox_layer_gelu(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                          const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    return ox_gelu(g, x[0], l->name);
}

/* gelu_tanh: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), node for node as
 * torch.onnx.export writes GELU(approximate="tanh") (which import reads back). */
const char *ox_layer_gelu_tanh(ox_graph *g, clg_module *net, const model_layer *l, const char *const *xs, int ndim,
                               const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    const char *x = xs[0], *p = l->name;
    const char *x3 = binary(g, "Mul", x, binary(g, "Mul", x, x, p), p);
    const char *u = binary(g, "Add", x, binary(g, "Mul", ox_scalar(g, 0.044715f), x3, p), p);
    const char *t = unary(g, "Tanh", binary(g, "Mul", ox_scalar(g, 0.7978845608028654f), u, p), p);
    return binary(g, "Mul", ox_scalar(g, 0.5f), binary(g, "Mul", x, binary(g, "Add", ox_scalar(g, 1), t, p), p), p);
}

const char *ox_layer_silu(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                          const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    return binary(g, "Mul", x[0], unary(g, "Sigmoid", x[0], l->name), l->name);
}

/* softplus(x) = log(1 + exp(beta x)) / beta, x itself where beta x > threshold. */
const char *ox_layer_softplus(ox_graph *g, clg_module *net, const model_layer *l, const char *const *xs, int ndim,
                              const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    const char *x = xs[0];
    /* beta 1 and a threshold of 15 or more: ONNX's Softplus, the same float32 values
     * (past the threshold log(1 + e^x) - x < e^-15 x, under half an ulp), and imported back */
    if (l->beta == 1 && l->threshold >= 15) return unary(g, "Softplus", x, l->name);
    const char *bx = binary(g, "Mul", x, ox_scalar(g, (float)l->beta), l->name);
    const char *sp = binary(g, "Div", unary(g, "Softplus", bx, l->name), ox_scalar(g, (float)l->beta), l->name);
    const char *ins[3] = {binary(g, "Greater", bx, ox_scalar(g, (float)l->threshold), l->name), x, sp};
    return ox_op(g, "Where", 3, ins, l->name);
}

const char *ox_layer_softmax(ox_graph *g, clg_module *net, const model_layer *l, const char *const *x, int ndim,
                             const int64_t *in)
{
    (void)net, (void)ndim, (void)in;
    const char *y = unary(g, "Softmax", x[0], l->name);
    ox_attr_i(g, "axis", -1);
    return y;
}
