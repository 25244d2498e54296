// conv.cl: convolution and pooling in NCHW (src/tensor/conv.c, pool.c), built per
// dtype. One program holds every kernel of both files, so a CNN compiles it once.
//
// Kernels whose first argument is a count (n, total, N) run over exactly that many
// work-items (clg__launch_1d, launch.c) and have no bounds check: one would keep POCL
// from vectorizing a work-group's loop (the SGD update ran 4x slower with it).
//
// Geometry travels as two int8 vectors (the host fills them, conv.c):
//   geo = (C, H, W, OH, OW, KH, KW, -)     channels, input and output sizes, window
//   win = (SH, SW, PH, PW, DH, DW, -, -)   stride, padding, dilation
// Inputs that the kernels read in place (x of the forwards) come with an offset and
// their four strides (n, c, h, w) in xs, so permuted and sliced views need no copy;
// everything else is contiguous.
//
// Storage is TS, computation T (common.cl): a float16 or bfloat16 tensor is read through
// CLG_LD and written through CLG_ST, each result computed in float32 and rounded once
// (built with clg__dtype_options_ew); kernels that only move values (im2col, fill_bias,
// the max-pool gradient's scatter) copy TS as it is, the 16 bits. col2im_planes alone accumulates in its output, so
// that output is always T (a float32 scratch plane for 16-bit tensors, conv.c).

#define GC geo.s0
#define GH geo.s1
#define GW geo.s2
#define GOH geo.s3
#define GOW geo.s4
#define GKH geo.s5
#define GKW geo.s6
#define WSH win.s0
#define WSW win.s1
#define WPH win.s2
#define WPW win.s3
#define WDH win.s4
#define WDW win.s5

// ---- convolution -----------------------------------------------------------------------

// Columns for the whole batch: col[n][(c*KH + ki)*KW + kj][oh*OW + ow] is the input
// pixel that kernel tap (ki, kj) of channel c meets at output (oh, ow), 0 in the padding.
// The channel-major row order makes group g's rows one contiguous block (rows
// g*C/G*KH*KW ...), so each group's GEMM reads its block in place.
// One work-item per column entry on a 3-D range (ow, oh, r = n * C*KH*KW + row) with
// no loop and no bounds check (the host launches the exact range): the divisions that
// split r depend on the third index alone, so POCL computes them outside its loop over
// ow, which it vectorizes (masked loads at the padding). The column index is an int (the
// host checks the size) and, in im2col_w1, the input is read at unit stride along ow
// (stride 1, x contiguous along w): a 64-bit index or a runtime stride there turns the
// loads into gathers, 2-4x slower. The former kernel (one item per output row, a loop
// of runtime length) ran ~10x below memory speed.
#define IM2COL(NAME, IW_STEP, X_STEP)                                                              \
__kernel void NAME(int rows, __global const TS *x, int xo, int8 xs, int8 geo, int8 win, __global TS *col) \
{                                                                                                  \
    int ow = get_global_id(0), oh = get_global_id(1), r = get_global_id(2);                        \
    int ckk = GC * GKH * GKW, n = r / ckk, row = r - n * ckk;                                      \
    int kj = row % GKW, ki = (row / GKW) % GKH, c = row / (GKW * GKH);                             \
    int ih = oh * WSH - WPH + ki * WDH, iw = ow * (IW_STEP) - WPW + kj * WDW;                      \
    TS v = (TS)0;   /* copied as stored: 16-bit values as their bits (0: +0.0) */              \
    if (ih >= 0 && ih < GH && iw >= 0 && iw < GW) v = x[xo + n * xs.s0 + c * xs.s1 + ih * xs.s2 + iw * (X_STEP)]; \
    if (ow < GOW) col[(r * GOH + oh) * GOW + ow] = v;                                              \
}
IM2COL(im2col, WSW, xs.s3)
IM2COL(im2col_w1, 1, 1)

