/* bench_mma_probe: can this OpenCL device run NVIDIA's matrix instructions (inline PTX
 * mma.sync), are they right, and how fast are they? The first question of the GPU issue's
 * matrix-unit engine, asked before any GEMM is built on them:
 *   ./build/bench/bench_mma_probe [--device NAME] [--iters 4096]
 * For float16 and bfloat16 inputs (float32 accumulation; PTX m16n8k16, sm_80 and later)
 * and TF32 (m16n8k8): one warp multiplies a 16x16 by a 16x8 tile and the result is checked
 * against the host's float64 product of the same rounded inputs; then every warp of a
 * large launch runs --iters products in 4 independent chains, timed on the host, to give
 * the matrix units' rate beside the same launch of plain float FMAs. A device that does not
 * take inline PTX (every non-NVIDIA one) says so and exits 1: nothing here is a fallback.
 * NAME picks the first device whose name or platform contains it, in any case. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

static const char *SRC =
    "#define PAIR(p, i) ((uint)(p)[i] | (uint)(p)[(i) + 1] << 16)\n"
    "#define MMA16(KIND, d, a, b, c) asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.\" KIND \".\" KIND \".f32 \" \\\n"
    "  \"{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\" : \"=f\"(d[0]), \"=f\"(d[1]), \"=f\"(d[2]), \\\n"
    "  \"=f\"(d[3]) : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]), \"f\"(c[0]), \"f\"(c[1]), \\\n"
    "  \"f\"(c[2]), \"f\"(c[3]))\n"
    /* A 16x16 row-major, B given as 8 columns of 16 (col), D 16x8: PTX's fragment layouts */
    "void load16(__global const ushort *A, __global const ushort *B, uint *a, uint *b) {\n"
    "  int l = get_local_id(0) & 31, g = l >> 2, t = l & 3;\n"
    "  a[0] = PAIR(A, g * 16 + 2 * t); a[1] = PAIR(A, (g + 8) * 16 + 2 * t);\n"
    "  a[2] = PAIR(A, g * 16 + 2 * t + 8); a[3] = PAIR(A, (g + 8) * 16 + 2 * t + 8);\n"
    "  b[0] = PAIR(B, g * 16 + 2 * t); b[1] = PAIR(B, g * 16 + 2 * t + 8);\n"
    "}\n"
    "void store(__global float *D, const float *d) {\n"
    "  int l = get_local_id(0) & 31, g = l >> 2, t = l & 3;\n"
    "  D[g * 8 + 2 * t] = d[0]; D[g * 8 + 2 * t + 1] = d[1]; D[(g + 8) * 8 + 2 * t] = d[2]; D[(g + 8) * 8 + 2 * t + 1] = d[3];\n"
    "}\n"
    "__kernel void one_f16(__global const ushort *A, __global const ushort *B, __global float *D) {\n"
    "  uint a[4], b[2]; float c[4] = {0, 0, 0, 0}, d[4];\n"
    "  load16(A, B, a, b); MMA16(\"f16\", d, a, b, c); store(D, d);\n"
    "}\n"
    "__kernel void one_bf16(__global const ushort *A, __global const ushort *B, __global float *D) {\n"
    "  uint a[4], b[2]; float c[4] = {0, 0, 0, 0}, d[4];\n"
    "  load16(A, B, a, b); MMA16(\"bf16\", d, a, b, c); store(D, d);\n"
    "}\n"
    /* TF32 m16n8k8: A 16x8 (4 regs), B 8x8 (2 regs), operands as float bits */
    "__kernel void one_tf32(__global const uint *A, __global const uint *B, __global float *D) {\n"
    "  int l = get_local_id(0) & 31, g = l >> 2, t = l & 3;\n"
    "  uint a[4] = {A[g * 8 + t], A[(g + 8) * 8 + t], A[g * 8 + t + 4], A[(g + 8) * 8 + t + 4]};\n"
    "  uint b[2] = {B[g * 8 + t], B[g * 8 + t + 4]};\n"
    "  float d[4];\n"
    "  asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, \"\n"
    "    \"{%10,%11,%12,%13};\" : \"=f\"(d[0]), \"=f\"(d[1]), \"=f\"(d[2]), \"=f\"(d[3]) : \"r\"(a[0]), \"r\"(a[1]),\n"
    "    \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]), \"f\"(0.0f), \"f\"(0.0f), \"f\"(0.0f), \"f\"(0.0f));\n"
    "  store(D, d);\n"
    "}\n"
    /* rate: 4 chains of products per warp; the sums go out so nothing is dead code */
    "__kernel void rate_f16(__global const ushort *A, __global const ushort *B, __global float *D, int iters) {\n"
    "  uint a[4], b[2]; float c0[4] = {0, 0, 0, 0}, c1[4] = {0, 0, 0, 0}, c2[4] = {0, 0, 0, 0}, c3[4] = {0, 0, 0, 0};\n"
    "  load16(A, B, a, b);\n"
    "  for (int i = 0; i < iters; i++) {\n"
    "    MMA16(\"f16\", c0, a, b, c0); MMA16(\"f16\", c1, a, b, c1); MMA16(\"f16\", c2, a, b, c2); MMA16(\"f16\", c3, a, b, c3);\n"
    "  }\n"
    "  float s = 0; for (int j = 0; j < 4; j++) s += c0[j] + c1[j] + c2[j] + c3[j];\n"
    "  if (s == 12345.0f) D[get_global_id(0)] = s;\n"
    "}\n"
    "__kernel void rate_fma(__global const ushort *A, __global const ushort *B, __global float *D, int iters) {\n"
    "  float x = A[get_local_id(0) & 255] * 1e-3f, y = 1.0001f, c[16];\n"
    "  for (int j = 0; j < 16; j++) c[j] = j;\n"
    "  for (int i = 0; i < iters; i++) for (int j = 0; j < 16; j++) c[j] = fma(c[j], y, x);\n"
    "  float s = 0; for (int j = 0; j < 16; j++) s += c[j];\n"
    "  if (s == 12345.0f) D[get_global_id(0)] = s;\n"
    "}\n";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int contains(const char *s, const char *w)
{
    for (size_t n = strlen(w); *s; s++)
        if (!strncasecmp(s, w, n)) return 1;
    return 0;
}

