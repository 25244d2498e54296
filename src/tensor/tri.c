/* tri.c: tril and triu (torch.tril, torch.triu): the lower or upper triangle of the
 * matrices in the last two axes, zeros elsewhere. One masked-copy kernel
 * (cl_kernels/tri.cl) reads any layout and writes a contiguous result; the backward is
 * the same mask on the gradient. Data movement only, so every dtype works, the 16-bit
 * floats moved as their bits. */
#include <stdio.h>

#include "tensor_impl.h"

/* The kernel's options: values moved as they are (16-bit floats as bits, as copy.c). */
static const char *tri_options(clg_dtype d)
{
    return clg__is_half(d) ? "-DT=ushort -DCLG_BITS16" : clg__dtype_options(d);
}

/* A contiguous copy of t with the elements outside the triangle zeroed, off the tape. */
static clg_tensor *masked(const char *op, clg_tensor *t, int64_t diagonal, bool upper)
{
    clg_tensor *y = clg__tensor_new(t->dev, t->dtype, t->ndim, t->shape);
    if (!y || t->numel == 0) return y;
    int64_t rows = t->shape[t->ndim - 2], cols = t->shape[t->ndim - 1];
    /* c - r lies in (-rows, cols): a diagonal beyond that keeps all or nothing, and
     * clamped it fits an int */
    int diag = (int)(diagonal < -rows ? -rows : diagonal > cols ? cols : diagonal);
    /* The batch axes as one stride where they merge (tri_mask3), else unravelled. */
    int64_t sb = t->ndim > 2 ? t->strides[t->ndim - 3] : 0;
    bool one = true;
    for (int d = 0; d + 3 < t->ndim; d++) one = one && t->strides[d] == t->strides[d + 1] * t->shape[d + 1];
    clg_kernel *k = clg__kernel_get(t->dev, "tri", tri_options(t->dtype), one ? "tri_mask3" : "tri_mask");
    clg_arg args[] = {CLG_ARG_I(t->ndim), clg__arg_int8(t->shape, t->ndim), CLG_ARG_B(y->buf),
                      CLG_ARG_B(t->buf), CLG_ARG_I(t->offset), clg__arg_int8(t->strides, t->ndim),
                      CLG_ARG_I(diag), CLG_ARG_I(upper)};
    clg_arg args3[] = {CLG_ARG_I(rows), CLG_ARG_I(cols), CLG_ARG_B(y->buf), CLG_ARG_B(t->buf),
                       CLG_ARG_I(t->offset), CLG_ARG_I(sb), CLG_ARG_I(t->strides[t->ndim - 2]),
                       CLG_ARG_I(t->strides[t->ndim - 1]), CLG_ARG_I(diag), CLG_ARG_I(upper)};
    if (!k || clg__launch_rows3(t->dev, k, one ? args3 : args, one ? 10 : 8, (size_t)cols, (size_t)rows,
                                (size_t)(t->numel / (rows * cols))) != CLG_OK) {
        char err[CLG_ERROR_MAX];
        snprintf(err, sizeof err, "%s", t->dev->error);
        clg_tensor_free(y);
        return clg__op_fail(t->dev, t->dev->status, op, "%s: %.7000s", CLG_DESC(t), err);
    }
    return y;
}

/* i[0]: the diagonal, i[1]: 1 for triu */
static clg_status tri_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    gin[0] = masked(n->i[1] ? "triu" : "tril", g, n->i[0], n->i[1] != 0);
    return gin[0] ? CLG_OK : g->dev->status;
}

static clg_tensor *tri(const char *op, int id, clg_tensor *a, int64_t diagonal, bool upper)
{
    if (!a) return NULL;
    if (a->ndim < 2)
        return clg__op_fail(a->dev, CLG_ERR_SHAPE, op, "needs at least 2 axes (matrices in the last two), got %s",
                            CLG_DESC(a));
    if (!clg__check_numel(op, a->dev, a->numel)) return NULL;
    clg_node *node = NULL;
    clg_tensor *y = clg__taped(masked(op, a, diagonal, upper), id, tri_bw, 1, &a, &node);
    if (node) {
        node->i[0] = diagonal;
        node->i[1] = upper;
    }
    return y;
}

clg_tensor *clg_tril(clg_tensor *a, int64_t diagonal) { return tri("tril", CLG_OP_tril, a, diagonal, false); }
clg_tensor *clg_triu(clg_tensor *a, int64_t diagonal) { return tri("triu", CLG_OP_triu, a, diagonal, true); }
