// reduce.cl: reductions of x viewed as [M, R, K] (contiguous, from offset ox) over R:
//   y[m, c, k] = OP over r in chunk c of x[m, r, k]      (chunks of L rows, C chunks)
// With C = 1 this is the whole reduction; with C > 1 a second launch reduces the
// partial results, so that a few long reductions still use the whole device.
// Work-item gid = (m * C + c) * K + k; neighbours in k read neighbouring addresses.
// The order of additions is fixed: the same inputs give the same bits.
//
// Kernels whose first argument is a count (n, total, N) run over exactly that many
// work-items (clg__launch_1d, launch.c) and have no bounds check: one would keep POCL
// from vectorizing a work-group's loop (the SGD update ran 4x slower with it).

//
// 16-bit floats (src/tensor/reduce.c) are read through LDX and accumulated in T =
// float; the result is stored through STY, rounded once. A first pass of two keeps
// its partial results in float32 (-DCLG_RED_PARTIAL: y is float), and the second
// reads them as float32 (-DCLG_RED_FINAL: x is float), so that only the end rounds.
#if defined(CLG_F16_STORE) && !defined(CLG_RED_FINAL)
#define TSX ushort
#define LDX(p, i) clg_h2f((uint)(p)[i])
#elif defined(CLG_BF16_STORE) && !defined(CLG_RED_FINAL)
#define TSX ushort
#define LDX(p, i) as_float((uint)(p)[i] << 16)
#else
#define TSX T
#define LDX(p, i) ((p)[i])
#endif
#if defined(CLG_F16_STORE) && !defined(CLG_RED_PARTIAL)
#define TSY ushort
#define STY(p, i, v) ((p)[i] = (ushort)clg_f2h(v))
#elif defined(CLG_BF16_STORE) && !defined(CLG_RED_PARTIAL)
#define TSY ushort
#define STY(p, i, v) ((p)[i] = clg_bf16_bits(v))
#else
#define TSY T
#define STY(p, i, v) ((p)[i] = (v))
#endif

#define CLG_REDUCE(NAME, INIT, STEP)                                                         \
__kernel void NAME(int M, int R, int K, int C, int L, __global const TSX *x, int ox,         \
                   __global TSY *y, int oy, const T scale)                                    \
{                                                                                            \
    int gid = get_global_id(0);                                                              \
    int k = gid % K, c = (gid / K) % C, m = gid / (K * C);                                   \
    int r0 = c * L, r1 = min(R, r0 + L);                                                     \
    __global const TSX *p = x + ox + ((size_t)m * R) * K + k;                                \
    T acc = INIT;                                                                            \
    for (int r = r0; r < r1; r++) {                                                          \
        T v = LDX(p, (size_t)r * K);                                                         \
        STEP;                                                                                \
    }                                                                                        \
    STY(y, oy + gid, acc * scale);                                                           \
}

CLG_REDUCE(reduce_sum, (T)0, acc += v)
// The sum of squares (the 2-norm's first pass; reduce.c adds its partial results with
// reduce_sum): x * x was an op of its own, a pass writing the whole input's size.
CLG_REDUCE(reduce_sumsq, (T)0, acc += v * v)
#ifdef CLG_F64
CLG_REDUCE(reduce_prod, (T)1, acc *= v)
#else
// float32 products renormalised at every step, as reduce_prod_vec's careful way below
// (see there): no device or kernel leaves float's range before the end.
inline float prod_norm(float a, int *e)
{
    int b = as_int(a), f = (b >> 23) & 0xff;
    if (f == 0 || f == 255) return a;
    *e += f - 126;
    return as_float((b & (int)0x807fffff) | (126 << 23));
}
// m * 2^e for m in [0.5, 1) (or zero, infinity, NaN), rounded once: a power of two built
// from its bits where the result is normal; towards the subnormals m first takes 2^-63
// (exact), so that only the last multiply rounds; past float's range the result is 0 or
// infinity as it should be. (ldexp, a function call on POCL, made 16384 short rows
// twice as slow.)
inline float prod_finish(float m, int e)
{
    if (e > 127) {
        m *= 0x1p127f;
        e = min(e - 127, 127);
    } else if (e < -126) {
        m *= 0x1p-63f;
        e = max(e + 63, -126);
    }
    return m * as_float((e + 127) << 23);
}
__kernel void reduce_prod(int M, int R, int K, int C, int L, __global const TSX *x, int ox,
                          __global TSY *y, int oy, const T scale)
{
    int gid = get_global_id(0);
    int k = gid % K, c = (gid / K) % C, m = gid / (K * C);
    int r0 = c * L, r1 = min(R, r0 + L), e = 0;
    __global const TSX *p = x + ox + ((size_t)m * R) * K + k;
    float acc = 1.0f;
    for (int r = r0; r < r1; r++) acc = prod_norm(acc * LDX(p, (size_t)r * K), &e);
    STY(y, oy + gid, prod_finish(acc, e) * scale);
}
#endif
// NaN wins, as in NumPy and PyTorch; R >= 1 (checked on the host).
CLG_REDUCE(reduce_max, LDX(p, (size_t)r0 * K), acc = (v != v || v > acc) ? v : acc)
CLG_REDUCE(reduce_min, LDX(p, (size_t)r0 * K), acc = (v != v || v < acc) ? v : acc)

