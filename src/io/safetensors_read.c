/* safetensors_read.c: the validating reader. Nothing in a file is trusted until the
 * whole header has been checked against the rules at the top of clgrad/io.h; a
 * handle exists only for a valid file. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "last_error.h"
#include "st_format.h"

struct clg_safetensors {
    unsigned char *owned;        /* the file's bytes when the handle read them */
    char *name;
    int n;
    clg_safetensors_entry *tensors;      /* sorted by data offset */
    const clg_safetensors_entry **by_name;   /* sorted by name, for lookups */
    int nmeta;
    char **meta_keys, **meta_values;
};

static const struct {
    const char *name;
    size_t size;
} dtypes[CLG_ELEM_COUNT] = {
    [CLG_ELEM_BOOL] = {"BOOL", 1},       [CLG_ELEM_U8] = {"U8", 1},     [CLG_ELEM_I8] = {"I8", 1},
    [CLG_ELEM_F8_E5M2] = {"F8_E5M2", 1}, [CLG_ELEM_F8_E4M3] = {"F8_E4M3", 1},
    [CLG_ELEM_I16] = {"I16", 2},         [CLG_ELEM_U16] = {"U16", 2},   [CLG_ELEM_F16] = {"F16", 2},
    [CLG_ELEM_BF16] = {"BF16", 2},       [CLG_ELEM_I32] = {"I32", 4},   [CLG_ELEM_U32] = {"U32", 4},
    [CLG_ELEM_F32] = {"F32", 4},         [CLG_ELEM_F64] = {"F64", 8},   [CLG_ELEM_I64] = {"I64", 8},
    [CLG_ELEM_U64] = {"U64", 8},
};

const char *clg_safetensors_dtype_name(clg_elem_type d) { return (unsigned)d < CLG_ELEM_COUNT ? dtypes[d].name : "?"; }

void clg_safetensors_close(clg_safetensors *st)
{
    if (!st) return;
    for (int i = 0; i < st->n; i++) free((char *)st->tensors[i].name);
    for (int i = 0; i < st->nmeta; i++) {
        free(st->meta_keys[i]);
        free(st->meta_values[i]);
    }
    free(st->tensors);
    free(st->by_name);
    free(st->meta_keys);
    free(st->meta_values);
    free(st->owned);
    free(st->name);
    free(st);
}

/* ---- checks of one header entry ------------------------------------------------------------- */

typedef struct parse_ctx {
    const char *name;       /* the file, for messages */
    char *err;
    size_t errlen;
    size_t data_len;        /* bytes after the header */
} parse_ctx;

