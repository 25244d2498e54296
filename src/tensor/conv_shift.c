/* conv_shift.c: convolutions without a column matrix (conv.c chooses them where the
 * device table's conv_shift says so and the GEMM engine takes B's rows at offsets:
 * gemm.h, clg__gemm_rows): stride 1 in all three passes; strided ones, their forward
 * and weight gradient, on the input's phases (phases_for). Kernels: cl_kernels/conv.cl
 * (conv_pad, conv_phases, conv_rows, conv_crop) and gemm.cl (gemm_tiles_rows, gemm_dot
 * with row offsets) or, where the device table says gemm = tune or tiled (GPU-shaped
 * devices), gemm_tiled.cl built with ROWS: its tiles read from the padded input (an
 * implicit GEMM), the weight gradient's long k in slices side by side.
 *
 * Why: im2col writes a 3x3 convolution's input nine times over and the GEMM reads it
 * back; on CPUs that traffic, not the products, bounded the ResNet's convolutions
 * (bench/RESULTS.md, session 23). With stride 1, lay the zero-padded input out as one
 * plane per channel holding the whole batch (images stacked, rows of W + gap, the
 * padding between images and between rows shared: `layout`) and compute the outputs on
 * the same grid (those outside OH x OW computed and dropped): row (c, ki, kj) of the
 * whole batch's column matrix is then channel c's plane read from ki * DH * Ws + kj * DW
 * on (Ws the plane's row length). So, each a single product over the whole batch:
 *   forward  y' = W . shift(pad(x)),             y = crop(y') + b
 *   dW       dW = pad0(dy) . shift(pad(x))^T     (dy on the output grid, zeros at the
 *                 dropped positions, so they add nothing; k = the whole grid, long)
 *   dx       dx' = W~ . flipshift(pad'(dy)),     dx = crop(dx')
 * where pad' pads dy by (KH - 1) DH - PH rows and (KW - 1) DW - PW columns and W~ is W
 * as [C/G, O/G * KH * KW] per group, the taps read from the far end (a correlation
 * with the flipped kernel). The padded planes are 1.07-1.31x the input for the
 * ResNet's 28/14/7-pixel planes, against 9x for the columns. The forward keeps them for
 * the weight gradient; a "same" convolution pads dy once for both gradients.
 *
 * Strided: with stride (SY, SX) the padded input splits into SY x SX phases per
 * channel, and each is a stride-1 problem on a grid of ceil((H + 2 PH) / SY) rows
 * (a space-to-depth): the forward and dW as above on the phases. The input gradient
 * keeps the columns (col2im): a flipped correlation over dy dilated by the stride
 * would compute SY x SX times the outputs it keeps.
 */
#include "conv.h"
#include "gemm/gemm.h"

#define PROGRAM "conv"

/* A batch's planes, one per channel: rpc rows of ws; from row lead_h on, slots of sh
 * rows, one per image, whose first hdat rows hold the image's rows from column lead_w
 * (wdat values); zeros everywhere else. The gaps between images and between rows are
 * shared padding: a window reaching past an image's bottom (right) edge meets the
 * zeros that the next image (row) has above (left of) it. */
typedef struct layout {
    int64_t rpc, lead_h, sh, hdat, lead_w, wdat, ws;
    int64_t sy, sx;   /* 1, 1; or a strided convolution's phases (phases_for) */
} layout;

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* The products' type: 16-bit storage widens to float32 in the planes (conv_pad,
 * conv_phases) and narrows again in conv_crop, so float16 and bfloat16 convolutions
 * take the same float32 products as float32's (exact: every 16-bit value is a float). */
static clg_dtype compute_type(clg_dtype d) { return d == CLG_F16 || d == CLG_BF16 ? CLG_F32 : d; }

/* Planes for data of hdat x wdat padded by (ph, pw) for a KH x KW window (dilated): the
 * gaps are the larger of the padding before and the reach after; then rows of zeros that
 * cover every read past the last slot (the GEMM reads 16 columns past its last one). */
static layout planes_for(const conv_geo *g, int64_t hdat, int64_t wdat, int64_t ph, int64_t pw)
{
    int64_t gh = max64(ph, (g->KH - 1) * g->dh - ph), gw = max64(pw, (g->KW - 1) * g->dw - pw);
    int64_t sh = hdat + gh, ws = wdat + gw, tail = gh + 4 + (16 + ws - 1) / ws;
    return (layout){gh + g->N * sh + tail, gh, sh, hdat, gw, wdat, ws, 1, 1};
}

