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

/* Packing: dst[q * W + c] for pairs q < kp and lanes c < W is the pair (k = 2q, 2q + 1)
 * of line c (a row of op(A), a column of op(B)); lanes past `lines` zero, and k odd: the
 * last pair's upper half zero. Two ways the lines lie in memory: */

/* 16 x 16 32-bit values transposed in registers: r[i] lane j <-> r[j] lane i, as four
 * swaps of a row-index bit with the same column-index bit (each two vpermt2d a pair). */
TARGET static void transpose16(__m512i r[16])
{
    static const int32_t lo[4][16] = {
        {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
        {0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
        {0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
        {0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30},
    };
    static const int32_t hi[4][16] = {
        {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31},
        {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31},
        {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31},
        {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31},
    };
#pragma GCC unroll 4
    for (int s = 0; s < 4; s++) {
        int b = 8 >> s;
        __m512i il = _mm512_loadu_si512(lo[s]), ih = _mm512_loadu_si512(hi[s]);
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++)
            if (!(i & b)) {
                __m512i x = r[i], y = r[i + b];
                r[i] = _mm512_permutex2var_epi32(x, il, y);
                r[i + b] = _mm512_permutex2var_epi32(x, ih, y);
            }
    }
}

/* Pairs q0 .. q0 + 16 of lines c < n (n <= 16, the others zero) into dst[q * W + c],
 * `lanes` of them per pair (16, or 8 for A's panels). */
TARGET static void words16(const uint16_t *base, int64_t ld, int n, int64_t q0, uint32_t *dst, int W, int lanes)
{
    __m512i r[16];
    for (int c = 0; c < 16; c++) r[c] = c < n ? _mm512_loadu_si512(base + c * ld + 2 * q0) : _mm512_setzero_si512();
    transpose16(r);
    __mmask16 m = lanes >= 16 ? 0xffff : (__mmask16)((1u << lanes) - 1);
    for (int t = 0; t < 16; t++) _mm512_mask_storeu_epi32(dst + (q0 + t) * W, m, r[t]);
}

/* ... each along k, ld apart (A not transposed, B transposed): the pairs are the lines'
 * 32-bit words, a transpose of 16 x 16 blocks of them. */
static void pack_words(const uint16_t *base, int64_t ld, int64_t lines, int W, int64_t k, uint32_t *dst)
{
    int64_t whole = k / 2, kp = (k + 1) / 2, q = 0;
    for (; q + 16 <= whole; q += 16)
        for (int c0 = 0; c0 < W; c0 += 16) {
            int64_t n = lines - c0 < 0 ? 0 : lines - c0 > 16 ? 16 : lines - c0;
            words16(base + c0 * ld, ld, (int)n, q, dst + c0, W, W - c0 < 16 ? W - c0 : 16);
        }
    for (; q < whole; q++) {
        uint32_t *d = dst + q * W;
        for (int64_t c = 0; c < lines; c++) memcpy(&d[c], base + c * ld + 2 * q, sizeof *d);
        for (int64_t c = lines; c < W; c++) d[c] = 0;
    }
    if (kp > whole) {
        uint32_t *d = dst + whole * W;
        for (int64_t c = 0; c < W; c++) d[c] = c < lines ? base[c * ld + k - 1] : 0;
    }
}

/* 16 lanes of two steps of k interleaved: r0's values low, r1's high. */
TARGET static void across16(const uint16_t *r0, const uint16_t *r1, uint32_t *d)
{
    __m512i a = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)r0));
    __m512i b = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)r1));
    _mm512_storeu_si512(d, _mm512_or_si512(a, _mm512_slli_epi32(b, 16)));
}

/* ... across, k's steps ld apart (A transposed, B not): two steps' values interleaved. */
static void pack_across(const uint16_t *base, int64_t ld, int64_t lines, int W, int64_t k, uint32_t *dst)
{
    int64_t kp = (k + 1) / 2;
    for (int64_t q = 0; q < kp; q++) {
        const uint16_t *r0 = base + 2 * q * ld, *r1 = r0 + ld;
        uint32_t *d = dst + q * W;
        int64_t c = 0;
        if (2 * q + 1 < k) {
            for (; c + 16 <= lines; c += 16) across16(r0 + c, r1 + c, d + c);
            for (; c < lines; c++) d[c] = (uint32_t)r0[c] | (uint32_t)r1[c] << 16;
        } else
            for (; c < lines; c++) d[c] = r0[c];
        for (c = lines; c < W; c++) d[c] = 0;
    }
}

/* op(A)'s rows i0 .. i0 + mr (mr <= MR) as one panel. */
static void pack_a(const clg_bf16dot *p, int64_t i0, int64_t mr, uint32_t *ap)
{
    if (p->ta) pack_across(p->a + i0, p->lda, mr, MR, p->k, ap);
    else pack_words(p->a + i0 * p->lda, p->lda, mr, MR, p->k, ap);
}

/* op(B)'s columns j0 .. j0 + nc as panels of NR, kp pairs each. */
static void pack_b(const clg_bf16dot *p, int64_t j0, int64_t nc, int64_t kp, uint32_t *bp)
{
    for (int64_t jj = 0; jj < nc; jj += NR) {
        int64_t lines = nc - jj < NR ? nc - jj : NR;
        uint32_t *d = bp + jj / NR * kp * NR;
        if (p->tb) pack_words(p->b + (j0 + jj) * p->ldb, p->ldb, lines, NR, p->k, d);
        else pack_across(p->b + j0 + jj, p->ldb, lines, NR, p->k, d);
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

/* Columns per block of B: its packed panels within B_BLOCK_BYTES, whole panels, at most
 * n's. */
static int64_t block_cols(int64_t n, int64_t kp)
{
    int64_t nc = B_BLOCK_BYTES / (kp * NR * 4) * NR;
    if (nc < NR) nc = NR;
    return nc > (n + NR - 1) / NR * NR ? (n + NR - 1) / NR * NR : nc;
}

size_t clg__bf16dot_scratch(int64_t n, int64_t k)
{
    int64_t kp = (k + 1) / 2;
    size_t bytes = (size_t)(kp * MR + kp * block_cols(n, kp)) * sizeof(uint32_t);
    return (bytes + 63) / 64 * 64;
}

bool clg__bf16dot_product(const clg_bf16dot *p, void *scratch, size_t bytes)
{
    if (!clg__bf16dot_cpu() || bytes < clg__bf16dot_scratch(p->n, p->k)) return false;
    if (p->m <= 0 || p->n <= 0) return true;
    int64_t kp = (p->k + 1) / 2, nc = block_cols(p->n, kp);
    uint32_t *ap = scratch, *bp = ap + kp * MR;
    for (int64_t j0 = 0; j0 < p->n; j0 += nc) {
        int64_t ncols = p->n - j0 < nc ? p->n - j0 : nc;
        pack_b(p, j0, ncols, kp, bp);
        for (int64_t i0 = 0; i0 < p->m; i0 += MR) {
            int64_t mr = p->m - i0 < MR ? p->m - i0 : MR;
            pack_a(p, i0, mr, ap);
            for (int64_t jj = 0; jj < ncols; jj += NR)
                micro(p, ap, bp + jj / NR * kp * NR, kp, i0, j0 + jj, mr, ncols - jj < NR ? ncols - jj : NR);
        }
    }
    return true;
}

#else

size_t clg__bf16dot_scratch(int64_t n, int64_t k)
{
    (void)n, (void)k;
    return 0;
}

bool clg__bf16dot_product(const clg_bf16dot *p, void *scratch, size_t bytes)
{
    (void)p, (void)scratch, (void)bytes;
    return false;
}

#endif
