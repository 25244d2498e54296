/* module.c: what every module has: parameters, buffers and children by name, a
 * train/eval mode, trainable flags, and the state_dict walk over all of it. */
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"

static void drop_state(clg_module *m)
{
    for (clg_module *p = m; p; p = p->parent) {
        for (int i = 0; i < p->nstate; i++) free(p->state_names[i]);
        free(p->state_names);
        free(p->state);
        p->state = NULL;
        p->state_names = NULL;
        p->nstate = 0;
    }
}

clg_module *clg_module_new(clg_device *dev, const clg_module_i *iface, void *data)
{
    if (!dev) return NULL;
    if (!iface || !iface->forward) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_module_new: a module needs a forward function");
        return NULL;
    }
    clg_module *m = calloc(1, sizeof *m);
    if (!m || !(m->name = strdup(""))) {
        free(m);
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_module_new: out of host memory");
        return NULL;
    }
    m->iface = iface;
    m->data = data;
    m->dev = dev;
    m->training = true;
    return m;
}

static void free_entries(clg_entries *e)
{
    for (int i = 0; i < e->n; i++) {
        free(e->items[i].name);
        clg__tensor_release(e->items[i].t);
    }
    free(e->items);
}

void clg_module_free(clg_module *m)
{
    if (!m) return;
    drop_state(m);
    for (int i = 0; i < m->nchildren; i++) {
        m->children[i]->parent = NULL;
        clg_module_free(m->children[i]);
    }
    free(m->children);
    free_entries(&m->params);
    free_entries(&m->buffers);
    if (m->iface->free_data) m->iface->free_data(m->data);
    free(m->name);
    free(m);
}

void *clg_module_data(const clg_module *m) { return m ? m->data : NULL; }
const char *clg_module_type(const clg_module *m) { return m ? m->iface->type : NULL; }
clg_device *clg_module_device(const clg_module *m) { return m ? m->dev : NULL; }
const char *clg_module_name(const clg_module *m) { return m ? m->name : NULL; }
int clg_module_child_count(const clg_module *m) { return m ? m->nchildren : 0; }
clg_module *clg_module_child_at(const clg_module *m, int i) { return m && i >= 0 && i < m->nchildren ? m->children[i] : NULL; }

static bool name_ok(clg_module *m, const char *name, const char *what)
{
    if (name && *name && !strchr(name, '.')) return true;
    clg__fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "clg_module_add_%s: bad name \"%s\" (non-empty, no dots)", what,
              name ? name : "(null)");
    return false;
}

static bool taken(const clg_module *m, const char *name)
{
    return clg_module_param(m, name) || clg_module_buffer(m, name) || clg_module_child(m, name);
}

static clg_status add_entry(clg_module *m, clg_entries *e, const char *name, clg_tensor *t, const char *what)
{
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    if (!t && m->dev->status != CLG_OK && m->dev->error[0]) {
        /* The tensor failed to be made (too large, say): pass on why, not just that. */
        char why[CLG_ERROR_MAX];
        memcpy(why, m->dev->error, sizeof why);
        return clg__fail(m->dev, m->dev->status, "clg_module_add_%s(%s): the tensor could not be made: %.7000s", what,
                         name, why);
    }
    if (!t) return clg__fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "clg_module_add_%s(%s): no tensor", what, name);
    if (!name_ok(m, name, what)) return m->dev->status;
    if (taken(m, name)) return clg__fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "clg_module_add_%s: \"%s\" exists", what, name);
    if (e->n == e->cap) {
        int cap = e->cap ? 2 * e->cap : 4;
        clg_entry *ni = realloc(e->items, (size_t)cap * sizeof *ni);
        if (!ni) return clg__fail(m->dev, CLG_ERR_OUT_OF_MEMORY, "clg_module_add_%s: out of host memory", what);
        e->items = ni;
        e->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) return clg__fail(m->dev, CLG_ERR_OUT_OF_MEMORY, "clg_module_add_%s: out of host memory", what);
    /* The module owns the tensor from now on: out of its scope, history dropped. */
    clg_tensor_keep(t);
    clg__tensor_unscope(t);
    e->items[e->n++] = (clg_entry){copy, t, false};
    drop_state(m);
    return CLG_OK;
}

clg_status clg_module_add_param(clg_module *m, const char *name, clg_tensor *t)
{
    if (m && t && !clg__is_float(t->dtype))
        return clg__fail(m->dev, CLG_ERR_DTYPE, "clg_module_add_param(%s): parameters are float tensors", name);
    clg_status st = add_entry(m, m ? &m->params : NULL, name, t, "param");
    if (st == CLG_OK) t->requires_grad = true;
    return st;
}

