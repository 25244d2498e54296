/* runtime.h: the runtime seam as the layers above src/device/ see it: opaque events
 * and extra queues, and the operations on them, with no OpenCL type in sight. The
 * OpenCL side (src/device/opencl/) casts the handles back; a handle costs nothing.
 * Not installed. Internal names start with clg__. */
#ifndef CLGRAD_RUNTIME_H
#define CLGRAD_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clgrad/device.h"

typedef struct clg_buffer clg_buffer;
typedef struct clg_event clg_event;   /* a command's completion, from an enqueue */
typedef struct clg_queue clg_queue;   /* a queue of commands; the device has one of its own */

/* Record a failed runtime call: "<call>(<what>): CL_ERROR_NAME (code)" (opencl/device.c). */
clg_status clg__cl_fail(clg_device *dev, int err, const char *call, const char *what);

/* The platform's version string ("OpenCL 3.0 PoCL ..."), "" when it cannot be read
 * (opencl/device.c): what a cache of choices made on this device depends on. */
void clg__platform_version(clg_device *dev, char *buf, size_t len);

/* ---- events (opencl/queue.c) ----------------------------------------------------------- */

/* Wait for ev: 0 once its command completed, else the negative runtime code of the
 * wait or of the command's failure (clg_cl_error_name names it). Touches no device
 * state, so that another thread (the reducer's) may wait. */
int clg__event_wait(clg_event *ev);
void clg__event_release(clg_event *ev);   /* NULL is fine */

/* ---- queues (opencl/queue.c) ----------------------------------------------------------- */

/* The device's own queue, for the operations below. */
clg_queue *clg__device_queue(clg_device *dev);
/* A second queue on dev's device (the loader's uploads); NULL with the error recorded. */
clg_queue *clg__queue_new(clg_device *dev, const char *what);
/* Waits for what q holds, then frees it; NULL is fine. */
void clg__queue_free(clg_queue *q);
/* Send q's commands to the device. A wait on another queue, or on another thread, for
 * a command of q ends only after q was flushed: POCL submits eagerly and hides a
 * missing flush, rusticl does not and the wait lasts for ever. */
clg_status clg__queue_flush(clg_device *dev, clg_queue *q, const char *what);
/* Wait for everything enqueued on q so far (through clg__queue_finish's marker). */
clg_status clg__queue_wait(clg_device *dev, clg_queue *q, const char *what);
/* Enqueue a copy of bytes from src's start to dst's start on q after the nwait events
 * in wait, or, for 0 bytes, a marker in its place (an empty copy is an error, and the
 * events must still be there). *done, when given, receives the command's event. */
clg_status clg__queue_copy(clg_device *dev, clg_queue *q, const clg_buffer *src, clg_buffer *dst, size_t bytes,
                           int nwait, clg_event *const *wait, clg_event **done, const char *what);

/* ---- buffers outside the pool (opencl/queue.c) ----------------------------------------- */

/* A buffer of exactly `bytes` the caller owns (freed with clg__buffer_free_unpooled,
 * never released to the pool); `staging`: in host memory the driver can pin for fast
 * transfers, to be mapped. NULL with the error recorded. */
clg_buffer *clg__buffer_unpooled(clg_device *dev, size_t bytes, bool staging, const char *what);
void clg__buffer_free_unpooled(clg_buffer *b);   /* NULL is fine */
/* Map b's first `bytes` for the host to write (its old contents discarded), on q; with
 * `done`, the map is enqueued and the memory is valid once *done completes, else it
 * blocks. NULL with the error recorded. */
void *clg__queue_map_write(clg_device *dev, clg_queue *q, clg_buffer *b, size_t bytes, clg_event **done,
                           const char *what);
clg_status clg__queue_unmap(clg_device *dev, clg_queue *q, clg_buffer *b, void *host, const char *what);

/* ---- capture (capture.c): the graph recording seen from an op -------------------------- */

/* Run fn(data) outside the open capture, if any: what it enqueues is not recorded, and
 * buffers it makes count as made before the capture (state a step before it would have
 * made, a tuner's trials). The capture is taken back whatever fn returns, so that no
 * caller can leave it set aside. Returns fn's status. */
