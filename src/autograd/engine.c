/* engine.c: the backward pass, and the autograd API around it.
 *
 * clg_backward walks the tape from the root in reverse topological order. Each node
 * turns the gradient of its output into gradients of its inputs (device ops, in
 * no-grad mode); gradients reaching one tensor from several uses are added; a
 * gradient with a broadcast shape is summed back to its input's shape. Leaves that
 * require a gradient accumulate into their own .grad, which they own. Everything
 * else the pass makes lives in a scope of its own that ends with the pass.
 *
 * The engine sits above the ops (src/tensor/): it computes with them, while they record
 * their nodes (node.c) and read the grad-mode switch (grad_mode.c) down there, so that
 * no function of src/tensor/ calls one of src/autograd/ (scripts/layers.py checks). */
#include <stdlib.h>
#include <string.h>

#include "tensor_impl.h"

typedef struct frame { clg_tensor *t; int next; } frame;

/* Tensors reachable from the roots through inputs that require a gradient, in post
 * order (every tensor after the tensors it was made from). With several roots the
 * orders of each, without repeats, concatenated: a tensor first reached from a later
 * root cannot be an input of one reached from an earlier root (it would have been
 * reached then), so the whole stays in order. */
static clg_tensor **topo_order(int nroots, clg_tensor *const *roots, clg_tensor_state *s, size_t *count)
{
    size_t cap = 64, n = 0, depth = 0, scap = 64;
    clg_tensor **order = malloc(cap * sizeof *order);
    frame *stack = malloc(scap * sizeof *stack);
    uint64_t gen = ++s->visit_gen;
    if (!order || !stack) goto oom;
    for (int r = 0; r < nroots; r++) {
        if (roots[r]->visit == gen) continue;
        roots[r]->visit = gen;
        stack[depth++] = (frame){roots[r], 0};
        while (depth) {
            frame *f = &stack[depth - 1];
            clg_node *node = f->t->node;
            if (node && f->next < node->ninputs) {
                clg_tensor *in = node->inputs[f->next++];
                if (!in || !in->requires_grad || in->visit == gen) continue;
                in->visit = gen;
                if (depth == scap) {
                    frame *ns = realloc(stack, (scap *= 2) * sizeof *stack);
                    if (!ns) goto oom;
                    stack = ns;
                }
                stack[depth++] = (frame){in, 0};
                continue;
            }
            if (n == cap) {
                clg_tensor **no = realloc(order, (cap *= 2) * sizeof *order);
                if (!no) goto oom;
                order = no;
            }
            order[n++] = f->t;
            depth--;
        }
    }
    free(stack);
    *count = n;
    return order;
oom:
    free(order);
    free(stack);
    return NULL;
}

/* t.grad += g (g has t's shape). The gradient belongs to t, not to any scope. After a
 * zero_grad (grad_zero) the sum is g itself: one write instead of a fill and an add. */
static clg_status accumulate_leaf(clg_tensor *t, clg_tensor *g)
{
    bool fresh = !t->grad || t->grad_zero;
    clg_tensor *grad = clg__grad_target(t);
    if (!grad) return t->dev->status;
    return fresh ? clg_copy_(grad, g) : clg_axpy_(grad, 1.0, g);
}

/* in.bgrad += gi, after summing gi back to in's shape. */
static clg_status accumulate(clg_tensor *in, clg_tensor *gi)
{
    bool same = gi->ndim == in->ndim && !memcmp(gi->shape, in->shape, (size_t)in->ndim * sizeof *in->shape);
    if (!same && !(gi = clg__sum_to_shape(gi, in->ndim, in->shape))) return in->dev->status;
    if (in->bgrad) {
        clg_tensor *sum = clg_add(in->bgrad, gi);
        if (!sum) return in->dev->status;
        clg__tensor_release(in->bgrad);
        gi = sum;
    }
    clg__tensor_retain(gi);
    in->bgrad = gi;
    return CLG_OK;
}

/* clg_grad's requests: the inputs whose gradients are copied into grads (made before
 * the pass, in the caller's scope) when the pass reaches them; no .grad is touched. */
typedef struct capture {
    int m;
    clg_tensor *const *inputs;
    clg_tensor **grads;
} capture;

