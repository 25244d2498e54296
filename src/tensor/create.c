/* create.c: making tensors (from host memory, constants, ranges, random numbers)
 * and reading them back. Reading is the only thing here that waits for the device. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_impl.h"

clg_tensor *clg_empty(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape)
{
    if (!dev) return NULL;
    return clg__tensor_new(dev, dtype, ndim, shape);
}

clg_tensor *clg_tensor_from_host(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape, const void *data)
{
    if (!dev) return NULL;
    clg_tensor *t = clg__tensor_new(dev, dtype, ndim, shape);
    if (!t) return NULL;
    if (t->numel && !data) {
        clg_tensor_free(t);
        return clg__op_fail(dev, CLG_ERR_INVALID_ARGUMENT, "tensor_from_host", "data is NULL");
    }
    if (clg__write(dev, t->buf, 0, data, (size_t)t->numel * clg_dtype_size(dtype)) != CLG_OK) {
        clg_tensor_free(t);
        return NULL;
    }
    if (dtype == CLG_I32 && t->numel) {   /* indices: their range, for checks on the host */
        /* read through memcpy: the caller's data need not be aligned (a safetensors
         * file's int32 tensor after 16-bit ones is not) */
        const unsigned char *p = data;
        int32_t lo, hi;
        memcpy(&lo, p, 4);
        hi = lo;
        int64_t lo_at = 0, hi_at = 0;
        for (int64_t i = 1; i < t->numel; i++) {
            int32_t v;
            memcpy(&v, p + 4 * i, 4);
            if (v < lo) lo = v, lo_at = i;
            if (v > hi) hi = v, hi_at = i;
        }
        clg_buffer *b = t->buf;
        b->range.known = true;
        b->range.lo = lo;
        b->range.hi = hi;
        b->range.lo_at = lo_at;
        b->range.hi_at = hi_at;
        b->range.count = t->numel;
        b->range.version = b->version;
    }
    return t;
}

/* int64 indices (NumPy's and PyTorch's default) as the int32 tensor every index op
 * takes, each value checked to fit. */
clg_tensor *clg_indices_from_int64(clg_device *dev, int ndim, const int64_t *shape, const int64_t *data)
{
    if (!dev) return NULL;
    if (ndim < 0 || ndim > CLG_MAX_DIMS || (ndim && !shape))
        return clg__op_fail(dev, CLG_ERR_SHAPE, "indices_from_int64", "%d axes (at most %d)", ndim, CLG_MAX_DIMS);
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 || (shape[d] && n > INT32_MAX / shape[d]))
            return clg__op_fail(dev, CLG_ERR_SHAPE, "indices_from_int64", "bad shape at axis %d", d);
        n *= shape[d];
    }
    if (n && !data) return clg__op_fail(dev, CLG_ERR_INVALID_ARGUMENT, "indices_from_int64", "data is NULL");
    int32_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return clg__op_fail(dev, CLG_ERR_OUT_OF_MEMORY, "indices_from_int64", "out of host memory");
    for (int64_t i = 0; i < n; i++) {
        if (data[i] < INT32_MIN || data[i] > INT32_MAX) {
            free(v);
            return clg__op_fail(dev, CLG_ERR_INVALID_ARGUMENT, "indices_from_int64",
                                "index %lld (element %lld) does not fit int32", (long long)data[i], (long long)i);
        }
        v[i] = (int32_t)data[i];
    }
    clg_tensor *t = clg_tensor_from_host(dev, CLG_I32, ndim, shape, v);
    free(v);
    return t;
}

/* The host knows the values when idx holds exactly what clg_tensor_from_host wrote,
 * unchanged since; a view of part of them may be in range while the rest is not, so it
 * is left to the kernel, as values made on the device are (no read here). */
static bool range_known(const clg_tensor *idx)
{
    const clg_buffer *b = idx->buf;
    return idx->numel && b->range.known && b->range.version == b->version && b->range.count == idx->numel &&
           idx->offset == 0 && clg_tensor_is_contiguous(idx);
}

bool clg__index_known_in_range(const clg_tensor *idx, int64_t bound)
{
    return range_known(idx) && idx->buf->range.lo >= 0 && idx->buf->range.hi < bound;
}

