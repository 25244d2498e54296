// gemm.cl: clgrad's matrix product for CPU devices (POCL); see src/gemm/packed.c.
//
// C = alpha * op(A) * op(B) + beta * C runs in two steps, the way BLAS libraries for CPUs
// work (GotoBLAS / BLIS):
//   1. gemm_pack copies op(A) into panels of MR rows and op(B) into panels of NR columns,
//      each panel stored k-major ([k][MR] and [k][NR]) and zero-padded to whole panels.
//      This turns all four transpose cases into one layout, so the micro-kernel is one
//      kernel, and makes its loads contiguous (no strided rows that alias in the caches).
//      A row-major B is the exception: its rows of NR columns are already contiguous, so
//      gemm_tiles reads its whole panels in place (unless the rows alias, src/gemm/packed.c).
//   2. gemm_tiles: each work-item owns a block of PI x PJ micro-tiles of MR x NR results
//      and computes each one in registers: per k, one vector load of NR values of B, MR
//      broadcasts of A, MR fused multiply-adds. MR = 6, NR = 16 floats are 12 AVX2
//      registers of accumulators (the 6x16 kernel of OpenBLAS / BLIS for Haswell-class
//      cores); doubles use NR = 8.
// Work-groups are one work-item: POCL then runs each group as straight code, with no
// work-item loop to vectorize across, and spreads groups over the cores.
//
// Options: -DT=float|double -DMR=6 -DNR=16|8, and for 16-bit storage (issue 17)
// -DT=float with -DCLG_F16_STORE or -DCLG_BF16_STORE (common.cl): A, B and C are then
// float16 or bfloat16 (TS), packed panels and sums float32, each result rounded once.

#ifndef MR
#define MR 6
#endif
#ifndef NR
#define NR 16
#endif

#if MR != 6
#error "gemm_tiles holds six rows of accumulators: MR must be 6"
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define TN CAT(T, NR)           // float16: one row of a micro-tile
#define VLOAD CAT(vload, NR)
#define VSTORE CAT(vstore, NR)

// NR (LOADN, STOREN) or DW (LOADW) consecutive values of storage as T: for 16-bit
// storage, the bits through common.cl's float16 conversions or bfloat16's shifts;
// otherwise plain vector loads and stores.
#if defined(CLG_F16_STORE)
CLG_F16_CONVERSIONS(16, uint16, float16)
#define WIDEN16(u) clg_h2f16(convert_uint16(u))
#define LOADN(p) CAT(clg_h2f, NR)(CAT(convert_uint, NR)(VLOAD(0, (p))))
#define STOREN(v, p) VSTORE(CAT(convert_ushort, NR)(CAT(clg_f2h, NR)(v)), 0, (p))
#define LOADW(p) CAT(clg_h2f, DW)(CAT(convert_uint, DW)(CAT(vload, DW)(0, (p))))
#elif defined(CLG_BF16_STORE)
#define BF16_WIDEN(u, n) CAT(as_float, n)(CAT(convert_uint, n)(u) << 16)
#define WIDEN16(u) BF16_WIDEN(u, 16)
#define LOADN(p) BF16_WIDEN(VLOAD(0, (p)), NR)
#define STOREN(v, p) VSTORE(bf16_bits_n(v), 0, (p))
#define LOADW(p) BF16_WIDEN(CAT(vload, DW)(0, (p)), DW)
// clg_bf16_bits (common.cl) on NR lanes at once.
inline CAT(ushort, NR) bf16_bits_n(TN v)
{
    CAT(uint, NR) x = CAT(as_uint, NR)(v);
    CAT(uint, NR) r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    r = select(r, (x >> 16) | 0x40u, (x & 0x7fffffffu) > 0x7f800000u);
    return CAT(convert_ushort, NR)(r);
}
#else
#define WIDEN16(v) (v)
#define LOADN(p) VLOAD(0, (p))
#define STOREN(v, p) VSTORE((v), 0, (p))
#define LOADW(p) CAT(vload, DW)(0, (p))
#endif

