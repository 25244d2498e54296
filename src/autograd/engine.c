/* engine.c: the backward pass, and the autograd API around it.
 *
 * clg_backward walks the tape from the root in reverse topological order. Each node
 * turns the gradient of its output into gradients of its inputs (device ops, in
 * no-grad mode); gradients reaching one tensor from several uses are added; a
 * gradient with a broadcast shape is summed back to its input's shape. Leaves that
 * require a gradient accumulate into their own .grad, which they own. Everything
 * else the pass makes lives in a scope of its own that ends with the pass. */
#include <stdlib.h>
#include <string.h>

#include "tensor_impl.h"

typedef struct frame { clg_tensor *t; int next; } frame;

/* Tensors reachable from root through inputs that require a gradient, in post order
 * (every tensor after the tensors it was made from). */
static clg_tensor **topo_order(clg_tensor *root, clg_tensor_state *s, size_t *count)
{
    size_t cap = 64, n = 0, depth = 0, scap = 64;
    clg_tensor **order = malloc(cap * sizeof *order);
    frame *stack = malloc(scap * sizeof *stack);
    uint64_t gen = ++s->visit_gen;
    if (!order || !stack) goto oom;
    root->visit = gen;
    stack[depth++] = (frame){root, 0};
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
    free(stack);
    *count = n;
    return order;
oom:
    free(order);
    free(stack);
    return NULL;
}

/* t.grad += g (g has t's shape). The gradient belongs to t, not to any scope. */
static clg_status accumulate_leaf(clg_tensor *t, clg_tensor *g)
{
    if (!t->grad) {
        clg_tensor *grad = clg__tensor_new(t->dev, t->dtype, t->ndim, t->shape);
        if (!grad) return t->dev->status;
        clg__tensor_unscope(grad);   /* keeps its one reference, now t's */
        t->grad = grad;
        return clg_copy_(grad, g);
    }
    return clg_axpy_(t->grad, 1.0, g);
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

static clg_status propagate(clg_tensor *t)
{
    clg_tensor *g = t->bgrad;
    if (!g) return CLG_OK;
    if (!t->node) return t->requires_grad ? accumulate_leaf(t, g) : CLG_OK;
    clg_node *node = t->node;
    clg_tensor *small[CLG_NODE_INLINE] = {0};
    clg_tensor **gin = node->ninputs <= CLG_NODE_INLINE ? small : calloc((size_t)node->ninputs, sizeof *gin);
    if (!gin) return clg__fail(t->dev, CLG_ERR_OUT_OF_MEMORY, "clg_backward: out of host memory");
    clg_status st = clg__node_check_versions(node);
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

clg_status clg_backward(clg_tensor *root, clg_tensor *grad)
{
    if (!root) return CLG_ERR_INVALID_ARGUMENT;
    clg_device *dev = root->dev;
    clg_tensor_state *s = clg__tstate(dev);
    if (!s) return CLG_ERR_OUT_OF_MEMORY;
    if (!root->requires_grad)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT,
                         "clg_backward: %s does not require a gradient (no input of the ops that made it does)",
                         CLG_DESC(root));
    if (grad && (grad->dtype != root->dtype || grad->ndim != root->ndim ||
                 memcmp(grad->shape, root->shape, (size_t)root->ndim * sizeof *root->shape)))
        return clg__fail(dev, CLG_ERR_SHAPE, "clg_backward: gradient %s does not match the root %s", CLG_DESC(grad),
                         CLG_DESC(root));
    if (!grad && root->numel != 1)
        return clg__fail(dev, CLG_ERR_SHAPE,
                         "clg_backward: a gradient is needed for a root of %s (only one-element roots get ones)",
                         CLG_DESC(root));
    size_t n = 0;
    clg_tensor **order = topo_order(root, s, &n);
    if (!order) return clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_backward: out of host memory");

    clg_scope_begin(dev);
    clg_no_grad_begin(dev);
    clg_status st = CLG_OK;
    clg_tensor *g0 = grad ? grad : clg_full(dev, root->dtype, root->ndim, root->shape, 1.0);
    if (!g0) st = dev->status;
    else {
        clg__tensor_retain(g0);
        root->bgrad = g0;
    }
    for (size_t k = n; st == CLG_OK && k-- > 0;) st = propagate(order[k]);
    for (size_t k = 0; k < n; k++) {
        clg__tensor_release(order[k]->bgrad);
        order[k]->bgrad = NULL;
    }
    clg_no_grad_end(dev);
    clg_scope_end(dev);
    free(order);
    return st;
}

/* ---- the API around it --------------------------------------------------------------------- */

clg_status clg_tensor_set_requires_grad(clg_tensor *t, bool requires_grad)
{
    if (!t) return CLG_ERR_INVALID_ARGUMENT;
    if (requires_grad && !clg__is_float(t->dtype))
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
clg_tensor *clg_tensor_grad(const clg_tensor *t) { return t ? t->grad : NULL; }
bool clg_tensor_has_history(const clg_tensor *t) { return t && t->node; }

void clg_tensor_zero_grad(clg_tensor *t)
{
    if (!t || !t->grad) return;
    clg_no_grad_begin(t->dev);
    clg_fill_(t->grad, 0.0);
    clg_no_grad_end(t->dev);
}

void clg_tensor_clear_grad(clg_tensor *t)
{
    if (!t) return;
    clg__tensor_release(t->grad);
    t->grad = NULL;
}

clg_tensor *clg_detach(clg_tensor *t)
{
    if (!t) return NULL;
    return clg__tensor_view(t, t->ndim, t->shape, t->strides, t->offset);
}

void clg_no_grad_begin(clg_device *dev)
{
    clg_tensor_state *s = dev ? clg__tstate(dev) : NULL;
    if (s) s->no_grad++;
}

void clg_no_grad_end(clg_device *dev)
{
    clg_tensor_state *s = dev ? clg__tstate(dev) : NULL;
    if (s && s->no_grad > 0) s->no_grad--;
}

bool clg_grad_enabled(const clg_device *dev)
{
    const clg_tensor_state *s = dev ? dev->slots[CLG_SLOT_TENSOR].data : NULL;
    return !s || s->no_grad == 0;
}
