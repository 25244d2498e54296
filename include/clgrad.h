/* clgrad.h: everything clgrad offers, in one include.
 *
 *   #include <clgrad.h>
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) {
 *       fprintf(stderr, "clgrad: %s\n", clg_device_error(dev));
 *       return 1;
 *   }
 *   printf("clgrad %s on %s\n", clg_version(), clg_device_get_info(dev)->name);
 *   clg_device_close(dev);
 *
 * Link with `pkg-config --libs clgrad` or CMake's find_package(clgrad) and clgrad::clgrad.
 *
 * Conventions, followed by every header below:
 *
 * Names. Everything public starts with clg_ (CLG_ for constants and macros; clg__ is
 * internal). Objects are clg_<noun> with clg_<noun>_<verb> functions: clg_device_open,
 * clg_tensor_free, clg_module_forward, clg_loader_next, clg_safetensors_open. Tensor
 * ops and factories take PyTorch's names (clg_add, clg_matmul, clg_zeros, clg_empty),
 * in-place ops end in '_' (clg_fill_, clg_copy_), layers and containers are
 * clg_nn_<name> (clg_nn_linear, clg_nn_sequential). Constructors return the object
 * (clg_sgd_new) or fill an out-parameter when they report a status (clg_device_open).
 *
 * Types. Two element-type enums: clg_dtype, what a device tensor holds (float32,
 * float64, int32), and clg_elem_type, what a file or host array holds (every NumPy,
 * IDX and safetensors type).
 *
 * Errors. A call that can fail returns a clg_status (CLG_OK is 0) or a pointer (NULL
 * on failure); nothing exits or aborts. The message goes where the call's object lives:
 *   - calls on a device or its tensors, modules, optimizers, loaders: the device
 *     (clg_device_error, clg_device_last_status); a NULL input passes through as NULL
 *     (or CLG_ERR_INVALID_ARGUMENT) keeping the earlier message, so one check after a
 *     chain of ops finds the first failure;
 *   - calls with no device (file readers and model parsers that run before one is
 *     open, clg_concat of an empty list): the calling thread (clg_last_status,
 *     clg_last_error), and the caller's err buffer too when one is passed.
 * Queries (counts, names, sizes) cannot fail: a NULL object gives 0, "" or NULL. An
 * iterator says "no more" with CLG_OK and NULL results (clg_loader_next at the end of
 * an epoch). Kernel-side problems (an index out of range on the device) are reported
 * by the next read to the host (clg_tensor_to_host, clg_tensor_item), naming the op.
 *
 * Memory. Tensors belong to the innermost scope (clg_scope_begin/end) unless kept
 * (clg_tensor_keep) or owned (parameters, gradients); other objects are freed by their
 * clg_<noun>_free or _close, which take NULL.
 *
 * Old names kept for one release (until 0.2) as macros: clg_tensor_empty,
 * clg_sequential_new, clg_st_* and CLG_ST_* (now clg_elem_type, clg_safetensors_*).
 */
#ifndef CLGRAD_H
#define CLGRAD_H

#include "clgrad/status.h"
#include "clgrad/device.h"
#include "clgrad/tensor.h"
#include "clgrad/ops.h"
#include "clgrad/autograd.h"
#include "clgrad/graph.h"
#include "clgrad/data.h"
#include "clgrad/dist.h"
#include "clgrad/nn.h"
#include "clgrad/optim.h"
#include "clgrad/train.h"
#include "clgrad/tensorboard.h"
#include "clgrad/io.h"
#include "clgrad/model.h"
#include "clgrad/onnx.h"

#endif
