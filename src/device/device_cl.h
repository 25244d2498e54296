/* device_cl.h: what src/device/ declares with OpenCL's types, on top of device_impl.h.
 * Only src/device/ includes it: no file above sees OpenCL's headers. */
#ifndef CLGRAD_DEVICE_CL_H
#define CLGRAD_DEVICE_CL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "device_impl.h"

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

/* Set argument i, or all nargs arguments, of kernel object kern (named name, for errors). */
clg_status clg__set_arg_on(clg_device *dev, cl_kernel kern, const char *name, int i, const clg_arg *a);
clg_status clg__set_args_on(clg_device *dev, cl_kernel kern, const char *name, const clg_arg *args, int nargs);

/* clg__launch_native without the capture's record: what a graph replay enqueues. */
clg_status clg__enqueue_native(clg_device *dev, clg_kernel *k, const clg_arg *args, int nargs, cl_event *ev);

struct clg_prof_event { cl_event ev; int slot; };

void clg__profile_launch(clg_device *dev, int slot, cl_event ev); /* takes ownership of ev */

#endif
