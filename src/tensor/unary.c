/* unary.c: elementwise ops of one operand, the activations, and where, with their
 * backward passes. Kernels: cl_kernels/unary.cl (one program per float dtype holds
 * every forward and backward kernel but ReLU's, which relu.cl holds: clg__unary_program)
 * and where.cl (per value and mask dtype).
 *
 * Each backward is one kernel, `<op>_grad`, fed the saved input or, where the
 * derivative is a function of the result (exp, sqrt, relu, sigmoid, tanh), the op's
 * output node->out, so that no transcendental is evaluated twice. The ops without
 * parameters are the rows of unary_ops.def; those with parameters are written out. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tensor_impl.h"

#define IN1(a) ((clg_tensor *const[]){(a)})
#define IN2(a, b) ((clg_tensor *const[]){(a), (b)})

const char *clg__unary_program(const char *kernel)
{
    return !strcmp(kernel, "relu") || !strcmp(kernel, "relu_grad") ? "relu" : "unary";
}

/* The forward kernel `op` of unary.cl (relu.cl for ReLU) over a, with scalars s0, s1. Float only. */
static clg_tensor *unary_op(const char *op, clg_tensor *a, double s0, double s1)
{
    return clg__elementwise(op, clg__unary_program(op), op, 1, IN1(a), s0, s1, false);
}

/* ---- backward passes (no-grad mode) ------------------------------------------------------ */

/* gin[0] = kernel(src, g) with the node's scalars: g times the derivative. */
static clg_status grad_kernel(clg_node *n, clg_tensor *g, clg_tensor **gin, const char *kernel, clg_tensor *src)
{
    gin[0] = clg__elementwise(kernel, clg__unary_program(kernel), kernel, 2, IN2(src, g), n->f[0], n->f[1], false);
    return gin[0] ? CLG_OK : g->dev->status;
}

