/* iter.c: elementwise kernels over any strides. The operands are broadcast to the
 * output's shape, then axes are simplified (size-1 axes dropped, axes contiguous in
 * every operand merged) so that the kernel indexes as few axes as it can; when every
 * operand is contiguous the flat variant runs, with no index arithmetic at all, and
 * when two axes with long rows remain the rows variant, with none per element. */
#include <stdio.h>
#include <string.h>

#include "tensor_impl.h"

void clg__iter_init(clg_iter *it, int n, clg_tensor *const *ops)
{
    memset(it, 0, sizeof *it);
    const clg_tensor *out = ops[0];
    it->n = n;
    it->numel = out->numel;
    it->dtype = out->dtype;
    int nd = 0;
    for (int d = 0; d < out->ndim; d++) {
        if (out->shape[d] == 1) continue;   /* size-1 axes index nothing */
        it->shape[nd] = out->shape[d];
        for (int k = 0; k < n; k++) {
            const clg_tensor *t = ops[k];
            int td = d - (out->ndim - t->ndim);   /* aligned at the right */
            it->strides[k][nd] = (td < 0 || t->shape[td] == 1) ? 0 : t->strides[td];
        }
        nd++;
    }
    for (int k = 0; k < n; k++) {
        it->offset[k] = ops[k]->offset;
        it->buf[k] = ops[k]->buf;
    }
    /* Merge axis d into d-1 where every operand steps over both as one. */
    int m = 0;
    for (int d = 0; d < nd; d++) {
        bool merge = m > 0;
        for (int k = 0; k < n && merge; k++)
            merge = it->strides[k][m - 1] == it->strides[k][d] * it->shape[d];
        if (merge) {
            it->shape[m - 1] *= it->shape[d];
            for (int k = 0; k < n; k++) it->strides[k][m - 1] = it->strides[k][d];
        } else {
            it->shape[m] = it->shape[d];
            for (int k = 0; k < n; k++) it->strides[k][m] = it->strides[k][d];
            m++;
        }
    }
    if (m == 0) {   /* a single element */
        it->shape[0] = 1;
        for (int k = 0; k < n; k++) it->strides[k][0] = 1;
        m = 1;
    }
    it->ndim = m;
    it->flat = m == 1;
    for (int k = 0; k < n && it->flat; k++) it->flat = it->strides[k][0] == 1;
}

bool clg__iter_flat16(const clg_device *dev, clg_dtype dtype, const char *kernel)
{
    if (dtype != CLG_F32 || !clg__device_params(dev)->flat16) return false;
    static const char *const names[] = {"sin", "cos", "tan", "sin_grad", "cos_grad", "exp", "sigmoid", "silu", "elu",
                                          "tanh", "gelu_tanh", "gelu_tanh_grad", "gelu", "gelu_grad"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(kernel, names[i])) return true;
    return false;
}

clg_status clg__iter_launch(clg_device *dev, const clg_iter *it, const char *program, const char *options,
                            const char *kernel, const clg_arg *extra, int nextra)
{
    if (it->numel == 0) return CLG_OK;
    if (it->numel > INT32_MAX)
        return clg__fail(dev, CLG_ERR_UNSUPPORTED, "%s: %lld elements; kernels index up to 2^31 - 1", kernel,
                         (long long)it->numel);
    /* One to four axes with rows of at least the table's rows_min run as rows: no index
     * division per element (one per work-item for the outer two of four). Fewer than
     * four are padded with leading axes of size 1 and stride 0: one axis is one row (a
     * broadcast scalar's gradient, a strided slice), two are one plane of rows. */
    int64_t inner = it->shape[it->ndim - 1];
    bool rows = !it->flat && it->ndim <= 4 && (uint64_t)inner >= (uint64_t)clg__device_params(dev)->rows_min;
    clg_iter padded;
    if (rows && it->ndim < 4) {
        int pad = 4 - it->ndim;
        padded = *it;
        padded.ndim = 4;
        for (int d = 3; d >= 0; d--) {
            padded.shape[d] = d >= pad ? it->shape[d - pad] : 1;
            for (int i = 0; i < it->n; i++) padded.strides[i][d] = d >= pad ? it->strides[i][d - pad] : 0;
        }
        it = &padded;
    }
    /* Rows whose inputs are read at stride 0 or 1 along the row, one of them at 0 (a
     * broadcast), into an output at stride 1: the rowsu kernels, built with those strides
     * as constants, which POCL vectorizes where the rows kernel could not (common.cl;
     * device table: const_strides). */
    bool rowsu = rows && clg__device_params(dev)->const_strides && it->n > 1 && it->strides[0][3] == 1,
         broadcast = false;
    int u[4] = {1, 1, 1, 1};
    for (int i = 1; rowsu && i < it->n; i++) {
        rowsu = it->strides[i][3] == 0 || it->strides[i][3] == 1;
        u[i] = (int)it->strides[i][3];
        broadcast = broadcast || u[i] == 0;
    }
    rowsu = rowsu && broadcast;
    char name[96], opts[256];
    if (rowsu) snprintf(opts, sizeof opts, "%s -DCLG_ROWSU -DCLG_U1=%d -DCLG_U2=%d -DCLG_U3=%d", options, u[1], u[2], u[3]);
    bool v16 = it->flat && clg__iter_flat16(dev, it->dtype, kernel);
    snprintf(name, sizeof name, "%s_%s", kernel,
             v16 ? "flat16" : it->flat ? "flat" : rowsu ? "rowsu" : rows ? "rows" : "strided");
    clg_kernel *k = clg__kernel_get(dev, program, rowsu ? opts : options, name);
    if (!k) return dev->status;
    clg_arg args[3 + 3 * CLG_ITER_MAX + 8];
    int na = 0;
    args[na++] = CLG_ARG_I(it->numel);
    if (!it->flat) {
        args[na++] = CLG_ARG_I(it->ndim);
        args[na++] = clg__arg_int8(it->shape, it->ndim);
    }
    for (int i = 0; i < it->n; i++) {
        args[na++] = CLG_ARG_B(it->buf[i]);
        args[na++] = CLG_ARG_I(it->offset[i]);
        if (!it->flat) args[na++] = clg__arg_int8(it->strides[i], it->ndim);
    }
    for (int i = 0; i < nextra && i < 8; i++) args[na++] = extra[i];
    if (rows)
        return clg__launch_rows3(dev, k, args, na, (size_t)inner, (size_t)it->shape[2],
                                 (size_t)(it->shape[0] * it->shape[1]));
    return clg__launch_1d(dev, k, args, na, v16 ? ((size_t)it->numel + 15) / 16 : (size_t)it->numel);
}

