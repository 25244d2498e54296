/* flip, repeat and pad (src/tensor/reshape_ops.c), tril and triu (src/tensor/tri.c)
 * against plain-C references, in every layout and dtype, with their shapes and their
 * refusals. Gradients: test_grad_core. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "optest.h"

enum { A = 3, B = 4, C = 5, N = A * B * C };

static clg_dtype dtypes[3];
static int ndtypes;

/* Element (i, j, k) of a [A, B, C] row-major array. */
static double at(const double *x, int i, int j, int k) { return x[(i * B + j) * C + k]; }

static void test_flip(clg_device *dev)
{
    double x[N], want[N];
    optest_fill(x, N, -50, 50, 7);
    for (int i = 0; i < N; i++) x[i] = floor(x[i]);   /* exact in every dtype */
    for (int mask = 0; mask < 8; mask++) {
        int axes[3], na = 0;
        for (int d = 0; d < 3; d++)
            if (mask & (1 << d)) axes[na++] = d - (d == 2 ? 3 : 0);   /* axis 2 given as -1 */
        int m = mask ? mask : 7;   /* no axes: all of them, as the reductions take it */
        for (int i = 0; i < A; i++)
            for (int j = 0; j < B; j++)
                for (int k = 0; k < C; k++)
                    want[(i * B + j) * C + k] = at(x, m & 1 ? A - 1 - i : i, m & 2 ? B - 1 - j : j,
                                                  m & 4 ? C - 1 - k : k);
        for (int di = 0; di < ndtypes; di++)
            for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
                clg_scope_begin(dev);
                char w[96];
                snprintf(w, sizeof w, "flip mask %d %s %s", mask, clg_dtype_name(dtypes[di]), optest_layout_names[l]);
                optest_close(w, clg_flip(optest_tensor(dev, dtypes[di], CLG_SHAPE(A, B, C), x, (optest_layout)l), na,
                                         na ? axes : NULL),
                             want, N, 0, 0);
                clg_scope_end(dev);
            }
    }
    /* long rows (the copy's row kernel) read backwards, in every layout */
    enum { R = 3, L = 150 };
    static double lx[R * L], lw[R * L];
    optest_fill(lx, R * L, -50, 50, 8);
    for (int i = 0; i < R * L; i++) lx[i] = floor(lx[i]);
    for (int i = 0; i < R; i++)
        for (int k = 0; k < L; k++) lw[i * L + k] = lx[(R - 1 - i) * L + L - 1 - k];
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
        clg_scope_begin(dev);
        char w[64];
        snprintf(w, sizeof w, "flip long rows %s", optest_layout_names[l]);
        optest_close(w, clg_flip(optest_tensor(dev, CLG_F32, CLG_SHAPE(R, L), lx, (optest_layout)l), CLG_AXES(0, 1)),
                     lw, R * L, 0, 0);
        clg_scope_end(dev);
    }
    clg_scope_begin(dev);
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(A, B, C), x, OPTEST_CONTIGUOUS);
    CHECK(clg_flip(t, CLG_AXES(3)) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_flip"), "%s", clg_device_error(dev));
    CHECK(clg_flip(t, CLG_AXES(1, 1)) == NULL);
    CHECK(clg_flip(NULL, CLG_AXES(0)) == NULL);
    clg_scope_end(dev);
}

