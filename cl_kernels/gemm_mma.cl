// gemm_mma.cl: matrix products of 16-bit operands on matrix units (issue 35), see
// src/gemm/mma.c. C = alpha * op(A) * op(B) + beta * C with A and B float16 or
// bfloat16, products exact and sums in float32, each result rounded once to C's type
// (float32, or A's 16-bit type).
//
// A work-group of WARPS_M x WARPS_N warps (32 work-items each) computes a TM x TN block
// of C; each warp a WTM x WTN part of it as FM x FN fragments of 16 x 8, the shape of
// PTX's mma.sync.m16n8k16 (row-major A, column-major B, float32 accumulators). Over k in
// tiles of TK, the group stages op(A)'s and op(B)'s tiles in local memory, STAGES tiles
// deep: while the warps multiply tile t, the copies of tiles t+1 .. t+STAGES-1 are in
// flight (the engine was bound by global loads' latency with one tile in registers).
// Each operand's tile keeps the layout it has in global memory, so that 16-byte runs
// copy straight: k-contiguous (A not transposed, B transposed) as R rows of TK + 8
// values, else as TK rows of R + 8 (the 8: 16-byte rows whose 8-row runs fall in
// distinct banks). Fragments are read with PTX's ldmatrix (.trans for the second
// layout), which hands each lane the two neighbouring k of its fragment register.
//
// By -DMMA:
//   1 (ptx): NVIDIA's cp.async (16-byte copies, zero-filled past the matrix), ldmatrix
//     and mma.sync through inline PTX, which NVIDIA's OpenCL compiler takes (sm_80 and
//     later: float16 and bfloat16 inputs, float32 sums);
//   2 (emulate): the same copies as plain loads and stores, and ldmatrix and mma.sync
//     computed by the warp's 32 work-items through local memory, layouts, addresses and
//     all: on every other device it runs this kernel's staging, addressing and
//     write-out, so that the suite proves them on POCL, rusticl and Oclgrind. Products
//     are exact in float32 either way; only the order of the 16 additions of one
//     instruction may differ.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"), lane = 4 g + t:
//   A (16 x 16): a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1], a2 = A[g][2t+8, 2t+9],
//                a3 = A[g+8][2t+8, 2t+9]   (two 16-bit values per 32-bit register, the
//                lower k in the low half)
//   B (16 x 8):  b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g]
//   C (16 x 8):  c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1]
// ldmatrix.x4: lanes 8i .. 8i+7 give the addresses of the 8 rows (16 bytes each) of
// matrix i; lane 4g + t receives, of each matrix, row g's values 2t and 2t+1, or with
// .trans rows 2t and 2t+1's value g.
//
// Every size (tiles past the matrix hold zeros, results past it are not stored), all
// four transposes (ta, tb: arguments, taken alike by the whole group), offsets, leading
// dimensions and batch strides (the batch is the launch's third dimension); a_vec,
// b_vec: the operand's rows start on 16-byte boundaries (offset, leading dimension and
// batch stride multiples of 8), so that its copies go 8 values at once (cp.async needs
// it; other operands are copied by plain loads, in step). beta == 0 writes C without
// reading it.
//
// Intel's matrix units (XMX: DG2/Arc, Ponte Vecchio, Xe2) take a sub-group's instruction
// instead (cl_intel_subgroup_matrix_multiply_accumulate): one dpas multiplies an 8 x 16
// block of A by a 16 x SG block of B (SG, the sub-group's lanes: 8 on devices whose
// smallest sub-group is 8, 16 where it is 16), so there a "warp" is a sub-group of SG
// work-items and a fragment 8 x SG. Lane l holds, for rows m = 0..7 (vector components):
//   A, SG = 8:  a.s[m] = A[m][2l, 2l+1] (32 bits, lower k low); SG = 16: a.s[m] = A[m][l]
//   B:          b.s[q] = B[2q, 2q+1][l]   (q = 0..7)
//   C:          c.s[m] = C[m][l]
// The tiles are staged as above; each lane reads its fragments from local memory itself.
//   3 (xmx): the instruction (the runtime defines cl_intel_subgroup_matrix_multiply_accumulate
//     where the device has it);
//   4 (emulate-xmx): computed by the sub-group's work-items through local memory, from
//     exactly those fragments: the same kernel proven on every device.
//
// Options: -DCLG_F16_STORE or -DCLG_BF16_STORE, -DCF32=0|1, -DWARPS_M -DWARPS_N -DFM
// -DFN (even for MMA 1, 2) -DTK (a multiple of 16) -DSTAGES (2..4), -DMMA=1|2|3|4, -DSG=8|16
// (MMA 3, 4).

