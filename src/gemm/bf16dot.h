/* bf16dot.h: one bfloat16 product on the host CPU's dot-product instructions (bf16dot.c),
 * for the engine that runs such products as commands of the device's queue (hostbf16.c). */
#ifndef CLGRAD_GEMM_BF16DOT_H
#define CLGRAD_GEMM_BF16DOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* C = alpha op(A) . op(B) + beta C: op(A) m x k and op(B) k x n of bfloat16 (A is k x m
 * when ta, B n x k when tb; row-major with leading dimensions lda, ldb), sums in float32,
 * C m x n (ldc) of float32 (c_f32) or bfloat16, each result rounded once. */
typedef struct clg_bf16dot {
    bool ta, tb, c_f32;
    int64_t m, n, k;
    float alpha, beta;
    const uint16_t *a;
    int64_t lda;
    const uint16_t *b;
    int64_t ldb;
    void *c;
    int64_t ldc;
} clg_bf16dot;

/* Whether this build has the kernel and the CPU runs it (AVX512-BF16 with AVX512-BW/VL). */
bool clg__bf16dot_cpu(void);

/* The product, packing its operands into `scratch` (at least clg__bf16dot_scratch(n, k)
 * bytes, 64-byte aligned for speed; the caller's, so that nothing is allocated while the
 * queue runs it); thread-safe with separate scratch. False, nothing written, where the
 * CPU lacks the instructions or the scratch is too small. Micro-tiles of 8 rows and 32
 * columns: parts of a split product are best cut at those multiples. */
#define CLG_BF16DOT_MR 8
#define CLG_BF16DOT_NR 32
size_t clg__bf16dot_scratch(int64_t n, int64_t k);
bool clg__bf16dot_product(const clg_bf16dot *p, void *scratch, size_t bytes);

#endif
