/* host_array.c: element types and row-major arrays in host memory. */
#include <stdlib.h>
#include <string.h>

#include "data_impl.h"

static const size_t elem_sizes[CLG_ELEM_COUNT] = {1, 4, 8, 4, 8, 1, 1, 2, 2, 4, 8, 2, 2, 1, 1};
static const char *const elem_names[CLG_ELEM_COUNT] = {
    "uint8", "int32", "int64", "float32", "float64", "bool", "int8", "int16", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float8_e5m2", "float8_e4m3"};

clg_elem_type clg_elem_of_dtype(clg_dtype d)
{
    switch (d) {
    case CLG_F64: return CLG_ELEM_F64;
    case CLG_I32: return CLG_ELEM_I32;
    case CLG_F16: return CLG_ELEM_F16;
    case CLG_BF16: return CLG_ELEM_BF16;
    default: return CLG_ELEM_F32;
    }
}

size_t clg_elem_size(clg_elem_type type)
{
    return (unsigned)type < CLG_ELEM_COUNT ? elem_sizes[type] : 0;
}

const char *clg_elem_name(clg_elem_type type)
{
    return (unsigned)type < CLG_ELEM_COUNT ? elem_names[type] : "unknown";
}

int64_t clg_host_array_numel(const clg_host_array *a)
{
    int64_t n = 1;
    for (int i = 0; i < a->ndim; i++) n *= a->shape[i];
    return n;
}

void clg_host_array_free(clg_host_array *a)
{
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

int64_t clg__checked_bytes(int ndim, const int64_t *shape, size_t elem_size)
{
    /* 2^62 keeps every product below in int64 and far past any real allocation. */
    const int64_t limit = (int64_t)1 << 62;
    int64_t n = (int64_t)elem_size;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return -1;
        if (shape[i] != 0 && n > limit / shape[i]) return -1;
        n *= shape[i];
    }
    return (uint64_t)n > SIZE_MAX ? -1 : n;
}

clg_status clg__host_array_alloc(clg_host_array *a, clg_elem_type type, int ndim, const int64_t *shape,
                                 const char *name, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    if (ndim < 0 || ndim > CLG_MAX_DIMS)
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "%d axes (clgrad takes at most %d)", ndim,
                              CLG_MAX_DIMS);
    int64_t bytes = clg__checked_bytes(ndim, shape, clg_elem_size(type));
    if (bytes < 0) return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "impossible array size");
    a->data = malloc(bytes ? (size_t)bytes : 1);
    if (!a->data)
        return clg__data_fail(err, errlen, CLG_ERR_OUT_OF_MEMORY, name, "out of memory for %lld bytes",
                              (long long)bytes);
    a->type = type;
    a->ndim = ndim;
    memcpy(a->shape, shape, (size_t)ndim * sizeof *shape);
    a->bytes = (size_t)bytes;
    return CLG_OK;
}

double clg__host_array_get(const clg_host_array *a, int64_t i)
{
    const unsigned char *p = (const unsigned char *)a->data + (size_t)i * clg_elem_size(a->type);
    switch (a->type) {
    case CLG_ELEM_U8: return *p;
    case CLG_ELEM_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case CLG_ELEM_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case CLG_ELEM_F32: { float v; memcpy(&v, p, 4); return v; }
    case CLG_ELEM_F64: { double v; memcpy(&v, p, 8); return v; }
    default: return 0;
    }
}
