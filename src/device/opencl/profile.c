/* profile.c: with CLG_PROFILE=1, every launch keeps its OpenCL event; once the queue
 * has drained (a read to the host, clg_device_finish), the events' start and end
 * times are folded into per-kernel totals and kept as spans for a Chrome trace.
 * Program builds are timed on the host and accounted apart from kernels. */
#include <stdlib.h>
#include <string.h>

#include "device_cl.h"

#define MAX_PENDING 4096      /* drain early past this many events (profiling only) */
#define MAX_SPANS (1u << 20)  /* trace length kept */

static bool reserve(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need) nc *= 2;
    void *p = realloc(*arr, nc * elem);
    if (!p) return false;
    *arr = p;
    *cap = nc;
    return true;
}

int clg__profile_slot(clg_device *dev, const char *name)
{
    clg_profiler *p = &dev->prof;
    for (int i = 0; i < p->nkernels; i++)
        if (!strcmp(p->kernels[i].name, name)) return i;
    size_t cap = (size_t)p->capkernels;
    if (!reserve((void **)&p->kernels, &cap, (size_t)p->nkernels + 1, sizeof *p->kernels)) return -1;
    p->capkernels = (int)cap;
    clg_prof_kernel *k = &p->kernels[p->nkernels];
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->min_ns = UINT64_MAX;
    return p->nkernels++;
}

/* Fold one launch of d ns into its kernel's totals and the trace. */
static void record(clg_profiler *p, int slot, uint64_t t0, uint64_t t1)
{
    clg_prof_kernel *k = &p->kernels[slot];
    uint64_t d = t1 - t0;
    k->count++;
    k->ns += d;
    if (d < k->min_ns) k->min_ns = d;
    if (d > k->max_ns) k->max_ns = d;
    if (p->nspans < MAX_SPANS && reserve((void **)&p->spans, &p->capspans, p->nspans + 1, sizeof *p->spans))
        p->spans[p->nspans++] = (clg_prof_span){slot, t0, t1};
}

static uint64_t host_ns(const clg_profiler *p, double t) { return (uint64_t)((t - p->host_t0) * 1e9); }

void clg__profile_before_enqueue(clg_device *dev)
{
    clg__queue_finish(dev->cl->queue);
    dev->prof.host_mark = clg__now();
}

/* Enqueues `reps` fills of `m` and returns the host's seconds from the first enqueue to
 * the last one's end, and the device clock's nanoseconds from the first start to the last end. */
static cl_int timed_fills(clg_device *dev, cl_mem m, size_t bytes, int reps, double *host, cl_ulong *device)
{
    cl_float zero = 0;
    cl_event first = NULL, last = NULL;
    double t0 = clg__now();
    cl_int e = CL_SUCCESS;
    for (int r = 0; r < reps && e == CL_SUCCESS; r++)
        e = clEnqueueFillBuffer(dev->cl->queue, m, &zero, sizeof zero, 0, bytes, 0, NULL,
                                r == 0 ? &first : r == reps - 1 ? &last : NULL);
    if (e == CL_SUCCESS) e = clWaitForEvents(1, last ? &last : &first);
    *host = clg__now() - t0;
    cl_ulong s = 0, f = 0;
    if (e == CL_SUCCESS) e = clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL);
    if (e == CL_SUCCESS) e = clGetEventProfilingInfo(last ? last : first, CL_PROFILING_COMMAND_END, sizeof f, &f, NULL);
    if (first) clReleaseEvent(first);
    if (last) clReleaseEvent(last);
    *device = f > s ? f - s : 0;
    return e;
}

/* Why fills: every implementation has them, they need no program, and 64 MiB takes about
 * a millisecond on a CPU. Fills are repeated until the host has waited at least 5 ms, so
 * that the judgement never rests on a span too short to tell (a 64 MiB fill took 0.93 ms
 * on rusticl/llvmpipe with an AVX-512 host, whose clock stamps events 0, 1, 2, 3: a
 * threshold on one fill's host time let that counter pass for a clock). A real clock shows
 * most of the host's time; a counter or a stopped clock shows next to none of it. */
