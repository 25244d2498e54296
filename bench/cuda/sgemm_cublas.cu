// sgemm_cublas: the NVIDIA reference for bench_matmul (issue 12): cuBLAS SGEMM, float32,
// row-major C = op(A) . op(B), at bench_matmul's shapes and at 4096^3, timed with CUDA
// events after a warm-up call. Prints the same table layout as bench_matmul, so the two
// can be read side by side on one GPU.
//
//   nvcc -O2 -o sgemm_cublas bench/cuda/sgemm_cublas.cu -lcublas   (compiles without a GPU)
//   ./sgemm_cublas [--repeats N] [--type f32|f16|bf16]
// --type f16 / bf16: A, B and C in 16 bits with float32 sums (cublasGemmEx,
// CUBLAS_COMPUTE_32F: tensor cores), the reference of bench_matmul --type f16 / bf16.
//
// Row-major through column-major cuBLAS: C = op(A) op(B) row-major is C^T = op(B)^T op(A)^T
// column-major, so the call swaps the operands and keeps their transpose flags.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

struct Shape {
    int m, n, k, ta, tb;
    const char *what;
};

static const Shape shapes[] = {
    {4096, 4096, 4096, 0, 0, "square 4096^3"},
    {1024, 1024, 1024, 0, 0, "square 1024^3"},
    {256, 256, 256, 0, 0, "square 256^3"},
    {128, 512, 784, 0, 1, "fc1 fwd  x.W1^T"},
    {128, 784, 512, 0, 0, "fc1 bwd  dX = dY.W1"},
    {512, 784, 128, 1, 0, "fc1 bwd  dW1 = dY^T.X"},
    {128, 256, 512, 0, 1, "fc2 fwd  h.W2^T"},
    {128, 512, 256, 0, 0, "fc2 bwd  dH = dY.W2"},
    {256, 512, 128, 1, 0, "fc2 bwd  dW2 = dY^T.H"},
    {128, 10, 256, 0, 1, "fc3 fwd  h.W3^T"},
    {10, 256, 128, 1, 0, "fc3 bwd  dW3 = dY^T.H"},
};

