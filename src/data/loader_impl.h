/* loader_impl.h: the DataLoader's state, shared by loader.c (threads, order, API) and
 * loader_cl.c (staging buffers, uploads, events: through the runtime seam).
 *
 * Batches are numbered globally, g = epoch * batches_per_epoch + batch, and batch g
 * lives in slot g % nslots. A slot cycles through:
 *   FREE      its staging buffers are mapped; a worker may claim it for batch `g`
 *   FILLING   a worker writes the samples into the mapped staging memory
 *   FILLED    done; the main thread may upload it
 *   UPLOADED  unmapped and copied into the slot's device buffers on the upload queue
 *             (up_ev), staging mapped again behind that copy (map events)
 * and when clg_loader_next hands it out, it is copied into the caller's tensors on
 * the compute queue (waiting for up_ev), then goes back to FREE for batch g + nslots.
 * Only the main thread calls the runtime; workers touch host memory only. `state`, `g`,
 * and the worker's results are guarded by the loader's mutex. */
#ifndef CLGRAD_LOADER_IMPL_H
#define CLGRAD_LOADER_IMPL_H

#include <pthread.h>

#include "data_impl.h"
#include "device_impl.h"

typedef enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_FILLED, SLOT_UPLOADED } slot_state;

typedef struct clg__slot {
    slot_state state;
    int64_t g;                 /* the batch it holds or will hold */
    int64_t count;             /* samples in it (the last batch may be short) */
    clg_status status;         /* a worker's failure, with its message */
    char err[512];
    clg_buffer *stage_x, *stage_y;   /* staging: host memory that GPUs' drivers pin */
    float *hx;                 /* mapped staging, valid in FREE, FILLING and FILLED */
    void *hy;
    clg_buffer *dev_x, *dev_y; /* device copies, owned by the loader (not the pool's) */
    clg_event *up_ev;          /* upload finished (UPLOADED) */
    clg_event *map_ev[2];      /* staging mapped again (UPLOADED) */
    clg_event *out_ev;         /* last copy from dev_x/dev_y into a caller's tensors */
} clg__slot;

struct clg_loader {
    clg_device *dev;
    clg_dataset *ds;
    clg_loader_config cfg;
    clg__transform tf;
    int64_t n, nbatches, numel;   /* samples, batches per epoch, floats per sample */
    int classes;
    size_t xbytes, ybytes;        /* staging sizes, for a full batch */
    clg_queue *upq;               /* the upload queue, beside the device's */
    clg__slot *slots;
    int nslots;
    pthread_t *threads;
    float **scratch;              /* per worker */
    int nthreads;

    pthread_mutex_t mu;
    pthread_cond_t work_cv;       /* a slot became FREE, or stop / resume */
    pthread_cond_t done_cv;       /* a slot became FILLED, or a worker went idle */
    bool stop, paused;
    int busy;                     /* workers filling a slot */
    int64_t g_fill;               /* the next batch to give a worker */
    uint64_t seed;                /* copied by a worker when it claims a batch */

    /* main thread only */
    uint64_t epoch;
    int64_t batch;
    clg_status broken;            /* a runtime failure left the slots unusable */
    clg_loader_stats stats;
};

/* loader.c: every slot FREE for batches g0, g0 + 1, ... (batch g in slot g % nslots);
 * with the mutex held, or before the workers start. */
void clg__loader_reset_slots(clg_loader *l, int64_t g0);

/* loader_cl.c */
clg_status clg__slot_create(clg_loader *l, clg__slot *s);
/* FILLED -> UPLOADED. */
clg_status clg__slot_upload(clg_loader *l, clg__slot *s);
/* UPLOADED: new tensors in the current scope, copied from the slot on dev->queue. */
clg_status clg__slot_hand_out(clg_loader *l, clg__slot *s, clg_tensor **x, clg_tensor **y);
/* UPLOADED -> mapped again (the caller sets FREE). */
clg_status clg__slot_remap(clg_loader *l, clg__slot *s);
/* Wait for everything, unmap and release. */
void clg__slot_destroy(clg_loader *l, clg__slot *s);

#endif