// C's storage: TS, or T with -DCLG_C_F32 (16-bit A and B, a float32 result: the
// per-image products of a convolution's weight gradient, summed over the batch after,
// src/tensor/conv.c, so that nothing is rounded to 16 bits before that sum).
#ifdef CLG_C_F32
#define TC T
#define LOADCN(p) VLOAD(0, (p))
#define STORECN(v, p) VSTORE((v), 0, (p))
#define LDC(p, i) ((p)[i])
#define STC(p, i, v) ((p)[i] = (v))
#else
#define TC TS
#define LOADCN(p) LOADN(p)
#define STORECN(v, p) STOREN(v, p)
#define LDC(p, i) CLG_LD(p, i)
#define STC(p, i, v) CLG_ST(p, i, v)
#endif

// Pack a matrix X, whose op(X) has P rows ("panel" side: m for A, n for B) and depth K,
// into panels of W rows: dst[(p / W * K + kk) * W + p % W] per batch, rows p >= P zero.
// pmajor: op(X)'s (p, kk) is src[p * ld + kk] (A not transposed, B transposed), else
// src[kk * ld + p]. Work-item (panel, chunk, batch) packs PACK_KC steps of k of one panel,
// reading the source along its contiguous direction: a few hundred items of real work,
// where one item per element would cost POCL more in scheduling than in copying.
#define PACK_KC 256
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void gemm_pack(__global const TS *src, const long src_off, const int ld, const long src_stride,
               const int P, const int K, const int pmajor, const int W, __global T *dst,
               const long dst_stride)
{
    int panel = get_global_id(0), k0 = get_global_id(1) * PACK_KC, b = get_global_id(2);
    int p0 = panel * W, k1 = min(K, k0 + PACK_KC), rows = min(W, P - p0);
    __global const TS *s = src + src_off + b * src_stride;
    __global T *d = dst + b * dst_stride + (long)panel * K * W;
    if (pmajor && W == 16 && rows == 16) {  // a whole panel of 16: one vector store per k
        __global const TS *r0 = s + (long)p0 * ld;
#define ROWK(r) r0[(long)(r) * ld + kk]
        for (int kk = k0; kk < k1; kk++)   // 16-bit values gathered as stored, converted at once
            vstore16(WIDEN16((CAT(TS, 16))(ROWK(0), ROWK(1), ROWK(2), ROWK(3), ROWK(4), ROWK(5), ROWK(6), ROWK(7),
                                           ROWK(8), ROWK(9), ROWK(10), ROWK(11), ROWK(12), ROWK(13), ROWK(14), ROWK(15))),
                     kk, d);
#undef ROWK
    } else if (pmajor) {
        for (int r = 0; r < W; r++) {
            __global const TS *sr = s + (long)(p0 + min(r, rows - 1)) * ld;
            T keep = r < rows ? (T)1 : (T)0;  // rows past P: zeros, with no branch in the loop
            for (int kk = k0; kk < k1; kk++) d[kk * W + r] = keep * CLG_LD(sr, kk);
        }
    } else if (W == NR && rows == NR) {  // a whole panel of B: one vector per k
        for (int kk = k0; kk < k1; kk++) VSTORE(LOADN(s + (long)kk * ld + p0), kk, d);
    } else {
        for (int kk = k0; kk < k1; kk++) {
            __global const TS *sr = s + (long)kk * ld + p0;
            for (int r = 0; r < W; r++) d[kk * W + r] = r < rows ? CLG_LD(sr, r) : (T)0;
        }
    }
}

// C = beta * C over M x N per batch (beta == 0 writes zeros without reading C).
__kernel void gemm_scale(const int M, const int N, __global TC *C, const long c_off, const int ldc,
                         const long c_stride, const T beta)
{
    int j = get_global_id(0), i = get_global_id(1), b = get_global_id(2);
    if (i >= M || j >= N) return;
    __global TC *c = C + c_off + b * c_stride + (long)i * ldc + j;
    STC(c, 0, beta == (T)0 ? (T)0 : beta * LDC(c, 0));
}