/* "<file>: <problem>" into the caller's buffer and the thread's last error. */
static clg_status fail_status(const parse_ctx *c, clg_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static clg_status fail_status(const parse_ctx *c, clg_status status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return clg__report(c->err, c->errlen, status, "%s: %s", c->name, msg);
}
#define FAIL(c, ...) fail_status((c), CLG_ERR_FORMAT, __VA_ARGS__)

/* A JSON value's kind, for messages. */
static const char *kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return json_integer_value(v) < 0 ? "a negative integer" : "an integer";
    case JSON_REAL: return "a number with a fraction or exponent";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* An exact non-negative integer: sizes and offsets are never written as 3.0 or 3e0. */
static bool natural(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

static clg_status parse_dtype(const parse_ctx *c, const char *tname, const json_t *v, clg_elem_type *out)
{
    if (!json_is_string(v)) return FAIL(c, "tensor \"%s\": dtype is %s, not a string", tname, kind(v));
    for (int d = 0; d < CLG_ELEM_COUNT; d++)
        if (!strcmp(json_string_value(v), dtypes[d].name)) {
            *out = (clg_elem_type)d;
            return CLG_OK;
        }
    return FAIL(c, "tensor \"%s\": unknown dtype \"%.40s\" (known: BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, "
                "F16, BF16, I32, U32, F32, F64, I64, U64)", tname, json_string_value(v));
}

static clg_status parse_shape(const parse_ctx *c, const char *tname, const json_t *v, clg_safetensors_entry *t)
{
    if (!json_is_array(v)) return FAIL(c, "tensor \"%s\": shape is %s, not an array", tname, kind(v));
    size_t rank = json_array_size(v);
    if (rank > CLG_MAX_DIMS)
        return FAIL(c, "tensor \"%s\": shape has %zu dimensions, more than the %d clgrad supports", tname, rank,
                    CLG_MAX_DIMS);
    uint64_t numel = 1;
    for (size_t i = 0; i < rank; i++) {
        const json_t *d = json_array_get(v, i);
        uint64_t s;
        if (!natural(d, &s))
            return FAIL(c, "tensor \"%s\": shape[%zu] is %s, not a non-negative integer", tname, i, kind(d));
        if (s != 0 && numel > (uint64_t)INT64_MAX / s)
            return FAIL(c, "tensor \"%s\": shape's element count overflows 2^63", tname);
        numel *= s;
        t->shape[i] = (int64_t)s;
    }
    t->ndim = (int)rank;
    t->numel = (int64_t)numel;
    return CLG_OK;
}

static clg_status parse_tensor(const parse_ctx *c, const char *tname, const json_t *v, clg_safetensors_entry *t,
                               uint64_t range[2])
{
    if (!json_is_object(v)) return FAIL(c, "tensor \"%s\" is %s, not an object", tname, kind(v));
    const char *key;
    json_t *field;
    json_object_foreach((json_t *)v, key, field) {
        if (strcmp(key, "dtype") && strcmp(key, "shape") && strcmp(key, "data_offsets"))
            return FAIL(c, "tensor \"%s\": unknown field \"%.40s\" (fields: dtype, shape, data_offsets)", tname, key);
    }
    const json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
                 *off = json_object_get(v, "data_offsets");
    if (!dt || !sh || !off)
        return FAIL(c, "tensor \"%s\": no %s", tname, !dt ? "dtype" : !sh ? "shape" : "data_offsets");
    clg_status st = parse_dtype(c, tname, dt, &t->dtype);
    if (!st) st = parse_shape(c, tname, sh, t);
    if (st) return st;
    if (!json_is_array(off) || json_array_size(off) != 2)
        return FAIL(c, "tensor \"%s\": data_offsets is %s, not an array of two integers", tname,
                    json_is_array(off) ? "an array of another length" : kind(off));
    for (int i = 0; i < 2; i++)
        if (!natural(json_array_get(off, (size_t)i), &range[i]))
            return FAIL(c, "tensor \"%s\": data_offsets[%d] is %s, not a non-negative integer", tname, i,
                        kind(json_array_get(off, (size_t)i)));
    if (range[1] < range[0])
        return FAIL(c, "tensor \"%s\": data_offsets [%llu, %llu] end before they begin", tname,
                    (unsigned long long)range[0], (unsigned long long)range[1]);
    size_t size = dtypes[t->dtype].size;
    if ((uint64_t)t->numel > UINT64_MAX / size)
        return FAIL(c, "tensor \"%s\": shape's byte count overflows", tname);
    uint64_t bytes = (uint64_t)t->numel * size;
    if (range[1] - range[0] != bytes)
        return FAIL(c, "tensor \"%s\": data_offsets [%llu, %llu] hold %llu bytes, but %lld elements of %s need %llu",
                    tname, (unsigned long long)range[0], (unsigned long long)range[1],
                    (unsigned long long)(range[1] - range[0]), (long long)t->numel, dtypes[t->dtype].name,
                    (unsigned long long)bytes);
    if (range[1] > c->data_len)
        return FAIL(c, "tensor \"%s\": data_offsets [%llu, %llu] lie beyond the %zu bytes of data the file holds "
                    "(truncated?)", tname, (unsigned long long)range[0], (unsigned long long)range[1], c->data_len);
    t->bytes = (size_t)bytes;
    return CLG_OK;
}

static clg_status parse_metadata(const parse_ctx *c, const json_t *v, clg_safetensors *st)
{
    if (json_is_null(v)) return CLG_OK;   /* the reference writes null for no metadata */
    if (!json_is_object(v)) return FAIL(c, "__metadata__ is %s, not an object of strings", kind(v));
    size_t n = json_object_size(v);
    st->meta_keys = calloc(n ? n : 1, sizeof(char *));
    st->meta_values = calloc(n ? n : 1, sizeof(char *));
    if (!st->meta_keys || !st->meta_values) return FAIL(c, "out of host memory");
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val) {
        if (!json_is_string(val))
            return FAIL(c, "__metadata__ \"%.80s\" is %s: metadata values must be strings", key, kind(val));
        int i = st->nmeta;
        st->meta_keys[i] = strdup(key);
        st->meta_values[i] = strdup(json_string_value(val));
        if (st->meta_keys[i] || st->meta_values[i]) st->nmeta++;
        if (!st->meta_keys[i] || !st->meta_values[i]) return FAIL(c, "out of host memory");
    }
    return CLG_OK;
}

/* ---- the layout of the data --------------------------------------------------------------------- */

typedef struct ranged {
    uint64_t begin, end;
    int index;
} ranged;

static int by_range(const void *a, const void *b)
{
    const ranged *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const clg_safetensors_entry *const *)a)->name, (*(const clg_safetensors_entry *const *)b)->name);
}

