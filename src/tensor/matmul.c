/* matmul.c: matrix products on tensors, through clg__gemm (gemm.h).
 *
 * A tensor reaches GEMM without a copy whenever it can: its last two axes need a unit
 * stride on one side (a transposed view is passed as a transposed operand), and its
 * batch axes a single stride (0 for a broadcast operand). Anything else is copied
 * contiguous first. Results are contiguous. */
#include <string.h>

#include "gemm/gemm.h"
#include "tensor_impl.h"

/* One operand as GEMM sees it. */
typedef struct gemm_operand {
    clg_tensor *t;       /* the tensor described (the input, or a contiguous copy) */
    bool trans;          /* stored transposed: the last axis is the strided one */
    size_t ld, stride;   /* leading dimension, batch stride (elements) */
} gemm_operand;

/* The stride that steps through t's batch axes in row-major order of the result's
 * batch shape (nb axes), if one exists. */
static bool batch_stride(const clg_tensor *t, int nb, const int64_t *bshape, size_t *stride)
{
    int tb = t->ndim - 2, lead = nb - tb;
    int64_t eff[CLG_MAX_DIMS], s = -1, inner = 1;
    for (int d = nb - 1; d >= 0; d--) {
        int td = d - lead;
        eff[d] = (td < 0 || t->shape[td] == 1) ? 0 : t->strides[td];
        if (bshape[d] > 1 && s < 0) s = eff[d] == 0 ? 0 : (eff[d] % inner ? -2 : eff[d] / inner);
        if (s == -2) return false;
        inner *= bshape[d];
    }
    if (s < 0) s = 0;
    inner = 1;
    for (int d = nb - 1; d >= 0; d--) {
        if (bshape[d] > 1 && eff[d] != s * inner) return false;
        inner *= bshape[d];
    }
    *stride = (size_t)s;
    return true;
}

static bool describe(const clg_tensor *t, int nb, const int64_t *bshape, gemm_operand *op)
{
    int64_t rows = t->shape[t->ndim - 2], cols = t->shape[t->ndim - 1];
    int64_t rs = rows == 1 ? (cols > 0 ? cols : 1) : t->strides[t->ndim - 2];
    int64_t cs = cols == 1 ? 1 : t->strides[t->ndim - 1];
    if (cs == 1 && rs >= (cols > 1 ? cols : 1)) {
        op->trans = false;
        op->ld = (size_t)rs;
    } else if (rs == 1 && cols > 1 && t->strides[t->ndim - 1] >= rows) {
        op->trans = true;
        op->ld = (size_t)t->strides[t->ndim - 1];
    } else {
        return false;
    }
    return batch_stride(t, nb, bshape, &op->stride);
}

/* op for t, copying t (expanded to the batch shape) when its strides do not fit GEMM. */
static bool prepare(clg_tensor *t, int nb, const int64_t *bshape, gemm_operand *op)
{
    op->t = t;
    if (describe(t, nb, bshape, op)) return true;
    int64_t shape[CLG_MAX_DIMS];
    for (int d = 0; d < nb; d++) shape[d] = bshape[d];
    shape[nb] = t->shape[t->ndim - 2];
    shape[nb + 1] = t->shape[t->ndim - 1];
    clg_no_grad_begin(t->dev);
    clg_tensor *e = clg_expand(t, nb + 2, shape);
    clg_no_grad_end(t->dev);
    op->t = clg__copy_as(e, t->dtype);
    clg_tensor_free(e);
    return op->t && describe(op->t, nb, bshape, op);
}

