// gemm_tiled.cl: clgrad's matrix product for GPU-shaped devices, whose work-items are
// SIMD lanes (GPUs, Mesa's llvmpipe); see src/gemm/tiled.c.
//
// C = alpha * op(A) * op(B) + beta * C. A work-group of RN x RM work-items computes a
// TM x TN block of C: it steps over k in tiles of TK, each step staging op(A)'s TM x TK
// and op(B)'s TK x TN tiles in local memory (loaded by the whole group, VW elements at a
// time along the operand's contiguous direction), then every work-item multiplies WM
// rows by WN columns of them into WM accumulator vectors of WN held in registers.
// An item's WN columns are consecutive (one vector read of local memory per k); its WM
// rows are RM apart (MAP 0: neighbouring items read neighbouring words) or consecutive
// (MAP 1: one vector read per k too).
//
// WIDE (float only): local memory is read two floats per 64-bit word. On llvmpipe every
// work-item's load is a scalar loop over the SIMD lanes, per component, whatever its
// address: the product is bound by the number of loads, which this halves. Rows are
// then read as vectors, so WIDE needs MAP 1.
//
// One program per configuration serves all four transpose cases (ta, tb are arguments:
// a branch taken alike by the whole group), every size (tiles that overhang the matrix
// load zeros, and results outside it are not stored), offsets, leading dimensions and
// batch strides (0: one matrix shared by the batch; the batch is the third dimension of
// the launch). beta == 0 writes C without reading it. has_bias adds bias[bias_off + j] to
// every row's column j after beta's term (a linear layer's bias: no pass of its own), and
// relu stores the ReLU of the result (a linear layer followed by ReLU).
//
// DBUF (not with WIDE): two local tiles of each operand, and the next k-tile fetched into
// registers while the current one is multiplied, stored to the other tile after the
// multiply: the global loads' latency hidden behind the arithmetic, one barrier per step
// instead of two (a GPU's classic double buffering; the local tiles take twice the room).
//
// ROWS (src/gemm/tiled.c, clg__gemm_rows and clg__gemm_sum): B's stored rows start at
// offsets read from b_rows (a convolution's padded input read shifted: implicit GEMM, no
// column matrix; src/tensor/conv_shift.c), C optionally written as a grid of cells (the
// shifted product's outputs cropped as they are stored) with a bias per row of C.
//
// Options: -DT=float|double -DTM -DTN -DTK -DWM=1|2|4|8|16 -DWN=1|2|4|8|16 -DVW=1|2|4|8
// -DMAP=0|1 -DWIDE=0|1 -DDBUF=0|1 -DROWS=0|1 -DLPAD (the local tiles' row padding). The local tiles,
// TK x (TM + LPAD) and TK x (TN + LPAD) elements, are the kernel's own arrays, not
// arguments: a __local T * argument is only promised T's alignment, and WIDE's 64-bit
// accesses to it faulted on NVIDIA's driver (580, H100: a misaligned address that ended
// the context); an array of ulong is 8-byte aligned by its type.

#define RM (TM / WM)              // work-items along m
#define RN (TN / WN)              // work-items along n
#define NT (RM * RN)              // work-items per group
#define LA (TM + LPAD)            // local row length of A's tile ([TK][LA])
#define LB (TN + LPAD)

#if TM % WM || TN % WN || TK % VW || TM % VW || TN % VW
#error "gemm_tiled: TM, TN must be multiples of WM, WN, and TK, TM, TN of VW"
#endif
#if (TM * TK / VW) % NT || (TN * TK / VW) % NT
#error "gemm_tiled: the group must load whole tiles in equal shares"
#endif
#if WIDE && (MAP != 1 || WM % 2 || WN % 2 || LPAD % 2 || VW < 2 || VW > 8 || (TM / 2 * TK / VW) % NT || (TN / 2 * TK / VW) % NT)
#error "gemm_tiled: WIDE moves pairs: MAP 1, even WM, WN, LPAD, VW >= 2, whole tiles of row pairs per group"
#endif

#ifndef DBUF
#define DBUF 0
#endif
#if DBUF && WIDE
#error "gemm_tiled: DBUF stages tiles in registers as elements, not pairs: no WIDE"
#endif

#ifndef ROWS
#define ROWS 0
#endif
// Where stored row `row` of an operand starts: row * ld, or (ROWS, B only: xr non-null)
// at xr[row]. Read only for rows inside the operand.
#if ROWS
#define ROW_AT(xr, row, ld) ((xr) ? (long)(xr)[row] : (long)(row) * (ld))
#else
#define ROW_AT(xr, row, ld) ((long)(row) * (ld))
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

