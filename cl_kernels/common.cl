// common.cl: put in front of every program (see src/device/program.c).
// Programs are specialised with -D options: -DT=float / -DT=double for the element type.
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#ifndef T
#define T float
#endif

// CLG_MAD(a, b, c): a * b + c in the accumulations of the GEMM and attention kernels.
// fma() (one rounding) where the device fuses in hardware (the device table's fma = on:
// -DCLG_HW_FMA); else mad(): a device without fused multiply-add (llvmpipe) computes fma()
// in software, which took it 10 s to compile for the packed GEMM's kernels (1.5 s with
// mad()) and ran slower.
#ifdef CLG_HW_FMA
#define CLG_MAD(a, b, c) fma(a, b, c)
#else
#define CLG_MAD(a, b, c) mad(a, b, c)
#endif

// A transposing tree over 16 vectors of 16 lanes: shuffle2(x, y, CLG_FOLD_MnA) op
// shuffle2(x, y, CLG_FOLD_MnB) combines lanes j and j + 8 of x (into lanes 0-7) and of y
// (8-15), then at the next level lanes j and j + 4 of each half, and so on: after four
// levels (8, 4, 2, 1 folds of pairs) lane t holds vector t's 16 lanes combined, in
// clg_hsum16's order. 15 folds for 16 vectors, where each alone takes a horizontal
// reduction. (attention.cl's dot products, reduce.cl's products of short rows.)
#define CLG_FOLD_M1A (uint16)(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23)
#define CLG_FOLD_M1B (uint16)(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31)
#define CLG_FOLD_M2A (uint16)(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27)
#define CLG_FOLD_M2B (uint16)(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31)
#define CLG_FOLD_M3A (uint16)(0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29)
#define CLG_FOLD_M3B (uint16)(2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31)
#define CLG_FOLD_M4A (uint16)(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)
#define CLG_FOLD_M4B (uint16)(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31)

// Elementwise kernels over strided operands (src/tensor/iter.c): element i of the
// iteration shape is unravelled into coordinates once, and each operand's offset is
// the dot product of the coordinates with its strides (0 along broadcast axes).
typedef struct { int c[8]; } clg_coords;

inline clg_coords clg_unravel(int i, int nd, int8 shape)
{
    int sh[8];
    vstore8(shape, 0, sh);
    clg_coords c;
    for (int d = nd - 1; d >= 0; d--) {
        int q = i / sh[d];
        c.c[d] = i - q * sh[d];
        i = q;
    }
    return c;
}

inline int clg_offset(clg_coords c, int nd, int8 strides)
{
    int st[8];
    vstore8(strides, 0, st);
    int o = 0;
    for (int d = 0; d < nd; d++) o += c.c[d] * st[d];
    return o;
}

// Row kernels (NAME_rows) take the arguments of NAME_strided for an iteration of four
// axes [outer, planes, rows, inner] (iter.c merges most layouts down to two, three or
// four and pads them to four: a broadcast bias, a transposed or sliced matrix, a
// permutation of a batch's axes such as attention's [B, T, H, D] -> [B, H, T, D]), run
// over a 3-D range: work-item (c, r, pq) is element c of row r of plane pq, whose outer
// and plane coordinates are split by one division per work-item (the same for a whole
// group's z, so POCL's work-group loop hoists it). With no division per element and
// the offsets linear in c, POCL vectorizes the work-group loop (on stride 1, which LLVM
// versions for). clg__launch_rows3 launches exactly (inner, rows, outer x planes)
// work-items.
#define CLG_ROW_AT(o, s) ((o) + p * (s).s0 + q * (s).s1 + r * (s).s2 + c * (s).s3)
// LLVM versions the loop for a stride of 1 only: an input broadcast along the row
// (stride 0: [M, N] against [M, 1], a channel's value over an image's pixels) left the
// whole loop scalar, with gathers (mul 0.9 ms for 1M elements where flat is 0.17). Built
// with -DCLG_ROWSU and CLG_U1, CLG_U2, CLG_U3 (the inputs' row strides, 0 or 1, in
// argument order; the output's is 1), the kernels NAME_rowsu take the rows kernel's
// arguments and read each input at a compile-time stride (clg__iter_launch). (The
// name is pasted before it is passed on: POCL defines some, pow for one, as macros.)
#ifdef CLG_ROWSU
#define CLG_ROWU_AT(o, s, u) ((o) + p * (s).s0 + q * (s).s1 + r * (s).s2 + c * (u))
#ifndef CLG_U2
#define CLG_U2 1
#endif
#ifndef CLG_U3
#define CLG_U3 1
#endif
#endif
#define CLG_ROW_IDS                                                                          \
    int c = get_global_id(0), r = get_global_id(1), pq = get_global_id(2), p = pq / shape.s1, \
        q = pq - p * shape.s1

