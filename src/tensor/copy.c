/* copy.c: copies between layouts and dtypes, and the in-place updates that
 * optimizers and no-grad regions use. Kernels: cl_kernels/copy.cl, binary.cl, scalar.cl. */
#include <stdio.h>
#include <string.h>

#include "tensor_impl.h"

static const char *type_name(clg_dtype d)
{
    return d == CLG_F64 ? "double" : d == CLG_I32 ? "int" : clg__is_half(d) ? "ushort" : "float";
}

/* The copy kernels' options: T the destination's type, S the source's. A 16-bit float
 * is moved as its bits (ushort), only ever between tensors of its own dtype. Between
 * tensors of one dtype S is left out (copy.cl makes it T): the same program as the fills',
 * one compile less at a cold start (~0.2 s on POCL). */
static void copy_options(clg_dtype dst, clg_dtype src, char *opts, size_t len)
{
    if (dst == src) snprintf(opts, len, "%s", clg__is_half(dst) ? "-DT=ushort -DCLG_BITS16" : clg__dtype_options(dst));
    else if (clg__is_half(dst)) snprintf(opts, len, "-DT=ushort -DS=%s -DCLG_BITS16", type_name(src));
    else snprintf(opts, len, "%s -DS=%s", clg__dtype_options(dst), type_name(src));
}

static clg_status copy_into(clg_tensor *dst, const clg_tensor *src);

/* Between float32 and a 16-bit float, both contiguous and of one size (half.cl). */
static clg_status convert_flat(clg_tensor *dst, const clg_tensor *src)
{
    bool to16 = clg__is_half(dst->dtype);
    clg_dtype h = to16 ? dst->dtype : src->dtype;
    const char *name = h == CLG_BF16 ? (to16 ? "bf16_from_f32" : "bf16_to_f32") : (to16 ? "f16_from_f32" : "f16_to_f32");
    clg_kernel *k = clg__kernel_get(dst->dev, "half", "", name);
    clg_arg args[] = {CLG_ARG_I(dst->numel), CLG_ARG_B(dst->buf), CLG_ARG_I(dst->offset),
                      CLG_ARG_B(src->buf), CLG_ARG_I(src->offset)};
    return k ? clg__launch_1d(dst->dev, k, args, 5, (size_t)dst->numel) : dst->dev->status;
}

/* copy_into where either side is a 16-bit float of another dtype than the other: the
 * conversion runs between contiguous float32 and 16-bit tensors of dst's shape; any
 * other layout, broadcast or dtype goes through a contiguous temporary. */
static clg_status copy_converting(clg_tensor *dst, const clg_tensor *src)
{
    clg_device *dev = dst->dev;
    bool to16 = clg__is_half(dst->dtype);
    clg_tensor *mid = NULL, *tmp = NULL;
    clg_status st;
    if (to16) {   /* src (any dtype, broadcast) -> float32 -> 16 bits -> dst (any layout) */
        bool plain = src->dtype == CLG_F32 && src->numel == dst->numel && clg_tensor_is_contiguous(src);
        mid = plain ? NULL : clg__tensor_new(dev, CLG_F32, dst->ndim, dst->shape);
        st = plain || mid ? (plain ? CLG_OK : copy_into(mid, src)) : dev->status;
        const clg_tensor *from = plain ? src : mid;
        bool direct = clg_tensor_is_contiguous(dst);
        if (st == CLG_OK && !direct && !(tmp = clg__tensor_new(dev, dst->dtype, dst->ndim, dst->shape))) st = dev->status;
        if (st == CLG_OK) st = convert_flat(direct ? dst : tmp, from);
        if (st == CLG_OK && !direct) st = copy_into(dst, tmp);
    } else {      /* src (16 bits, any layout) -> contiguous -> float32 -> dst (any dtype, layout) */
        bool plain = clg_tensor_is_contiguous(src);
        tmp = plain ? NULL : clg__tensor_new(dev, src->dtype, src->ndim, src->shape);
        st = plain || tmp ? (plain ? CLG_OK : copy_into(tmp, src)) : dev->status;
        const clg_tensor *from = plain ? src : tmp;
        bool direct = dst->dtype == CLG_F32 && dst->numel == src->numel && clg_tensor_is_contiguous(dst);
        if (st == CLG_OK && !direct && !(mid = clg__tensor_new(dev, CLG_F32, src->ndim, src->shape))) st = dev->status;
        if (st == CLG_OK) st = convert_flat(direct ? dst : mid, from);
        if (st == CLG_OK && !direct) st = copy_into(dst, mid);
    }
    clg_tensor_free(mid);
    clg_tensor_free(tmp);
    return st;
}

