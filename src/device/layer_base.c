/* layer_base.c: the bottom of the runtime's stack (layer.h): the pool's buffers and
 * the OpenCL implementation's calls (backend.h), with nothing added; and the stack's
 * push and pop. */
#include "backend.h"
#include "layer.h"

static clg_buffer *base_alloc(clg_rt *rt, size_t bytes, uint64_t keep, bool *kept)
{
    return clg__pool_take(rt->dev, bytes, keep, kept);
}

static void base_release(clg_rt *rt, clg_buffer *b) { clg__pool_put(rt->dev, b); }

static clg_status base_write(clg_rt *rt, const clg_buffer *dst, size_t off, const void *src, size_t bytes,
                             bool blocking)
{
    return clg__mem_write(rt->dev, dst, off, src, bytes, blocking, NULL, "host to device");
}

static clg_status base_read(clg_rt *rt, const clg_buffer *src, size_t off, void *dst, size_t bytes)
{
    return clg__mem_read(rt->dev, src, off, dst, bytes, true, NULL, "device to host");
}

static clg_status base_copy(clg_rt *rt, const clg_buffer *src, size_t src_off, const clg_buffer *dst, size_t dst_off,
                            size_t bytes)
{
    return clg__mem_copy(rt->dev, src, src_off, dst, dst_off, bytes, "device to device");
}

static clg_status base_set_args(clg_rt *rt, clg_kernel *k, clg_kobj *obj, const clg_arg *args, int nargs)
{
    return clg__kobj_set_args(rt->dev, obj, k->name, args, nargs);
}

static clg_status base_launch(clg_rt *rt, clg_kernel *k, clg_kobj *obj, int dims, const size_t *offset,
                              const size_t *global, const size_t *local, clg_event **done)
{
    return clg__kobj_enqueue(rt->dev, k, obj, dims, offset, global, local, done);
}

static clg_status base_native(clg_rt *rt, clg_kernel *k, const clg_arg *args, int nargs, clg_event **done)
{
    return clg__enqueue_native(rt->dev, k, args, nargs, done);
}

const clg_rt_ops clg__rt_base_ops = {
    .name = "base",
    .alloc = base_alloc,
    .release = base_release,
    .write = base_write,
    .read = base_read,
    .copy = base_copy,
    .set_args = base_set_args,
    .launch = base_launch,
    .native = base_native,
};

void clg__rt_push(clg_device *dev, clg_rt *l)
{
    l->dev = dev;
    l->below = dev->rt;
    dev->rt = l;
}

void clg__rt_pop(clg_device *dev, clg_rt *l)
{
    /* strictly nested: a layer not on top is a bug of src/device/, kept harmless */
    if (dev->rt == l) dev->rt = l->below;
}

void clg__rt_init(clg_device *dev)
{
    dev->rt_base = (clg_rt){.ops = &clg__rt_base_ops, .dev = dev};
    dev->rt = &dev->rt_base;
    if (dev->prof.enabled) {
        dev->rt_prof = (clg_rt){.ops = &clg__rt_profile_ops};
        clg__rt_push(dev, &dev->rt_prof);
    }
}