#define CUDA_TRY(x)                                                                                   \
    do {                                                                                              \
        cudaError_t e_ = (x);                                                                         \
        if (e_ != cudaSuccess) {                                                                      \
            fprintf(stderr, "sgemm_cublas: %s: %s\n", #x, cudaGetErrorString(e_));                    \
            return 1;                                                                                 \
        }                                                                                             \
    } while (0)
#define CUBLAS_TRY(x)                                                                                 \
    do {                                                                                              \
        cublasStatus_t s_ = (x);                                                                      \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                            \
            fprintf(stderr, "sgemm_cublas: %s: status %d\n", #x, (int)s_);                            \
            return 1;                                                                                 \
        }                                                                                             \
    } while (0)

// The element type (--type): 0 float32, 1 float16, 2 bfloat16.
static int g_type = 0;
static size_t esize() { return g_type ? 2 : 4; }
static cudaDataType dtype() { return g_type == 1 ? CUDA_R_16F : g_type == 2 ? CUDA_R_16BF : CUDA_R_32F; }
static void to_dev_type(const std::vector<float> &h, std::vector<unsigned char> &out)
{
    out.resize(h.size() * esize());
    for (size_t i = 0; i < h.size(); i++) {
        if (g_type == 1) { __half x = __float2half(h[i]); memcpy(&out[2 * i], &x, 2); }
        else if (g_type == 2) { __nv_bfloat16 x = __float2bfloat16(h[i]); memcpy(&out[2 * i], &x, 2); }
        else memcpy(&out[4 * i], &h[i], 4);
    }
}
static float from_dev_type(const unsigned char *p)
{
    if (g_type == 1) { __half x; memcpy(&x, p, 2); return __half2float(x); }
    if (g_type == 2) { __nv_bfloat16 x; memcpy(&x, p, 2); return __bfloat162float(x); }
    float x;
    memcpy(&x, p, 4);
    return x;
}

// One row-major product on device buffers; A stored k x m when ta, else m x k (likewise B).
static cublasStatus_t gemm(cublasHandle_t h, const Shape &s, const void *a, const void *b, void *c)
{
    const float one = 1.0f, zero = 0.0f;
    int lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    cublasOperation_t opb = s.tb ? CUBLAS_OP_T : CUBLAS_OP_N, opa = s.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (!g_type)
        return cublasSgemm(h, opb, opa, s.n, s.m, s.k, &one, (const float *)b, ldb, (const float *)a, lda, &zero,
                           (float *)c, s.n);
    return cublasGemmEx(h, opb, opa, s.n, s.m, s.k, &one, b, dtype(), ldb, a, dtype(), lda, &zero, c, dtype(), s.n,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

// C[0][0..] checked against a host dot product: a reference that is right for every transpose.
static bool check(const Shape &s, const std::vector<float> &ha, const std::vector<float> &hb, const void *dc)
{
    int cols = std::min(s.n, 8);
    unsigned char raw[8 * 4];
    if (cudaMemcpy(raw, dc, cols * esize(), cudaMemcpyDeviceToHost) != cudaSuccess) return false;
    // 16-bit inputs are rounded before the product, and C once after it.
    std::vector<unsigned char> one;
    auto rounded = [&](float v) { std::vector<float> x(1, v); to_dev_type(x, one); return from_dev_type(one.data()); };
    for (int j = 0; j < cols; j++) {
        double want = 0;
        for (int p = 0; p < s.k; p++) {
            double av = rounded(s.ta ? ha[(size_t)p * s.m] : ha[p]);
            double bv = rounded(s.tb ? hb[(size_t)j * s.k + p] : hb[(size_t)p * s.n + j]);
            want += av * bv;
        }
        float got = from_dev_type(raw + j * esize());
        double tol = (g_type == 2 ? 1e-2 : g_type == 1 ? 2e-3 : 1e-3) * (1 + std::abs(want)) * (g_type ? 1 : s.k / 64.0);
        if (std::abs(got - want) > tol) {
            fprintf(stderr, "sgemm_cublas: %s: C[0][%d] = %g, want %g\n", s.what, j, got, want);
            return false;
        }
    }
    return true;
}

int main(int argc, char **argv)
{
    int repeats = 10;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--type") && i + 1 < argc) {
            i++;
            g_type = !strcmp(argv[i], "f16") ? 1 : !strcmp(argv[i], "bf16") ? 2 : !strcmp(argv[i], "f32") ? 0 : -1;
            if (g_type < 0) return fprintf(stderr, "sgemm_cublas: --type wants f32, f16 or bf16\n"), 2;
        } else {
            fprintf(stderr, "usage: sgemm_cublas [--repeats N] [--type f32|f16|bf16]\n");
            return 2;
        }
    }
    if (repeats < 1) repeats = 1;
    cudaDeviceProp prop;
    CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    cublasHandle_t h;
    CUBLAS_TRY(cublasCreate(&h));
    printf("%s GEMM through cuBLAS, GFLOP/s (min / median / max of %d)\n",
           g_type == 1 ? "float16 (float32 sums, cublasGemmEx)" : g_type == 2 ? "bfloat16 (float32 sums, cublasGemmEx)" : "float32",
           repeats);
    printf("device: %s | CUDA driver %d, runtime %d\n\n", prop.name, driver, runtime);
    printf("| product                  | m x n x k        | cublas                   |\n| --- | --- | ---: |\n");
    cudaEvent_t t0, t1;
    CUDA_TRY(cudaEventCreate(&t0));
    CUDA_TRY(cudaEventCreate(&t1));
    for (const Shape &s : shapes) {
        size_t na = (size_t)s.m * s.k, nb = (size_t)s.k * s.n, nc = (size_t)s.m * s.n;
        std::vector<float> ha(na), hb(nb);
        unsigned seed = 1;
        for (auto &v : ha) v = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / (1 << 24) - 0.5f;
        for (auto &v : hb) v = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / (1 << 24) - 0.5f;
        void *a, *b, *c;
        std::vector<unsigned char> ra, rb;
        to_dev_type(ha, ra);
        to_dev_type(hb, rb);
        CUDA_TRY(cudaMalloc(&a, na * esize()));
        CUDA_TRY(cudaMalloc(&b, nb * esize()));
        CUDA_TRY(cudaMalloc(&c, nc * esize()));
        CUDA_TRY(cudaMemcpy(a, ra.data(), na * esize(), cudaMemcpyHostToDevice));
        CUDA_TRY(cudaMemcpy(b, rb.data(), nb * esize(), cudaMemcpyHostToDevice));
        CUBLAS_TRY(gemm(h, s, a, b, c));   // warm-up: cuBLAS picks and loads its kernel
        CUDA_TRY(cudaDeviceSynchronize());
        if (!check(s, ha, hb, c)) return 1;
        std::vector<double> rate;
        for (int r = 0; r < repeats; r++) {
            CUDA_TRY(cudaEventRecord(t0));
            CUBLAS_TRY(gemm(h, s, a, b, c));
            CUDA_TRY(cudaEventRecord(t1));
            CUDA_TRY(cudaEventSynchronize(t1));
            float ms = 0;
            CUDA_TRY(cudaEventElapsedTime(&ms, t0, t1));
            rate.push_back(2.0 * s.m * s.n * s.k / (ms * 1e-3) / 1e9);
        }
        std::sort(rate.begin(), rate.end());
        char dims[64];
        snprintf(dims, sizeof dims, "%dx%dx%d%s%s", s.m, s.n, s.k, s.ta ? " A^T" : "", s.tb ? " B^T" : "");
        printf("| %-24s | %-16s | %7.4g / %7.4g / %7.4g |\n", s.what, dims, rate.front(), rate[rate.size() / 2],
               rate.back());
        cudaFree(a);
        cudaFree(b);
        cudaFree(c);
    }
    cublasDestroy(h);
    return 0;
}
