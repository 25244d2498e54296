/* program.c: the compiler role. Kernel sources come embedded in the library (or from
 * CLG_KERNEL_DIR); a program is built the first time one of its kernels is asked
 * for, never at start-up, from the disk cache when it holds a valid binary.
 * Every program is cl_kernels/common.cl followed by cl_kernels/<name>.cl. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_cl.h"
#include "file_read.h"
#include "kernel_sources.h"

typedef struct program_entry {
    char name[64];
    char *options;
    cl_program prog;
    struct program_entry *next;
} program_entry;

typedef struct kernel_entry {
    uint64_t hash;
    char *key;          /* "program\noptions\nkernel" */
    clg_kernel *kernel; /* allocated apart: callers keep the pointer while the table grows */
} kernel_entry;

struct clg_kernel_table {
    kernel_entry *slots; /* open addressing, power-of-two size */
    size_t cap, n;
    program_entry *programs;
};

static uint64_t fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

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

static char *program_source(clg_device *dev, const char *name)
{
    char *common = source_text(dev, "common");
    char *body = common ? source_text(dev, name) : NULL;
    char *all = NULL;
    if (body) {
        size_t n = strlen(common) + strlen(body) + strlen(name) + 64;
        all = malloc(n);
        if (all) snprintf(all, n, "%s\n#line 1 \"%s.cl\"\n%s", common, name, body);
        else clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "program source: out of host memory");
    }
    free(common);
    free(body);
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

static cl_program build_program(clg_device *dev, const char *name, const char *opts)
{
    char *src = program_source(dev, name);
    if (!src) return NULL;
    clg__disk_cache_init(dev);
    char *meta = dev->disk.enabled ? cache_meta(dev, src, opts) : NULL;
    double t0 = clg__now();
    cl_program p = meta ? from_cache(dev, meta, opts) : NULL;
    bool cached = p != NULL;
    if (!p) {
        cl_int e;
        const char *srcs[1] = {src};
        p = clCreateProgramWithSource(dev->cl->ctx, 1, srcs, NULL, &e);
        if (e != CL_SUCCESS) {
            clg__cl_fail(dev, e, "clCreateProgramWithSource", name);
            p = NULL;
        } else if ((e = clBuildProgram(p, 1, &dev->cl->id, opts, NULL, NULL)) != CL_SUCCESS) {
            build_failure(dev, p, e, name, opts);
            clReleaseProgram(p);
            p = NULL;
        } else if (meta && dev->params.binary_cache) {
            to_cache(dev, p, meta);
        }
    }
    double dt = clg__now() - t0;
    if (p) {
        dev->prog_stats.compile_seconds += dt;
        if (cached) dev->prog_stats.loaded_from_cache++;
        else dev->prog_stats.built_from_source++;
        clg__profile_build(dev, name, opts, t0, dt, cached);
    }
    free(meta);
    free(src);
    return p;
}

/* ---- the table --------------------------------------------------------------------- */

static clg_kernel_table *table(clg_device *dev)
{
    if (!dev->kernels) {
        dev->kernels = calloc(1, sizeof *dev->kernels);
        if (dev->kernels) {
            dev->kernels->cap = 256;
            dev->kernels->slots = calloc(256, sizeof(kernel_entry));
            if (!dev->kernels->slots) {
                free(dev->kernels);
                dev->kernels = NULL;
            }
        }
    }
    return dev->kernels;
}

static cl_program get_program(clg_device *dev, clg_kernel_table *t, const char *name, const char *given)
{
    char opts[1024];   /* the caller's options and the device table's */
    snprintf(opts, sizeof opts, "%s%s", given, dev->params.exact_div ? " -cl-fp32-correctly-rounded-divide-sqrt" : "");
    for (program_entry *e = t->programs; e; e = e->next)
        if (!strcmp(e->name, name) && !strcmp(e->options, opts)) return e->prog;
    cl_program p = build_program(dev, name, opts);
    if (!p) return NULL;
    program_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->options = strdup(opts))) {
        free(e);
        clReleaseProgram(p);
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "program table: out of host memory");
        return NULL;
    }
    snprintf(e->name, sizeof e->name, "%s", name);
    e->prog = p;
    e->next = t->programs;
    t->programs = e;
    return p;
}

static bool grow(clg_kernel_table *t)
{
    size_t cap = t->cap * 2;
    kernel_entry *s = calloc(cap, sizeof *s);
    if (!s) return false;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].key) continue;
        size_t j = t->slots[i].hash & (cap - 1);
        while (s[j].key) j = (j + 1) & (cap - 1);
        s[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = s;
    t->cap = cap;
    return true;
}

static uint64_t key_hash(const char *program, const char *options, const char *kernel)
{
    return fnv1a(kernel, fnv1a(options, fnv1a(program, 0xcbf29ce484222325ULL) * 31) * 31);
}