clg_buffer *clg__index_check(const char *op, const char *what, const clg_tensor *idx, int64_t bound,
                             const clg_tensor *of, int *code)
{
    const clg_buffer *b = idx->buf;
    bool known = range_known(idx);
    if (known && (b->range.lo < 0 || b->range.hi >= bound)) {
        bool low = b->range.lo < 0;
        clg__op_fail(idx->dev, CLG_ERR_INVALID_ARGUMENT, op, "%s %d (element %lld of %s) out of range [0, %lld) for %s",
                     what, (int)(low ? b->range.lo : b->range.hi), (long long)(low ? b->range.lo_at : b->range.hi_at),
                     CLG_DESC(idx), (long long)bound, CLG_DESC(of));
        return NULL;
    }
    return clg__kernel_error_word(idx->dev, op, what, code);
}

clg_tensor *clg_full(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape, double value)
{
    clg_tensor *t = clg_empty(dev, dtype, ndim, shape);
    if (t && clg_fill_(t, value) != CLG_OK) {
        clg_tensor_free(t);
        return NULL;
    }
    return t;
}

clg_tensor *clg_zeros(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape)
{
    return clg_full(dev, dtype, ndim, shape, 0.0);
}

clg_tensor *clg_ones(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape)
{
    return clg_full(dev, dtype, ndim, shape, 1.0);
}

clg_tensor *clg_scalar(clg_device *dev, clg_dtype dtype, double value)
{
    return clg_full(dev, dtype, 0, NULL, value);
}

clg_tensor *clg_arange(clg_device *dev, clg_dtype dtype, double start, double stop, double step)
{
    if (!dev) return NULL;
    if (step == 0 || !isfinite(start) || !isfinite(stop) || !isfinite(step))
        return clg__op_fail(dev, CLG_ERR_INVALID_ARGUMENT, "arange", "start %g, stop %g, step %g", start, stop, step);
    double count = ceil((stop - start) / step);
    int64_t n = count > 0 ? (int64_t)count : 0;
    clg_tensor *t = clg__tensor_new(dev, dtype, 1, &n);
    if (!t) return NULL;
    clg_iter it;
    clg__iter_init(&it, 1, &t);
    clg_arg a[2] = {clg__arg_scalar(dtype, start), clg__arg_scalar(dtype, step)};
    if (clg__iter_launch(dev, &it, "copy", clg__dtype_options(dtype), "arange", a, 2) != CLG_OK) {
        clg_tensor_free(t);
        return NULL;
    }
    return t;
}

/* ---- random numbers ------------------------------------------------------------------------------ */

static clg_tensor *random_tensor(clg_device *dev, const char *op, const char *kernel, clg_dtype dtype, int ndim,
                                 const int64_t *shape, double p0, double p1)
{
    if (!dev) return NULL;
    clg_tensor *t = clg__tensor_new(dev, dtype, ndim, shape);
    if (!t) return NULL;
    if (!clg__is_float(dtype) || !clg__check_numel(op, dev, t->numel)) {
        if (!clg__is_float(dtype)) clg__op_fail(dev, CLG_ERR_DTYPE, op, "needs float32 or float64");
        clg_tensor_free(t);
        return NULL;
    }
    int per = dtype == CLG_F64 ? 2 : 4;   /* numbers per Philox block, as random.cl */
    uint64_t blocks = ((uint64_t)t->numel + (uint64_t)per - 1) / (uint64_t)per;
    clg_kernel *k = clg__kernel_get(dev, "random", clg__dtype_options(dtype), kernel);
    clg_rng_pos pos = {0, 0, -1};   /* drawn by the launcher, and again at each graph replay */
    clg_arg a[] = {CLG_ARG_I(t->numel), CLG_ARG_B(t->buf), CLG_ARG_I(0), CLG_ARG_RNG_DRAW(&pos, blocks),
                   clg__arg_scalar(dtype, p0), clg__arg_scalar(dtype, p1)};
    if (!k || clg__launch_1d(dev, k, a, 6, (size_t)blocks)) {
        clg_tensor_free(t);
        return NULL;
    }
    return t;
}

clg_tensor *clg_rand(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape, double lo, double hi)
{
    return random_tensor(dev, "rand", "rand_uniform", dtype, ndim, shape, lo, hi);
}

clg_tensor *clg_randn(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape, double mean, double std)
{
    return random_tensor(dev, "randn", "rand_normal", dtype, ndim, shape, mean, std);
}

/* ---- reading back ---------------------------------------------------------------------------------- */

