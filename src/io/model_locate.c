/* model_locate.c: where a value lies in the model file's text. jansson reports
 * positions only for syntax errors; for a value that parses but is wrong (a kernel of
 * 0), this walks the already-validated text along the key path to the value, so that
 * every message can give line and column. It only skips over JSON, never interprets
 * it, and stops at the deepest part of the path it finds. */
#include <string.h>

#include "model_impl.h"

static size_t skip_ws(const char *t, size_t n, size_t i)
{
    while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) i++;
    return i;
}

/* i at the opening quote; returns the index after the closing one. */
static size_t skip_string(const char *t, size_t n, size_t i)
{
    for (i++; i < n && t[i] != '"'; i++)
        if (t[i] == '\\') i++;
    return i < n ? i + 1 : n;
}

/* Skip one value (a string, a number or literal, or a nested object or array). */
static size_t skip_value(const char *t, size_t n, size_t i)
{
    if (i < n && t[i] == '"') return skip_string(t, n, i);
    if (i < n && (t[i] == '{' || t[i] == '[')) {
        int depth = 0;
        for (; i < n; i++) {
            if (t[i] == '"') i = skip_string(t, n, i) - 1;
            else if (t[i] == '{' || t[i] == '[') depth++;
            else if ((t[i] == '}' || t[i] == ']') && --depth == 0) return i + 1;
        }
        return n;
    }
    while (i < n && !strchr(",}] \t\r\n", t[i])) i++;
    return i;
}

/* In the object at i, the member `key`: its key's and value's offsets. */
static bool find_key(const char *t, size_t n, size_t i, const char *key, size_t *kpos, size_t *vpos)
{
    size_t klen = strlen(key);
    if (i >= n || t[i] != '{') return false;
    for (i = skip_ws(t, n, i + 1); i < n && t[i] == '"';) {
        size_t start = i, end = skip_string(t, n, i);
        i = skip_ws(t, n, end);
        if (i >= n || t[i] != ':') return false;
        i = skip_ws(t, n, i + 1);
        if (end - start == klen + 2 && !memcmp(t + start + 1, key, klen)) {
            *kpos = start;
            *vpos = i;
            return true;
        }
        i = skip_ws(t, n, skip_value(t, n, i));
        if (i < n && t[i] == ',') i = skip_ws(t, n, i + 1);
    }
    return false;
}

/* In the array at i, element `index`: its offset. */
static bool find_index(const char *t, size_t n, size_t i, int index, size_t *vpos)
{
    if (i >= n || t[i] != '[') return false;
    i = skip_ws(t, n, i + 1);
    for (int k = 0; i < n && t[i] != ']'; k++) {
        if (k == index) {
            *vpos = i;
            return true;
        }
        i = skip_ws(t, n, skip_value(t, n, i));
        if (i < n && t[i] == ',') i = skip_ws(t, n, i + 1);
    }
    return false;
}

size_t model_locate(const char *text, size_t len, const model_path *p, bool at_key)
{
    if (!text) return 0;
    size_t at = skip_ws(text, len, 0);
    int depth = p->depth < MODEL_PATH_MAX ? p->depth : MODEL_PATH_MAX;
    for (int d = 0; d < depth; d++) {
        size_t kpos = at, vpos = at;
        bool found = p->c[d].key ? find_key(text, len, at, p->c[d].key, &kpos, &vpos)
                                 : find_index(text, len, at, p->c[d].index, &vpos);
        if (!found) break;
        at = at_key && d == depth - 1 ? kpos : vpos;
    }
    return at;
}
