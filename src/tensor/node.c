/* node.c: tape nodes. Each tensor made by an op on the tape owns one node, which
 * holds references to the op's inputs (and anything else its backward needs), so
 * that the graph stays alive exactly as long as the tensors at its ends. The ops
 * record here, below the backward engine (src/autograd/engine.c), which reads the
 * nodes: the ops never call the engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_impl.h"

const char *clg__op_name(int op)
{
    static const char *const names[] = {
#define X(name) #name,
#include "ops.def"
#undef X
    };
    return op >= 0 && op < CLG_OP_COUNT ? names[op] : "unknown";
}

bool clg__needs_grad(clg_device *dev, int n, clg_tensor *const *inputs)
{
    if (!clg_grad_enabled(dev)) return false;
    for (int i = 0; i < n; i++)
        if (inputs[i] && inputs[i]->requires_grad) return true;
    return false;
}

clg_node *clg__record(clg_tensor *out, int op, clg_backward_fn backward, int n, clg_tensor *const *inputs)
{
    clg_node *node = calloc(1, sizeof *node);
    clg_tensor **ins = n <= CLG_NODE_INLINE ? NULL : calloc((size_t)n, sizeof *ins);
    uint64_t *vers = n <= CLG_NODE_INLINE ? NULL : calloc((size_t)n, sizeof *vers);
    if (!node || (n > CLG_NODE_INLINE && (!ins || !vers))) {
        free(node);
        free(ins);
        free(vers);
        clg__fail(out->dev, CLG_ERR_OUT_OF_MEMORY, "clg_%s: out of host memory for the tape", clg__op_name(op));
        return NULL;
    }
    node->op = op;
    node->backward = backward;
    node->out = out;
    node->ninputs = n;
    node->inputs = ins ? ins : node->inline_inputs;
    node->in_versions = vers ? vers : node->inline_versions;
    for (int i = 0; i < n; i++) {
        node->inputs[i] = inputs[i];
        node->in_versions[i] = inputs[i] ? inputs[i]->buf->version : 0;
        clg__tensor_retain(inputs[i]);
    }
    node->out_version = out->buf->version;
    out->node = node;
    out->requires_grad = true;
    return node;
}

void clg__node_save(clg_node *node, int slot, clg_tensor *t)
{
    clg__tensor_retain(t);
    clg__tensor_release(node->saved[slot]);
    node->saved[slot] = t;
    node->saved_versions[slot] = t ? t->buf->version : 0;
}

void clg__tensor_written(clg_tensor *t)
{
    if (t && t->buf) t->buf->version++;
}

clg_tensor *clg__grad_target(clg_tensor *t)
{
    if (!t->grad) {
        clg_tensor *grad = clg__tensor_new(t->dev, t->dtype, t->ndim, t->shape);
        if (!grad) return NULL;
        clg__tensor_unscope(grad);
        t->grad = grad;
    }
    t->grad_zero = false;
    return t->grad;
}

clg_tensor *clg__grad_direct(clg_node *node, int i, bool can_add, double *beta)
{
    clg_tensor *t = node->inputs[i];
    clg_tensor_state *s = t ? clg__tstate(t->dev) : NULL;
    /* a leaf that keeps its gradient, with no hook to see it first or after, in a pass
     * that accumulates into .grad (clg_backward) */
    if (!s || !s->grad_direct || !clg__wants_grad(node, i) || t->node || !t->requires_grad || t->hooks ||
        t->post_hooks)
        return NULL;
    *beta = t->grad && !t->grad_zero ? 1.0 : 0.0;
    if (*beta != 0 && !can_add) return NULL;
    clg_tensor *g = clg__grad_target(t);
    if (g) clg__tensor_written(g);
    return g;
}

static clg_status changed(const clg_node *node, const char *what, const clg_tensor *t, uint64_t then)
{
    return clg__fail(t->dev, CLG_ERR_INVALID_ARGUMENT,
                     "clg_backward: %s %s, which the backward of %s reads, was modified by an in-place operation "
                     "after %s ran (its storage is at version %llu, %s recorded %llu); make the change after "
                     "clg_backward, or on a clone", what, CLG_DESC(t), clg__op_name(node->op), clg__op_name(node->op),
                     (unsigned long long)t->buf->version, clg__op_name(node->op), (unsigned long long)then);
}

clg_status clg__node_check_versions(const clg_node *node)
{
    char what[32];
    for (int i = 0; i < node->ninputs; i++) {
        const clg_tensor *t = node->inputs[i];
        if (t && t->buf->version != node->in_versions[i]) {
            snprintf(what, sizeof what, "input %d", i);
            return changed(node, what, t, node->in_versions[i]);
        }
    }
    for (int i = 0; i < 3; i++) {
        const clg_tensor *t = node->saved[i];
        if (t && t->buf->version != node->saved_versions[i]) return changed(node, "a saved tensor", t, node->saved_versions[i]);
    }
    if (node->out->buf->version != node->out_version) return changed(node, "the output", node->out, node->out_version);
    return CLG_OK;
}

void clg__node_free(clg_node *node)
{
    if (!node) return;
    for (int i = 0; i < node->ninputs; i++) clg__tensor_release(node->inputs[i]);
    for (int i = 0; i < 3; i++) clg__tensor_release(node->saved[i]);
    if (node->inputs != node->inline_inputs) free(node->inputs);
    if (node->in_versions != node->inline_versions) free(node->in_versions);
    free(node);
}

clg_tensor *clg__taped(clg_tensor *y, int op, clg_backward_fn backward, int n, clg_tensor *const *inputs,
                       clg_node **node_out)
{
    if (node_out) *node_out = NULL;
    if (!y || !clg__needs_grad(y->dev, n, inputs)) return y;
    clg_node *node = clg__record(y, op, backward, n, inputs);
    if (!node) {
        clg_tensor_free(y);
        return NULL;
    }
    if (node_out) *node_out = node;
    return y;
}

bool clg__wants_grad(const clg_node *node, int i)
{
    return i < node->ninputs && node->inputs[i] && node->inputs[i]->requires_grad;
}
