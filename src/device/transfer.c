/* transfer.c: copies between host and device, counted, and device-to-device copies.
 * Every host<->device byte of clgrad goes through here, so the counters are exact. */
#include "capture.h"
#include "device_cl.h"

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
    if (dev->cap) clg__cap_write(dev, dst, off, src, bytes);
    /* Blocking: the caller's memory may be gone when the call returns. */
    CLG_CL_TRY(dev, clEnqueueWriteBuffer(dev->queue, dst->mem, CL_TRUE, off, bytes, src, 0, NULL, NULL),
               "clEnqueueWriteBuffer", "host to device");
    dev->transfers.h2d_bytes += bytes;
    dev->transfers.h2d_count++;
    return CLG_OK;
}

clg_status clg__read(clg_device *dev, const clg_buffer *src, size_t off, void *dst, size_t bytes)
{
    if (bytes == 0) return CLG_OK;
    clg_status st = check_range(dev, src, off, bytes, "clg_read");
    if (st) return st;
    if (dev->cap) clg__cap_read(dev, bytes);
    /* The kernels' error word, read on the way (errflag.c): queued first, so it has
     * landed when the blocking read returns. Not counted as a transfer. */
    if (dev->kerr.word)
        CLG_CL_TRY(dev, clEnqueueReadBuffer(dev->queue, dev->kerr.word->mem, CL_FALSE, 0, sizeof dev->kerr.host,
                                            dev->kerr.host, 0, NULL, NULL),
                   "clEnqueueReadBuffer", "kernel error word");
    CLG_CL_TRY(dev, clEnqueueReadBuffer(dev->queue, src->mem, CL_TRUE, off, bytes, dst, 0, NULL, NULL),
               "clEnqueueReadBuffer", "device to host");
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
    if (dev->cap)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: asynchronous transfers are not captured by graphs", call);
    return check_range(dev, b, off, bytes, call);
}

clg_status clg__write_async(clg_device *dev, clg_buffer *dst, size_t off, const void *src, size_t bytes,
                            clg_event **done)
{
    clg_status st = async_check(dev, dst, off, bytes, "clg_write_async");
    if (st) return st;
    cl_event ev = NULL;
    CLG_CL_TRY(dev, clEnqueueWriteBuffer(dev->queue, dst->mem, CL_FALSE, off, bytes, src, 0, NULL, done ? &ev : NULL),
               "clEnqueueWriteBuffer", "host to device, asynchronous");
    if (done) *done = (clg_event *)ev;
    dev->transfers.h2d_bytes += bytes;
    dev->transfers.h2d_count++;
    return CLG_OK;
}

clg_status clg__read_async(clg_device *dev, const clg_buffer *src, size_t off, void *dst, size_t bytes,
                           clg_event **done)
{
    clg_status st = async_check(dev, src, off, bytes, "clg_read_async");
    if (st) return st;
    cl_event ev = NULL;
    CLG_CL_TRY(dev, clEnqueueReadBuffer(dev->queue, src->mem, CL_FALSE, off, bytes, dst, 0, NULL, done ? &ev : NULL),
               "clEnqueueReadBuffer", "device to host, asynchronous");
    if (done) *done = (clg_event *)ev;
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
    if (dev->cap) clg__cap_copy(dev, src, src_off, dst, dst_off, bytes);
    CLG_CL_TRY(dev, clEnqueueCopyBuffer(dev->queue, src->mem, dst->mem, src_off, dst_off, bytes, 0, NULL, NULL),
               "clEnqueueCopyBuffer", "device to device");
    return CLG_OK;
}
