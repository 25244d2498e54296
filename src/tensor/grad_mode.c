/* grad_mode.c: the switch that says whether ops record on the tape (clgrad/autograd.h's
 * no-grad regions). It lives with the ops, below the backward engine (src/autograd/),
 * which turns it off for its own pass: the ops read it, the engine only sets it. */
#include "tensor_impl.h"

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
