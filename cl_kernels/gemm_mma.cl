// gemm_mma.cl: matrix products of 16-bit operands on matrix units (issue 35), see
// src/tensor/gemm_mma.c. C = alpha * op(A) * op(B) + beta * C with A and B float16 or
// bfloat16, products exact and sums in float32, each result rounded once to C's type
// (float32, or A's 16-bit type).
//
// A work-group of WARPS_M x WARPS_N warps (32 work-items each) computes a TM x TN block
// of C; each warp a WTM x WTN part of it as FM x FN fragments of 16 x 8, the shape of
// PTX's mma.sync.m16n8k16 (row-major A, column-major B, float32 accumulators). Over k in
// tiles of TK, the group stages op(A)'s TM x TK and op(B)^T's TN x TK tiles in local
// memory, k-contiguous (a fragment register is two neighbouring k), while the next
// tile's global loads are already in registers (the loads of tile t+1 overlap the
// products of tile t).
//
// The warp instruction, by -DMMA:
//   1 (ptx): NVIDIA's mma.sync through inline PTX, which NVIDIA's OpenCL compiler takes
//     (sm_80 and later: float16 and bfloat16 inputs, float32 sums);
//   2 (emulate): the same instructions computed by the warp's 32 work-items through local
//     memory, fragment layouts and all: on every other device it runs this kernel's
//     tiling, loads and write-out, so that the suite proves them on POCL, rusticl and
//     Oclgrind. Products are exact in float32 either way; only the order of the 16
//     additions of one instruction may differ.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), lane = 4 g + t:
//   A (16 x 16): a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1], a2 = A[g][2t+8, 2t+9],
//                a3 = A[g+8][2t+8, 2t+9]   (two 16-bit values per 32-bit register, the
//                lower k in the low half)
//   B (16 x 8):  b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g]
//   C (16 x 8):  c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1]
//
// Every size (tiles past the matrix hold zeros, results past it are not stored), all
// four transposes (ta, tb: arguments, taken alike by the whole group), offsets, leading
// dimensions and batch strides (the batch is the launch's third dimension); a_vec,
// b_vec: the operand's rows start on 16-byte boundaries (offset, leading dimension and
// batch stride multiples of 8), so its global loads go 8 values at once. beta == 0
// writes C without reading it.
//
// Options: -DCLG_F16_STORE or -DCLG_BF16_STORE, -DCF32=0|1, -DWARPS_M -DWARPS_N -DFM
// -DFN -DTK (a multiple of 16), -DMMA=1|2.

#define WTM (FM * 16)
#define WTN (FN * 8)
#define TM (WARPS_M * WTM)
#define TN (WARPS_N * WTN)
#define NT (WARPS_M * WARPS_N * 32)   // work-items per group
#define LK (TK + 8)                   // local row length: 16-byte rows, banks staggered
#define AL (TM * TK / 8 / NT)         // 8-value loads per work-item and tile
#define BL (TN * TK / 8 / NT)

#if TK % 16 || AL * NT * 8 != TM * TK || BL * NT * 8 != TN * TK || AL < 1 || BL < 1
#error "gemm_mma: TK must be a multiple of 16, and the group must load whole tiles in equal shares"
#endif

#if defined(CLG_F16_STORE)
#define KIND "f16"
#define H2F(x) clg_h2f(x)
#elif defined(CLG_BF16_STORE)
#define KIND "bf16"
#define H2F(x) as_float((uint)(x) << 16)
#else
#error "gemm_mma: -DCLG_F16_STORE or -DCLG_BF16_STORE"
#endif

#if CF32
#define CT float
#define LOADC(p) (*(p))
#define STOREC(p, v) (*(p) = (v))
#else
#define CT ushort
#define LOADC(p) CLG_LD(p, 0)
#define STOREC(p, v) CLG_ST(p, 0, v)
#endif