/* A strided convolution's input as phases: SY x SX planes per channel, plane (p, q)
 * holding the padded images' rows p, p + SY, ... and columns q, q + SX, ... (slots of hd
 * rows of wd, the padding inside them; conv_phases in conv.cl). Output (i, j) reads tap
 * (ki, kj) at (i + ki DH / SY, j + kj DW / SX) of phase (ki DH % SY, kj DW % SX): a
 * stride-1 read, so the products below take it as they take stride 1's planes, on a
 * grid of hd x wd per image. Every read of an output inside OH x OW stays inside its
 * image's padded phase; the tail covers the reads of the dropped ones past the last slot. */
static layout phases_for(const conv_geo *g)
{
    int64_t hd = (g->H + 2 * g->ph + g->sh - 1) / g->sh, wd = (g->W + 2 * g->pw + g->sw - 1) / g->sw;
    int64_t tail = (g->KH - 1) * g->dh / g->sh + 4 + (16 + wd - 1) / wd;
    return (layout){g->N * hd + tail, 0, hd, hd, 0, wd, wd, g->sh, g->sw};
}

/* Elements from one input channel's planes to the next. */
static int64_t channel_step(const layout *l) { return l->sy * l->sx * l->rpc * l->ws; }

/* The forward's planes for g: phases where strided. */
static layout input_planes(const conv_geo *g)
{
    return g->sh == 1 && g->sw == 1 ? planes_for(g, g->H, g->W, g->ph, g->pw) : phases_for(g);
}

/* Where the window of output 0 starts in such planes: (lead_h - ph) rows, (lead_w - pw)
 * columns in (phases hold their padding: at 0). */
static int64_t window_base(const layout *l, int64_t ph, int64_t pw)
{
    return l->sy > 1 || l->sx > 1 ? 0 : (l->lead_h - ph) * l->ws + l->lead_w - pw;
}

/* The input gradient's padding: the window's reach minus the forward's padding. */
static int64_t pad_q(int64_t k, int64_t d, int64_t p) { return (k - 1) * d - p; }

/* Whether these convolutions take g's pass: a float type (16-bit ones computed in
 * float32: compute_type), not a 1x1 without padding (x is its own column matrix), int
 * indices. Strided: the forward and the weight gradient on phases where the window
 * meets every phase (not a strided 1x1: most of its phases unread); the input gradient
 * stays with the columns. Stride 1: the input gradient's padding not negative. */
static bool geometry_ok(const clg_device *dev, clg_dtype dtype, const conv_geo *g, clg_conv_pass pass)
{
    if (!clg__device_params(dev)->conv_shift || (dtype != CLG_F32 && dtype != CLG_F64 && compute_type(dtype) == dtype))
        return false;
    if (g->KH == 1 && g->KW == 1 && g->ph == 0 && g->pw == 0) return false;
    int64_t big = max64(g->C, g->O);
    if (g->sh != 1 || g->sw != 1) {
        layout x = phases_for(g);
        return pass != CLG_CONV_PASS_INPUT && (g->KH - 1) * g->dh + 1 >= g->sh && (g->KW - 1) * g->dw + 1 >= g->sw &&
               channel_step(&x) * big < INT32_MAX / 2;
    }
    int64_t qh = pad_q(g->KH, g->dh, g->ph), qw = pad_q(g->KW, g->dw, g->pw);
    if (qh < 0 || qw < 0) return false;
    layout x = planes_for(g, g->H, g->W, g->ph, g->pw), d = planes_for(g, g->OH, g->OW, qh, qw);
    return x.rpc * x.ws * big < INT32_MAX / 2 && d.rpc * d.ws * big < INT32_MAX / 2;
}

static clg_gemm_args probe(clg_dtype dtype, size_t m, size_t n, size_t k, bool summed)
{
    return (clg_gemm_args){.type = clg__gemm_type_of(dtype), .trans_b = summed, .m = m, .n = n, .k = k, .batch = 1,
                           .lda = k, .ldc = n};
}

/* k of the weight gradient's dot products per launch: the longest that the GEMM engine
 * takes in one sum (clg__gemm_sum_fits: its work-items' loops within item_loops) for an
 * m x n result, 0 where none of 64 or more fits. Asked of the engine, which alone knows
 * its kernels' trips per step of k. */