/* Sorted by offset, the ranges must tile [0, data_len) exactly: the reference's rule,
 * which leaves no byte of the file unaccounted for. */
static clg_status check_layout(const parse_ctx *c, ranged *r, int n, const clg_safetensors_entry *tensors)
{
    qsort(r, (size_t)n, sizeof *r, by_range);
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        const char *tn = tensors[r[i].index].name;
        if (r[i].begin < at)
            return FAIL(c, "tensor \"%s\": data_offsets [%llu, %llu] overlap those of \"%s\", which end at %llu", tn,
                        (unsigned long long)r[i].begin, (unsigned long long)r[i].end,
                        tensors[r[i - 1].index].name, (unsigned long long)at);
        if (r[i].begin > at)
            return FAIL(c, "tensor \"%s\": a gap of %llu unused bytes before its data_offsets [%llu, %llu]", tn,
                        (unsigned long long)(r[i].begin - at), (unsigned long long)r[i].begin,
                        (unsigned long long)r[i].end);
        at = r[i].end;
    }
    if (at != c->data_len)
        return FAIL(c, "%llu trailing bytes after the tensors' data (which ends at %llu of %zu)",
                    (unsigned long long)(c->data_len - at), (unsigned long long)at, c->data_len);
    return CLG_OK;
}

/* ---- the whole header ------------------------------------------------------------------------------ */

static clg_status parse_header(const parse_ctx *c, const json_t *root, const unsigned char *data,
                               clg_safetensors *st)
{
    size_t n = json_object_size(root);
    const json_t *meta = json_object_get(root, "__metadata__");
    if (meta) n--;
    if (n > (size_t)INT32_MAX) return FAIL(c, "too many tensors");
    st->tensors = calloc(n ? n : 1, sizeof *st->tensors);
    st->by_name = calloc(n ? n : 1, sizeof *st->by_name);
    ranged *r = calloc(n ? n : 1, sizeof *r);
    if (!st->tensors || !st->by_name || !r) {
        free(r);
        return FAIL(c, "out of host memory");
    }
    clg_status status = meta ? parse_metadata(c, meta, st) : CLG_OK;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)root, key, val) {
        if (status) break;
        if (!strcmp(key, "__metadata__")) continue;
        clg_safetensors_entry *t = &st->tensors[st->n];
        uint64_t range[2];
        status = parse_tensor(c, key, val, t, range);
        if (status) break;
        if (!(t->name = strdup(key))) {
            status = FAIL(c, "out of host memory");
            break;
        }
        r[st->n] = (ranged){range[0], range[1], st->n};
        t->data = data + range[0];
        st->n++;
    }
    if (!status) status = check_layout(c, r, st->n, st->tensors);
    if (!status) {
        /* Hand tensors out in the order of their data: the order they were written. */
        clg_safetensors_entry *sorted = malloc((size_t)(st->n ? st->n : 1) * sizeof *sorted);
        if (!sorted) {
            status = FAIL(c, "out of host memory");
        } else {
            for (int i = 0; i < st->n; i++) sorted[i] = st->tensors[r[i].index];
            free(st->tensors);
            st->tensors = sorted;
            for (int i = 0; i < st->n; i++) st->by_name[i] = &st->tensors[i];
            qsort(st->by_name, (size_t)st->n, sizeof *st->by_name, by_name);
        }
    }
    free(r);
    return status;
}