#if MMA == 1
// d += a . b on the warp's matrix unit (PTX mma.sync.aligned.m16n8k16.row.col).
#define MMA_STEP(d, a, b)                                                                        \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." KIND "." KIND ".f32 {%0,%1,%2,%3}, "    \
                 "{%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"                                    \
                 : "=f"((d)[0]), "=f"((d)[1]), "=f"((d)[2]), "=f"((d)[3])                         \
                 : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "r"((b)[0]), "r"((b)[1]),  \
                   "f"((d)[0]), "f"((d)[1]), "f"((d)[2]), "f"((d)[3]))
#elif MMA == 2
// The warp's FM x FN instructions of one k step of 16 computed by its 32 work-items:
// each writes its fragments, widened to float32, to the warp's scratch s (FM A
// fragments as 16 rows of 16, then FN B fragments as 8 columns of 16), then computes its
// own four results of every product from them. Two barriers per k step, called alike
// by the whole group.
inline void put_pair(__local float *s, const uint x)
{
    s[0] = H2F(x & 0xffffu);
    s[1] = H2F(x >> 16);
}
inline void mma_emulated_step(float acc[FM][FN][4], uint af[FM][4], uint bf[FN][2], __local float *s, int lane)
{
    int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < FM; i++) {
        __local float *a = s + i * 256;
        put_pair(a + g * 16 + 2 * t, af[i][0]);
        put_pair(a + (g + 8) * 16 + 2 * t, af[i][1]);
        put_pair(a + g * 16 + 2 * t + 8, af[i][2]);
        put_pair(a + (g + 8) * 16 + 2 * t + 8, af[i][3]);
    }
    for (int j = 0; j < FN; j++) {
        __local float *b = s + FM * 256 + j * 128;
        put_pair(b + g * 16 + 2 * t, bf[j][0]);
        put_pair(b + g * 16 + 2 * t + 8, bf[j][1]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < FM; i++)
        for (int j = 0; j < FN; j++)
            for (int e = 0; e < 4; e++) {
                __local const float *x = s + i * 256 + (g + (e >> 1) * 8) * 16;
                __local const float *y = s + FM * 256 + j * 128 + (2 * t + (e & 1)) * 16;
                float sum = 0.0f;
                for (int k = 0; k < 16; k++) sum += x[k] * y[k];
                acc[i][j][e] += sum;
            }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#else
#error "gemm_mma: -DMMA=1 (ptx) or 2 (emulate)"
#endif

// Tile loads. op(X) is R x K (rows of A, or columns of B); its tile at (r0, k0) goes to
// local L[r * LK + k]. kcontig: op(X)[r][k] = X[r * ld + k] (k contiguous: A not
// transposed, B transposed), else X[k * ld + r]. Each work-item moves `n` runs of 8
// values contiguous in X: fetch reads them into registers, put stores them.
inline ushort8 fetch8(__global const ushort *p, const int vec, const int full, const int avail)
{
    if (full && vec) return as_ushort8(*(__global const uint4 *)p);
    if (full) return vload8(0, p);
    ushort x[8];
    for (int e = 0; e < 8; e++) x[e] = e < avail ? p[e] : (ushort)0;
    return vload8(0, x);
}

inline void fetch_tile(ushort8 *v, const int n, const int R, __global const ushort *X, const int ld,
                       const int kcontig, const int vec, const int r0, const int RT, const int k0, const int KT,
                       const int tid)
{
    const bool full = r0 + R <= RT && k0 + TK <= KT;
    #pragma unroll
    for (int i = 0; i < n; i++) {
        int u = tid + i * NT, r, k, avail;
        if (kcontig) {
            r = u / (TK / 8);
            k = u % (TK / 8) * 8;
            avail = r0 + r < RT ? KT - (k0 + k) : 0;
        } else {
            k = u / (R / 8);
            r = u % (R / 8) * 8;
            avail = k0 + k < KT ? RT - (r0 + r) : 0;
        }
        // Past the matrix, point at its start: nothing there is read (avail <= 0).
        long at = kcontig ? (long)(r0 + r) * ld + k0 + k : (long)(k0 + k) * ld + r0 + r;
        v[i] = fetch8(X + (avail > 0 ? at : 0), vec, full, avail);
    }
}

inline void put_tile(__local ushort *L, const ushort8 *v, const int n, const int R, const int kcontig, const int tid)
{
    #pragma unroll
    for (int i = 0; i < n; i++) {
        int u = tid + i * NT;
        if (kcontig) {
            *(__local uint4 *)(L + u / (TK / 8) * LK + u % (TK / 8) * 8) = as_uint4(v[i]);
        } else {
            int k = u / (R / 8), r = u % (R / 8) * 8;
            ushort x[8];
            vstore8(v[i], 0, x);
            for (int e = 0; e < 8; e++) L[(r + e) * LK + k] = x[e];
        }
    }
}

#define LW(L, r, k) (*(__local const uint *)((L) + (r) * LK + (k)))

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void gemm_mma(const int M, const int N, const int K, const int ta, const int tb,
              __global const ushort *A, const long a_off, const int lda, const long stride_a, const int a_vec,
              __global const ushort *B, const long b_off, const int ldb, const long stride_b, const int b_vec,
              __global CT *C, const long c_off, const int ldc, const long stride_c, const float alpha,
              const float beta)
{
    // uint4 arrays: 16-byte aligned rows for put_tile's vector stores.
    __local uint4 As4[TM * LK / 8], Bs4[TN * LK / 8];
    __local ushort *As = (__local ushort *)As4, *Bs = (__local ushort *)Bs4;
#if MMA == 2
    __local float scratch[NT / 32][FM * 256 + FN * 128];   // each warp's fragments of a k step
#endif
    const int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int wm = warp / WARPS_N * WTM, wn = warp % WARPS_N * WTN;
    const int m0 = get_group_id(1) * TM, n0 = get_group_id(0) * TN;
    const long z = get_group_id(2);
    A += a_off + z * stride_a;
    B += b_off + z * stride_b;
    C += c_off + z * stride_c;

    float acc[FM][FN][4];
    #pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

    ushort8 ra[AL], rb[BL];
    fetch_tile(ra, AL, TM, A, lda, !ta, a_vec, m0, M, 0, K, tid);
    fetch_tile(rb, BL, TN, B, ldb, tb, b_vec, n0, N, 0, K, tid);
    for (int k0 = 0; k0 < K; k0 += TK) {
        barrier(CLK_LOCAL_MEM_FENCE);   // the last tile's fragments are read
        put_tile(As, ra, AL, TM, !ta, tid);
        put_tile(Bs, rb, BL, TN, tb, tid);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (k0 + TK < K) {
            fetch_tile(ra, AL, TM, A, lda, !ta, a_vec, m0, M, k0 + TK, K, tid);
            fetch_tile(rb, BL, TN, B, ldb, tb, b_vec, n0, N, k0 + TK, K, tid);
        }
        #pragma unroll
        for (int ks = 0; ks < TK; ks += 16) {
            uint af[FM][4], bf[FN][2];
            #pragma unroll
            for (int i = 0; i < FM; i++) {
                int r = wm + i * 16 + g, k = ks + 2 * t;
                af[i][0] = LW(As, r, k);
                af[i][1] = LW(As, r + 8, k);
                af[i][2] = LW(As, r, k + 8);
                af[i][3] = LW(As, r + 8, k + 8);
            }
            #pragma unroll
            for (int j = 0; j < FN; j++) {
                int c = wn + j * 8 + g, k = ks + 2 * t;
                bf[j][0] = LW(Bs, c, k);
                bf[j][1] = LW(Bs, c, k + 8);
            }
            #if MMA == 1
#pragma unroll
            for (int i = 0; i < FM; i++)
#pragma unroll
                for (int j = 0; j < FN; j++) MMA_STEP(acc[i][j], af[i], bf[j]);
#else
            mma_emulated_step(acc, af, bf, scratch[warp], lane);
#endif
        }
    }

#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int r = m0 + wm + i * 16 + g + (e >> 1) * 8, c = n0 + wn + j * 8 + 2 * t + (e & 1);
                if (r < M && c < N) {
                    __global CT *p = C + (long)r * ldc + c;
                    float v = alpha * acc[i][j][e];
                    if (beta != 0.0f) v += beta * LOADC(p);
                    STOREC(p, v);
                }
            }
}
