/* profile_layer.c: the profiling layer (layer.h), pushed at open with CLG_PROFILE=1:
 * every launch and host function asks for its event and hands it to the profiler
 * (opencl/profile.c), which folds it into the kernel's totals once the queue drains.
 * Where the device's profiling clock does not tick, each launch first waits for the
 * queue, so that its host time is its own. */
#include "backend.h"
#include "layer.h"

static clg_buffer *prof_alloc(clg_rt *rt, size_t bytes, uint64_t keep, bool *kept)
{
    return rt->below->ops->alloc(rt->below, bytes, keep, kept);
}

static void prof_release(clg_rt *rt, clg_buffer *b) { rt->below->ops->release(rt->below, b); }

static clg_status prof_write(clg_rt *rt, const clg_buffer *dst, size_t off, const void *src, size_t bytes,
                             bool blocking)
{
    return rt->below->ops->write(rt->below, dst, off, src, bytes, blocking);
}

static clg_status prof_read(clg_rt *rt, const clg_buffer *src, size_t off, void *dst, size_t bytes)
{
    return rt->below->ops->read(rt->below, src, off, dst, bytes);
}

static clg_status prof_copy(clg_rt *rt, const clg_buffer *src, size_t src_off, const clg_buffer *dst, size_t dst_off,
                            size_t bytes)
{
    return rt->below->ops->copy(rt->below, src, src_off, dst, dst_off, bytes);
}

static clg_status prof_set_args(clg_rt *rt, clg_kernel *k, clg_kobj *obj, const clg_arg *args, int nargs)
{
    return rt->below->ops->set_args(rt->below, k, obj, args, nargs);
}

/* The event of a command of k's, to the profiler (or to the caller too, when it asked:
 * then the profiler gets a reference of its own). */
static void timed(clg_device *dev, clg_kernel *k, clg_event *ev, clg_event **done)
{
    if (!ev) return;
    if (k->prof_slot < 0) k->prof_slot = clg__profile_slot(dev, k->name);
    if (done) {
        *done = ev;
        clg__event_retain(ev);
    }
    clg__profile_event(dev, k->prof_slot, ev);
}

static clg_status prof_launch(clg_rt *rt, clg_kernel *k, clg_kobj *obj, int dims, const size_t *offset,
                              const size_t *global, const size_t *local, clg_event **done)
{
    clg_event *ev = NULL;
    if (rt->dev->prof.host_timed) clg__profile_before_enqueue(rt->dev);
    clg_status st = rt->below->ops->launch(rt->below, k, obj, dims, offset, global, local, &ev);
    if (st == CLG_OK) timed(rt->dev, k, ev, done);
    return st;
}

static clg_status prof_native(clg_rt *rt, clg_kernel *k, const clg_arg *args, int nargs, clg_event **done)
{
    clg_event *ev = NULL;
    if (rt->dev->prof.host_timed) clg__profile_before_enqueue(rt->dev);
    clg_status st = rt->below->ops->native(rt->below, k, args, nargs, &ev);
    if (st == CLG_OK) timed(rt->dev, k, ev, done);
    return st;
}

const clg_rt_ops clg__rt_profile_ops = {
    .name = "profiling",
    .alloc = prof_alloc,
    .release = prof_release,
    .write = prof_write,
    .read = prof_read,
    .copy = prof_copy,
    .set_args = prof_set_args,
    .launch = prof_launch,
    .native = prof_native,
};