// C = alpha * (P[0] + ... + P[parts-1]) + beta * C (beta == 0 writes without reading C)
// + bias[bias_off + j] where has_bias: the end of a product split over k
// (src/gemm/splitk.c), P the slices' float32 products, m x n each, compact. The slices
// are summed in order, one work-item per element of C; parts is at most 64 (splitk.c).
// Float32 only.
__kernel void gemm_split_sum(const int M, const int N, const int parts, __global const float *P, __global TC *C,
                             const long c_off, const int ldc, const T alpha, const T beta, __global const TC *bias,
                             const long bias_off, const int has_bias, const int relu)
{
    int j = get_global_id(0), i = get_global_id(1);
    if (i >= M || j >= N) return;
    long mn = (long)M * N, at = (long)i * N + j;
    float s = 0;
    for (int p = 0; p < parts; p++) s += P[p * mn + at];
    __global TC *c = C + c_off + (long)i * ldc + j;
    T r = beta == (T)0 ? alpha * s : alpha * s + beta * LDC(c, 0);
    if (has_bias) r += LDC(bias, bias_off + j);
    STC(c, 0, relu && r < (T)0 ? (T)0 : r);   // relu.cl's ReLU (NaN and -0 kept)
}

// C = relu(C) over m x n of every batch entry, as relu.cl computes it (NaN and -0 kept):
// clg_gemm_args.relu for the engines that do not apply it as they store (src/gemm/dispatch.c).
__kernel void gemm_relu(const int M, const int N, __global TC *C, const long c_off, const int ldc,
                        const long c_stride)
{
    int j = get_global_id(0), i = get_global_id(1), b = get_global_id(2);
    if (i >= M || j >= N) return;
    __global TC *c = C + c_off + b * c_stride + (long)i * ldc + j;
    T v = LDC(c, 0);
    if (v < (T)0) STC(c, 0, (T)0);
}

// C = bias (add 0) or C + bias (add 1), bias[bias_off + j] on every row of every batch
// entry: a product's column bias for the engines that do not add it as they store
// (src/gemm/dispatch.c): C filled before a product then run with beta 1, or the bias
// added after one with beta's own term.
__kernel void gemm_col_bias(const int M, const int N, __global TC *C, const long c_off, const int ldc,
                            const long c_stride, __global const TC *bias, const long bias_off, const int add)
{
    int j = get_global_id(0), i = get_global_id(1), b = get_global_id(2);
    if (i >= M || j >= N) return;
    __global TC *c = C + c_off + b * c_stride + (long)i * ldc + j;
    T v = LDC(bias, bias_off + j);
    STC(c, 0, add ? LDC(c, 0) + v : v);
}

// What is stored: the result, or (-DCLG_EPI_RELU, built only by a captured graph's plan,
// src/device/capture_plan.c) its ReLU, exactly as unary.cl's relu computes it (NaN and
// -0 kept), so that the fused step gives the bits of GEMM then ReLU.
#ifdef CLG_EPI_RELU
#define EPI(v) ((v) < (T)0 ? (T)0 : (v))
#define EPI_V(v) select((v), (TN)0, (v) < (TN)0)
#else
#define EPI(v) (v)
#define EPI_V(v) (v)
#endif

// Row r of a micro-tile: acc += a[r] * b, and writing it back to C.
#define FMA_ROW(r) c##r = CLG_MAD((TN)(a[r]), bv, c##r)
#define STORE_ROW(r) store_row(C, c_off + (long)(i0 + r) * ldc + j0, N - j0, c##r, alpha, beta, i0 + r < M)

// One row of results: alpha * acc + beta * C into up to NR columns (ncols of them valid).
inline void store_row(__global TC *C, const long at, const int ncols, const TN acc, const T alpha,
                      const T beta, const bool valid)
{
    if (!valid) return;
    if (ncols >= NR) {
        TN r = alpha * acc;
        if (beta != (T)0) r += beta * LOADCN(C + at);
        STORECN(EPI_V(r), C + at);
        return;
    }
    T tmp[NR];
    VSTORE(alpha * acc, 0, tmp);
    for (int j = 0; j < ncols; j++) {
        T r = beta != (T)0 ? tmp[j] + beta * LDC(C, at + j) : tmp[j];
        STC(C, at + j, EPI(r));
    }
}