static void test_repeat(clg_device *dev)
{
    double x[B * C];
    optest_fill(x, B * C, -9, 9, 3);
    for (int i = 0; i < B * C; i++) x[i] = floor(x[i]);
    /* [B, C] repeated {2, 3, 1}: [2, 3B, C], out[r][i][k] = x[i % B][k] */
    enum { R0 = 2, R1 = 3 };
    static double want[R0 * R1 * B * C];
    for (int r = 0; r < R0; r++)
        for (int i = 0; i < R1 * B; i++)
            for (int k = 0; k < C; k++) want[(r * R1 * B + i) * C + k] = x[(i % B) * C + k];
    for (int di = 0; di < ndtypes; di++)
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            clg_scope_begin(dev);
            char w[96];
            snprintf(w, sizeof w, "repeat {2, 3, 1} %s %s", clg_dtype_name(dtypes[di]), optest_layout_names[l]);
            clg_tensor *y = clg_repeat(optest_tensor(dev, dtypes[di], CLG_SHAPE(B, C), x, (optest_layout)l),
                                       CLG_SHAPE(R0, R1, 1));
            CHECK_MSG(y && clg_tensor_ndim(y) == 3 && clg_tensor_dim(y, 0) == R0 && clg_tensor_dim(y, 1) == R1 * B &&
                          clg_tensor_dim(y, 2) == C,
                      "%s: shape (%s)", w, clg_device_error(dev));
            optest_close(w, y, want, R0 * R1 * B * C, 0, 0);
            clg_scope_end(dev);
        }
    clg_scope_begin(dev);
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(B, C), x, OPTEST_CONTIGUOUS);
    /* along the last axis: out[i][k] = x[i][k % C]; zero repeats: an empty tensor */
    double w2[B * 2 * C];
    for (int i = 0; i < B; i++)
        for (int k = 0; k < 2 * C; k++) w2[i * 2 * C + k] = x[i * C + k % C];
    optest_close("repeat {1, 2}", clg_repeat(t, CLG_SHAPE(1, 2)), w2, B * 2 * C, 0, 0);
    clg_tensor *e = clg_repeat(t, CLG_SHAPE(0, 1));
    CHECK_MSG(e && clg_tensor_numel(e) == 0 && clg_tensor_dim(e, 1) == C, "repeat 0: %s", clg_device_error(dev));
    CHECK(clg_repeat(t, CLG_SHAPE(2)) == NULL);   /* fewer repeats than axes */
    CHECK_MSG(strstr(clg_device_error(dev), "clg_repeat"), "%s", clg_device_error(dev));
    CHECK(clg_repeat(t, CLG_SHAPE(1, -1)) == NULL);
    clg_scope_end(dev);
}

/* The source index of output position j along an axis of n padded by lo (-1: the fill). */
static int src_of(int j, int n, int lo, clg_pad_mode mode)
{
    int i = j - lo;
    if (mode == CLG_PAD_CONSTANT) return i < 0 || i >= n ? -1 : i;
    if (mode == CLG_PAD_REPLICATE) return i < 0 ? 0 : i >= n ? n - 1 : i;
    return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
}

