/* bf16dot.c: bfloat16 products on AVX512-BF16's dot-product instruction (vdpbf16ps: in
 * each of 16 float32 lanes, the sum so far plus two products of bfloat16 pairs), twice
 * the multiply-adds per instruction of float32's FMA, and half the bytes per operand.
 * POCL's compiler (LLVM 15, `skylake-avx512` for Zen 4 and newer Xeons) emits no
 * vdpbf16ps from OpenCL C, and Debian's OpenBLAS 0.3.21 exports no cblas_sbgemm: the
 * kernel is here, in C, built for the instruction set with a function attribute and
 * called only where the CPU reports it (clg__bf16dot_cpu).
 *
 * The shape of a BLIS-style product without k blocks (k whole: every result one sum in
 * registers, rounded once): B in blocks of columns sized for the L2 cache, packed as
 * panels of 32 columns, each step of the panel one pair of k (rows 2p and 2p + 1) as 32
 * interleaved bfloat16 (one 64-byte vector: column j's pair in 32-bit lane j); A packed
 * 8 rows at a time, each row's pair one 32-bit value, broadcast. A micro-tile of 8 x 32
 * results is 16 vector accumulators; per pair of k, 2 vector loads, 8 broadcasts and 16
 * vdpbf16ps. k odd: the last pair's second half is zero. Rows and columns past the
 * matrix: zeros packed, results masked off at the store.
 *
 * vdpbf16ps treats subnormal bfloat16 inputs as zero and flushes subnormal results (its
 * fixed DAZ/FTZ); its two products go into the sum in an order of its own: results
 * differ from the float32 path's in the last bits, and where values under float32's
 * normal range (1.2e-38) matter.
 */
#include <stdlib.h>
#include <string.h>

#include "gemm/bf16dot.h"
#include "device_impl.h"

#if defined(__x86_64__) && defined(__GNUC__) && (__GNUC__ >= 11 || defined(__clang__))
#define HAVE_BF16DOT 1
#include <immintrin.h>
#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#endif

bool clg__bf16dot_cpu(void)
{
#ifdef HAVE_BF16DOT
    return clg__host_cpu_bf16();
#else
    return false;
#endif
}

#ifdef HAVE_BF16DOT

enum { MR = CLG_BF16DOT_MR, NR = CLG_BF16DOT_NR, B_BLOCK_BYTES = 384 << 10 };

static uint32_t pair(uint16_t lo, uint16_t hi) { return (uint32_t)lo | (uint32_t)hi << 16; }

/* op(A)'s rows i0 .. i0 + mr (mr <= MR) as kp pairs of MR 32-bit values, zeros past. */
static void pack_a(const clg_bf16dot *p, int64_t i0, int64_t mr, int64_t kp, uint32_t *ap)
{
    memset(ap, 0, (size_t)(kp * MR) * sizeof *ap);
    for (int64_t r = 0; r < mr; r++) {
        int64_t i = i0 + r;
        if (!p->ta) {   /* row i along k: pairs as they lie */
            const uint16_t *row = p->a + i * p->lda;
            for (int64_t q = 0; q < p->k / 2; q++) ap[q * MR + r] = pair(row[2 * q], row[2 * q + 1]);
            if (p->k & 1) ap[(kp - 1) * MR + r] = row[p->k - 1];
        } else {        /* column i of the stored k x m */
            const uint16_t *col = p->a + i;
            for (int64_t q = 0; q < p->k / 2; q++) ap[q * MR + r] = pair(col[2 * q * p->lda], col[(2 * q + 1) * p->lda]);
            if (p->k & 1) ap[(kp - 1) * MR + r] = col[(p->k - 1) * p->lda];
        }
    }
}

/* op(B)'s columns j0 .. j0 + nc as panels of NR, each kp pairs of NR 32-bit values. */
static void pack_b(const clg_bf16dot *p, int64_t j0, int64_t nc, int64_t kp, uint32_t *bp)
{
    int64_t panels = (nc + NR - 1) / NR;
    memset(bp, 0, (size_t)(panels * kp * NR) * sizeof *bp);
    for (int64_t jj = 0; jj < nc; jj++) {
        int64_t j = j0 + jj;
        uint32_t *d = bp + jj / NR * kp * NR + jj % NR;
        if (p->tb) {    /* row j of the stored n x k: pairs as they lie */
            const uint16_t *row = p->b + j * p->ldb;
            for (int64_t q = 0; q < p->k / 2; q++) d[q * NR] = pair(row[2 * q], row[2 * q + 1]);
            if (p->k & 1) d[(kp - 1) * NR] = row[p->k - 1];
        }
    }
    if (p->tb) return;
    for (int64_t q = 0; q < kp; q++) {   /* two rows of the stored k x n at a time */
        const uint16_t *r0 = p->b + 2 * q * p->ldb + j0, *r1 = 2 * q + 1 < p->k ? r0 + p->ldb : NULL;
        for (int64_t jj = 0; jj < nc; jj++) bp[jj / NR * kp * NR + q * NR + jj % NR] = pair(r0[jj], r1 ? r1[jj] : 0);
    }
}