clg_status clg_module_add_buffer(clg_module *m, const char *name, clg_tensor *t)
{
    return add_entry(m, m ? &m->buffers : NULL, name, t, "buffer");
}

clg_status clg_module_register_buffer(clg_module *m, const char *name, clg_tensor *t, bool persistent)
{
    clg_status st = add_entry(m, m ? &m->buffers : NULL, name, t, "buffer");
    if (st == CLG_OK) m->buffers.items[m->buffers.n - 1].transient = !persistent;
    return st;
}

clg_status clg_module_tie_param(clg_module *m, const char *name, clg_tensor *shared)
{
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    clg_entry *e = NULL;
    for (int i = 0; name && i < m->params.n; i++)
        if (!strcmp(m->params.items[i].name, name)) e = &m->params.items[i];
    if (!e) return clg__fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "clg_module_tie_param: no parameter \"%s\"", name ? name : "(null)");
    if (!shared || shared->dev != m->dev || !shared->requires_grad || shared->dtype != e->t->dtype ||
        shared->ndim != e->t->ndim || memcmp(shared->shape, e->t->shape, sizeof(int64_t) * (size_t)shared->ndim))
        return clg__fail(m->dev, CLG_ERR_SHAPE, "clg_module_tie_param(%s): %s is not a parameter of %s's shape and dtype "
                         "on the same device", name, shared ? CLG_DESC(shared) : "(null)", CLG_DESC(e->t));
    clg__tensor_retain(shared);
    clg__tensor_release(e->t);
    e->t = shared;
    drop_state(m);
    return CLG_OK;
}

void clg__module_drop_param(clg_module *m, const char *name)
{
    clg_entries *e = &m->params;
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->items[i].name, name)) {
            free(e->items[i].name);
            clg__tensor_release(e->items[i].t);
            memmove(e->items + i, e->items + i + 1, sizeof *e->items * (size_t)(e->n - i - 1));
            e->n--;
            drop_state(m);
            return;
        }
}

clg_status clg_module_add_child(clg_module *m, const char *name, clg_module *child)
{
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    if (!child) return clg__fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "clg_module_add_child(%s): no module", name);
    if (!name_ok(m, name, "child") || taken(m, name) || child->parent) {
        if (m->dev->status == CLG_OK || !taken(m, name))
            clg__fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "clg_module_add_child: \"%s\" exists or has a parent", name);
        return m->dev->status;
    }
    if (m->nchildren == m->capchildren) {
        int cap = m->capchildren ? 2 * m->capchildren : 4;
        clg_module **nc = realloc(m->children, (size_t)cap * sizeof *nc);
        if (!nc) return clg__fail(m->dev, CLG_ERR_OUT_OF_MEMORY, "clg_module_add_child: out of host memory");
        m->children = nc;
        m->capchildren = cap;
    }
    char *copy = strdup(name);
    if (!copy) return clg__fail(m->dev, CLG_ERR_OUT_OF_MEMORY, "clg_module_add_child: out of host memory");
    free(child->name);
    child->name = copy;
    child->parent = m;
    child->training = m->training;
    m->children[m->nchildren++] = child;
    drop_state(m);
    return CLG_OK;
}

static clg_tensor *find_entry(const clg_entries *e, const char *name)
{
    for (int i = 0; name && i < e->n; i++)
        if (!strcmp(e->items[i].name, name)) return e->items[i].t;
    return NULL;
}

clg_tensor *clg_module_param(const clg_module *m, const char *name) { return m ? find_entry(&m->params, name) : NULL; }
clg_tensor *clg_module_buffer(const clg_module *m, const char *name) { return m ? find_entry(&m->buffers, name) : NULL; }

clg_module *clg_module_child(const clg_module *m, const char *name)
{
    for (int i = 0; m && name && i < m->nchildren; i++)
        if (!strcmp(m->children[i]->name, name)) return m->children[i];
    return NULL;
}

clg_tensor *clg_module_forward(clg_module *m, clg_tensor *x)
{
    if (!m || !x) return NULL;
    return m->iface->forward(m, x);
}

clg_status clg_module_set_forward_n(clg_module *m, clg_forward_n_fn fn)
{
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    m->forward_n = fn;
    return CLG_OK;
}

clg_tensor *clg_module_forward_n(clg_module *m, int n, clg_tensor *const *inputs)
{
    if (!m) return NULL;
    if (m->forward_n) return m->forward_n(m, n, inputs);
    if (n == 1 && inputs) return clg_module_forward(m, inputs[0]);
    clg__fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "clg_module_forward_n: %s takes one input, not %d", m->iface->type, n);
    return NULL;
}

void clg_module_train(clg_module *m, bool training)
{
    if (!m) return;
    m->training = training;
    for (int i = 0; i < m->nchildren; i++) clg_module_train(m->children[i], training);
}