// Vectors of n elements from local memory (pairs as 64-bit words when WIDE).
#if WIDE
#define LV2(p) as_float2(*(__local const ulong *)(p))
#define LV4(p) as_float4(vload2(0, (__local const ulong *)(p)))
#define LV8(p) as_float8(vload4(0, (__local const ulong *)(p)))
#define LV16(p) as_float16(vload8(0, (__local const ulong *)(p)))
#else
#define LV2(p) vload2(0, p)
#define LV4(p) vload4(0, p)
#define LV8(p) vload8(0, p)
#define LV16(p) vload16(0, p)
#endif
#define LV1(p) (*(p))

#if WN == 1
#define TWN T
#define VSTOREN(v, p) (*(p) = (v))
#define VLOADN(p) (*(p))
#else
#define TWN CAT(T, WN)
#define VSTOREN(v, p) CAT(vstore, WN)(v, 0, p)
#define VLOADN(p) CAT(vload, WN)(0, p)
#endif
#define LOADB(p) CAT(LV, WN)(p)

#if WM == 1
#define TWM T
#define COMP(v, i) (v)
#else
#define TWM CAT(T, WM)
#define COMP(v, i) (v).CAT(s, i)
#endif
#define LOADA(p) CAT(LV, WM)(p)

// The WM rows of a work-item, named by hex digits (for vector components).
#define ROWS_1(X) X(0)
#define ROWS_2(X) X(0) X(1)
#define ROWS_4(X) ROWS_2(X) X(2) X(3)
#define ROWS_8(X) ROWS_4(X) X(4) X(5) X(6) X(7)
#define ROWS_16(X) ROWS_8(X) X(8) X(9) X(a) X(b) X(c) X(d) X(e) X(f)
#define FOR_ROWS CAT(ROWS_, WM)

#if MAP == 0
#define ROW(i) (ty + (i) * RM)
#else
#define ROW(i) (ty * WM + (i))
#endif