static size_t dot_slice(clg_device *dev, clg_dtype dtype, size_t m, size_t n)
{
    clg_gemm_args a = probe(dtype, m, n, 64, true);
    a.b_rows = (const clg_buffer *)dev;   /* any non-NULL: B's rows at offsets */
    if (!clg__gemm_sum_fits(dev, &a)) return 0;
    size_t lo = 64, hi = (size_t)1 << 30;   /* fits at lo; the loops bound k far below hi */
    while (hi - lo > 1) {
        a.k = lo + (hi - lo) / 2;
        if (clg__gemm_sum_fits(dev, &a)) lo = a.k;
        else hi = a.k;
    }
    return lo;
}

bool clg__conv_shift_ok(clg_device *dev, clg_dtype dtype, const conv_geo *g, clg_conv_pass pass)
{
    if (!geometry_ok(dev, dtype, g, pass)) return false;
    dtype = compute_type(dtype);
    size_t Cg = (size_t)(g->C / g->G), Og = (size_t)(g->O / g->G), taps = (size_t)(g->KH * g->KW);
    layout x = input_planes(g);
    layout d = planes_for(g, g->OH, g->OW, pad_q(g->KH, g->dh, g->ph), pad_q(g->KW, g->dw, g->pw));
    clg_gemm_args a;
    switch (pass) {
    case CLG_CONV_PASS_FORWARD: a = probe(dtype, Og, (size_t)(g->N * x.sh * x.ws), Cg * taps, false); break;
    case CLG_CONV_PASS_WEIGHT: return dot_slice(dev, dtype, Og, Cg * taps) > 0;
    default: a = probe(dtype, Cg, (size_t)(g->N * d.sh * d.ws), Og * taps, false); break;
    }
    a.b_rows = (const clg_buffer *)dev;   /* any non-NULL: asks whether row offsets are taken */
    return clg__gemm_rows_fits(dev, &a);
}

/* ---- the pieces -------------------------------------------------------------------------------- */

static int64_t vector_round(const clg_device *dev, int64_t n)
{
    int64_t v = clg__device_params(dev)->vector_float;
    return v > 1 ? (n + v - 1) / v * v : n;
}

/* x [N, C, H, W] (any strides) as the phases of l (g's padding). */
static clg_status phases(clg_tensor *x, const conv_geo *g, const layout *l, clg_tensor *p)
{
    int64_t planes = x->shape[1] * l->sy * l->sx;
    const int64_t pg[8] = {x->shape[0], l->rpc, l->sh, l->ws, x->shape[2], x->shape[3], g->ph, g->pw};
    const int64_t st[2] = {l->sy, l->sx};
    clg_arg a[] = {CLG_ARG_B(x->buf), CLG_ARG_I(x->offset), clg__arg_int8(x->strides, 4), clg__arg_int8(pg, 8),
                   clg__arg_int8(st, 2), CLG_ARG_B(p->buf)};
    return clg__conv_launch_grid(x->dev, x->dtype, x->strides[3] == 1 && l->sx == 2 ? "conv_phases_w1s2" : "conv_phases", a, 6,
                                 (const int64_t[]){vector_round(x->dev, l->ws), l->rpc, planes});
}

/* What a stride-1 layout's planes hold outside the data (zeros), as a pool key
 * (clg__buffer_alloc_kept): every field that places the N x planes images' values, and
 * the element size. FNV-1a over them; nonzero. */
static uint64_t planes_key(const layout *l, int64_t N, int64_t planes, size_t esize)
{
    const int64_t f[] = {l->rpc, l->lead_h, l->sh, l->hdat, l->lead_w, l->wdat, l->ws, N, planes, (int64_t)esize};
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        for (int b = 0; b < 8; b++) h = (h ^ (uint8_t)((uint64_t)f[i] >> (8 * b))) * 1099511628211ull;
    return h ? h : 1;
}

/* x [N, C, H, W] (any strides) in planes laid out as l (phases: g's padding): a
 * contiguous 1-D tensor. Stride 1: the planes' zeros are written first (a fill), then
 * conv_pad copies the values into place; the pool hands the same planes' buffer back
 * (planes_key) to the next pad of that layout, zeros intact, and the fill is skipped:
 * a third of the padding's passes over ResNet-20's planes (bench/RESULTS.md, session 35). */