/* The table's kernel for (program, options, kernel), or NULL. */
static clg_kernel *lookup(clg_kernel_table *t, uint64_t h, const char *program, const char *options,
                          const char *kernel)
{
    for (size_t j = h & (t->cap - 1); t->slots[j].key; j = (j + 1) & (t->cap - 1)) {
        kernel_entry *e = &t->slots[j];
        if (e->hash != h) continue;
        const char *k = e->key;
        size_t pl = strlen(program), ol = strlen(options);
        if (!strncmp(k, program, pl) && k[pl] == '\n' && !strncmp(k + pl + 1, options, ol) &&
            k[pl + 1 + ol] == '\n' && !strcmp(k + pl + ol + 2, kernel))
            return e->kernel;
    }
    return NULL;
}

/* A new entry for kernel object k (NULL for a native function fn); NULL with the error
 * recorded (k released) when out of memory. */
static clg_kernel *insert(clg_device *dev, clg_kernel_table *t, uint64_t h, const char *program,
                          const char *options, const char *kernel, cl_kernel k, clg_native_fn fn)
{
    size_t keylen = strlen(program) + strlen(options) + strlen(kernel) + 3;
    char *key = malloc(keylen);
    clg_kernel *ck = calloc(1, sizeof *ck);
    bool room = (t->n + 1) * 2 <= t->cap || grow(t);
    if (!key || !ck || !room) {
        free(key);
        free(ck);
        if (k) clReleaseKernel(k);
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "kernel table: out of host memory");
        return NULL;
    }
    snprintf(key, keylen, "%s\n%s\n%s", program, options, kernel);
    ck->key = key;
    ck->k = (clg_kobj *)k;
    ck->native = fn;
    snprintf(ck->name, sizeof ck->name, "%s", kernel);
    ck->prof_slot = -1;
    if (!k || clGetKernelWorkGroupInfo(k, dev->cl->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof ck->wg_max, &ck->wg_max,
                                       NULL) != CL_SUCCESS)
        ck->wg_max = 1;
    size_t j = h & (t->cap - 1);
    while (t->slots[j].key) j = (j + 1) & (t->cap - 1);
    t->slots[j] = (kernel_entry){.hash = h, .key = key, .kernel = ck};
    t->n++;
    return ck;
}

clg_kernel *clg__kernel_get(clg_device *dev, const char *program, const char *options, const char *kernel)
{
    clg_kernel_table *t = table(dev);
    if (!t) {
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "kernel table: out of host memory");
        return NULL;
    }
    if (!options) options = "";
    uint64_t h = key_hash(program, options, kernel);
    clg_kernel *found = lookup(t, h, program, options, kernel);
    if (found) return found;
    cl_program p = get_program(dev, t, program, options);
    if (!p) return NULL;
    cl_int err;
    cl_kernel k = clCreateKernel(p, kernel, &err);
    if (err != CL_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "%s in %s.cl", kernel, program);
        clg__cl_fail(dev, err, "clCreateKernel", what);
        return NULL;
    }
    return insert(dev, t, h, program, options, kernel, k, NULL);
}

clg_kernel *clg__native_kernel(clg_device *dev, const char *name, clg_native_fn fn)
{
    clg_kernel_table *t = table(dev);
    if (!t) {
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "kernel table: out of host memory");
        return NULL;
    }
    if (!clg__native_supported(dev)) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "%s: %s runs no host functions as commands (CL_EXEC_NATIVE_KERNEL)",
                  name, dev->info.name);
        return NULL;
    }
    uint64_t h = key_hash("(native)", "", name);
    clg_kernel *found = lookup(t, h, "(native)", "", name);
    return found ? found : insert(dev, t, h, "(native)", "", name, NULL, fn);
}

clg_kernel *clg__kernel_variant(clg_device *dev, const clg_kernel *k, const char *extra)
{
    const char *nl1 = strchr(k->key, '\n'), *nl2 = nl1 ? strchr(nl1 + 1, '\n') : NULL;
    if (!nl2) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "kernel %s: no key to build a variant from (internal error)", k->name);
        return NULL;
    }
    char program[64], options[512];
    snprintf(program, sizeof program, "%.*s", (int)(nl1 - k->key), k->key);
    int n = snprintf(options, sizeof options, "%.*s %s", (int)(nl2 - nl1 - 1), nl1 + 1, extra);
    if (n < 0 || (size_t)n >= sizeof options) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "kernel %s: options too long for a variant", k->name);
        return NULL;
    }
    return clg__kernel_get(dev, program, options, k->name);
}

void clg__programs_free(clg_device *dev)
{
    clg_kernel_table *t = dev->kernels;
    if (!t) return;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].key) {
            if (t->slots[i].kernel->k) clReleaseKernel(clg__cl_kernel(t->slots[i].kernel->k));
            free(t->slots[i].kernel);
            free(t->slots[i].key);
        }
    for (program_entry *e = t->programs, *next; e; e = next) {
        next = e->next;
        clReleaseProgram(e->prog);
        free(e->options);
        free(e);
    }
    free(t->slots);
    free(t);
    dev->kernels = NULL;
}