// Work-item (bj, bi, b) computes micro-tiles q in [bj*PJ, bj*PJ+PJ) x p in [bi*PI, bi*PI+PI)
// of batch b. Ap: packed A panels ([MR] per k). B's NR columns of step k of panel q are
// at Bp + bp_off + q * bp_panel + k * bp_k: packed panels (bp_panel = K * NR, bp_k = NR),
// or, for a row-major B whose N is whole panels, B itself read in place (bp_panel = NR,
// bp_k = ldb): its rows of NR columns are contiguous already, and packing them would be
// one more pass over B (the 40 MB column matrix of a CNN's convolution).
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void gemm_tiles(const int M, const int N, const int K, const int PI, const int PJ,
                __global const T *Ap, const long ap_stride, __global const T *Bp, const long bp_off,
                const long bp_stride, const long bp_panel, const int bp_k,
                __global TC *C, const long c_off0, const int ldc, const long c_stride,
                const T alpha, const T beta)
{
    int bj = get_global_id(0), bi = get_global_id(1), b = get_global_id(2);
    int mpanels = (M + MR - 1) / MR, npanels = (N + NR - 1) / NR;
    int q_end = min(npanels, (bj + 1) * PJ), p_end = min(mpanels, (bi + 1) * PI);
    const long c_off = c_off0 + b * c_stride;
    for (int q = bj * PJ; q < q_end; q++) {
        __global const T *bpanel = Bp + bp_off + b * bp_stride + (long)q * bp_panel;
        int j0 = q * NR;
        for (int p = bi * PI; p < p_end; p++) {
            __global const T *a = Ap + b * ap_stride + (long)p * K * MR;
            __global const T *bk = bpanel;
            TN c0 = 0, c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0;
            for (int kk = 0; kk < K; kk++) {
                TN bv = VLOAD(0, bk);
                FMA_ROW(0); FMA_ROW(1); FMA_ROW(2); FMA_ROW(3); FMA_ROW(4); FMA_ROW(5);
                a += MR;
                bk += bp_k;
            }
            int i0 = p * MR;
            STORE_ROW(0); STORE_ROW(1); STORE_ROW(2); STORE_ROW(3); STORE_ROW(4); STORE_ROW(5);
        }
    }
}

// gemm_tiles over a B whose rows start at given offsets: row kk of B, from column j, is
// B[b_off + rows[kk] + j], steps k0 <= kk < k1 of a K-step product (the host splits k
// to stay within item_loops, adding to C after the first). A convolution with stride 1
// reads its input so (src/tensor/conv_shift.c): each row (c, ki, kj) of its column
// matrix is the zero-padded input plane shifted, so no column matrix is written. Every
// panel is read in place, including the last partial one: its columns past N are read
// (the host leaves room after B) and never stored. RMR rows per micro-tile (A packed in
// panels of RMR): 8 where the device has 16-wide float vectors (32 registers: the 8 x 16
// accumulators and a convolution's 16, 32, 64 output channels in whole panels), else 6.
// 32- and 64-bit storage only: the micro-kernel reads B as T.
#ifndef RMR
#define RMR 6
#endif
#if RMR != 6 && RMR != 8
#error "gemm_tiles_rows holds six or eight rows of accumulators"
#endif
#define RFMA(r) c##r = CLG_MAD((TN)(a[r]), bv, c##r)
// C's columns as a grid (cg.s6; src/gemm/gemm.h, clg_gemm_grid): column j is slot s =
// j / cg.s0, row r and column c of its cg.s5 x cg.s1 cells, stored at s * cg.s4 + r *
// cg.s3 + c from the row's start where r < cg.s2 and c < cg.s3, dropped elsewhere; and
// (cg.s7) bias[i] added to row i after beta's term, as a separate pass would add it. A
// stride-1 convolution's output on its padded grid so lands in [N, P, OH, OW], cropped,
// with no pass after the product (src/tensor/conv_shift.c).
#if !defined(CLG_F16_STORE) && !defined(CLG_BF16_STORE)   // gemm_tiles_rows' storage is T
// len (below 16) values of src to dst in pieces of 8, 4, 2, 1.
#define STC8(d, s) vstore8(vload8(0, (s)), 0, (d))
#define STC4(d, s) vstore4(vload4(0, (s)), 0, (d))
inline void store_run(__global TC *dst, const T *src, const int len)
{
    if (len & 8) STC8(dst, src), dst += 8, src += 8;
    if (len & 4) STC4(dst, src), dst += 4, src += 4;
    if (len & 2) STC(dst, 0, src[0]), STC(dst, 1, src[1]), dst += 2, src += 2;
    if (len & 1) STC(dst, 0, src[0]);
}

