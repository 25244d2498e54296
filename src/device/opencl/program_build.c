/* program_build.c: a program's source (cl_kernels/common.cl followed by
 * cl_kernels/<name>.cl, embedded or from CLG_KERNEL_DIR) and its build: from clgrad's
 * disk cache when it holds a valid binary, else compiled. The build is three steps
 * (device_cl.h) so that build_many.c can run the compiles side by side. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_cl.h"
#include "file_read.h"
#include "kernel_sources.h"

/* ---- sources ----------------------------------------------------------------------- */

/* A kernel source from CLG_KERNEL_DIR: a regular file of at most 16 MiB (a FIFO there
 * must not hang the open), or NULL with the reason in why. */
static char *read_file(const char *path, size_t *len, char *why, size_t whylen)
{
    unsigned char *buf;
    return clg__file_read(path, 16 << 20, &buf, len, why, whylen) == CLG_OK ? (char *)buf : NULL;
}

/* The text of cl_kernels/<name>.cl: a malloc'd copy, or NULL with the error recorded. */
static char *source_text(clg_device *dev, const char *name)
{
    size_t len = 0;
    if (dev->kernel_dir[0]) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s.cl", dev->kernel_dir, name);
        char why[256];
        char *s = read_file(path, &len, why, sizeof why);
        if (!s) clg__fail(dev, CLG_ERR_IO, "kernel source %s (from CLG_KERNEL_DIR) cannot be read: %s", path, why);
        return s;
    }
    for (int i = 0; i < clg__kernel_source_count; i++)
        if (!strcmp(clg__kernel_sources[i].name, name)) return strdup(clg__kernel_sources[i].text);
    clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "no kernel program named %s.cl in cl_kernels/", name);
    return NULL;
}

/* common.cl, then the program's file; for a bundle ("copy+relu+...", clg__programs_bundle)
 * each member's file in turn, each with its own #line. */
static char *program_source(clg_device *dev, const char *name)
{
    char *all = source_text(dev, "common");
    for (const char *m = name; all && *m;) {
        size_t ml = strcspn(m, "+");
        char member[64];
        snprintf(member, sizeof member, "%.*s", (int)ml, m);
        char *body = source_text(dev, member), *grown = NULL;
        if (body) {
            size_t n = strlen(all) + strlen(body) + ml + 64;
            if ((grown = malloc(n))) snprintf(grown, n, "%s\n#line 1 \"%s.cl\"\n%s", all, member, body);
            else clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "program source: out of host memory");
        }
        free(all);
        free(body);
        all = grown;
        m += ml + (m[ml] == '+');
    }
    return all;
}

/* ---- building ---------------------------------------------------------------------- */

