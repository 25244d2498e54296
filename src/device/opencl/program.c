/* program.c: the kernel table. A program is built (program_build.c) the first time one
 * of its kernels is asked for, unless clg__programs_build (build_many.c) built it ahead,
 * with others side by side; its kernels are looked up by (program, options, kernel). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_cl.h"

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

cl_program clg__program_find(clg_device *dev, const char *name, const char *options)
{
    clg_kernel_table *t = table(dev);
    for (program_entry *e = t ? t->programs : NULL; e; e = e->next)
        if (!strcmp(e->name, name) && !strcmp(e->options, options)) return e->prog;
    return NULL;
}

bool clg__program_keep(clg_device *dev, const char *name, const char *options, cl_program p)
{
    clg_kernel_table *t = table(dev);
    program_entry *e = t ? calloc(1, sizeof *e) : NULL;
    if (!e || !(e->options = strdup(options))) {
        free(e);
        clReleaseProgram(p);
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "program table: out of host memory");
        return false;
    }
    snprintf(e->name, sizeof e->name, "%s", name);
    e->prog = p;
    e->next = t->programs;
    t->programs = e;
    return true;
}

/* The program, built now (on this thread) unless the table has it. */
static cl_program get_program(clg_device *dev, const char *name, const char *given)
{
    clg_build_job job = {.options = clg__program_options(dev, given)};
    if (!job.options) {
        clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "program table: out of host memory");
        return NULL;
    }
    snprintf(job.name, sizeof job.name, "%s", name);
    cl_program p = clg__program_find(dev, name, job.options);
    if (!p && clg__build_begin(dev, &job)) {
        if (!job.cached) clg__build_compile(dev, &job);
        p = clg__build_end(dev, &job, true);
        if (p && !clg__program_keep(dev, name, job.options, p)) p = NULL;
    }
    free(job.options);
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
    cl_program p = get_program(dev, program, options);
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

bool clg__kernel_origin(const clg_kernel *k, char *program, size_t plen, char *options, size_t olen)
{
    const char *nl1 = k->key ? strchr(k->key, '\n') : NULL, *nl2 = nl1 ? strchr(nl1 + 1, '\n') : NULL;
    if (k->native || !nl2 || (size_t)(nl1 - k->key) >= plen || (size_t)(nl2 - nl1 - 1) >= olen) return false;
    snprintf(program, plen, "%.*s", (int)(nl1 - k->key), k->key);
    snprintf(options, olen, "%.*s", (int)(nl2 - nl1 - 1), nl1 + 1);
    return true;
}

clg_kernel *clg__kernel_variant(clg_device *dev, const clg_kernel *k, const char *extra)
{
    char program[64], given[512], options[512];
    if (!clg__kernel_origin(k, program, sizeof program, given, sizeof given)) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "kernel %s: no key to build a variant from (internal error)", k->name);
        return NULL;
    }
    int n = snprintf(options, sizeof options, "%s %s", given, extra);
    if (n < 0 || (size_t)n >= sizeof options) {
        clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "kernel %s: options too long for a variant", k->name);
        return NULL;
    }
    return clg__kernel_get(dev, program, options, k->name);
}

/* Whether some kernel of the table comes from program e: its key "name\noptions\nkernel"
 * names the program, and its options are the program's less what the device adds. */
static bool in_use(clg_device *dev, const clg_kernel_table *t, const program_entry *e)
{
    size_t nl = strlen(e->name);
    for (size_t i = 0; i < t->cap; i++) {
        const char *k = t->slots[i].key, *end = k ? strchr(k + nl + 1, '\n') : NULL;
        if (!k || strncmp(k, e->name, nl) || k[nl] != '\n' || !end) continue;
        char given[1024];
        snprintf(given, sizeof given, "%.*s", (int)(end - (k + nl + 1)), k + nl + 1);
        char *whole = clg__program_options(dev, given);
        bool same = whole && !strcmp(whole, e->options);
        free(whole);
        if (same) return true;
    }
    return false;
}

int clg__programs_idle(clg_device *dev)
{
    int n = 0;
    for (program_entry *e = dev->kernels ? dev->kernels->programs : NULL; e; e = e->next) n += !in_use(dev, dev->kernels, e);
    return n;
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
