/* binary.c: arithmetic of two tensors (broadcast) and of a tensor and a scalar,
 * with their backward passes. Kernels: cl_kernels/binary.cl and scalar.cl. The ops of
 * two tensors are the rows of binary_ops.def; their backward passes are written here. */
#include "tensor_impl.h"

#define IN2(a, b) ((clg_tensor *const[]){(a), (b)})
#define IN1(a) ((clg_tensor *const[]){(a)})

static clg_tensor *binary_op(const char *op, clg_tensor *a, clg_tensor *b, bool allow_int)
{
    return clg__elementwise(op, "binary", op, 2, IN2(a, b), 0, 0, allow_int);
}

static clg_tensor *scalar_op(const char *op, const char *kernel, clg_tensor *a, double s, bool allow_int)
{
    return clg__elementwise(op, "scalar", kernel, 1, IN1(a), s, 0, allow_int);
}

/* ---- backward passes (run in no-grad mode; results may keep the broadcast shape) ---- */

static clg_status add_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    gin[0] = clg__wants_grad(n, 0) ? g : NULL;
    gin[1] = clg__wants_grad(n, 1) ? g : NULL;
    return CLG_OK;
}

static clg_status sub_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    gin[0] = clg__wants_grad(n, 0) ? g : NULL;
    if (clg__wants_grad(n, 1) && !(gin[1] = clg_mul_scalar(g, -1.0))) return g->dev->status;
    return CLG_OK;
}

static clg_status mul_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    if (clg__wants_grad(n, 0) && !(gin[0] = clg_mul(g, n->inputs[1]))) return g->dev->status;
    if (clg__wants_grad(n, 1) && !(gin[1] = clg_mul(g, n->inputs[0]))) return g->dev->status;
    return CLG_OK;
}

/* y = a / b: dy/da = 1/b, dy/db = -a/b^2 = -(1/b) y */
static clg_status div_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *ga = clg_div(g, n->inputs[1]);
    if (!ga) return g->dev->status;
    gin[0] = clg__wants_grad(n, 0) ? ga : NULL;
    if (clg__wants_grad(n, 1) && !(gin[1] = clg_mul(clg_mul_scalar(ga, -1.0), n->out))) return g->dev->status;
    return CLG_OK;
}

/* y = a^b: dy/da = b a^(b-1) (0 where b = 0), dy/db = a^b log a (0 where a = 0 and b >= 0) */
static clg_status pow_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *a = n->inputs[0], *b = n->inputs[1];
    if (clg__wants_grad(n, 0) && !(gin[0] = clg_mul(g, binary_op("pow_grad_base", a, b, false))))
        return g->dev->status;
    if (clg__wants_grad(n, 1) && !(gin[1] = clg_mul(g, binary_op("pow_grad_exponent", a, b, false))))
        return g->dev->status;
    return CLG_OK;
}

/* maximum/minimum: the gradient goes to the chosen operand, halved on ties, whole to
 * both where one is NaN. */
static clg_status extremum_bw(clg_node *n, clg_tensor *g, clg_tensor **gin, bool is_max)
{
    /* max_share(x, z) is 0 where x < z: input 0 of maximum loses where a < b, of
     * minimum where b < a. */
    clg_tensor *a = n->inputs[0], *b = n->inputs[1];
    clg_tensor *first = is_max ? a : b, *second = is_max ? b : a;
    if (clg__wants_grad(n, 0) && !(gin[0] = clg_mul(g, binary_op("max_share", first, second, false))))
        return g->dev->status;
    if (clg__wants_grad(n, 1) && !(gin[1] = clg_mul(g, binary_op("max_share", second, first, false))))
        return g->dev->status;
    return CLG_OK;
}
static clg_status maximum_bw(clg_node *n, clg_tensor *g, clg_tensor **gin) { return extremum_bw(n, g, gin, true); }
static clg_status minimum_bw(clg_node *n, clg_tensor *g, clg_tensor **gin) { return extremum_bw(n, g, gin, false); }

/* ---- two operands ------------------------------------------------------------------------ */

/* Inside an autocast region, a float32 operand meeting a 16-bit one widens the 16-bit
 * one (a cast on the tape: its gradient comes back 16-bit), as PyTorch promotes
 * float16 + float32 to float32: a transformer's float32 residual stream plus its
 * 16-bit attention or MLP output. Outside, dtypes must match. Returns the operand to
 * use (t itself, or a cast the caller drops with clg__drop_cast). */
static clg_tensor *promote(clg_tensor *t, const clg_tensor *other)
{
    if (!t || !other || !clg__is_half(t->dtype) || other->dtype != CLG_F32 || clg_autocast_dtype(t->dev) == CLG_F32)
        return t;
    return clg_cast(t, CLG_F32);
}