static clg_tensor *pad(clg_tensor *x, const conv_geo *g, const layout *l)
{
    int64_t rows = x->shape[1] * l->sy * l->sx * l->rpc;
    bool phased = l->sy > 1 || l->sx > 1, kept = false;
    clg_dtype ct = compute_type(x->dtype);
    uint64_t key = phased ? 0 : planes_key(l, x->shape[0], x->shape[1], clg_dtype_size(ct));
    clg_tensor *p = clg__tensor_new_kept(x->dev, ct, 1, (const int64_t[]){rows * l->ws}, key, &kept);
    if (!p) return NULL;
    if (phased) {   /* conv_phases writes every element, zeros included */
        if (phases(x, g, l, p) == CLG_OK) return p;
        clg_tensor_free(p);
        return NULL;
    }
    const int64_t pg[8] = {x->shape[0], l->rpc, l->lead_h, l->sh, l->hdat, l->lead_w, l->wdat, l->ws};
    clg_arg a[] = {CLG_ARG_B(x->buf), CLG_ARG_I(x->offset), clg__arg_int8(x->strides, 4), clg__arg_int8(pg, 8),
                   CLG_ARG_B(p->buf)};
    const char *k = x->strides[3] == 1 ? "conv_pad_w1" : "conv_pad";
    if ((kept || clg_fill_(p, 0.0) == CLG_OK) &&
        clg__conv_launch_grid(x->dev, x->dtype, k, a, 5, (const int64_t[]){l->wdat, l->hdat, x->shape[0] * x->shape[1]}) ==
            CLG_OK)
        return p;
    p->buf->keep = 0;   /* its zeros may not all be written: no later pad may count on them */
    clg_tensor_free(p);
    return NULL;
}

/* Where the column matrix's rows (c, ki, kj), c < channels, start in planes laid out as
 * l (a channel l->rpc * l->ws elements on), the window at `base`; flip: the taps from
 * the far end. */
static clg_tensor *row_offsets(clg_device *dev, const conv_geo *g, int64_t channels, const layout *l, int64_t base,
                               bool flip)
{
    int64_t n = channels * g->KH * g->KW;
    clg_tensor *r = clg__tensor_new(dev, CLG_I32, 1, (const int64_t[]){n});
    clg_kernel *k = r ? clg__kernel_get(dev, PROGRAM, clg__dtype_options_ew(CLG_F32), "conv_rows") : NULL;
    const int64_t rg[8] = {g->KH, g->KW, l->rpc * l->ws, l->ws, g->dh, g->dw, flip, base};
    const int64_t st[2] = {l->sy, l->sx};
    clg_arg a[] = {CLG_ARG_I(n), clg__arg_int8(rg, 8), clg__arg_int8(st, 2), CLG_ARG_B(r ? r->buf : NULL)};
    if (k && clg__launch_1d(dev, k, a, 4, (size_t)n) == CLG_OK) return r;
    clg_tensor_free(r);
    return NULL;
}

/* y [N, P, oh, ow] (contiguous) = the product's [P, N, sh, ws] cut, + b per plane p. */
static clg_status crop(const clg_tensor *out, int64_t N, int64_t P, int64_t oh, int64_t ow, const layout *l,
                       const clg_tensor *b, clg_tensor *y)
{
    const int64_t cg[8] = {oh, ow, l->sh, l->ws, P, N, b != NULL, 0};
    clg_arg a[] = {CLG_ARG_B(out->buf), clg__arg_int8(cg, 8), CLG_ARG_B(y->buf), CLG_ARG_B(b ? b->buf : out->buf),
                   CLG_ARG_I(b ? b->offset : 0), CLG_ARG_I(b ? b->strides[0] : 0)};
    return clg__conv_launch_grid(out->dev, y->dtype, "conv_crop", a, 6, (const int64_t[]){ow, oh, N * P});
}

/* Where a product on l's grid writes: its rows (planes p) of L = N * sh * ws columns
 * into a [P, L] buffer, to be cropped after (grid NULL); or, cropped as it stores, into
 * y [N, P, oh, ow] (contiguous, from element 0), b (NULL: none) added per plane. */
typedef struct product_out {
    clg_tensor *t;
    const clg_gemm_grid *grid;
    const clg_tensor *b;
} product_out;

