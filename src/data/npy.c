/* npy.c: NumPy's .npy format, parsed from memory and formatted into memory.
 * https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
 * The header is a Python dict literal; this reads exactly the subset NumPy writes
 * ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }) and refuses the rest. */
#include <stdlib.h>
#include <string.h>

#include "data_impl.h"

#define NPY_HEADER_MAX 10000

typedef struct hdr {
    const char *p, *end;
    const char *name;
    char *err;
    size_t errlen;
} hdr;

static clg_status bad(hdr *h, const char *what)
{
    return clg__data_fail(h->err, h->errlen, CLG_ERR_FORMAT, h->name, "malformed .npy header: %s", what);
}

static void skip_ws(hdr *h)
{
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r')) h->p++;
}

static bool eat(hdr *h, char c)
{
    skip_ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return true;
    }
    return false;
}

/* A quoted string without escapes, into buf (truncated at cap - 1: still compared whole). */
static clg_status parse_str(hdr *h, char *buf, size_t cap)
{
    skip_ws(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return bad(h, "expected a quoted string");
    char q = *h->p++;
    size_t n = 0;
    while (h->p < h->end && *h->p != q) {
        if (*h->p == '\\') return bad(h, "escapes in strings are not supported");
        if (n + 1 >= cap) return bad(h, "string too long");
        buf[n++] = *h->p++;
    }
    if (h->p >= h->end) return bad(h, "unterminated string");
    h->p++;
    buf[n] = 0;
    return CLG_OK;
}

static clg_status parse_bool(hdr *h, bool *v)
{
    skip_ws(h);
    size_t left = (size_t)(h->end - h->p);
    if (left >= 4 && !memcmp(h->p, "True", 4)) { *v = true; h->p += 4; return CLG_OK; }
    if (left >= 5 && !memcmp(h->p, "False", 5)) { *v = false; h->p += 5; return CLG_OK; }
    return bad(h, "fortran_order is neither True nor False");
}

static clg_status parse_shape(hdr *h, int *ndim, int64_t *shape)
{
    if (!eat(h, '(')) return bad(h, "shape is not a tuple");
    *ndim = 0;
    for (;;) {
        if (eat(h, ')')) return CLG_OK;
        if (*ndim == CLG_MAX_DIMS) return bad(h, "more than 8 axes");
        skip_ws(h);
        if (h->p >= h->end || *h->p < '0' || *h->p > '9') return bad(h, "a shape entry is not a non-negative integer");
        int64_t v = 0;
        while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
            if (v > ((int64_t)1 << 58)) return bad(h, "a shape entry is impossibly large");
            v = v * 10 + (*h->p++ - '0');
        }
        if (h->p < h->end && *h->p == 'L') h->p++;   /* Python 2 longs */
        shape[(*ndim)++] = v;
        if (!eat(h, ',')) {
            if (eat(h, ')')) return CLG_OK;
            return bad(h, "expected ',' or ')' in shape");
        }
    }
}