/* Operand op of it runs along the iteration's next-to-last axis and the output along
 * the last (contiguous() after transpose or a permute swapping the innermost two axes,
 * batched or not), and the device table moves such copies in tiles (transpose_tiles). */
static bool transposed_layout(clg_device *dev, const clg_iter *it, int op)
{
    int d = it->ndim;
    return clg__device_params(dev)->transpose_tiles && (d == 2 || d == 3) && it->shape[d - 2] >= 16 &&
           it->shape[d - 1] >= 16 && it->strides[0][d - 1] == 1 && it->strides[op][d - 2] == 1 &&
           it->strides[op][d - 1] >= 16;
}

/* Such a copy in 16 x 16 tiles (copy.cl copy_transposed): the strided kernels read its
 * source one gathered element per lane. false: not that shape. */
static bool copy_transposed(clg_device *dev, const clg_iter *it, const char *opts, clg_status *st)
{
    if (!transposed_layout(dev, it, 1)) return false;
    int d = it->ndim;
    int64_t I = it->shape[d - 2], J = it->shape[d - 1];
    clg_kernel *k = clg__kernel_get(dev, "copy", opts, "copy_transposed");
    if (!k) {
        *st = dev->status;
        return true;
    }
    int64_t B = d == 3 ? it->shape[0] : 1;
    clg_arg args[] = {CLG_ARG_I(I), CLG_ARG_I(J), CLG_ARG_B(it->buf[0]), CLG_ARG_I(it->offset[0]),
                      CLG_ARG_L(d == 3 ? it->strides[0][0] : 0), CLG_ARG_I(it->strides[0][d - 2]),
                      CLG_ARG_B(it->buf[1]), CLG_ARG_I(it->offset[1]), CLG_ARG_L(d == 3 ? it->strides[1][0] : 0),
                      CLG_ARG_I(it->strides[1][d - 1])};
    *st = clg__launch_rows3(dev, k, args, 10, (size_t)((J + 63) / 64), (size_t)((I + 15) / 16), (size_t)B);
    return true;
}

typedef struct copy_launch {
    clg_tensor *dst;
    const clg_tensor *src;
    clg_iter it;
} copy_launch;

static clg_status launch_copy(void *data)
{
    copy_launch *cl = data;
    char opts[96];
    copy_options(cl->dst->dtype, cl->src->dtype, opts, sizeof opts);
    clg_status st = CLG_OK;
    if (cl->it.numel == 0 || cl->dst->dtype != cl->src->dtype || !copy_transposed(cl->dst->dev, &cl->it, opts, &st))
        st = clg__iter_launch(cl->dst->dev, &cl->it, "copy", opts, "copy", NULL, 0);
    return st;
}

/* dst (any strides) <- src broadcast to dst's shape, converting the dtype. A capture
 * is told when that is a plain copy of bytes, which its plan may leave out. */
