/* kernel_sources.h: the cl_kernels .cl files embedded by cmake/embed_kernels.cmake. */
#ifndef CLGRAD_KERNEL_SOURCES_H
#define CLGRAD_KERNEL_SOURCES_H
#include <stddef.h>

typedef struct clg_kernel_source {
    const char *name;  /* file stem: "axpy" for cl_kernels/axpy.cl */
    const char *text;  /* NUL-terminated */
    size_t len;
} clg_kernel_source;

extern const clg_kernel_source clg__kernel_sources[];
extern const int clg__kernel_source_count;
#endif
