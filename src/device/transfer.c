/* transfer.c: copies between host and device, counted, and device-to-device copies.
 * Every host<->device byte of clgrad goes through here, so the counters are exact. */
#include "backend.h"
#include "layer.h"

static clg_status check_range(clg_device *dev, const clg_buffer *b, size_t off, size_t bytes,
                              const char *call)
{
    if (!b || off > b->size || bytes > b->size - off)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: range [%zu, +%zu) outside a buffer of %zu bytes",
                         call, off, bytes, b ? b->size : 0);
    return CLG_OK;
}

clg_status clg__write(clg_device *dev, clg_buffer *dst, size_t off, const void *src, size_t bytes)
{
    if (bytes == 0) return CLG_OK;
    clg_status st = check_range(dev, dst, off, bytes, "clg_write");
    if (st) return st;
    /* Blocking: the caller's memory may be gone when the call returns. */
    st = dev->rt->ops->write(dev->rt, dst, off, src, bytes, true);
    if (st) return st;
    dev->transfers.h2d_bytes += bytes;
    dev->transfers.h2d_count++;
    return CLG_OK;
}

clg_status clg__read(clg_device *dev, const clg_buffer *src, size_t off, void *dst, size_t bytes)
{
    if (bytes == 0) return CLG_OK;
    clg_status st = check_range(dev, src, off, bytes, "clg_read");
    if (st) return st;
    /* The kernels' error word, read on the way (errflag.c): queued first, so it has
     * landed when the blocking read returns. Not counted as a transfer. */
    if (dev->kerr.word)
        st = clg__mem_read(dev, dev->kerr.word, 0, dev->kerr.host, sizeof dev->kerr.host, false, NULL,
                           "kernel error word");
    if (!st) st = dev->rt->ops->read(dev->rt, src, off, dst, bytes);   /* a recording layer refuses it */
    if (st) return st;
    dev->transfers.d2h_bytes += bytes;
    dev->transfers.d2h_count++;
    clg__profile_collect(dev); /* the in-order queue has drained up to here */
    return clg__kernel_error_check(dev);
}

/* The asynchronous pair, for gradients that data-parallel training (src/dist/) moves
 * while the device still works: the host memory must stay untouched until *done (an
 * event the caller releases) completes. Not under a graph capture, which could not
 * replay a copy into host memory that belongs to no tensor. */
static clg_status async_check(clg_device *dev, const clg_buffer *b, size_t off, size_t bytes, const char *call)
{
    if (clg__capturing(dev))
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: asynchronous transfers are not captured by graphs", call);
    return check_range(dev, b, off, bytes, call);
}

clg_status clg__write_async(clg_device *dev, clg_buffer *dst, size_t off, const void *src, size_t bytes,
                            clg_event **done)
{
    clg_status st = async_check(dev, dst, off, bytes, "clg_write_async");
    if (st) return st;
    st = clg__mem_write(dev, dst, off, src, bytes, false, done, "host to device, asynchronous");
    if (st) return st;
    dev->transfers.h2d_bytes += bytes;
    dev->transfers.h2d_count++;
    return CLG_OK;
}

clg_status clg__read_async(clg_device *dev, const clg_buffer *src, size_t off, void *dst, size_t bytes,
                           clg_event **done)
{
    clg_status st = async_check(dev, src, off, bytes, "clg_read_async");
    if (st) return st;
    st = clg__mem_read(dev, src, off, dst, bytes, false, done, "device to host, asynchronous");
    if (st) return st;
    dev->transfers.d2h_bytes += bytes;
    dev->transfers.d2h_count++;
    return CLG_OK;
}

clg_status clg__copy(clg_device *dev, const clg_buffer *src, size_t src_off, clg_buffer *dst,
                     size_t dst_off, size_t bytes)
{
    if (bytes == 0) return CLG_OK;
    clg_status st = check_range(dev, src, src_off, bytes, "clg_copy");
    if (!st) st = check_range(dev, dst, dst_off, bytes, "clg_copy");
    if (st) return st;
    return dev->rt->ops->copy(dev->rt, src, src_off, dst, dst_off, bytes);
}