static void test_pad(clg_device *dev)
{
    double x[N];
    optest_fill(x, N, -9, 9, 5);
    for (int i = 0; i < N; i++) x[i] = floor(x[i]);
    /* last axis (C = 5) padded 2, 3; middle (B = 4) padded 1, 0 */
    const int64_t pads[4] = {2, 3, 1, 0};
    enum { OB = B + 1, OC = C + 5 };
    static double want[A * OB * OC];
    const char *names[3] = {"constant", "reflect", "replicate"};
    for (int mode = 0; mode < 3; mode++) {
        for (int i = 0; i < A; i++)
            for (int j = 0; j < OB; j++)
                for (int k = 0; k < OC; k++) {
                    int sj = src_of(j, B, 1, (clg_pad_mode)mode), sk = src_of(k, C, 2, (clg_pad_mode)mode);
                    want[(i * OB + j) * OC + k] = sj < 0 || sk < 0 ? 1.5 : at(x, i, sj, sk);
                }
        for (int di = 0; di < ndtypes; di++)
            for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
                if (dtypes[di] == CLG_I32 && mode == CLG_PAD_CONSTANT) continue;   /* 1.5 is no int */
                clg_scope_begin(dev);
                char w[96];
                snprintf(w, sizeof w, "pad %s %s %s", names[mode], clg_dtype_name(dtypes[di]), optest_layout_names[l]);
                clg_tensor *y = clg_pad(optest_tensor(dev, dtypes[di], CLG_SHAPE(A, B, C), x, (optest_layout)l), 4, pads,
                                        (clg_pad_mode)mode, 1.5);
                CHECK_MSG(y && clg_tensor_dim(y, 0) == A && clg_tensor_dim(y, 1) == OB && clg_tensor_dim(y, 2) == OC,
                          "%s: shape (%s)", w, clg_device_error(dev));
                optest_close(w, y, want, A * OB * OC, 0, 0);
                clg_scope_end(dev);
            }
    }
    clg_scope_begin(dev);
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(A, B, C), x, OPTEST_CONTIGUOUS);
    CHECK(clg_pad(t, 2, (const int64_t[]){5, 0}, CLG_PAD_REFLECT, 0) == NULL);   /* pad >= size */
    CHECK_MSG(strstr(clg_device_error(dev), "clg_pad") && strstr(clg_device_error(dev), "reflect"), "%s",
              clg_device_error(dev));
    CHECK(clg_pad(t, 3, (const int64_t[]){1, 1, 1}, CLG_PAD_CONSTANT, 0) == NULL);   /* not pairs */
    CHECK(clg_pad(t, 8, (const int64_t[]){1, 1, 1, 1, 1, 1, 1, 1}, CLG_PAD_CONSTANT, 0) == NULL);
    /* negative pads crop, as PyTorch's: [A, B, C] with last-axis pads {-1, 2} and {1, -2} on B */
    {
        clg_tensor *y = clg_pad(t, 4, (const int64_t[]){-1, 2, 1, -2}, CLG_PAD_CONSTANT, 9);
        int OB = B - 1, OC = C + 1;
        double *want = malloc(sizeof(double) * (size_t)(A * OB * OC));
        for (int i = 0; i < A; i++)
            for (int j = 0; j < OB; j++)
                for (int k = 0; k < OC; k++) {
                    int sj = j - 1, sk = k + 1;   /* row 0 padded; column 0 cropped, 2 padded at the end */
                    want[(i * OB + j) * OC + k] = sj < 0 || sk >= C ? 9 : x[(i * B + sj) * C + sk];
                }
        CHECK_MSG(y && clg_tensor_dim(y, 1) == OB && clg_tensor_dim(y, 2) == OC, "pad crop: %s", clg_device_error(dev));
        optest_close("pad with negative (cropping) pads", y, want, A * OB * OC, 0, 0);
        free(want);
    }
    CHECK(clg_pad(t, 2, (const int64_t[]){-1, 0}, CLG_PAD_REFLECT, 0) == NULL);   /* cropping: constant only */
    CHECK(clg_pad(t, 2, (const int64_t[]){-(int64_t)C, -1}, CLG_PAD_CONSTANT, 0) == NULL);   /* crops past the axis */
    CHECK(clg_pad(t, 2, (const int64_t[]){1, 0}, (clg_pad_mode)7, 0) == NULL);
    clg_tensor *same = clg_pad(t, 0, NULL, CLG_PAD_CONSTANT, 0);
    CHECK(same && same != t);
    optest_close("pad nothing", same, x, N, 0, 0);
    clg_scope_end(dev);
}

/* x [.., R, K] row-major with the triangle's complement zeroed (the reference). */
static void tri_ref(const double *x, double *want, int64_t n, int64_t R, int64_t K, int64_t diag, bool upper)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i / K % R, c = i % K;
        bool keep = upper ? c - r >= diag : c - r <= diag;
        want[i] = keep ? x[i] : 0;
    }
}

static clg_tensor *tri_op(clg_tensor *t, int64_t diag, bool upper) { return upper ? clg_triu(t, diag) : clg_tril(t, diag); }

