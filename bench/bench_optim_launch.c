/* bench_optim_launch: is one optimizer launch over all parameters, each tensor's
 * pointers passed as arguments of their own and picked per work-item (OpenCL C has no
 * arrays of global pointers), faster than one launch per parameter on this device?
 * The answer decides how clgrad could update all parameters in one launch without
 * moving them into one buffer.
 *
 *   ./build/bench/bench_optim_launch [--device NAME] [--steps 200] [--repeats 3]
 *
 * The parameters are the Fashion-MNIST MLP's (784-256-128-10: 235,146 floats in six
 * tensors), SGD with momentum and weight decay. Prints per repeat the wall time per
 * step, the device drained at both ends:
 *   separate_us S multi_us M
 * NAME picks the first device whose name or platform name contains it, in any case. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* sgd is cl_kernels/optim.cl's update; sgd_multi the same update over up to 8 tensors */
static const char *SRC =
    "#define T float\n"
    "inline void sgd_at(__global T *p, __global const T *g, __global T *b, const T lr, const T mu, const T dampening,\n"
    "                   const T wd, int nesterov, int first)\n"
    "{\n"
    "    T pi = *p, gi = *g;\n"
    "    if (wd != 0) gi += wd * pi;\n"
    "    if (mu != 0) {\n"
    "        T bi = first ? gi : mu * *b + (1 - dampening) * gi;\n"
    "        *b = bi;\n"
    "        gi = nesterov ? gi + mu * bi : bi;\n"
    "    }\n"
    "    *p = pi - lr * gi;\n"
    "}\n"
    "__kernel void sgd(int n, __global T *p, int op, __global const T *g, int og, __global T *b, int ob,\n"
    "                  const T lr, const T mu, const T dampening, const T wd, int nesterov, int first)\n"
    "{\n"
    "    int i = get_global_id(0);\n"
    "    sgd_at(p + op + i, g + og + i, b + ob + i, lr, mu, dampening, wd, nesterov, first);\n"
    "}\n"
    "#define TS(k) __global T *p##k, int op##k, __global const T *g##k, int og##k, __global T *b##k, int ob##k\n"
    "#define CASE(k) case k: sgd_at(p##k + op##k + i, g##k + og##k + i, b##k + ob##k + i, lr, mu, dampening, wd, nesterov, first); break;\n"
    "__kernel void sgd_multi(int total, int8 start, TS(0), TS(1), TS(2), TS(3), TS(4), TS(5), TS(6), TS(7),\n"
    "                  const T lr, const T mu, const T dampening, const T wd, int nesterov, int first)\n"
    "{\n"
    "    int x = get_global_id(0);\n"
    "    int j = (x >= start.s1) + (x >= start.s2) + (x >= start.s3) + (x >= start.s4) + (x >= start.s5) + (x >= start.s6) + (x >= start.s7);\n"
    "    int st[8]; vstore8(start, 0, st);\n"
    "    int i = x - st[j];\n"
    "    switch (j) { CASE(0) CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7) }\n"
    "}\n";

enum { NT = 6 };
static const int SIZES[NT] = {200704, 256, 32768, 128, 1280, 10};

#define TRY(call)                                                                 \
    do {                                                                          \
        cl_int e_ = (call);                                                       \
        if (e_ != CL_SUCCESS) {                                                   \
            fprintf(stderr, "bench_optim_launch: %s: error %d\n", #call, e_);     \
            return 1;                                                             \
        }                                                                         \
    } while (0)

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

static int pick(const char *want, cl_device_id *dev, char *name, size_t len)
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
            char dname[256] = "";
            clGetDeviceInfo(ds[d], CL_DEVICE_NAME, sizeof dname, dname, NULL);
            if (want && !contains(dname, want) && !contains(pname, want)) continue;
            snprintf(name, len, "%s (%s)", dname, pname);
            *dev = ds[d];
            return 0;
        }
    }
    return -1;
}

/* Arguments 1.. of a tensor triple (p, g, b at element offset 0) from index a on. */
static int set_tensor(cl_kernel k, int a, const cl_mem *m)
{
    const int zero = 0;
    for (int i = 0; i < 3; i++) {
        if (clSetKernelArg(k, (cl_uint)a++, sizeof m[i], &m[i]) != CL_SUCCESS ||
            clSetKernelArg(k, (cl_uint)a++, sizeof zero, &zero) != CL_SUCCESS)
            return -1;
    }
    return a;
}