// y[n][o][p] = b[o]: the bias that the forward GEMM then adds to (beta = 1). A 2-D
// range (p, n * O + o): the bias index is uniform along the vectorized dimension (a
// 1-D range with (i / P) % O per element ran ~10x below memory speed on POCL).
__kernel void fill_bias(int P, int NO, __global TS *y, __global const TS *b, int bo, int bs, int O)
{
    int p = get_global_id(0), r = get_global_id(1);
    y[r * P + p] = b[bo + r % O * bs];   // copied as stored; int index (the host checks y's size)
}

// The adjoint of im2col: dx[n][c][ih][iw] is the sum of the column entries that copied
// that pixel. Gathered per input pixel (no atomics, deterministic): tap (ki, kj) met it
// at output oh when oh * SH = ih + PH - ki * DH exactly (and likewise along w). A 3-D
// range (iw, ih, n * C + c) with loops of the same length for every item: whether a row
// of taps contributes depends on ih alone, uniform along the vectorized iw, and along w
// the column is read at consecutive addresses under a mask. (The former kernel, one
// item per pixel over a 1-D range with loop bounds of its own, ran ~4x slower on POCL.)
// The terms are added in the order (ki, kj), as the first kernel did. The column index
// is an int: the host checks the columns' size (im2col writes them with int indices).
__kernel void col2im(__global const TS *col, __global TS *dx, int dxo, int8 geo, int8 win)
{
    int iw = get_global_id(0), ih = get_global_id(1), nc = get_global_id(2);   // nc = n * C + c
    int P = GOH * GOW;
    bool unit_w = WSW == 1 && WDW == 1;
    T s = 0;
    for (int ki = 0; ki < GKH; ki++) {
        int th = ih + WPH - ki * WDH;
        if (th < 0 || th % WSH) continue;
        int oh = th / WSH;
        if (oh >= GOH) continue;
        __global const TS *taps = col + (nc * GKH + ki) * GKW * P + oh * GOW;
        if (unit_w) {
            for (int kj = 0; kj < GKW; kj++) {
                int ow = iw + WPW - kj;
                s += ow >= 0 && ow < GOW ? CLG_LD(taps, kj * P + ow) : (T)0;
            }
        } else {
            for (int kj = 0; kj < GKW; kj++) {
                int tw = iw + WPW - kj * WDW;
                int ow = tw >= 0 ? tw / WSW : GOW;
                s += ow < GOW && ow * WSW == tw ? CLG_LD(taps, kj * P + ow) : (T)0;
            }
        }
    }
    CLG_ST(dx, dxo + (nc * GH + ih) * GW + iw, s);
}

// The same sum, one work-item per (n, c) plane (the device table's col2im = planes,
// for devices whose work-items are SIMD threads): dx's plane is zeroed, then each
// tap's column rows are added into it in the order (ki, kj), so every pixel gets its
// terms in col2im's order (the same bits). The columns are read once, in order, and the
// plane stays in cache: ~5x faster than the gather on POCL. The range of ow whose input
// column iw = ow * SW - PW + kj * DW falls inside [0, W) is computed, not tested.
__kernel void col2im_planes(__global const TS *col, __global T *dx, int dxo, int8 geo, int8 win)
{
    int nc = get_global_id(0);
    int P = GOH * GOW;
    __global T *d = dx + dxo + nc * GH * GW;
    for (int i = 0; i < GH * GW; i++) d[i] = (T)0;
    __global const TS *c = col + nc * GKH * GKW * P;
    for (int ki = 0; ki < GKH; ki++) {
        for (int kj = 0; kj < GKW; kj++, c += P) {
            int lead = WPW - kj * WDW;   // ow * SW = iw + lead
            int ow0 = max(0, (lead + WSW - 1) / WSW), ow1 = min(GOW, (GW + lead + WSW - 1) / WSW);
            for (int oh = 0; oh < GOH; oh++) {
                int ih = oh * WSH - WPH + ki * WDH;
                if (ih < 0 || ih >= GH) continue;
                __global T *row = d + ih * GW - lead;
                __global const TS *taps = c + oh * GOW;
                for (int ow = ow0; ow < ow1; ow++) row[ow * WSW] += CLG_LD(taps, ow);
            }
        }
    }
}