bool clg_module_is_training(const clg_module *m) { return m && m->training; }

void clg_module_set_trainable(clg_module *m, bool trainable)
{
    if (!m) return;
    for (int i = 0; i < m->params.n; i++) {
        clg_tensor *t = m->params.items[i].t;
        t->requires_grad = trainable;
        if (!trainable) clg_tensor_clear_grad(t);
    }
    for (int i = 0; i < m->nchildren; i++) clg_module_set_trainable(m->children[i], trainable);
}

/* ---- changing the dtype ------------------------------------------------------------------ */

/* The float tensors converted so far (old -> new), so that a tied parameter stays one tensor. */
typedef struct dtype_map {
    clg_tensor **old, **new_;
    int n, cap;
} dtype_map;

/* The converted twin of t: made once, out of every scope, a parameter again when t was. */
static clg_tensor *converted(dtype_map *map, clg_tensor *t, clg_dtype dtype)
{
    for (int i = 0; i < map->n; i++)
        if (map->old[i] == t) return map->new_[i];
    if (map->n == map->cap) {
        int cap = map->cap ? 2 * map->cap : 16;
        clg_tensor **o = realloc(map->old, sizeof *o * (size_t)cap), **n = o ? realloc(map->new_, sizeof *n * (size_t)cap) : NULL;
        if (o) map->old = o;
        if (!n) return NULL;
        map->new_ = n, map->cap = cap;
    }
    clg_tensor *c = clg__copy_as(t, dtype);
    if (!c) return NULL;
    clg__tensor_unscope(c);
    c->requires_grad = t->requires_grad;
    map->old[map->n] = t, map->new_[map->n++] = c;
    return c;
}

static clg_status entries_to(clg_module *m, clg_entries *e, dtype_map *map, clg_dtype dtype)
{
    for (int i = 0; i < e->n; i++) {
        clg_tensor *t = e->items[i].t;
        if (!clg__is_float(t->dtype) && !clg__is_half(t->dtype)) continue;   /* counters stay integers */
        if (t->dtype == dtype) continue;
        clg_tensor *c = converted(map, t, dtype);
        if (!c) return m->dev->status ? m->dev->status : CLG_ERR_OUT_OF_MEMORY;
        clg__tensor_retain(c);
        clg__tensor_release(t);
        e->items[i].t = c;
    }
    return CLG_OK;
}

static clg_status module_to(clg_module *m, dtype_map *map, clg_dtype dtype)
{
    clg_status st = entries_to(m, &m->params, map, dtype);
    if (!st) st = entries_to(m, &m->buffers, map, dtype);
    clg__rnn_drop_state(m);   /* a carried state of the old dtype starts again from zeros */
    for (int i = 0; !st && i < m->nchildren; i++) st = module_to(m->children[i], map, dtype);
    drop_state(m);
    return st;
}

clg_status clg_module_to(clg_module *m, clg_dtype dtype)
{
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    if (dtype != CLG_F32 && dtype != CLG_F64)
        return clg__fail(m->dev, CLG_ERR_DTYPE, "clg_module_to: %s: modules compute in float32 or float64 (16-bit "
                         "training: autocast, clgrad/autograd.h)", clg_dtype_name(dtype));
    if (dtype == CLG_F64 && !clg_device_get_info(m->dev)->fp64)
        return clg__fail(m->dev, CLG_ERR_DTYPE, "clg_module_to: the device has no float64 (cl_khr_fp64)");
    dtype_map map = {0};
    clg_status st = module_to(m, &map, dtype);
    for (int i = 0; i < map.n; i++) clg__tensor_release(map.new_[i]);   /* the entries hold them now */
    free(map.old), free(map.new_);
    return st;
}

/* ---- the state_dict walk ------------------------------------------------------------------ */

typedef struct walk {
    clg_named_tensor *out;
    char **names;
    int n, cap;
    bool ok;
} walk;