/* c = a @ b (+ beta * c) for a [..., m, k], b [..., k, n], c [batch..., m, n] contiguous. */
static clg_status gemm_into(clg_tensor *c, clg_tensor *a, clg_tensor *b, int nb, const int64_t *bshape, double beta,
                            const clg_tensor *bias, bool relu)
{
    clg_device *dev = c->dev;
    gemm_operand oa = {0}, ob = {0};
    clg_status st = CLG_OK;
    if (!prepare(a, nb, bshape, &oa) || !prepare(b, nb, bshape, &ob)) st = dev->status ? dev->status : CLG_ERR_OPENCL;
    if (st == CLG_OK) {
        size_t m = (size_t)a->shape[a->ndim - 2], k = (size_t)a->shape[a->ndim - 1];
        size_t n = (size_t)b->shape[b->ndim - 1], batch = 1;
        for (int d = 0; d < nb; d++) batch *= (size_t)bshape[d];
        clg_gemm_args g = {
            .type = clg__gemm_type_of(c->dtype), .trans_a = oa.trans, .trans_b = ob.trans, .m = m, .n = n, .k = k,
            .batch = batch, .alpha = 1.0, .beta = beta, .a = oa.t->buf, .a_off = (size_t)oa.t->offset, .lda = oa.ld,
            .stride_a = oa.stride, .b = ob.t->buf, .b_off = (size_t)ob.t->offset, .ldb = ob.ld, .stride_b = ob.stride,
            .c = c->buf, .c_off = (size_t)c->offset, .ldc = n ? n : 1, .stride_c = m * n,
            .col_bias = bias ? bias->buf : NULL, .col_bias_off = bias ? (size_t)bias->offset : 0, .relu = relu,
        };
        st = clg__gemm_run(dev, NULL, NULL, &g);
    }
    if (oa.t && oa.t != a) clg_tensor_free(oa.t);
    if (ob.t && ob.t != b) clg_tensor_free(ob.t);
    return st;
}

/* Floats of one dtype; 16-bit ones multiply in float32 and round each result once. */
static bool check_pair(const char *op, clg_tensor *a, clg_tensor *b)
{
    return clg__check_same_dtype(op, a, b) && clg__check_floating(op, a);
}

/* ---- matmul --------------------------------------------------------------------------------- */

static clg_status matmul_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *a = n->inputs[0], *b = n->inputs[1];
    if (clg__wants_grad(n, 0) && !(gin[0] = clg_matmul(g, clg_transpose(b, -1, -2)))) return g->dev->status;
    if (clg__wants_grad(n, 1) && !(gin[1] = clg_matmul(clg_transpose(a, -1, -2), g))) return g->dev->status;
    return CLG_OK;
}

/* Both operands have at least 2 axes. */
static clg_tensor *matmul_nd(clg_tensor *a, clg_tensor *b)
{
    clg_device *dev = a->dev;
    if (a->shape[a->ndim - 1] != b->shape[b->ndim - 2])
        return clg__op_fail(dev, CLG_ERR_SHAPE, "matmul", "inner sizes differ: %s @ %s", CLG_DESC(a), CLG_DESC(b));
    int nb;
    int64_t shape[CLG_MAX_DIMS];
    if (!clg__broadcast_shapes(a->ndim - 2, a->shape, b->ndim - 2, b->shape, &nb, shape))
        return clg__op_fail(dev, CLG_ERR_SHAPE, "matmul", "batch axes do not broadcast: %s @ %s", CLG_DESC(a),
                            CLG_DESC(b));
    shape[nb] = a->shape[a->ndim - 2];
    shape[nb + 1] = b->shape[b->ndim - 1];
    clg_tensor *c = clg__tensor_new(dev, a->dtype, nb + 2, shape);
    if (!c || !clg__check_numel("matmul", dev, c->numel)) return clg_tensor_free(c), NULL;
    if (gemm_into(c, a, b, nb, shape, 0.0, NULL, false) != CLG_OK) {
        clg_tensor_free(c);
        return NULL;
    }
    return clg__taped(c, CLG_OP_matmul, matmul_bw, 2, (clg_tensor *const[]){a, b}, NULL);
}

static clg_tensor *matmul(clg_tensor *a, clg_tensor *b)
{
    if (!check_pair("matmul", a, b)) return NULL;
    if (a->ndim == 0 || b->ndim == 0)
        return clg__op_fail(a->dev, CLG_ERR_SHAPE, "matmul", "scalar operand: %s @ %s", CLG_DESC(a), CLG_DESC(b));
    if (a->ndim >= 2 && b->ndim >= 2) return matmul_nd(a, b);
    /* Vectors, as torch.matmul: [k] is a row [1, k] on the left, a column [k, 1] on the
     * right, and the added axis is removed from the result. */
    clg_tensor *a2 = a->ndim == 1 ? clg_unsqueeze(a, 0) : a;
    clg_tensor *b2 = b->ndim == 1 ? clg_unsqueeze(b, 1) : b;
    clg_tensor *c = a2 && b2 ? matmul_nd(a2, b2) : NULL;
    if (c && b->ndim == 1) c = clg_squeeze(c, -1);
    if (c && a->ndim == 1) c = clg_squeeze(c, b->ndim == 1 ? -1 : -2);
    return c;
}