// ---- stride-1 convolution without columns (src/tensor/conv_shift.c) --------------------
//
// The input's channels each as one zero-padded plane holding the whole batch (images
// stacked, the padding between them shared): row (c, ki, kj) of the batch's column
// matrix is then channel c's plane read from ki * DH * Ws + kj * DW on (Ws its row
// length), so the GEMM reads it in place (gemm.cl: gemm_tiles_rows, gemm_dot with row
// offsets) and computes outputs on the same grid, those outside OH x OW dropped by
// conv_crop.

// pg = (N, RPC, Lh, Sh, Hdat, Lw, Wdat, Ws): per channel RPC rows of Ws: Lh rows of
// zeros, then N slots of Sh rows whose first Hdat rows hold an image's rows (Lw zeros,
// Wdat values, zeros to Ws), zeros after. dst [C, RPC, Ws] in the compute type T (16-bit
// storage widened: the products run in float32). The zeros are written first (the host
// fills dst); these kernels copy x's values alone, over a 3-D range of exactly (Wdat,
// Hdat, C * N) with nothing guarded, so that POCL vectorizes the loads along w: the one
// kernel that wrote zeros and values, a row of Ws at a time with a guarded load, moved
// ResNet-20's 16 x 28 x 28 planes at ~7 GB/s, 2.1 ms against 0.6 (+ 0.2 for the fill)
// (bench_ops conv2d, POCL, AVX2). conv_pad_w1 reads x at unit stride along w (a runtime
// stride gathers).
#define CONV_PAD(NAME, X_STEP)                                                                    \
__kernel void NAME(__global const TS *x, int xo, int8 xs, int8 pg, __global T *dst)              \
{                                                                                                 \
    int w = get_global_id(0), i = get_global_id(1), z = get_global_id(2);                         \
    int c = z / pg.s0, n = z - c * pg.s0;                                                         \
    T v = CLG_LD(x, xo + n * xs.s0 + c * xs.s1 + i * xs.s2 + w * (X_STEP));                       \
    dst[((long)c * pg.s1 + pg.s2 + n * pg.s3 + i) * pg.s7 + pg.s5 + w] = v;                       \
}
CONV_PAD(conv_pad, xs.s3)
CONV_PAD(conv_pad_w1, 1)

// rows[r], r = (c * KH + ki) * KW + kj: where row r of the column matrix starts. With
// stride 1 (st = (1, 1)): c * cstep + base + ki * DH * Ws + kj * DW; with flip, the taps
// from the far end ((KH - 1 - ki), (KW - 1 - kj)): the input gradient's correlation.
// With stride (SY, SX) the planes are phases (conv_phases: SY * SX planes per channel, a
// cstep apart): tap offset a = ki * DH lies in phase a % SY, a / SY rows in; likewise
// along w.
// rg = (KH, KW, cstep, Ws, DH, DW, flip, base), st = (SY, SX, -...)
__kernel void conv_rows(int n, int8 rg, int8 st, __global int *rows)
{
    int r = get_global_id(0);
    int kj = r % rg.s1, ki = r / rg.s1 % rg.s0, c = r / (rg.s1 * rg.s0);
    if (rg.s6) {
        ki = rg.s0 - 1 - ki;
        kj = rg.s1 - 1 - kj;
    }
    int a = ki * rg.s4, b = kj * rg.s5, p = a % st.s0, q = b % st.s1;
    rows[r] = ((c * st.s0 + p) * st.s1 + q) * rg.s2 + rg.s7 + a / st.s0 * rg.s3 + b / st.s1;
}