// One R x TK tile of an operand into L[kk * LS + r] for r < R, kk < TK (k-major, so
// that the product reads a row of the tile per k). op(X)[r][k] is X[r * ld + k] when
// kcontig (A not transposed, B transposed), else X[k * ld + r]; r0, k0: the tile's
// corner in op(X); RT, KT: op(X)'s rows and depth, past which the tile holds zeros.
// full: the tile lies wholly inside (no checks).
#if !WIDE
inline void load_tile(__local T *L, const int LS, const int R, __global const T *X, const int ld,
                      __global const int *xr, const int kcontig, const int r0, const int RT, const int k0, const int KT, const bool full,
                      const bool pairs, const int tid)
{
    (void)pairs;
    if (kcontig) {
        const int per_row = TK / VW;
        for (int v = tid; v < R * per_row; v += NT) {
            int r = v / per_row, kk = v % per_row * VW;
            int gr = r0 + r, gk = k0 + kk;
            __global const T *p = X + (full || gr < RT ? ROW_AT(xr, gr, ld) : 0) + gk;
            T x[VW];
            if (full) {
#if VW == 1
                x[0] = *p;
#else
                CAT(vstore, VW)(CAT(vload, VW)(0, p), 0, x);
#endif
            } else {
                for (int e = 0; e < VW; e++) x[e] = gr < RT && gk + e < KT ? p[e] : (T)0;
            }
            for (int e = 0; e < VW; e++) L[(kk + e) * LS + r] = x[e];
        }
    } else {
        const int per_k = R / VW;
        for (int v = tid; v < TK * per_k; v += NT) {
            int kk = v / per_k, r = v % per_k * VW;
            int gr = r0 + r, gk = k0 + kk;
            __global const T *p = X + (full || gk < KT ? ROW_AT(xr, gk, ld) : 0) + gr;
            __local T *l = L + kk * LS + r;
            if (full) {
#if VW == 1
                *l = *p;
#else
                CAT(vstore, VW)(CAT(vload, VW)(0, p), 0, l);
#endif
            } else {
                for (int e = 0; e < VW; e++) l[e] = gk < KT && gr + e < RT ? p[e] : (T)0;
            }
        }
    }
}
#else
// WIDE: every access moves a pair of floats as one 64-bit word: local stores always
// (the tiles' rows have even lengths), global loads when `pairs` says X's rows start
// on even elements. A work-item of the kcontig case takes two rows, to store pairs.
#if VW == 2
#define GPAIRS(p) (*(__global const ulong *)(p))          // VW / 2 words from global memory
#define LPAIRS(v, l) (*(l) = (v))                         // ... into local memory
#define AS_PAIRS(x) as_ulong(x)                           // VW floats as VW / 2 words
#elif VW == 4
#define GPAIRS(p) vload2(0, (__global const ulong *)(p))
#define LPAIRS(v, l) vstore2(v, 0, l)
#define AS_PAIRS(x) as_ulong2(x)
#else
#define GPAIRS(p) vload4(0, (__global const ulong *)(p))
#define LPAIRS(v, l) vstore4(v, 0, l)
#define AS_PAIRS(x) as_ulong4(x)
#endif
#define GW(p) CAT(as_float, VW)(GPAIRS(p))
#define LPAIR(l, x0, x1) (*(__local ulong *)(l) = as_ulong((float2)((x0), (x1))))
inline void load_tile(__local T *L, const int LS, const int R, __global const T *X, const int ld,
                      __global const int *xr, const int kcontig, const int r0, const int RT, const int k0, const int KT, const bool full,
                      const bool pairs, const int tid)
{
    if (kcontig) {
        const int per_row = TK / VW;
        for (int v = tid; v < R / 2 * per_row; v += NT) {
            int r = v / per_row * 2, kk = v % per_row * VW;
            int gr = r0 + r, gk = k0 + kk;
            __global const T *p = X + (full || gr < RT ? ROW_AT(xr, gr, ld) : 0) + gk;
            __global const T *p1 = X + (full || gr + 1 < RT ? ROW_AT(xr, gr + 1, ld) : 0) + gk;
            T x0[VW], x1[VW];
            if (full && pairs) {
                CAT(vstore, VW)(GW(p), 0, x0);
                CAT(vstore, VW)(GW(p1), 0, x1);
            } else if (full) {
                CAT(vstore, VW)(CAT(vload, VW)(0, p), 0, x0);
                CAT(vstore, VW)(CAT(vload, VW)(0, p1), 0, x1);
            } else {
                for (int e = 0; e < VW; e++) {
                    x0[e] = gr < RT && gk + e < KT ? p[e] : (T)0;
                    x1[e] = gr + 1 < RT && gk + e < KT ? p1[e] : (T)0;
                }
            }
            for (int e = 0; e < VW; e++) LPAIR(L + (kk + e) * LS + r, x0[e], x1[e]);
        }
    } else {
        const int per_k = R / VW;
        for (int v = tid; v < TK * per_k; v += NT) {
            int kk = v / per_k, r = v % per_k * VW;
            int gr = r0 + r, gk = k0 + kk;
            __global const T *p = X + (full || gk < KT ? ROW_AT(xr, gk, ld) : 0) + gr;
            __local ulong *l = (__local ulong *)(L + kk * LS + r);
            if (full && pairs) {
                LPAIRS(GPAIRS(p), l);
            } else if (full) {
                LPAIRS(AS_PAIRS(CAT(vload, VW)(0, p)), l);
            } else {
                T x[VW];
                for (int e = 0; e < VW; e++) x[e] = gk < KT && gr + e < RT ? p[e] : (T)0;
                for (int e = 0; e < VW; e += 2) l[e / 2] = as_ulong((float2)(x[e], x[e + 1]));
            }
        }
    }
}
#endif

#if DBUF
// load_tile in two halves: each work-item's share of a tile (P vectors of VW) from global
// memory into registers x, and later from x into the local tile, as load_tile places it.
#define PA (TM * TK / VW / NT)
#define PB (TN * TK / VW / NT)
inline void fetch_tile(T *x, const int P, const int R, __global const T *X, const int ld,
                       __global const int *xr, const int kcontig, const int r0, const int RT, const int k0, const int KT, const bool full, const int tid)
{
    for (int q = 0; q < P; q++) {
        int v = tid + q * NT, gr, gk;
        if (kcontig) {
            gr = r0 + v / (TK / VW);
            gk = k0 + v % (TK / VW) * VW;
        } else {
            gk = k0 + v / (R / VW);
            gr = r0 + v % (R / VW) * VW;
        }
        const bool in = full || (kcontig ? gr < RT : gk < KT);   // the stored row exists
        __global const T *p = X + (in ? ROW_AT(xr, kcontig ? gr : gk, ld) : 0) + (kcontig ? gk : gr);
        if (full) {
#if VW == 1
            x[q] = *p;
#else
            CAT(vstore, VW)(CAT(vload, VW)(0, p), 0, x + q * VW);
#endif
        } else {
            for (int e = 0; e < VW; e++)
                x[q * VW + e] = (kcontig ? gr < RT && gk + e < KT : gk < KT && gr + e < RT) ? p[e] : (T)0;
        }
    }
}