static clg_status parse_descr(hdr *h, clg_elem_type *type)
{
    char d[32];
    skip_ws(h);
    if (h->p < h->end && *h->p == '[') return bad(h, "structured dtypes are not supported");
    clg_status st = parse_str(h, d, sizeof d);
    if (st) return st;
    static const struct { const char *descr; clg_elem_type type; } known[] = {
        {"<f4", CLG_ELEM_F32}, {"<f8", CLG_ELEM_F64}, {"<i4", CLG_ELEM_I32}, {"<i8", CLG_ELEM_I64},
        {"|u1", CLG_ELEM_U8},  {"<u1", CLG_ELEM_U8},  {"=u1", CLG_ELEM_U8},  {"<f2", CLG_ELEM_F16},
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (!strcmp(d, known[i].descr)) { *type = known[i].type; return CLG_OK; }
    if (d[0] == '>') return clg__data_fail(h->err, h->errlen, CLG_ERR_FORMAT, h->name,
                                           "big-endian data ('%s') is not supported", d);
    if (strchr(d, 'O')) return clg__data_fail(h->err, h->errlen, CLG_ERR_FORMAT, h->name,
                                              "object arrays (pickled data) are not supported");
    return clg__data_fail(h->err, h->errlen, CLG_ERR_FORMAT, h->name,
                          "dtype '%s' is not supported (float16, float32, float64, int32, int64, uint8)", d);
}

typedef struct npy_meta { clg_elem_type type; bool fortran; int ndim; int64_t shape[CLG_MAX_DIMS]; } npy_meta;

static clg_status parse_dict(hdr *h, npy_meta *m)
{
    bool seen[3] = {false, false, false};
    if (!eat(h, '{')) return bad(h, "not a dict");
    while (!eat(h, '}')) {
        char key[32];
        clg_status st = parse_str(h, key, sizeof key);
        if (st) return st;
        if (!eat(h, ':')) return bad(h, "expected ':' after a key");
        int k = !strcmp(key, "descr") ? 0 : !strcmp(key, "fortran_order") ? 1 : !strcmp(key, "shape") ? 2 : -1;
        if (k < 0) return bad(h, "unknown key");
        if (seen[k]) return bad(h, "repeated key");
        seen[k] = true;
        st = k == 0 ? parse_descr(h, &m->type) : k == 1 ? parse_bool(h, &m->fortran) : parse_shape(h, &m->ndim, m->shape);
        if (st) return st;
        if (!eat(h, ',')) {
            if (eat(h, '}')) break;
            return bad(h, "expected ',' or '}'");
        }
    }
    skip_ws(h);
    if (h->p != h->end) return bad(h, "text after the dict");
    if (!seen[0] || !seen[1] || !seen[2]) return bad(h, "'descr', 'fortran_order' or 'shape' is missing");
    return CLG_OK;
}

/* Column-major src to row-major dst. */
static void from_fortran(const npy_meta *m, size_t esize, const unsigned char *src, unsigned char *dst, int64_t numel)
{
    int64_t idx[CLG_MAX_DIMS] = {0}, fstride[CLG_MAX_DIMS];
    int64_t s = 1;
    for (int k = 0; k < m->ndim; k++) { fstride[k] = s; s *= m->shape[k]; }
    int64_t foff = 0;
    for (int64_t c = 0; c < numel; c++) {
        memcpy(dst + (size_t)c * esize, src + (size_t)foff * esize, esize);
        for (int k = m->ndim - 1; k >= 0; k--) {   /* next row-major index */
            foff += fstride[k];
            if (++idx[k] < m->shape[k]) break;
            foff -= idx[k] * fstride[k];
            idx[k] = 0;
        }
    }
}

clg_status clg__npy_parse(const unsigned char *buf, size_t len, const char *name, clg_host_array *out, char *err,
                          size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6))
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "not a .npy file (no \\x93NUMPY magic)");
    int major = buf[6], minor = buf[7];
    if (major < 1 || major > 3 || minor != 0)
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, ".npy version %d.%d is not supported", major, minor);
    size_t pre = major == 1 ? 10 : 12;
    if (len < pre) return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "truncated in the header length");
    size_t hl = major == 1 ? (size_t)buf[8] | (size_t)buf[9] << 8
                           : (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
    if (hl > NPY_HEADER_MAX)
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "header of %zu bytes (at most %d)", hl, NPY_HEADER_MAX);
    if (len - pre < hl)
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "truncated: header of %zu bytes, file ends after %zu",
                              hl, len - pre);
    hdr h = {(const char *)buf + pre, (const char *)buf + pre + hl, name, err, errlen};
    npy_meta m = {0};
    clg_status st = parse_dict(&h, &m);
    if (st) return st;
    int64_t bytes = clg__checked_bytes(m.ndim, m.shape, clg_elem_size(m.type));
    size_t have = len - pre - hl;
    if (bytes < 0 || (uint64_t)bytes > have)
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name,
                              "truncated: the header's shape needs %lld bytes of data, the file holds %zu",
                              (long long)bytes, have);
    if ((uint64_t)bytes < have)
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "%zu bytes after the data", have - (size_t)bytes);
    st = clg__host_array_alloc(out, m.type, m.ndim, m.shape, name, err, errlen);
    if (st) return st;
    const unsigned char *data = buf + pre + hl;
    if (m.fortran && m.ndim > 1)
        from_fortran(&m, clg_elem_size(m.type), data, out->data, clg_host_array_numel(out));
    else if (bytes)
        memcpy(out->data, data, (size_t)bytes);
    return CLG_OK;
}

static const char *descr_of(clg_elem_type t)
{
    static const char *const d[] = {"|u1", "<i4", "<i8", "<f4", "<f8"};   /* up to CLG_ELEM_F64 */
    if (t == CLG_ELEM_F16) return "<f2";   /* NumPy's float16 is IEEE binary16; it has no bfloat16 */
    return (unsigned)t <= CLG_ELEM_F64 ? d[t] : NULL;
}

clg_status clg__npy_format(const clg_host_array *a, const char *name, unsigned char **out, size_t *outlen,
                           char *err, size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    const char *descr = descr_of(a->type);
    if (!descr && (unsigned)a->type < CLG_ELEM_COUNT)
        return clg__data_fail(err, errlen, CLG_ERR_DTYPE, name, "%s arrays are not written as .npy here (uint8, "
                              "int32, int64, float16, float32, float64 are)", clg_elem_name(a->type));
    int64_t bytes = a->ndim >= 0 && a->ndim <= CLG_MAX_DIMS ? clg__checked_bytes(a->ndim, a->shape, clg_elem_size(a->type)) : -1;
    if (!descr || bytes < 0 || (size_t)bytes != a->bytes || (bytes && !a->data))
        return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, name,
                              "the array's type, shape and byte count do not agree");
    char h[512];
    int n = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < a->ndim; i++)
        n += snprintf(h + n, sizeof h - (size_t)n, "%lld%s", (long long)a->shape[i],
                      a->ndim == 1 ? "," : i + 1 < a->ndim ? ", " : "");
    n += snprintf(h + n, sizeof h - (size_t)n, "), }");
    size_t total_hdr = ((10 + (size_t)n + 1 + 63) / 64) * 64;   /* magic..header..'\n', 64-aligned */
    size_t hl = total_hdr - 10;
    unsigned char *buf = malloc(total_hdr + (size_t)bytes);
    if (!buf) return clg__data_fail(err, errlen, CLG_ERR_OUT_OF_MEMORY, name, "out of memory");
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(hl & 0xff);
    buf[9] = (unsigned char)(hl >> 8);
    memcpy(buf + 10, h, (size_t)n);
    memset(buf + 10 + n, ' ', hl - (size_t)n - 1);
    buf[total_hdr - 1] = '\n';
    if (bytes) memcpy(buf + total_hdr, a->data, (size_t)bytes);
    *out = buf;
    *outlen = total_hdr + (size_t)bytes;
    return CLG_OK;
}