// A strided convolution's input as phases (src/tensor/conv_shift.c): x [N, C, H, W]
// zero-padded by (PH, PW), and plane (c, p, q) holds its rows p, p + SY, ... and columns
// q, q + SX, ...: per plane RPC rows of Ws, N slots of Hd rows (an image's phase, the
// padding inside it), zeros after. Output (i, j) of an image reads tap (ki, kj) from its
// phase at (i + ki * DH / SY, j + kj * DW / SX): a stride-1 read, as conv_rows says.
// A 3-D range (b = column, rounded up to the vector width; m = row of a plane; plane =
// (c * SY + p) * SX + q). pg = (N, RPC, Hd, Ws, H, W, PH, PW), st = (SY, SX, -...)
// Rows of Ws are short (15 at ResNet-20's 28 x 28): a division per row cost as much as
// the row's copy, so the range gives plane and row and one division remains. A runtime
// step along w makes the load a gather (2.7 ms against 1.1 for ResNet-20's 16 x 28 x 28
// at stride 2): conv_phases_w1s2 takes the common case with both steps known.
#define CONV_PHASES(NAME, X_STEP, S_X)                                                            \
__kernel void NAME(__global const TS *x, int xo, int8 xs, int8 pg, int8 st, __global T *dst)      \
{                                                                                                 \
    int b = get_global_id(0), m = get_global_id(1), plane = get_global_id(2), r = plane * pg.s1 + m; \
    int np = st.s0 * st.s1, c = plane / np, ph = plane - c * np, p = ph / st.s1, q = ph - p * st.s1; \
    int n = m / pg.s2, u = m - n * pg.s2, ih = u * st.s0 + p - pg.s6, iw = b * (S_X) + q - pg.s7;  \
    bool row = n < pg.s0 && ih >= 0 && ih < pg.s4;                                                \
    __global const TS *xr = x + xo + (row ? n * xs.s0 + c * xs.s1 + ih * xs.s2 : 0);              \
    T v = (T)0;                                                                                   \
    if (row && iw >= 0 && iw < pg.s5) v = CLG_LD(xr, iw * (X_STEP));                              \
    if (b < pg.s3) dst[r * pg.s3 + b] = v;                                                        \
}
CONV_PHASES(conv_phases, xs.s3, st.s1)
CONV_PHASES(conv_phases_w1s2, 1, 2)

// y [N, P, OH, OW] (storage type) from the product's [P, N, Sh, Ws] (compute type; P
// planes per image: output or input channels), the bias b[bo + p * bs] added where
// given. A 3-D range of exactly (OW, OH, N * P), nothing guarded: POCL vectorizes it
// along ow (a range rounded up to the vector width with a guarded store took 1.5 ms for
// ResNet-20's 16 x 28 x 28 planes, against 0.5). cg = (OH, OW, Sh, Ws, P, N, has_bias, -)
__kernel void conv_crop(__global const T *src, int8 cg, __global TS *y, __global const TS *bias, int bo, int bs)
{
    int ow = get_global_id(0), oh = get_global_id(1), np = get_global_id(2);
    int n = np / cg.s4, p = np - n * cg.s4;
    T v = src[((p * cg.s5 + n) * cg.s2 + oh) * cg.s3 + ow];
    if (cg.s6) v += CLG_LD(bias, bo + p * bs);
    CLG_ST(y, (np * cg.s0 + oh) * cg.s1 + ow, v);
}

// The direct alternative to im2col + GEMM (measured in bench/bench_conv.c): one
// work-item per output pixel and output channel, y = b + sum over its group's channels
// and taps. geo.s7 is the number of groups, win.s6 the output channels O, win.s7 whether
// b is given; w contiguous from its element wof.
__kernel void conv2d_direct(int total, __global const TS *x, int xo, int8 xs, __global const TS *w, int wof,
                            __global const TS *b, int bo, int8 geo, int8 win, __global TS *y)
{
    int i = get_global_id(0);
    int O = win.s6, cg = GC / geo.s7;
    int ow = i % GOW, oh = (i / GOW) % GOH, o = (i / (GOW * GOH)) % O, n = i / (GOW * GOH * O);
    int c0 = o / (O / geo.s7) * cg;
    T s = win.s7 ? CLG_LD(b, bo + o) : (T)0;
    __global const TS *wo = w + wof + o * cg * GKH * GKW;
    for (int c = 0; c < cg; c++) {
        __global const TS *xc = x + xo + n * xs.s0 + (c0 + c) * xs.s1;
        for (int ki = 0; ki < GKH; ki++) {
            int ih = oh * WSH - WPH + ki * WDH;
            if (ih < 0 || ih >= GH) continue;
            for (int kj = 0; kj < GKW; kj++) {
                int iw = ow * WSW - WPW + kj * WDW;
                if (iw >= 0 && iw < GW) s += CLG_LD(xc, ih * xs.s2 + iw * xs.s3) * CLG_LD(wo, (c * GKH + ki) * GKW + kj);
            }
        }
    }
    CLG_ST(y, i, s);
}

