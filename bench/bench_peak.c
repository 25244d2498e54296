/* bench_peak: the host CPU's own limits, against which the per-op table and the model
 * rows are judged (issue 32: "the product runs at the measured FLOP peak of the cores";
 * "the op moves its bytes at the measured memory bandwidth"):
 *   - float32 FMA throughput: independent chains of vector FMAs in registers, 16-wide
 *     (AVX-512) or 8-wide (AVX2 + FMA), whichever the CPU has;
 *   - bfloat16 dot products (AVX512-BF16 vdpbf16ps, 2 multiply-adds per float32 lane),
 *     where the CPU has them (src/gemm/bf16dot.c's instruction);
 *   - memory: memcpy, and a vectorized b = a * 0.5, between 64 MiB buffers that each
 *     thread allocated and touched before the timing (bytes read + written per second).
 * Each on one thread and on every CPU the process may use, min / median / max of R.
 *
 *   ./build/bench/bench_peak [--repeats R]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define X86 1
#endif

enum { ITERS = 20000000, CHAINS = 12, COPY_BYTES = 64 << 20 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

#ifdef X86
/* FLOPs of ITERS steps of CHAINS independent FMAs (latency 4, two pipes: 8 chains keep
 * them busy; 12 leave slack), the sums kept live. */
__attribute__((target("avx512f"))) static double fma512(void)
{
    __m512 a[CHAINS], b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
    for (int i = 0; i < CHAINS; i++) a[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < ITERS; it++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) a[i] = _mm512_fmadd_ps(a[i], b, c);
    float s = 0;
    for (int i = 0; i < CHAINS; i++) s += _mm512_reduce_add_ps(a[i]);
    volatile float sink = s;
    (void)sink;
    return 2.0 * 16 * CHAINS * (double)ITERS;
}

__attribute__((target("avx2,fma"))) static double fma256(void)
{
    __m256 a[CHAINS], b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
    for (int i = 0; i < CHAINS; i++) a[i] = _mm256_set1_ps((float)i);
    for (long it = 0; it < ITERS; it++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) a[i] = _mm256_fmadd_ps(a[i], b, c);
    float out[8], s = 0;
    for (int i = 0; i < CHAINS; i++) {
        _mm256_storeu_ps(out, a[i]);
        for (int j = 0; j < 8; j++) s += out[j];
    }
    volatile float sink = s;
    (void)sink;
    return 2.0 * 8 * CHAINS * (double)ITERS;
}

#if __GNUC__ >= 11 || defined(__clang__)
#define HAVE_BF16 1
__attribute__((target("avx512f,avx512bf16"))) static double dot_bf16(void)
{
    __m512 a[CHAINS];
    __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3400);   /* 1.0, ~1.2e-7 */
    for (int i = 0; i < CHAINS; i++) a[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < ITERS; it++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) a[i] = _mm512_dpbf16_ps(a[i], x, y);
    float s = 0;
    for (int i = 0; i < CHAINS; i++) s += _mm512_reduce_add_ps(a[i]);
    volatile float sink = s;
    (void)sink;
    return 2.0 * 32 * CHAINS * (double)ITERS;   /* 16 lanes, 2 multiply-adds each */
}
#endif
#endif

/* Each thread's buffers, allocated and touched before the timing (page faults and the
 * first writes are not the copy's). */
static _Thread_local char *buf_a, *buf_b;

static double copy_setup(void)
{
    buf_a = malloc(COPY_BYTES);
    buf_b = malloc(COPY_BYTES);
    if (buf_a) memset(buf_a, 1, COPY_BYTES);
    if (buf_b) memset(buf_b, 2, COPY_BYTES);
    return 0;
}

static void release(void)
{
    free(buf_a);
    free(buf_b);
    buf_a = buf_b = NULL;
}

static double copy_bytes(void)
{
    if (!buf_a || !buf_b) return release(), 0;
    for (int r = 0; r < 8; r++) memcpy(r % 2 ? buf_a : buf_b, r % 2 ? buf_b : buf_a, COPY_BYTES);
    release();
    return 2.0 * 8 * COPY_BYTES;
}

/* b = a * 0.5 over floats, a loop the compiler vectorizes (an elementwise op's traffic,
 * stores through the cache where glibc's memcpy streams past it). */
