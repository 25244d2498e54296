/* csv.c: numeric CSV with one integer label column. Two passes over the text: the
 * first counts rows and checks the shape, the second converts, so the arrays are
 * allocated once at their final size. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data_impl.h"

#define FIELD_MAX 64

typedef struct csv {
    const char *p, *end;
    int64_t line;     /* 1-based, of the line at p */
    const char *name;
    char *err;
    size_t errlen;
} csv;

/* The next line with something on it: [*b, *e) without the newline and any \r. */
static bool next_line(csv *c, const char **b, const char **e)
{
    while (c->p < c->end) {
        const char *s = c->p, *nl = memchr(s, '\n', (size_t)(c->end - s));
        const char *t = nl ? nl : c->end;
        c->p = nl ? nl + 1 : c->end;
        c->line++;
        while (t > s && (t[-1] == '\r' || t[-1] == ' ' || t[-1] == '\t')) t--;
        if (t > s) {
            *b = s;
            *e = t;
            return true;
        }
    }
    return false;
}

/* Field text without surrounding blanks into f (NUL-terminated); false when too long. */
static bool field_text(const char *s, const char *e, char *f)
{
    while (s < e && (*s == ' ' || *s == '\t')) s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
    if (e - s >= FIELD_MAX) return false;
    memcpy(f, s, (size_t)(e - s));
    f[e - s] = 0;
    return true;
}

static bool parse_double(const char *f, double *v)
{
    if (!*f) return false;
    char *end;
    errno = 0;
    *v = strtod(f, &end);
    return *end == 0 && isfinite(*v);
}

static int count_fields(const char *b, const char *e)
{
    int n = 1;
    for (const char *q = b; q < e; q++) n += *q == ',';
    return n;
}

/* Does any field of the line fail to parse as a number? */
static bool looks_like_header(const char *b, const char *e)
{
    while (b <= e) {
        const char *comma = memchr(b, ',', (size_t)(e - b));
        const char *fe = comma ? comma : e;
        char f[FIELD_MAX];
        double v;
        if (!field_text(b, fe, f) || !parse_double(f, &v)) return true;
        b = fe + 1;
    }
    return false;
}

/* Parse one data row into feat (ncol - 1 floats) and *label. */
static clg_status parse_row(csv *c, const char *b, const char *e, int ncol, int lcol, float *feat, int32_t *label)
{
    for (int col = 0; col < ncol; col++) {
        const char *comma = col + 1 < ncol ? memchr(b, ',', (size_t)(e - b)) : NULL;
        const char *fe = comma ? comma : e;
        char f[FIELD_MAX];
        if (!field_text(b, fe, f))
            return clg__data_fail(c->err, c->errlen, CLG_ERR_FORMAT, c->name, "line %lld, column %d: field too long",
                                  (long long)c->line, col + 1);
        if (col == lcol) {
            char *end;
            errno = 0;
            long long v = f[0] ? strtoll(f, &end, 10) : -1;
            if (!f[0] || *end || errno || v < 0 || v > INT32_MAX)
                return clg__data_fail(c->err, c->errlen, CLG_ERR_FORMAT, c->name,
                                      "line %lld, column %d: label '%s' is not an integer in [0, 2^31)",
                                      (long long)c->line, col + 1, f);
            *label = (int32_t)v;
        } else {
            double v;
            if (!parse_double(f, &v))
                return clg__data_fail(c->err, c->errlen, CLG_ERR_FORMAT, c->name,
                                      "line %lld, column %d: '%s' is not a finite number", (long long)c->line,
                                      col + 1, f);
            *feat++ = (float)v;
        }
        b = fe + 1;
    }
    return CLG_OK;
}

/* Pass one: columns and data rows, checking every row's field count. */
static clg_status shape_pass(csv *c, int header, int *ncol, int64_t *rows, bool *skip_first)
{
    const char *b, *e;
    *rows = 0;
    *skip_first = false;
    if (!next_line(c, &b, &e)) return clg__data_fail(c->err, c->errlen, CLG_ERR_FORMAT, c->name, "no data rows");
    *ncol = count_fields(b, e);
    *skip_first = header == 1 || (header < 0 && looks_like_header(b, e));
    *rows = *skip_first ? 0 : 1;
    while (next_line(c, &b, &e)) {
        int n = count_fields(b, e);
        if (n != *ncol)
            return clg__data_fail(c->err, c->errlen, CLG_ERR_FORMAT, c->name,
                                  "line %lld has %d fields, the first line %d", (long long)c->line, n, *ncol);
        (*rows)++;
    }
    if (*rows == 0) return clg__data_fail(c->err, c->errlen, CLG_ERR_FORMAT, c->name, "no data rows");
    if (*ncol < 2)
        return clg__data_fail(c->err, c->errlen, CLG_ERR_FORMAT, c->name,
                              "%d column: needs a label column and at least one feature", *ncol);
    return CLG_OK;
}

/* The label in the last column, a header line detected. */
clg_csv_options clg_csv_defaults(void) { return (clg_csv_options){.label_column = -1, .header = -1}; }

clg_status clg__csv_parse(const char *buf, size_t len, const char *name, const clg_csv_options *opts,
                          clg_host_array *features, clg_host_array *labels, char *err, size_t errlen)
{
    memset(features, 0, sizeof *features);
    memset(labels, 0, sizeof *labels);
    clg_csv_options o = opts ? *opts : clg_csv_defaults();
    csv c = {buf, buf + len, 0, name, err, errlen};
    int ncol = 0;
    int64_t rows = 0;
    bool skip_first;
    clg_status st = shape_pass(&c, o.header, &ncol, &rows, &skip_first);
    if (st) return st;
    int lcol = o.label_column < 0 ? ncol + o.label_column : o.label_column;
    if (lcol < 0 || lcol >= ncol)
        return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, name, "label column %d of %d columns",
                              o.label_column, ncol);
    st = clg__host_array_alloc(features, CLG_ELEM_F32, 2, (const int64_t[]){rows, ncol - 1}, name, err, errlen);
    if (!st) st = clg__host_array_alloc(labels, CLG_ELEM_I32, 1, &rows, name, err, errlen);
    c = (csv){buf, buf + len, 0, name, err, errlen};
    const char *b, *e;
    if (!st && skip_first) next_line(&c, &b, &e);
    for (int64_t r = 0; !st && r < rows && next_line(&c, &b, &e); r++)
        st = parse_row(&c, b, e, ncol, lcol, (float *)features->data + r * (ncol - 1), (int32_t *)labels->data + r);
    if (st) {
        clg_host_array_free(features);
        clg_host_array_free(labels);
    }
    return st;
}

clg_status clg_csv_read(const char *path, const clg_csv_options *opts, clg_host_array *features,
                        clg_host_array *labels, char *err, size_t errlen)
{
    if (!features || !labels) return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, path, "no output arrays");
    memset(features, 0, sizeof *features);
    memset(labels, 0, sizeof *labels);
    unsigned char *buf;
    size_t len;
    clg_status st = clg__read_file(path, &buf, &len, err, errlen);
    if (st) return st;
    if (memchr(buf, 0, len))
        st = clg__data_fail(err, errlen, CLG_ERR_FORMAT, path, "a NUL byte: not a text file");
    else
        st = clg__csv_parse((const char *)buf, len, path, opts, features, labels, err, errlen);
    free(buf);
    return st;
}