/* Whether the file's first 8 bytes are text, as a model file's or a CSV's: printable
 * or white space, none of them zero (a safetensors header length, at most 100 MB, has
 * its upper four bytes zero). */
static bool begins_with_text(const unsigned char *buf, size_t len)
{
    if (len < 8) return false;
    for (size_t i = 0; i < 8; i++) {
        bool space = buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t';
        if (!space && (buf[i] < 0x20 || buf[i] > 0x7e)) return false;
    }
    return true;
}

/* The file's first bytes as a quote: up to 24, runs of white space as one space. */
static const char *text_quote(const unsigned char *buf, size_t len, char *q, size_t qlen)
{
    size_t n = 0;
    for (size_t i = 0; i < len && i < 64 && n + 1 < qlen && n < 24; i++) {
        bool space = buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t';
        if (space && (n == 0 || q[n - 1] == ' ')) continue;
        if (!space && (buf[i] < 0x20 || buf[i] > 0x7e)) break;
        q[n++] = space ? ' ' : (char)buf[i];
    }
    q[n] = '\0';
    return q;
}

clg_status clg__st_parse(unsigned char *buf, size_t len, bool owned, const char *name, clg_safetensors **out,
                         char *err, size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    parse_ctx c = {name ? name : "(memory)", err, errlen, 0};
    if (!out) {
        if (owned) free(buf);
        return FAIL(&c, "no output handle");
    }
    *out = NULL;
    clg_safetensors *st = calloc(1, sizeof *st);
    if (!st || !(st->name = strdup(c.name))) {
        free(st);
        if (owned) free(buf);
        return FAIL(&c, "out of host memory");
    }
    if (owned) st->owned = buf;
    clg_status status = CLG_OK;
    uint64_t hlen = 0;
    if (!buf && len) {
        status = FAIL(&c, "no bytes given");
    } else if (len < 8) {
        status = FAIL(&c, "not a safetensors file: %zu bytes, too short for the 8-byte header length", len);
    } else if (begins_with_text(buf, len)) {   /* a JSON model file, a CSV, a script... */
        char q[32];
        status = FAIL(&c, "not a safetensors file: it begins with text (%s...)", text_quote(buf, len, q, sizeof q));
    } else {
        for (int i = 7; i >= 0; i--) hlen = hlen << 8 | buf[i];
        if (hlen > CLG_SAFETENSORS_MAX_HEADER)
            status = FAIL(&c, "not a safetensors file: header length %llu is over the limit of %d bytes",
                          (unsigned long long)hlen, CLG_SAFETENSORS_MAX_HEADER);
        else if (hlen > len - 8)
            status = FAIL(&c, "not a whole safetensors file (truncated?): header length %llu runs past the end of the "
                          "file (%zu bytes after the length)", (unsigned long long)hlen, len - 8);
        else if (hlen == 0 || buf[8] != '{')
            status = FAIL(&c, "not a safetensors file: the header does not start with '{'");
    }
    if (!status) {
        /* Bound the parse before it starts: every tensor is a JSON object, opened by a '{'
         * that no escape can hide, so counting the braces in the raw text (a linear scan)
         * bounds the count of tensors (the header's own brace is one more). */
        size_t entries = 0;
        const unsigned char *p = buf + 8, *end = p + hlen;
        while ((p = memchr(p, '{', (size_t)(end - p))) != NULL && ++entries <= CLG_SAFETENSORS_MAX_TENSORS + 1) p++;
        if (entries > CLG_SAFETENSORS_MAX_TENSORS + 1)
            status = FAIL(&c, "more than %d tensors in the header: over the limit", CLG_SAFETENSORS_MAX_TENSORS);
    }
    if (!status) {
        c.data_len = len - 8 - (size_t)hlen;
        json_error_t jerr;
        json_t *root = json_loadb((const char *)buf + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
        if (!root)
            status = FAIL(&c, "the header is not valid JSON: %s (header line %d, column %d)", jerr.text, jerr.line,
                          jerr.column);
        else if (!json_is_object(root))
            status = FAIL(&c, "the header is %s, not an object", kind(root));
        else
            status = parse_header(&c, root, buf + 8 + hlen, st);
        json_decref(root);
    }
    if (status) {
        clg_safetensors_close(st);
        return status;
    }
    *out = st;
    return CLG_OK;
}

clg_status clg_safetensors_parse(const void *bytes, size_t len, const char *name, clg_safetensors **out, char *err,
                                 size_t errlen)
{
    return clg__st_parse((unsigned char *)bytes, len, false, name, out, err, errlen);
}

clg_status clg_safetensors_open(const char *path, clg_safetensors **out, char *err, size_t errlen)
{
    if (out) *out = NULL;
    parse_ctx c = {path ? path : "(null)", err, errlen, 0};
    if (!path || !out) return fail_status(&c, CLG_ERR_INVALID_ARGUMENT, "no path or no output handle");
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);   /* a FIFO must not block the open */
    if (fd < 0) return fail_status(&c, CLG_ERR_IO, "cannot open: %s", strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int saved = errno;
        close(fd);
        return fail_status(&c, CLG_ERR_IO, "cannot stat: %s", strerror(saved));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return fail_status(&c, CLG_ERR_IO, "%s", S_ISDIR(sb.st_mode) ? "is a directory" : "not a regular file");
    }
    size_t len = (size_t)sb.st_size;
    unsigned char *buf = malloc(len ? len : 1);
    if (!buf) {
        close(fd);
        return fail_status(&c, CLG_ERR_OUT_OF_MEMORY, "out of host memory for its %zu bytes", len);
    }
    size_t got = 0;
    errno = 0;
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    int saved = errno;
    close(fd);
    if (got != len) {
        free(buf);
        return fail_status(&c, CLG_ERR_IO, "read %zu of its %zu bytes: %s", got, len,
                            saved ? strerror(saved) : "it shrank while being read");
    }
    return clg__st_parse(buf, len, true, path, out, err, errlen);
}

