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

/* ---- program builds (program_build.c, build_many.c, program.c) ------------------------
 * One program's build in three steps, so that the compiles of several can run on threads
 * of their own (build_many.c) while everything that touches the device's state stays on
 * the caller's thread. */

typedef struct clg_build_job {
    char name[64];
    char *options;     /* whole: the caller's and the device table's (clg__program_options) */
    char *src, *meta;  /* meta: the disk cache's key, NULL without a cache */
    cl_program prog;
    cl_int err;        /* clBuildProgram's */
    double start, seconds;
    bool cached;       /* loaded from clgrad's disk cache: nothing left to compile */
} clg_build_job;

/* The options a program is built with: `given` and what the device table adds; a malloc'd
 * string, NULL when out of host memory. */
char *clg__program_options(const clg_device *dev, const char *given);

/* On the caller's thread: the source, then the disk cache (job->cached) or a program
 * made from the source, to be compiled. false with the error recorded (job freed). */
bool clg__build_begin(clg_device *dev, clg_build_job *job);
/* On any thread: the compile (clBuildProgram) of a program begun and not cached; it
 * reads the device's id only. */
void clg__build_compile(const clg_device *dev, clg_build_job *job);
/* On the caller's thread again: the program, stored in the disk cache and counted, or
 * NULL (released) when the compile failed, with the build log recorded as the error if
 * `report`. Frees the job's source and key, not its options. */
cl_program clg__build_end(clg_device *dev, clg_build_job *job, bool report);

/* The program table (program.c): the program built with these whole options, or NULL;
 * and keeping one (false, p released, with the error recorded when out of memory). */
cl_program clg__program_find(clg_device *dev, const char *name, const char *options);
bool clg__program_keep(clg_device *dev, const char *name, const char *options, cl_program p);

#endif