// The reductions over rows that lie next to each other in memory (K = 1), float32:
// each work-item runs its chunk 16 elements at a time in a float16 vector, with
// contiguous loads, where the kernels above vectorize across work-items and each lane
// reads a different row. The lanes then combine in a fixed order, the tail (L % 16)
// after them. max and min: NaN wins (any NaN in the chunk gives NaN), as above.
// 16-bit values (LDX) widen 16 at a time (LDX16): a conv's bias gradient in bfloat16
// ran the kernels above at ~1 ms per call against 0.1 for float32's.
#if defined(CLG_F16_STORE) && !defined(CLG_RED_FINAL)
#define LDX16(v, p) (float16)(clg_h2f8(convert_uint8(vload8(2 * (v), p))), clg_h2f8(convert_uint8(vload8(2 * (v) + 1, p))))
#elif defined(CLG_BF16_STORE) && !defined(CLG_RED_FINAL)
#define LDX16(v, p) as_float16(convert_uint16(vload16(v, p)) << 16)
#else
#define LDX16(v, p) vload16(v, p)
#endif
#if defined(CLG_F32) || defined(CLG_F16_STORE) || defined(CLG_BF16_STORE)
#define CLG_REDUCE_VEC(NAME, INIT, STEP16, HREDUCE, STEP, NANS)                                \
__kernel void NAME##_vec(int M, int R, int K, int C, int L, __global const TSX *x, int ox,     \
                         __global TSY *y, int oy, const float scale)                            \
{                                                                                              \
    int gid = get_global_id(0), c = gid % C, m = gid / C;                                      \
    int r0 = c * L, r1 = min(R, r0 + L);                                                       \
    __global const TSX *p = x + ox + (size_t)m * R + r0;                                       \
    int n = r1 - r0, V = n / 16, nan = 0;                                                      \
    float16 acc = (float16)(INIT);                                                             \
    int16 nans = 0;                                                                            \
    for (int v = 0; v < V; v++) {                                                              \
        float16 a = LDX16(v, p);                                                               \
        if (NANS) nans |= a != a;                                                              \
        STEP16;                                                                                \
    }                                                                                          \
    float s = HREDUCE(acc);                                                                    \
    nan = NANS && clg_hsum16(convert_float16(nans)) != 0.0f;                                   \
    for (int r = 16 * V; r < n; r++) {                                                         \
        float v = LDX(p, r);                                                                   \
        if (NANS) nan |= v != v;                                                               \
        STEP;                                                                                  \
    }                                                                                          \
    STY(y, oy + gid, (nan ? NAN : s) * scale);                                                 \
}
inline float clg_hprod16(float16 v)
{
    float8 a = v.lo * v.hi;
    float4 b = a.lo * a.hi;
    float2 d = b.lo * b.hi;
    return d.x * d.y;
}
// Horizontal max and min by comparisons, for the kernels below, which find NaN apart
// (POCL calls a function for fmin and fmax).
inline float red_hmax16(float16 v)
{
    float8 a = select(v.hi, v.lo, v.lo > v.hi);
    float4 b = select(a.hi, a.lo, a.lo > a.hi);
    float2 d = select(b.hi, b.lo, b.lo > b.hi);
    return d.x > d.y ? d.x : d.y;
}
inline float red_hmin16(float16 v)
{
    float8 a = select(v.hi, v.lo, v.lo < v.hi);
    float4 b = select(a.hi, a.lo, a.lo < a.hi);
    float2 d = select(b.hi, b.lo, b.lo < b.hi);
    return d.x < d.y ? d.x : d.y;
}
// Sums and products carry NaN by themselves (NANS 0); max and min track it in a lane
// mask, summed once after the loop (their comparisons pass a NaN over). any(isnan(a))
// on every vector made the sums 4x slower on POCL (mean of [16384, 64]: 0.33 -> 0.074
// ms), and fmax and fmin are function calls there.
CLG_REDUCE_VEC(reduce_sum, 0.0f, acc += a, clg_hsum16, s += v, 0)
CLG_REDUCE_VEC(reduce_sumsq, 0.0f, acc += a * a, clg_hsum16, s += v * v, 0)
// Products keep each lane's running product as a mantissa in [0.5, 1) and a power of
// two apart (scaling by 2^k is exact: renormalising adds no rounding of its own): the
// running product never passes through the subnormal range, where every multiply takes
// a microcode assist on x86 (prod of [16, 65536] values in [0.1, 0.9]: 456 us a call,
// against 124 for the sum), nor overflows or underflows before the end. Zero, infinity
// and NaN keep their bits (exponent field 0 or 255): they stay what they are, and
// 0 * inf still gives NaN. Where the plain product would leave float's range and come
// back within a work-item's chunk, this one is the closer to the exact product (the
// chunks' partial products are floats: where they leave float's range, they round
// there, as the plain product would). (Renormalising only when a lane
// left [2^-64, 2^64], tested with any() at every step, ran slower on POCL.)
inline float16 prod_norm16(float16 a, int16 *e)
{
    int16 b = as_int16(a), f = (b >> 23) & 0xff, ok = f != 0 && f != 255;
    *e += ok & (f - 126);
    return as_float16(select(b, (b & (int)0x807fffff) | (126 << 23), ok));
}
// A running product that fell under float's normal range (a subnormal input, or a tiny
// one times a mantissa) keeps its bits in prod_norm16; before lanes multiply together
// (the accumulators, the horizontal product, the rows' fold) it is scaled by 2^64
// (exact) and renormalised, so that those multiplies do not round it again on the
// subnormal grid (a row of 64 with one 1e-40 among 1.5s: 1.2e-3 off, now 1e-5).
inline float16 prod_unsub16(float16 a, int16 *e)
{
    int16 b = as_int16(a), sub = ((b >> 23) & 0xff) == 0 && (b & 0x7fffffff) != 0;
    *e -= sub & 64;
    return prod_norm16(select(a, a * 0x1p64f, sub), e);
}
// The fast way for chunks of normal elements: each element's mantissa (its exponent
// field set to 127: [1, 2), its sign kept) multiplies the lane's product and its exponent
// field adds to the lane's sum, apart; the chain from one vector to the next is then the
// multiply alone (prod_norm16's renormalisation after each multiply was a ~15-cycle
// chain: [1024, 1024]'s rows ran at 21 cycles a vector). Up to 64 mantissas multiply to
// under 2^64 (PROD_RUN vectors a run, then the product is renormalised). Each element's
// field also goes into the lanes' minimum and maximum: where a lane met a zero, a
// subnormal, an infinity or a NaN (field 0 or 255), the caller recomputes the chunk the
// careful way (prod_norm16 at each step), so that those keep their meaning exactly.
#define PROD_RUN 64
inline void prod_split16(float16 x, float16 *acc, int16 *es, int16 *lo, int16 *hi)
{
    int16 b = as_int16(x), f = (b >> 23) & 0xff;
    *es += f;
    *lo = min(*lo, f);
    *hi = max(*hi, f);
    *acc *= as_float16((b & (int)0x807fffff) | (127 << 23));
}
// Whether a lane met a field of 0 or 255 (the fast way does not hold).
inline bool prod_special16(int16 lo, int16 hi)
{
    return any(lo == (int16)0 || hi == (int16)255);
}
__kernel void reduce_prod_vec(int M, int R, int K, int C, int L, __global const TSX *x, int ox,
                              __global TSY *y, int oy, const float scale)
{
    int gid = get_global_id(0), c = gid % C, m = gid / C;
    int r0 = c * L, r1 = min(R, r0 + L);
    __global const TSX *p = x + ox + (size_t)m * R + r0;
    int n = r1 - r0, V = n / 16;
    // four running products: the multiplies of one would wait on each other
    float16 acc = 1.0f, acc1 = 1.0f, acc2 = 1.0f, acc3 = 1.0f;
    int16 e16 = 0, lo = 255, hi = 0;
    int v = 0;
    // the fast way, in runs of PROD_RUN vectors (each accumulator takes a quarter of a run)
    for (int v0 = 0; v0 < V; v0 += PROD_RUN) {
        int v1 = min(V, v0 + PROD_RUN);
        int16 f16 = 0;
        for (v = v0; v + 4 <= v1; v += 4) {
            prod_split16(LDX16(v, p), &acc, &f16, &lo, &hi);
            prod_split16(LDX16(v + 1, p), &acc1, &f16, &lo, &hi);
            prod_split16(LDX16(v + 2, p), &acc2, &f16, &lo, &hi);
            prod_split16(LDX16(v + 3, p), &acc3, &f16, &lo, &hi);
        }
        for (; v < v1; v++) prod_split16(LDX16(v, p), &acc, &f16, &lo, &hi);
        e16 += f16 - 127 * (v1 - v0);   // each vector's fields carry the bias once per lane
        acc = prod_norm16(acc, &e16);
        acc1 = prod_norm16(acc1, &e16);
        acc2 = prod_norm16(acc2, &e16);
        acc3 = prod_norm16(acc3, &e16);
    }
    if (prod_special16(lo, hi)) {   // the careful way, over the whole chunk again
        acc = acc1 = acc2 = acc3 = 1.0f;
        e16 = 0;
        for (v = 0; v + 4 <= V; v += 4) {
            acc = prod_norm16(acc * LDX16(v, p), &e16);
            acc1 = prod_norm16(acc1 * LDX16(v + 1, p), &e16);
            acc2 = prod_norm16(acc2 * LDX16(v + 2, p), &e16);
            acc3 = prod_norm16(acc3 * LDX16(v + 3, p), &e16);
        }
        for (; v < V; v++) acc = prod_norm16(acc * LDX16(v, p), &e16);
    }
    acc = prod_unsub16(acc, &e16);
    acc1 = prod_unsub16(acc1, &e16);
    acc2 = prod_unsub16(acc2, &e16);
    acc3 = prod_unsub16(acc3, &e16);
    acc = prod_norm16(acc * acc1, &e16);   /* in [0.25, 1): no rounding to the subnormals */
    acc = prod_norm16(acc * prod_norm16(acc2 * acc3, &e16), &e16);
    // The lanes, in [0.5, 1), multiply 16 deep without leaving the normal range; their
    // exponents add up to at most 128 * L in size (L < 2^16): an int.
    int8 e8 = e16.lo + e16.hi;
    int4 e4 = e8.lo + e8.hi;
    int2 e2 = e4.lo + e4.hi;
    int e = e2.x + e2.y;
    int es = 0;
    float s = prod_norm(clg_hprod16(acc), &es);
    for (int r = 16 * V; r < n; r++) s = prod_norm(s * LDX(p, r), &es);
    STY(y, oy + gid, prod_finish(s, e + es) * scale);
}
// Products of short whole rows (K = 1, C = 1; reduce.c takes it for rows of up to 1024):
// 16 rows a work-item, each row's 16 lanes as in reduce_prod_vec (prod_row16 below),
// then the 16 rows' lane vectors fold together (common.cl's CLG_FOLD
// tree: mantissas in [0.5, 1) multiply 16 deep without leaving the normal range, their
// exponents add), so that lane t ends with row t's product and one vector step finishes
// all 16: in reduce_prod_vec each row's horizontal product, exponent sum and finish
// took as long as its 64 elements (prod of [16384, 64]: 0.29 ms against PyTorch's 0.07).
// Rows past M read row M - 1 and are not stored. A row's last n % 16 elements multiply
// into lane 0 of its vector.
inline float16 prod_finish16(float16 m, int16 e)
{
    int16 hi = e > 127, lo = e < -126;
    m = select(m, m * 0x1p127f, hi);
    e = select(e, min(e - 127, (int16)127), hi);   // (vector bounds: Oclgrind's min(int16, int) was wrong)
    m = select(m, m * 0x1p-63f, lo);
    e = select(e, max(e + 63, (int16)-126), lo);
    return m * as_float16((e + 127) << 23);
}
#define PROD_FOLD(x, y, lo, hi) (shuffle2((x), (y), lo) * shuffle2((x), (y), hi))
#define PROD_EFOLD(x, y, lo, hi) (shuffle2((x), (y), lo) + shuffle2((x), (y), hi))
// One row's lanes (mantissa in [0.5, 1), exponent): the fast way (n <= 1024: at most
// PROD_RUN vectors, one run; two accumulators), and where the row holds a zero, a
// subnormal, an infinity or a NaN, again the careful way (prod_norm16 at every step).
// (Checking once for all 16 rows of a work-item instead, their fields gathered in one
// minimum and maximum, ran slower: 144-222 against 114-119 us for [16384, 64].)
inline void prod_row16(__global const TSX *p, int n, float16 *m, int16 *e)
{
    float16 acc = 1.0f, acc1 = 1.0f;
    int16 e16 = 0, lo = 255, hi = 0;
    int V = n / 16, v = 0;
    for (; v + 2 <= V; v += 2) {
        prod_split16(LDX16(v, p), &acc, &e16, &lo, &hi);
        prod_split16(LDX16(v + 1, p), &acc1, &e16, &lo, &hi);
    }
    if (v < V) prod_split16(LDX16(v, p), &acc, &e16, &lo, &hi);
    e16 -= 127 * V;
    acc = prod_norm16(acc * acc1, &e16);   // each under 2^32: their product under 2^64
    if (prod_special16(lo, hi)) {
        acc = 1.0f;
        e16 = 0;
        for (v = 0; v < V; v++) acc = prod_norm16(acc * LDX16(v, p), &e16);
        acc = prod_unsub16(acc, &e16);
    }
    if (16 * V < n) {   // the tail, into lane 0 (a float in [0.5, 1) and its exponent)
        int es = 0;
        float s = acc.s0;
        for (int r = 16 * V; r < n; r++) s = prod_norm(s * LDX(p, r), &es);
        acc.s0 = s;
        e16.s0 += es;
        acc = prod_unsub16(acc, &e16);
    }
    *m = acc;
    *e = e16;
}
__kernel void reduce_prod_rows16(int M, int R, __global const TSX *x, int ox, __global TSY *y, int oy,
                                 const float scale)
{
    int g = get_global_id(0), row0 = 16 * g;
    if (row0 >= M) return;
    __global const TSX *p = x + ox + (size_t)row0 * R;
    int last = M - 1 - row0;   // rows past it read it again
    float16 f1[8], f2[4], f3[2];
    int16 e1[8], e2[4], e3[2];
    for (int t = 0; t < 8; t++) {
        float16 m0, m1;
        int16 x0, x1;
        prod_row16(p + (size_t)min(2 * t, last) * R, R, &m0, &x0);
        prod_row16(p + (size_t)min(2 * t + 1, last) * R, R, &m1, &x1);
        f1[t] = PROD_FOLD(m0, m1, CLG_FOLD_M1A, CLG_FOLD_M1B);
        e1[t] = PROD_EFOLD(x0, x1, CLG_FOLD_M1A, CLG_FOLD_M1B);
    }
    for (int t = 0; t < 4; t++) {
        f2[t] = PROD_FOLD(f1[2 * t], f1[2 * t + 1], CLG_FOLD_M2A, CLG_FOLD_M2B);
        e2[t] = PROD_EFOLD(e1[2 * t], e1[2 * t + 1], CLG_FOLD_M2A, CLG_FOLD_M2B);
    }
    for (int t = 0; t < 2; t++) {
        f3[t] = PROD_FOLD(f2[2 * t], f2[2 * t + 1], CLG_FOLD_M3A, CLG_FOLD_M3B);
        e3[t] = PROD_EFOLD(e2[2 * t], e2[2 * t + 1], CLG_FOLD_M3A, CLG_FOLD_M3B);
    }
    float16 f = PROD_FOLD(f3[0], f3[1], CLG_FOLD_M4A, CLG_FOLD_M4B);
    int16 ef = PROD_EFOLD(e3[0], e3[1], CLG_FOLD_M4A, CLG_FOLD_M4B);
    // f's lanes are products of 16 mantissas in [0.5, 1): normal, renormalised once more
    int16 b = as_int16(f), fe = (b >> 23) & 0xff, ok = fe != 0 && fe != 255;
    ef += ok & (fe - 126);
    f = as_float16(select(b, (b & (int)0x807fffff) | (126 << 23), ok));
    float16 out = prod_finish16(f, ef) * scale;
    float res[16];
    vstore16(out, 0, res);
    for (int t = 0; t < 16 && t <= last; t++) STY(y, oy + row0 + t, res[t]);
}
CLG_REDUCE_VEC(reduce_max, -INFINITY, acc = select(acc, a, a > acc), red_hmax16, s = v > s ? v : s, 1)
CLG_REDUCE_VEC(reduce_min, INFINITY, acc = select(acc, a, a < acc), red_hmin16, s = v < s ? v : s, 1)

