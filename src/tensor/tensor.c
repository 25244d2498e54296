/* tensor.c: tensor objects: creation over pooled buffers, references, scopes,
 * accessors, and the argument checks every op shares. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_impl.h"

/* ---- per-device state ------------------------------------------------------------------ */

static void unlink_scope(clg_tensor_state *s, clg_tensor *t)
{
    if (t->scope < 0) return;
    if (t->prev) t->prev->next = t->next;
    else s->heads[t->scope] = t->next;
    if (t->next) t->next->prev = t->prev;
    t->prev = t->next = NULL;
    t->scope = -1;
}

static void link_scope(clg_tensor_state *s, clg_tensor *t, int level)
{
    t->scope = level;
    t->prev = NULL;
    t->next = s->heads[level];
    if (t->next) t->next->prev = t;
    s->heads[level] = t;
}

static void release_level(clg_tensor_state *s, int level)
{
    while (s->heads[level]) {
        clg_tensor *t = s->heads[level];
        unlink_scope(s, t);
        clg__tensor_release(t);
    }
}

static void state_free(clg_device *dev, void *data)
{
    clg_tensor_state *s = data;
    (void)dev;
    for (int level = s->depth; level >= 0; level--) release_level(s, level);
    free(s);
}

clg_tensor_state *clg__tstate(clg_device *dev)
{
    clg_slot *slot = &dev->slots[CLG_SLOT_TENSOR];
    if (!slot->data) {
        clg_tensor_state *s = calloc(1, sizeof *s);
        if (!s) {
            clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "tensor state: out of host memory");
            return NULL;
        }
        slot->data = s;
        slot->free = state_free;
    }
    return slot->data;
}

/* ---- dtypes ------------------------------------------------------------------------------ */

size_t clg_dtype_size(clg_dtype d)
{
    switch (d) {
    case CLG_F64: return 8;
    case CLG_F16: case CLG_BF16: return 2;
    default: return 4;
    }
}

const char *clg_dtype_name(clg_dtype d)
{
    switch (d) {
    case CLG_F32: return "float32";
    case CLG_F64: return "float64";
    case CLG_I32: return "int32";
    case CLG_F16: return "float16";
    case CLG_BF16: return "bfloat16";
    default: return "unknown";
    }
}

bool clg__is_float(clg_dtype d) { return d == CLG_F32 || d == CLG_F64; }
bool clg__is_half(clg_dtype d) { return d == CLG_F16 || d == CLG_BF16; }

const char *clg__dtype_options(clg_dtype d)
{
    switch (d) {
    case CLG_F64: return "-DT=double -DCLG_F64";
    case CLG_I32: return "-DT=int -DCLG_I32";
    /* No kernel computes in these yet: a type that does not exist makes any program
     * built for them fail to compile, rather than compute on their bits as if floats.
     * Copies and conversions name their types themselves (copy.c, half.cl). */
    case CLG_F16: return "-DT=clg_float16_is_storage_only -DCLG_F16";
    case CLG_BF16: return "-DT=clg_bfloat16_is_storage_only -DCLG_BF16";
    default: return "-DT=float -DCLG_F32";
    }
}

const char *clg__dtype_options_ew(clg_dtype d)
{
    switch (d) {
    case CLG_F16: return "-DT=float -DCLG_F16_STORE";
    case CLG_BF16: return "-DT=float -DCLG_BF16_STORE";
    default: return clg__dtype_options(d);
    }
}

/* ---- creation and references -------------------------------------------------------------- */

void clg__contiguous_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

