/* model_shape.c: what the kinds' shape functions share: sizes counted against the caps
 * (MODEL_MAX_NUMEL, checked as products grow, so that no file can overflow them), shapes
 * as text for messages, and the check of an input's number of axes. */
#include <stdio.h>

#include "model_kind.h"

int64_t model_numel(int ndim, const int64_t *s)
{
    int64_t n = 1;
    for (int i = 0; i < ndim && n <= MODEL_MAX_NUMEL; i++) n *= s[i];
    return n;
}

const char *model_shape_text(int ndim, const int64_t *s, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)s[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
    return buf;
}

bool model_product(int64_t *out, int n, const int64_t *f)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        p *= f[i];
        if (p > MODEL_MAX_NUMEL) return false;
    }
    *out = p;
    return true;
}

bool model_need_axes(model_ctx *c, const model_layer *l, int ndim, const int64_t *in, int lo, int hi, const char *what)
{
    if (ndim >= lo && ndim <= hi) return true;
    char s[160];
    return model_fail(c, false, "%s takes %s, got an input of shape %s", l->kind->name, what,
                      model_shape_text(ndim, in, s, sizeof s));
}
