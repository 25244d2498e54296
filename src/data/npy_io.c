/* npy_io.c: .npy files for host arrays and for tensors (checkpoints use these). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_impl.h"
#include "tensor_impl.h"

clg_status clg_npy_read(const char *path, clg_host_array *out, char *err, size_t errlen)
{
    if (!out) return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, path, "no output array");
    memset(out, 0, sizeof *out);
    unsigned char *buf;
    size_t len;
    clg_status st = clg__read_file(path, &buf, &len, err, errlen);
    if (st) return st;
    st = clg__npy_parse(buf, len, path, out, err, errlen);
    free(buf);
    return st;
}

/* Write to "<path>.tmp" and rename, so that a crash never leaves half a file at path. */
static clg_status write_file(const char *path, const unsigned char *buf, size_t len, char *err, size_t errlen)
{
    size_t n = strlen(path);
    char *tmp = malloc(n + 5);
    if (!tmp) return clg__data_fail(err, errlen, CLG_ERR_OUT_OF_MEMORY, path, "out of memory");
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp", 5);
    FILE *f = fopen(tmp, "wb");
    clg_status st = CLG_OK;
    if (!f) {
        st = clg__data_fail(err, errlen, CLG_ERR_IO, path, "cannot create %s: %s", tmp, strerror(errno));
    } else {
        bool ok = fwrite(buf, 1, len, f) == len;
        ok = (fclose(f) == 0) && ok;
        if (!ok || rename(tmp, path) != 0) {
            st = clg__data_fail(err, errlen, CLG_ERR_IO, path, "write failed: %s", strerror(errno));
            remove(tmp);
        }
    }
    free(tmp);
    return st;
}

clg_status clg_npy_write(const char *path, const clg_host_array *a, char *err, size_t errlen)
{
    if (!path || !a) return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, path, "no path or array");
    unsigned char *buf;
    size_t len;
    clg_status st = clg__npy_format(a, path, &buf, &len, err, errlen);
    if (st) return st;
    st = write_file(path, buf, len, err, errlen);
    free(buf);
    return st;
}

clg_status clg_tensor_save_npy(const clg_tensor *t, const char *path)
{
    if (!t) return CLG_ERR_INVALID_ARGUMENT;
    clg_host_array a = {.type = clg_elem_of_dtype(t->dtype), .ndim = t->ndim};
    memcpy(a.shape, t->shape, sizeof a.shape);
    a.bytes = (size_t)t->numel * clg_dtype_size(t->dtype);
    a.data = malloc(a.bytes ? a.bytes : 1);
    if (!a.data) return clg__fail(t->dev, CLG_ERR_OUT_OF_MEMORY, "clg_tensor_save_npy(%s): out of memory", path);
    clg_status st = clg_tensor_to_host(t, a.data, a.bytes);
    char err[1024];
    if (!st) {
        st = clg_npy_write(path, &a, err, sizeof err);
        if (st) clg__fail(t->dev, st, "clg_tensor_save_npy: %s", err);
    }
    free(a.data);
    return st;
}

/* Narrow int64 to int32 in place (the buffer shrinks); false when a value does not fit. */
static bool narrow_i64(clg_host_array *a)
{
    int64_t n = clg_host_array_numel(a);
    unsigned char *p = a->data;
    for (int64_t i = 0; i < n; i++) {   /* element i's int32 lands at or before its int64 */
        int64_t v;
        memcpy(&v, p + 8 * i, 8);
        if (v < INT32_MIN || v > INT32_MAX) return false;
        int32_t w = (int32_t)v;
        memcpy(p + 4 * i, &w, 4);
    }
    return true;
}

/* Widen uint8 to int32 into a new buffer. */
static bool widen_u8(clg_host_array *a)
{
    int64_t n = clg_host_array_numel(a);
    int32_t *w = malloc(n ? (size_t)n * 4 : 1);
    if (!w) return false;
    for (int64_t i = 0; i < n; i++) w[i] = ((const unsigned char *)a->data)[i];
    free(a->data);
    a->data = w;
    return true;
}

clg_tensor *clg_tensor_load_npy(clg_device *dev, const char *path)
{
    if (!dev) return NULL;
    char err[1024];
    clg_host_array a;
    clg_status st = clg_npy_read(path, &a, err, sizeof err);
    if (st) return clg__op_fail(dev, st, "tensor_load_npy", "%s", err);
    clg_dtype dt = a.type == CLG_ELEM_F32 ? CLG_F32 : a.type == CLG_ELEM_F64 ? CLG_F64
                   : a.type == CLG_ELEM_F16 ? CLG_F16 : CLG_I32;
    bool ok = a.type == CLG_ELEM_I64 ? narrow_i64(&a) : a.type == CLG_ELEM_U8 ? widen_u8(&a) : true;
    clg_tensor *t = NULL;
    if (!ok)
        clg__op_fail(dev, a.type == CLG_ELEM_U8 ? CLG_ERR_OUT_OF_MEMORY : CLG_ERR_FORMAT, "tensor_load_npy",
                     "%s: int64 values outside int32's range", path);
    else
        t = clg_tensor_from_host(dev, dt, a.ndim, a.shape, a.data);
    clg_host_array_free(&a);
    return t;
}