// Down columns (K > 1, K a multiple of 16; a bias's gradient, [2048, 128] summed over
// its rows): each work-item takes 16 adjacent columns of a chunk of rows, one float16
// vector per row, contiguous loads, and writes 16 results; no horizontal step, so each
// column's sum runs down its rows in order. The kernels above index a column per item
// (k = gid % K), which POCL loads element by element: 100 us for [2048, 128], 8 GB/s.
// Range: (K / 16) * C * M items, in that order.
#define ST16(y, i, v)                                                                              \
    do {                                                                                           \
        STY(y, (i) + 0, (v).s0); STY(y, (i) + 1, (v).s1); STY(y, (i) + 2, (v).s2); STY(y, (i) + 3, (v).s3); \
        STY(y, (i) + 4, (v).s4); STY(y, (i) + 5, (v).s5); STY(y, (i) + 6, (v).s6); STY(y, (i) + 7, (v).s7); \
        STY(y, (i) + 8, (v).s8); STY(y, (i) + 9, (v).s9); STY(y, (i) + 10, (v).sa); STY(y, (i) + 11, (v).sb); \
        STY(y, (i) + 12, (v).sc); STY(y, (i) + 13, (v).sd); STY(y, (i) + 14, (v).se); STY(y, (i) + 15, (v).sf); \
    } while (0)