typedef clg_status (*clg_uncaptured_fn)(void *data);
clg_status clg__uncaptured(clg_device *dev, clg_uncaptured_fn fn, void *data);

/* Host state that an op advances each step (a step count): fn(data) runs now and,
 * while a capture is open, again at that point of every replay. One call does both, so
 * that the replay cannot drift from the eager step. data (size bytes) is copied for the
 * replays, after the run now. */
typedef void (*clg_host_fn)(void *data);
void clg__host_step(clg_device *dev, clg_host_fn fn, void *data, size_t size);

/* ---- graphs (capture.c, capture_replay.c): a captured step as clgrad/graph.h holds it --- */

typedef struct clg_capture clg_capture;

clg_status clg__capture_begin(clg_device *dev);
/* Close the capture and plan it; NULL with the error recorded when it cannot be replayed
 * (a host read inside, a buffer clgrad does not know, a buffer the step released after
 * reading it though it was made before: state carried between steps by swapping). */
clg_capture *clg__capture_end(clg_device *dev);
void clg__capture_free(clg_capture *c);
/* Enqueue the recorded list again; the caller's buffers must still be owned
 * (clg__capture_check). Waits for nothing. */
clg_status clg__capture_replay(clg_capture *c);
/* CLG_OK, or the error for a buffer made before the capture and used by it that only
 * the capture still holds (a parameter or state replaced or freed since). */
clg_status clg__capture_check(clg_capture *c);
/* The same test without recording an error. */
bool clg__capture_stale(const clg_capture *c);

/* The value (a buffer's lifetime) of b alive at the capture's end that the list uses,
 * or -1. */
int clg__capture_value(const clg_capture *c, const clg_buffer *b);
/* The buffer replay uses for value v now (held by the capture). */
clg_buffer *clg__capture_buffer(const clg_capture *c, int v);
/* Replay value v from buffer b from now on (an input fed anew): the arguments and
 * copies that named it are pointed at b, which the capture holds until rebound. */
clg_status clg__capture_rebind(clg_capture *c, int v, clg_buffer *b);
/* Never checked for an owner (clg__capture_check): inputs, whose buffer is fed. */
void clg__capture_mark_input(clg_capture *c, int v);

typedef struct clg_capture_stats {
    int launches, enqueues, copies, writes, host_steps, refreshes;
    int removed;                  /* launches of the eager step left out (redundant copies) */
    int fused;                    /* ReLUs folded into the GEMM before them */
    int chains;                   /* elementwise launches folded into the one before them */
    int values, planned, slots;   /* buffers' lifetimes; those planned into shared slots */
    uint64_t planned_bytes;       /* bytes those lifetimes had in the capture */
    uint64_t slot_bytes;          /* bytes the slots hold */
    uint64_t held_bytes;          /* other buffers the capture holds (parameters, state...) */
} clg_capture_stats;
clg_capture_stats clg__capture_stats(const clg_capture *c);

/* ---- CLBlast, OpenCL's BLAS (opencl/clblast.c) ----------------------------------------- */

typedef struct clg_blas_gemm {
    bool f64, trans_a, trans_b;   /* float64, else float32 */
    size_t m, n, k, batch;
    double alpha, beta;
    const clg_buffer *a, *b;
    clg_buffer *c;
    size_t a_off, lda, stride_a, b_off, ldb, stride_b, c_off, ldc, stride_c;   /* elements */
} clg_blas_gemm;
/* C = alpha op(A) op(B) + beta C, row-major, through CLBlastXgemm (batch 1) or
 * CLBlastXgemmStridedBatched on dev's queue, timed by the profiler as `fn`. Returns
 * CLBlast's status: 0 on success. An open capture fails at its end: CLBlast's own
 * launches cannot be recorded. */
int clg__clblast_gemm(clg_device *dev, const clg_blas_gemm *g, const char *fn);
/* The name of a CLBlast status code ("CLBlastInvalidLeadDimA", or the OpenCL error's
 * name for the codes CLBlast shares with OpenCL). Never NULL. */
const char *clg__clblast_status_name(int status);
/* CLBlast's process-wide program cache, emptied before a context it used goes. */
void clg__clblast_clear_cache(void);
void clg__clblast_version(char *buf, size_t len);   /* "1.5.3" */

#endif
