/* layer.h: the runtime's operations table, and the layers that wrap it.
 *
 * Everything the device does to the runtime on an op's behalf (hand out and take back
 * a buffer, move bytes, set a kernel's arguments, enqueue it, run a host function as a
 * command) goes through one table of function pointers, dev->rt. The bottom table
 * (layer_base.c) is the pool over the OpenCL implementation (backend.h); a layer is
 * another table of the same operations that does its own work and forwards to the
 * table it wraps (`below`):
 *
 *   capture_layer.c   recording: what a graph capture keeps (pushed at clg_graph_begin,
 *                     popped at clg_graph_end and while a capture is paused)
 *   profile_layer.c   profiling: each launch's event timed (pushed at open with
 *                     CLG_PROFILE=1)
 *
 * so that launch.c, transfer.c and pool.c hold no "if capturing" or "if profiling"
 * branch, and a new layer (a tracer, a checker) is one table, pushed and popped.
 * As ggml's ggml-backend-impl.h, but one level lower: the ops are the runtime's, not
 * the graph's. Private to src/device/ (scripts/layers.py checks). */
#ifndef CLGRAD_LAYER_H
#define CLGRAD_LAYER_H

#include "device_impl.h"

typedef struct clg_rt_ops {
    const char *name;   /* for errors: "recording", "profiling", "base" */
    /* A pool buffer of at least `bytes` (rounded: clg__pool_round), refs 1; NULL with the
     * error recorded; with keep != 0, one last handed out under that key where the pool
     * has one (*kept, clg__buffer_alloc_kept). And its last reference gone: back to the
     * pool. */
    clg_buffer *(*alloc)(clg_rt *rt, size_t bytes, uint64_t keep, bool *kept);
    void (*release)(clg_rt *rt, clg_buffer *b);
    /* Host to device (blocking: return once src may be reused), device to host
     * (blocking), device to device; ranges already checked (transfer.c). */
    clg_status (*write)(clg_rt *rt, const clg_buffer *dst, size_t off, const void *src, size_t bytes, bool blocking);
    clg_status (*read)(clg_rt *rt, const clg_buffer *src, size_t off, void *dst, size_t bytes);
    clg_status (*copy)(clg_rt *rt, const clg_buffer *src, size_t src_off, const clg_buffer *dst, size_t dst_off,
                       size_t bytes);
    /* Set all nargs arguments of obj, k's kernel object or a clone of it. */
    clg_status (*set_args)(clg_rt *rt, clg_kernel *k, clg_kobj *obj, const clg_arg *args, int nargs);
    /* Enqueue obj over [offset, offset + global) in dims dimensions (offset NULL: from
     * 0), groups of local (NULL: the driver's). *done, when given, gets the command's
     * event (the caller releases it). */
    clg_status (*launch)(clg_rt *rt, clg_kernel *k, clg_kobj *obj, int dims, const size_t *offset,
                         const size_t *global, const size_t *local, clg_event **done);
    /* k's host function with args, in queue order (opencl/native.c). */
    clg_status (*native)(clg_rt *rt, clg_kernel *k, const clg_arg *args, int nargs, clg_event **done);
} clg_rt_ops;

/* Put layer l (its ops and self set) on top of dev's stack; take it off again, where it
 * must be on top (layers are strictly nested). */
void clg__rt_push(clg_device *dev, clg_rt *l);
void clg__rt_pop(clg_device *dev, clg_rt *l);

/* The base layer's pool (pool.c): a buffer out of it (or new), and back into it. */
clg_buffer *clg__pool_take(clg_device *dev, size_t bytes, uint64_t keep, bool *kept);
void clg__pool_put(clg_device *dev, clg_buffer *b);

/* At open: the base layer, and the profiling layer on it when profiling is on. */
void clg__rt_init(clg_device *dev);

/* The base table (layer_base.c) and the profiling layer's (profile_layer.c). */
extern const clg_rt_ops clg__rt_base_ops;
extern const clg_rt_ops clg__rt_profile_ops;
/* The recording layer's (capture_layer.c), whose self is the capture. */
extern const clg_rt_ops clg__rt_record_ops;

#endif