clg_tensor *clg_matmul(clg_tensor *a, clg_tensor *b)
{
    if (!a || !b) return NULL;
    clg_tensor *a16 = clg__autocast(a), *b16 = a16 ? clg__autocast(b) : NULL;
    clg_tensor *c = b16 ? matmul(a16, b16) : NULL;
    clg__drop_cast(a16, a);
    clg__drop_cast(b16, b);
    return c;
}

/* ---- linear --------------------------------------------------------------------------------- */

/* y = x w^T + b: dx = g w, dw = g^T x (batch axes folded), db = sum of g over rows. */
static clg_status linear_bw(clg_node *n, clg_tensor *g, clg_tensor **gin)
{
    clg_tensor *x = n->inputs[0], *w = n->inputs[1];
    int64_t out = w->shape[0], in = w->shape[1];
    clg_tensor *g2 = clg_reshape(g, CLG_SHAPE(-1, out));
    if (clg__wants_grad(n, 0) && !(gin[0] = clg_reshape(clg_matmul(g2, w), x->ndim, x->shape))) return g->dev->status;
    /* dw straight into w's .grad where the engine would only copy or add it there: beta
     * 0 or 1 in the product, no pass of its own */
    double beta = 0;
    clg_tensor *wg = clg__wants_grad(n, 1) && g->dtype == w->dtype ? clg__grad_direct(n, 1, true, &beta) : NULL;
    if (wg) {
        clg_tensor *gt = clg_transpose(g2, 0, 1), *x2 = clg_reshape(x, CLG_SHAPE(-1, in));
        if (!gt || !x2 || gemm_into(wg, gt, x2, 0, NULL, beta, NULL, false) != CLG_OK) return g->dev->status;
    } else if (clg__wants_grad(n, 1) &&
               !(gin[1] = clg_matmul(clg_transpose(g2, 0, 1), clg_reshape(x, CLG_SHAPE(-1, in)))))
        return g->dev->status;
    /* db straight into b's .grad where it would be the first contribution (a sum writes,
     * it cannot add): float32 and float64, g's rows contiguous */
    clg_tensor *b = n->ninputs > 2 ? n->inputs[2] : NULL, *bg = NULL;
    bool plain = b && g2 && clg_tensor_is_contiguous(g2) && g2->shape[0] > 0 && g2->dtype == b->dtype &&
                 (b->dtype == CLG_F32 || b->dtype == CLG_F64);
    if (plain && clg__wants_grad(n, 2) && (bg = clg__grad_direct(n, 2, false, &beta)))
        return clg__sum_rows_into(g2, g2->shape[0], out, bg);
    if (clg__wants_grad(n, 2) && !(gin[2] = clg_sum(g2, CLG_AXES(0), false))) return g->dev->status;
    return CLG_OK;
}

