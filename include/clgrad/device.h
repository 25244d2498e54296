/* clgrad/device.h: OpenCL devices: discovery, choice, and the context clgrad runs on.
 *
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) {    // NULL: $CLG_DEVICE, else the default
 *       fprintf(stderr, "clgrad: %s\n", clg_device_error(dev));
 *       clg_device_close(dev);
 *       return 1;
 *   }
 *   printf("running on %s\n", clg_device_get_info(dev)->name);
 *   clg_device_close(dev);                           // tensors, models: the other headers
 *
 * Device specs, for clg_device_open and the CLG_DEVICE environment variable:
 *   "gpu" / "cpu"   the first device of that type
 *   "N"             device N in the order of clg_device_list (as `clgrad devices` numbers them)
 *   "P:D"           device D of platform P
 *   other text      the first device whose name, vendor or platform contains it,
 *                   (or OpenCL C version), case-insensitively ("pocl", "nvidia", "amd", "intel", "A100"); GPUs first
 * Default (NULL, "" or "default", and CLG_DEVICE unset): the first GPU, else the first CPU.
 *
 * A clg_device owns one OpenCL context and in-order queue, the buffer pool, the
 * compiled-program cache, the transfer counters and the profiler. It is used by one
 * thread at a time. Programs are compiled lazily, on first use of one of their
 * kernels, and kept on disk (CLG_CACHE_DIR, default $XDG_CACHE_HOME/clgrad or
 * ~/.cache/clgrad) keyed by source, options, device, driver and platform.
 *
 * Environment: CLG_DEVICE (spec), CLG_CACHE_DIR (binary cache; "off" disables it),
 * CLG_KERNEL_DIR (read the cl_kernels .cl files from there instead of the embedded copies),
 * CLG_PROFILE=1 (per-kernel device times; see clg_device_profile_print).
 */
#ifndef CLGRAD_DEVICE_H
#define CLGRAD_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CLG_NAME_MAX 256

typedef enum clg_device_type {
    CLG_DEVICE_CPU = 1,
    CLG_DEVICE_GPU = 2,
    CLG_DEVICE_ACCELERATOR = 4,
    CLG_DEVICE_OTHER = 8
} clg_device_type;

/* What a device is and what it allows. Sizes in bytes. */
typedef struct clg_device_info {
    int index;                        /* global index, as "N" in a spec */
    int platform_index, device_index; /* as "P:D" in a spec */
    char platform[CLG_NAME_MAX];      /* platform name */
    char name[CLG_NAME_MAX];          /* device name */
    char vendor[CLG_NAME_MAX];        /* device vendor */
    char c_version[CLG_NAME_MAX];     /* OpenCL C version, "OpenCL C 1.2 PoCL" */
    char driver[CLG_NAME_MAX];        /* driver version */
    clg_device_type type;
    uint32_t compute_units;
    uint64_t global_mem;
    uint64_t max_alloc;               /* largest single buffer */
    uint64_t local_mem;
    size_t max_work_group;
    uint32_t base_align;              /* buffer base-address alignment, bytes */
    bool fp64, fp16;
} clg_device_info;

/* Every device of every platform, in platform order. Fills at most `cap` entries of
 * `infos` (which may be NULL when cap is 0) and sets *count to the number that exist.
 * No platform at all is CLG_ERR_NO_DEVICE, with the reason in err (may be NULL). */
CLG_API clg_status clg_device_list(clg_device_info *infos, int cap, int *count,
                                   char *err, size_t errlen);

/* The index of the default device among `infos`: the first GPU, else the first CPU,
 * else the first device; -1 when n is 0. */
CLG_API int clg_device_default(const clg_device_info *infos, int n);

/* Resolve a spec (see the top of this file) against `infos`. A spec that matches
 * nothing is CLG_ERR_NO_DEVICE, and err lists the devices that exist. */
CLG_API clg_status clg_device_find(const char *spec, const clg_device_info *infos, int n,
                                   int *index, char *err, size_t errlen);

typedef struct clg_device clg_device;

/* Open the device that `spec` names (NULL: $CLG_DEVICE, else the default). *out is set
 * even on failure (unless host memory ran out, then it is NULL), so that
 * clg_device_error(*out) can say why; close it either way. */
CLG_API clg_status clg_device_open(const char *spec, clg_device **out);
CLG_API void clg_device_close(clg_device *dev);

CLG_API const clg_device_info *clg_device_get_info(const clg_device *dev);

/* The message of the last failure on this device, "" when none. Calls that fail
 * overwrite it; clg_device_clear_error resets it. */