static void build_failure(clg_device *dev, cl_program p, cl_int e, const char *name, const char *opts)
{
    size_t n = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(p, dev->cl->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS && n) {
        log = malloc(n + 1);
        if (log && clGetProgramBuildInfo(p, dev->cl->id, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS)
            log[0] = 0;
        if (log) log[n] = 0;
    }
    clg__fail(dev, CLG_ERR_BUILD, "building cl_kernels/%s.cl with options \"%s\" failed on %s: %s (%d)\n%s",
              name, opts, dev->info.name, clg_cl_error_name(e), e, log ? log : "(no build log)");
    free(log);
}

static char *cache_meta(clg_device *dev, const char *src, const char *opts)
{
    char pver[CLG_NAME_MAX] = "";
    if (clGetPlatformInfo(dev->cl->platform, CL_PLATFORM_VERSION, sizeof pver, pver, NULL) != CL_SUCCESS)
        pver[0] = 0;
    pver[sizeof pver - 1] = 0;
    char srchash[33];
    clg__hash_hex(src, strlen(src), srchash);
    size_t n = strlen(opts) + 4 * CLG_NAME_MAX + 256;
    char *meta = malloc(n);
    if (meta)
        snprintf(meta, n, "clgrad program binary 1\nplatform: %s | %s\ndevice: %s\ndriver: %s\n"
                 "options: %s\nsource: %s\n", dev->info.platform, pver, dev->info.name,
                 dev->info.driver, opts, srchash);
    return meta;
}

static cl_program from_cache(clg_device *dev, const char *meta, const char *opts)
{
    size_t len = 0;
    unsigned char *bin = clg__disk_cache_load(dev, meta, &len);
    if (!bin) return NULL;
    cl_int e, bs;
    const unsigned char *bins[1] = {bin};
    cl_program p = clCreateProgramWithBinary(dev->cl->ctx, 1, &dev->cl->id, &len, bins, &bs, &e);
    free(bin);
    if (e == CL_SUCCESS && bs == CL_SUCCESS && clBuildProgram(p, 1, &dev->cl->id, opts, NULL, NULL) == CL_SUCCESS)
        return p;
    if (e == CL_SUCCESS) clReleaseProgram(p);
    dev->prog_stats.cache_rejects++;  /* the driver refused it: rebuild from source */
    return NULL;
}

static void to_cache(clg_device *dev, cl_program p, const char *meta)
{
    size_t len = 0;
    if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS || !len) return;
    unsigned char *bin = malloc(len);
    unsigned char *bins[1] = {bin};
    if (bin && clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS)
        clg__disk_cache_store(dev, meta, bin, len);
    free(bin);
}

char *clg__program_options(const clg_device *dev, const char *given)
{
    const char *exact = dev->params.exact_div ? " -cl-fp32-correctly-rounded-divide-sqrt" : "";
    const char *fma = dev->params.fma ? " -DCLG_HW_FMA" : "";
    size_t n = strlen(given) + strlen(exact) + strlen(fma) + 1;
    char *o = malloc(n);
    if (o) snprintf(o, n, "%s%s%s", given, exact, fma);
    return o;
}

static void job_free(clg_build_job *job)
{
    free(job->src);
    free(job->meta);
    job->src = job->meta = NULL;
}

bool clg__build_begin(clg_device *dev, clg_build_job *job)
{
    job->prog = NULL;
    job->cached = false;
    job->err = CL_SUCCESS;
    job->seconds = 0;
    if (!(job->src = program_source(dev, job->name))) return false;
    clg__disk_cache_init(dev);
    job->meta = dev->disk.enabled ? cache_meta(dev, job->src, job->options) : NULL;
    job->start = clg__now();
    job->prog = job->meta ? from_cache(dev, job->meta, job->options) : NULL;
    job->cached = job->prog != NULL;
    if (!job->prog) {
        cl_int e;
        const char *srcs[1] = {job->src};
        job->prog = clCreateProgramWithSource(dev->cl->ctx, 1, srcs, NULL, &e);
        if (e != CL_SUCCESS) {
            clg__cl_fail(dev, e, "clCreateProgramWithSource", job->name);
            job_free(job);
            return false;
        }
    }
    job->seconds = clg__now() - job->start;
    return true;
}

void clg__build_compile(const clg_device *dev, clg_build_job *job)
{
    double t0 = clg__now();
    job->err = clBuildProgram(job->prog, 1, &dev->cl->id, job->options, NULL, NULL);
    job->seconds += clg__now() - t0;
}

cl_program clg__build_end(clg_device *dev, clg_build_job *job, bool report)
{
    cl_program p = job->prog;
    if (!job->cached && job->err != CL_SUCCESS) {
        if (report) build_failure(dev, p, job->err, job->name, job->options);
        clReleaseProgram(p);
        p = NULL;
    } else if (!job->cached && job->meta && dev->params.binary_cache) {
        to_cache(dev, p, job->meta);
    }
    if (p) {
        dev->prog_stats.compile_seconds += job->seconds;
        if (job->cached) dev->prog_stats.loaded_from_cache++;
        else dev->prog_stats.built_from_source++;
        clg__profile_build(dev, job->name, job->options, job->start, job->seconds, job->cached);
    }
    job_free(job);
    job->prog = NULL;
    return p;
}
