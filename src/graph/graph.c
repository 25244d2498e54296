/* graph.c: clgrad/graph.h over the device's capture (src/device/capture*.c): named
 * inputs and outputs, checked when fed, and replay. */
#include <stdlib.h>
#include <string.h>

#include "clgrad/graph.h"
#include "tensor_impl.h"

#define GRAPH_MAX_NAMES 32

typedef struct graph_binding {
    char name[64];
    bool input;
    int value;                      /* in the capture */
    clg_dtype dtype;
    int ndim;
    int64_t shape[CLG_MAX_DIMS], strides[CLG_MAX_DIMS], offset, numel;
} graph_binding;

struct clg_graph {
    clg_device *dev;
    clg_capture *cap;
    graph_binding names[GRAPH_MAX_NAMES];
    int nnames;
};

clg_status clg_graph_begin(clg_device *dev)
{
    if (!dev) return CLG_ERR_INVALID_ARGUMENT;
    return clg__capture_begin(dev);
}

clg_status clg_graph_end(clg_device *dev, clg_graph **graph)
{
    if (graph) *graph = NULL;
    if (!dev || !graph) return CLG_ERR_INVALID_ARGUMENT;
    clg_capture *cap = clg__capture_end(dev);
    if (!cap) return dev->status;
    clg_graph *g = calloc(1, sizeof *g);
    if (!g) {
        clg__capture_free(cap);
        return clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_graph_end: out of host memory");
    }
    g->dev = dev;
    g->cap = cap;
    *graph = g;
    return CLG_OK;
}

void clg_graph_free(clg_graph *g)
{
    if (!g) return;
    clg__capture_free(g->cap);
    free(g);
}

static graph_binding *find(clg_graph *g, const char *name)
{
    for (int i = 0; i < g->nnames; i++)
        if (!strcmp(g->names[i].name, name)) return &g->names[i];
    return NULL;
}

static clg_status bind(clg_graph *g, const char *name, clg_tensor *t, bool input)
{
    const char *fn = input ? "clg_graph_input" : "clg_graph_output";
    if (!g || !name || !t) return g ? clg__fail(g->dev, CLG_ERR_INVALID_ARGUMENT, "%s: a NULL name or tensor", fn)
                                    : CLG_ERR_INVALID_ARGUMENT;
    if (strlen(name) >= sizeof g->names[0].name || find(g, name) || g->nnames == GRAPH_MAX_NAMES)
        return clg__fail(g->dev, CLG_ERR_INVALID_ARGUMENT, "%s: '%s' is taken, too long or one name too many (%d)", fn,
                         name, GRAPH_MAX_NAMES);
    int v = t->dev == g->dev ? clg__capture_value(g->cap, t->buf) : -1;
    if (v < 0)
        return clg__fail(g->dev, CLG_ERR_INVALID_ARGUMENT, "%s: '%s' %s is not memory the captured step %s", fn, name,
                         CLG_DESC(t), input ? "read" : "wrote");
    graph_binding *b = &g->names[g->nnames++];
    snprintf(b->name, sizeof b->name, "%s", name);
    b->input = input;
    b->value = v;
    b->dtype = t->dtype;
    b->ndim = t->ndim;
    memcpy(b->shape, t->shape, sizeof b->shape);
    memcpy(b->strides, t->strides, sizeof b->strides);
    b->offset = t->offset;
    b->numel = t->numel;
    if (input) clg__capture_mark_input(g->cap, v);
    return CLG_OK;
}

clg_status clg_graph_input(clg_graph *g, const char *name, clg_tensor *t) { return bind(g, name, t, true); }
clg_status clg_graph_output(clg_graph *g, const char *name, clg_tensor *t) { return bind(g, name, t, false); }

static graph_binding *input_named(clg_graph *g, const char *fn, const char *name)
{
    graph_binding *b = name ? find(g, name) : NULL;
    if (!b || !b->input) {
        clg__fail(g->dev, CLG_ERR_INVALID_ARGUMENT, "%s: the graph has no input named '%s'", fn, name ? name : "(null)");
        return NULL;
    }
    return b;
}

static bool same_shape(const graph_binding *b, const clg_tensor *t)
{
    if (t->ndim != b->ndim) return false;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] != b->shape[d]) return false;
    return true;
}