/* float to float16 / bfloat16 bits, round to nearest even (finite values only), and back */
static uint16_t to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, e = (x >> 23) & 0xff, m = x & 0x7fffff;
    int ee = (int)e - 127 + 15;
    if (ee <= 0) return (uint16_t)sign;   /* the probe's values are never that small */
    uint32_t r = (uint32_t)ee << 10 | m >> 13, rest = m & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (r & 1))) r++;
    return (uint16_t)(sign | r);
}
static float from_f16(uint16_t h)
{
    int e = (h >> 10) & 0x1f;
    float v = ldexpf((float)((h & 0x3ff) | 0x400), e - 25);
    return (h & 0x8000 ? -v : v) * (e != 0);
}
static uint16_t to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}
static float from_bf16(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static cl_device_id pick(const char *want)
{
    cl_platform_id plats[16];
    cl_uint np = 0;
    clGetPlatformIDs(16, plats, &np);
    for (cl_uint p = 0; p < np; p++) {
        cl_device_id devs[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS) continue;
        char pn[256] = "";
        clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pn, pn, NULL);
        for (cl_uint d = 0; d < nd; d++) {
            char dn[256] = "";
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof dn, dn, NULL);
            if (!want || contains(dn, want) || contains(pn, want)) return devs[d];
        }
    }
    return NULL;
}

typedef struct ctx {
    cl_context c;
    cl_command_queue q;
    cl_program p;
    cl_mem a, b, d;
} ctx;

/* One warp's product with kernel `name`; the worst error against the float64 product of
 * the rounded inputs, relative to the largest |result|. */
static int check_one(ctx *x, const char *name, int kind, double *err)
{
    enum { M = 16, N = 8 };
    int K = kind == 2 ? 8 : 16;
    uint32_t a32[M * 16], b32[N * 16];
    uint16_t a16[M * 16], b16[N * 16];
    double ar[M * 16], br[N * 16];
    for (int i = 0; i < M * K; i++) {
        float v = (float)((i * 37 % 101) - 50) / 16.0f;
        if (kind == 2) {
            memcpy(&a32[i], &v, 4);
            a32[i] &= 0xffffe000u;   /* TF32 keeps 10 mantissa bits: give it exact inputs */
            float r;
            memcpy(&r, &a32[i], 4);
            ar[i] = r;
        } else {
            a16[i] = kind ? to_bf16(v) : to_f16(v);
            ar[i] = kind ? from_bf16(a16[i]) : from_f16(a16[i]);
        }
    }
    for (int i = 0; i < N * K; i++) {
        float v = (float)((i * 53 % 89) - 44) / 8.0f;
        if (kind == 2) {
            memcpy(&b32[i], &v, 4);
            b32[i] &= 0xffffe000u;
            float r;
            memcpy(&r, &b32[i], 4);
            br[i] = r;
        } else {
            b16[i] = kind ? to_bf16(v) : to_f16(v);
            br[i] = kind ? from_bf16(b16[i]) : from_f16(b16[i]);
        }
    }
    cl_int e = clEnqueueWriteBuffer(x->q, x->a, CL_TRUE, 0, kind == 2 ? sizeof a32 : sizeof a16,
                                    kind == 2 ? (void *)a32 : (void *)a16, 0, NULL, NULL);
    e |= clEnqueueWriteBuffer(x->q, x->b, CL_TRUE, 0, kind == 2 ? sizeof b32 : sizeof b16,
                              kind == 2 ? (void *)b32 : (void *)b16, 0, NULL, NULL);
    cl_kernel k = clCreateKernel(x->p, name, &e);
    if (!k) return printf("%s: clCreateKernel %d\n", name, e), 1;
    clSetKernelArg(k, 0, sizeof x->a, &x->a);
    clSetKernelArg(k, 1, sizeof x->b, &x->b);
    clSetKernelArg(k, 2, sizeof x->d, &x->d);
    size_t g = 32;
    float d[M * N];
    e = clEnqueueNDRangeKernel(x->q, k, 1, NULL, &g, &g, 0, NULL, NULL);
    if (!e) e = clEnqueueReadBuffer(x->q, x->d, CL_TRUE, 0, sizeof d, d, 0, NULL, NULL);
    clReleaseKernel(k);
    if (e) return printf("%s: launch or read failed (%d)\n", name, e), 1;
    double worst = 0, big = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;   /* B is stored as columns: element (k, j) at j * K + k */
            for (int kk = 0; kk < K; kk++) s += ar[i * K + kk] * br[j * K + kk];
            worst = fmax(worst, fabs(s - d[i * N + j]));
            big = fmax(big, fabs(s));
        }
    *err = worst / big;
    return 0;
}