clg_status clg_tensor_to_host(const clg_tensor *t, void *dst, size_t bytes)
{
    if (!t) return CLG_ERR_INVALID_ARGUMENT;
    size_t need = (size_t)t->numel * clg_dtype_size(t->dtype);
    if (need && !dst)
        return clg__fail(t->dev, CLG_ERR_INVALID_ARGUMENT, "clg_tensor_to_host: %s: the destination is NULL",
                         CLG_DESC(t));
    if (bytes != need)
        return clg__fail(t->dev, CLG_ERR_INVALID_ARGUMENT, "clg_tensor_to_host: %s needs %zu bytes, got %zu",
                         CLG_DESC(t), need, bytes);
    if (clg_tensor_is_contiguous(t))
        return clg__read(t->dev, t->buf, (size_t)t->offset * clg_dtype_size(t->dtype), dst, need);
    clg_tensor *c = clg__copy_as((clg_tensor *)t, t->dtype);
    if (!c) return t->dev->status;
    clg_status st = clg__read(t->dev, c->buf, 0, dst, need);
    clg_tensor_free(c);
    return st;
}

clg_status clg_tensor_item(const clg_tensor *t, double *value)
{
    if (!t || !value) return CLG_ERR_INVALID_ARGUMENT;
    if (t->numel != 1)
        return clg__fail(t->dev, CLG_ERR_SHAPE, "clg_tensor_item: %s has %lld elements, not 1", CLG_DESC(t),
                         (long long)t->numel);
    union { float f; double d; int32_t i; uint16_t h; } v;
    clg_status st = clg_tensor_to_host(t, &v, clg_dtype_size(t->dtype));
    if (st == CLG_OK)
        *value = t->dtype == CLG_F32 ? v.f : t->dtype == CLG_F64 ? v.d : clg__is_half(t->dtype)
                                                                    ? clg__half_to_double(t->dtype, v.h) : v.i;
    return st;
}

/* Nested brackets as NumPy prints; past 1000 elements only 3 at each end of an axis. */
static void print_axis(FILE *out, const clg_tensor *t, const double *v, int d, int64_t base, bool summarize)
{
    int64_t n = t->shape[d], stride = 1;
    for (int k = d + 1; k < t->ndim; k++) stride *= t->shape[k];
    fputc('[', out);
    for (int64_t i = 0; i < n; i++) {
        if (summarize && n > 6 && i == 3) {
            fprintf(out, "..., ");
            i = n - 3;
        }
        if (d == t->ndim - 1) {
            if (t->dtype == CLG_I32) fprintf(out, "%lld", (long long)v[base + i]);
            else fprintf(out, "%.6g", v[base + i]);
        } else {
            print_axis(out, t, v, d + 1, base + i * stride, summarize);
        }
        if (i + 1 < n) fprintf(out, d == t->ndim - 1 ? ", " : ",\n%*s", d == t->ndim - 1 ? 0 : d + 8, "");
    }
    fputc(']', out);
}

clg_status clg_tensor_print(const clg_tensor *t, FILE *out, const char *name)
{
    if (!t || !out) return CLG_ERR_INVALID_ARGUMENT;
    size_t es = clg_dtype_size(t->dtype);
    void *raw = malloc(t->numel ? (size_t)t->numel * es : 1);
    double *v = malloc(t->numel ? (size_t)t->numel * sizeof *v : 1);
    clg_status st = raw && v ? clg_tensor_to_host(t, raw, (size_t)t->numel * es)
                             : clg__fail(t->dev, CLG_ERR_OUT_OF_MEMORY, "clg_tensor_print: out of host memory");
    if (st == CLG_OK) {
        for (int64_t i = 0; i < t->numel; i++)
            v[i] = t->dtype == CLG_F32   ? ((float *)raw)[i]
                   : t->dtype == CLG_F64 ? ((double *)raw)[i]
                   : clg__is_half(t->dtype) ? clg__half_to_double(t->dtype, ((uint16_t *)raw)[i])
                                            : ((int32_t *)raw)[i];
        if (name) fprintf(out, "%s = ", name);
        fprintf(out, "tensor(");
        if (t->ndim == 0) fprintf(out, t->dtype == CLG_I32 ? "%.0f" : "%.6g", v[0]);
        else if (t->numel == 0) fprintf(out, "[]");
        else print_axis(out, t, v, 0, 0, t->numel > 1000);
        char shape[128];
        fprintf(out, ", shape=%s, dtype=%s%s)\n", clg_shape_str(t->ndim, t->shape, shape, sizeof shape),
                clg_dtype_name(t->dtype), t->requires_grad ? ", requires_grad" : "");
    }
    free(raw);
    free(v);
    return st;
}