#define GRAD_FROM_INPUT(name)                                                    \
    static clg_status name##_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)    \
    {                                                                            \
        return grad_kernel(n, g, gin, #name "_grad", n->inputs[0]);              \
    }
#define GRAD_FROM_OUTPUT(name)                                                   \
    static clg_status name##_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)    \
    {                                                                            \
        return grad_kernel(n, g, gin, #name "_grad", n->out);                    \
    }
/* Flat almost everywhere (sign, floor, ...): a zero gradient, as PyTorch. */
#define GRAD_FLAT(name)                                                          \
    static clg_status name##_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)    \
    {                                                                            \
        return grad_kernel(n, g, gin, "zero_grad", g);                           \
    }
/* A linear op (neg): its own kernel on the gradient. */
#define GRAD_SELF(name)                                                          \
    static clg_status name##_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)    \
    {                                                                            \
        (void)n;                                                                 \
        return (gin[0] = unary_op(#name, g, 0, 0)) ? CLG_OK : g->dev->status;    \
    }

GRAD_FROM_INPUT(clamp)
GRAD_FROM_INPUT(leaky_relu)
GRAD_FROM_INPUT(softplus)
GRAD_FROM_INPUT(elu)

/* ---- forward ------------------------------------------------------------------------------- */

/* Run op on a and put it on the tape with its scalars in node->f[0], f[1]. */
static clg_tensor *unary_taped(const char *op, clg_tensor *a, double s0, double s1, int id, clg_backward_fn bw)
{
    clg_node *node = NULL;
    clg_tensor *y = clg__taped(unary_op(op, a, s0, s1), id, bw, 1, IN1(a), &node);
    if (node) {
        node->f[0] = s0;
        node->f[1] = s1;
    }
    return y;
}

/* The ops of unary_ops.def, one row each: the backward its grad kind names, and the
 * public function (unary.cl's kernel <name>, the tape id CLG_OP_<name>). */
#define CLG_UNARY(name, grad, ...)                                               \
    GRAD_##grad(name)                                                            \
    clg_tensor *clg_##name(clg_tensor *a)                                        \
    {                                                                            \
        return unary_taped(#name, a, 0, 0, CLG_OP_##name, name##_bw);            \
    }
#include "unary_ops.def"
#undef CLG_UNARY

clg_tensor *clg__relu_applied(clg_tensor *z)
{
    if (!z) return NULL;
    /* y: z itself under another name, so that the tape has the ReLU's node with its output */
    clg_tensor *y = clg__tensor_view(z, z->ndim, z->shape, z->strides, z->offset);
    return clg__taped(y, CLG_OP_relu, relu_bw, 1, IN1(z), NULL);
}

/* A NaN parameter would silently turn every result into NaN (or a branch never
 * taken): refuse it instead. */
static bool check_param(const char *op, const clg_tensor *a, const char *what, double v)
{
    if (!isnan(v)) return true;
    clg__op_fail(a->dev, CLG_ERR_INVALID_ARGUMENT, op, "%s is NaN (input %s)", what, CLG_DESC(a));
    return false;
}

clg_tensor *clg_clamp(clg_tensor *a, double lo, double hi)
{
    if (!a) return NULL;
    if (!check_param("clamp", a, "lo", lo) || !check_param("clamp", a, "hi", hi)) return NULL;
    return unary_taped("clamp", a, lo, hi, CLG_OP_clamp, clamp_bw);
}

clg_tensor *clg_leaky_relu(clg_tensor *a, double negative_slope)
{
    if (!a) return NULL;
    if (!check_param("leaky_relu", a, "negative_slope", negative_slope)) return NULL;
    return unary_taped("leaky_relu", a, negative_slope, 0, CLG_OP_leaky_relu, leaky_relu_bw);
}

clg_tensor *clg_softplus(clg_tensor *a, double beta, double threshold)
{
    if (!a) return NULL;
    if (!check_param("softplus", a, "beta", beta) || !check_param("softplus", a, "threshold", threshold))
        return NULL;
    if (beta == 0)
        return clg__op_fail(a->dev, CLG_ERR_INVALID_ARGUMENT, "softplus", "beta is 0 (it divides): input %s",
                            CLG_DESC(a));
    return unary_taped("softplus", a, beta, threshold, CLG_OP_softplus, softplus_bw);
}

/* Not differentiable, and int32 too: off the tape. */
clg_tensor *clg_logical_not(clg_tensor *a)
{
    return clg__elementwise("logical_not", "unary", "logical_not", 1, IN1(a), 0, 0, true);
}

clg_tensor *clg_elu(clg_tensor *a, double alpha)
{
    if (!a) return NULL;
    if (!check_param("elu", a, "alpha", alpha)) return NULL;
    return unary_taped("elu", a, alpha, 0, CLG_OP_elu, elu_bw);
}

/* ---- where ----------------------------------------------------------------------------------- */

static const char *type_name(clg_dtype d) { return d == CLG_F64 ? "double" : d == CLG_I32 ? "int" : "float"; }

/* Launch where.cl's `kernel` over the iteration of ops[0..n) (ops[1] the mask), the
 * value type that of ops[0]. */
static clg_status where_launch(const char *kernel, int n, clg_tensor *const *ops, const clg_arg *extra,
                               int nextra)
{
    char opts[96];
    snprintf(opts, sizeof opts, "%s -DM=%s", clg__dtype_options(ops[0]->dtype), type_name(ops[1]->dtype));
    clg_iter it;
    clg__iter_init(&it, n, ops);
    return clg__iter_launch(ops[0]->dev, &it, "where", opts, kernel, extra, nextra);
}

/* The gradient of where's operand a (side 1) or b (side 0): g where the mask picks
 * that side, else 0, in g's shape (the engine sums it back to the operand's). */
static clg_tensor *where_grad(clg_tensor *mask, clg_tensor *g, int side)
{
    clg_tensor *y = clg__tensor_new(g->dev, g->dtype, g->ndim, g->shape);
    clg_arg s = CLG_ARG_I(side);
    if (y && where_launch("where_grad", 3, (clg_tensor *const[]){y, mask, g}, &s, 1) != CLG_OK) {
        clg_tensor_free(y);
        return clg__op_fail(g->dev, g->dev->status, "where", "backward over %s: %.7000s", CLG_DESC(g),
                            g->dev->error);
    }
    return y;
}

static clg_status where_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *mask = n->saved[0];
    if (clg__wants_grad(n, 0) && !(gin[0] = where_grad(mask, g, 1))) return g->dev->status;
    if (clg__wants_grad(n, 1) && !(gin[1] = where_grad(mask, g, 0))) return g->dev->status;
    return CLG_OK;
}

/* The broadcast shape of mask, a and b, or false with the error recorded. */
static bool where_shape(clg_tensor *mask, clg_tensor *a, clg_tensor *b, int *nd, int64_t *shape)
{
    int n1;
    int64_t s1[CLG_MAX_DIMS];
    if (clg__broadcast_shapes(mask->ndim, mask->shape, a->ndim, a->shape, &n1, s1) &&
        clg__broadcast_shapes(n1, s1, b->ndim, b->shape, nd, shape))
        return true;
    clg__op_fail(a->dev, CLG_ERR_SHAPE, "where", "shapes do not broadcast: mask %s, a %s, b %s", CLG_DESC(mask),
                 CLG_DESC(a), CLG_DESC(b));
    return false;
}

clg_tensor *clg_where(clg_tensor *mask, clg_tensor *a, clg_tensor *b)
{
    if (!mask || !a || !b) return NULL;
    if (!clg__check_same_device("where", a, mask) || !clg__check_same_dtype("where", a, b) ||
        !clg__check_float("where", a))
        return NULL;
    int nd;
    int64_t shape[CLG_MAX_DIMS];
    if (!where_shape(mask, a, b, &nd, shape)) return NULL;
    clg_tensor *y = clg__tensor_new(a->dev, a->dtype, nd, shape);
    if (!y) return NULL;
    if (where_launch("where", 4, (clg_tensor *const[]){y, mask, a, b}, NULL, 0) != CLG_OK) {
        char err[CLG_ERROR_MAX];
        memcpy(err, a->dev->error, sizeof err);
        clg_tensor_free(y);
        return clg__op_fail(a->dev, a->dev->status, "where", "mask %s, a %s, b %s: %.7000s", CLG_DESC(mask),
                            CLG_DESC(a), CLG_DESC(b), err);
    }
    /* Only a and b are differentiable; the mask rides along as saved state. */
    clg_node *node = NULL;
    y = clg__taped(y, CLG_OP_where, where_bw, 2, IN2(a, b), &node);
    if (node) clg__node_save(node, 0, mask);
    return y;
}
