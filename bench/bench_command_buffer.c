/* bench_command_buffer: what cl_khr_command_buffer saves the host on this OpenCL
 * implementation, measured before clgrad's graph replay (clgrad/graph.h) would use it.
 *
 *   ./build/bench/bench_command_buffer [--device NAME] [--kernels 40] [--steps 200] [--repeats 3]
 *
 * One "step" is `kernels` small launches (a[i] = a[i] * s + 1 over 1024 floats, each
 * launch its own kernel object with its arguments set once, as a replay has them):
 * enqueued one by one, or recorded once into a command buffer and enqueued as one. Per
 * repeat it prints the calling thread's CPU time and the wall time per step of both:
 *   plain host_us H wall_us W cmdbuf host_us H wall_us W
 * NAME picks the first device whose name or platform name contains it, in any case (default: the
 * first device with the extension). Without the extension it says so and exits 1.
 * The command buffer is recorded for simultaneous use when the device can; otherwise
 * each enqueue waits for the previous one (a buffer may not be pending twice). */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double thread_cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static const char *SRC = "__kernel void k(__global float *a, float s) { int i = get_global_id(0); a[i] = a[i] * s + 1; }";

typedef struct cb_api {
    clCreateCommandBufferKHR_fn create;
    clCommandNDRangeKernelKHR_fn ndrange;
    clFinalizeCommandBufferKHR_fn finalize;
    clEnqueueCommandBufferKHR_fn enqueue;
    clReleaseCommandBufferKHR_fn release;
} cb_api;

/* Does s contain w, ignoring case (CLG_DEVICE's "nvidia" in "NVIDIA CUDA")? */
static int contains(const char *s, const char *w)
{
    size_t n = strlen(w);
    for (; *s; s++) {
        size_t i = 0;
        while (i < n && s[i] && tolower((unsigned char)s[i]) == tolower((unsigned char)w[i])) i++;
        if (i == n) return 1;
    }
    return n == 0;
}