static void test_tri(clg_device *dev)
{
    double x[N], want[N];
    optest_fill(x, N, -50, 50, 9);
    for (int i = 0; i < N; i++) x[i] = floor(x[i]) + (x[i] > 0);   /* nonzero, exact in every dtype */
    clg_dtype all[5] = {CLG_F16, CLG_BF16};   /* data movement: the 16-bit floats too */
    int nall = 2;
    for (int di = 0; di < ndtypes; di++) all[nall++] = dtypes[di];
    const int64_t diags[] = {0, 1, -1, 3, -2, 4, -3, 100, -100};
    for (int upper = 0; upper < 2; upper++)
        for (size_t g = 0; g < sizeof diags / sizeof *diags; g++) {
            tri_ref(x, want, N, B, C, diags[g], upper);
            for (int di = 0; di < nall; di++)
                for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
                    clg_scope_begin(dev);
                    char w[96];
                    snprintf(w, sizeof w, "%s %lld %s %s", upper ? "triu" : "tril", (long long)diags[g],
                             clg_dtype_name(all[di]), optest_layout_names[l]);
                    clg_tensor *y = tri_op(optest_tensor(dev, all[di], CLG_SHAPE(A, B, C), x, (optest_layout)l),
                                           diags[g], upper);
                    CHECK_MSG(y && clg_tensor_is_contiguous(y) && clg_tensor_dtype(y) == all[di], "%s: %s", w,
                              clg_device_error(dev));
                    optest_close(w, y, want, N, 0, 0);
                    clg_scope_end(dev);
                }
        }
    /* a transposed matrix, and a broadcast one (stride 0 over the batch) */
    clg_scope_begin(dev);
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(A, C, B), x, OPTEST_CONTIGUOUS);
    double tx[N];
    for (int i = 0; i < A; i++)
        for (int j = 0; j < B; j++)
            for (int k = 0; k < C; k++) tx[(i * B + j) * C + k] = x[(i * C + k) * B + j];
    tri_ref(tx, want, N, B, C, 1, false);
    optest_close("tril 1 transposed", clg_tril(clg_transpose(t, 1, 2), 1), want, N, 0, 0);
    clg_tensor *one = optest_tensor(dev, CLG_F32, CLG_SHAPE(1, B, C), x, OPTEST_CONTIGUOUS);
    for (int i = 0; i < A; i++) memcpy(tx + i * B * C, x, sizeof(double) * B * C);
    tri_ref(tx, want, N, B, C, -1, true);
    optest_close("triu -1 broadcast", clg_triu(clg_expand(one, CLG_SHAPE(A, B, C)), -1), want, N, 0, 0);
    /* a single matrix and a 4-D batch */
    tri_ref(x, want, B * C, B, C, 2, true);
    optest_close("triu 2 2-D", clg_triu(optest_tensor(dev, CLG_F32, CLG_SHAPE(B, C), x, OPTEST_SLICED), 2), want,
                 B * C, 0, 0);
    tri_ref(x, want, N, B, C, 0, false);
    optest_close("tril 4-D", clg_tril(optest_tensor(dev, CLG_F32, CLG_SHAPE(A, 1, B, C), x, OPTEST_PERMUTED), 0),
                 want, N, 0, 0);
    /* batch axes that do not merge into one stride (the kernel that unravels them) */
    double big[2 * N], tb[2 * N], want2[2 * N];
    for (int i = 0; i < N; i++) big[i] = x[i], big[N + i] = -0.5 * x[i];
    for (int a = 0; a < A; a++)
        for (int q = 0; q < 2; q++)
            memcpy(tb + (a * 2 + q) * B * C, big + (q * A + a) * B * C, sizeof(double) * B * C);
    tri_ref(tb, want2, 2 * N, B, C, 0, false);
    clg_tensor *t4 = optest_tensor(dev, CLG_F32, CLG_SHAPE(2, A, B, C), big, OPTEST_CONTIGUOUS);
    optest_close("tril 0 batch axes swapped", clg_tril(clg_transpose(t4, 0, 1), 0), want2, 2 * N, 0, 0);
    /* refusals: fewer than two axes; empty matrices are fine */
    CHECK(clg_tril(optest_tensor(dev, CLG_F32, CLG_SHAPE(C), x, OPTEST_CONTIGUOUS), 0) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_tril") && strstr(clg_device_error(dev), "[5]"), "%s",
              clg_device_error(dev));
    CHECK(clg_triu(NULL, 0) == NULL);
    clg_tensor *e = clg_triu(clg_zeros(dev, CLG_F32, CLG_SHAPE(2, 0, 3)), 0);
    CHECK_MSG(e && clg_tensor_numel(e) == 0, "triu of an empty batch: %s", clg_device_error(dev));
    clg_scope_end(dev);
    /* long axes: rows and columns past a work-group, in every layout */
    int64_t R = optest_small() ? 9 : 300, K = optest_small() ? 70 : 1100;
    double *lx = malloc(sizeof(double) * (size_t)(2 * R * K)), *lw = malloc(sizeof(double) * (size_t)(2 * R * K));
    optest_fill(lx, 2 * R * K, 1, 9, 11);
    for (int upper = 0; upper < 2; upper++) {
        tri_ref(lx, lw, 2 * R * K, R, K, upper ? 5 : -7, upper);
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            clg_scope_begin(dev);
            char w[64];
            snprintf(w, sizeof w, "%s long %s", upper ? "triu" : "tril", optest_layout_names[l]);
            optest_close(w, tri_op(optest_tensor(dev, CLG_F32, CLG_SHAPE(2, R, K), lx, (optest_layout)l),
                                   upper ? 5 : -7, upper),
                         lw, 2 * R * K, 0, 1e-7);
            clg_scope_end(dev);
        }
    }
    free(lx);
    free(lw);
}