static clg_tensor *alloc_tensor(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape)
{
    clg_tensor_state *s = clg__tstate(dev);
    if (!s) return NULL;
    if (ndim < 0 || ndim > CLG_MAX_DIMS || (ndim && !shape))
        return clg__op_fail(dev, CLG_ERR_INVALID_ARGUMENT, "tensor", "%d axes (at most %d)", ndim, CLG_MAX_DIMS);
    if ((unsigned)dtype >= CLG_DTYPE_COUNT)
        return clg__op_fail(dev, CLG_ERR_DTYPE, "tensor", "unknown dtype %d", (int)dtype);
    if (dtype == CLG_F64 && !dev->info.fp64)
        return clg__op_fail(dev, CLG_ERR_DTYPE, "tensor", "float64 needs cl_khr_fp64, which %s lacks", dev->info.name);
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return clg__op_fail(dev, CLG_ERR_SHAPE, "tensor", "negative size %lld in axis %d", (long long)shape[d], d);
        if (shape[d] && numel > INT64_MAX / 16 / shape[d])
            return clg__op_fail(dev, CLG_ERR_OUT_OF_MEMORY, "tensor", "size overflows");
        numel *= shape[d];
    }
    clg_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "tensor: out of host memory");
        return NULL;
    }
    t->dev = dev;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
    t->numel = numel;
    t->refs = 1;
    t->scope = -1;
    link_scope(s, t, s->depth);
    s->live++;
    return t;
}

clg_tensor *clg__tensor_new(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape)
{
    bool kept;
    return clg__tensor_new_kept(dev, dtype, ndim, shape, 0, &kept);
}

clg_tensor *clg__tensor_new_kept(clg_device *dev, clg_dtype dtype, int ndim, const int64_t *shape, uint64_t keep,
                                 bool *kept)
{
    *kept = false;
    clg__programs_ahead(dev, dtype, NULL);
    clg_tensor *t = alloc_tensor(dev, dtype, ndim, shape);
    if (!t) return NULL;
    clg__contiguous_strides(ndim, shape, t->strides);
    t->buf = clg__buffer_alloc_kept(dev, (size_t)t->numel * clg_dtype_size(dtype), keep, kept);
    if (!t->buf) {
        char err[CLG_ERROR_MAX], desc[160];
        memcpy(err, dev->error, sizeof err);
        clg__tensor_desc(t, desc, sizeof desc);
        clg_tensor_free(t);
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "tensor %s: %.7000s", desc, err);
        return NULL;
    }
    return t;
}

clg_tensor *clg__tensor_view(clg_tensor *base, int ndim, const int64_t *shape, const int64_t *strides,
                             int64_t offset)
{
    clg_tensor *t = alloc_tensor(base->dev, base->dtype, ndim, shape);
    if (!t) return NULL;
    memcpy(t->strides, strides, (size_t)ndim * sizeof *strides);
    t->offset = offset;
    t->buf = base->buf;
    clg__buffer_retain(t->buf);
    return t;
}

clg_tensor *clg__tensor_on(clg_device *dev, clg_buffer *buf, clg_dtype dtype, int ndim, const int64_t *shape,
                           const int64_t *strides, int64_t offset)
{
    clg_tensor base = {.dev = dev, .buf = buf, .dtype = dtype};
    return clg__tensor_view(&base, ndim, shape, strides, offset);
}

void clg__tensor_unscope(clg_tensor *t)
{
    clg_tensor_state *s = t->dev->slots[CLG_SLOT_TENSOR].data;
    if (s) unlink_scope(s, t);
}

void clg__tensor_retain(clg_tensor *t)
{
    if (t) t->refs++;
}

void clg__tensor_release(clg_tensor *t)
{
    if (!t || --t->refs > 0) return;
    clg_tensor_state *s = t->dev->slots[CLG_SLOT_TENSOR].data;
    unlink_scope(s, t);
    clg_node *node = t->node;
    clg_tensor *grad = t->grad;
    for (clg_hook *h = t->hooks, *next; h; h = next) next = h->next, free(h);
    for (clg_post_hook *h = t->post_hooks, *next; h; h = next) next = h->next, free(h);
    clg__buffer_release(t->buf);
    s->live--;
    free(t);
    clg__node_free(node);      /* releases the inputs it held */
    clg__tensor_release(grad);
}