/* For each group gi: output planes [gi m, gi m + m) = a's rows for gi (m x k, a_step
 * elements apart per group) . shift(planes) with the rows at `rows`, the planes b_step
 * elements on per group; cols columns on the grid. */
static clg_status shifted(clg_device *dev, clg_dtype dtype, const conv_geo *g, size_t m, size_t cols, size_t k,
                          const clg_tensor *a, size_t a_step, const clg_tensor *planes, size_t b_step,
                          const clg_tensor *rows, product_out out)
{
    clg_status st = CLG_OK;
    size_t ldc = out.grid ? out.grid->rows * out.grid->cols : cols;
    for (int64_t gi = 0; st == CLG_OK && gi < g->G; gi++) {
        size_t s = (size_t)gi;
        clg_gemm_args ga = {
            .type = clg__gemm_type_of(dtype), .m = m, .n = cols, .k = k, .batch = 1, .alpha = 1.0, .a = a->buf,
            .a_off = (size_t)a->offset + s * a_step, .lda = k, .b = planes->buf, .b_off = s * b_step,
            .b_rows = rows->buf, .c = out.t->buf, .c_off = s * m * ldc, .ldc = ldc,
        };
        if (out.grid) ga.grid = *out.grid;
        if (out.b) {
            ga.bias = out.b->buf;
            ga.bias_step = (size_t)out.b->strides[0];
            ga.bias_off = (size_t)out.b->offset + s * m * ga.bias_step;
        }
        st = clg__gemm_rows(dev, &ga);
    }
    return st;
}

/* The grid that crops a product on l's grid into [N, P, oh, ow] as it stores. */
static clg_gemm_grid crop_grid(const layout *l, int64_t P, int64_t oh, int64_t ow)
{
    return (clg_gemm_grid){(size_t)l->sh, (size_t)l->ws, (size_t)oh, (size_t)ow, (size_t)(P * oh * ow)};
}

/* Whether the product stores y itself (cropped, with the bias): y of the products' type
 * (16-bit storage narrows in conv_crop) and the engine taking C as a grid. */
static bool crops_itself(clg_device *dev, const clg_gemm_grid *grid, clg_dtype ct, const clg_tensor *y, size_t m,
                         size_t n, size_t k)
{
    if (y->dtype != ct) return false;
    clg_gemm_args a = probe(ct, m, n, k, false);
    a.b_rows = (const clg_buffer *)dev;   /* any non-NULL, as clg__conv_shift_ok asks */
    a.grid = *grid;
    a.ldc = grid->rows * grid->cols;
    return clg__gemm_rows_fits(dev, &a);
}

/* ---- the three products ------------------------------------------------------------------------- */

clg_status clg__conv_shift_forward(clg_tensor *x, clg_tensor *w, clg_tensor *b, const conv_geo *g, clg_tensor *y,
                                   clg_tensor **planes)
{
    clg_device *dev = x->dev;
    layout l = input_planes(g);
    int64_t Cg = g->C / g->G, Og = g->O / g->G, cstep = channel_step(&l), L = g->N * l.sh * l.ws;
    size_t K = (size_t)(Cg * g->KH * g->KW);
    clg_tensor *xp = pad(x, g, &l);
    clg_tensor *rows = xp ? row_offsets(dev, g, Cg, &l, window_base(&l, g->ph, g->pw), false) : NULL;
    clg_dtype ct = compute_type(x->dtype);
    /* the products read the weights from their offset (an optimizer's arena too) */
    clg_tensor *wm = !rows ? NULL : ct == w->dtype && clg_tensor_is_contiguous(w) ? w : clg__copy_as(w, ct);
    clg_gemm_grid grid = crop_grid(&l, g->O, g->OH, g->OW);
    bool direct = crops_itself(dev, &grid, ct, y, (size_t)Og, (size_t)L, K);
    clg_tensor *out = !wm ? NULL : direct ? y : clg__tensor_new(dev, ct, 1, (const int64_t[]){g->O * L});
    product_out to = direct ? (product_out){y, &grid, b} : (product_out){out, NULL, NULL};
    clg_status st = out ? shifted(dev, ct, g, (size_t)Og, (size_t)L, K, wm, (size_t)Og * K, xp,
                                  (size_t)(Cg * cstep), rows, to)
                        : dev->status;
    if (st == CLG_OK && !direct) st = crop(out, g->N, g->O, g->OH, g->OW, &l, b, y);
    if (!direct) clg_tensor_free(out);
    clg__release_copy(wm, w);
    clg_tensor_free(rows);
    if (st == CLG_OK && planes) *planes = xp;
    else clg_tensor_free(xp);
    return st;
}

