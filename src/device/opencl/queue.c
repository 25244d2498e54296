/* queue.c: the runtime seam's queues, events and the buffers the pool does not own
 * (runtime.h), for the layers that move data beside the device's queue (the loader).
 * A clg_queue is an OpenCL command queue, a clg_event an OpenCL event. */
#include <stdlib.h>

#include "device_cl.h"

clg_queue *clg__device_queue(clg_device *dev) { return (clg_queue *)dev->cl->queue; }

clg_queue *clg__queue_new(clg_device *dev, const char *what)
{
    cl_int e;
    cl_command_queue q = clCreateCommandQueue(dev->cl->ctx, dev->cl->id, 0, &e);
    if (e != CL_SUCCESS) {
        clg__cl_fail(dev, e, "clCreateCommandQueue", what);
        return NULL;
    }
    return (clg_queue *)q;
}

void clg__queue_free(clg_queue *q)
{
    if (!q) return;
    clg__queue_finish((cl_command_queue)q);
    clReleaseCommandQueue((cl_command_queue)q);
}

clg_status clg__queue_flush(clg_device *dev, clg_queue *q, const char *what)
{
    CLG_CL_TRY(dev, clFlush((cl_command_queue)q), "clFlush", what);
    return CLG_OK;
}

clg_status clg__queue_wait(clg_device *dev, clg_queue *q, const char *what)
{
    CLG_CL_TRY(dev, clg__queue_finish((cl_command_queue)q), "clFinish", what);
    return CLG_OK;
}

clg_status clg__queue_copy(clg_device *dev, clg_queue *q, const clg_buffer *src, clg_buffer *dst, size_t bytes,
                           int nwait, clg_event *const *wait, clg_event **done, const char *what)
{
    cl_event ev = NULL, w[4];
    if (nwait < 0 || nwait > 4)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: %d events to wait for (0 to 4)", what, nwait);
    for (int i = 0; i < nwait; i++) w[i] = (cl_event)wait[i];
    cl_command_queue cq = (cl_command_queue)q;
    cl_event *out = done ? &ev : NULL;
    if (bytes == 0)
        CLG_CL_TRY(dev, clEnqueueMarkerWithWaitList(cq, (cl_uint)nwait, nwait ? w : NULL, out),
                   "clEnqueueMarkerWithWaitList", what);
    else
        CLG_CL_TRY(dev, clEnqueueCopyBuffer(cq, clg__cl_mem(src), clg__cl_mem(dst), 0, 0, bytes, (cl_uint)nwait, nwait ? w : NULL, out),
                   "clEnqueueCopyBuffer", what);
    if (done) *done = (clg_event *)ev;
    return CLG_OK;
}

clg_buffer *clg__buffer_unpooled(clg_device *dev, size_t bytes, bool staging, const char *what)
{
    clg_buffer *b = calloc(1, sizeof *b);
    if (!b) {
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "%s: out of host memory", what);
        return NULL;
    }
    /* CL_MEM_ALLOC_HOST_PTR: host memory that drivers pin for fast DMA */
    cl_mem_flags flags = staging ? CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR : CL_MEM_READ_WRITE;
    cl_int e;
    b->mem = (clg_mem *)clCreateBuffer(dev->cl->ctx, flags, bytes, NULL, &e);
    if (e != CL_SUCCESS) {
        free(b);
        clg__cl_fail(dev, e, "clCreateBuffer", what);
        return NULL;
    }
    b->size = bytes;
    b->refs = 1;
    b->dev = dev;
    return b;
}

void clg__buffer_free_unpooled(clg_buffer *b)
{
    if (!b) return;
    clReleaseMemObject(clg__cl_mem(b));
    free(b);
}

void *clg__queue_map_write(clg_device *dev, clg_queue *q, clg_buffer *b, size_t bytes, clg_event **done,
                           const char *what)
{
    cl_int e;
    cl_event ev = NULL;
    void *p = clEnqueueMapBuffer((cl_command_queue)q, clg__cl_mem(b), done ? CL_FALSE : CL_TRUE,
                                 CL_MAP_WRITE_INVALIDATE_REGION, 0, bytes, 0, NULL, done ? &ev : NULL, &e);
    if (e != CL_SUCCESS) {
        clg__cl_fail(dev, e, "clEnqueueMapBuffer", what);
        return NULL;
    }
    if (done) *done = (clg_event *)ev;
    return p;
}

clg_status clg__queue_unmap(clg_device *dev, clg_queue *q, clg_buffer *b, void *host, const char *what)
{
    CLG_CL_TRY(dev, clEnqueueUnmapMemObject((cl_command_queue)q, clg__cl_mem(b), host, 0, NULL, NULL),
               "clEnqueueUnmapMemObject", what);
    return CLG_OK;
}

int clg__event_wait(clg_event *ev)
{
    cl_event e = (cl_event)ev;
    cl_int status = CL_COMPLETE, r = clWaitForEvents(1, &e);
    if (r == CL_SUCCESS) r = clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    return r != CL_SUCCESS ? r : status < 0 ? status : 0;
}

void clg__event_release(clg_event *ev)
{
    if (ev) clReleaseEvent((cl_event)ev);
}

void clg__event_retain(clg_event *ev)
{
    if (ev) clRetainEvent((cl_event)ev);
}