#define CLG_REDUCE_COLS(NAME, INIT, STEP16, NANS)                                                   \
__kernel void NAME##_cols16(int M, int R, int K, int C, int L, __global const TSX *x, int ox,        \
                            __global TSY *y, int oy, const float scale)                               \
{                                                                                                   \
    int gid = get_global_id(0), KV = K / 16, kv = gid % KV, c = gid / KV % C, m = gid / (KV * C);   \
    int r0 = c * L, r1 = min(R, r0 + L);                                                            \
    __global const TSX *p = x + ox + (size_t)m * R * K + 16 * kv;                                   \
    float16 acc = (float16)(INIT);                                                                  \
    int16 nans = 0;                                                                                 \
    for (int r = r0; r < r1; r++) {                                                                 \
        float16 a = LDX16(0, p + (size_t)r * K);                                                    \
        if (NANS) nans |= a != a;                                                                   \
        STEP16;                                                                                     \
    }                                                                                               \
    float16 out = select(acc, (float16)(NAN), nans) * scale;                                        \
    ST16(y, oy + (m * C + c) * K + 16 * kv, out);                                                   \
}
CLG_REDUCE_COLS(reduce_sum, 0.0f, acc += a, 0)
CLG_REDUCE_COLS(reduce_sumsq, 0.0f, acc += a * a, 0)
CLG_REDUCE_COLS(reduce_max, -INFINITY, acc = select(acc, a, a > acc), 1)
CLG_REDUCE_COLS(reduce_min, INFINITY, acc = select(acc, a, a < acc), 1)
#endif
