/* safetensors_tensor.c: stored tensors to device tensors. Floats load into their own
 * type or a wider one that holds every value exactly: float16 and bfloat16 into
 * float32 and float64 (a model.half() state dict into a float32 model), never
 * narrower (a silent float64 -> float32 would lose what the file holds); integers of
 * any width load into int32 when every value fits, because PyTorch stores counters
 * (num_batches_tracked) and indices as int64. */
#include <stdlib.h>
#include <string.h>

#include "io_impl.h"

static bool is_int(clg_elem_type d)
{
    switch (d) {
    case CLG_ELEM_BOOL: case CLG_ELEM_U8: case CLG_ELEM_I8: case CLG_ELEM_I16: case CLG_ELEM_U16:
    case CLG_ELEM_I32: case CLG_ELEM_U32: case CLG_ELEM_I64: case CLG_ELEM_U64:
        return true;
    default:
        return false;
    }
}

static bool is_half(clg_elem_type d) { return d == CLG_ELEM_F16 || d == CLG_ELEM_BF16; }

bool clg_safetensors_converts(clg_elem_type from, clg_dtype to)
{
    if (to == CLG_I32) return is_int(from);
    if (is_half(from) && (to == CLG_F32 || to == CLG_F64)) return true;
    return (unsigned)to < CLG_DTYPE_COUNT && from == clg_elem_of_dtype(to);
}

/* Element i of an integer tensor; false for a uint64 past int64's range. */
static bool int_at(const clg_safetensors_entry *t, int64_t i, int64_t *v)
{
    size_t size = clg_elem_size(t->dtype);
    const unsigned char *p = (const unsigned char *)t->data + (size_t)i * size;
    uint64_t u = 0;
    for (size_t b = size; b-- > 0;) u = u << 8 | p[b];   /* little-endian, any host */
    switch (t->dtype) {
    case CLG_ELEM_I8: *v = (int8_t)u; return true;
    case CLG_ELEM_I16: *v = (int16_t)u; return true;
    case CLG_ELEM_I32: *v = (int32_t)u; return true;
    case CLG_ELEM_I64: *v = (int64_t)u; return true;
    case CLG_ELEM_U64: *v = (int64_t)u; return u <= (uint64_t)INT64_MAX;
    default: *v = (int64_t)u; return true;   /* BOOL, U8, U16, U32 */
    }
}

bool clg__st_matches(const clg_safetensors_entry *t, clg_dtype to, int ndim, const int64_t *shape)
{
    if (!clg_safetensors_converts(t->dtype, to) || t->ndim != ndim) return false;
    for (int d = 0; d < ndim; d++)
        if (t->shape[d] != shape[d]) return false;
    return true;
}

const char *clg__st_desc(const clg_safetensors_entry *t, char *buf, size_t len)
{
    char shape[160];
    snprintf(buf, len, "%s %s", clg_shape_str(t->ndim, t->shape, shape, sizeof shape), clg_safetensors_dtype_name(t->dtype));
    return buf;
}

bool clg__st_values_fit(const clg_safetensors_entry *t, clg_dtype to, const clg__io_err *e)
{
    if (!clg_safetensors_converts(t->dtype, to)) {
        clg__io_fail(e, CLG_ERR_DTYPE, "tensor \"%s\" of dtype %s cannot load into %s", t->name,
                     clg_safetensors_dtype_name(t->dtype), clg_dtype_name(to));
        return false;
    }
    if (to != CLG_I32) return true;
    for (int64_t i = 0; i < t->numel; i++) {
        int64_t v;
        if (!int_at(t, i, &v) || v < INT32_MIN || v > INT32_MAX) {
            clg__io_fail(e, CLG_ERR_FORMAT, "tensor \"%s\" (%s): element %lld does not fit int32", t->name,
                         clg_safetensors_dtype_name(t->dtype), (long long)i);
            return false;
        }
    }
    return true;
}

/* t's values as host memory of dtype `to`: the file's bytes themselves when no
 * conversion is needed, else a malloc'd copy (*owned set). NULL when out of memory. */
static const void *host_values(const clg_safetensors_entry *t, clg_dtype to, void **owned)
{
    *owned = NULL;
    uint16_t probe = 1;
    unsigned char first;
    memcpy(&first, &probe, 1);
    if (t->dtype == clg_elem_of_dtype(to) && first == 1) return t->data;
    size_t size = clg_dtype_size(to);
    unsigned char *out = malloc(t->numel ? (size_t)t->numel * size : 1);
    if (!out) return NULL;
    if (is_half(t->dtype) && (to == CLG_F32 || to == CLG_F64)) {   /* widened, exactly */
        const unsigned char *p = t->data;
        for (int64_t i = 0; i < t->numel; i++) {
            uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);   /* little-endian, any host */
            float f = t->dtype == CLG_ELEM_F16 ? clg_f16_to_f32(h) : clg_bf16_to_f32(h);
            if (to == CLG_F64) {
                double d = f;
                memcpy(out + 8 * i, &d, 8);
            } else {
                memcpy(out + 4 * i, &f, 4);
            }
        }
    } else if (to == CLG_I32) {
        for (int64_t i = 0; i < t->numel; i++) {
            int64_t v;
            int_at(t, i, &v);
            int32_t w = (int32_t)v;   /* in range: checked by clg__st_values_fit */
            memcpy(out + 4 * i, &w, 4);
        }
    } else {   /* same float type on a big-endian host */
        const unsigned char *p = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            for (size_t b = 0; b < size; b++) out[(size_t)i * size + b] = p[(size_t)i * size + size - 1 - b];
    }
    *owned = out;
    return out;
}

clg_status clg__st_copy_into(const clg_safetensors_entry *t, clg_tensor *dst, const clg__io_err *e)
{
    if (t->numel == 0) return CLG_OK;
    void *owned;
    const void *host = host_values(t, dst->dtype, &owned);
    if (!host) return clg__io_fail(e, CLG_ERR_OUT_OF_MEMORY, "out of host memory for tensor \"%s\"", t->name);
    clg_device *dev = dst->dev;
    /* Parameters require gradients: in-place copies into them are for no-grad regions. */
    clg_scope_begin(dev);
    clg_no_grad_begin(dev);
    clg_tensor *src = clg_tensor_from_host(dev, dst->dtype, t->ndim, t->shape, host);
    clg_status st = src ? clg_copy_(dst, src) : clg_device_last_status(dev);
    clg_no_grad_end(dev);
    clg_scope_end(dev);
    free(owned);
    if (st) return clg__io_fail(e, st, "copying tensor \"%s\" to the device: %s", t->name, clg_device_error(dev));
    return CLG_OK;
}

clg_tensor *clg_safetensors_tensor(const clg_safetensors_entry *t, clg_device *dev, clg_dtype to)
{
    if (!dev) return NULL;
    clg__io_err e = {dev, NULL, 0, "clg_safetensors_tensor"};
    if (!t) {
        clg__io_fail(&e, CLG_ERR_INVALID_ARGUMENT, "no tensor given");
        return NULL;
    }
    if (!clg__st_values_fit(t, to, &e)) return NULL;
    void *owned;
    const void *host = host_values(t, to, &owned);
    if (!host) {
        clg__io_fail(&e, CLG_ERR_OUT_OF_MEMORY, "out of host memory for tensor \"%s\"", t->name);
        return NULL;
    }
    clg_tensor *out = clg_tensor_from_host(dev, to, t->ndim, t->shape, host);
    free(owned);
    return out;
}