inline void store_grid(__global TC *C, const long row_at, const int j, const int ncols, const TN acc, const T alpha,
                       const T beta, const T bias, const bool valid, const int8 cg)
{
    if (!valid) return;
    int s = j / cg.s0, rem = j - s * cg.s0, r = rem / cg.s1, c = rem - r * cg.s1;
    TN v = alpha * acc;
    if (ncols >= NR && r < cg.s2 && c + NR <= cg.s3) {   // NR cells of one row, all kept
        __global TC *at = C + row_at + (long)s * cg.s4 + r * cg.s3 + c;
        if (beta != (T)0) v += beta * LOADCN(at);
        STORECN(EPI_V(v + bias), at);
        return;
    }
    T tmp[NR];
    int n = min(ncols, NR);
    if (beta != (T)0) {   // a later slice of k: adds to what the first stored
        VSTORE(v, 0, tmp);
        for (int t = 0; t < n; t++) {
            if (r < cg.s2 && c < cg.s3) {
                long at = row_at + (long)s * cg.s4 + r * cg.s3 + c;
                STC(C, at, EPI(tmp[t] + beta * LDC(C, at) + bias));
            }
            if (++c == cg.s1) {
                c = 0;
                if (++r == cg.s5) r = 0, s++;
            }
        }
        return;
    }
    VSTORE(EPI_V(v + bias), 0, tmp);
    for (int t = 0; t < n;) {   // runs of cells to a row's end: at most NR / ws + 2
        int len = min(n - t, cg.s1 - c), keep = r < cg.s2 ? clamp(cg.s3 - c, 0, len) : 0;
        if (keep) store_run(C + row_at + (long)s * cg.s4 + r * cg.s3 + c, tmp + t, keep);
        t += len;
        c += len;
        if (c == cg.s1) {
            c = 0;
            if (++r == cg.s5) r = 0, s++;
        }
    }
}
#endif
#define GBIAS(i) (cg.s7 && (i) < M ? bias[bias_off + (long)(i) * bias_step] : (T)0)
#define GSTORE(r, j, acc)                                                                            \
    if (cg.s6)                                                                                       \
        store_grid(C, c_off0 + (long)(i0 + r) * ldc, j, N - (j), acc, alpha, beta, GBIAS(i0 + r), i0 + r < M, cg); \
    else                                                                                             \
        store_row(C, c_off0 + (long)(i0 + r) * ldc + (j), N - (j), acc, alpha, beta, i0 + r < M);
#define RSTORE(r) GSTORE(r, j0, c##r)
// With RMR 8 (32 vector registers) a micro-tile is three panels wide where the
// work-item's panels allow: 8 x 3 accumulators, and per k three vector loads of B and 8
// broadcasts of A for 24 FMAs (one panel: 1 and 8 for 8; the broadcasts, not the FMAs,
// bounded it: bench/RESULTS.md, session 35).
#if RMR == 8
#define RNV 3
#define WFMA(r)                                                                            \
    {                                                                                      \
        TN ar = (TN)(a[r]);                                                                \
        w##r##0 = CLG_MAD(ar, b0, w##r##0);                                                \
        w##r##1 = CLG_MAD(ar, b1, w##r##1);                                                \
        w##r##2 = CLG_MAD(ar, b2, w##r##2);                                                \
    }
