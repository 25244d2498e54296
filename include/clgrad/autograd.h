/* clgrad/autograd.h: reverse-mode automatic differentiation, PyTorch-style.
 *
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) return 1;
 *   clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(8, 3), 0, 1), *y = clg_randn(dev, CLG_F32, CLG_SHAPE(8, 1), 0, 1);
 *   clg_tensor *w = clg_zeros(dev, CLG_F32, CLG_SHAPE(3, 1));
 *   clg_tensor_set_requires_grad(w, true);           // a leaf that wants a gradient
 *   for (int step = 0; step < 20; step++) {
 *       clg_scope_begin(dev);
 *       clg_tensor *loss = clg_mse(clg_matmul(x, w), y, CLG_REDUCE_MEAN);
 *       clg_backward(loss, NULL);                    // w's grad += d loss / d w
 *       clg_no_grad_begin(dev);
 *       clg_axpy_(w, -0.1, clg_tensor_grad(w));      // update outside the tape
 *       clg_no_grad_end(dev);
 *       clg_tensor_zero_grad(w);
 *       clg_scope_end(dev);                          // frees the step's tensors and tape
 *   }
 *   clg_device_close(dev);
 *
 * An op records a node on the tape only when grad mode is on and one of its inputs
 * requires a gradient; its result then requires one too. Backward runs on the
 * device with device kernels: it copies nothing to the host. Gradients accumulate:
 * two backward passes add up, until clg_tensor_zero_grad. The gradient of an input
 * that was broadcast is summed back to the input's shape. Non-leaves keep theirs on
 * request (clg_tensor_retain_grad); hooks see and may replace any tensor's gradient
 * (clg_tensor_register_hook); clg_grad returns gradients instead of accumulating them.
 */
#ifndef CLGRAD_AUTOGRAD_H
#define CLGRAD_AUTOGRAD_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Only float tensors can require a gradient. */
CLG_API clg_status clg_tensor_set_requires_grad(clg_tensor *t, bool requires_grad);
CLG_API bool clg_tensor_requires_grad(const clg_tensor *t);
/* The accumulated gradient of a leaf (same shape), NULL before any backward. Owned by t. */
CLG_API clg_tensor *clg_tensor_grad(const clg_tensor *t);
/* Zero the gradient, keeping its memory. Lazily: the next backward pass writes the
 * gradient instead of adding to it (no fill, no add), and a read before that sees zeros. */
CLG_API void clg_tensor_zero_grad(clg_tensor *t);
/* Drop the gradient. */
CLG_API void clg_tensor_clear_grad(clg_tensor *t);
/* True when t was made by an op on the tape (not a leaf). */
CLG_API bool clg_tensor_has_history(const clg_tensor *t);

/* Backpropagate from `root`. grad: d(something)/d(root), same shape; NULL means ones
 * and needs a one-element root (a scalar loss). Accumulates into the leaves that
 * require a gradient. The tape stays, so it may run again (gradients add up). */
CLG_API clg_status clg_backward(clg_tensor *root, clg_tensor *grad);

/* Keep the gradient of a non-leaf (a tensor made by an op) in clg_tensor_grad after
 * each backward pass, as leaves keep theirs (torch's retain_grad). Accumulates alike.
 * A tensor's hooks (below) run first: what is kept, or accumulated into a leaf, is the
 * gradient as the last hook left it (PyTorch 2's order). */
CLG_API clg_status clg_tensor_retain_grad(clg_tensor *t);
/* A function run on t's gradient in every backward pass, before t's gradient is used
 * (accumulated into a leaf, or passed on). It may replace *grad by a tensor of the same
 * shape and dtype that it makes (it runs in no-grad mode, in the pass's own scope);
 * a status other than CLG_OK stops the pass with it. Hooks run in the order registered. */
typedef clg_status (*clg_grad_hook)(clg_tensor *t, clg_tensor **grad, void *user);
CLG_API clg_status clg_tensor_register_hook(clg_tensor *t, clg_grad_hook fn, void *user);
/* A function run in every clg_backward pass once the pass has accumulated its gradient
 * into leaf t's .grad (torch's register_post_accumulate_grad_hook): t's gradient is
 * final for this pass, its update enqueued. Data-parallel training (clgrad/dist.h)
 * starts reducing gradients from here while the rest of backward runs. Not run by
 * clg_grad. A status other than CLG_OK stops the pass with it. */
typedef clg_status (*clg_post_accumulate_hook)(clg_tensor *t, void *user);
CLG_API clg_status clg_tensor_register_post_accumulate_hook(clg_tensor *t, clg_post_accumulate_hook fn, void *user);
/* The gradients of outputs (n of them, seeded by grad_outputs, NULL entries or a NULL
 * array meaning ones for one-element outputs) with respect to inputs (m of them, any
 * tensors on the outputs' tape), as torch.autograd.grad: returned in grads (new
 * tensors in the current scope), not accumulated into anyone's .grad; hooks run as in
 * clg_backward. An input the outputs do not depend on is an error. No graph is
 * recorded for the gradients (no second derivatives). */
CLG_API clg_status clg_grad(int n, clg_tensor *const *outputs, clg_tensor *const *grad_outputs, int m,
                            clg_tensor *const *inputs, clg_tensor **grads);
/* A view of t's values without history and without requires_grad. */
CLG_API clg_tensor *clg_detach(clg_tensor *t);

/* Regions where ops record nothing (nestable). */
CLG_API void clg_no_grad_begin(clg_device *dev);
CLG_API void clg_no_grad_end(clg_device *dev);
CLG_API bool clg_grad_enabled(const clg_device *dev);

#ifdef __cplusplus
}
#endif
#endif