clg_arg clg__arg_scalar(clg_dtype dtype, double value)
{
    if (dtype == CLG_F64) return CLG_ARG_D(value);
    if (dtype == CLG_I32) return CLG_ARG_I((int32_t)value);
    return CLG_ARG_F(value);   /* float32, and the 16-bit floats' compute type */
}

clg_tensor *clg__elementwise(const char *op, const char *program, const char *kernel, int n,
                             clg_tensor *const *inputs, double s0, double s1, bool allow_int)
{
    for (int i = 0; i < n; i++)
        if (!inputs[i]) return NULL;
    clg_tensor *a = inputs[0];
    int nd = a->ndim;
    int64_t shape[CLG_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    for (int i = 1; i < n; i++) {
        if (!clg__check_same_dtype(op, a, inputs[i])) return NULL;
        int64_t prev[CLG_MAX_DIMS];
        memcpy(prev, shape, sizeof prev);
        if (!clg__broadcast_shapes(nd, prev, inputs[i]->ndim, inputs[i]->shape, &nd, shape)) {
            char msg[512] = "";
            for (int j = 0; j < n; j++) {
                size_t l = strlen(msg);
                snprintf(msg + l, sizeof msg - l, "%s%s", j ? " and " : "", CLG_DESC(inputs[j]));
            }
            return clg__op_fail(a->dev, CLG_ERR_SHAPE, op, "shapes do not broadcast: %s", msg);
        }
    }
    /* 16-bit floats are kept as such and computed in float32 (clg__dtype_options_ew) */
    if (!allow_int && !clg__check_floating(op, a)) return NULL;
    clg_tensor *y = clg__tensor_new(a->dev, a->dtype, nd, shape);
    if (!y) return NULL;
    clg_tensor *ops[CLG_ITER_MAX] = {y};
    for (int i = 0; i < n; i++) ops[i + 1] = inputs[i];
    clg_iter it;
    clg__iter_init(&it, n + 1, ops);
    clg_arg extra[2] = {clg__arg_scalar(a->dtype, s0), clg__arg_scalar(a->dtype, s1)};
    if (clg__iter_launch(a->dev, &it, program, clg__dtype_options_ew(a->dtype), kernel, extra, 2) != CLG_OK) {
        char err[CLG_ERROR_MAX];
        memcpy(err, a->dev->error, sizeof err);
        clg_tensor_free(y);
        return clg__op_fail(a->dev, a->dev->status, op, "%s: %.7000s", CLG_DESC(a), err);
    }
    return y;
}

size_t clg__reduce_group(const clg_device *dev, const clg_kernel *k, int64_t n)
{
    size_t cap = clg__device_params(dev)->group_reduce, wg = 1;
    while ((int64_t)wg < n && wg < cap) wg <<= 1;
    while (wg > 1 && (wg > k->wg_max || wg > clg__device_params(dev)->max_group)) wg >>= 1;
    return wg;
}
