/* capture_layer.c: the recording layer (layer.h). While a graph capture is open it is
 * the top of the device's runtime stack: each operation is recorded (capture.c) and
 * then done by the layer below, so the step runs eagerly as always. Pushed by
 * clg__capture_begin and clg__cap_resume, popped by clg__capture_end and
 * clg__cap_pause. */
#include "capture_impl.h"
#include "layer.h"

/* Never an earlier owner's contents (keep 0): a replay's buffers are the capture's own. */
static clg_buffer *rec_alloc(clg_rt *rt, size_t bytes, uint64_t keep, bool *kept)
{
    (void)keep;
    if (kept) *kept = false;
    clg_buffer *b = rt->below->ops->alloc(rt->below, bytes, 0, NULL);
    if (b) clg__cap_born(rt->dev, b, bytes);
    return b;
}

static void rec_release(clg_rt *rt, clg_buffer *b)
{
    clg__cap_died(rt->dev, b);
    rt->below->ops->release(rt->below, b);
}

static clg_status rec_write(clg_rt *rt, const clg_buffer *dst, size_t off, const void *src, size_t bytes,
                            bool blocking)
{
    clg__cap_write(rt->dev, dst, off, src, bytes);
    return rt->below->ops->write(rt->below, dst, off, src, bytes, blocking);
}

static clg_status rec_read(clg_rt *rt, const clg_buffer *src, size_t off, void *dst, size_t bytes)
{
    clg__cap_read(rt->dev, bytes);   /* the capture fails: a replay does no host work */
    return rt->below->ops->read(rt->below, src, off, dst, bytes);
}

static clg_status rec_copy(clg_rt *rt, const clg_buffer *src, size_t src_off, const clg_buffer *dst, size_t dst_off,
                           size_t bytes)
{
    clg__cap_copy(rt->dev, src, src_off, dst, dst_off, bytes);
    return rt->below->ops->copy(rt->below, src, src_off, dst, dst_off, bytes);
}

static clg_status rec_set_args(clg_rt *rt, clg_kernel *k, clg_kobj *obj, const clg_arg *args, int nargs)
{
    clg_status st = clg__cap_rng(rt->dev, k, args, nargs);   /* generator positions: drawn anew at replay */
    if (st != CLG_OK) return st;
    clg__cap_args(rt->dev, k, args, nargs);
    return rt->below->ops->set_args(rt->below, k, obj, args, nargs);
}

static clg_status rec_launch(clg_rt *rt, clg_kernel *k, clg_kobj *obj, int dims, const size_t *offset,
                             const size_t *global, const size_t *local, clg_event **done)
{
    clg_status st = rt->below->ops->launch(rt->below, k, obj, dims, offset, global, local, done);
    if (st == CLG_OK) clg__cap_enqueue(rt->dev, dims, offset, global, local);
    return st;
}

static clg_status rec_native(clg_rt *rt, clg_kernel *k, const clg_arg *args, int nargs, clg_event **done)
{
    clg__cap_args(rt->dev, k, args, nargs);
    clg_status st = rt->below->ops->native(rt->below, k, args, nargs, done);
    if (st == CLG_OK) clg__cap_enqueue(rt->dev, 0, NULL, NULL, NULL);
    return st;
}

const clg_rt_ops clg__rt_record_ops = {
    .name = "recording",
    .alloc = rec_alloc,
    .release = rec_release,
    .write = rec_write,
    .read = rec_read,
    .copy = rec_copy,
    .set_args = rec_set_args,
    .launch = rec_launch,
    .native = rec_native,
};