// ---- pooling -------------------------------------------------------------------------------

// Max over each window of x (padding never wins). idx records where the max was, as
// ih * W + iw within the (n, c) plane, for the backward: the first maximum on ties, as
// PyTorch; a NaN wins over every number (the first NaN), so NaN propagates.
__kernel void max_pool(int total, __global const TS *x, int xo, int8 xs, int8 geo, int8 win, __global TS *y,
                       __global int *idx)
{
    int i = get_global_id(0);
    int ow = i % GOW, oh = (i / GOW) % GOH, nc = i / (GOW * GOH);
    int n = nc / GC, c = nc - n * GC;
    int h0 = oh * WSH - WPH, w0 = ow * WSW - WPW;
    int hs = max(h0, 0), he = min(h0 + GKH, GH), ws = max(w0, 0), we = min(w0 + GKW, GW);
    __global const TS *xp = x + xo + n * xs.s0 + c * xs.s1;
    T m = -INFINITY;
    int at = hs * GW + ws;
    for (int ih = hs; ih < he; ih++)
        for (int iw = ws; iw < we; iw++) {
            T v = CLG_LD(xp, ih * xs.s2 + iw * xs.s3);
            if (v > m || (v != v && m == m)) {
                m = v;
                at = ih * GW + iw;
            }
        }
    CLG_ST(y, i, m);
    idx[i] = at;
}

// The common 2x2 / stride 2 / no padding window over a contiguous x, on a 2-D range
// (ow, r = nc * OH + oh): the same results as max_pool (first max on ties, NaN wins)
// as four selects with no loops, the row split uniform along the vectorized ow. The
// general kernel's per-item divisions and clipped window loops ran ~10x below memory
// speed on POCL.
__kernel void max_pool_2x2(int R, __global const TS *x, int xo, int8 geo, __global TS *y, __global int *idx)
{
    int ow = get_global_id(0), r = get_global_id(1);
    int nc = r / GOH, oh = r - nc * GOH;
    int at = 2 * oh * GW + 2 * ow;
    __global const TS *xp = x + xo + nc * GH * GW + at;   // int indices: pool_check bounds the sizes
    // 16-bit: each row's pair in one load, the winner's bits stored as they are (four
    // ushort loads and a rounding back left POCL scalar: 3x float32's time)
#if defined(CLG_F16_STORE) || defined(CLG_BF16_STORE)
    ushort2 top = vload2(0, xp), bot = vload2(0, xp + GW);
    ushort pa[4] = {top.x, top.y, bot.x, bot.y};
    T a = CLG_LD(pa, 0), b = CLG_LD(pa, 1), c = CLG_LD(pa, 2), d = CLG_LD(pa, 3);
#else
    T a = CLG_LD(xp, 0), b = CLG_LD(xp, 1), c = CLG_LD(xp, GW), d = CLG_LD(xp, GW + 1);
#endif
    T m = a;
    int k = 0, w = 0;
    if (b > m || (b != b && m == m)) { m = b; k = 1; w = 1; }
    if (c > m || (c != c && m == m)) { m = c; k = GW; w = 2; }
    if (d > m || (d != d && m == m)) { m = d; k = GW + 1; w = 3; }
#if defined(CLG_F16_STORE) || defined(CLG_BF16_STORE)
    y[r * GOW + ow] = w == 0 ? pa[0] : w == 1 ? pa[1] : w == 2 ? pa[2] : pa[3];
#else
    (void)w;
    y[r * GOW + ow] = m;
#endif
    idx[r * GOW + ow] = at + k;
}