static double rate(ctx *x, const char *name, int iters, double flops_per_item_iter)
{
    cl_int e;
    cl_kernel k = clCreateKernel(x->p, name, &e);
    if (!k) return -1;
    clSetKernelArg(k, 0, sizeof x->a, &x->a);
    clSetKernelArg(k, 1, sizeof x->b, &x->b);
    clSetKernelArg(k, 2, sizeof x->d, &x->d);
    clSetKernelArg(k, 3, sizeof iters, &iters);
    size_t local = 256, global = 256 * 132 * 16;
    double best = 1e30;
    for (int r = 0; r < 4; r++) {   /* the first is a warm-up */
        double t0 = now();
        e = clEnqueueNDRangeKernel(x->q, k, 1, NULL, &global, &local, 0, NULL, NULL);
        clFinish(x->q);
        if (e) return clReleaseKernel(k), -1;
        if (r) best = fmin(best, now() - t0);
    }
    clReleaseKernel(k);
    return flops_per_item_iter * (double)global * iters / best / 1e12;
}

int main(int argc, char **argv)
{
    const char *want = NULL;
    int iters = 4096;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--device")) want = argv[i + 1];
        else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    }
    cl_device_id dev = pick(want);
    if (!dev) return printf("no OpenCL device%s%s\n", want ? " matching " : "", want ? want : ""), 1;
    char dn[256] = "", dv[256] = "";
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dn, dn, NULL);
    clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof dv, dv, NULL);
    printf("device: %s, driver %s\n", dn, dv);
    ctx x = {0};
    cl_int e;
    x.c = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    x.q = x.c ? clCreateCommandQueue(x.c, dev, 0, &e) : NULL;
    if (!x.q) return printf("no context or queue (%d)\n", e), 1;
    double t0 = now();
    x.p = clCreateProgramWithSource(x.c, 1, &SRC, NULL, &e);
    e = clBuildProgram(x.p, 1, &dev, "", NULL, NULL);
    char log[16384] = "";
    clGetProgramBuildInfo(x.p, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
    if (e) return printf("inline PTX mma.sync: the build failed (%d) in %.2f s:\n%s\n", e, now() - t0, log), 1;
    printf("inline PTX mma.sync: built in %.2f s%s%s\n", now() - t0, log[0] ? "; log: " : "", log);
    x.a = clCreateBuffer(x.c, CL_MEM_READ_WRITE, 16 * 16 * 4, NULL, &e);
    x.b = clCreateBuffer(x.c, CL_MEM_READ_WRITE, 16 * 16 * 4, NULL, &e);
    x.d = clCreateBuffer(x.c, CL_MEM_READ_WRITE, 256 * 132 * 16 * 4, NULL, &e);
    const char *names[3] = {"one_f16", "one_bf16", "one_tf32"}, *what[3] = {"float16", "bfloat16", "tf32"};
    int bad = 0;
    for (int kind = 0; kind < 3; kind++) {
        double err = 0;
        if (check_one(&x, names[kind], kind, &err)) {
            bad = 1;
            continue;
        }
        int ok = err < 1e-6;
        bad |= !ok;
        printf("%-9s one warp's 16x%dx8 product: %s (worst error %.2g of the largest value)\n", what[kind],
               kind == 2 ? 8 : 16, ok ? "right" : "WRONG", err);
    }
    /* per work-item and iteration: 4 products of 2*16*8*16 flops per 32 items; 16 FMAs */
    double mma = rate(&x, "rate_f16", iters, 4.0 * 2 * 16 * 8 * 16 / 32);
    double fma = rate(&x, "rate_fma", iters, 16.0 * 2);
    printf("rate: mma.sync float16 (float32 sums) %.1f TFLOP/s, float FMA %.1f TFLOP/s (%d iterations, %d items)\n",
           mma, fma, iters, 256 * 132 * 16);
    clReleaseMemObject(x.a);
    clReleaseMemObject(x.b);
    clReleaseMemObject(x.d);
    clReleaseProgram(x.p);
    clReleaseCommandQueue(x.q);
    clReleaseContext(x.c);
    return bad;
}