clg_status clg__profile_calibrate(clg_device *dev)
{
    size_t bytes = (size_t)64 << 20;
    if (bytes > dev->info.max_alloc / 2) bytes = (size_t)(dev->info.max_alloc / 2) & ~(size_t)63;
    if (bytes < 4096) return CLG_OK;
    cl_int e;
    cl_mem m = clCreateBuffer(dev->cl->ctx, CL_MEM_READ_WRITE, bytes, NULL, &e);
    if (e != CL_SUCCESS) return clg__cl_fail(dev, e, "clCreateBuffer", "profiling clock check");
    double host = 0;
    cl_ulong device = 0;
    int reps = 1;
    e = timed_fills(dev, m, bytes, 1, &host, &device);   /* warm up: first touch of the pages */
    while (e == CL_SUCCESS) {
        e = timed_fills(dev, m, bytes, reps, &host, &device);
        if (host >= 5e-3 || reps >= 1024) break;
        reps *= 4;
    }
    clReleaseMemObject(m);
    if (e != CL_SUCCESS) return clg__cl_fail(dev, e, "clEnqueueFillBuffer/clGetEventProfilingInfo", "profiling clock check");
    if ((double)device * 1e-9 < 0.05 * host) {
        dev->prof.host_timed = true;
        clg__log(dev, 1, "%s: the profiling clock does not tick (%d fills over %.1f ms lasted %llu ticks): kernels "
                 "are timed on the host instead, each launch waited for", dev->info.name, reps, host * 1e3,
                 (unsigned long long)device);
    }
    return CLG_OK;
}

void clg__profile_event(clg_device *dev, int slot, clg_event *ev) { clg__profile_launch(dev, slot, (cl_event)ev); }

void clg__profile_launch(clg_device *dev, int slot, cl_event ev)
{
    clg_profiler *p = &dev->prof;
    if (p->host_timed) {
        /* Charged from when the queue was last idle (our launches wait for it first). */
        double t0 = p->host_mark;
        if (slot >= 0 && clWaitForEvents(1, &ev) == CL_SUCCESS) {
            p->host_mark = clg__now();
            record(p, slot, host_ns(p, t0), host_ns(p, p->host_mark));
        }
        clReleaseEvent(ev);
        return;
    }
    if (slot < 0 || !reserve((void **)&p->pending, &p->cappending, p->npending + 1, sizeof *p->pending)) {
        clReleaseEvent(ev);
        return;
    }
    p->pending[p->npending++] = (clg_prof_event){ev, slot};
    if (p->npending >= MAX_PENDING && clg__queue_finish(dev->cl->queue) == CL_SUCCESS) clg__profile_collect(dev);
}

void clg__profile_build(clg_device *dev, const char *program, const char *options, double start,
                        double seconds, bool cached)
{
    clg_profiler *p = &dev->prof;
    size_t cap = (size_t)p->capbuilds;
    if (!reserve((void **)&p->builds, &cap, (size_t)p->nbuilds + 1, sizeof *p->builds)) return;
    p->capbuilds = (int)cap;
    clg_prof_build *b = &p->builds[p->nbuilds++];
    snprintf(b->name, sizeof b->name, "%s", program);
    snprintf(b->options, sizeof b->options, "%s", options);
    b->start = start - p->host_t0;
    b->seconds = seconds;
    b->cached = cached;
}

void clg__profile_collect(clg_device *dev)
{
    clg_profiler *p = &dev->prof;
    for (size_t i = 0; i < p->npending; i++) {
        cl_ulong t0 = 0, t1 = 0;
        cl_event ev = p->pending[i].ev;
        if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) == CL_SUCCESS &&
            clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) == CL_SUCCESS &&
            t1 >= t0)
            record(p, p->pending[i].slot, t0, t1);
        clReleaseEvent(ev);
    }
    p->npending = 0;
}

bool clg_device_profiling(const clg_device *dev) { return dev && dev->prof.enabled; }

static int by_time(const void *a, const void *b)
{
    uint64_t x = ((const clg_prof_kernel *)a)->ns, y = ((const clg_prof_kernel *)b)->ns;
    return x < y ? 1 : x > y ? -1 : 0;
}