// The same window for average pooling: (a + b + c + d) / 4, added in avg_pool's order
// (row by row), no loops and no division per element.
__kernel void avg_pool_2x2(int R, __global const TS *x, int xo, int8 geo, __global TS *y)
{
    int ow = get_global_id(0), r = get_global_id(1);
    int nc = r / GOH, oh = r - nc * GOH;
    __global const TS *xp = x + xo + nc * GH * GW + 2 * oh * GW + 2 * ow;
    T s = CLG_LD(xp, 0);
    s += CLG_LD(xp, 1);
    s += CLG_LD(xp, GW);
    s += CLG_LD(xp, GW + 1);
    CLG_ST(y, r * GOW + ow, s / (T)4);
}

// Output windows that cover input row (or column) p: [*lo, *hi).
inline void covering(int p, int pad, int k, int s, int nout, int *lo, int *hi)
{
    int t = p + pad - k + 1;                  // the first window start that still reaches p
    *lo = t <= 0 ? 0 : (t + s - 1) / s;
    *hi = min((p + pad) / s + 1, nout);
}

// dx for max pooling, gathered per input pixel: the sum of g over the windows whose
// recorded argmax is this pixel (overlapping windows may pick the same one).
__kernel void max_pool_bw(int total, __global const TS *g, __global const int *idx, __global TS *dx, int8 geo,
                          int8 win)
{
    int i = get_global_id(0);
    int iw = i % GW, ih = (i / GW) % GH, nc = i / (GW * GH);
    int ohl, ohh, owl, owh;
    covering(ih, WPH, GKH, WSH, GOH, &ohl, &ohh);
    covering(iw, WPW, GKW, WSW, GOW, &owl, &owh);
    int me = ih * GW + iw, base = nc * GOH * GOW;
    T s = 0;
    for (int oh = ohl; oh < ohh; oh++)
        for (int ow = owl; ow < owh; ow++)
            if (idx[base + oh * GOW + ow] == me) s += CLG_LD(g, base + oh * GOW + ow);
    CLG_ST(dx, i, s);
}

// The same when windows do not overlap (stride >= kernel, the usual 2x2 / 2): each
// pixel is the argmax of at most one window, so each output writes its gradient to its
// argmax in dx (zeroed first) and no two work-items write one element. A quarter of
// the work-items of the gather for 2x2 windows, and no searching.
__kernel void max_pool_bw_scatter(int total, __global const TS *g, __global const int *idx, __global TS *dx,
                                  int8 geo, int8 win)
{
    int i = get_global_id(0);
    int nc = i / (GOH * GOW);
    dx[nc * GH * GW + idx[i]] = g[i];   // copied as stored
}

// The 2 x 2 / 2 window's backward, one work-item per window (ow, r = (n, c, oh), as
// max_pool_2x2): its four pixels of dx written, the gradient at the argmax idx recorded
// (a plane offset), zeros at the other three. Every pixel a window covers is written
// once: no zeroing pass first (only the last row or column an odd H or W leaves out).
__kernel void max_pool_2x2_bw(int R, __global const TS *g, __global const int *idx, __global TS *dx, int8 geo)
{
    int ow = get_global_id(0), r = get_global_id(1);
    int nc = r / GOH, oh = r - nc * GOH, i = r * GOW + ow;
    int at = 2 * oh * GW + 2 * ow, k = idx[i] - at;   // 0, 1, GW or GW + 1
    __global TS *d = dx + nc * GH * GW + at;
    TS v = g[i], z = (TS)0;   // copied as stored (16-bit: bits; +0 is all zero bits)
    d[0] = k == 0 ? v : z;
    d[1] = k == 1 ? v : z;
    d[GW] = k == GW ? v : z;
    d[GW + 1] = k == GW + 1 ? v : z;
}

// The divisor of window (oh, ow): its size clipped to the padded input when padding
// counts (win.s6 != 0), as PyTorch's count_include_pad, else the real pixels in it.
inline int avg_divisor(int oh, int ow, int8 geo, int8 win)
{
    int h0 = oh * WSH - WPH, w0 = ow * WSW - WPW;
    int h1 = min(h0 + GKH, GH + WPH), w1 = min(w0 + GKW, GW + WPW);
    if (win.s6) return (h1 - h0) * (w1 - w0);
    return (min(h1, GH) - max(h0, 0)) * (min(w1, GW) - max(w0, 0));
}