/* contiguous() of a transposed or permuted tensor whose two innermost axes swap (copy.c
 * copy_transposed: 16 x 16 tiles, edges one by one), batched and not, from an offset,
 * in every dtype; and axpy_ of such a tensor into a contiguous one (the gradient of a
 * transpose accumulated), which copies it the same way first. */
static void test_transposed_copies(clg_device *dev)
{
    enum { B = 3, I = 37, J = 50 };   /* neither a multiple of 16: edge tiles on both sides */
    static double x[B * (J + 1) * I], want[B * I * J];
    optest_fill(x, B * (J + 1) * I, -100, 100, 31);
    for (int i = 0; i < B * (J + 1) * I; i++) x[i] = floor(x[i]);   /* exact in every dtype */
    const clg_dtype dts[] = {CLG_F32, CLG_F64, CLG_I32, CLG_F16, CLG_BF16};
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
        if (dts[di] == CLG_F64 && !optest_fp64(dev)) continue;
        clg_scope_begin(dev);
        char w[128];
        /* t: [B, J + 1, I] contiguous; its rows 1.. J as a view from an offset, permuted to [B, I, J] */
        clg_tensor *t = optest_tensor(dev, dts[di], CLG_SHAPE(B, J + 1, I), x, OPTEST_CONTIGUOUS);
        clg_tensor *v = clg_permute(clg_narrow(t, 1, 1, J), 3, (const int[]){0, 2, 1});
        for (int b = 0; b < B; b++)
            for (int i = 0; i < I; i++)
                for (int j = 0; j < J; j++) want[(b * I + i) * J + j] = x[(b * (J + 1) + j + 1) * I + i];
        snprintf(w, sizeof w, "contiguous of a permuted [3, 37, 50] %s", clg_dtype_name(dts[di]));
        optest_close(w, clg_contiguous(v), want, B * I * J, 0, 0);
        /* one matrix: transpose of [50, 37] */
        clg_tensor *m = clg_transpose(clg_narrow(clg_narrow(t, 0, 1, 1), 1, 1, J), 1, 2);
        snprintf(w, sizeof w, "contiguous of a transposed [50, 37] %s", clg_dtype_name(dts[di]));
        optest_close(w, clg_contiguous(m), want + I * J, I * J, 0, 0);
        if (dts[di] == CLG_F32 || dts[di] == CLG_F64) {
            clg_tensor *y = clg_ones(dev, dts[di], CLG_SHAPE(B, I, J));
            CHECK_OK(dev, clg_axpy_(y, 2.0, v));
            double w2[B * I * J];
            for (int i = 0; i < B * I * J; i++) w2[i] = 1 + 2 * want[i];
            snprintf(w, sizeof w, "axpy_ of a permuted [3, 37, 50] %s", clg_dtype_name(dts[di]));
            optest_close(w, y, w2, B * I * J, 0, 0);
        }
        clg_scope_end(dev);
    }
}

int main(void)
{
    clg_device *dev = check_open_device();
    dtypes[ndtypes++] = CLG_F32;
    if (optest_fp64(dev)) dtypes[ndtypes++] = CLG_F64;
    dtypes[ndtypes++] = CLG_I32;
    test_flip(dev);
    test_repeat(dev);
    test_pad(dev);
    test_tri(dev);
    /* the tiled copy on every device (the table chooses it where work-items are
     * SIMD-wide), and the strided copy it replaces there */
    const char *tiles = clg__device_params(dev)->transpose_tiles ? "on" : "off";
    for (int pass = 0; pass < 2; pass++) {
        CHECK_OK(dev, clg_device_set_param(dev, "transpose_tiles", pass ? "off" : "on"));
        test_transposed_copies(dev);
    }
    CHECK_OK(dev, clg_device_set_param(dev, "transpose_tiles", tiles));
    clg_device_close(dev);
    return check_report("test_ops_reshape");
}