/* t's hooks on its gradient; a replacement must look like the gradient it replaces. */
static clg_status run_hooks(clg_tensor *t)
{
    for (clg_hook *h = t->hooks; h; h = h->next) {
        clg_tensor *g = t->bgrad;
        clg_status st = h->fn(t, &g, h->user);
        if (st != CLG_OK)
            return clg__fail(t->dev, st, "clg_backward: a gradient hook of %s failed (%s)", CLG_DESC(t),
                             clg_status_str(st));
        if (g == t->bgrad) continue;
        if (!g || g->dtype != t->bgrad->dtype || g->ndim != t->ndim ||
            memcmp(g->shape, t->shape, (size_t)t->ndim * sizeof *t->shape))
            return clg__fail(t->dev, CLG_ERR_SHAPE, "clg_backward: a gradient hook of %s returned %s, not a gradient "
                             "of its shape and dtype", CLG_DESC(t), g ? CLG_DESC(g) : "NULL");
        clg__tensor_retain(g);
        clg__tensor_release(t->bgrad);
        t->bgrad = g;
    }
    return CLG_OK;
}

/* Leaf t's hooks after its .grad took this pass's gradient. */
static clg_status run_post_hooks(clg_tensor *t)
{
    for (clg_post_hook *h = t->post_hooks; h; h = h->next) {
        clg_status st = h->fn(t, h->user);
        if (st != CLG_OK)
            return clg__fail(t->dev, st, "clg_backward: a post-accumulate hook of %s failed (%s)", CLG_DESC(t),
                             clg_status_str(st));
    }
    return CLG_OK;
}

static clg_status propagate(clg_tensor *t, const capture *cap)
{
    if (!t->bgrad) return CLG_OK;
    clg_status st = run_hooks(t);
    if (st != CLG_OK) return st;
    clg_tensor *g = t->bgrad;
    for (int i = 0; cap && i < cap->m; i++)
        if (cap->inputs[i] == t && (st = clg_copy_(cap->grads[i], g)) != CLG_OK) return st;
    bool keep = !cap && (t->node ? t->retain_grad : t->requires_grad);
    if (keep && (st = accumulate_leaf(t, g)) != CLG_OK) return st;
    if (keep && !t->node && (st = run_post_hooks(t)) != CLG_OK) return st;
    if (!t->node) return CLG_OK;
    clg_node *node = t->node;
    clg_tensor *small[CLG_NODE_INLINE] = {0};
    clg_tensor **gin = node->ninputs <= CLG_NODE_INLINE ? small : calloc((size_t)node->ninputs, sizeof *gin);
    if (!gin) return clg__fail(t->dev, CLG_ERR_OUT_OF_MEMORY, "clg_backward: out of host memory");
    st = clg__node_check_versions(node);
    if (st != CLG_OK) {
        if (gin != small) free(gin);
        return st;
    }
    st = node->backward(node, g, gin);
    if (st != CLG_OK && t->dev->error[0] == 0)
        clg__fail(t->dev, st, "clg_backward: the backward of %s failed", clg__op_name(node->op));
    for (int i = 0; st == CLG_OK && i < node->ninputs; i++)
        if (gin[i] && clg__wants_grad(node, i)) st = accumulate(node->inputs[i], gin[i]);
    if (gin != small) free(gin);
    return st;
}

/* Checks a root and its seed gradient (NULL: ones, for a one-element root). */
static clg_status check_root(const char *fn, clg_tensor *root, clg_tensor *grad)
{
    clg_device *dev = root->dev;
    if (!root->requires_grad)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                         "%s: %s does not require a gradient (no input of the ops that made it does)", fn,
                         CLG_DESC(root));
    if (grad && (grad->dtype != root->dtype || grad->ndim != root->ndim ||
                 memcmp(grad->shape, root->shape, (size_t)root->ndim * sizeof *root->shape)))
        return clg__fail(dev, CLG_ERR_SHAPE, "%s: gradient %s does not match the root %s", fn, CLG_DESC(grad),
                         CLG_DESC(root));
    if (!grad && root->numel != 1)
        return clg__fail(dev, CLG_ERR_SHAPE, "%s: a gradient is needed for a root of %s (only one-element roots get "
                         "ones)", fn, CLG_DESC(root));
    return CLG_OK;
}

/* One backward pass from n roots seeded with seeds (NULL entries: ones), in a scope of
 * its own and in no-grad mode. */