#define WZERO(r) TN w##r##0 = 0, w##r##1 = 0, w##r##2 = 0;
#define WSTORE1(r, v) GSTORE(r, j0 + v * NR, w##r##v)
#define WSTORE(r) WSTORE1(r, 0) WSTORE1(r, 1) WSTORE1(r, 2)
#define WROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#else
#define RNV 1
#endif
#if !defined(CLG_F16_STORE) && !defined(CLG_BF16_STORE)
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void gemm_tiles_rows(const int M, const int N, const int K, const int k0, const int k1, const int PI,
                     const int PJ, __global const T *Ap, __global const T *B, const long b_off,
                     __global const int *rows, __global TC *C, const long c_off0, const int ldc, const T alpha,
                     const T beta, const int8 cg, __global const T *bias, const long bias_off, const int bias_step)
{
    int bj = get_global_id(0), bi = get_global_id(1);
    int mpanels = (M + RMR - 1) / RMR, npanels = (N + NR - 1) / NR;
    int q_end = min(npanels, (bj + 1) * PJ), p_end = min(mpanels, (bi + 1) * PI);
    int q = bj * PJ;
#if RNV == 3
    for (; q + RNV <= q_end; q += RNV) {
        __global const T *bpanel = B + b_off + q * NR;
        int j0 = q * NR;
        for (int p = bi * PI; p < p_end; p++) {
            __global const T *a = Ap + ((long)p * K + k0) * RMR;
            WROWS(WZERO)
            for (int kk = k0; kk < k1; kk++) {
                __global const T *br = bpanel + rows[kk];
                TN b0 = VLOAD(0, br), b1 = VLOAD(0, br + NR), b2 = VLOAD(0, br + 2 * NR);
                WROWS(WFMA)
                a += RMR;
            }
            int i0 = p * RMR;
            WROWS(WSTORE)
        }
    }
#endif
    for (; q < q_end; q++) {   // one panel at a time: the panels left over
        __global const T *bpanel = B + b_off + q * NR;
        int j0 = q * NR;
        for (int p = bi * PI; p < p_end; p++) {
            __global const T *a = Ap + ((long)p * K + k0) * RMR;
            TN c0 = 0, c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0;
#if RMR == 8
            TN c6 = 0, c7 = 0;
#endif
            for (int kk = k0; kk < k1; kk++) {
                TN bv = VLOAD(0, bpanel + rows[kk]);
                RFMA(0); RFMA(1); RFMA(2); RFMA(3); RFMA(4); RFMA(5);
#if RMR == 8
                RFMA(6); RFMA(7);
#endif
                a += RMR;
            }
            int i0 = p * RMR;
            RSTORE(0); RSTORE(1); RSTORE(2); RSTORE(3); RSTORE(4); RSTORE(5);
#if RMR == 8
            RSTORE(6); RSTORE(7);
#endif
        }
    }
}
#endif

