/* capture.h: the device half of clgrad/graph.h. While a capture is open (dev->cap),
 * every enqueue that launch.c and transfer.c make is also recorded, with the buffers
 * it names; the pool reports which buffers are born and die inside it. At the end the
 * recording becomes a replayable list:
 *
 *   capture.c         recording: launches, copies, writes, host steps, buffer lifetimes
 *   capture_plan.c    memory: buffers born and dead inside the capture share slots by
 *                     liveness; one kernel object per launch, its arguments set once
 *   capture_replay.c  replay: the list enqueued again, with no op, shape check, tape or
 *                     allocation on the way
 *
 * Ops whose launches take scalars from host state that changes from step to step (the
 * optimizers' step counts and rates, the random generator's position) record a
 * refresh: at each replay it updates that state as the eager op would and rewrites the
 * launch's scalar arguments. Everything else a kernel reads is in device buffers.
 */
#ifndef CLGRAD_CAPTURE_H
#define CLGRAD_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clgrad/status.h"
#include "runtime.h"

typedef struct clg_device clg_device;
typedef struct clg_buffer clg_buffer;
typedef struct clg_kernel clg_kernel;
typedef struct clg_arg clg_arg;
typedef struct clg_capture clg_capture;

/* ---- recording hooks (no-ops when dev->cap is NULL) -------------------------------- */
void clg__cap_args(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs);
void clg__cap_enqueue(clg_device *dev, int dims, const size_t *offset, const size_t *global, const size_t *local);
void clg__cap_write(clg_device *dev, const clg_buffer *dst, size_t off, const void *src, size_t bytes);
void clg__cap_copy(clg_device *dev, const clg_buffer *src, size_t src_off, const clg_buffer *dst, size_t dst_off,
                   size_t bytes);
void clg__cap_read(clg_device *dev, size_t bytes);   /* a host read: the capture fails */
void clg__cap_born(clg_device *dev, clg_buffer *b, size_t asked);  /* handed out by the pool for `asked` bytes */
void clg__cap_died(clg_device *dev, clg_buffer *b);  /* its last reference went */

/* At replay, before the last recorded launch is enqueued again: fn(data, regs, args,
 * nargs) advances the host state the op advanced and rewrites the launch's scalar
 * arguments in args (buffer arguments are the graph's: leave them). data (size bytes)
 * is copied. regs are the capture's registers (clg__cap_register), through which a
 * forward's refresh hands its values to its backward's. clg_refresh_fn: device_impl.h,
 * beside the launches that take one. */
void clg__cap_refresh(clg_device *dev, clg_refresh_fn fn, const void *data, size_t size);
/* At replay, at this point of the list: fn(data, regs): host state only (clg_host_fn:
 * runtime.h, whose clg__host_step also runs it now). */
void clg__cap_host(clg_device *dev, clg_host_fn fn, const void *data, size_t size);
/* Make the open capture fail at its end with `why` (an op whose eager behaviour this
 * step differs from the next steps', so that replaying it would be wrong). */
void clg__cap_refuse(clg_device *dev, const char *why);
/* n fresh registers (their first index), or -1 when no capture is open. */
int clg__cap_register(clg_device *dev, int n);
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

/* ---- the capture as a whole --------------------------------------------------------- */
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
    int values, planned, slots;   /* buffers' lifetimes; those planned into shared slots */
    uint64_t planned_bytes;       /* bytes those lifetimes had in the capture */
    uint64_t slot_bytes;          /* bytes the slots hold */
    uint64_t held_bytes;          /* other buffers the capture holds (parameters, state...) */
} clg_capture_stats;
clg_capture_stats clg__capture_stats(const clg_capture *c);

#endif
