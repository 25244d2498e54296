/* model_layers.c: a layer of a model file: its kind (looked up in the registry,
 * model_kind.h), its name and its settings. Each kind lists its settings once (key, type,
 * range, default), and parsing, the canonical form and the settings text all come from
 * that list, so that they cannot disagree. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "model_kind.h"

static bool set_defaults_and_keys(model_ctx *c, json_t *o, model_layer *l, char *allowed, size_t cap)
{
    snprintf(allowed, cap, "type, name, inputs");
    for (const model_setting *s = l->kind->settings; s->key; s++) {
        size_t n = strlen(allowed);
        snprintf(allowed + n, cap - n, ", %s", s->key);
        void *p = (char *)l + s->off;
        if (s->type == OPT_PAIR) ((int64_t *)p)[0] = ((int64_t *)p)[1] = isnan(s->def) ? 0 : (int64_t)s->def;
        else if (s->type == OPT_INT) *(int64_t *)p = isnan(s->def) ? 0 : (int64_t)s->def;
        else if (s->type == OPT_REAL) *(double *)p = s->def;
        else *(bool *)p = s->def != 0;
        if (isnan(s->def) && !(o && json_object_get(o, s->key)))
            return model_fail(c, false, "missing \"%s\" (%s needs it)", s->key, l->kind->name);
    }
    return o ? model_check_keys(c, o, allowed) : true;
}

static bool read_opts(model_ctx *c, json_t *o, model_layer *l)
{
    bool ok = true;
    for (const model_setting *s = l->kind->settings; ok && s->key; s++) {
        void *p = (char *)l + s->off;
        if (s->type == OPT_PAIR) ok = model_get_pair(c, o, s->key, (int64_t)s->lo, (int64_t)s->hi, p);
        else if (s->type == OPT_INT) ok = model_get_int(c, o, s->key, (int64_t)s->lo, (int64_t)s->hi, p);
        else if (s->type == OPT_REAL) ok = model_get_real(c, o, s->key, s->lo, s->hi, p);
        else ok = model_get_bool(c, o, s->key, p);
    }
    return ok;
}

static bool parse_name(model_ctx *c, json_t *o, model_layer *l)
{
    json_t *n = json_object_get(o, "name");
    if (!n) return true;
    const char *s = json_is_string(n) ? json_string_value(n) : "";
    bool ok = (s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')) &&
              strlen(s) < MODEL_NAME_MAX && strlen(s) == json_string_length(n);
    for (const char *p = s; ok && *p; p++)
        ok = *p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
    char got[64];
    if (!ok) {
        model_push_key(c, "name");
        model_fail(c, false, "must be a letter or '_' then letters, digits or '_', at most %d characters, got %s",
                   MODEL_NAME_MAX - 1, model_show(n, got, sizeof got));
        model_pop(c);
        return false;
    }
    snprintf(l->name, sizeof l->name, "%s", s);
    return true;
}

bool model_parse_layer(model_ctx *c, json_t *v, model_layer *l)
{
    char got[64], allowed[256];
    json_t *type = json_is_string(v) ? v : json_object_get(v, "type");
    if (!json_is_object(v) && !json_is_string(v))
        return model_fail(c, false, "a layer is an object {\"type\": ...} or a type name, got %s",
                          model_show(v, got, sizeof got));
    if (!type) return model_fail(c, false, "missing \"type\" (one of: %s)", model_kind_list());
    l->kind = model_kind_find(json_string_value(type));
    if (!l->kind) {
        if (json_is_object(v)) model_push_key(c, "type");
        model_fail(c, false, "unknown layer type %s (allowed: %s)", model_show(type, got, sizeof got),
                   model_kind_list());
        if (json_is_object(v)) model_pop(c);
        return false;
    }
    json_t *o = json_is_object(v) ? v : NULL;
    if (!set_defaults_and_keys(c, o, l, allowed, sizeof allowed)) return false;
    if (!o) return true;
    return read_opts(c, o, l) && parse_name(c, o, l);
}

json_t *model_layer_json(const model_layer *l)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string(l->kind->name));
    if (!(l->name[0] >= '0' && l->name[0] <= '9')) json_object_set_new(o, "name", json_string(l->name));
    for (const model_setting *s = l->kind->settings; s->key; s++) {
        const void *p = (const char *)l + s->off;
        json_t *v;
        if (s->type == OPT_PAIR)
            v = json_pack("[II]", (json_int_t)((const int64_t *)p)[0], (json_int_t)((const int64_t *)p)[1]);
        else if (s->type == OPT_INT) v = json_integer(*(const int64_t *)p);
        else if (s->type == OPT_REAL) v = json_real(*(const double *)p);
        else v = json_boolean(*(const bool *)p);
        json_object_set_new(o, s->key, v);
    }
    return o;
}

void model_layer_settings(const model_layer *l, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (const model_setting *s = l->kind->settings; s->key && n < len; s++) {
        const void *p = (const char *)l + s->off;
        const int64_t *i = p;
        int w = s->type == OPT_PAIR  ? snprintf(buf + n, len - n, "%s%s=[%lld, %lld]", n ? ", " : "", s->key,
                                                (long long)i[0], (long long)i[1])
                : s->type == OPT_INT ? snprintf(buf + n, len - n, "%s%s=%lld", n ? ", " : "", s->key, (long long)*i)
                : s->type == OPT_REAL ? snprintf(buf + n, len - n, "%s%s=%g", n ? ", " : "", s->key, *(const double *)p)
                                      : snprintf(buf + n, len - n, "%s%s=%s", n ? ", " : "", s->key,
                                                 *(const bool *)p ? "true" : "false");
        if (w < 0) break;
        n += (size_t)w;
    }
}