// ---- A . B^T with both operands contiguous along k: dot products, no packing ----------
//
// C = alpha * A * B^T + beta * C where A's rows (lda) and B's rows (ldb) both run along
// k: a linear layer's forward (x . W^T) and a convolution's weight gradient (dY . col^T).
// Work-item (bj, bi, b) computes 4 rows of C by JB blocks of DOTC (3 or 6) columns: per
// step of DW values of k, 4 + DOTC vector loads and 4 DOTC vector FMAs into as many
// accumulators of DW lanes (float8 / double4), summed across lanes at the end. Its 4
// rows of A stay in L1 while it walks the JB blocks of B. One launch, no packing pass:
// the packed path packs B^T (all of W, every step) and A first. The order of additions
// differs from gemm_tiles': results may differ from the packed path in the last bits.
#if NR == 16 && defined(RMR) && RMR == 8
#define DW 16
#elif NR == 16
#define DW 8
#elif NR == 8
#define DW 4
#else
#error "gemm_dot: NR must be 16 (float) or 8 (double)"
#endif
#define TD CAT(T, DW)
#if DW == 16
#define HSUM(v) (HSUM8((v).lo) + HSUM8((v).hi))
#define HSUM8(v) ((((v).s0 + (v).s4) + ((v).s1 + (v).s5)) + (((v).s2 + (v).s6) + ((v).s3 + (v).s7)))
#elif DW == 8
#define HSUM(v) ((((v).s0 + (v).s4) + ((v).s1 + (v).s5)) + (((v).s2 + (v).s6) + ((v).s3 + (v).s7)))
#else
#define HSUM(v) (((v).s0 + (v).s2) + ((v).s1 + (v).s3))
#endif
// DOTC columns per block: 6 with RMR 8 (32 vector registers: 24 accumulators, the 6
// columns' vectors and a row's; 10 loads per 24 FMAs), else 3 (16 registers: 12, 7 per 12).
#if defined(RMR) && RMR == 8
#define DOTC 6
#define DOT_COLS(X, r) X(r, 0) X(r, 1) X(r, 2) X(r, 3) X(r, 4) X(r, 5)
#define DOT_J(X) X(0) X(1) X(2) X(3) X(4) X(5)
#else
#define DOTC 3
#define DOT_COLS(X, r) X(r, 0) X(r, 1) X(r, 2)
#define DOT_J(X) X(0) X(1) X(2)
#endif
#define DOT_ZERO(r, c) TD d##r##c = 0;
#define DOT_ROW(r) DOT_COLS(DOT_ZERO, r)
#define DOT_MAD(r, c) d##r##c = CLG_MAD(av, x##c, d##r##c);
#define DOT_FMA(r)                                                                         \
    {                                                                                      \
        TD av = LOADW(a##r + k);                                                           \
        DOT_COLS(DOT_MAD, r)                                                               \
    }
#define DOT_TAIL1(r, c) s[r][c] += x * y##c;
#define DOT_TAIL(r) { T x = CLG_LD(a##r, k); DOT_COLS(DOT_TAIL1, r) }
#define DOT_ADD1(r, c) s[r][c] += HSUM(d##r##c);
#define DOT_ADD(r) { DOT_COLS(DOT_ADD1, r) }

// has_rows: B's row j starts at rows[j] (a convolution's shifted input, as in
// gemm_tiles_rows), else at j * ldb; rows is then any buffer, never read.
#define BROW(j) (has_rows ? (long)rows[j] : (long)(j) * ldb)

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void gemm_dot(const int M, const int N, const int K, const int JB,
              __global const TS *A, const long a_off, const int lda, const long a_stride,
              __global const TS *B, const long b_off, const int ldb, const long b_stride,
              __global TC *C, const long c_off, const int ldc, const long c_stride, const T alpha, const T beta,
              const int nsum, const int has_rows, __global const int *rows)
{
    int bj = get_global_id(0), i0 = get_global_id(1) * 4, b = get_global_id(2);
    A += a_off + b * a_stride;
    B += b_off + b * b_stride;
    C += c_off + b * c_stride;
    // Rows past M or N repeat the last one (read, never stored): no branch in the loop.
    const int kv = K / DW * DW, j_end = min(N, (bj + 1) * JB * DOTC);
    for (int j0 = bj * JB * DOTC; j0 < j_end; j0 += DOTC) {
        T s[4][DOTC];
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < DOTC; c++) s[r][c] = 0;
        // nsum > 1 (launched with one batch): the products of nsum matrices summed, as
        // a convolution's weight gradient over a chunk of images (dot_sum, src/gemm/packed.c)
        for (int t = 0; t < nsum; t++) {
            __global const TS *at = A + t * a_stride, *bt = B + t * b_stride;
            __global const TS *a0 = at + (long)min(i0, M - 1) * lda, *a1 = at + (long)min(i0 + 1, M - 1) * lda;
            __global const TS *a2 = at + (long)min(i0 + 2, M - 1) * lda, *a3 = at + (long)min(i0 + 3, M - 1) * lda;
#define DOT_BROW(c) __global const TS *b##c = bt + BROW(min(j0 + c, N - 1));
            DOT_J(DOT_BROW)
            DOT_ROW(0) DOT_ROW(1) DOT_ROW(2) DOT_ROW(3)
            for (int k = 0; k < kv; k += DW) {
#define DOT_X(c) TD x##c = LOADW(b##c + k);
                DOT_J(DOT_X)
                DOT_FMA(0) DOT_FMA(1) DOT_FMA(2) DOT_FMA(3)
            }
            DOT_ADD(0) DOT_ADD(1) DOT_ADD(2) DOT_ADD(3)
            for (int k = kv; k < K; k++) {
#define DOT_Y(c) T y##c = CLG_LD(b##c, k);
                DOT_J(DOT_Y)
                DOT_TAIL(0) DOT_TAIL(1) DOT_TAIL(2) DOT_TAIL(3)
            }
        }
        for (int r = 0; r < 4 && i0 + r < M; r++)
            for (int c = 0; c < DOTC && j0 + c < N; c++) {
                long at = (long)(i0 + r) * ldc + j0 + c;
                T v = beta != (T)0 ? alpha * s[r][c] + beta * LDC(C, at) : alpha * s[r][c];
                STC(C, at, EPI(v));
            }
    }
}