static void describe(const graph_binding *b, char *out, size_t len)
{
    int n = snprintf(out, len, "[");
    for (int d = 0; d < b->ndim && n < (int)len; d++) n += snprintf(out + n, len - (size_t)n, d ? ", %lld" : "%lld", (long long)b->shape[d]);
    if (n < (int)len) snprintf(out + n, len - (size_t)n, "] %s", clg_dtype_name(b->dtype));
}

clg_status clg_graph_feed(clg_graph *g, const char *name, clg_tensor *t)
{
    const char *fn = "clg_graph_feed";
    if (!g) return CLG_ERR_INVALID_ARGUMENT;
    graph_binding *b = input_named(g, fn, name);
    if (!b) return g->dev->status;
    if (!t) return clg__fail(g->dev, CLG_ERR_INVALID_ARGUMENT, "%s: input '%s' fed NULL", fn, name);
    char want[160];
    describe(b, want, sizeof want);
    if (t->dev != g->dev || t->dtype != b->dtype || !same_shape(b, t))
        return clg__fail(g->dev, CLG_ERR_SHAPE, "%s: input '%s' is %s; the graph was captured with %s (shapes are "
                         "fixed per graph: capture another for this one)", fn, name, CLG_DESC(t), want);
    if (!clg_tensor_is_contiguous(t) || t->offset != b->offset)
        return clg__fail(g->dev, CLG_ERR_INVALID_ARGUMENT, "%s: input '%s' %s must be contiguous at element offset "
                         "%lld, as captured (it is read in place)", fn, name, CLG_DESC(t), (long long)b->offset);
    return clg__capture_rebind(g->cap, b->value, t->buf);
}

clg_status clg_graph_feed_host(clg_graph *g, const char *name, const void *data, size_t bytes)
{
    const char *fn = "clg_graph_feed_host";
    if (!g) return CLG_ERR_INVALID_ARGUMENT;
    graph_binding *b = input_named(g, fn, name);
    if (!b) return g->dev->status;
    size_t need = (size_t)b->numel * clg_dtype_size(b->dtype);
    if (!data || bytes != need)
        return clg__fail(g->dev, CLG_ERR_SHAPE, "%s: input '%s' takes %zu bytes; given %zu", fn, name, need,
                         data ? bytes : 0);
    clg_buffer *buf = clg__capture_buffer(g->cap, b->value);
    if (buf->refs > 1) {   /* shared with a tensor fed earlier: write into memory of our own */
        clg_buffer *own = clg__buffer_alloc(g->dev, buf->size);
        clg_status st = own ? clg__capture_rebind(g->cap, b->value, own) : g->dev->status;
        clg__buffer_release(own);
        if (st != CLG_OK) return st;
        buf = own;
    }
    return clg__write(g->dev, buf, (size_t)b->offset * clg_dtype_size(b->dtype), data, bytes);
}

clg_status clg_graph_replay(clg_graph *g)
{
    if (!g) return CLG_ERR_INVALID_ARGUMENT;
    if (g->dev->cap) return clg__fail(g->dev, CLG_ERR_INVALID_ARGUMENT, "clg_graph_replay: a capture is open on this device");
    clg_status st = clg__capture_check(g->cap);
    return st != CLG_OK ? st : clg__capture_replay(g->cap);
}

bool clg_graph_stale(const clg_graph *g) { return g && clg__capture_stale(g->cap); }

clg_tensor *clg_graph_get(clg_graph *g, const char *name)
{
    if (!g) return NULL;
    graph_binding *b = name ? find(g, name) : NULL;
    if (!b) {
        clg__fail(g->dev, CLG_ERR_INVALID_ARGUMENT, "clg_graph_get: the graph has no input or output named '%s'",
                  name ? name : "(null)");
        return NULL;
    }
    return clg__tensor_on(g->dev, clg__capture_buffer(g->cap, b->value), b->dtype, b->ndim, b->shape, b->strides,
                          b->offset);
}

clg_graph_stats clg_graph_get_stats(const clg_graph *g)
{
    clg_graph_stats s = {0};
    if (!g) return s;
    clg_capture_stats c = clg__capture_stats(g->cap);
    s.launches = c.launches;
    s.enqueues = c.enqueues;
    s.copies = c.copies;
    s.writes = c.writes;
    s.refreshed = c.refreshes;
    s.host_steps = c.host_steps;
    s.planned = c.planned;
    s.slots = c.slots;
    s.planned_bytes = c.planned_bytes;
    s.slot_bytes = c.slot_bytes;
    s.held_bytes = c.held_bytes;
    s.removed = c.removed;
    s.fused = c.fused;
    s.chains = c.chains;
    return s;
}
