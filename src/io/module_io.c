/* module_io.c: a model's parameters and buffers to and from safetensors, by their
 * state_dict names, and the report of what matched. */
#include <stdlib.h>
#include <string.h>

#include "io_impl.h"
#include "nn_impl.h"

/* ---- reports ----------------------------------------------------------------------------------- */

void clg_load_report_free(clg_load_report *r)
{
    if (!r) return;
    for (int i = 0; i < r->nmissing; i++) free(r->missing[i]);
    for (int i = 0; i < r->nunexpected; i++) free(r->unexpected[i]);
    for (int i = 0; i < r->nmismatched; i++) free(r->mismatched[i]);
    free(r->missing);
    free(r->unexpected);
    free(r->mismatched);
    memset(r, 0, sizeof *r);
}

static bool add_line(char ***list, int *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool add_line(char ***list, int *n, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char **grown = realloc(*list, (size_t)(*n + 1) * sizeof **list);
    if (!grown) return false;
    *list = grown;
    if (!(grown[*n] = strdup(line))) return false;
    (*n)++;
    return true;
}

/* Appends s to buf (holding *at bytes of len), truncating. */
static void append(char *buf, size_t len, size_t *at, const char *s)
{
    if (*at + 1 >= len) return;
    int n = snprintf(buf + *at, len - *at, "%s", s);
    if (n > 0) *at = *at + (size_t)n < len ? *at + (size_t)n : len - 1;
}

static void append_list(char *buf, size_t len, size_t *at, const char *what, char *const *lines, int n,
                        const char *sep)
{
    for (int i = 0; i < n; i++) {
        if (*at) append(buf, len, at, sep);
        append(buf, len, at, what);
        append(buf, len, at, lines[i]);
    }
}

const char *clg_load_report_text(const clg_load_report *r, char *buf, size_t len)
{
    if (!buf || !len) return buf;
    buf[0] = '\0';
    if (!r) return buf;
    size_t at = 0;
    append_list(buf, len, &at, "missing: ", r->missing, r->nmissing, "\n");
    append_list(buf, len, &at, "unexpected: ", r->unexpected, r->nunexpected, "\n");
    append_list(buf, len, &at, "mismatched: ", r->mismatched, r->nmismatched, "\n");
    return buf;
}

/* ---- matching ---------------------------------------------------------------------------------- */

static clg_status oom(const clg__io_err *e) { return clg__io_fail(e, CLG_ERR_OUT_OF_MEMORY, "out of host memory"); }

/* Compare the model's state with the file's tensors, line by line into r; *ok gets,
 * per model entry, the file tensor to load (NULL when it is not to be loaded). */
static clg_status compare(const clg_named_tensor *state, int n, const clg_module *m, const clg_safetensors *st,
                          clg_load_report *r, const clg_safetensors_entry **ok, const clg__io_err *e)
{
    char a[200], b[200];
    for (int i = 0; i < n; i++) {
        const clg_tensor *mt = state[i].tensor;
        const clg_safetensors_entry *ft = clg_safetensors_find(st, state[i].name);
        ok[i] = NULL;
        snprintf(b, sizeof b, "%s", CLG_DESC(mt));
        if (!ft) {
            if (!add_line(&r->missing, &r->nmissing, "%s: model %s", state[i].name, b)) return oom(e);
            continue;
        }
        clg__st_desc(ft, a, sizeof a);
        if (!clg__st_matches(ft, mt->dtype, mt->ndim, mt->shape)) {
            if (!add_line(&r->mismatched, &r->nmismatched, "%s: file %s, model %s", state[i].name, a, b))
                return oom(e);
            continue;
        }
        char why[512];
        clg__io_err quiet = {NULL, why, sizeof why, ""};
        if (!clg__st_values_fit(ft, mt->dtype, &quiet)) {
            if (!add_line(&r->mismatched, &r->nmismatched, "%s: file %s, model %s:%s", state[i].name, a, b, why))
                return oom(e);
            continue;
        }
        ok[i] = ft;
    }
    for (int i = 0; i < clg_safetensors_count(st); i++) {
        const clg_safetensors_entry *ft = clg_safetensors_at(st, i);
        if (!strncmp(ft->name, CLG_OPTIM_PREFIX, strlen(CLG_OPTIM_PREFIX)) || clg_module_find(m, ft->name)) continue;
        if (!add_line(&r->unexpected, &r->nunexpected, "%s: file %s", ft->name, clg__st_desc(ft, a, sizeof a)))
            return oom(e);
    }
    return CLG_OK;
}

clg_status clg__module_match(clg_module *m, const clg_safetensors *st, bool strict, bool apply,
                             clg_load_report *report, const clg__io_err *e)
{
    clg_load_report local = {0};
    clg_load_report *r = report ? report : &local;
    clg_load_report_free(r);   /* callers pass it zeroed; a second match starts afresh */
    int n = clg_module_state(m, NULL, 0);
    clg_named_tensor *state = malloc((size_t)(n ? n : 1) * sizeof *state);
    const clg_safetensors_entry **ok = malloc((size_t)(n ? n : 1) * sizeof *ok);
    clg_status status = state && ok ? CLG_OK : oom(e);
    if (!status) {
        clg_module_state(m, state, n);
        status = compare(state, n, m, st, r, ok, e);
    }
    int problems = r->nmissing + r->nunexpected + r->nmismatched;
    if (!status && strict && problems) {
        char text[CLG_ERROR_MAX - 512];
        clg_load_report_text(r, text, sizeof text);
        status = clg__io_fail(e, CLG_ERR_FORMAT, "does not match the model (%d missing, %d unexpected, %d mismatched; "
                              "nothing was loaded):\n%s", r->nmissing, r->nunexpected, r->nmismatched, text);
    }
    for (int i = 0; !status && apply && i < n; i++) {
        if (!ok[i]) continue;
        status = clg__st_copy_into(ok[i], state[i].tensor, e);
        if (!status) r->loaded++;
    }
    free(state);
    free(ok);
    clg_load_report_free(&local);
    return status;
}

/* ---- the public calls ------------------------------------------------------------------------------ */

/* The state tensor t as written with floats stored as `as`: t itself, or a cast of it
 * in the current scope; NULL with the error on the device. */
static const clg_tensor *stored_as(clg_tensor *t, clg_dtype as)
{
    clg_dtype d = clg_tensor_dtype(t);
    bool is_float = d == CLG_F32 || d == CLG_F64 || d == CLG_F16 || d == CLG_BF16;
    return !is_float || d == as ? t : clg_cast(t, as);
}

clg_status clg_module_save(const clg_module *m, const char *path, int nmeta, const clg_safetensors_pair *meta)
{
    return clg_module_save_as(m, path, CLG_DTYPE_COUNT, nmeta, meta);
}

clg_status clg_module_save_as(const clg_module *m, const char *path, clg_dtype floats, int nmeta,
                              const clg_safetensors_pair *meta)
{
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    clg__io_err e = {m->dev, NULL, 0, path ? path : "(null)"};
    if (nmeta < 0 || (nmeta > 0 && !meta)) return clg__io_fail(&e, CLG_ERR_INVALID_ARGUMENT, "bad metadata");
    if (floats != CLG_DTYPE_COUNT && floats != CLG_F32 && floats != CLG_F64 && floats != CLG_F16 && floats != CLG_BF16)
        return clg__io_fail(&e, CLG_ERR_DTYPE, "floats stored as %s: want float16, bfloat16, float32 or float64",
                            clg_dtype_name(floats));
    int n = clg_module_state(m, NULL, 0);
    clg_named_tensor *state = malloc((size_t)(n ? n : 1) * sizeof *state);
    clg__st_item *items = malloc((size_t)(n ? n : 1) * sizeof *items);
    clg_safetensors_pair *all = malloc((size_t)(nmeta + 1) * sizeof *all);
    clg_status st = state && items && all ? CLG_OK : oom(&e);
    clg_scope_begin(m->dev);   /* the casts, if any */
    if (!st) {
        clg_module_state(m, state, n);
        clg_no_grad_begin(m->dev);
        for (int i = 0; i < n && !st; i++) {
            const clg_tensor *t = floats == CLG_DTYPE_COUNT ? state[i].tensor : stored_as(state[i].tensor, floats);
            if (t) items[i] = clg__st_item_tensor(state[i].name, t);
            else st = clg__io_fail(&e, clg_device_last_status(m->dev), "%s as %s: %s", state[i].name,
                                   clg_dtype_name(floats), clg_device_error(m->dev));
        }
        clg_no_grad_end(m->dev);
    }
    if (!st) {
        /* "format": "pt" marks PyTorch layouts, which some readers (transformers) expect. */
        bool has_format = false;
        for (int i = 0; i < nmeta; i++) {
            all[i] = meta[i];
            if (meta[i].key && !strcmp(meta[i].key, "format")) has_format = true;
        }
        int total = nmeta;
        if (!has_format) all[total++] = (clg_safetensors_pair){"format", "pt"};
        st = clg__st_write(path, n, items, total, all, &e);
    }
    clg_scope_end(m->dev);
    free(state);
    free(items);
    free(all);
    return st;
}

clg_status clg_module_load(clg_module *m, const char *path, bool strict, clg_load_report *report)
{
    if (report) memset(report, 0, sizeof *report);
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    char err[1024];
    clg_safetensors *st;
    clg_status status = clg_safetensors_open(path, &st, err, sizeof err);
    if (status) return clg__fail(m->dev, status, "clg_module_load: %s", err);
    clg__io_err e = {m->dev, NULL, 0, path};
    status = clg__module_match(m, st, strict, true, report, &e);
    clg_safetensors_close(st);
    return status;
}
