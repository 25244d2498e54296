/* autocast.c: mixed precision as PyTorch's torch.autocast does it: inside
 * clg_autocast_begin / clg_autocast_end, the ops that multiply matrices (matmul, linear,
 * the convolutions) cast their float32 operands to float16 or bfloat16 and return
 * 16-bit results; the losses widen 16-bit inputs to float32 (always, autocast or not).
 * The casts are ops on the tape, so float32 parameters (the master weights) get
 * float32 gradients. Everything else follows its inputs' dtype. */
#include "tensor_impl.h"

clg_status clg_autocast_begin(clg_device *dev, clg_dtype dtype)
{
    clg_tensor_state *s = dev ? clg__tstate(dev) : NULL;
    if (!s) return dev ? clg_device_last_status(dev) : CLG_ERR_INVALID_ARGUMENT;
    if (!clg__is_half(dtype))
        return clg__fail(dev, CLG_ERR_DTYPE, "clg_autocast_begin: want float16 or bfloat16, got %s", clg_dtype_name(dtype));
    if (s->autocast_depth && s->autocast != dtype)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_autocast_begin: %s inside a %s region", clg_dtype_name(dtype),
                         clg_dtype_name(s->autocast));
    s->autocast = dtype;
    s->autocast_depth++;
    return CLG_OK;
}

void clg_autocast_end(clg_device *dev)
{
    clg_tensor_state *s = dev ? clg__tstate(dev) : NULL;
    if (s && s->autocast_depth > 0 && --s->autocast_depth == 0) s->autocast = CLG_F32;
}

clg_dtype clg_autocast_dtype(clg_device *dev)
{
    clg_tensor_state *s = dev ? clg__tstate(dev) : NULL;
    return s && s->autocast_depth ? s->autocast : CLG_F32;
}

clg_tensor *clg__autocast(clg_tensor *t)
{
    if (!t || t->dtype != CLG_F32) return t;
    clg_dtype d = clg_autocast_dtype(t->dev);
    return d == CLG_F32 ? t : clg_cast(t, d);
}

clg_tensor *clg__widen16(clg_tensor *t)
{
    return t && clg__is_half(t->dtype) ? clg_cast(t, CLG_F32) : t;
}

void clg__drop_cast(clg_tensor *made, const clg_tensor *t)
{
    if (made != t) clg_tensor_free(made);
}