/* relu: y's values through ReLU as the product stores them (clg__linear_relu). */
static clg_tensor *linear(clg_tensor *x, clg_tensor *w, clg_tensor *b, bool relu)
{
    clg_device *dev = x->dev;
    if (!check_pair("linear", x, w) || (b && !clg__check_same_dtype("linear", x, b))) return NULL;
    if (x->ndim < 1 || w->ndim != 2 || x->shape[x->ndim - 1] != w->shape[1] ||
        (b && (b->ndim != 1 || b->shape[0] != w->shape[0])))
        return clg__op_fail(dev, CLG_ERR_SHAPE, "linear", "x %s, weight %s (want [out, in]), bias %s", CLG_DESC(x),
                            CLG_DESC(w), b ? CLG_DESC(b) : "none");
    int64_t shape[CLG_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->ndim - 1] = w->shape[0];
    clg_tensor *y = clg__tensor_new(dev, x->dtype, x->ndim, shape);
    if (!y || !clg__check_numel("linear", dev, y->numel)) return clg_tensor_free(y), NULL;
    /* Rows of x times w^T plus the bias as the product stores y (clg_gemm_args.col_bias:
     * in the write-out of engines that add it, else y filled with it and beta 1); a bias
     * not contiguous is copied onto y first, with beta 1. */
    int64_t rows = x->numel / (x->shape[x->ndim - 1] ? x->shape[x->ndim - 1] : 1);
    if (x->shape[x->ndim - 1] == 0) rows = y->numel / (w->shape[0] ? w->shape[0] : 1);
    clg_no_grad_begin(dev);
    clg_tensor *x2 = clg_reshape(x, CLG_SHAPE(rows, x->shape[x->ndim - 1]));
    clg_tensor *y2 = clg_reshape(y, CLG_SHAPE(rows, w->shape[0]));
    clg_tensor *wt = clg_transpose(w, 0, 1);
    clg_status st = x2 && y2 && wt ? CLG_OK : dev->status;
    bool in_gemm = b && (b->shape[0] <= 1 || b->strides[0] == 1);
    if (st == CLG_OK && b && !in_gemm) st = clg_copy_(y2, b);
    if (st == CLG_OK) st = gemm_into(y2, x2, wt, 0, NULL, b && !in_gemm ? 1.0 : 0.0, in_gemm ? b : NULL, relu);
    clg_no_grad_end(dev);
    clg_tensor_free(x2);
    clg_tensor_free(y2);
    clg_tensor_free(wt);
    if (st != CLG_OK) {
        clg_tensor_free(y);
        return NULL;
    }
    return clg__taped(y, CLG_OP_linear, linear_bw, b ? 3 : 2, (clg_tensor *const[]){x, w, b}, NULL);
}

clg_tensor *clg_linear(clg_tensor *x, clg_tensor *w, clg_tensor *b)
{
    if (!x || !w) return NULL;
    clg_tensor *x16 = clg__autocast(x), *w16 = x16 ? clg__autocast(w) : NULL, *b16 = w16 ? clg__autocast(b) : NULL;
    clg_tensor *y = w16 && (b16 || !b) ? linear(x16, w16, b16, false) : NULL;
    clg__drop_cast(x16, x);
    clg__drop_cast(w16, w);
    clg__drop_cast(b16, b);
    return y;
}

/* Whether relu(linear(x, w, b)) may fold the ReLU into the product: float32 or float64
 * outside autocast, shapes a linear layer takes, and the engine that runs the product
 * applying a ReLU as it stores (clg__gemm_stores_relu: else the dispatcher's pass after
 * would only replace the ReLU's own launch, and a captured graph folds the ReLU itself). */
static bool relu_folds(clg_tensor *x, clg_tensor *w, clg_tensor *b)
{
    clg_tensor_state *s = clg__tstate(x->dev);
    if (!s || s->autocast_depth > 0 || x->dtype != w->dtype || (x->dtype != CLG_F32 && x->dtype != CLG_F64) ||
        (b && b->dtype != x->dtype) || x->ndim < 1 || w->ndim != 2 || x->shape[x->ndim - 1] != w->shape[1] ||
        x->shape[x->ndim - 1] == 0)
        return false;
    size_t in = (size_t)w->shape[1], out = (size_t)w->shape[0];
    clg_gemm_args g = {.type = clg__gemm_type_of(x->dtype), .trans_b = true, .m = (size_t)(x->numel / (int64_t)in),
                       .n = out, .k = in, .batch = 1, .alpha = 1, .lda = in, .ldb = in, .ldc = out, .relu = true};
    return clg__gemm_stores_relu(x->dev, &g);
}

clg_tensor *clg__linear_relu(clg_tensor *x, clg_tensor *w, clg_tensor *b)
{
    if (!x || !w) return NULL;
    if (!relu_folds(x, w, b)) return clg_relu(clg_linear(x, w, b));
    return clg__relu_applied(linear(x, w, b, true));
}
