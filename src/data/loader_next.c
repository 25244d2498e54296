/* loader_next.c: handing batches out in order, the loader's position and its waits. */
#include "loader_impl.h"
#include "tensor_impl.h"

/* Upload every batch after `g` that workers have finished, so that its copy runs on
 * the upload queue while the device computes the step that gets batch g. */
static clg_status pump(clg_loader *l, int64_t g)
{
    for (int64_t h = g + 1; h < g + l->nslots; h++) {
        clg__slot *s = &l->slots[h % l->nslots];
        pthread_mutex_lock(&l->mu);
        bool ready = s->g == h && s->state == SLOT_FILLED && s->status == CLG_OK;
        pthread_mutex_unlock(&l->mu);
        if (!ready) break;   /* in order: a later batch waits for the earlier */
        clg_status st = clg__slot_upload(l, s);
        if (st) return st;
        pthread_mutex_lock(&l->mu);
        s->state = SLOT_UPLOADED;
        pthread_mutex_unlock(&l->mu);
    }
    return CLG_OK;
}

/* Wait until a worker has filled slot s with batch g; returns its status. */
static clg_status wait_filled(clg_loader *l, clg__slot *s)
{
    pthread_mutex_lock(&l->mu);
    while (s->state == SLOT_FREE || s->state == SLOT_FILLING) pthread_cond_wait(&l->done_cv, &l->mu);
    clg_status st = s->status;
    slot_state state = s->state;
    pthread_mutex_unlock(&l->mu);
    if (st) return clg__fail(l->dev, st, "clg_loader_next: %s", s->err);
    if (state != SLOT_FILLED) return CLG_OK;
    st = clg__slot_upload(l, s);
    pthread_mutex_lock(&l->mu);
    s->state = SLOT_UPLOADED;
    pthread_mutex_unlock(&l->mu);
    return st;
}

/* The slot goes back to the workers, for batch g + nslots. */
static clg_status recycle(clg_loader *l, clg__slot *s)
{
    clg_status st = clg__slot_remap(l, s);
    pthread_mutex_lock(&l->mu);
    s->state = SLOT_FREE;
    s->g += l->nslots;
    pthread_cond_broadcast(&l->work_cv);
    pthread_mutex_unlock(&l->mu);
    return st;
}

clg_status clg_loader_next(clg_loader *l, clg_tensor **x, clg_tensor **y)
{
    if (x) *x = NULL;
    if (y) *y = NULL;
    if (!l) return CLG_ERR_INVALID_ARGUMENT;
    if (!x || !y) return clg__fail(l->dev, CLG_ERR_INVALID_ARGUMENT, "clg_loader_next: x or y is NULL");
    if (l->broken) return clg__fail(l->dev, l->broken, "clg_loader_next: the loader failed earlier and cannot go on");
    if (l->batch >= l->nbatches) {   /* the end of the epoch */
        l->epoch++;
        l->batch = 0;
        return CLG_OK;
    }
    int64_t g = (int64_t)l->epoch * l->nbatches + l->batch;
    clg__slot *s = &l->slots[g % l->nslots];
    double t0 = clg__now();
    clg_status st = wait_filled(l, s);
    if (st == CLG_ERR_OPENCL) l->broken = st;
    if (st) return st;
    st = clg__slot_hand_out(l, s, x, y);
    clg_status st2 = recycle(l, s);
    double waited = clg__now() - t0;
    if (st2) {
        l->broken = st2;
        if (!st) {
            clg_tensor_free(*x);
            clg_tensor_free(*y);
            *x = *y = NULL;
        }
        return st2;
    }
    l->batch++;          /* the slot went on to batch g + nslots, whatever happened */
    if (st) return st;   /* the tensors could not be made: this batch is lost, the loader goes on */
    l->stats.batches++;
    l->stats.wait_seconds += waited;
    l->stats.last_wait = waited;
    if (waited > l->stats.max_wait) l->stats.max_wait = waited;
    st = pump(l, g);
    if (st) l->broken = st;
    return st;
}

int64_t clg_loader_num_batches(const clg_loader *l) { return l ? l->nbatches : 0; }

clg_loader_position clg_loader_get_position(const clg_loader *l)
{
    clg_loader_position p = {0};
    if (l) p = (clg_loader_position){l->epoch, l->batch, l->seed};
    return p;
}

clg_loader_stats clg_loader_get_stats(const clg_loader *l)
{
    clg_loader_stats s = {0};
    if (l) s = l->stats;
    return s;
}

clg_status clg_loader_set_position(clg_loader *l, clg_loader_position pos)
{
    if (!l) return CLG_ERR_INVALID_ARGUMENT;
    if (pos.batch < 0 || pos.batch > l->nbatches)
        return clg__fail(l->dev, CLG_ERR_INVALID_ARGUMENT, "clg_loader_set_position: batch %lld of %lld",
                         (long long)pos.batch, (long long)l->nbatches);
    /* Stop handing out work and let the workers finish what they hold. */
    pthread_mutex_lock(&l->mu);
    l->paused = true;
    while (l->busy > 0) pthread_cond_wait(&l->done_cv, &l->mu);
    pthread_mutex_unlock(&l->mu);
    clg_status st = CLG_OK;
    for (int i = 0; i < l->nslots; i++) {   /* staging mapped again everywhere */
        clg__slot *s = &l->slots[i];
        if (s->state == SLOT_UPLOADED) {
            clg_status si = clg__slot_remap(l, s);
            if (!st) st = si;
        }
    }
    pthread_mutex_lock(&l->mu);
    l->epoch = pos.epoch;
    l->batch = pos.batch;
    l->seed = pos.seed;
    clg__loader_reset_slots(l, (int64_t)pos.epoch * l->nbatches + pos.batch);
    l->paused = false;
    pthread_cond_broadcast(&l->work_cv);
    pthread_mutex_unlock(&l->mu);
    if (st) l->broken = st;
    return st;
}