static clg_status run_pass(clg_device *dev, int n, clg_tensor *const *roots, clg_tensor *const *seeds,
                           const capture *cap)
{
    clg_tensor_state *s = clg__tstate(dev);
    if (!s) return CLG_ERR_OUT_OF_MEMORY;
    size_t count = 0;
    clg_tensor **order = topo_order(n, roots, s, &count);
    if (!order) return clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_backward: out of host memory");
    clg_scope_begin(dev);
    clg_no_grad_begin(dev);
    /* backwards may write a leaf's gradient straight into its .grad (clg__grad_direct)
     * in a pass that accumulates there, not in clg_grad's */
    bool outer_direct = s->grad_direct;   /* a pass inside a hook's */
    s->grad_direct = cap == NULL;
    clg_status st = CLG_OK;
    for (int r = 0; st == CLG_OK && r < n; r++) {
        clg_tensor *g = seeds && seeds[r] ? seeds[r] : clg_full(dev, roots[r]->dtype, roots[r]->ndim, roots[r]->shape, 1.0);
        if (!g) st = dev->status;
        else st = accumulate(roots[r], g);   /* the same root twice: its seeds add up */
    }
    if (cap)   /* an input the roots do not reach has no gradient to give */
        for (int i = 0; st == CLG_OK && i < cap->m; i++)
            if (cap->inputs[i]->visit != s->visit_gen)
                st = clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_grad: input %d (%s) is not used to compute the "
                               "outputs (or does not require a gradient)", i, CLG_DESC(cap->inputs[i]));
    for (size_t k = count; st == CLG_OK && k-- > 0;) st = propagate(order[k], cap);
    for (size_t k = 0; k < count; k++) {
        clg__tensor_release(order[k]->bgrad);
        order[k]->bgrad = NULL;
    }
    s->grad_direct = outer_direct;
    clg_no_grad_end(dev);
    clg_scope_end(dev);
    free(order);
    return st;
}

clg_status clg_backward(clg_tensor *root, clg_tensor *grad)
{
    if (!root) return CLG_ERR_INVALID_ARGUMENT;
    clg_status st = check_root("clg_backward", root, grad);
    return st ? st : run_pass(root->dev, 1, &root, &grad, NULL);
}

clg_status clg_grad(int n, clg_tensor *const *outputs, clg_tensor *const *grad_outputs, int m,
                    clg_tensor *const *inputs, clg_tensor **grads)
{
    for (int i = 0; grads && i < m; i++) grads[i] = NULL;
    if (n < 1 || m < 1 || !outputs || !inputs || !grads || !outputs[0]) return CLG_ERR_INVALID_ARGUMENT;
    clg_device *dev = outputs[0]->dev;
    for (int r = 0; r < n; r++) {
        if (!outputs[r]) return CLG_ERR_INVALID_ARGUMENT;
        clg_status st = check_root("clg_grad", outputs[r], grad_outputs ? grad_outputs[r] : NULL);
        if (st) return st;
    }
    for (int i = 0; i < m; i++)
        if (!inputs[i] || inputs[i]->dev != dev)
            return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_grad: input %d is NULL or on another device", i);
    clg_status st = CLG_OK;
    /* Made here, in the caller's scope; zeros stay for an input reached by no gradient. */
    for (int i = 0; st == CLG_OK && i < m; i++)
        if (!(grads[i] = clg_zeros(dev, inputs[i]->dtype, inputs[i]->ndim, inputs[i]->shape))) st = dev->status;
    capture cap = {m, inputs, grads};
    if (st == CLG_OK) st = run_pass(dev, n, outputs, grad_outputs, &cap);
    if (st != CLG_OK)
        for (int i = 0; i < m; i++) clg_tensor_free(grads[i]), grads[i] = NULL;
    return st;
}

/* ---- the API around it --------------------------------------------------------------------- */

clg_status clg_tensor_set_requires_grad(clg_tensor *t, bool requires_grad)
{
    if (!t) return CLG_ERR_INVALID_ARGUMENT;
    if (requires_grad && !clg__is_float(t->dtype) && !clg__is_half(t->dtype))
        return clg__fail(t->dev, CLG_ERR_DTYPE, "clg_tensor_set_requires_grad: %s: only float tensors have gradients",
                         CLG_DESC(t));
    if (!requires_grad && t->node)
        return clg__fail(t->dev, CLG_ERR_INVALID_ARGUMENT,
                         "clg_tensor_set_requires_grad: %s was made by an op on the tape; detach it instead",
                         CLG_DESC(t));
    t->requires_grad = requires_grad;
    return CLG_OK;
}