static void visit(walk *w, const char *prefix, const clg_module *m)
{
    for (int pass = 0; pass < 2; pass++) {
        const clg_entries *e = pass ? &m->buffers : &m->params;
        for (int i = 0; i < e->n; i++) {
            if (e->items[i].transient) continue;
            if (w->n == w->cap) {
                int cap = w->cap ? 2 * w->cap : 16;
                clg_named_tensor *no = realloc(w->out, (size_t)cap * sizeof *no);
                char **nn = no ? realloc(w->names, (size_t)cap * sizeof *nn) : NULL;
                if (no) w->out = no;
                if (!nn) {
                    w->ok = false;
                    return;
                }
                w->names = nn;
                w->cap = cap;
            }
            size_t len = strlen(prefix) + strlen(e->items[i].name) + 1;
            char *full = malloc(len);
            if (!full) {
                w->ok = false;
                return;
            }
            snprintf(full, len, "%s%s", prefix, e->items[i].name);
            w->names[w->n] = full;
            w->out[w->n++] = (clg_named_tensor){full, e->items[i].t, pass == 0};
        }
    }
    for (int i = 0; i < m->nchildren && w->ok; i++) {
        size_t len = strlen(prefix) + strlen(m->children[i]->name) + 2;
        char *p = malloc(len);
        if (!p) {
            w->ok = false;
            return;
        }
        snprintf(p, len, "%s%s.", prefix, m->children[i]->name);
        visit(w, p, m->children[i]);
        free(p);
    }
}

/* The (cached) state list of m. */
static bool state_of(clg_module *m)
{
    if (m->state || (m->nstate == 0 && m->state_names)) return true;
    walk w = {.ok = true};
    visit(&w, "", m);
    if (!w.ok) {
        for (int i = 0; i < w.n; i++) free(w.names[i]);
        free(w.names);
        free(w.out);
        clg__fail(m->dev, CLG_ERR_OUT_OF_MEMORY, "clg_module_state: out of host memory");
        return false;
    }
    m->state = w.out;
    m->state_names = w.names ? w.names : calloc(1, sizeof(char *));
    m->nstate = w.n;
    return true;
}

int clg_module_state(const clg_module *m, clg_named_tensor *out, int cap)
{
    if (!m || !state_of((clg_module *)m)) return 0;
    for (int i = 0; i < m->nstate && i < cap && out; i++) out[i] = m->state[i];
    return m->nstate;
}

clg_tensor *clg_module_find(const clg_module *m, const char *full_name)
{
    if (!m || !full_name || !state_of((clg_module *)m)) return NULL;
    for (int i = 0; i < m->nstate; i++)
        if (!strcmp(m->state[i].name, full_name)) return m->state[i].tensor;
    return NULL;
}

clg_status clg_module_set_param_trainable(clg_module *m, const char *name, bool trainable)
{
    if (!m) return CLG_ERR_INVALID_ARGUMENT;
    clg_tensor *t = clg_module_find(m, name);
    bool is_param = false;
    for (int i = 0; t && i < m->nstate; i++)
        if (m->state[i].tensor == t) is_param = m->state[i].is_param;
    if (!t || !is_param)
        return clg__fail(m->dev, CLG_ERR_INVALID_ARGUMENT, "clg_module_set_param_trainable: no parameter \"%s\"",
                         name ? name : "(null)");
    t->requires_grad = trainable;
    if (!trainable) clg_tensor_clear_grad(t);
    return CLG_OK;
}

/* Whether state entry i holds a tensor an earlier entry holds too (a tied parameter's
 * second name): counted and handed to optimizers once. */
static bool seen_before(const clg_module *m, int i)
{
    for (int j = 0; j < i; j++)
        if (m->state[j].tensor == m->state[i].tensor) return true;
    return false;
}

int clg_module_parameters(const clg_module *m, clg_tensor **out, int cap, bool trainable_only)
{
    if (!m || !state_of((clg_module *)m)) return 0;
    int n = 0;
    for (int i = 0; i < m->nstate; i++) {
        if (!m->state[i].is_param || (trainable_only && !m->state[i].tensor->requires_grad)) continue;
        if (seen_before(m, i)) continue;
        if (out && n < cap) out[n] = m->state[i].tensor;
        n++;
    }
    return n;
}

int64_t clg_module_numel(const clg_module *m, bool trainable_only)
{
    if (!m || !state_of((clg_module *)m)) return 0;
    int64_t n = 0;
    for (int i = 0; i < m->nstate; i++)
        if (m->state[i].is_param && (!trainable_only || m->state[i].tensor->requires_grad) && !seen_before(m, i))
            n += m->state[i].tensor->numel;
    return n;
}

clg_tensor *clg__nn_uniform_param(clg_device *dev, int ndim, const int64_t *shape, double bound)
{
    clg_tensor *t = clg_rand(dev, CLG_F32, ndim, shape, -bound, bound);
    if (t) clg__tensor_unscope(t);
    return t;
}

clg_tensor *clg__nn_child(clg_module *m, const char *name, clg_tensor *x)
{
    return clg_module_forward(clg_module_child(m, name), x);
}

clg_status clg__nn_adopt(clg_module *m, const char *name, clg_module *c)
{
    if (!c) return m->dev->status ? m->dev->status : CLG_ERR_OUT_OF_MEMORY;
    clg_status st = clg_module_add_child(m, name, c);
    if (st) clg_module_free(c);
    return st;
}
