/* capture.h: the recording hooks of src/device/ (private to it: the layers above record
 * through the launches of device_impl.h and the calls of runtime.h, and src/graph/ holds
 * a capture through runtime.h). While a capture is open (dev->cap), its recording layer
 * (capture_layer.c, layer.h) tops the device's runtime stack and calls these hooks for
 * every enqueue, transfer and pool buffer born or dead, with the buffers they name,
 * before the layer below does the work. At the end the
 * recording becomes a replayable list:
 *
 *   capture.c         recording: launches, copies, writes, host steps, buffer lifetimes
 *   capture_plan.c    memory: buffers born and dead inside the capture share slots by
 *                     liveness; one kernel object per launch, its arguments set once
 *   capture_replay.c  replay: the list enqueued again, with no op, shape check, tape or
 *                     allocation on the way
 *
 * The generator's position is a CLG_ARG_RNG argument, drawn anew at each replay
 * (clg__cap_rng). Ops whose launches take scalars from host state that changes from
 * step to step (the optimizers' step counts and rates) record a refresh: at each replay it updates that state as the eager op would and rewrites the
 * launch's scalar arguments. Everything else a kernel reads is in device buffers.
 */
#ifndef CLGRAD_CAPTURE_H
#define CLGRAD_CAPTURE_H

#include "device_impl.h"

/* ---- recording hooks (no-ops when dev->cap is NULL) -------------------------------- */
void clg__cap_args(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs);
void clg__cap_enqueue(clg_device *dev, int dims, const size_t *offset, const size_t *global, const size_t *local);
void clg__cap_write(clg_device *dev, const clg_buffer *dst, size_t off, const void *src, size_t bytes);
void clg__cap_copy(clg_device *dev, const clg_buffer *src, size_t src_off, const clg_buffer *dst, size_t dst_off,
                   size_t bytes);
void clg__cap_read(clg_device *dev, size_t bytes);   /* a host read: the capture fails */
void clg__cap_born(clg_device *dev, clg_buffer *b, size_t asked);  /* handed out by the pool for `asked` bytes */
void clg__cap_died(clg_device *dev, clg_buffer *b);  /* its last reference went */

/* Before a launch's arguments are set: registers for each generator position it draws
 * (their index into the position's reg), and a check that each position it draws at
 * again was drawn inside this capture; CLG_ERR_INVALID_ARGUMENT, the capture failed,
 * when not (a backward captured without its forward). */
clg_status clg__cap_rng(clg_device *dev, const clg_kernel *k, const clg_arg *args, int nargs);
/* At replay, before the last recorded launch is enqueued again: fn(data, args, nargs)
 * advances the host state the op advanced and rewrites the launch's scalar arguments
 * in args (buffer arguments are the graph's: leave them). data (size bytes) is copied. */
void clg__cap_refresh(clg_device *dev, clg_refresh_fn fn, const void *data, size_t size);
/* At replay, at this point of the list: fn(data): host state only (clg_host_fn:
 * runtime.h, whose clg__host_step also runs it now). */
void clg__cap_host(clg_device *dev, clg_host_fn fn, const void *data, size_t size);
/* Make the open capture fail at its end with `why` (an op whose eager behaviour this
 * step differs from the next steps', so that replaying it would be wrong). */
void clg__cap_refuse(clg_device *dev, const char *why);
/* The commands recorded from here on (clg__cap_mark: their index; -1 when no capture is
 * open) are one launch that copies `bytes` bytes of src from src_off to dst at dst_off
 * as they are (contiguous, one dtype): if src dies right after it, the plan may have
 * src's producers write dst directly and leave the copy out. */
int clg__cap_mark(clg_device *dev);
void clg__cap_note_copy(clg_device *dev, int mark, const clg_buffer *dst, size_t dst_off, const clg_buffer *src,
                        size_t src_off, size_t bytes);
/* The launch recorded from mark on writes final values into c, whose first `elems`
 * elements are the whole result (its part of them: a result split over launches notes
 * each), and its kernel builds with -DCLG_EPI_RELU to write relu of them instead
 * (GEMM): the plan may fold a ReLU that reads all of c, and only it, into the launch. */
void clg__cap_note_final(clg_device *dev, int mark, const clg_buffer *c, size_t elems);
/* Set the open capture aside (NULL if none) and take it back: what runs in between is
 * not recorded, and buffers made then count as made before the capture (state that a
 * step before the capture would have made). */
clg_capture *clg__cap_pause(clg_device *dev);
void clg__cap_resume(clg_device *dev, clg_capture *c);

#endif