/* float32 lanes as bfloat16, as the device rounds (common.cl clg_bf16_bits): to nearest
 * even, NaN kept quiet. */
TARGET static __m256i to_bf16(__m512 v)
{
    __m512i x = _mm512_castps_si512(v), one = _mm512_set1_epi32(1);
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)),
                                 _mm512_and_si512(_mm512_srli_epi32(x, 16), one));
    r = _mm512_srli_epi32(r, 16);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r);
}

/* 16 results of a row (lanes in `mask`) into C at `at`: alpha acc + beta C. */
TARGET static void store16(const clg_bf16dot *p, int64_t at, __m512 acc, __mmask16 mask)
{
    __m512 v = _mm512_mul_ps(_mm512_set1_ps(p->alpha), acc);
    if (p->c_f32) {
        float *c = (float *)p->c + at;
        if (p->beta != 0) v = _mm512_fmadd_ps(_mm512_set1_ps(p->beta), _mm512_maskz_loadu_ps(mask, c), v);
        _mm512_mask_storeu_ps(c, mask, v);
    } else {
        uint16_t *c = (uint16_t *)p->c + at;
        if (p->beta != 0) {
            __m512i old = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, c)), 16);
            v = _mm512_fmadd_ps(_mm512_set1_ps(p->beta), _mm512_castsi512_ps(old), v);
        }
        _mm256_mask_storeu_epi16(c, mask, to_bf16(v));
    }
}

/* The micro-tile at (i0, j0) of mr x nc valid results: A's packed panel times one of B's.
 * Written out row by row, so that the 16 accumulators are named registers. */
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define ZERO(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = c##r##0;
#define DOT(r)                                                          \
    {                                                                   \
        __m512bh a = (__m512bh)_mm512_set1_epi32((int)ap[r]);           \
        c##r##0 = _mm512_dpbf16_ps(c##r##0, a, b0);                     \
        c##r##1 = _mm512_dpbf16_ps(c##r##1, a, b1);                     \
    }
#define STORE(r)                                                        \
    if (r < mr) {                                                       \
        int64_t at = (i0 + r) * p->ldc + j0;                            \
        store16(p, at, c##r##0, m0);                                    \
        if (m1) store16(p, at + 16, c##r##1, m1);                       \
    }
TARGET static void micro(const clg_bf16dot *p, const uint32_t *ap, const uint32_t *bp, int64_t kp, int64_t i0,
                         int64_t j0, int64_t mr, int64_t nc)
{
    ROWS(ZERO)
    for (int64_t q = 0; q < kp; q++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp), b1 = (__m512bh)_mm512_loadu_si512(bp + 16);
        ROWS(DOT)
        ap += MR;
        bp += NR;
    }
    __mmask16 m0 = nc >= 16 ? 0xffff : (__mmask16)((1u << nc) - 1);
    __mmask16 m1 = nc >= 32 ? 0xffff : nc <= 16 ? 0 : (__mmask16)((1u << (nc - 16)) - 1);
    ROWS(STORE)
}

bool clg__bf16dot_product(const clg_bf16dot *p)
{
    if (!clg__bf16dot_cpu()) return false;
    if (p->m <= 0 || p->n <= 0) return true;
    int64_t kp = (p->k + 1) / 2;
    /* columns per block of B: its packed panels within B_BLOCK_BYTES, whole panels */
    int64_t nc = B_BLOCK_BYTES / (kp * NR * 4) * NR;
    if (nc < NR) nc = NR;
    if (nc > (p->n + NR - 1) / NR * NR) nc = (p->n + NR - 1) / NR * NR;
    uint32_t *ap = malloc((size_t)(kp * MR) * sizeof *ap), *bp = malloc((size_t)(kp * nc) * sizeof *bp);
    bool ok = ap && bp;
    for (int64_t j0 = 0; ok && j0 < p->n; j0 += nc) {
        int64_t ncols = p->n - j0 < nc ? p->n - j0 : nc;
        pack_b(p, j0, ncols, kp, bp);
        for (int64_t i0 = 0; i0 < p->m; i0 += MR) {
            int64_t mr = p->m - i0 < MR ? p->m - i0 : MR;
            pack_a(p, i0, mr, kp, ap);
            for (int64_t jj = 0; jj < ncols; jj += NR)
                micro(p, ap, bp + jj / NR * kp * NR, kp, i0, j0 + jj, mr, ncols - jj < NR ? ncols - jj : NR);
        }
    }
    free(ap);
    free(bp);
    return ok;
}

#else

bool clg__bf16dot_product(const clg_bf16dot *p)
{
    (void)p;
    return false;
}

#endif