inline void put_tile(__local T *L, const int LS, const int P, const int R, const T *x, const int kcontig,
                     const int tid)
{
    for (int q = 0; q < P; q++) {
        int v = tid + q * NT;
        if (kcontig) {
            int r = v / (TK / VW), kk = v % (TK / VW) * VW;
            for (int e = 0; e < VW; e++) L[(kk + e) * LS + r] = x[q * VW + e];
        } else {
            int kk = v / (R / VW), r = v % (R / VW) * VW;
            for (int e = 0; e < VW; e++) L[kk * LS + r + e] = x[q * VW + e];
        }
    }
}
#endif

// One row of results: alpha * acc + beta * C (+ the column bias bv where has_bias; then
// its ReLU where relu, as relu.cl computes it: NaN and -0 kept) into up to WN columns
// (ncols of them in C; bv's past them unread).
inline void store_row(__global T *c, const int ncols, const TWN acc, const T alpha, const T beta,
                      __global const T *bv, const int has_bias, const int relu)
{
    if (ncols >= WN) {
        TWN r = alpha * acc;
        if (beta != (T)0) r += beta * VLOADN(c);
        if (has_bias) r += VLOADN(bv);
        if (relu) r = select(r, (TWN)0, r < (TWN)0);
        VSTOREN(r, c);
        return;
    }
    T tmp[WN];
    VSTOREN(alpha * acc, tmp);
    for (int j = 0; j < ncols; j++) {
        T r = beta != (T)0 ? tmp[j] + beta * c[j] : tmp[j];
        if (has_bias) r += bv[j];
        c[j] = relu && r < (T)0 ? (T)0 : r;
    }
}

#if ROWS
// One row's results into C as a grid (src/gemm/gemm.h, clg_gemm_grid; cg as gemm.cl's
// store_grid reads it): column j is cell (r, c) of slot s, kept where r < cg.s2 and
// c < cg.s3 and stored at row_at + s * cg.s4 + r * cg.s3 + c; beta's term, then rb.
inline void store_grid(__global T *C, const long row_at, const int j, const int ncols, const TWN acc, const T alpha,
                       const T beta, const T rb, const int8 cg)
{
    T tmp[WN];
    VSTOREN(alpha * acc, tmp);
    int s = j / cg.s0, rem = j - s * cg.s0, r = rem / cg.s1, c = rem - r * cg.s1;
    for (int t = 0; t < min(ncols, WN); t++) {
        if (r < cg.s2 && c < cg.s3) {
            __global T *at = C + row_at + (long)s * cg.s4 + r * cg.s3 + c;
            *at = (beta != (T)0 ? tmp[t] + beta * *at : tmp[t]) + rb;
        }
        if (++c == cg.s1) {
            c = 0;
            if (++r == cg.s5) r = 0, s++;
        }
    }
}
#endif