static double scale_bytes(void)
{
    if (!buf_a || !buf_b) return release(), 0;
    const size_t n = COPY_BYTES / sizeof(float);
    for (int r = 0; r < 8; r++) {
        const float *restrict a = (const float *)(r % 2 ? buf_b : buf_a);
        float *restrict b = (float *)(r % 2 ? buf_a : buf_b);
        for (size_t i = 0; i < n; i++) b[i] = a[i] * 0.5f;
    }
    release();
    return 2.0 * 8 * COPY_BYTES;
}

typedef struct job {
    double (*setup)(void), (*fn)(void);
    pthread_barrier_t *ready;
    double work, t0, t1;
} job;

static void *run_job(void *p)
{
    job *j = p;
    if (j->setup) j->setup();
    pthread_barrier_wait(j->ready);
    j->t0 = now();
    j->work = j->fn();
    j->t1 = now();
    return NULL;
}

/* Work per second of fn on `threads` threads at once, from the first start to the last
 * end, each thread's setup (when given) before. */
static double rate(double (*setup)(void), double (*fn)(void), int threads)
{
    pthread_t t[64];
    job j[64];
    pthread_barrier_t ready;
    if (pthread_barrier_init(&ready, NULL, (unsigned)threads) != 0) return 0;
    int started = 0;
    for (int i = 0; i < threads; i++) {
        j[i] = (job){.setup = setup, .fn = fn, .ready = &ready};
        if (pthread_create(&t[i], NULL, run_job, &j[i]) != 0) break;
        started++;
    }
    if (started < threads) {   /* the barrier would never open: a failure, not a rate */
        fprintf(stderr, "bench_peak: could not start %d threads\n", threads);
        exit(1);
    }
    double work = 0, t0 = 0, t1 = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        work += j[i].work;
        t0 = i == 0 || j[i].t0 < t0 ? j[i].t0 : t0;
        t1 = j[i].t1 > t1 ? j[i].t1 : t1;
    }
    pthread_barrier_destroy(&ready);
    return work / (t1 - t0);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void row(const char *name, double (*setup)(void), double (*fn)(void), int threads, int repeats, double unit,
                const char *units)
{
    double r[32];
    for (int i = 0; i < repeats; i++) r[i] = rate(setup, fn, threads) / unit;
    qsort(r, (size_t)repeats, sizeof *r, cmp);
    printf("| %s, %d thread%s | %.1f / %.1f / %.1f %s |\n", name, threads, threads > 1 ? "s" : "", r[0],
           r[repeats / 2], r[repeats - 1], units);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int repeats = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_peak [--repeats R]\n");
            return 2;
        }
    }
    if (repeats < 1) repeats = 1;
    if (repeats > 32) repeats = 32;
    cpu_set_t set;
    int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    if (cpus > 64) cpus = 64;
    char model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    for (char line[512]; f && fgets(line, sizeof line, f);)
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
            model[strcspn(model, "\n")] = 0;
            break;
        }
    if (f) fclose(f);
    printf("host: %s, %d CPUs for this process (min / median / max of %d)\n\n| what | rate |\n| --- | ---: |\n", model,
           cpus, repeats);
#ifdef X86
    __builtin_cpu_init();
    double (*fma)(void) = __builtin_cpu_supports("avx512f") ? fma512
                          : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? fma256 : NULL;
    const char *name = fma == fma512 ? "float32 FMA, 16-wide (AVX-512)" : "float32 FMA, 8-wide (AVX2)";
    if (fma) {
        row(name, NULL, fma, 1, repeats, 1e9, "GFLOP/s");
        if (cpus > 1) row(name, NULL, fma, cpus, repeats, 1e9, "GFLOP/s");
    }
#ifdef HAVE_BF16
    if (__builtin_cpu_supports("avx512bf16")) {
        row("bfloat16 dot products (AVX512-BF16)", NULL, dot_bf16, 1, repeats, 1e9, "GFLOP/s");
        if (cpus > 1) row("bfloat16 dot products (AVX512-BF16)", NULL, dot_bf16, cpus, repeats, 1e9, "GFLOP/s");
    }
#endif
#endif
    row("memcpy of 64 MiB, bytes read + written", copy_setup, copy_bytes, 1, repeats, 1e9, "GB/s");
    if (cpus > 1) row("memcpy of 64 MiB, bytes read + written", copy_setup, copy_bytes, cpus, repeats, 1e9, "GB/s");
    row("b = a * 0.5 over 64 MiB, bytes read + written", copy_setup, scale_bytes, 1, repeats, 1e9, "GB/s");
    if (cpus > 1) row("b = a * 0.5 over 64 MiB, bytes read + written", copy_setup, scale_bytes, cpus, repeats, 1e9, "GB/s");
    return 0;
}