clg_status clg_device_profile_print(clg_device *dev, FILE *out)
{
    if (!dev || !out) return CLG_ERR_INVALID_ARGUMENT;
    clg_status st = clg_device_finish(dev);
    if (st) return st;
    clg_profiler *p = &dev->prof;
    if (!p->enabled) {
        fprintf(out, "profiling is off (set CLG_PROFILE=1 before opening the device)\n");
        return CLG_OK;
    }
    clg_prof_kernel *ks = malloc(((size_t)p->nkernels + 1) * sizeof *ks);
    if (!ks) return clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "profile: out of host memory");
    memcpy(ks, p->kernels, (size_t)p->nkernels * sizeof *ks);
    qsort(ks, (size_t)p->nkernels, sizeof *ks, by_time);
    uint64_t total = 0;
    for (int i = 0; i < p->nkernels; i++) total += ks[i].ns;
    fprintf(out, "kernels on %s (%s):\n", dev->info.name,
            p->host_timed ? "host time, each launch waited for: the device's profiling clock does not tick"
                          : "device time");
    fprintf(out, "  %-32s %9s %12s %6s %10s %10s %10s\n", "kernel", "launches", "total ms", "%",
            "mean us", "min us", "max us");
    for (int i = 0; i < p->nkernels; i++) {
        if (!ks[i].count) continue;
        fprintf(out, "  %-32s %9llu %12.3f %6.1f %10.2f %10.2f %10.2f\n", ks[i].name,
                (unsigned long long)ks[i].count, ks[i].ns / 1e6, total ? 100.0 * ks[i].ns / total : 0.0,
                ks[i].ns / 1e3 / ks[i].count, ks[i].min_ns / 1e3, ks[i].max_ns / 1e3);
    }
    fprintf(out, "  %-32s %9s %12.3f\n", "total", "", total / 1e6);
    free(ks);
    double build = 0;
    fprintf(out, "program builds (host time, apart from kernels):\n");
    for (int i = 0; i < p->nbuilds; i++) {
        fprintf(out, "  %-20s %-40s %10.1f ms %s\n", p->builds[i].name, p->builds[i].options,
                p->builds[i].seconds * 1e3, p->builds[i].cached ? "(from cache)" : "(compiled)");
        build += p->builds[i].seconds;
    }
    fprintf(out, "  %-61s %10.1f ms\n", "total", build * 1e3);
    return CLG_OK;
}

clg_status clg_device_profile_write_trace(clg_device *dev, const char *path)
{
    if (!dev || !path) return CLG_ERR_INVALID_ARGUMENT;
    clg_status st = clg_device_finish(dev);
    if (st) return st;
    FILE *f = fopen(path, "w");
    if (!f) return clg__fail(dev, CLG_ERR_IO, "profile trace: cannot open %s for writing", path);
    clg_profiler *p = &dev->prof;
    uint64_t t0 = p->nspans ? p->spans[0].start_ns : 0;
    for (size_t i = 0; i < p->nspans; i++)
        if (p->spans[i].start_ns < t0) t0 = p->spans[i].start_ns;
    fprintf(f, "{\"traceEvents\":[\n");
    fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"clgrad\"}},\n");
    fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"device kernels\"}},\n");
    fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":2,\"args\":{\"name\":\"program builds (host clock)\"}}");
    for (size_t i = 0; i < p->nspans; i++) {
        const clg_prof_span *s = &p->spans[i];
        fprintf(f, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":%.3f,\"dur\":%.3f}",
                p->kernels[s->slot].name, (s->start_ns - t0) / 1e3, (s->end_ns - s->start_ns) / 1e3);
    }
    for (int i = 0; i < p->nbuilds; i++)
        fprintf(f, ",\n{\"name\":\"build %s\",\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":%.3f,\"dur\":%.3f,"
                   "\"args\":{\"cached\":%s}}",
                p->builds[i].name, p->builds[i].start * 1e6, p->builds[i].seconds * 1e6,
                p->builds[i].cached ? "true" : "false");
    fprintf(f, "\n]}\n");
    if (fclose(f) != 0) return clg__fail(dev, CLG_ERR_IO, "profile trace: writing %s failed", path);
    return CLG_OK;
}

void clg_device_profile_reset(clg_device *dev)
{
    if (!dev) return;
    clg_profiler *p = &dev->prof;
    if (dev->cl->queue && clg__queue_finish(dev->cl->queue) == CL_SUCCESS) clg__profile_collect(dev);
    for (int i = 0; i < p->nkernels; i++) {
        p->kernels[i].count = p->kernels[i].ns = p->kernels[i].max_ns = 0;
        p->kernels[i].min_ns = UINT64_MAX;
    }
    p->nbuilds = 0;
    p->nspans = 0;
}

void clg__profile_free(clg_device *dev)
{
    clg_profiler *p = &dev->prof;
    for (size_t i = 0; i < p->npending; i++) clReleaseEvent(p->pending[i].ev);
    free(p->pending);
    free(p->kernels);
    free(p->builds);
    free(p->spans);
    memset(p, 0, sizeof *p);
}