__kernel void avg_pool(int total, __global const TS *x, int xo, int8 xs, int8 geo, int8 win, __global TS *y)
{
    int i = get_global_id(0);
    int ow = i % GOW, oh = (i / GOW) % GOH, nc = i / (GOW * GOH);
    int n = nc / GC, c = nc - n * GC;
    int h0 = oh * WSH - WPH, w0 = ow * WSW - WPW;
    int hs = max(h0, 0), he = min(h0 + GKH, GH), ws = max(w0, 0), we = min(w0 + GKW, GW);
    __global const TS *xp = x + xo + n * xs.s0 + c * xs.s1;
    T s = 0;
    for (int ih = hs; ih < he; ih++)
        for (int iw = ws; iw < we; iw++) s += CLG_LD(xp, ih * xs.s2 + iw * xs.s3);
    CLG_ST(y, i, s / (T)avg_divisor(oh, ow, geo, win));
}

// dx for average pooling, gathered per input pixel: g / divisor of each covering window.
__kernel void avg_pool_bw(int total, __global const TS *g, __global TS *dx, int8 geo, int8 win)
{
    int i = get_global_id(0);
    int iw = i % GW, ih = (i / GW) % GH, nc = i / (GW * GH);
    int ohl, ohh, owl, owh;
    covering(ih, WPH, GKH, WSH, GOH, &ohl, &ohh);
    covering(iw, WPW, GKW, WSW, GOW, &owl, &owh);
    int base = nc * GOH * GOW;
    T s = 0;
    for (int oh = ohl; oh < ohh; oh++)
        for (int ow = owl; ow < owh; ow++) s += CLG_LD(g, base + oh * GOW + ow) / (T)avg_divisor(oh, ow, geo, win);
    CLG_ST(dx, i, s);
}

// The window along one axis that holds pixel p when windows do not overlap (stride s >=
// kernel k), or -1: (p + pad) / s by clg_udiv with the host's pair (m, sh) for s.
inline int disjoint_window(int p, int pad, int k, int s, int nout, uint m, int sh)
{
    int t = p + pad, q = (int)clg_udiv((uint)t, m, sh);
    return t - q * s < k && q < nout ? q : -1;
}

// dx for average pooling with disjoint windows (the usual 2x2 / 2): each pixel takes
// its one window's g / divisor, or 0. A 3-D range (iw, ih, n * C + c), no loop.
__kernel void avg_pool_bw_disjoint(__global const TS *g, __global TS *dx, int8 geo, int8 win, uint mh, int shh,
                                   uint mw, int shw)
{
    int iw = get_global_id(0), ih = get_global_id(1), nc = get_global_id(2);
    int oh = disjoint_window(ih, WPH, GKH, WSH, GOH, mh, shh), ow = disjoint_window(iw, WPW, GKW, WSW, GOW, mw, shw);
    int h = max(oh, 0), w = max(ow, 0);
    T v = CLG_LD(g, (nc * GOH + h) * GOW + w) / (T)avg_divisor(h, w, geo, win);
    CLG_ST(dx, (nc * GH + ih) * GW + iw, oh >= 0 && ow >= 0 ? v : (T)0);
}