#define DECL(i) TWN CAT(acc, i) = (TWN)0;
#if MAP == 0
#define FMA(i) CAT(acc, i) = mad((TWN)(As[kk * LA + ROW(0x##i)]), bv, CAT(acc, i));
#else
#define FMA(i) CAT(acc, i) = mad((TWN)(COMP(av, i)), bv, CAT(acc, i));
#endif
#define STORE_ROW(i)                                                                  \
    store_row(C + (long)(i0 + ROW(0x##i)) * ldc + jc, N - jc, CAT(acc, i), alpha, beta, bias + bias_off + jc, has_bias, \
              relu);
#if ROWS
// cg.s6: C as a grid; cg.s7: row i's bias rbias[rbias_off + i * rbias_step] (grid only)
#define STORE_GRID(i)                                                                                      \
    store_grid(C, (long)(i0 + ROW(0x##i)) * ldc, jc, N - jc, CAT(acc, i), alpha, beta,                      \
               cg.s7 ? rbias[rbias_off + (long)(i0 + ROW(0x##i)) * rbias_step] : (T)0, cg);
#define STORE(i)                                                                      \
    if (i0 + ROW(0x##i) < M && jc < N) {                                              \
        if (cg.s6) { STORE_GRID(i) } else { STORE_ROW(i) }                            \
    }
#else
#define STORE(i)                                                                      \
    if (i0 + ROW(0x##i) < M && jc < N) { STORE_ROW(i) }
#endif

__kernel __attribute__((reqd_work_group_size(RN, RM, 1)))
void gemm_tiled(const int M, const int N, const int K, const int ta, const int tb,
                __global const T *A, const long a_off, const int lda, const long a_stride,
                __global const T *B, const long b_off, const int ldb, const long b_stride,
                __global T *C, const long c_off, const int ldc, const long c_stride,
                const T alpha, const T beta, __global const T *bias, const long bias_off, const int has_bias,
                const int relu
#if ROWS
                , __global const int *b_rows, const int rows_off, const int8 cg, __global const T *rbias,
                const long rbias_off, const int rbias_step
#endif
                )
{
#if WIDE
    __local ulong As_[TK * LA / 2], Bs_[TK * LB / 2];   // LA, LB even with WIDE
    __local T *As = (__local T *)As_, *Bs = (__local T *)Bs_;
#elif DBUF
    __local T As2[2 * TK * LA], Bs2[2 * TK * LB];
#else
    __local T As[TK * LA], Bs[TK * LB];
#endif
    const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * RN + tx;
    const int j0 = get_group_id(0) * TN, i0 = get_group_id(1) * TM;
    const long b = get_group_id(2);
    A += a_off + b * a_stride;
    B += b_off + b * b_stride;
    C += c_off + b * c_stride;

    FOR_ROWS(DECL)
    const bool rows_in = i0 + TM <= M, cols_in = j0 + TN <= N;
    // Rows of A and B start on even elements (pairs of floats are 64-bit aligned).
    const bool a_pairs = ((a_off + b * a_stride) & 1) == 0 && (lda & 1) == 0;
#if ROWS
    // B's rows from rows_off on in b_rows, each from B (b_off + b * b_stride) on: odd
    // starts, so no pairs.
    __global const int *br = b_rows + rows_off;
    const bool b_pairs = false;
#else
    __global const int *br = 0;
    const bool b_pairs = ((b_off + b * b_stride) & 1) == 0 && (ldb & 1) == 0;
#endif
#define MULTIPLY_TILE                                           \
    for (int kk = 0; kk < TK; kk++) {                           \
        const TWN bv = LOADB(Bs + kk * LB + tx * WN);           \
        LOAD_AV                                                 \
        FOR_ROWS(FMA)                                           \
    }
#if MAP == 1
#define LOAD_AV const TWM av = LOADA(As + kk * LA + ty * WM);
#else
#define LOAD_AV
#endif
#if DBUF
    // Step s multiplies tile s % 2 while tile s + 1 arrives in registers, then stores it
    // to the other tile (whose last readers passed step s - 1's barrier).
    T xa[PA * VW], xb[PB * VW];
    fetch_tile(xa, PA, TM, A, lda, 0, !ta, i0, M, 0, K, rows_in && TK <= K, tid);
    fetch_tile(xb, PB, TN, B, ldb, br, tb, j0, N, 0, K, cols_in && TK <= K, tid);
    put_tile(As2, LA, PA, TM, xa, !ta, tid);
    put_tile(Bs2, LB, PB, TN, xb, tb, tid);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k0 = 0, cur = 0; k0 < K; k0 += TK, cur ^= 1) {
        const int k1 = k0 + TK;
        const bool more = k1 < K, k_in = k1 + TK <= K;
        if (more) {
            fetch_tile(xa, PA, TM, A, lda, 0, !ta, i0, M, k1, K, rows_in && k_in, tid);
            fetch_tile(xb, PB, TN, B, ldb, br, tb, j0, N, k1, K, cols_in && k_in, tid);
        }
        __local const T *As = As2 + cur * (TK * LA), *Bs = Bs2 + cur * (TK * LB);
        MULTIPLY_TILE
        if (more) {
            put_tile(As2 + (cur ^ 1) * (TK * LA), LA, PA, TM, xa, !ta, tid);
            put_tile(Bs2 + (cur ^ 1) * (TK * LB), LB, PB, TN, xb, tb, tid);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    (void)a_pairs, (void)b_pairs;
#else
    for (int k0 = 0; k0 < K; k0 += TK) {
        const bool k_in = k0 + TK <= K;
        load_tile(As, LA, TM, A, lda, 0, !ta, i0, M, k0, K, rows_in && k_in, a_pairs, tid);
        load_tile(Bs, LB, TN, B, ldb, br, tb, j0, N, k0, K, cols_in && k_in, b_pairs, tid);
        barrier(CLK_LOCAL_MEM_FENCE);
        MULTIPLY_TILE
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif

    const int jc = j0 + tx * WN;
    FOR_ROWS(STORE)
}