// Storage (issue 17): the elementwise kernels below keep values as TS and compute in T.
// Built for a float16 tensor (-DT=float -DCLG_F16_STORE) or a bfloat16 one
// (-DCLG_BF16_STORE), TS is ushort, the 16 bits, converted to and from float32 with
// integer operations (no cl_khr_fp16 needed) and rounded to nearest even. Either way a
// result is computed in float32 and rounded once. Otherwise TS is T.
inline ushort clg_bf16_bits(float v)
{
    uint x = as_uint(v);
    return (x & 0x7fffffffu) > 0x7f800000u ? (ushort)((x >> 16) | 0x40u)   // NaN, quieted
                                           : (ushort)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// float16 bits to float32 and back, on 1, 8 or 16 lanes, bit for bit as the host does
// (src/tensor/half.c). Integer operations and selects, so that POCL vectorizes them
// (its vload_half / vstore_half_rte ran 3-6x slower here). Subnormals go through
// float arithmetic on normal values only, so a device that flushes denormals to zero
// converts them exactly too:
//   to float32: a subnormal m 2^-24 is (2^-14 (1 + m / 1024)) - 2^-14;
//   to float16: a value below 2^-14 plus 0.5 rounds it (to nearest even) to a multiple
//   of 2^-24, the subnormals' step, whose count is then the low bits.
// NaN keeps its payload's top bits and is quieted; from 65520 up is infinity.
#define CLG_F16_CONVERSIONS(N, UN, FN)                                                        \
inline FN clg_h2f##N(UN h)                                                                   \
{                                                                                            \
    UN em = h & 0x7fffu, o = em << 13, e = em & 0x7c00u;                                     \
    FN sub = as_##FN(o + (113u << 23)) - (FN)0x1p-14f;                                      \
    UN v = select(select(o + (112u << 23), o + (224u << 23), e == (UN)0x7c00u), as_##UN(sub), e == (UN)0u); \
    return as_##FN(v | ((h & 0x8000u) << 16));                                               \
}                                                                                            \
inline UN clg_f2h##N(FN f)                                                                   \
{                                                                                            \
    UN x = as_##UN(f), a = x & 0x7fffffffu;                                                  \
    UN r = (a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13;                              \
    r = select(r, as_##UN(as_##FN(a) + (FN)0.5f) - 0x3f000000u, a < (UN)0x38800000u);       \
    r = select(r, (UN)0x7c00u, a >= (UN)0x477ff000u);                                        \
    r = select(r, 0x7e00u | ((a >> 13) & 0x3ffu), a > (UN)0x7f800000u);                      \
    return ((x >> 16) & 0x8000u) | r;                                                        \
}
CLG_F16_CONVERSIONS(, uint, float)
CLG_F16_CONVERSIONS(8, uint8, float8)   // 16 lanes: in gemm.cl (16-lane arguments warn on AVX2)

// log, log1p and expm1 of float32 without the library's calls, which POCL makes per
// element, unvectorized (log of 1M floats 7.7 ms, exp 0.67 ms): bit operations, one
// division and a polynomial each, and selects, no branches (a branch left POCL's kernel
// unvectorized). Over 40M random floats against float64 references:
// log within 1.9 ulp, log1p 1.7, expm1 1.3 (with glibc's exp); specials as the
// library (log: 0 -> -inf, < 0 -> NaN, NaN stays, inf -> inf).
// log(m 2^e) = e ln 2 + 2 atanh(t), t = (m - 1) / (m + 1), m in [0.75, 1.5): |t| <= 0.2,
// so the odd series 2 (t + t^3/3 + ... + t^11/11) is exact to float (next term < 1e-9).
// log1p(x) = 2 atanh(t), t = x / (2 + x), near 0 (no rounding of 1 + x), 2t written
// x - t x (exact where t x underflows: tiny x gives x); else log(u) x / (u - 1) with
// u = 1 + x (Goldberg: the factor corrects u's rounding).
// expm1(x): Taylor to x^11 for |x| < 0.7; else e^x - 1, which loses at most a bit there
// (e^x - 1 >= (e^x) / 2). (Kahan's (u - 1) x / log(u) left POCL's kernel unvectorized.)
inline float clg_atanh2_poly(float t2)   // (2 atanh(t) - 2t) / t^3
{
    float p = 2.0f / 11.0f;
    p = p * t2 + 2.0f / 9.0f;
    p = p * t2 + 2.0f / 7.0f;
    p = p * t2 + 2.0f / 5.0f;
    return p * t2 + 2.0f / 3.0f;
}
inline float clg_logf(float x)
{
    int sub = x < 0x1p-126f;   // subnormals (and <= 0) scaled up first
    float y = select(x, x * 0x1p23f, sub);
    int e = ((as_int(y * (1.0f / 0.75f)) >> 23) & 0xff) - 127;
    float m = as_float(as_int(y) - (e << 23)), t = (m - 1.0f) / (m + 1.0f), t2 = t * t;
    // e ln 2 as hi + lo, hi with 9 trailing zero bits: e hi exact for |e| < 512.
    float k = (float)(sub ? e - 23 : e);
    float r = k * 0x1.62e400p-1f + (2.0f * t + (t * (clg_atanh2_poly(t2) * t2) + k * 0x1.7f7d1cp-20f));
    r = select(r, x, x == INFINITY);
    r = select(r, -INFINITY, x == 0.0f);
    r = select(r, NAN, x < 0.0f);
    return select(r, x, isnan(x));
}
inline float clg_log1pf(float x)
{
    float u = 1.0f + x, r = clg_logf(u) * (x / (u - 1.0f));
    float t = x / (2.0f + x), t2 = t * t;
    r = select(r, (x - t * x) + t * (clg_atanh2_poly(t2) * t2), fabs(x) < 0.4f);
    return select(r, x, x == INFINITY);   // u - 1 would be inf / inf
}
inline float clg_expm1f(float x)
{
    float q = 1.0f / 3628800.0f;
    q = q * x + 1.0f / 362880.0f;
    q = q * x + 1.0f / 40320.0f;
    q = q * x + 1.0f / 5040.0f;
    q = q * x + 1.0f / 720.0f;
    q = q * x + 1.0f / 120.0f;
    q = q * x + 1.0f / 24.0f;
    q = q * x + 1.0f / 6.0f;
    q = q * x + 0.5f;
    return select(exp(x) - 1.0f, x + x * (x * q), fabs(x) < 0.7f);
}

// pow of float32 without the library's call (SLEEF's 16-wide powf, flat16, still took
// 9.9 ms for 1M elements, PyTorch 4.3; this 2.6): |x|^y = 2^(y log2 |x|) in float64
// arithmetic, selects and no branch, so that POCL vectorizes the work-group loop.
// log2 |x| = e + 2 atanh(t) / ln 2, t = (m - 1) / (m + 1), m in [sqrt(1/2), sqrt(2)):
// |t| < 0.172, the odd series to t^11 is within 5e-11 of it (relative); 2^w = 2^k
// e^(f ln 2), |f| <= 1/2, Taylor to degree 8 (within 2e-10). Where the result is a
// finite float (|w| < 150), w = y log2|x| is then within 8e-9 and the result within
// 1e-8 (0.2 ulp) before its rounding to float: 0.52 ulp of the exact value at most
// over 4M arguments (C's powf: 0.82). Specials as C99's pow:
// y == 0 or x == 1 give 1 (NaN too), x == -1 with y = +-inf 1, the sign of x where y is
// an odd integer (-0 and -inf included), NaN for a finite negative x and a non-integer y,
// zeros and infinities by w's sign.
#if defined(cl_khr_fp64) && !defined(CLG_F64)
__attribute__((always_inline)) inline double clg_log2_mant(float s)   // log2 s for a normal positive finite s
{
    int b = as_int(s), e = (b - 0x3f3504f3) >> 23;   // s = m 2^e, m in [sqrt(1/2), sqrt(2))
    float mf = as_float(b - (e << 23)), r0 = 1.0f / (mf + 1.0f);   // float's division: cheaper
    double m = (double)mf, d = m + 1.0, r = (double)r0 * (2.0 - d * (double)r0);   // Newton: 1e-14
    double t = (m - 1.0) * r, t2 = t * t;
    double p = 2.0 / 11.0;
    p = p * t2 + 2.0 / 9.0;
    p = p * t2 + 2.0 / 7.0;
    p = p * t2 + 2.0 / 5.0;
    p = p * t2 + 2.0 / 3.0;
    return (double)e + (2.0 * t + t * t2 * p) * 1.4426950408889634074;
}
__attribute__((always_inline)) inline double clg_exp2_f64(double w)   // 2^w for |w| <= 200 (NaN stays NaN)
{
    double big = w + 0x1.8p52, k = big - 0x1.8p52;   // k = rint(w), also in big's low bits
    double f = (w - k) * 0.69314718055994530942;
    double q = 1.0 / 40320.0;
    q = q * f + 1.0 / 5040.0;
    q = q * f + 1.0 / 720.0;
    q = q * f + 1.0 / 120.0;
    q = q * f + 1.0 / 24.0;
    q = q * f + 1.0 / 6.0;
    q = q * f + 0.5;
    q = q * f + 1.0;
    q = q * f + 1.0;
    return q * as_double((as_ulong(big) + 1023ul) << 52);   // 2^k from k's low bits
}
__attribute__((always_inline)) inline float clg_powf(float x, float y)
{
    float ax = fabs(x), ay = fabs(y);
    int sub = ax < 0x1p-126f;   // subnormals scaled up first
    double l = clg_log2_mant(sub ? ax * 0x1p23f : ax) - (sub ? 23.0 : 0.0);
    l = ax == 0.0f ? -INFINITY : l;
    l = ax == INFINITY ? INFINITY : l;
    double w = (double)y * l;
    w = w > 200.0 ? 200.0 : w;   // past float's range either way; NaN passes
    w = w < -200.0 ? -200.0 : w;
    float r = (float)clg_exp2_f64(w);
    // y integral: |y| >= 2^23 always; odd only below 2^24 (the int is read there only)
    int yint = ay >= 0x1p23f || (ay + 0x1p23f) - 0x1p23f == ay;
    int yodd = yint && ((int)(ay < 0x1p24f ? ay : 0.0f) & 1);
    r = yodd && as_int(x) < 0 ? -r : r;
    r = x < 0.0f && ax != INFINITY && !yint ? NAN : r;
    r = x != x || y != y ? x + y : r;
    return y == 0.0f || x == 1.0f || (x == -1.0f && ay == INFINITY) ? 1.0f : r;
}
#define clg_pow(x, y) clg_powf(x, y)
#else
#define clg_pow(x, y) pow(x, y)
#endif

#ifdef CLG_F64
#define clg_log(x) log(x)
#define clg_log1p(x) log1p(x)
#define clg_expm1(x) expm1(x)
#else
#define clg_log(x) clg_logf(x)
#define clg_log1p(x) clg_log1pf(x)
#define clg_expm1(x) clg_expm1f(x)
#endif

#if defined(CLG_F16_STORE)
#define TS ushort
#define CLG_LD(p, i) clg_h2f((uint)(p)[i])
#define CLG_ST(p, i, v) ((p)[i] = (ushort)clg_f2h(v))
#elif defined(CLG_BF16_STORE)
#define TS ushort
#define CLG_LD(p, i) as_float((uint)(p)[i] << 16)
#define CLG_ST(p, i, v) ((p)[i] = clg_bf16_bits(v))
#else
#define TS T
#define CLG_LD(p, i) ((p)[i])
#define CLG_ST(p, i, v) ((p)[i] = (v))
#endif

// Kernels for 1, 2 and 3 inputs: NAME_flat for contiguous operands, NAME_strided for any
// others, NAME_rows for others with long rows. EXPR reads inputs x (and z, w) and
// scalars s0, s1; it yields y. They run over exactly n work-items (clg__launch_1d, or
// clg__launch_rows), so they check no bounds: a bounds check keeps POCL from
// vectorizing the work-group loop (4x slower).
#ifdef CLG_ROWSU
#define CLG_ROWSU1(KERNEL, EXPR)                                                               \
__kernel void KERNEL(int n, int nd, int8 shape, __global TS *y, int oy, int8 sy,        \
                           __global const TS *a, int oa, int8 sa, const T s0, const T s1)     \
{                                                                                            \
    CLG_ROW_IDS;                                                                             \
    T x = CLG_LD(a, CLG_ROWU_AT(oa, sa, CLG_U1));                                            \
    CLG_ST(y, CLG_ROWU_AT(oy, sy, 1), (EXPR));                                               \
}
#define CLG_ROWSU2(KERNEL, EXPR)                                                               \
__kernel void KERNEL(int n, int nd, int8 shape, __global TS *y, int oy, int8 sy,        \
                           __global const TS *a, int oa, int8 sa,                             \
                           __global const TS *b, int ob, int8 sb, const T s0, const T s1)     \
{                                                                                            \
    CLG_ROW_IDS;                                                                             \
    T x = CLG_LD(a, CLG_ROWU_AT(oa, sa, CLG_U1)), z = CLG_LD(b, CLG_ROWU_AT(ob, sb, CLG_U2)); \
    CLG_ST(y, CLG_ROWU_AT(oy, sy, 1), (EXPR));                                               \
}
#define CLG_ROWSU3(KERNEL, EXPR)                                                               \
__kernel void KERNEL(int n, int nd, int8 shape, __global TS *y, int oy, int8 sy,        \
                           __global const TS *a, int oa, int8 sa,                             \
                           __global const TS *b, int ob, int8 sb,                             \
                           __global const TS *e, int oe, int8 se, const T s0, const T s1)     \
{                                                                                            \
    CLG_ROW_IDS;                                                                             \
    T x = CLG_LD(a, CLG_ROWU_AT(oa, sa, CLG_U1)), z = CLG_LD(b, CLG_ROWU_AT(ob, sb, CLG_U2)); \
    T w = CLG_LD(e, CLG_ROWU_AT(oe, se, CLG_U3));                                            \
    CLG_ST(y, CLG_ROWU_AT(oy, sy, 1), (EXPR));                                               \
}
#else
#define CLG_ROWSU1(KERNEL, EXPR)
#define CLG_ROWSU2(KERNEL, EXPR)
#define CLG_ROWSU3(KERNEL, EXPR)
#endif

#define CLG_ELEMENTWISE1(NAME, EXPR)                                                         \
inline T NAME##_ew(T x, T z, T s0, T s1) { return (EXPR); }  /* ewfuse.cl's */               \
__kernel void NAME##_flat(int n, __global TS *y, int oy, __global const TS *a, int oa,         \
                          const T s0, const T s1)                                             \
{                                                                                            \
    int i = get_global_id(0);   /* exactly n work-items: no bounds check (clg__launch_1d) */ \
    T x = CLG_LD(a, oa + i);                                                                         \
    CLG_ST(y, oy + i, (EXPR));                                                                      \
}                                                                                            \
__kernel void NAME##_strided(int n, int nd, int8 shape, __global TS *y, int oy, int8 sy,      \
                             __global const TS *a, int oa, int8 sa, const T s0, const T s1)   \
{                                                                                            \
    int i = get_global_id(0);   /* exactly n work-items: no bounds check (clg__launch_1d) */ \
    clg_coords c = clg_unravel(i, nd, shape);                                                \
    T x = CLG_LD(a, oa + clg_offset(c, nd, sa));                                                     \
    CLG_ST(y, oy + clg_offset(c, nd, sy), (EXPR));                                                  \
}                                                                                            \
__kernel void NAME##_rows(int n, int nd, int8 shape, __global TS *y, int oy, int8 sy,         \
                          __global const TS *a, int oa, int8 sa, const T s0, const T s1)      \
{                                                                                            \
    CLG_ROW_IDS;                                                                             \
    T x = CLG_LD(a, CLG_ROW_AT(oa, sa));                                                             \
    CLG_ST(y, CLG_ROW_AT(oy, sy), (EXPR));                                                          \
}                                                                                            \
CLG_ROWSU1(NAME##_rowsu, EXPR)

// A float32 elementwise op whose math POCL vectorizes only when written in vectors
// (libm's sin, cos, tan: called per element from the one-element kernels; unary.cl's
// own float16 versions, or SLEEF's, from vectors). NAME_flat16: work-item i takes
// elements 16 i to 16 i + 15 of contiguous operands in vectors where OK (an int on those vectors) holds,
// else, and for the last work-item's rest, one by one (src/tensor/iter.c launches
// ceil(n / 16)). Other types have only the kernels above.
// CLG_TRIG_OK: POCL 3.1's vector sin, cos and tan return wrong values for the other
// lanes (sin(1e-4) = 0.0078) when one lane is 1.6e7 or more (their Payne-Hanek path),
// and unary.cl's reduction holds below 2^28 only; such vectors go one by one.
#define CLG_TRIG_OK all(fabs(x) <= 0x1p22f)
#ifdef CLG_F32
// The body: LOADV declares the operands as vectors at element i, LOADS as scalars at e.
#define CLG_FLAT16_BODY(LOADV, LOADS, EXPR, OK)                                              \
    int i = get_global_id(0) * 16;                                                           \
    if (i + 16 <= n) {                                                                       \
        LOADV;                                                                               \
        if (OK) {                                                                            \
            vstore16((EXPR), 0, y + oy + i);                                                 \
            return;                                                                          \
        }                                                                                    \
    }                                                                                        \
    for (int e = i; e < min(i + 16, n); e++) {                                               \
        LOADS;                                                                               \
        y[oy + e] = (EXPR);                                                                  \
    }
#define CLG_FLAT16_1(NAME, EXPR, OK)                                                         \
__kernel void NAME##_flat16(int n, __global float *y, int oy, __global const float *a, int oa, \
                            const float s0, const float s1)                                  \
{                                                                                            \
    CLG_FLAT16_BODY(float16 x = vload16(0, a + oa + i), float x = a[oa + e], EXPR, OK)       \
}
#define CLG_FLAT16_2(NAME, EXPR, OK)                                                         \
__kernel void NAME##_flat16(int n, __global float *y, int oy, __global const float *a, int oa, \
                            __global const float *b, int ob, const float s0, const float s1) \
{                                                                                            \
    CLG_FLAT16_BODY(float16 x = vload16(0, a + oa + i); float16 z = vload16(0, b + ob + i),   \
                    float x = a[oa + e]; float z = b[ob + e], EXPR, OK)                      \
}
#else
#define CLG_FLAT16_1(NAME, EXPR, OK)
#define CLG_FLAT16_2(NAME, EXPR, OK)
#endif