CLG_API const char *clg_device_error(const clg_device *dev);
CLG_API clg_status clg_device_last_status(const clg_device *dev);
CLG_API void clg_device_clear_error(clg_device *dev);

/* Wait until everything queued on the device has run. */
CLG_API clg_status clg_device_finish(clg_device *dev);

/* Log sink for warnings and notices (default: stderr). level: 0 error, 1 warning, 2 info. */
typedef void (*clg_log_fn)(void *user, int level, const char *message);
CLG_API void clg_device_set_log(clg_device *dev, clg_log_fn fn, void *user);

/* Bytes and copies between host and device since open or the last reset, as the
 * program asked for them. Not counted: once a kernel that checks indices has run
 * (index_select, gather, cross_entropy, nll), each read to the host also reads the
 * device's 16-byte error word, on the same wait (an index out of range found there
 * fails that read). */
typedef struct clg_transfer_stats {
    uint64_t h2d_bytes, h2d_count;
    uint64_t d2h_bytes, d2h_count;
} clg_transfer_stats;
CLG_API clg_transfer_stats clg_device_transfers(const clg_device *dev);
CLG_API void clg_device_transfers_reset(clg_device *dev);

/* The buffer pool: freed device buffers are kept and handed out again. */
typedef struct clg_pool_stats {
    uint64_t in_use_bytes;   /* held by live buffers (rounded sizes) */
    uint64_t peak_bytes;     /* most in use at once */
    uint64_t cached_bytes;   /* freed, kept for reuse */
    uint64_t allocs;         /* requests */
    uint64_t hits;           /* requests served from the pool */
    uint64_t device_allocs;  /* clCreateBuffer calls */
} clg_pool_stats;
CLG_API clg_pool_stats clg_device_pool_stats(const clg_device *dev);
/* Release the pool's cached buffers back to OpenCL. */
CLG_API void clg_device_pool_trim(clg_device *dev);

/* Program compilation on this device. */
typedef struct clg_program_stats {
    uint64_t built_from_source;  /* compiled by the OpenCL compiler */
    uint64_t loaded_from_cache;  /* created from a binary in the disk cache */
    uint64_t cache_writes;       /* binaries stored */
    uint64_t cache_rejects;      /* unreadable or corrupt entries ignored */
    double compile_seconds;      /* host time spent building or loading programs */
    bool cache_enabled;
} clg_program_stats;
CLG_API clg_program_stats clg_device_program_stats(const clg_device *dev);
/* The binary cache directory in use, or NULL when the cache is disabled. The cache
 * is set up on the first program build (or this call), not at open. */
CLG_API const char *clg_device_cache_dir(clg_device *dev);

/* The device's parameter table, as "key = value" lines: the GEMM engine, work-group
 * sizes and launch splitting derived from the device's properties, and the limits every
 * launch honours. Set at open from the device, then from $CLG_PARAMS_FILE (lines
 * "key = value") and $CLG_PARAMS ("gemm=tiled,group_1d=64"); an unknown key or a bad
 * value makes clg_device_open fail, naming it. */
CLG_API clg_status clg_device_params_print(const clg_device *dev, FILE *out);
/* Set one of them after open (same keys and values; an error names a bad one). Set group
 * sizes before the first op: kernels already launched keep theirs. binary_cache=on|off:
 * whether built programs are stored in the disk cache (default off on POCL, whose own
 * cache keeps compiled kernels and whose binaries cost a compile of every kernel). */
CLG_API clg_status clg_device_set_param(clg_device *dev, const char *key, const char *value);

/* Profiling (CLG_PROFILE=1 at open): kernel counts and device times from OpenCL
 * events, program build times apart. Print as a table, or write Chrome trace JSON
 * (chrome://tracing, ui.perfetto.dev). Both wait for queued work first. */
CLG_API bool clg_device_profiling(const clg_device *dev);
CLG_API clg_status clg_device_profile_print(clg_device *dev, FILE *out);
CLG_API clg_status clg_device_profile_write_trace(clg_device *dev, const char *path);
CLG_API void clg_device_profile_reset(clg_device *dev);

/* Run a small axpy kernel through the whole path (lazy build or cache load, upload,
 * launch, read back) over n floats and compare with the host. CLG_OK when every
 * element matches; a diagnostic for `clgrad selftest` and for CI. */
CLG_API clg_status clg_device_selftest(clg_device *dev, size_t n);

#ifdef __cplusplus
}
#endif
#endif
