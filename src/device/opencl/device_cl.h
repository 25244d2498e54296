/* device_cl.h: the OpenCL implementation's own declarations: OpenCL's header, the
 * handles a device holds, and the casts from clgrad's opaque handles. Only
 * src/device/opencl/ includes it: no other file names an OpenCL type (the rest of
 * src/device/ goes through backend.h). */
#ifndef CLGRAD_DEVICE_CL_H
#define CLGRAD_DEVICE_CL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "backend.h"

/* A device's handles (clg_device.cl), made at open and released at close. */
struct clg_cl {
    cl_platform_id platform;
    cl_device_id id;
    cl_context ctx;
    cl_command_queue queue;
};

/* clgrad's opaque handles are OpenCL's, cast: a buffer's memory, a kernel object. */
static inline cl_mem clg__cl_mem(const clg_buffer *b) { return b ? (cl_mem)b->mem : NULL; }
static inline cl_kernel clg__cl_kernel(const clg_kobj *k) { return (cl_kernel)k; }

/* The device lists the extension (discover.c). */
bool clg__has_extension(cl_device_id d, const char *ext);

/* Check an OpenCL call; on failure record it and return its status from the caller. */
#define CLG_CL_TRY(dev, call_expr, call_name, what)                          \
    do {                                                                     \
        cl_int clg__e = (call_expr);                                         \
        if (clg__e != CL_SUCCESS) return clg__cl_fail((dev), clg__e, (call_name), (what)); \
    } while (0)

/* clFinish that waits for everything enqueued on q so far, on every implementation.
 * Mesa 22's rusticl waits only for the commands enqueued since the last clFlush: after a
 * clFlush (the reducer's, the loader's) its clFinish returned while the queue's thread was
 * still running kernels, and a process exiting then crashed in LLVM's destructors. A
 * marker's event is the last command of the queue: waiting for it waits for them all. */
cl_int clg__queue_finish(cl_command_queue q);

struct clg_prof_event { cl_event ev; int slot; };

void clg__profile_launch(clg_device *dev, int slot, cl_event ev); /* takes ownership of ev */

#endif
