/* backend.h: what the files of src/device/ outside opencl/ (the pool, transfers,
 * launches, the capture, the parameter table, the kernel error word) ask of the OpenCL
 * implementation in src/device/opencl/: a few calls on clgrad's opaque handles
 * (clg_mem, clg_kobj: device_impl.h), so that no other file names an OpenCL type.
 * Private to src/device/ (scripts/layers.py checks). */
#ifndef CLGRAD_BACKEND_H
#define CLGRAD_BACKEND_H

#include "device_impl.h"

/* ---- device memory (opencl/memory.c) -------------------------------------------------- */

/* Device memory of `bytes`, or NULL with the runtime's code in *err (nothing recorded);
 * *exhausted says the device ran out, so that freeing cached buffers may help. */
clg_mem *clg__mem_new(clg_device *dev, size_t bytes, int *err, bool *exhausted);
void clg__mem_free(clg_mem *m);   /* NULL is fine */
/* On dev's queue, in order: host to device, device to host, device to device. blocking:
 * return once done (the host memory free again); else *done, when given, receives the
 * command's event. A failure is recorded naming the call and `what`. */
clg_status clg__mem_write(clg_device *dev, const clg_buffer *dst, size_t off, const void *src, size_t bytes,
                          bool blocking, clg_event **done, const char *what);
clg_status clg__mem_read(clg_device *dev, const clg_buffer *src, size_t off, void *dst, size_t bytes, bool blocking,
                         clg_event **done, const char *what);
clg_status clg__mem_copy(clg_device *dev, const clg_buffer *src, size_t src_off, const clg_buffer *dst, size_t dst_off,
                         size_t bytes, const char *what);

/* ---- kernel objects (opencl/kernel.c) ------------------------------------------------- */

/* Set one argument of obj at the kernel's argument index i (clg__arg_slot), or all nargs
 * arguments (kernel `name`, for errors). */
clg_status clg__kobj_set_arg(clg_device *dev, clg_kobj *obj, const char *name, int i, const clg_arg *a);
clg_status clg__kobj_set_args(clg_device *dev, clg_kobj *obj, const char *name, const clg_arg *args, int nargs);
/* Enqueue obj (k's own object or a clone of it) over [offset, offset + global) in each
 * of dims dimensions (offset NULL: from 0), in groups of local (NULL: the driver's);
 * *done, when given, receives the command's event. */
clg_status clg__kobj_enqueue(clg_device *dev, clg_kernel *k, clg_kobj *obj, int dims, const size_t *offset,
                             const size_t *global, const size_t *local, clg_event **done);
/* A kernel object of its own for k's kernel, its arguments unset (a graph's launch);
 * NULL with the error recorded. */
clg_kobj *clg__kobj_clone(clg_device *dev, const clg_kernel *k);
void clg__kobj_release(clg_kobj *obj);   /* NULL is fine */

/* ---- host functions (opencl/native.c) ------------------------------------------------- */

/* k's host function with args as a command of the device's queue; *done, when given,
 * receives its event. */
clg_status clg__enqueue_native(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, clg_event **done);

/* ---- events and the profiler (opencl/queue.c, opencl/profile.c) ----------------------- */

void clg__event_retain(clg_event *ev);
/* A command's event, timed as the profiler's kernel `slot` (clg__profile_slot); takes
 * the reference. */
void clg__profile_event(clg_device *dev, int slot, clg_event *ev);

/* ---- what the parameter table reads from the device (opencl/discover.c) ------------- */

typedef struct clg_device_props {
    int vector_float;         /* preferred float vector width, 1 at least */
    size_t max_item[3];       /* work-items per group along each dimension */
    bool local_is_global;     /* local memory emulated in global memory */
    bool exact_div;           /* float division and sqrt can be correctly rounded */
    bool hw_fma;              /* float fused multiply-add in hardware (CL_FP_FMA) */
    bool nvidia_sm80;         /* NVIDIA's compute capability 8.0 or later */
    int intel_xmx_lanes;      /* cl_intel_subgroup_matrix_multiply_accumulate's sub-group
                                 width (the smallest sub-group size: 8 or 16), 0 without it */
} clg_device_props;
clg_device_props clg__device_props(const clg_device *dev);

#endif