static clg_status copy_into(clg_tensor *dst, const clg_tensor *src)
{
    if (dst->dtype != src->dtype && (clg__is_half(dst->dtype) || clg__is_half(src->dtype)))
        return copy_converting(dst, src);
    copy_launch cl = {.dst = dst, .src = src};
    clg__iter_init(&cl.it, 2, (clg_tensor *const[]){dst, (clg_tensor *)src});
    clg_copy_note note = {0};
    if (dst->dtype == src->dtype && dst->numel == src->numel && clg_tensor_is_contiguous(dst) &&
        clg_tensor_is_contiguous(src)) {
        size_t es = clg_dtype_size(dst->dtype);
        note = (clg_copy_note){dst->buf, src->buf, (size_t)dst->offset * es, (size_t)src->offset * es,
                               (size_t)dst->numel * es};
    }
    return clg__launch_copy(dst->dev, launch_copy, &cl, note);
}

clg_tensor *clg__copy_as(clg_tensor *t, clg_dtype dtype)
{
    if (!t) return NULL;
    clg_tensor *y = clg__tensor_new(t->dev, dtype, t->ndim, t->shape);
    if (y && copy_into(y, t) != CLG_OK) {
        clg_tensor_free(y);
        return NULL;
    }
    return y;
}

/* ---- contiguous, cast, clone (on the tape) ------------------------------------------------- */

static clg_status identity_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    (void)n;
    gin[0] = g;
    return CLG_OK;
}

/* The gradient of a cast goes back in the input's dtype. */
static clg_status cast_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    return (gin[0] = clg__copy_as(g, n->inputs[0]->dtype)) ? CLG_OK : g->dev->status;
}

clg_tensor *clg_contiguous(clg_tensor *t)
{
    if (!t) return NULL;
    clg_tensor *y = clg_tensor_is_contiguous(t) ? clg__tensor_view(t, t->ndim, t->shape, t->strides, t->offset)
                                                : clg__copy_as(t, t->dtype);
    return clg__taped(y, CLG_OP_contiguous, identity_bw, 1, &t, NULL);
}

clg_tensor *clg_clone(clg_tensor *t)
{
    if (!t) return NULL;
    return clg__taped(clg__copy_as(t, t->dtype), CLG_OP_contiguous, identity_bw, 1, &t, NULL);
}

clg_tensor *clg_cast(clg_tensor *t, clg_dtype dtype)
{
    if (!t) return NULL;
    if ((unsigned)dtype >= CLG_DTYPE_COUNT)
        return clg__op_fail(t->dev, CLG_ERR_DTYPE, "cast", "unknown dtype %d", (int)dtype);
    clg_tensor *y = clg__copy_as(t, dtype);
    /* no gradient flows into int32; it does into 16-bit copies (mixed precision's
     * float16 weights, whose gradients reach their float32 masters through here) */
    if (!clg__is_float(dtype) && !clg__is_half(dtype)) return y;
    return clg__taped(y, CLG_OP_cast, cast_bw, 1, &t, NULL);
}

/* ---- in place ------------------------------------------------------------------------------------ */

static bool may_write(const char *op, const clg_tensor *t)
{
    /* An expanded view (stride 0) holds one element in several places: writing it would
     * write that element more than once (a data race on a GPU), as PyTorch refuses. */
    for (int d = 0; d < t->ndim; d++)
        if (t->strides[d] == 0 && t->shape[d] > 1) {
            clg__op_fail(t->dev, CLG_ERR_INVALID_ARGUMENT, op,
                         "%s is an expanded view (stride 0 along axis %d): its elements share memory, so an "
                         "in-place write would write one element several times; clone it first", CLG_DESC(t), d);
            return false;
        }
    if (!t->requires_grad || !clg_grad_enabled(t->dev)) return true;
    clg__op_fail(t->dev, CLG_ERR_INVALID_ARGUMENT, op,
                 "%s requires a gradient; update it inside clg_no_grad_begin/end", CLG_DESC(t));
    return false;
}