bool clg_tensor_requires_grad(const clg_tensor *t) { return t && t->requires_grad; }
clg_tensor *clg__grad(clg_tensor *t)
{
    if (!t || !t->grad) return NULL;
    if (t->grad_zero) {
        clg_no_grad_begin(t->dev);
        clg_status st = clg_fill_(t->grad, 0.0);
        clg_no_grad_end(t->dev);
        if (st != CLG_OK) return NULL;   /* recorded on the device */
        t->grad_zero = false;
    }
    return t->grad;
}

/* Logically const: the zeros a zero_grad left pending are written on first sight. */
clg_tensor *clg_tensor_grad(const clg_tensor *t) { return clg__grad((clg_tensor *)t); }
bool clg_tensor_has_history(const clg_tensor *t) { return t && t->node; }

/* Lazy: the values become zeros when next read (clg__grad), or are overwritten by the
 * next backward pass's first contribution, which saves a fill and an add per step. */
void clg_tensor_zero_grad(clg_tensor *t)
{
    if (t && t->grad) t->grad_zero = true;
}

void clg_tensor_clear_grad(clg_tensor *t)
{
    if (!t) return;
    clg__tensor_release(t->grad);
    t->grad = NULL;
    t->grad_zero = false;
}

clg_status clg_tensor_retain_grad(clg_tensor *t)
{
    if (!t) return CLG_ERR_INVALID_ARGUMENT;
    if (!t->requires_grad)
        return clg__fail(t->dev, CLG_ERR_INVALID_ARGUMENT, "clg_tensor_retain_grad: %s does not require a gradient",
                         CLG_DESC(t));
    t->retain_grad = true;   /* a leaf keeps its gradient anyway */
    return CLG_OK;
}

clg_status clg_tensor_register_hook(clg_tensor *t, clg_grad_hook fn, void *user)
{
    if (!t || !fn) return CLG_ERR_INVALID_ARGUMENT;
    if (!t->requires_grad)
        return clg__fail(t->dev, CLG_ERR_INVALID_ARGUMENT, "clg_tensor_register_hook: %s does not require a gradient",
                         CLG_DESC(t));
    clg_hook *h = malloc(sizeof *h), **end = &t->hooks;
    if (!h) return clg__fail(t->dev, CLG_ERR_OUT_OF_MEMORY, "clg_tensor_register_hook: out of host memory");
    while (*end) end = &(*end)->next;
    *h = (clg_hook){fn, user, NULL};
    *end = h;
    return CLG_OK;
}

clg_status clg_tensor_register_post_accumulate_hook(clg_tensor *t, clg_post_accumulate_hook fn, void *user)
{
    if (!t || !fn) return CLG_ERR_INVALID_ARGUMENT;
    if (!t->requires_grad || t->node)
        return clg__fail(t->dev, CLG_ERR_INVALID_ARGUMENT, "clg_tensor_register_post_accumulate_hook: %s is not a leaf "
                         "that requires a gradient", CLG_DESC(t));
    clg_post_hook *h = malloc(sizeof *h), **end = &t->post_hooks;
    if (!h) return clg__fail(t->dev, CLG_ERR_OUT_OF_MEMORY, "clg_tensor_register_post_accumulate_hook: out of host memory");
    while (*end) end = &(*end)->next;
    *h = (clg_post_hook){fn, user, NULL};
    *end = h;
    return CLG_OK;
}

void clg__remove_post_hook(clg_tensor *t, clg_post_accumulate_hook fn, void *user)
{
    for (clg_post_hook **h = &t->post_hooks; *h; h = &(*h)->next)
        if ((*h)->fn == fn && (*h)->user == user) {
            clg_post_hook *gone = *h;
            *h = gone->next;
            free(gone);
            return;
        }
}

clg_tensor *clg_detach(clg_tensor *t)
{
    if (!t) return NULL;
    return clg__tensor_view(t, t->ndim, t->shape, t->strides, t->offset);
}