static int set_scalars(cl_kernel k, int a)
{
    const float f[4] = {0.01f, 0.9f, 0, 1e-4f};   /* lr, momentum, dampening, weight decay */
    const int flags[2] = {0, 0};                   /* nesterov, first */
    for (int i = 0; i < 4; i++)
        if (clSetKernelArg(k, (cl_uint)a++, sizeof f[i], &f[i]) != CL_SUCCESS) return -1;
    for (int i = 0; i < 2; i++)
        if (clSetKernelArg(k, (cl_uint)a++, sizeof flags[i], &flags[i]) != CL_SUCCESS) return -1;
    return a;
}

int main(int argc, char **argv)
{
    const char *want = NULL;
    int steps = 200, repeats = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) want = argv[++i];
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else return fprintf(stderr, "usage: bench_optim_launch [--device NAME] [--steps N] [--repeats R]\n"), 2;
    }
    cl_device_id dev;
    char name[600];
    if (steps < 1 || repeats < 1) return 2;
    if (pick(want, &dev, name, sizeof name))
        return fprintf(stderr, "bench_optim_launch: no OpenCL device%s%s\n", want ? " matching " : "", want ? want : ""), 1;
    printf("device %s\n", name);
    cl_int e;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    TRY(e);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &e);
    TRY(e);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &e);
    TRY(e);
    TRY(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    cl_mem mem[NT][3];
    cl_kernel sep[NT];
    int total = 0;
    for (int t = 0; t < NT; t++) {
        for (int i = 0; i < 3; i++) {
            mem[t][i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(float) * (size_t)SIZES[t], NULL, &e);
            TRY(e);
            const float v = 0.01f * (float)(i + 1);
            TRY(clEnqueueFillBuffer(q, mem[t][i], &v, sizeof v, 0, sizeof(float) * (size_t)SIZES[t], 0, NULL, NULL));
        }
        sep[t] = clCreateKernel(prog, "sgd", &e);
        TRY(e);
        TRY(clSetKernelArg(sep[t], 0, sizeof(int), &SIZES[t]));
        if (set_scalars(sep[t], set_tensor(sep[t], 1, mem[t])) < 0) return fprintf(stderr, "clSetKernelArg failed\n"), 1;
        total += SIZES[t];
    }
    cl_kernel multi = clCreateKernel(prog, "sgd_multi", &e);
    TRY(e);
    cl_int8 start;
    for (int t = 0, at = 0; t < 8; t++) {   /* unused tensors start at the end: never picked */
        start.s[t] = t < NT ? at : total;
        if (t < NT) at += SIZES[t];
    }
    TRY(clSetKernelArg(multi, 0, sizeof(int), &total));
    TRY(clSetKernelArg(multi, 1, sizeof start, &start));
    int a = 2;
    for (int t = 0; t < 8 && a > 0; t++) a = set_tensor(multi, a, mem[t < NT ? t : 0]);
    if (a < 0 || set_scalars(multi, a) < 0) return fprintf(stderr, "clSetKernelArg failed\n"), 1;
    for (int r = -1; r < repeats; r++) {   /* r = -1: a warm-up */
        TRY(clFinish(q));
        double t0 = now();
        for (int s = 0; s < steps; s++)
            for (int t = 0; t < NT; t++) {
                size_t g = (size_t)SIZES[t];
                TRY(clEnqueueNDRangeKernel(q, sep[t], 1, NULL, &g, NULL, 0, NULL, NULL));
            }
        TRY(clFinish(q));
        double t_sep = now() - t0;
        t0 = now();
        for (int s = 0; s < steps; s++) {
            size_t g = (size_t)total;
            TRY(clEnqueueNDRangeKernel(q, multi, 1, NULL, &g, NULL, 0, NULL, NULL));
        }
        TRY(clFinish(q));
        if (r >= 0) printf("separate_us %.1f multi_us %.1f\n", 1e6 * t_sep / steps, 1e6 * (now() - t0) / steps);
        fflush(stdout);
    }
    for (int t = 0; t < NT; t++) {
        clReleaseKernel(sep[t]);
        for (int i = 0; i < 3; i++) clReleaseMemObject(mem[t][i]);
    }
    clReleaseKernel(multi);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