clg_status clg_copy_(clg_tensor *dst, const clg_tensor *src)
{
    if (!dst || !src) return CLG_ERR_INVALID_ARGUMENT;
    if (!clg__check_same_device("copy_", dst, src) || !may_write("copy_", dst)) return dst->dev->status;
    int nd;
    int64_t shape[CLG_MAX_DIMS];
    if (!clg__broadcast_shapes(dst->ndim, dst->shape, src->ndim, src->shape, &nd, shape) || nd != dst->ndim ||
        memcmp(shape, dst->shape, (size_t)nd * sizeof *shape)) {
        clg__op_fail(dst->dev, CLG_ERR_SHAPE, "copy_", "%s does not broadcast to %s", CLG_DESC(src), CLG_DESC(dst));
        return dst->dev->status;
    }
    clg_status st = copy_into(dst, src);
    if (st == CLG_OK) clg__tensor_written(dst);
    return st;
}

clg_status clg_fill_(clg_tensor *dst, double value)
{
    if (!dst) return CLG_ERR_INVALID_ARGUMENT;
    if (!may_write("fill_", dst)) return dst->dev->status;
    clg_iter it;
    clg__iter_init(&it, 1, &dst);
    /* a 16-bit fill writes the value's bits (rounded as a cast rounds) */
    clg_arg v = clg__is_half(dst->dtype) ? CLG_ARG_U16(clg__half_from_double(dst->dtype, value))
                                         : clg__arg_scalar(dst->dtype, value);
    const char *opts = clg__is_half(dst->dtype) ? "-DT=ushort -DCLG_BITS16" : clg__dtype_options(dst->dtype);
    clg_status st = clg__iter_launch(dst->dev, &it, "copy", opts, "fill", &v, 1);
    if (st == CLG_OK) clg__tensor_written(dst);
    return st;
}

clg_status clg_axpy_(clg_tensor *y, double alpha, const clg_tensor *x)
{
    if (!y || !x) return CLG_ERR_INVALID_ARGUMENT;
    if (!clg__check_same_dtype("axpy_", y, x) || !clg__check_float("axpy_", y) || !may_write("axpy_", y))
        return y->dev->status;
    int nd;
    int64_t shape[CLG_MAX_DIMS];
    if (!clg__broadcast_shapes(y->ndim, y->shape, x->ndim, x->shape, &nd, shape) || nd != y->ndim ||
        memcmp(shape, y->shape, (size_t)nd * sizeof *shape)) {
        clg__op_fail(y->dev, CLG_ERR_SHAPE, "axpy_", "%s does not broadcast to %s", CLG_DESC(x), CLG_DESC(y));
        return y->dev->status;
    }
    clg_iter it;
    clg__iter_init(&it, 3, (clg_tensor *const[]){y, y, (clg_tensor *)x});
    /* x transposed against a contiguous y (the gradient of a transpose, accumulated):
     * copied in tiles first, then added flat, where the rows kernel would gather. */
    clg_tensor *xc = NULL;
    if (clg_tensor_is_contiguous(y) && transposed_layout(y->dev, &it, 2)) {
        if (!(xc = clg__copy_as((clg_tensor *)x, x->dtype))) return y->dev->status;
        clg__iter_init(&it, 3, (clg_tensor *const[]){y, y, xc});
    }
    clg_arg s[2] = {clg__arg_scalar(y->dtype, alpha), clg__arg_scalar(y->dtype, 0)};
    clg_status st = clg__iter_launch(y->dev, &it, "binary", clg__dtype_options(y->dtype), "axpy", s, 2);
    clg_tensor_free(xc);
    if (st == CLG_OK) clg__tensor_written(y);
    return st;
}

clg_status clg_scale_(clg_tensor *y, double alpha)
{
    if (!y) return CLG_ERR_INVALID_ARGUMENT;
    if (!may_write("scale_", y)) return y->dev->status;
    clg_iter it;
    clg__iter_init(&it, 2, (clg_tensor *const[]){y, y});
    clg_arg s[2] = {clg__arg_scalar(y->dtype, alpha), clg__arg_scalar(y->dtype, 0)};
    clg_status st = clg__iter_launch(y->dev, &it, "scalar", clg__dtype_options_ew(y->dtype), "mul_scalar", s, 2);
    if (st == CLG_OK) clg__tensor_written(y);
    return st;
}