void clg_tensor_free(clg_tensor *t)
{
    if (!t) return;
    /* The caller's reference is the scope's: leaving the scope list gives it up. */
    if (t->scope >= 0) {
        clg__tensor_unscope(t);
        clg__tensor_release(t);
    }
}

clg_tensor *clg_tensor_keep(clg_tensor *t)
{
    if (!t) return NULL;
    clg_tensor_state *s = clg__tstate(t->dev);
    if (t->scope < 0) return t;
    int level = t->scope > 0 ? t->scope - 1 : 0;
    unlink_scope(s, t);
    link_scope(s, t, level);
    /* Its history stays behind (the inputs die with the scope), so a tensor made by an
     * op becomes what clg_detach makes: a leaf that requires no gradient. A leaf keeps
     * its requires_grad (a parameter made in a scope stays trainable). */
    if (t->node) {
        clg__node_free(t->node);
        t->node = NULL;
        t->requires_grad = false;
    }
    return t;
}

void clg_scope_begin(clg_device *dev)
{
    clg_tensor_state *s = dev ? clg__tstate(dev) : NULL;
    if (!s) return;
    if (s->depth + 1 >= CLG_MAX_SCOPES) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_scope_begin: more than %d nested scopes", CLG_MAX_SCOPES - 1);
        return;
    }
    s->depth++;
}

void clg_scope_end(clg_device *dev)
{
    clg_tensor_state *s = dev ? clg__tstate(dev) : NULL;
    if (!s || s->depth == 0) return;
    release_level(s, s->depth);
    s->depth--;
}

int clg_scope_depth(const clg_device *dev)
{
    const clg_tensor_state *s = dev ? dev->slots[CLG_SLOT_TENSOR].data : NULL;
    return s ? s->depth : 0;
}

int64_t clg_tensor_live_count(const clg_device *dev)
{
    const clg_tensor_state *s = dev ? dev->slots[CLG_SLOT_TENSOR].data : NULL;
    return s ? s->live : 0;
}

/* ---- accessors ------------------------------------------------------------------------------ */

int clg_tensor_ndim(const clg_tensor *t) { return t ? t->ndim : -1; }
const int64_t *clg_tensor_shape(const clg_tensor *t) { return t ? t->shape : NULL; }
const int64_t *clg_tensor_strides(const clg_tensor *t) { return t ? t->strides : NULL; }
int64_t clg_tensor_numel(const clg_tensor *t) { return t ? t->numel : -1; }
clg_dtype clg_tensor_dtype(const clg_tensor *t) { return t ? t->dtype : CLG_DTYPE_COUNT; }
clg_device *clg_tensor_device(const clg_tensor *t) { return t ? t->dev : NULL; }

int64_t clg_tensor_dim(const clg_tensor *t, int axis)
{
    if (!t) return -1;
    if (axis < 0) axis += t->ndim;
    return axis >= 0 && axis < t->ndim ? t->shape[axis] : -1;
}

bool clg_tensor_is_contiguous(const clg_tensor *t)
{
    if (!t) return false;
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != s) return false;
        s *= t->shape[d];
    }
    return true;
}

