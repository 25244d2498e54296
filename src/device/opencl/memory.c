/* memory.c: device memory and the transfers on the device's queue (backend.h), for the
 * pool, transfer.c, the kernel error word and graph replay. */
#include "device_cl.h"

clg_mem *clg__mem_new(clg_device *dev, size_t bytes, int *err, bool *exhausted)
{
    cl_int e;
    cl_mem m = clCreateBuffer(dev->cl->ctx, CL_MEM_READ_WRITE, bytes, NULL, &e);
    *err = e;
    *exhausted = e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES;
    return e == CL_SUCCESS ? (clg_mem *)m : NULL;
}

void clg__mem_free(clg_mem *m)
{
    if (m) clReleaseMemObject((cl_mem)m);
}

clg_status clg__mem_write(clg_device *dev, const clg_buffer *dst, size_t off, const void *src, size_t bytes,
                          bool blocking, clg_event **done, const char *what)
{
    cl_event ev = NULL;
    CLG_CL_TRY(dev, clEnqueueWriteBuffer(dev->cl->queue, clg__cl_mem(dst), blocking ? CL_TRUE : CL_FALSE, off, bytes,
                                         src, 0, NULL, done ? &ev : NULL),
               "clEnqueueWriteBuffer", what);
    if (done) *done = (clg_event *)ev;
    return CLG_OK;
}

clg_status clg__mem_read(clg_device *dev, const clg_buffer *src, size_t off, void *dst, size_t bytes, bool blocking,
                         clg_event **done, const char *what)
{
    cl_event ev = NULL;
    CLG_CL_TRY(dev, clEnqueueReadBuffer(dev->cl->queue, clg__cl_mem(src), blocking ? CL_TRUE : CL_FALSE, off, bytes,
                                        dst, 0, NULL, done ? &ev : NULL),
               "clEnqueueReadBuffer", what);
    if (done) *done = (clg_event *)ev;
    return CLG_OK;
}

clg_status clg__mem_copy(clg_device *dev, const clg_buffer *src, size_t src_off, const clg_buffer *dst, size_t dst_off,
                         size_t bytes, const char *what)
{
    CLG_CL_TRY(dev, clEnqueueCopyBuffer(dev->cl->queue, clg__cl_mem(src), clg__cl_mem(dst), src_off, dst_off, bytes, 0,
                                        NULL, NULL),
               "clEnqueueCopyBuffer", what);
    return CLG_OK;
}
