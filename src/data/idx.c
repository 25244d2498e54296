/* idx.c: the IDX format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/):
 * two zero bytes, a type byte, an axis count, one big-endian uint32 per axis, then
 * the elements, big-endian. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_impl.h"

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool idx_type(unsigned char code, clg_elem_type *t)
{
    switch (code) {
    case 0x08: *t = CLG_ELEM_U8; return true;
    case 0x0C: *t = CLG_ELEM_I32; return true;
    case 0x0D: *t = CLG_ELEM_F32; return true;
    case 0x0E: *t = CLG_ELEM_F64; return true;
    default: return false;
    }
}

/* "[3, 28, 28]": the dims for messages (the parsers stand alone, for the fuzz targets). */
static void dims_str(int ndim, const int64_t *shape, char *buf, size_t cap)
{
    size_t n = 0;
    buf[n++] = '[';
    for (int i = 0; i < ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < cap - 1) buf[n++] = ']';
    buf[n < cap ? n : cap - 1] = 0;
}

/* Copy n big-endian elements of size es to host order. */
static void from_be(unsigned char *dst, const unsigned char *src, size_t n, size_t es)
{
    if (es == 1) {
        memcpy(dst, src, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < es; b++) dst[i * es + b] = src[i * es + es - 1 - b];
}

clg_status clg__idx_parse(const unsigned char *buf, size_t len, const char *name, clg_host_array *out, char *err,
                          size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (len < 4) return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "truncated: %zu bytes, no IDX header", len);
    clg_elem_type type;
    if (buf[0] || buf[1])
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name,
                              "not an IDX file (magic %02x %02x %02x %02x; IDX starts with two zero bytes)",
                              buf[0], buf[1], buf[2], buf[3]);
    if (!idx_type(buf[2], &type))
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name,
                              "IDX element type 0x%02x is not supported (0x08 u8, 0x0C i32, 0x0D f32, 0x0E f64)", buf[2]);
    int ndim = buf[3];
    if (ndim < 1 || ndim > CLG_MAX_DIMS)
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "IDX header with %d axes (1 to %d)", ndim, CLG_MAX_DIMS);
    size_t pre = 4 + 4 * (size_t)ndim;
    if (len < pre)
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "truncated in the header: %zu of %zu bytes", len, pre);
    int64_t shape[CLG_MAX_DIMS];
    for (int i = 0; i < ndim; i++) shape[i] = be32(buf + 4 + 4 * i);
    size_t es = clg_elem_size(type);
    int64_t bytes = clg__checked_bytes(ndim, shape, es);
    char dims[160];
    dims_str(ndim, shape, dims, sizeof dims);
    if (bytes < 0 || (uint64_t)bytes > len - pre)
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name,
                              "truncated: the header promises %s %s elements (%lld bytes), the file holds %zu",
                              dims, clg_elem_name(type), (long long)bytes, len - pre);
    if ((uint64_t)bytes < len - pre)
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "%zu bytes after the %s %s elements",
                              len - pre - (size_t)bytes, dims, clg_elem_name(type));
    clg_status st = clg__host_array_alloc(out, type, ndim, shape, name, err, errlen);
    if (st) return st;
    from_be(out->data, buf + pre, (size_t)bytes / es, es);
    return CLG_OK;
}

/* The file size an IDX header promises (header and elements), 0 when the header is not
 * one: then the parse says why, after inflating at most CLG_GUNZIP_MAX. */
static size_t idx_promised(const unsigned char *h, size_t n)
{
    clg_elem_type type;
    if (n < 4 || h[0] || h[1] || !idx_type(h[2], &type) || h[3] < 1 || h[3] > CLG_MAX_DIMS) return 0;
    int ndim = h[3];
    size_t pre = 4 + 4 * (size_t)ndim;
    if (n < pre) return 0;
    int64_t shape[CLG_MAX_DIMS];
    for (int i = 0; i < ndim; i++) shape[i] = be32(h + 4 + 4 * i);
    int64_t bytes = clg__checked_bytes(ndim, shape, clg_elem_size(type));
    return bytes < 0 ? 0 : pre + (size_t)bytes;
}

clg_status clg_idx_read(const char *path, clg_host_array *out, char *err, size_t errlen)
{
    if (!out) return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, path, "no output array");
    memset(out, 0, sizeof *out);
    unsigned char *buf;
    size_t len;
    clg_status st = clg__read_file_gz(path, idx_promised, &buf, &len, err, errlen);
    if (st) return st;
    st = clg__idx_parse(buf, len, path, out, err, errlen);
    free(buf);
    return st;
}
