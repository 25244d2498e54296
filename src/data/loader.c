/* loader.c: the DataLoader: worker threads that fill batches ahead of use, the order
 * of samples, and the API. See loader_impl.h for a batch's way through a slot. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader_impl.h"
#include "tensor_impl.h"

clg_loader_config clg_loader_defaults(int64_t batch_size)
{
    return (clg_loader_config){.batch_size = batch_size, .workers = 1, .prefetch = 2, .scale = 1.0f};
}

void clg_shard_range(int64_t count, int index, int parts, int64_t *first, int64_t *n)
{
    if (parts < 1) parts = 1;
    int64_t base = count / parts, extra = count % parts;
    *n = base + (index < extra);
    *first = index * base + (index < extra ? index : extra);
}

/* ---- workers ---------------------------------------------------------------------------- */

/* Batch g into slot s's staging memory (s->err on failure). Runs without the lock: the
 * slot is this worker's while FILLING, and the loader's other fields are read-only. */
static clg_status fill(const clg_loader *l, clg__slot *s, int64_t g, uint64_t seed, float *scratch)
{
    uint64_t epoch = (uint64_t)(g / l->nbatches);
    int64_t start = g % l->nbatches * l->cfg.batch_size;
    int64_t count = l->n - start < l->cfg.batch_size ? l->n - start : l->cfg.batch_size;
    if (l->cfg.shard_count > 1) {   /* this shard's part of the global batch */
        int64_t first;
        clg_shard_range(count, l->cfg.shard_index, l->cfg.shard_count, &first, &count);
        start += first;
    }
    s->count = count;
    if (l->cfg.one_hot) memset(s->hy, 0, (size_t)count * (size_t)l->classes * sizeof(float));
    for (int64_t k = 0; k < count; k++) {
        int64_t idx = l->cfg.shuffle ? clg__shuffle_index(seed, epoch, l->n, start + k) : start + k;
        float *x = s->hx + k * l->numel;
        int32_t label;
        clg_status st = clg_dataset_get(l->ds, idx, x, &label, s->err, sizeof s->err);
        if (st) return st;
        clg__transform_apply(&l->tf, x, scratch, seed, epoch, idx);
        if (!l->cfg.one_hot) {
            ((int32_t *)s->hy)[k] = label;
        } else if (label < 0 || label >= l->classes) {
            snprintf(s->err, sizeof s->err, "sample %lld has label %d, outside the %d classes of one-hot labels",
                     (long long)idx, label, l->classes);
            return CLG_ERR_FORMAT;
        } else {
            ((float *)s->hy)[k * l->classes + label] = 1.0f;
        }
    }
    return CLG_OK;
}

/* A slot a worker may claim: the next batch's, when it is FREE. */
static clg__slot *claimable(clg_loader *l)
{
    if (l->paused || l->nbatches == 0) return NULL;
    clg__slot *s = &l->slots[l->g_fill % l->nslots];
    return s->state == SLOT_FREE && s->g == l->g_fill ? s : NULL;
}

typedef struct worker_arg { clg_loader *l; float *scratch; } worker_arg;