// ---- small products: op(A) . B with a row-major B read in place, one launch ----------
//
// For products whose packing passes and launches cost more than their arithmetic (an
// MLP's last layer: dW3 = dY^T . H is 10 x 256 x 128, 0.7 MFLOP; gemm_pack, gemm_pack and
// gemm_tiles took ~30 us where OpenBLAS takes ~8). B's panel q starts at
// B + b_off + q * b_panel and its rows are ldb apart: a row-major B in place (b_panel =
// NR), or gemm_pack's panels of a transposed B (b_panel = K * NR, ldb = NR; padded: its
// last panel is whole, zeros past N, read as vectors). Work-item (bj, bi, b) computes RMR
// rows of C from row bi * RMR, over PJ panels of NR columns from panel bj * PJ: per k one
// vector of B's row (contiguous), RMR values of op(A) (A[i * lda + k], or A[k * lda + i]
// when A is transposed: then they are contiguous too), RMR fused multiply-adds. Rows
// past M repeat the last (read, never stored); in the last panel, columns past N repeat
// column N - 1 (gathered, no read past B's row). The additions run in gemm_tiles' order.
#define SFMA(r) c##r = CLG_MAD((TN)(CLG_LD(a, o##r)), bv, c##r)
#define SOFF(r) const long o##r = (long)min(i0 + r, M - 1) * ai
#define SSTORE(r) store_row(C, c_off + (long)(i0 + r) * ldc + j0, N - j0, c##r, alpha, beta, i0 + r < M)
#if RMR == 8
#define SROWS(X) X(0); X(1); X(2); X(3); X(4); X(5); X(6); X(7)
#else
#define SROWS(X) X(0); X(1); X(2); X(3); X(4); X(5)
#endif
#define CL(l) CLG_LD(bk, min(l, last))
#if NR == 16
#define GATHER_B() ((TN)(CL(0), CL(1), CL(2), CL(3), CL(4), CL(5), CL(6), CL(7), CL(8), CL(9), CL(10), CL(11), \
                         CL(12), CL(13), CL(14), CL(15)))
#else
#define GATHER_B() ((TN)(CL(0), CL(1), CL(2), CL(3), CL(4), CL(5), CL(6), CL(7)))
#endif
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void gemm_small(const int M, const int N, const int K, const int PJ, const int trans_a,
                __global const TS *A, const long a_off, const int lda, const long a_stride,
                __global const TS *B, const long b_off, const long b_panel, const int ldb, const long b_stride,
                const int padded, __global TC *C, const long c_off0, const int ldc, const long c_stride,
                const T alpha, const T beta)
{
    int bj = get_global_id(0), i0 = get_global_id(1) * RMR, b = get_global_id(2);
    int q_end = min((N + NR - 1) / NR, (bj + 1) * PJ);
    const long ai = trans_a ? 1 : lda, ak = trans_a ? lda : 1;   // op(A)'s steps along i and k
    SROWS(SOFF);
    __global const TS *a0 = A + a_off + b * a_stride, *b0 = B + b_off + b * b_stride;
    const long c_off = c_off0 + b * c_stride;
    for (int q = bj * PJ; q < q_end; q++) {
        int j0 = q * NR, last = N - 1 - j0;
        TN c0 = 0, c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0;
#if RMR == 8
        TN c6 = 0, c7 = 0;
#endif
        __global const TS *a = a0, *bk = b0 + q * b_panel;
        if (last >= NR - 1 || padded) {
            for (int kk = 0; kk < K; kk++, a += ak, bk += ldb) {
                TN bv = LOADN(bk);
                SROWS(SFMA);
            }
        } else {
            for (int kk = 0; kk < K; kk++, a += ak, bk += ldb) {
                TN bv = GATHER_B();
                SROWS(SFMA);
            }
        }
        SROWS(SSTORE);
    }
}
