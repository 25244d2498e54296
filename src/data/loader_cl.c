/* loader_cl.c: the loader's OpenCL side: staging buffers in host-allocated memory
 * (CL_MEM_ALLOC_HOST_PTR, which drivers pin for fast DMA), an upload queue beside the
 * compute queue, and the events that order them. All on the main thread. */
#include <string.h>

#include "loader_impl.h"
#include "tensor_impl.h"

static clg_status map_staging(clg_loader *l, clg__slot *s, cl_bool blocking)
{
    cl_int e1, e2;
    cl_event *ev = blocking ? NULL : s->map_ev;
    s->hx = clEnqueueMapBuffer(l->upq, s->stage_x, blocking, CL_MAP_WRITE_INVALIDATE_REGION, 0, l->xbytes, 0, NULL,
                               ev, &e1);
    if (e1 != CL_SUCCESS) return clg__cl_fail(l->dev, e1, "clEnqueueMapBuffer", "loader staging");
    s->hy = clEnqueueMapBuffer(l->upq, s->stage_y, blocking, CL_MAP_WRITE_INVALIDATE_REGION, 0, l->ybytes, 0, NULL,
                               ev ? ev + 1 : NULL, &e2);
    if (e2 != CL_SUCCESS) return clg__cl_fail(l->dev, e2, "clEnqueueMapBuffer", "loader staging");
    return CLG_OK;
}

static cl_mem buffer(clg_loader *l, cl_mem_flags flags, size_t bytes, cl_int *e)
{
    return clCreateBuffer(l->dev->ctx, flags, bytes, NULL, e);
}

clg_status clg__slot_create(clg_loader *l, clg__slot *s)
{
    cl_int e[4];
    s->stage_x = buffer(l, CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, l->xbytes, &e[0]);
    s->stage_y = buffer(l, CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, l->ybytes, &e[1]);
    s->dev_x = buffer(l, CL_MEM_READ_WRITE, l->xbytes, &e[2]);
    s->dev_y = buffer(l, CL_MEM_READ_WRITE, l->ybytes, &e[3]);
    for (int i = 0; i < 4; i++)
        if (e[i] != CL_SUCCESS) return clg__cl_fail(l->dev, e[i], "clCreateBuffer", "loader batch buffers");
    return map_staging(l, s, CL_TRUE);
}

/* A copy, or for an empty shard's batch (clg_loader_config.shard_count) a marker in its
 * place: a copy of 0 bytes is an error, and the events must still be there. */
static cl_int copy_or_mark(cl_command_queue q, cl_mem src, cl_mem dst, size_t bytes, cl_uint nwait,
                           const cl_event *wait, cl_event *ev)
{
    if (bytes == 0) return clEnqueueMarkerWithWaitList(q, nwait, wait, ev);
    return clEnqueueCopyBuffer(q, src, dst, 0, 0, bytes, nwait, wait, ev);
}

clg_status clg__slot_upload(clg_loader *l, clg__slot *s)
{
    size_t xb = (size_t)s->count * (size_t)l->numel * sizeof(float);
    size_t yb = l->ybytes / (size_t)l->cfg.batch_size * (size_t)s->count;
    CLG_CL_TRY(l->dev, clEnqueueUnmapMemObject(l->upq, s->stage_x, s->hx, 0, NULL, NULL), "clEnqueueUnmapMemObject",
               "loader staging");
    CLG_CL_TRY(l->dev, clEnqueueUnmapMemObject(l->upq, s->stage_y, s->hy, 0, NULL, NULL), "clEnqueueUnmapMemObject",
               "loader staging");
    s->hx = NULL;
    s->hy = NULL;
    /* The slot's device buffers may still be read by the last hand-out's copies. */
    cl_uint nwait = s->out_ev ? 1 : 0;
    CLG_CL_TRY(l->dev, copy_or_mark(l->upq, s->stage_x, s->dev_x, xb, nwait, nwait ? &s->out_ev : NULL, NULL),
               "clEnqueueCopyBuffer", "loader upload");
    CLG_CL_TRY(l->dev, copy_or_mark(l->upq, s->stage_y, s->dev_y, yb, 0, NULL, &s->up_ev),
               "clEnqueueCopyBuffer", "loader upload");
    if (s->out_ev) clReleaseEvent(s->out_ev);
    s->out_ev = NULL;
    clg_status st = map_staging(l, s, CL_FALSE);   /* behind the copies on the in-order queue */
    if (st) return st;
    CLG_CL_TRY(l->dev, clFlush(l->upq), "clFlush", "loader upload queue");
    return CLG_OK;
}