/* ---- the handle ---------------------------------------------------------------------------------------- */

const char *clg__st_name(const clg_safetensors *st) { return st ? st->name : "(null)"; }
int clg_safetensors_count(const clg_safetensors *st) { return st ? st->n : 0; }
int clg_safetensors_meta_count(const clg_safetensors *st) { return st ? st->nmeta : 0; }

const clg_safetensors_entry *clg_safetensors_at(const clg_safetensors *st, int i)
{
    return st && i >= 0 && i < st->n ? &st->tensors[i] : NULL;
}

const clg_safetensors_entry *clg_safetensors_find(const clg_safetensors *st, const char *name)
{
    if (!st || !name) return NULL;
    clg_safetensors_entry key = {.name = name};
    const clg_safetensors_entry *kp = &key;
    const clg_safetensors_entry **hit = bsearch(&kp, st->by_name, (size_t)st->n, sizeof *st->by_name, by_name);
    return hit ? *hit : NULL;
}

const char *clg_safetensors_meta(const clg_safetensors *st, const char *key)
{
    for (int i = 0; st && key && i < st->nmeta; i++)
        if (!strcmp(st->meta_keys[i], key)) return st->meta_values[i];
    return NULL;
}

bool clg_safetensors_meta_at(const clg_safetensors *st, int i, const char **key, const char **value)
{
    if (!st || i < 0 || i >= st->nmeta) return false;
    if (key) *key = st->meta_keys[i];
    if (value) *value = st->meta_values[i];
    return true;
}