const char *clg_shape_str(int ndim, const int64_t *shape, char *buf, size_t len)
{
    size_t used = 0;
    if (!len) return buf;
    buf[0] = 0;
    used += (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < ndim && used < len; d++)
        used += (size_t)snprintf(buf + used, len - used, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (used < len) snprintf(buf + used, len - used, "]");
    return buf;
}

const char *clg__tensor_desc(const clg_tensor *t, char *buf, size_t len)
{
    char shape[128];
    snprintf(buf, len, "%s %s", clg_shape_str(t->ndim, t->shape, shape, sizeof shape), clg_dtype_name(t->dtype));
    return buf;
}

/* ---- errors and checks ----------------------------------------------------------------------- */

clg_tensor *clg__op_fail(clg_device *dev, clg_status status, const char *op, const char *fmt, ...)
{
    if (!dev) return NULL;
    char msg[CLG_ERROR_MAX - 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    clg__fail(dev, status, "clg_%s: %s", op, msg);
    return NULL;
}

bool clg__check_float(const char *op, const clg_tensor *t)
{
    if (clg__is_float(t->dtype)) return true;
    clg__op_fail(t->dev, CLG_ERR_DTYPE, op, "needs a float32 or float64 tensor, got %s%s", CLG_DESC(t),
                 clg__is_half(t->dtype) ? " (16-bit floats are storage only so far: clg_cast it to float32)" : "");
    return false;
}

bool clg__check_floating(const char *op, const clg_tensor *t)
{
    return clg__is_half(t->dtype) || clg__check_float(op, t);
}

bool clg__check_same_device(const char *op, const clg_tensor *a, const clg_tensor *b)
{
    if (a->dev == b->dev) return true;
    clg__op_fail(a->dev, CLG_ERR_INVALID_ARGUMENT, op, "operands live on different devices");
    return false;
}

bool clg__check_same_dtype(const char *op, const clg_tensor *a, const clg_tensor *b)
{
    if (!clg__check_same_device(op, a, b)) return false;
    if (a->dtype == b->dtype) return true;
    clg__op_fail(a->dev, CLG_ERR_DTYPE, op, "dtypes differ: %s and %s", CLG_DESC(a), CLG_DESC(b));
    return false;
}

int clg__axis(const char *op, const clg_tensor *t, int axis, int ndim)
{
    int a = axis < 0 ? axis + ndim : axis;
    if (a >= 0 && a < ndim) return a;
    clg__op_fail(t->dev, CLG_ERR_SHAPE, op, "axis %d out of range for %s", axis, CLG_DESC(t));
    return -1;
}

bool clg__axes_mask(const char *op, const clg_tensor *t, int naxes, const int *axes, bool *mask)
{
    if (naxes < 0 || naxes > CLG_MAX_DIMS || (naxes && !axes)) {
        clg__op_fail(t->dev, CLG_ERR_INVALID_ARGUMENT, op, "%d axes for %s", naxes, CLG_DESC(t));
        return false;
    }
    memset(mask, 0, CLG_MAX_DIMS * sizeof *mask);
    for (int i = 0; i < naxes; i++) {
        int a = clg__axis(op, t, axes[i], t->ndim);
        if (a < 0) return false;
        if (mask[a]) {
            clg__op_fail(t->dev, CLG_ERR_SHAPE, op, "axis %d is given twice (as %d) for %s", a, axes[i], CLG_DESC(t));
            return false;
        }
        mask[a] = true;
    }
    if (naxes == 0)
        for (int d = 0; d < t->ndim; d++) mask[d] = true;
    return true;
}

bool clg__broadcast_shapes(int na, const int64_t *sa, int nb, const int64_t *sb, int *nout, int64_t *out)
{
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t x = i < n - na ? 1 : sa[i - (n - na)];
        int64_t y = i < n - nb ? 1 : sb[i - (n - nb)];
        if (x != y && x != 1 && y != 1) return false;
        out[i] = x == 1 ? y : x;
    }
    *nout = n;
    return true;
}

void clg__udiv_magic(int64_t d, uint32_t *m, int *s)
{
    int l = 0;
    while (((int64_t)1 << l) < d) l++;   /* l = ceil(log2 d) */
    /* m = ceil(2^(31 + l) / d): below 2^32 unless d is a power of two, where it is 2^31 */
    uint64_t p = (uint64_t)1 << (31 + l);   /* l <= 31: within 64 bits */
    *m = (uint32_t)((p + (uint64_t)d - 1) / (uint64_t)d);
    *s = l;
}

bool clg__check_numel(const char *op, clg_device *dev, int64_t numel)
{
    if (numel <= INT32_MAX) return true;
    clg__op_fail(dev, CLG_ERR_UNSUPPORTED, op, "%lld elements; kernels index up to 2^31 - 1", (long long)numel);
    return false;
}