static void *worker(void *arg)
{
    clg_loader *l = ((worker_arg *)arg)->l;
    float *scratch = ((worker_arg *)arg)->scratch;
    free(arg);
    pthread_mutex_lock(&l->mu);
    for (;;) {
        clg__slot *s;
        while (!l->stop && !(s = claimable(l))) pthread_cond_wait(&l->work_cv, &l->mu);
        if (l->stop) break;
        int64_t g = l->g_fill++;
        uint64_t seed = l->seed;
        s->state = SLOT_FILLING;
        l->busy++;
        pthread_mutex_unlock(&l->mu);
        clg_status st = fill(l, s, g, seed, scratch);
        pthread_mutex_lock(&l->mu);
        s->status = st;
        s->state = SLOT_FILLED;
        l->busy--;
        pthread_cond_broadcast(&l->done_cv);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* ---- creation ----------------------------------------------------------------------------- */

static clg_status check_config(clg_device *dev, const clg_dataset *ds, const clg_loader_config *c)
{
    int ndim;
    const int64_t *shape = clg_dataset_sample_shape(ds, &ndim);
    int64_t numel = clg_dataset_sample_numel(ds);
    const char *why = NULL;
    if (c->batch_size < 1 || c->batch_size > ((int64_t)1 << 31) / (numel > 0 ? numel : 1)) why = "batch_size out of range";
    else if (c->workers < 1 || c->workers > 256) why = "workers must be 1 to 256";
    else if (c->shard_count < 0 || (c->shard_count > 1 && (c->shard_index < 0 || c->shard_index >= c->shard_count)))
        why = "shard_index must be in [0, shard_count)";
    else if (c->prefetch < 1 || c->prefetch > 1024) why = "prefetch must be 1 to 1024";
    else if (!(c->scale > 0 || c->scale < 0) || !isfinite(c->scale)) why = "scale must be finite and non-zero";
    else if (c->crop_padding < 0 || (c->crop_padding > 0 && ndim < 2)) why = "crop_padding needs samples of 2 axes or more";
    else if (c->norm_channels < 0 || c->norm_channels > CLG_NORM_MAX_CHANNELS ||
             (c->norm_channels > 1 && c->norm_channels != shape[0]))
        why = "norm_channels must be 0, 1 or the sample shape's first size (at most 64)";
    else if (c->norm_channels > 0 && (!c->mean || !c->std)) why = "normalisation needs mean and std";
    else if (c->one_hot && clg_dataset_num_classes(ds) < 1) why = "one-hot labels need the dataset's num_classes";
    for (int i = 0; !why && i < c->norm_channels; i++)
        if (!isfinite(c->mean[i]) || !isfinite(c->std[i]) || c->std[i] == 0) why = "mean and std must be finite, std non-zero";
    if (why) return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_loader_new: %s", why);
    return CLG_OK;
}

static void setup_transform(clg_loader *l)
{
    clg__transform *t = &l->tf;
    const int64_t *shape = clg_dataset_sample_shape(l->ds, &t->ndim);
    memcpy(t->shape, shape, (size_t)t->ndim * sizeof *shape);
    t->numel = l->numel;
    t->crop_padding = l->cfg.crop_padding;
    t->hflip = l->cfg.hflip;
    t->scale = l->cfg.scale;
    t->norm_channels = l->cfg.norm_channels;
    for (int c = 0; c < t->norm_channels; c++) {
        t->mean[c] = l->cfg.mean[c];
        t->std[c] = l->cfg.std[c];
    }
    l->cfg.mean = l->cfg.std = NULL;   /* copied: the caller's arrays may go */
}

void clg__loader_reset_slots(clg_loader *l, int64_t g0)
{
    for (int i = 0; i < l->nslots; i++) {
        clg__slot *s = &l->slots[(g0 + i) % l->nslots];
        s->state = SLOT_FREE;
        s->g = g0 + i;
        s->status = CLG_OK;
    }
    l->g_fill = g0;
}

static clg_status start(clg_loader *l)
{
    l->nthreads = 0;
    l->scratch = calloc((size_t)l->cfg.workers, sizeof *l->scratch);
    l->threads = calloc((size_t)l->cfg.workers, sizeof *l->threads);
    if (!l->scratch || !l->threads) return clg__fail(l->dev, CLG_ERR_OUT_OF_MEMORY, "clg_loader_new: out of memory");
    for (int i = 0; i < l->cfg.workers; i++) {
        worker_arg *a = malloc(sizeof *a);
        l->scratch[i] = malloc((size_t)l->numel * sizeof(float));
        if (!a || !l->scratch[i]) {
            free(a);
            return clg__fail(l->dev, CLG_ERR_OUT_OF_MEMORY, "clg_loader_new: out of memory");
        }
        *a = (worker_arg){l, l->scratch[i]};
        if (pthread_create(&l->threads[i], NULL, worker, a) != 0) {
            free(a);
            return clg__fail(l->dev, CLG_ERR_OUT_OF_MEMORY, "clg_loader_new: cannot start worker thread %d", i);
        }
        l->nthreads++;
    }
    return CLG_OK;
}

clg_status clg_loader_new(clg_device *dev, clg_dataset *ds, const clg_loader_config *cfg, clg_loader **out)
{
    if (out) *out = NULL;
    if (!dev) return CLG_ERR_INVALID_ARGUMENT;
    if (!ds || !cfg || !out) return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_loader_new: NULL argument");
    clg_status st = check_config(dev, ds, cfg);
    if (st) return st;
    clg_loader *l = calloc(1, sizeof *l);
    if (!l) return clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_loader_new: out of memory");
    l->dev = dev;
    l->ds = ds;
    l->cfg = *cfg;
    l->n = clg_dataset_length(ds);
    l->numel = clg_dataset_sample_numel(ds);
    l->classes = cfg->one_hot ? clg_dataset_num_classes(ds) : 1;
    l->nbatches = cfg->drop_last ? l->n / cfg->batch_size : (l->n + cfg->batch_size - 1) / cfg->batch_size;
    l->xbytes = (size_t)cfg->batch_size * (size_t)l->numel * sizeof(float);
    l->ybytes = (size_t)cfg->batch_size * (size_t)l->classes * 4;
    l->seed = cfg->seed;
    setup_transform(l);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->work_cv, NULL);
    pthread_cond_init(&l->done_cv, NULL);
    l->upq = clg__queue_new(dev, "loader upload queue");
    if (!l->upq) st = dev->status;
    l->nslots = cfg->prefetch > cfg->workers ? cfg->prefetch : cfg->workers;
    l->slots = st ? NULL : calloc((size_t)l->nslots, sizeof *l->slots);
    if (!st && !l->slots) st = clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_loader_new: out of memory");
    for (int i = 0; !st && i < l->nslots; i++) st = clg__slot_create(l, &l->slots[i]);
    if (!st) clg__loader_reset_slots(l, 0);
    if (!st) st = start(l);
    if (st) {
        clg_loader_free(l);
        return st;
    }
    *out = l;
    return CLG_OK;
}

void clg_loader_free(clg_loader *l)
{
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_broadcast(&l->work_cv);
    pthread_mutex_unlock(&l->mu);
    for (int i = 0; i < l->nthreads; i++) pthread_join(l->threads[i], NULL);
    for (int i = 0; l->slots && i < l->nslots; i++) clg__slot_destroy(l, &l->slots[i]);
    clg__queue_free(l->upq);
    for (int i = 0; l->scratch && i < l->cfg.workers; i++) free(l->scratch[i]);
    free(l->scratch);
    free(l->threads);
    free(l->slots);
    pthread_cond_destroy(&l->work_cv);
    pthread_cond_destroy(&l->done_cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}