/* The rows of binary_ops.def: differentiable ones on the tape with their backward
 * above, comparisons and logic off it. */
#define BINARY_TAPED(name, allow_int)                                                    \
    clg_tensor *clg_##name(clg_tensor *a, clg_tensor *b)                                 \
    {                                                                                    \
        clg_tensor *pa = promote(a, b), *pb = promote(b, a);                             \
        clg_tensor *y = pa && pb ? clg__taped(binary_op(#name, pa, pb, allow_int), CLG_OP_##name, \
                                              name##_bw, 2, IN2(pa, pb), NULL)           \
                                 : NULL;                                                 \
        clg__drop_cast(pa, a);                                                           \
        clg__drop_cast(pb, b);                                                           \
        return y;                                                                        \
    }
#define BINARY_PLAIN(name)                                                               \
    clg_tensor *clg_##name(clg_tensor *a, clg_tensor *b) { return binary_op(#name, a, b, true); }
#define BINARY_DIFF_INT(name) BINARY_TAPED(name, true)
#define BINARY_DIFF(name) BINARY_TAPED(name, false)
#define BINARY_COMPARE(name) BINARY_PLAIN(name)
#define BINARY_LOGIC(name) BINARY_PLAIN(name)
#define CLG_BINARY(name, kind, ...) BINARY_##kind(name)
#include "binary_ops.def"
#undef CLG_BINARY

/* ---- with a scalar --------------------------------------------------------------------------- */

static clg_status add_scalar_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    (void)n;
    gin[0] = g;
    return CLG_OK;
}

static clg_status mul_scalar_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    return (gin[0] = clg_mul_scalar(g, n->f[0])) ? CLG_OK : g->dev->status;
}

static clg_status rsub_scalar_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    (void)n;
    return (gin[0] = clg_mul_scalar(g, -1.0)) ? CLG_OK : g->dev->status;
}

/* y = s / x: dy/dx = -s / x^2 = -y / x */
static clg_status rdiv_scalar_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    return (gin[0] = clg_mul(g, clg_div(clg_mul_scalar(n->out, -1.0), n->inputs[0]))) ? CLG_OK : g->dev->status;
}

/* pow_scalar's kernel for exponent p, or its gradient's: squares and cubes by products */
static const char *pow_kernel(double p, bool grad)
{
    if (p == 2) return grad ? "pow_scalar_2_grad" : "pow_scalar_2";
    if (p == 3) return grad ? "pow_scalar_3_grad" : "pow_scalar_3";
    return grad ? "pow_scalar_grad" : "pow_scalar";
}

static clg_status pow_scalar_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *d = scalar_op("pow_scalar", pow_kernel(n->f[0], true), n->inputs[0], n->f[0], false);
    return (gin[0] = clg_mul(g, d)) ? CLG_OK : g->dev->status;
}

static clg_tensor *scalar_taped(const char *op, const char *kernel, clg_tensor *a, double s, bool allow_int,
                                int id, clg_backward_fn bw)
{
    clg_node *node = NULL;
    clg_tensor *y = clg__taped(scalar_op(op, kernel, a, s, allow_int), id, bw, 1, IN1(a), &node);
    if (node) node->f[0] = s;
    return y;
}

clg_tensor *clg_add_scalar(clg_tensor *a, double s)
{
    return scalar_taped("add_scalar", "add_scalar", a, s, true, CLG_OP_add_scalar, add_scalar_bw);
}
clg_tensor *clg_sub_scalar(clg_tensor *a, double s)
{
    return scalar_taped("sub_scalar", "add_scalar", a, -s, true, CLG_OP_add_scalar, add_scalar_bw);
}
clg_tensor *clg_mul_scalar(clg_tensor *a, double s)
{
    return scalar_taped("mul_scalar", "mul_scalar", a, s, true, CLG_OP_mul_scalar, mul_scalar_bw);
}
clg_tensor *clg_div_scalar(clg_tensor *a, double s)
{
    return scalar_taped("div_scalar", "mul_scalar", a, 1.0 / s, false, CLG_OP_mul_scalar, mul_scalar_bw);
}
clg_tensor *clg_rsub_scalar(double s, clg_tensor *a)
{
    return scalar_taped("rsub_scalar", "rsub_scalar", a, s, true, CLG_OP_rsub_scalar, rsub_scalar_bw);
}
clg_tensor *clg_rdiv_scalar(double s, clg_tensor *a)
{
    return scalar_taped("rdiv_scalar", "rdiv_scalar", a, s, false, CLG_OP_rdiv_scalar, rdiv_scalar_bw);
}
clg_tensor *clg_pow_scalar(clg_tensor *a, double p)
{
    return scalar_taped("pow_scalar", pow_kernel(p, false), a, p, false, CLG_OP_pow_scalar, pow_scalar_bw);
}
