/* loader_cl.c: the loader's device side: staging buffers in host memory that drivers
 * pin for fast DMA, an upload queue beside the compute queue, and the events that
 * order them, all through the runtime seam (src/device/runtime.h). All on the main
 * thread. */
#include <string.h>

#include "loader_impl.h"
#include "tensor_impl.h"

static clg_status map_staging(clg_loader *l, clg__slot *s, bool blocking)
{
    s->hx = clg__queue_map_write(l->dev, l->upq, s->stage_x, l->xbytes, blocking ? NULL : &s->map_ev[0],
                                 "loader staging");
    if (!s->hx) return l->dev->status;
    s->hy = clg__queue_map_write(l->dev, l->upq, s->stage_y, l->ybytes, blocking ? NULL : &s->map_ev[1],
                                 "loader staging");
    return s->hy ? CLG_OK : l->dev->status;
}

clg_status clg__slot_create(clg_loader *l, clg__slot *s)
{
    const char *what = "loader batch buffers";
    s->stage_x = clg__buffer_unpooled(l->dev, l->xbytes, true, what);
    s->stage_y = s->stage_x ? clg__buffer_unpooled(l->dev, l->ybytes, true, what) : NULL;
    s->dev_x = s->stage_y ? clg__buffer_unpooled(l->dev, l->xbytes, false, what) : NULL;
    s->dev_y = s->dev_x ? clg__buffer_unpooled(l->dev, l->ybytes, false, what) : NULL;
    if (!s->dev_y) return l->dev->status;
    return map_staging(l, s, true);
}

clg_status clg__slot_upload(clg_loader *l, clg__slot *s)
{
    size_t xb = (size_t)s->count * (size_t)l->numel * sizeof(float);
    size_t yb = l->ybytes / (size_t)l->cfg.batch_size * (size_t)s->count;
    clg_status st = clg__queue_unmap(l->dev, l->upq, s->stage_x, s->hx, "loader staging");
    if (!st) st = clg__queue_unmap(l->dev, l->upq, s->stage_y, s->hy, "loader staging");
    if (st) return st;
    s->hx = NULL;
    s->hy = NULL;
    /* The slot's device buffers may still be read by the last hand-out's copies. */
    int nwait = s->out_ev ? 1 : 0;
    st = clg__queue_copy(l->dev, l->upq, s->stage_x, s->dev_x, xb, nwait, &s->out_ev, NULL, "loader upload");
    if (!st) st = clg__queue_copy(l->dev, l->upq, s->stage_y, s->dev_y, yb, 0, NULL, &s->up_ev, "loader upload");
    if (st) return st;
    clg__event_release(s->out_ev);
    s->out_ev = NULL;
    st = map_staging(l, s, false);   /* behind the copies on the in-order queue */
    return st ? st : clg__queue_flush(l->dev, l->upq, "loader upload queue");
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
    const char *what = "loader batch to tensor";
    clg_queue *q = clg__device_queue(dev);
    clg_status st = clg__queue_copy(dev, q, s->dev_x, tx->buf, xb, 1, &s->up_ev, NULL, what);
    if (!st) st = clg__queue_copy(dev, q, s->dev_y, ty->buf, yb, 0, NULL, &s->out_ev, what);
    /* The upload queue will wait on out_ev (clg__slot_upload): flush, so that it ends. */
    if (!st) st = clg__queue_flush(dev, q, what);
    if (st) {
        clg_tensor_free(tx);
        clg_tensor_free(ty);
        return st;
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
    int e = 0;
    clg_event **evs[3] = {&s->up_ev, &s->map_ev[0], &s->map_ev[1]};
    for (int i = 0; i < 3; i++) {   /* one may be missing when a copy or map failed */
        if (!*evs[i]) continue;
        int ei = clg__event_wait(*evs[i]);
        if (!e) e = ei;
        clg__event_release(*evs[i]);
        *evs[i] = NULL;
    }
    return e ? clg__cl_fail(l->dev, e, "clWaitForEvents", "loader staging map") : CLG_OK;
}

void clg__slot_destroy(clg_loader *l, clg__slot *s)
{
    if (s->out_ev) clg__event_wait(s->out_ev);
    if (s->map_ev[0] || s->map_ev[1] || s->up_ev) clg__slot_remap(l, s);
    clg__event_release(s->out_ev);
    if (s->hx) clg__queue_unmap(l->dev, l->upq, s->stage_x, s->hx, "loader staging");
    if (s->hy) clg__queue_unmap(l->dev, l->upq, s->stage_y, s->hy, "loader staging");
    if (l->upq) clg__queue_wait(l->dev, l->upq, "loader upload queue");
    clg_buffer *b[4] = {s->stage_x, s->stage_y, s->dev_x, s->dev_y};
    for (int i = 0; i < 4; i++) clg__buffer_free_unpooled(b[i]);
    memset(s, 0, sizeof *s);
}