#if MMA <= 2
#define LANES 32   // a warp's work-items
#define FH 16      // a fragment's rows of C
#define FW 8       // and columns
#define FN_EVEN (FN % 2 == 0)   // ldmatrix.x4 loads B's fragments in pairs
#else
#define LANES SG
#define FH 8
#define FW SG
#define FN_EVEN 1
#if SG != 8 && SG != 16
#error "gemm_mma: -DSG=8 or 16 with MMA 3 or 4"
#endif
#endif
#define WTM (FM * FH)
#define WTN (FN * FW)
#define TM (WARPS_M * WTM)
#define TN (WARPS_N * WTN)
#define NT (WARPS_M * WARPS_N * LANES)   // work-items per group
#define LK (TK + 8)                   // a k-contiguous tile's row length
#define MAXI(a, b) ((a) > (b) ? (a) : (b))
#define SA MAXI(TM * LK, TK * (TM + 8))   // 16-bit values of one stage's tiles, either layout
#define SB MAXI(TN * LK, TK * (TN + 8))
#define AL (TM * TK / 8 / NT)         // 16-byte copies per work-item and tile
#define BL (TN * TK / 8 / NT)

#if TK % 16 || !FN_EVEN || AL * NT * 8 != TM * TK || BL * NT * 8 != TN * TK || AL < 1 || BL < 1 || STAGES < 2 || STAGES > 4
#error "gemm_mma: TK a multiple of 16, FN even (MMA 1, 2), 2 to 4 stages, and whole tiles copied in equal shares"
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
#if STAGES == 2
#define WAIT_ALL_BUT "0"
#elif STAGES == 3
#define WAIT_ALL_BUT "1"
#else
#define WAIT_ALL_BUT "2"
#endif
// 16 bytes from global p to local q, of which the first `bytes` are read and the rest
// zeroed (cp.async.cg: through L2 only, the copy completes asynchronously).
inline void copy16_async(__local ushort *q, __global const ushort *p, const int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"l"((ulong)q), "l"(p), "r"(bytes) : "memory");
}
// The copies issued so far form a group; wait until at most STAGES - 2 groups are pending.
#define COPIES_COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#define COPIES_WAIT() asm volatile("cp.async.wait_group " WAIT_ALL_BUT ";" ::: "memory")
// Four 8 x 8 matrices of 16-bit values from local memory (see above), this lane's row at q.
inline void ldsm4(uint r[4], __local const ushort *q, const int trans)
{
    if (trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "l"((ulong)q) : "memory");
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "l"((ulong)q) : "memory");
}
#elif MMA == 2
#define COPIES_COMMIT()
#define COPIES_WAIT()
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
// ldmatrix.x4 for the warp's FM + FN / 2 loads of one k step: every lane publishes its
// row offsets (in 16-bit values from the tile's start) in the warp's scratch `at`, then
// takes its values from the rows the other lanes named. Two barriers, called alike by
// the whole group.
inline void ldsm4_emulated(uint af[FM][4], uint bf[FN][2], __local const ushort *LA, const int oa[FM],
                           const int ta, __local const ushort *LB, const int ob[FN / 2], const int tb,
                           __local int *at, const int lane)
{
    int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < FM; i++) at[i * 32 + lane] = oa[i];
    for (int j = 0; j < FN / 2; j++) at[(FM + j) * 32 + lane] = ob[j];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int q = 0; q < FM + FN / 2; q++) {
        __local const ushort *L = q < FM ? LA : LB;
        __local const int *rows = at + q * 32;
        int trans = q < FM ? ta : tb;
        uint r[4];
        for (int m = 0; m < 4; m++) {
            int lo = trans ? rows[m * 8 + 2 * t] + g : rows[m * 8 + g] + 2 * t;
            int hi = trans ? rows[m * 8 + 2 * t + 1] + g : lo + 1;
            r[m] = (uint)L[lo] | (uint)L[hi] << 16;
        }
        if (q < FM) {
            for (int m = 0; m < 4; m++) af[q][m] = r[m];
        } else {
            int j = (q - FM) * 2;
            bf[j][0] = r[0];
            bf[j][1] = r[1];
            bf[j + 1][0] = r[2];
            bf[j + 1][1] = r[3];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#elif MMA == 3 || MMA == 4
#define COPIES_COMMIT()
#define COPIES_WAIT()
#if SG == 8
typedef uint8 afrag;     // lane l: rows 0..7's k = 2l, 2l+1
#define AS_A(x) as_int8(x)
#else
typedef ushort8 afrag;   // lane l: rows 0..7's k = l
#define AS_A(x) as_short8(x)
#endif
// Lane l's A fragment of the sub-group's rows r .. r+7 and the k step at k of a stage's
// tile (layouts of copy_tile below).
inline afrag load_a(__local const ushort *L, const int kcontig, const int r, const int k, const int l)
{
#if SG == 8
    if (!kcontig) {   // rows k+2l and k+2l+1 of the tile, 8 values each from column r
        uint8 lo = convert_uint8(vload8(0, L + (k + 2 * l) * (TM + 8) + r));
        uint8 hi = convert_uint8(vload8(0, L + (k + 2 * l + 1) * (TM + 8) + r));
        return lo | hi << 16;
    }
    uint v[8];
    for (int m = 0; m < 8; m++) v[m] = *(__local const uint *)(L + (r + m) * LK + k + 2 * l);
    return vload8(0, v);
#else
    if (!kcontig) return vload8(0, L + (k + l) * (TM + 8) + r);
    ushort v[8];
    for (int m = 0; m < 8; m++) v[m] = L[(r + m) * LK + k + l];
    return vload8(0, v);
#endif
}
// Lane l's B fragment: column c (its own) of the k step at k.
inline uint8 load_b(__local const ushort *L, const int kcontig, const int c, const int k)
{
    if (kcontig) return vload8(0, (__local const uint *)(L + c * LK + k));
    uint v[8];
    for (int q = 0; q < 8; q++) v[q] = (uint)L[(k + 2 * q) * (TN + 8) + c] | (uint)L[(k + 2 * q + 1) * (TN + 8) + c] << 16;
    return vload8(0, v);
}
#if MMA == 3
#ifndef cl_intel_subgroup_matrix_multiply_accumulate
#error "gemm_mma: MMA=3 needs cl_intel_subgroup_matrix_multiply_accumulate"
#endif
#if defined(CLG_F16_STORE)
#define XMX_STEP(d, a, b) ((d) = intel_sub_group_f16_f16_matrix_mad_k16(AS_A(a), as_int8(b), (d)))
#else
#define XMX_STEP(d, a, b) ((d) = intel_sub_group_bf16_bf16_matrix_mad_k16(AS_A(a), as_int8(b), (d)))
#endif
#else
// The sub-group's FM x FN instructions of one k step computed by its SG work-items: each
// publishes its A fragments in the sub-group's scratch s (row m of fragment i: the SG
// lanes' 32-bit values), then computes its own column of every product from them and its
// own B fragment, as the instruction defines it. Two barriers, called alike by the group.
inline void xmx_emulated_step(float8 acc[FM][FN], const afrag af[FM], const uint8 bf[FN], __local uint *s, const int l)
{
    for (int i = 0; i < FM; i++) {
#if SG == 8
        uint v[8];
#else
        ushort v[8];
#endif
        vstore8(af[i], 0, v);
        for (int m = 0; m < 8; m++) s[(i * 8 + m) * SG + l] = v[m];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = 0; j < FN; j++) {
        uint b[8];
        vstore8(bf[j], 0, b);
        for (int i = 0; i < FM; i++) {
            float c[8];
            vstore8(acc[i][j], 0, c);
            for (int m = 0; m < 8; m++) {
                __local const uint *row = s + (i * 8 + m) * SG;
                float sum = 0.0f;
                for (int k = 0; k < 16; k++) {
                    uint x = SG == 8 ? row[k >> 1] >> (k & 1) * 16 : row[k];
                    sum += H2F(x & 0xffffu) * H2F(b[k >> 1] >> (k & 1) * 16 & 0xffffu);
                }
                c[m] += sum;
            }
            acc[i][j] = vload8(0, c);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}
#endif
#else
#error "gemm_mma: -DMMA=1 (ptx), 2 (emulate), 3 (xmx) or 4 (emulate-xmx)"
#endif

// Tile copies. op(X) is R x K (rows of A, or columns of B); its tile at (r0, k0) goes to
// local L: kcontig (op(X)[r][k] = X[r * ld + k]: A not transposed, B transposed) as
// L[r * LK + k], else (X[k * ld + r]) as L[k * (R + 8) + r]. Each work-item copies n
// runs of 8 values contiguous in both; `avail` of a run lie inside the matrix.
inline ushort8 fetch8(__global const ushort *p, const int vec, const int avail)
{
    if (avail >= 8 && vec) return as_ushort8(*(__global const uint4 *)p);
    if (avail >= 8) return vload8(0, p);
    ushort x[8];
    for (int e = 0; e < 8; e++) x[e] = e < avail ? p[e] : (ushort)0;
    return vload8(0, x);
}

inline void copy_tile(__local ushort *L, const int n, const int R, __global const ushort *X, const int ld,
                      const int kcontig, const int vec, const int r0, const int RT, const int k0, const int KT,
                      const int tid)
{
    #pragma unroll
    for (int i = 0; i < n; i++) {
        int u = tid + i * NT, r, k, avail, at;
        if (kcontig) {
            r = u / (TK / 8);
            k = u % (TK / 8) * 8;
            avail = r0 + r < RT ? KT - (k0 + k) : 0;
            at = r * LK + k;
        } else {
            k = u / (R / 8);
            r = u % (R / 8) * 8;
            avail = k0 + k < KT ? RT - (r0 + r) : 0;
            at = k * (R + 8) + r;
        }
        // Past the matrix, point at its start: nothing there is read (avail <= 0).
        long from = kcontig ? (long)(r0 + r) * ld + k0 + k : (long)(k0 + k) * ld + r0 + r;
        __global const ushort *p = X + (avail > 0 ? from : 0);
#if MMA == 1
        if (vec) {
            copy16_async(L + at, p, clamp(avail, 0, 8) * 2);
            continue;
        }
#endif
        *(__local uint4 *)(L + at) = as_uint4(fetch8(p, vec, avail));
    }
}

// C[r][c] = alpha * x + beta * C[r][c] inside the matrix (beta == 0: C not read).
inline void store_c(__global CT *C, const int M, const int N, const int ldc, const int r, const int c,
                    const float alpha, const float beta, const float x)
{
    if (r < M && c < N) {
        __global CT *p = C + (long)r * ldc + c;
        float v = alpha * x;
        if (beta != 0.0f) v += beta * LOADC(p);
        STOREC(p, v);
    }
}

#if MMA == 3
#define SUB_GROUP_SIZE __attribute__((intel_reqd_sub_group_size(SG)))
#else
#define SUB_GROUP_SIZE
#endif

__kernel __attribute__((reqd_work_group_size(NT, 1, 1))) SUB_GROUP_SIZE
void gemm_mma(const int M, const int N, const int K, const int ta, const int tb,
              __global const ushort *A, const long a_off, const int lda, const long stride_a, const int a_vec,
              __global const ushort *B, const long b_off, const int ldb, const long stride_b, const int b_vec,
              __global CT *C, const long c_off, const int ldc, const long stride_c, const float alpha,
              const float beta)
{
    // uint4 arrays: 16-byte aligned rows for the copies and ldmatrix.
    __local uint4 As4[STAGES * SA / 8], Bs4[STAGES * SB / 8];
    __local ushort *As = (__local ushort *)As4, *Bs = (__local ushort *)Bs4;
#if MMA == 2
    __local float scratch[NT / 32][FM * 256 + FN * 128];   // each warp's fragments of a k step
    __local int rows_at[NT / 32][(FM + FN / 2) * 32];      // each warp's ldmatrix row offsets
#elif MMA == 4
    __local uint scratch[NT / SG][FM * 8 * SG];            // each sub-group's A fragments
#endif
    const int tid = get_local_id(0);
#if MMA == 3
    const int lane = get_sub_group_local_id(), warp = get_sub_group_id();
#else
    const int lane = (int)((uint)tid % LANES), warp = (int)((uint)tid / LANES);
#endif
    const int wm = warp / WARPS_N * WTM, wn = warp % WARPS_N * WTN;
    const int m0 = get_group_id(1) * TM, n0 = get_group_id(0) * TN;
    const long z = get_group_id(2);
    A += a_off + z * stride_a;
    B += b_off + z * stride_b;
    C += c_off + z * stride_c;
    const int ka = !ta, kb = tb;   // k-contiguous tiles

#if MMA <= 2
    const int g = lane >> 2, t = lane & 3;
    // This lane's ldmatrix rows (see above), as offsets in a stage's tile, for k step 0;
    // a k step of 16 adds dka (dkb) to them.
    int oa[FM], ob[FN / 2];
    #pragma unroll
    for (int i = 0; i < FM; i++) {
        int r = wm + i * 16;
        oa[i] = ka ? (r + (lane & 15)) * LK + (lane >> 4) * 8
                   : ((lane & 7) + (lane >> 4) * 8) * (TM + 8) + r + (lane >> 3 & 1) * 8;
    }
    #pragma unroll
    for (int j = 0; j < FN / 2; j++) {
        int c = wn + j * 16;
        ob[j] = kb ? (c + (lane & 7) + (lane >> 4) * 8) * LK + (lane >> 3 & 1) * 8
                   : ((lane & 7) + (lane >> 3 & 1) * 8) * (TN + 8) + c + (lane >> 4) * 8;
    }
    const int dka = ka ? 16 : 16 * (TM + 8), dkb = kb ? 16 : 16 * (TN + 8);

    float acc[FM][FN][4];
    #pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
#else
    float8 acc[FM][FN];
    #pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++) acc[i][j] = (float8)(0.0f);
#endif

    const int tiles = (K + TK - 1) / TK;
    for (int s = 0; s < STAGES - 1; s++) {   // the first tiles in flight
        if (s < tiles) {
            copy_tile(As + s * SA, AL, TM, A, lda, ka, a_vec, m0, M, s * TK, K, tid);
            copy_tile(Bs + s * SB, BL, TN, B, ldb, kb, b_vec, n0, N, s * TK, K, tid);
        }
        COPIES_COMMIT();
    }
    for (int kt = 0; kt < tiles; kt++) {
        COPIES_WAIT();                    // tile kt's copies are done (this work-item's) ...
        barrier(CLK_LOCAL_MEM_FENCE);     // ... and everyone's; the stage tile kt - 1 used is free
        int next = kt + STAGES - 1;
        if (next < tiles) {
            int s = next % STAGES;
            copy_tile(As + s * SA, AL, TM, A, lda, ka, a_vec, m0, M, next * TK, K, tid);
            copy_tile(Bs + s * SB, BL, TN, B, ldb, kb, b_vec, n0, N, next * TK, K, tid);
        }
        COPIES_COMMIT();
        __local const ushort *LA = As + kt % STAGES * SA, *LB = Bs + kt % STAGES * SB;
        // Emulated: the k steps as a loop, which halves POCL's compile of the largest
        // block (4.7 -> 2.4 s; each step's four barriers are code to copy per step).
#if MMA == 1 || MMA == 3
        #pragma unroll
#else
        #pragma unroll 1
#endif
        for (int ks = 0; ks < TK / 16; ks++) {
#if MMA <= 2
            uint af[FM][4], bf[FN][2];
#endif
#if MMA == 1
            #pragma unroll
            for (int i = 0; i < FM; i++) ldsm4(af[i], LA + oa[i] + ks * dka, !ka);
            #pragma unroll
            for (int j = 0; j < FN / 2; j++) {
                uint r[4];
                ldsm4(r, LB + ob[j] + ks * dkb, !kb);
                bf[2 * j][0] = r[0];
                bf[2 * j][1] = r[1];
                bf[2 * j + 1][0] = r[2];
                bf[2 * j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < FM; i++)
#pragma unroll
                for (int j = 0; j < FN; j++) MMA_STEP(acc[i][j], af[i], bf[j]);
#elif MMA == 2
            int pa[FM], pb[FN / 2];
            for (int i = 0; i < FM; i++) pa[i] = oa[i] + ks * dka;
            for (int j = 0; j < FN / 2; j++) pb[j] = ob[j] + ks * dkb;
            ldsm4_emulated(af, bf, LA, pa, !ka, LB, pb, !kb, rows_at[warp], lane);
            mma_emulated_step(acc, af, bf, scratch[warp], lane);
#else
            afrag af[FM];
            uint8 bf[FN];
            #pragma unroll
            for (int i = 0; i < FM; i++) af[i] = load_a(LA, ka, wm + i * 8, ks * 16, lane);
            #pragma unroll
            for (int j = 0; j < FN; j++) bf[j] = load_b(LB, kb, wn + j * SG + lane, ks * 16);
#if MMA == 3
#pragma unroll
            for (int i = 0; i < FM; i++)
#pragma unroll
                for (int j = 0; j < FN; j++) XMX_STEP(acc[i][j], af[i], bf[j]);
#else
            xmx_emulated_step(acc, af, bf, scratch[warp], lane);
#endif
#endif
        }
    }

#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++) {
#if MMA <= 2
#pragma unroll
            for (int e = 0; e < 4; e++)
                store_c(C, M, N, ldc, m0 + wm + i * 16 + g + (e >> 1) * 8, n0 + wn + j * 8 + 2 * t + (e & 1), alpha,
                        beta, acc[i][j][e]);
#else
            float v8[8];
            vstore8(acc[i][j], 0, v8);
#pragma unroll
            for (int e = 0; e < 8; e++)
                store_c(C, M, N, ldc, m0 + wm + i * 8 + e, n0 + wn + j * SG + lane, alpha, beta, v8[e]);
#endif
        }
}
