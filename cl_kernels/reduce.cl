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
CLG_REDUCE(reduce_prod, (T)1, acc *= v)
// NaN wins, as in NumPy and PyTorch; R >= 1 (checked on the host).
CLG_REDUCE(reduce_max, LDX(p, (size_t)r0 * K), acc = (v != v || v > acc) ? v : acc)
CLG_REDUCE(reduce_min, LDX(p, (size_t)r0 * K), acc = (v != v || v < acc) ? v : acc)

// The sum over rows that lie next to each other in memory (K = 1), float32: each
// work-item adds its chunk 16 elements at a time in a float16 vector, with contiguous
// loads, where reduce_sum's lanes (neighbouring work-items) each read a different row.
// The lanes' partial sums then add in a fixed order, the tail (L % 16) after them.
#if defined(CLG_F32) && !defined(CLG_F16_STORE) && !defined(CLG_BF16_STORE)
__kernel void reduce_sum_vec(int M, int R, int K, int C, int L, __global const float *x, int ox,
                             __global float *y, int oy, const float scale)
{
    int gid = get_global_id(0), c = gid % C, m = gid / C;
    int r0 = c * L, r1 = min(R, r0 + L);
    __global const float *p = x + ox + (size_t)m * R + r0;
    int n = r1 - r0, V = n / 16;
    float16 acc = 0;
    for (int v = 0; v < V; v++) acc += vload16(v, p);
    float s = clg_hsum16(acc);
    for (int r = 16 * V; r < n; r++) s += p[r];
    y[oy + gid] = s * scale;
}
#endif