clg_status clg__slot_hand_out(clg_loader *l, clg__slot *s, clg_tensor **x, clg_tensor **y)
{
    clg_device *dev = l->dev;
    int ndim;
    const int64_t *shape = clg_dataset_sample_shape(l->ds, &ndim);
    int64_t xs[CLG_MAX_DIMS + 1] = {s->count}, ys[2] = {s->count, l->classes};
    memcpy(xs + 1, shape, (size_t)ndim * sizeof *shape);
    if (ndim + 1 > CLG_MAX_DIMS)
        return clg__fail(dev, CLG_ERR_SHAPE, "clg_loader_next: samples of %d axes make batches of more than %d", ndim,
                         CLG_MAX_DIMS);
    clg_tensor *tx = clg__tensor_new(dev, CLG_F32, ndim + 1, xs);
    clg_tensor *ty = tx ? clg__tensor_new(dev, l->cfg.one_hot ? CLG_F32 : CLG_I32, l->cfg.one_hot ? 2 : 1, ys) : NULL;
    if (!ty) {
        clg_tensor_free(tx);
        return dev->status ? dev->status : CLG_ERR_OUT_OF_MEMORY;
    }
    size_t xb = (size_t)tx->numel * sizeof(float), yb = (size_t)ty->numel * 4;
    cl_event ev;
    cl_int e = copy_or_mark(dev->queue, s->dev_x, tx->buf->mem, xb, 1, &s->up_ev, &ev);
    if (e == CL_SUCCESS) {
        clReleaseEvent(ev);
        e = copy_or_mark(dev->queue, s->dev_y, ty->buf->mem, yb, 0, NULL, &s->out_ev);
    }
    /* The upload queue will wait on out_ev (clg__slot_upload). OpenCL only promises that a
     * wait on another queue's event ends once that queue has been flushed: POCL submits
     * eagerly and hides a missing flush, rusticl does not and the upload waits for ever. */
    if (e == CL_SUCCESS) e = clFlush(dev->queue);
    if (e != CL_SUCCESS) {
        clg_tensor_free(tx);
        clg_tensor_free(ty);
        return clg__cl_fail(dev, e, "clEnqueueCopyBuffer/clFlush", "loader batch to tensor");
    }
    /* The bytes crossed from host memory on the upload queue; count them as this
     * batch's transfers now that they reach the caller. */
    dev->transfers.h2d_bytes += xb + yb;
    dev->transfers.h2d_count += 2;
    *x = tx;
    *y = ty;
    return CLG_OK;
}

/* The staging memory goes back to the workers once its copies to the device are done.
 * The maps follow the copies on the in-order upload queue, yet waiting for the maps
 * alone is not enough: NVIDIA's driver (580, on an H100) completes a map of pinned
 * memory at once, while the copy out of it still runs, and the workers' next batch
 * overwrote rows of the last (test_data_loader). So wait for the last copy too. */
clg_status clg__slot_remap(clg_loader *l, clg__slot *s)
{
    cl_int e = CL_SUCCESS;
    cl_event *evs[3] = {&s->up_ev, &s->map_ev[0], &s->map_ev[1]};
    for (int i = 0; i < 3; i++) {   /* one may be missing when a copy or map failed */
        if (!*evs[i]) continue;
        cl_int ei = clWaitForEvents(1, evs[i]);
        if (e == CL_SUCCESS) e = ei;
        clReleaseEvent(*evs[i]);
        *evs[i] = NULL;
    }
    if (e != CL_SUCCESS) return clg__cl_fail(l->dev, e, "clWaitForEvents", "loader staging map");
    return CLG_OK;
}

void clg__slot_destroy(clg_loader *l, clg__slot *s)
{
    if (s->out_ev) clWaitForEvents(1, &s->out_ev);
    if (s->map_ev[0] || s->map_ev[1] || s->up_ev) clg__slot_remap(l, s);
    if (s->out_ev) clReleaseEvent(s->out_ev);
    if (s->hx) clEnqueueUnmapMemObject(l->upq, s->stage_x, s->hx, 0, NULL, NULL);
    if (s->hy) clEnqueueUnmapMemObject(l->upq, s->stage_y, s->hy, 0, NULL, NULL);
    clg__queue_finish(l->upq);
    cl_mem m[4] = {s->stage_x, s->stage_y, s->dev_x, s->dev_y};
    for (int i = 0; i < 4; i++)
        if (m[i]) clReleaseMemObject(m[i]);
    memset(s, 0, sizeof *s);
}