/* dy, as the weight gradient reads it: its rows (one per output channel, a_ld apart
 * from a_off) hold dy on the forward's output grid, zeros where no output is (so that
 * those positions add nothing). */
typedef struct dy_rows {
    const clg_tensor *t;
    size_t a_off, a_ld;
} dy_rows;

/* dW = sum over the grid of dy . shift(xp)^T: per group, k (all images' planes) in
 * slices within item_loops, each adding to the last; into into->t where given (conv.h). */
static clg_tensor *weight_product(clg_tensor *w, const conv_geo *g, const clg_tensor *xp, const layout *l, dy_rows dy,
                                  const conv_into *into)
{
    clg_device *dev = w->dev;
    int64_t Cg = g->C / g->G, Og = g->O / g->G, cstep = channel_step(l);
    clg_dtype ct = compute_type(w->dtype);
    size_t K = (size_t)(Cg * g->KH * g->KW), L = (size_t)(g->N * l->sh * l->ws), slice = dot_slice(dev, ct, (size_t)Og, K);
    bool direct = into && into->t;   /* w's dtype is ct then (float32, float64) */
    clg_tensor *rows = row_offsets(dev, g, Cg, l, window_base(l, g->ph, g->pw), false);
    clg_tensor *dw = !rows ? NULL : direct ? into->t : clg__tensor_new(dev, ct, 4, w->shape);
    clg_status st = dw ? CLG_OK : dev->status;
    for (int64_t gi = 0; st == CLG_OK && gi < g->G; gi++) {
        for (size_t k0 = 0; st == CLG_OK && k0 < L; k0 += slice) {
            size_t s = (size_t)gi;
            clg_gemm_args ga = {
                .type = clg__gemm_type_of(ct), .trans_b = true, .m = (size_t)Og, .n = K,
                .k = L - k0 < slice ? L - k0 : slice, .batch = 1, .alpha = 1.0,
                .beta = k0 ? 1.0 : direct ? into->beta : 0.0,
                .a = dy.t->buf, .a_off = dy.a_off + s * (size_t)Og * dy.a_ld + k0, .lda = dy.a_ld, .b = xp->buf,
                .b_off = s * (size_t)(Cg * cstep) + k0, .b_rows = rows->buf, .c = dw->buf,
                .c_off = (size_t)dw->offset + s * (size_t)Og * K, .ldc = K,
            };
            st = clg__gemm_sum(dev, &ga);
        }
    }
    clg_tensor_free(rows);
    if (direct) return st == CLG_OK ? dw : NULL;
    clg_tensor *narrow = st == CLG_OK && ct != w->dtype ? clg__copy_as(dw, w->dtype) : NULL;
    if (st == CLG_OK && ct == w->dtype) return dw;
    clg_tensor_free(dw);
    return narrow;
}

/* The input gradient's planes: dy padded by (KH - 1) DH - PH rows, (KW - 1) DW - PW columns. */
static layout input_grad_planes(const conv_geo *g)
{
    return planes_for(g, g->OH, g->OW, pad_q(g->KH, g->dh, g->ph), pad_q(g->KW, g->dw, g->pw));
}

