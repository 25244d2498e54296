/* model_fields.c: typed fields of a model file and the messages when they are wrong.
 * Each message says where (file:line:column of the value), which key (as a path,
 * layers[3].kernel) and what would have been accepted. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "last_error.h"
#include "model_impl.h"

void model_push_key(model_ctx *c, const char *key)
{
    if (c->path.depth < MODEL_PATH_MAX) c->path.c[c->path.depth].key = key, c->path.c[c->path.depth].index = -1;
    c->path.depth++;
}

void model_push_index(model_ctx *c, int index)
{
    if (c->path.depth < MODEL_PATH_MAX) c->path.c[c->path.depth].key = NULL, c->path.c[c->path.depth].index = index;
    c->path.depth++;
}

void model_pop(model_ctx *c) { c->path.depth--; }

static void path_text(const model_path *p, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->depth && i < MODEL_PATH_MAX && n < len; i++) {
        int w = p->c[i].key ? snprintf(buf + n, len - n, "%s%s", i ? "." : "", p->c[i].key)
                            : snprintf(buf + n, len - n, "[%d]", p->c[i].index);
        if (w < 0) break;
        n += (size_t)w;
    }
}

void model_one_line(char *s)
{
    for (; *s; s++)   /* whatever bytes the file holds, and jansson quotes */
        if ((unsigned char)*s < 0x20) *s = '?';
}

bool model_fail(model_ctx *c, bool at_key, const char *fmt, ...)
{
    size_t off = model_locate(c->text, c->len, &c->path, at_key);
    int line = 1, col = 1;
    for (size_t i = 0; i < off && i < c->len; i++) {
        if (c->text[i] == '\n') line++, col = 1;
        else col++;
    }
    char path[256], msg[512], own[1024];
    path_text(&c->path, path, sizeof path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* the caller's buffer if given, and the thread's last error either way */
    char *err = c->err && c->errlen ? c->err : own;
    size_t len = c->err && c->errlen ? c->errlen : sizeof own;
    snprintf(err, len, "%s:%d:%d: %s%s%s", c->file, line, col, path, *path ? ": " : "", msg);
    model_one_line(err);
    clg__last_error_set(CLG_ERR_FORMAT, "%s", err);
    return false;
}

const char *model_show(const json_t *v, char *buf, size_t len)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!s) snprintf(buf, len, "(a value)");
    else if (strlen(s) > 40) snprintf(buf, len, "%.36s ...", s);
    else snprintf(buf, len, "%s", s);
    free(s);
    return buf;
}

/* Look up key; *found false when absent (the default stays). */
static json_t *member(model_ctx *c, json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (v) model_push_key(c, key);
    return v;
}

static bool done(model_ctx *c, bool ok)
{
    model_pop(c);
    return ok;
}

bool model_get_int(model_ctx *c, json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *v)
{
    json_t *j = member(c, o, key);
    if (!j) return true;
    char got[64];
    if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > hi)
        return done(c, model_fail(c, false, "must be an integer in [%lld, %lld], got %s", (long long)lo,
                                  (long long)hi, model_show(j, got, sizeof got)));
    *v = json_integer_value(j);
    return done(c, true);
}

bool model_get_real(model_ctx *c, json_t *o, const char *key, double lo, double hi, double *v)
{
    json_t *j = member(c, o, key);
    if (!j) return true;
    char got[64];
    double x = json_number_value(j);
    if (!json_is_number(j) || !(x >= lo && x <= hi))
        return done(c, model_fail(c, false, "must be a number in [%g, %g], got %s", lo, hi,
                                  model_show(j, got, sizeof got)));
    *v = x;
    return done(c, true);
}

bool model_get_bool(model_ctx *c, json_t *o, const char *key, bool *v)
{
    json_t *j = member(c, o, key);
    if (!j) return true;
    char got[64];
    if (!json_is_boolean(j))
        return done(c, model_fail(c, false, "must be true or false, got %s", model_show(j, got, sizeof got)));
    *v = json_is_true(j);
    return done(c, true);
}

bool model_get_pair(model_ctx *c, json_t *o, const char *key, int64_t lo, int64_t hi, int64_t v[2])
{
    json_t *j = member(c, o, key);
    if (!j) return true;
    json_t *a = json_is_array(j) && json_array_size(j) == 2 ? json_array_get(j, 0) : j;
    json_t *b = json_is_array(j) && json_array_size(j) == 2 ? json_array_get(j, 1) : j;
    bool ok = json_is_integer(a) && json_is_integer(b);
    for (int i = 0; ok && i < 2; i++) {
        json_int_t x = json_integer_value(i ? b : a);
        ok = x >= lo && x <= hi;
    }
    char got[64];
    if (!ok)
        return done(c, model_fail(c, false, "must be an integer in [%lld, %lld] or a pair [h, w] of them, got %s",
                                  (long long)lo, (long long)hi, model_show(j, got, sizeof got)));
    v[0] = json_integer_value(a);
    v[1] = json_integer_value(b);
    return done(c, true);
}

bool model_get_string(model_ctx *c, json_t *o, const char *key, char *v, size_t cap)
{
    json_t *j = member(c, o, key);
    if (!j) return true;
    char got[64];
    if (!json_is_string(j))
        return done(c, model_fail(c, false, "must be a string, got %s", model_show(j, got, sizeof got)));
    if (json_string_length(j) >= cap || strlen(json_string_value(j)) != json_string_length(j))
        return done(c, model_fail(c, false, "must be a string of at most %zu bytes without NUL", cap - 1));
    memcpy(v, json_string_value(j), json_string_length(j) + 1);
    return done(c, true);
}

static bool in_list(const char *list, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, key, n)) return true;
        p += len + (e ? 1 : 0);
        while (*p == ' ') p++;
    }
    return false;
}

bool model_check_keys(model_ctx *c, json_t *o, const char *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        if (in_list(allowed, key)) continue;
        model_push_key(c, key);
        char shown[48];
        snprintf(shown, sizeof shown, "%.40s", key);
        return done(c, model_fail(c, true, "unknown key \"%s\" (allowed: %s)", shown, allowed));
    }
    return true;
}

bool model_require(model_ctx *c, json_t *o, const char *key, const char *what)
{
    if (json_object_get(o, key)) return true;
    return model_fail(c, false, "missing \"%s\" (%s)", key, what);
}
