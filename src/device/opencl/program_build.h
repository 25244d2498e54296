/* program_build.h: one program's build in three steps (program_build.c), so that the
 * compiles of several can run on threads of their own (build_many.c) while everything
 * that touches the device's state stays on the caller's thread. Only src/device/opencl/
 * includes it. */
#ifndef CLGRAD_PROGRAM_BUILD_H
#define CLGRAD_PROGRAM_BUILD_H

#include "device_cl.h"

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