/* dx = crop(W~ . flipshift(dyq)) from dy's planes dyq laid out as l. */
static clg_tensor *input_product(clg_tensor *w, const conv_geo *g, const clg_tensor *dyq, const layout *l)
{
    clg_device *dev = w->dev;
    int64_t qh = pad_q(g->KH, g->dh, g->ph), qw = pad_q(g->KW, g->dw, g->pw);
    int64_t Cg = g->C / g->G, Og = g->O / g->G, cstep = channel_step(l), L = g->N * l->sh * l->ws;
    size_t K = (size_t)(Og * g->KH * g->KW);
    /* W~: w [G, Og, Cg, taps] as [G, Cg, Og, taps], contiguous: group gi's rows c. */
    clg_tensor *wv = clg_reshape(w, CLG_SHAPE(g->G, Og, Cg, g->KH * g->KW));
    clg_tensor *wp = wv ? clg_permute(wv, 4, (const int[]){0, 2, 1, 3}) : NULL;
    clg_dtype ct = compute_type(w->dtype);
    clg_tensor *wt = wp ? clg__copy_as(wp, ct) : NULL;
    clg_tensor_free(wp);
    clg_tensor_free(wv);
    clg_tensor *rows = wt ? row_offsets(dev, g, Og, l, window_base(l, qh, qw), true) : NULL;
    clg_tensor *dx = rows ? clg__tensor_new(dev, w->dtype, 4, (const int64_t[]){g->N, g->C, g->H, g->W}) : NULL;
    clg_gemm_grid grid = crop_grid(l, g->C, g->H, g->W);
    bool direct = dx && crops_itself(dev, &grid, ct, dx, (size_t)Cg, (size_t)L, K);
    clg_tensor *out = !dx ? NULL : direct ? dx : clg__tensor_new(dev, ct, 1, (const int64_t[]){g->C * L});
    product_out to = direct ? (product_out){dx, &grid, NULL} : (product_out){out, NULL, NULL};
    if (!out || shifted(dev, ct, g, (size_t)Cg, (size_t)L, K, wt, (size_t)Cg * K, dyq, (size_t)(Og * cstep), rows,
                        to) != CLG_OK ||
        (!direct && crop(out, g->N, g->C, g->H, g->W, l, NULL, dx) != CLG_OK)) {
        clg_tensor_free(dx);
        dx = NULL;
    }
    if (!direct) clg_tensor_free(out);
    clg_tensor_free(rows);
    clg_tensor_free(wt);
    return dx;
}

clg_tensor *clg__conv_shift_grad_weight(clg_tensor *x, clg_tensor *w, clg_tensor *gy, const conv_geo *g,
                                        clg_tensor *planes, const conv_into *into)
{
    layout l = input_planes(g);
    layout o = {g->N * l.sh, 0, l.sh, g->OH, 0, g->OW, l.ws, 1, 1};   /* dy on the output grid */
    clg_tensor *xp = planes ? planes : pad(x, g, &l);
    clg_tensor *dyp = xp ? pad(gy, g, &o) : NULL;
    clg_tensor *dw = dyp ? weight_product(w, g, xp, &l, (dy_rows){dyp, 0, (size_t)(o.rpc * o.ws)}, into) : NULL;
    clg_tensor_free(dyp);
    if (xp != planes) clg_tensor_free(xp);
    return dw;
}

clg_tensor *clg__conv_shift_grad_input(clg_tensor *w, clg_tensor *gy, const conv_geo *g)
{
    layout l = input_grad_planes(g);
    clg_tensor *dyq = pad(gy, g, &l);
    clg_tensor *dx = dyq ? input_product(w, g, dyq, &l) : NULL;
    clg_tensor_free(dyq);
    return dx;
}

clg_status clg__conv_shift_backward(clg_tensor *x, clg_tensor *w, clg_tensor *gy, const conv_geo *g,
                                    clg_tensor *planes, const conv_into *into, clg_tensor **dw, clg_tensor **dx)
{
    layout l = planes_for(g, g->H, g->W, g->ph, g->pw), q = input_grad_planes(g);
    clg_device *dev = w->dev;
    if (q.sh != l.sh || q.ws != l.ws) {   /* dy's two layouts differ: padded twice */
        *dw = clg__conv_shift_grad_weight(x, w, gy, g, planes, into);
        *dx = *dw ? clg__conv_shift_grad_input(w, gy, g) : NULL;
        return *dx ? CLG_OK : dev->status;
    }
    /* "Same" convolutions: dy's padded planes hold it on the output grid too, from the
     * input gradient's window base on, zeros around: the weight gradient reads them. */
    clg_tensor *dyq = pad(gy, g, &q);
    clg_tensor *xp = dyq ? (planes ? planes : pad(x, g, &l)) : NULL;
    *dw = xp ? weight_product(w, g, xp, &l, (dy_rows){dyq, (size_t)(q.lead_h * q.ws + q.lead_w), (size_t)(q.rpc * q.ws)},
                              into)
             : NULL;
    *dx = *dw ? input_product(w, g, dyq, &q) : NULL;
    if (xp != planes) clg_tensor_free(xp);
    clg_tensor_free(dyq);
    return *dx ? CLG_OK : dev->status;
}