#define CLG_ELEMENTWISE2(NAME, EXPR)                                                         \
inline T NAME##_ew(T x, T z, T s0, T s1) { return (EXPR); }  /* ewfuse.cl's */               \
__kernel void NAME##_flat(int n, __global TS *y, int oy, __global const TS *a, int oa,         \
                          __global const TS *b, int ob, const T s0, const T s1)               \
{                                                                                            \
    int i = get_global_id(0);   /* exactly n work-items: no bounds check (clg__launch_1d) */ \
    T x = CLG_LD(a, oa + i), z = CLG_LD(b, ob + i);                                                          \
    CLG_ST(y, oy + i, (EXPR));                                                                      \
}                                                                                            \
__kernel void NAME##_strided(int n, int nd, int8 shape, __global TS *y, int oy, int8 sy,      \
                             __global const TS *a, int oa, int8 sa,                           \
                             __global const TS *b, int ob, int8 sb, const T s0, const T s1)   \
{                                                                                            \
    int i = get_global_id(0);   /* exactly n work-items: no bounds check (clg__launch_1d) */ \
    clg_coords c = clg_unravel(i, nd, shape);                                                \
    T x = CLG_LD(a, oa + clg_offset(c, nd, sa)), z = CLG_LD(b, ob + clg_offset(c, nd, sb));                  \
    CLG_ST(y, oy + clg_offset(c, nd, sy), (EXPR));                                                  \
}                                                                                            \
__kernel void NAME##_rows(int n, int nd, int8 shape, __global TS *y, int oy, int8 sy,         \
                          __global const TS *a, int oa, int8 sa,                              \
                          __global const TS *b, int ob, int8 sb, const T s0, const T s1)      \
{                                                                                            \
    CLG_ROW_IDS;                                                                             \
    T x = CLG_LD(a, CLG_ROW_AT(oa, sa)), z = CLG_LD(b, CLG_ROW_AT(ob, sb));                                  \
    CLG_ST(y, CLG_ROW_AT(oy, sy), (EXPR));                                                          \
}                                                                                            \
CLG_ROWSU2(NAME##_rowsu, EXPR)

#define CLG_ELEMENTWISE3(NAME, EXPR)                                                         \
__kernel void NAME##_flat(int n, __global TS *y, int oy, __global const TS *a, int oa,         \
                          __global const TS *b, int ob, __global const TS *e, int oe,          \
                          const T s0, const T s1)                                             \
{                                                                                            \
    int i = get_global_id(0);   /* exactly n work-items: no bounds check (clg__launch_1d) */ \
    T x = CLG_LD(a, oa + i), z = CLG_LD(b, ob + i), w = CLG_LD(e, oe + i);                                           \
    CLG_ST(y, oy + i, (EXPR));                                                                      \
}                                                                                            \
__kernel void NAME##_strided(int n, int nd, int8 shape, __global TS *y, int oy, int8 sy,      \
                             __global const TS *a, int oa, int8 sa,                           \
                             __global const TS *b, int ob, int8 sb,                           \
                             __global const TS *e, int oe, int8 se, const T s0, const T s1)   \
{                                                                                            \
    int i = get_global_id(0);   /* exactly n work-items: no bounds check (clg__launch_1d) */ \
    clg_coords c = clg_unravel(i, nd, shape);                                                \
    T x = CLG_LD(a, oa + clg_offset(c, nd, sa)), z = CLG_LD(b, ob + clg_offset(c, nd, sb));                  \
    T w = CLG_LD(e, oe + clg_offset(c, nd, se));                                                     \
    CLG_ST(y, oy + clg_offset(c, nd, sy), (EXPR));                                                  \
}                                                                                            \
__kernel void NAME##_rows(int n, int nd, int8 shape, __global TS *y, int oy, int8 sy,         \
                          __global const TS *a, int oa, int8 sa,                              \
                          __global const TS *b, int ob, int8 sb,                              \
                          __global const TS *e, int oe, int8 se, const T s0, const T s1)      \
{                                                                                            \
    CLG_ROW_IDS;                                                                             \
    T x = CLG_LD(a, CLG_ROW_AT(oa, sa)), z = CLG_LD(b, CLG_ROW_AT(ob, sb)), w = CLG_LD(e, CLG_ROW_AT(oe, se));       \
    CLG_ST(y, CLG_ROW_AT(oy, sy), (EXPR));                                                          \
}                                                                                            \
CLG_ROWSU3(NAME##_rowsu, EXPR)

// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11),
// the device generator of clg_rand, clg_randn and clg_dropout: integer arithmetic only,
// so a seed and counter give the same bits on every device. Block j of a draw is the
// 64-bit counter (ctr + j) under the 64-bit key (seed).
inline uint4 clg_philox4x32_10(uint4 c, uint2 k)
{
    // Unrolled, with no branch (the key's bump after the last round is unused), and the
    // 64-bit products written out (POCL calls a function for mul_hi): a straight line
    // (dropout of 1M floats: 12-17 ms per launch before, 5.1 after).
#pragma unroll
    for (int r = 0; r < 10; r++) {
        ulong p0 = (ulong)0xD2511F53u * c.x, p1 = (ulong)0xCD9E8D57u * c.z;
        c = (uint4)((uint)(p1 >> 32) ^ c.y ^ k.x, (uint)p1, (uint)(p0 >> 32) ^ c.w ^ k.y, (uint)p0);
        k.x += 0x9E3779B9u;
        k.y += 0xBB67AE85u;
    }
    return c;
}

inline uint4 clg_philox_block(int j, uint seed_lo, uint seed_hi, uint ctr_lo, uint ctr_hi)
{
    ulong ctr = (((ulong)ctr_hi << 32) | ctr_lo) + (ulong)j;
    return clg_philox4x32_10((uint4)((uint)ctr, (uint)(ctr >> 32), 0u, 0u), (uint2)(seed_lo, seed_hi));
}

// Group-wide sum and max of v in local scratch s of one T per work-item (a power-of-two
// group; every work-item must call them). The result is read by all before the scratch
// is reused, hence the last barrier. Used by the per-row reductions of softmax.cl and norm.cl.
inline T clg_group_sum(T v, __local T *s)
{
    int l = get_local_id(0);
    s[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = get_local_size(0) / 2; h > 0; h >>= 1) {
        if (l < h) s[l] += s[l + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    T r = s[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

// NaN wins, as in NumPy and PyTorch: a row holding NaN gives NaN throughout.
#if defined(CLG_I32) || defined(CLG_BITS16)   // integers (and 16-bit floats moved as bits,
                                               // copy.c) have no NaN; b != b warns
inline T clg_nanmax(T a, T b) { return b > a ? b : a; }
#else
inline T clg_nanmax(T a, T b) { return (b != b || b > a) ? b : a; }
#endif

inline T clg_group_max(T v, __local T *s)
{
    int l = get_local_id(0);
    s[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = get_local_size(0) / 2; h > 0; h >>= 1) {
        if (l < h) s[l] = clg_nanmax(s[l], s[l + h]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    T r = s[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

// n / d for 0 <= n < 2^31 and d >= 1 from the host's pair (m, s) (tensor.c
// clg__udiv_magic): floor(n m / 2^(31 + s)), exact over that range (Granlund and
// Montgomery 1994, theorem 4.2). A 32 x 32 -> 64-bit product and a shift vectorize;
// an integer division is one scalar instruction per element on CPUs.
inline uint clg_udiv(uint n, uint m, int s) { return (uint)(((ulong)n * m) >> (31 + s)); }

// A value out of range, found by a kernel (src/device/errflag.c): the first work-item
// to find one records {code, value, bound} in the device's error word; the next read
// to the host turns it into an error naming the op. Later finds keep the first.
inline void clg_report(__global int *err, int code, int value, int bound)
{
    if (atomic_cmpxchg((volatile __global int *)err, 0, code) == 0) {
        err[1] = value;
        err[2] = bound;
    }
}

// The largest and the sum of a float16's lanes (the vector kernels of softmax.cl and
// attention.cl).
inline float clg_hmax16(float16 v)
{
    float8 a = fmax(v.lo, v.hi);
    float4 b = fmax(a.lo, a.hi);
    float2 c = fmax(b.lo, b.hi);
    return fmax(c.x, c.y);
}

inline float clg_hsum16(float16 v)
{
    float8 a = v.lo + v.hi;
    float4 b = a.lo + a.hi;
    float2 c = b.lo + b.hi;
    return c.x + c.y;
}