// ---- bilinear upsampling ---------------------------------------------------------------------
// conv_more.c makes the tables: tb = [h0 (OH), h1 (OH), w0 (OW), w1 (OW), r0h (H + 1),
// r1h (H + 1), r0w (W + 1), r1w (W + 1)] and lam = [lh (OH), lw (OW)]: output row oy
// blends input rows h0 and h1 by lh (likewise columns), and, for the backward, the
// output rows with h0 == i are [r0h[i], r0h[i + 1]) (h0 and h1 never decrease; the host
// bounds these runs by item_loops), those with h1 == i [r1h[i], r1h[i + 1]).
// geo: C, H, W, OH, OW. One kernel per pass instead of four index_selects and three
// elementwise ops (0.19x PyTorch composed). T only: 16-bit x is refused by the op.
__kernel void upsample_bilinear(__global const T *x, int xo, int8 xs, int8 geo, __global const int *tb,
                                __global const T *lam, __global T *y)
{
    int ox = get_global_id(0), oy = get_global_id(1), nc = get_global_id(2);
    int C = geo.s0, OH = geo.s3, OW = geo.s4, n = nc / C, c = nc - n * C;
    __global const T *p = x + xo + n * xs.s0 + c * xs.s1;
    int h0 = tb[oy] * xs.s2, h1 = tb[OH + oy] * xs.s2, w0 = tb[2 * OH + ox] * xs.s3, w1 = tb[2 * OH + OW + ox] * xs.s3;
    T lh = lam[oy], lw = lam[OH + ox];
    T top = ((T)1 - lw) * p[h0 + w0] + lw * p[h0 + w1], bot = ((T)1 - lw) * p[h1 + w0] + lw * p[h1 + w1];
    y[(nc * OH + oy) * OW + ox] = ((T)1 - lh) * top + lh * bot;
}

// Backward along w: t[nc][oy][ix] = sum of g[nc][oy][ox] (1 - lw) over ox with w0 == ix,
// plus g lw over ox with w1 == ix (g contiguous).
__kernel void upsample_bilinear_bw_w(__global const T *g, int8 geo, __global const int *tb, __global const T *lam,
                                     __global T *t)
{
    int ix = get_global_id(0), oy = get_global_id(1), nc = get_global_id(2);
    int H = geo.s1, W = geo.s2, OH = geo.s3, OW = geo.s4;
    __global const int *r0 = tb + 2 * OH + 2 * OW + 2 * (H + 1), *r1 = r0 + W + 1;
    __global const T *row = g + (nc * OH + oy) * OW, *lw = lam + OH;
    T s = 0;
    for (int ox = r0[ix]; ox < r0[ix + 1]; ox++) s += row[ox] * ((T)1 - lw[ox]);
    for (int ox = r1[ix]; ox < r1[ix + 1]; ox++) s += row[ox] * lw[ox];
    t[(nc * OH + oy) * W + ix] = s;
}

// Then along h: dx[nc][iy][ix] from t's rows, as above.
__kernel void upsample_bilinear_bw_h(__global const T *t, int8 geo, __global const int *tb, __global const T *lam,
                                     __global T *dx)
{
    int ix = get_global_id(0), iy = get_global_id(1), nc = get_global_id(2);
    int H = geo.s1, W = geo.s2, OH = geo.s3, OW = geo.s4;
    __global const int *r0 = tb + 2 * OH + 2 * OW, *r1 = r0 + H + 1;
    __global const T *col = t + nc * OH * W + ix;
    T s = 0;
    for (int oy = r0[iy]; oy < r0[iy + 1]; oy++) s += col[oy * W] * ((T)1 - lam[oy]);
    for (int oy = r1[iy]; oy < r1[iy + 1]; oy++) s += col[oy * W] * lam[oy];
    dx[(nc * H + iy) * W + ix] = s;
}

#if defined(CLG_F32) || defined(CLG_F64)
// A convolution's bias gradient in one launch (conv.c, grad_bias_groups, where the
// device table reduces rows by groups): group c sums dy[n, c, :] (dy contiguous [N, O,
// P] from element ody) over the images, work-item l the pixels l, l + WG, ... of each
// image in turn (no division per element), then the group's sum into db[odb + c].
__kernel void conv_bias_grad(int N, int O, int P, __global const T *dy, int ody, __global T *db, int odb,
                             __local T *s)
{
    int c = get_group_id(0), l = get_local_id(0), wg = get_local_size(0);
    T acc = 0;
    for (int n = 0; n < N; n++) {
        __global const T *row = dy + ody + ((size_t)n * O + c) * P;
        for (int p = l; p < P; p += wg) acc += row[p];
    }
    acc = clg_group_sum(acc, s);
    if (l == 0) db[odb + c] = acc;
}
#endif
