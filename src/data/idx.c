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

/* The header of n bytes of IDX data, decoded: what is wrong with it, or IDX_OK with its
 * element type, axes, shape and length (pre bytes). Shared by the parse and by the
 * gzip reader's bound on how far to inflate. */
typedef enum idx_head { IDX_OK, IDX_SHORT, IDX_MAGIC, IDX_TYPE, IDX_AXES, IDX_SHORT_HEADER } idx_head;
static idx_head idx_header(const unsigned char *b, size_t n, clg_elem_type *type, int *ndim, int64_t *shape,
                           size_t *pre)
{
    if (n < 4) return IDX_SHORT;
    if (b[0] || b[1]) return IDX_MAGIC;
    if (!idx_type(b[2], type)) return IDX_TYPE;
    *ndim = b[3];
    if (*ndim < 1 || *ndim > CLG_MAX_DIMS) return IDX_AXES;
    *pre = 4 + 4 * (size_t)*ndim;
    if (n < *pre) return IDX_SHORT_HEADER;
    for (int i = 0; i < *ndim; i++) shape[i] = be32(b + 4 + 4 * i);
    return IDX_OK;
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
    clg_elem_type type;
    int ndim = 0;
    int64_t shape[CLG_MAX_DIMS];
    size_t pre = 0;
    switch (idx_header(buf, len, &type, &ndim, shape, &pre)) {
    case IDX_OK: break;
    case IDX_SHORT: return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "truncated: %zu bytes, no IDX header", len);
    case IDX_MAGIC:
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name,
                              "not an IDX file (magic %02x %02x %02x %02x; IDX starts with two zero bytes)",
                              buf[0], buf[1], buf[2], buf[3]);
    case IDX_TYPE:
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name,
                              "IDX element type 0x%02x is not supported (0x08 u8, 0x0C i32, 0x0D f32, 0x0E f64)", buf[2]);
    case IDX_AXES:
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "IDX header with %d axes (1 to %d)", ndim, CLG_MAX_DIMS);
    case IDX_SHORT_HEADER:
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "truncated in the header: %zu of %zu bytes", len, pre);
    }
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
    int ndim;
    int64_t shape[CLG_MAX_DIMS];
    size_t pre;
    if (idx_header(h, n, &type, &ndim, shape, &pre) != IDX_OK) return 0;
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