/* The first device matching `want` (NULL: any) that reports cl_khr_command_buffer. */
static int pick(const char *want, cl_platform_id *plat, cl_device_id *dev, char *name, size_t len)
{
    cl_platform_id ps[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS) return -1;
    for (cl_uint p = 0; p < np; p++) {
        cl_device_id ds[16];
        cl_uint nd = 0;
        char pname[256] = "";
        clGetPlatformInfo(ps[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
        if (clGetDeviceIDs(ps[p], CL_DEVICE_TYPE_ALL, 16, ds, &nd) != CL_SUCCESS) continue;
        for (cl_uint d = 0; d < nd; d++) {
            char dname[256] = "", ext[8192] = "";
            clGetDeviceInfo(ds[d], CL_DEVICE_NAME, sizeof dname, dname, NULL);
            clGetDeviceInfo(ds[d], CL_DEVICE_EXTENSIONS, sizeof ext, ext, NULL);
            if (want && !contains(dname, want) && !contains(pname, want)) continue;
            snprintf(name, len, "%s (%s)", dname, pname);
            *plat = ps[p];
            *dev = ds[d];
            return strstr(ext, "cl_khr_command_buffer") ? 1 : 0;
        }
    }
    return -1;
}

/* An extension function by name into *fn (a function pointer; POSIX lets an object
 * pointer carry one, ISO C does not say, hence the copy). */
static int load_fn(cl_platform_id p, const char *name, void *fn, size_t size)
{
    void *f = clGetExtensionFunctionAddressForPlatform(p, name);
    memcpy(fn, &f, size);
    return f ? 0 : -1;
}

static int load(cl_platform_id p, cb_api *a)
{
    return load_fn(p, "clCreateCommandBufferKHR", &a->create, sizeof a->create) |
           load_fn(p, "clCommandNDRangeKernelKHR", &a->ndrange, sizeof a->ndrange) |
           load_fn(p, "clFinalizeCommandBufferKHR", &a->finalize, sizeof a->finalize) |
           load_fn(p, "clEnqueueCommandBufferKHR", &a->enqueue, sizeof a->enqueue) |
           load_fn(p, "clReleaseCommandBufferKHR", &a->release, sizeof a->release);
}

#define TRY(call)                                                                  \
    do {                                                                           \
        cl_int e_ = (call);                                                        \
        if (e_ != CL_SUCCESS) {                                                    \
            fprintf(stderr, "bench_command_buffer: %s: error %d\n", #call, e_);    \
            return 1;                                                              \
        }                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    const char *want = NULL;
    int kernels = 40, steps = 200, repeats = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) want = argv[++i];
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) kernels = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_command_buffer [--device NAME] [--kernels N] [--steps N] [--repeats R]\n");
            return 2;
        }
    }
    if (kernels < 1 || steps < 1 || repeats < 1) return 2;
    cl_platform_id plat;
    cl_device_id dev;
    char name[600];
    cb_api api;
    int has = pick(want, &plat, &dev, name, sizeof name);
    if (has < 0) return fprintf(stderr, "bench_command_buffer: no OpenCL device%s%s\n", want ? " matching " : "",
                                want ? want : ""), 1;
    if (has == 0 || load(plat, &api))
        return fprintf(stderr, "bench_command_buffer: %s does not offer cl_khr_command_buffer\n", name), 1;
    cl_bitfield caps = 0;
    clGetDeviceInfo(dev, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR, sizeof caps, &caps, NULL);
    int simultaneous = (caps & CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR) != 0;
    printf("device %s, %d kernels per step, simultaneous use %s\n", name, kernels, simultaneous ? "yes" : "no");
    cl_int e;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    TRY(e);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &e);
    TRY(e);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &e);
    TRY(e);
    TRY(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 1024 * sizeof(float), NULL, &e);
    TRY(e);
    cl_kernel *ks = calloc((size_t)kernels, sizeof *ks);
    if (!ks) return 1;
    const float s = 0.5f;
    for (int i = 0; i < kernels; i++) {
        ks[i] = clCreateKernel(prog, "k", &e);
        TRY(e);
        TRY(clSetKernelArg(ks[i], 0, sizeof a, &a));
        TRY(clSetKernelArg(ks[i], 1, sizeof s, &s));
    }
    const size_t global = 1024;
    cl_command_buffer_properties_khr props[] = {CL_COMMAND_BUFFER_FLAGS_KHR, CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0};
    cl_command_buffer_khr cb = api.create(1, &q, simultaneous ? props : NULL, &e);
    TRY(e);
    for (int i = 0; i < kernels; i++)
        TRY(api.ndrange(cb, NULL, NULL, ks[i], 1, NULL, &global, NULL, 0, NULL, NULL, NULL));
    TRY(api.finalize(cb));
    for (int r = 0; r < repeats; r++) {
        TRY(clFinish(q));
        double c0 = thread_cpu(), w0 = now();
        for (int st = 0; st < steps; st++)
            for (int i = 0; i < kernels; i++) TRY(clEnqueueNDRangeKernel(q, ks[i], 1, NULL, &global, NULL, 0, NULL, NULL));
        double plain_host = thread_cpu() - c0;
        TRY(clFinish(q));
        double plain_wall = now() - w0;
        c0 = thread_cpu();
        w0 = now();
        for (int st = 0; st < steps; st++) {
            cl_event ev = NULL;
            TRY(api.enqueue(1, &q, cb, 0, NULL, simultaneous ? NULL : &ev));
            if (ev) {
                TRY(clWaitForEvents(1, &ev));
                clReleaseEvent(ev);
            }
        }
        double cb_host = thread_cpu() - c0;
        TRY(clFinish(q));
        double cb_wall = now() - w0;
        printf("plain host_us %.1f wall_us %.1f cmdbuf host_us %.1f wall_us %.1f\n", 1e6 * plain_host / steps,
               1e6 * plain_wall / steps, 1e6 * cb_host / steps, 1e6 * cb_wall / steps);
        fflush(stdout);
    }
    api.release(cb);
    for (int i = 0; i < kernels; i++) clReleaseKernel(ks[i]);
    free(ks);
    clReleaseMemObject(a);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
