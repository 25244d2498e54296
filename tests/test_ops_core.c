/* The core ops forward against plain-C references: binary arithmetic, scalar forms,
 * comparisons and reductions, at sizes 1, 7, 33, 1000 and 4099 (not a multiple of the
 * work-group size; 4099 not under Oclgrind), on contiguous, permuted and sliced inputs
 * and with broadcasting; IEEE NaN and Inf behaviour; bit-identical results from run to
 * run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "optest.h"

/* The rows of src/tensor/binary_ops.def: ref_<name> (the row's plain-C definition). */
typedef double (*binary_ref)(double, double);
enum { K_DIFF_INT, K_DIFF, K_COMPARE, K_LOGIC };
#define CLG_BINARY(name, kind, lo, hi, alo, ahi, blo, bhi, bsign, ref, torch) \
    static double ref_##name(double a, double b) { return (ref); }
#include "binary_ops.def"
#undef CLG_BINARY

static const struct {
    const char *name;
    clg_tensor *(*op)(clg_tensor *, clg_tensor *);
    binary_ref ref;
    double lo, hi;
    int kind;
} binaries[] = {
#define CLG_BINARY(name, kind, lo, hi, ...) {#name, clg_##name, ref_##name, lo, hi, K_##kind},
#include "binary_ops.def"
#undef CLG_BINARY
};

/* a [rows, cols] op b [cols] (broadcast) and a op a2 [rows, cols] */
static void binary_sizes(clg_device *dev)
{
    /* Under Oclgrind up to 1000 (3 rows: several groups and a partial one), which takes
     * a fifth of the simulated work-items of 4099 */
    const int64_t sizes[] = {1, 7, 33, 1000, 4099};
    int nsizes = optest_small() ? 4 : 5;
    for (size_t o = 0; o < sizeof binaries / sizeof *binaries; o++)
        for (int si = 0; si < nsizes; si++) {
            int64_t n = sizes[si], rows = n > 33 ? 3 : 1, cols = n;
            double *a = malloc((size_t)(rows * cols) * sizeof *a), *b = malloc((size_t)(rows * cols) * sizeof *b);
            double *want = malloc((size_t)(rows * cols) * sizeof *want), *wb = malloc((size_t)(rows * cols) * sizeof *wb);
            optest_fill(a, rows * cols, binaries[o].lo, binaries[o].hi, 11);
            optest_fill(b, rows * cols, binaries[o].lo, binaries[o].hi, 12);
            if (binaries[o].kind == K_COMPARE)   /* ties too */
                for (int64_t i = 0; i < rows * cols; i += 3) b[i] = a[i];
            if (binaries[o].kind == K_LOGIC)   /* zeros among the truth values */
                for (int64_t i = 0; i < rows * cols; i += 4) a[i] = 0, b[(i + 2) % (rows * cols)] = 0;
            for (int64_t i = 0; i < rows * cols; i++) {
                want[i] = binaries[o].ref(a[i], b[i]);
                wb[i] = binaries[o].ref(a[i], b[i % cols]);
            }
            for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
                clg_scope_begin(dev);
                clg_tensor *ta = optest_tensor(dev, CLG_F32, CLG_SHAPE(rows, cols), a, (optest_layout)l);
                clg_tensor *tb = optest_tensor(dev, CLG_F32, CLG_SHAPE(rows, cols), b, (optest_layout)(OPTEST_LAYOUT_COUNT - 1 - l));
                clg_tensor *tr = optest_tensor(dev, CLG_F32, CLG_SHAPE(cols), b, (optest_layout)l);
                char what[128];
                snprintf(what, sizeof what, "%s n=%lld %s", binaries[o].name, (long long)n, optest_layout_names[l]);
                optest_close(what, binaries[o].op(ta, tb), want, rows * cols, 1e-6, 1e-5);
                strcat(what, " broadcast");
                optest_close(what, binaries[o].op(ta, tr), wb, rows * cols, 1e-6, 1e-5);
                clg_scope_end(dev);
            }
            free(a);
            free(b);
            free(want);
            free(wb);
        }
}

/* In float64 where the device has it, else float32 (where 1 / 3 is 1 ulp off). */
static void scalars_and_ieee(clg_device *dev)
{
    double x[8] = {-2, -0.5, 0, 0.5, 3, INFINITY, -INFINITY, NAN};
    double w[8];
    clg_dtype dt = optest_precise(dev);
    double atol = optest_tol(dt, 1e-12, 1e-6), rtol = optest_tol(dt, 1e-12, 2e-7);
    clg_scope_begin(dev);
    clg_tensor *t = optest_tensor(dev, dt, CLG_SHAPE(8), x, OPTEST_SLICED);
    for (int i = 0; i < 8; i++) w[i] = x[i] * 2.5 + 1;
    optest_close("mul_scalar add_scalar", clg_add_scalar(clg_mul_scalar(t, 2.5), 1), w, 8, atol, 0);
    for (int i = 0; i < 8; i++) w[i] = 3 - x[i];
    optest_close("rsub_scalar", clg_rsub_scalar(3, t), w, 8, atol, 0);
    for (int i = 0; i < 8; i++) w[i] = 1.0 / x[i];
    optest_close("rdiv_scalar (1/0 = inf)", clg_rdiv_scalar(1, t), w, 8, atol, rtol);
    for (int i = 0; i < 8; i++) w[i] = x[i] / 4;
    optest_close("div_scalar", clg_div_scalar(t, 4), w, 8, atol, 0);
    for (int i = 0; i < 8; i++) w[i] = x[i] - 1;
    optest_close("sub_scalar", clg_sub_scalar(t, 1), w, 8, atol, 0);
    for (int i = 0; i < 8; i++) w[i] = pow(x[i], 2.0);
    optest_close("pow_scalar", clg_pow_scalar(t, 2.0), w, 8, atol, rtol);
    for (int i = 0; i < 8; i++) w[i] = pow(x[i], 3.0);   /* squares and cubes by products */
    optest_close("pow_scalar 3", clg_pow_scalar(t, 3.0), w, 8, atol, rtol);
    for (int i = 0; i < 8; i++) w[i] = pow(fabs(x[i]), 0.5);
    optest_close("pow_scalar 0.5", clg_pow_scalar(clg_abs(t), 0.5), w, 8, atol, rtol);
    /* NaN wins in maximum/minimum and max/min reductions; sums propagate NaN and Inf */
    double y[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    clg_tensor *ones = optest_tensor(dev, dt, CLG_SHAPE(8), y, OPTEST_CONTIGUOUS);
    for (int i = 0; i < 8; i++) w[i] = ref_maximum(x[i], 1);
    optest_close("maximum with NaN and Inf", clg_maximum(t, ones), w, 8, 0, 0);
    for (int i = 0; i < 8; i++) w[i] = ref_minimum(1, x[i]) == 1 && isnan(x[i]) ? NAN : (x[i] < 1 ? x[i] : 1);
    double mx = NAN, sm = NAN;
    optest_close("max with NaN", clg_max(t, 0, NULL, false), &mx, 1, 0, 0);
    optest_close("sum with NaN", clg_sum(t, 0, NULL, false), &sm, 1, 0, 0);
    double inf = INFINITY;
    clg_tensor *no_nan = clg_narrow(t, 0, 0, 6);
    optest_close("sum with Inf", clg_sum(no_nan, 0, NULL, false), &inf, 1, 0, 0);
    double mn = -INFINITY;
    optest_close("min with -Inf", clg_min(clg_narrow(t, 0, 0, 7), 0, NULL, false), &mn, 1, 0, 0);
    clg_scope_end(dev);
}

/* Rows of 37 in float32 (two 16-wide vectors and a tail: the vector kernels where the
 * table says row_reduce = items): NaN in a vector's lane, in the tail, or nowhere; max,
 * min, sum and prod along them. */
static void vector_row_reductions(clg_device *dev)
{
    clg_scope_begin(dev);
    double rows[3 * 37], want[4][3];
    for (int r = 0; r < 3; r++) {
        double mxr = -INFINITY, mnr = INFINITY, smr = 0, pr = 1;
        for (int c = 0; c < 37; c++) {
            double v = 0.5 + 0.03 * ((r * 37 + c) % 29);
            if ((r == 0 && c == 21) || (r == 1 && c == 35)) v = NAN;
            optest_round(CLG_F32, &v, 1);
            rows[r * 37 + c] = v;
            mxr = isnan(v) || isnan(mxr) ? NAN : fmax(mxr, v);
            mnr = isnan(v) || isnan(mnr) ? NAN : fmin(mnr, v);
            smr += v;
            pr *= v;
        }
        want[0][r] = mxr, want[1][r] = mnr, want[2][r] = smr, want[3][r] = pr;
    }
    clg_tensor *rt = optest_tensor(dev, CLG_F32, CLG_SHAPE(3, 37), rows, OPTEST_CONTIGUOUS);
    optest_close("max of rows of 37 with NaN", clg_max(rt, CLG_AXES(1), false), want[0], 3, 0, 0);
    optest_close("min of rows of 37 with NaN", clg_min(rt, CLG_AXES(1), false), want[1], 3, 0, 0);
    optest_close("sum of rows of 37 with NaN", clg_sum(rt, CLG_AXES(1), false), want[2], 3, 1e-6, 1e-6);
    optest_close("prod of rows of 37 with NaN", clg_prod(rt, CLG_AXES(1), false), want[3], 3, 1e-6, 1e-5);
    clg_scope_end(dev);
}

/* Reductions over every axis set of a [4, 33, 5] tensor in every layout, and long ones. */
static void reductions(clg_device *dev)
{
    enum { A = 4, B = 33, C = 5 };
    double x[A * B * C];
    optest_fill(x, A * B * C, -1, 1, 21);
    for (int mask = 1; mask < 8; mask++) {
        int axes[3], na = 0;
        for (int d = 0; d < 3; d++)
            if (mask & (1 << d)) axes[na++] = d;
        int64_t dims[3] = {A, B, C}, out = 1;
        for (int d = 0; d < 3; d++)
            if (!(mask & (1 << d))) out *= dims[d];
        double *ws = calloc((size_t)out, sizeof *ws), *wm = calloc((size_t)out, sizeof *wm);
        double *wx = malloc((size_t)out * sizeof *wx), *wn = malloc((size_t)out * sizeof *wn);
        for (int64_t o = 0; o < out; o++) wx[o] = -INFINITY, wn[o] = INFINITY;
        int64_t count = (A * B * C) / out;
        for (int i = 0; i < A; i++)
            for (int j = 0; j < B; j++)
                for (int k = 0; k < C; k++) {
                    int64_t o = 0, idx[3] = {i, j, k};
                    for (int d = 0; d < 3; d++)
                        if (!(mask & (1 << d))) o = o * dims[d] + idx[d];
                    double v = x[(i * B + j) * C + k];
                    ws[o] += v;
                    wm[o] += v / (double)count;
                    if (v > wx[o]) wx[o] = v;
                    if (v < wn[o]) wn[o] = v;
                }
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            clg_scope_begin(dev);
            clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(A, B, C), x, (optest_layout)l);
            char what[96];
            snprintf(what, sizeof what, "reduce mask %d %s", mask, optest_layout_names[l]);
            optest_close(what, clg_sum(t, na, axes, false), ws, out, 1e-5, 1e-5);
            clg_tensor *m = clg_mean(t, na, axes, true);
            CHECK(m && clg_tensor_ndim(m) == 3);
            optest_close(what, m, wm, out, 1e-6, 1e-5);
            /* exact up to the float32 rounding of the inputs */
            optest_close(what, clg_max(t, na, axes, false), wx, out, 0, 1e-7);
            optest_close(what, clg_min(t, na, axes, false), wn, out, 0, 1e-7);
            clg_scope_end(dev);
        }
        free(ws);
        free(wm);
        free(wx);
        free(wn);
    }
    /* long reductions take the two-pass path (R >= 4096): float64 exact to 1e-12,
     * float32 within the roundings of its partial sums of ~2000 terms each */
    const int64_t n = optest_small() ? 9001 : 300007;
    /* float32 too where the precise type is float64: its rows add in vectors (reduce_sum_vec) */
    clg_dtype dts[2] = {optest_precise(dev), CLG_F32};
    for (int d = 0; d < (dts[0] == CLG_F32 ? 1 : 2); d++) {
        clg_dtype dt = dts[d];
        double *v = malloc((size_t)n * sizeof *v), s = 0;
        optest_fill(v, n, 0, 1, 5);
        optest_round(dt, v, n);
        for (int64_t i = 0; i < n; i++) s += v[i];
        clg_scope_begin(dev);
        clg_tensor *t = optest_tensor(dev, dt, CLG_SHAPE(n), v, OPTEST_CONTIGUOUS);
        char what[64];
        snprintf(what, sizeof what, "sum of %lld %s", (long long)n, clg_dtype_name(dt));
        optest_close(what, clg_sum(t, 0, NULL, false), &s, 1, optest_tol(dt, 1e-9, 0), optest_tol(dt, 1e-12, 2e-5));
        double m = s / (double)n;
        snprintf(what, sizeof what, "mean of %lld %s", (long long)n, clg_dtype_name(dt));
        optest_close(what, clg_mean(t, CLG_AXES(0), false), &m, 1, optest_tol(dt, 1e-12, 0), optest_tol(dt, 1e-12, 2e-5));
        /* three rows of n / 3 + 1: rows side by side, each split over launches */
        int64_t r = n / 3;
        double rs[3] = {0, 0, 0};
        for (int64_t i = 0; i < 3 * r; i++) rs[i / r] += v[i];
        clg_tensor *rows = clg_reshape(clg_narrow(t, 0, 0, 3 * r), CLG_SHAPE(3, r));
        snprintf(what, sizeof what, "row sums of [3, %lld] %s", (long long)r, clg_dtype_name(dt));
        optest_close(what, clg_sum(rows, CLG_AXES(1), false), rs, 3, optest_tol(dt, 1e-9, 0), optest_tol(dt, 1e-12, 2e-5));
        clg_scope_end(dev);
        free(v);
    }
    /* Many columns summed over rows far apart (a convolution's weight gradients over the
     * batch): in chunks of 16 rows, the last shorter, then over the chunks. */
    enum { CR = 101, CK = 4099 };
    double *v = malloc((size_t)CR * CK * sizeof *v), *cs = calloc(CK, sizeof *cs);
    optest_fill(v, CR * CK, -1, 1, 8);
    optest_round(CLG_F32, v, CR * CK);
    for (int i = 0; i < CR * CK; i++) cs[i % CK] += v[i];
    clg_scope_begin(dev);
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(CR, CK), v, OPTEST_CONTIGUOUS);
    optest_close("column sums of [101, 4099]", clg_sum(t, CLG_AXES(0), false), cs, CK, 1e-5, 1e-5);
    clg_scope_end(dev);
    free(v);
    free(cs);
}

/* prod, logsumexp, std, the norms and argmin against references over every set of
 * axes of a [4, 6, 5] input, in every layout. Each result gathers its slice first. */
enum { RA = 4, RB = 6, RC = 5, RN = RA * RB * RC };

static int slices(int mask, double *const x, double slice[][RN], int *len)
{
    int64_t dims[3] = {RA, RB, RC};
    int out = 1;
    for (int d = 0; d < 3; d++)
        if (!(mask & (1 << d))) out *= (int)dims[d];
    for (int o = 0; o < out; o++) len[o] = 0;
    for (int i = 0; i < RA; i++)
        for (int j = 0; j < RB; j++)
            for (int k = 0; k < RC; k++) {
                int64_t o = 0, idx[3] = {i, j, k};
                for (int d = 0; d < 3; d++)
                    if (!(mask & (1 << d))) o = o * dims[d] + idx[d];
                slice[o][len[o]++] = x[(i * RB + j) * RC + k];
            }
    return out;
}

static void more_reductions(clg_device *dev)
{
    static double x[RN], slice[RN][RN];
    static int len[RN];
    optest_fill(x, RN, -1.5, 1.5, 23);
    optest_round(CLG_F32, x, RN);
    for (int mask = 1; mask < 8; mask++) {
        int axes[3], na = 0;
        for (int d = 0; d < 3; d++)
            if (mask & (1 << d)) axes[na++] = d;
        int out = slices(mask, x, slice, len);
        double wp[RN], wl[RN], wsd[RN], w1[RN], w2[RN], wi[RN];
        for (int o = 0; o < out; o++) {
            double p = 1, m = -INFINITY, se = 0, s = 0, ss = 0, a1 = 0, a2 = 0, ai = 0;
            for (int r = 0; r < len[o]; r++) {
                double v = slice[o][r];
                p *= v, s += v, a1 += fabs(v), a2 += v * v;
                if (v > m) m = v;
                if (fabs(v) > ai) ai = fabs(v);
            }
            for (int r = 0; r < len[o]; r++) {
                se += exp(slice[o][r] - m);
                ss += (slice[o][r] - s / len[o]) * (slice[o][r] - s / len[o]);
            }
            wp[o] = p, wl[o] = m + log(se), wsd[o] = sqrt(ss / (len[o] - 1)), w1[o] = a1, w2[o] = sqrt(a2), wi[o] = ai;
        }
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            clg_scope_begin(dev);
            clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(RA, RB, RC), x, (optest_layout)l);
            char what[96];
            snprintf(what, sizeof what, "prod mask %d %s", mask, optest_layout_names[l]);
            optest_close(what, clg_prod(t, na, axes, false), wp, out, 1e-7, 1e-5);
            snprintf(what, sizeof what, "logsumexp mask %d %s", mask, optest_layout_names[l]);
            clg_tensor *ls = clg_logsumexp(t, na, axes, true);
            CHECK_MSG(ls && clg_tensor_ndim(ls) == 3, "%s: keepdim", what);
            optest_close(what, ls, wl, out, 1e-6, 1e-5);
            snprintf(what, sizeof what, "std mask %d %s", mask, optest_layout_names[l]);
            optest_close(what, clg_std(t, na, axes, 1, false), wsd, out, 1e-6, 1e-5);
            snprintf(what, sizeof what, "norm 1, 2, inf mask %d %s", mask, optest_layout_names[l]);
            optest_close(what, clg_norm(t, 1, na, axes, false), w1, out, 1e-6, 1e-5);
            optest_close(what, clg_norm(t, 2, na, axes, false), w2, out, 1e-6, 1e-5);
            optest_close(what, clg_norm(t, INFINITY, na, axes, false), wi, out, 0, 1e-7);
            clg_scope_end(dev);
        }
    }
    clg_scope_begin(dev);
    /* argmin: the first smallest, NaN first of all; int32 too */
    const double am[2 * 5] = {3, 1, 1, 2, 5, 4, NAN, -2, NAN, -2};
    clg_tensor *ta = optest_tensor(dev, CLG_F32, CLG_SHAPE(2, 5), am, OPTEST_CONTIGUOUS);
    optest_close("argmin rows, ties, NaN", clg_argmin(ta, 1, false), (double[]){1, 1}, 2, 0, 0);
    optest_close("argmin columns", clg_argmin(ta, 0, false), (double[]){0, 1, 1, 1, 1}, 5, 0, 0);
    const double ai[6] = {4, -1, 7, -1, 0, 3};
    clg_tensor *ti = optest_tensor(dev, CLG_I32, CLG_SHAPE(6), ai, OPTEST_CONTIGUOUS);
    optest_close("argmin int32", clg_argmin(ti, 0, true), (double[]){1}, 1, 0, 0);
    /* logsumexp of -inf rows is -inf, of a +inf row +inf, never NaN */
    const double inf[6] = {-INFINITY, -INFINITY, -INFINITY, 1, INFINITY, 2};
    clg_tensor *tinf = optest_tensor(dev, CLG_F32, CLG_SHAPE(2, 3), inf, OPTEST_CONTIGUOUS);
    optest_close("logsumexp infinities", clg_logsumexp(tinf, CLG_AXES(1), false), (double[]){-INFINITY, INFINITY}, 2,
                 0, 0);
    /* prod with zeros, and an empty product */
    const double z[6] = {2, 0, 3, 0, 0, 5};
    clg_tensor *tz = optest_tensor(dev, CLG_F32, CLG_SHAPE(2, 3), z, OPTEST_CONTIGUOUS);
    optest_close("prod with zeros", clg_prod(tz, CLG_AXES(1), false), (double[]){0, 0}, 2, 0, 0);
    optest_close("empty prod", clg_prod(clg_zeros(dev, CLG_F32, CLG_SHAPE(3, 0)), CLG_AXES(1), false),
                 (double[]){1, 1, 1}, 3, 0, 0);
    /* products whose running value leaves float's range and comes back, where a plain
     * float product gives 0 or infinity: 0.5^1000 * 2^1000 in chunks (each chunk's
     * partial product in range); and 252 rows of 128 in one chunk each (a lane of the
     * vector kernel going down to 1e-240 or up to 1e240 and back), along rows and
     * down columns (strided); all of 1e-30 is 0; NaN, and 0 * inf. Chunks whose own
     * products leave float's range still round there (partial results are floats). */
    {
        enum { PR = 6, PL = 2000, QL = 128, QC = 42, QR = PR * QC };
        static double v[PR * PL], vt[PR * PL], q[QR * QL], qt[QR * QL], wq[QR];
        const float tiny = 1e-30f, huge = 1e30f;
        for (int j = 0; j < PL; j++) {
            v[0 * PL + j] = j < PL / 2 ? 0.5 : 2;
            v[1 * PL + j] = j < 200 ? 2 : j == PL - 1 ? tiny : 1;
            v[2 * PL + j] = 0.5;
            v[3 * PL + j] = j < PL / 2 ? 2 : 0.5;
            v[4 * PL + j] = j == 700 ? NAN : 1.5;
            v[5 * PL + j] = j == 3 ? 0 : j == 1500 ? INFINITY : 1;
        }
        for (int r = 0; r < PR; r++)
            for (int j = 0; j < PL; j++) vt[j * PR + r] = v[r * PL + j];
        const double want[PR] = {1, ldexp((double)tiny, 200), 0, 1, NAN, NAN};
        clg_tensor *pc = optest_tensor(dev, CLG_F32, CLG_SHAPE(PL, PR), vt, OPTEST_CONTIGUOUS);
        optest_close("prod through float's range, columns in chunks", clg_prod(pc, CLG_AXES(0), false), want, PR,
                     0, 1e-5);
        const double one = pow((double)tiny * (double)huge, QL / 2);
        const double wrow[PR] = {one, one, 0, 1.5, NAN, NAN};
        for (int r = 0; r < QR; r++) {
            for (int j = 0; j < QL; j++) {
                double *e = &q[r * QL + j];
                switch (r % PR) {
                case 0: *e = j < QL / 2 ? tiny : huge; break;
                case 1: *e = j < QL / 2 ? huge : tiny; break;
                case 2: *e = tiny; break;
                case 3: *e = j == 5 ? 1.5 : 1; break;
                case 4: *e = j == 70 ? NAN : 1; break;
                default: *e = j == 3 ? 0 : j == 100 ? INFINITY : 1;
                }
                qt[j * QR + r] = *e;
            }
            wq[r] = wrow[r % PR];
        }
        clg_tensor *qr = optest_tensor(dev, CLG_F32, CLG_SHAPE(QR, QL), q, OPTEST_CONTIGUOUS);
        clg_tensor *qc = optest_tensor(dev, CLG_F32, CLG_SHAPE(QL, QR), qt, OPTEST_CONTIGUOUS);
        optest_close("prod through float's range, rows", clg_prod(qr, CLG_AXES(1), false), wq, QR, 0, 1e-5);
        optest_close("prod through float's range, columns", clg_prod(qc, CLG_AXES(0), false), wq, QR, 0, 1e-5);
    }
    /* Many short rows: 16 rows a work-item (reduce_prod_rows16) where the device has few
     * units, and 20 rows (reduce_prod_vec); 100 rows (a last group of 4), rows shorter than a vector, with a tail after
     * whole vectors, of several vectors; magnitudes that leave float's range and come
     * back, zeros, NaN, infinity, 0 * inf and subnormals; in float32 and 16-bit storage. */
    {
        enum { SMAX = 100 };
        static const int lens[] = {5, 37, 64, 200}, rows[] = {SMAX, 20};   /* 20: one row a work-item */
        static double sv[SMAX * 200], sw[SMAX];
        const clg_dtype types[] = {CLG_F32, CLG_F16, CLG_BF16};
        for (size_t ri = 0; ri < 2; ri++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
            for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
                int L = lens[li], SM = rows[ri];
                clg_dtype dt = types[ti];
                bool f32 = dt == CLG_F32;
                for (int r = 0; r < SM; r++) {
                    for (int j = 0; j < L; j++) {
                        double *e = &sv[r * L + j];
                        switch (r % 7) {
                        case 0: *e = f32 ? (j % 2 ? 1e30 : 1e-30) : (j % 2 ? 1e4 : 1e-4); break;   /* in and out of range */
                        case 1: *e = j == L / 2 ? 0 : 1.25; break;
                        case 2: *e = j == L - 1 ? NAN : 0.75; break;
                        case 3: *e = j == 0 ? INFINITY : j == L - 1 ? 0 : 1; break;   /* 0 * inf */
                        case 4: *e = j == 1 % L ? (f32 ? 1e-40 : 1e-6) : f32 ? 1.5 : 1.01; break;   /* subnormal */
                        case 5: *e = j == 2 % L ? -INFINITY : 0.9; break;
                        default: *e = 0.5 + 0.01 * ((r * L + j) % 97) - (j % 5 == 0); break;
                        }
                    }
                    optest_round(dt, &sv[r * L], L);
                    double p = 1;
                    for (int j = 0; j < L; j++) p *= sv[r * L + j];
                    sw[r] = p;
                }
                clg_scope_begin(dev);
                char what[96];
                snprintf(what, sizeof what, "prod of %d rows of %d, %s", SM, L, clg_dtype_name(dt));
                clg_tensor *st = optest_tensor(dev, dt, CLG_SHAPE(SM, L), sv, OPTEST_CONTIGUOUS);
                /* 16 bits: a product under the type's range rounds to 0 */
                optest_close(what, clg_cast(clg_prod(st, CLG_AXES(1), false), CLG_F32), sw, SM, f32 ? 0 : 1e-7,
                             f32 ? 1e-5 : 1e-2);
                clg_scope_end(dev);
            }
    }
    /* Long rows: products in runs of 64 vectors (reduce_prod_vec's fast way), chunked or
     * not; values near 1, huge and tiny in turn, and rows where a zero, an infinity or a
     * NaN (the careful way) comes late. */
    {
        enum { LM = 5, LL = 3001 };
        static double lv[LM * LL], lw[LM];
        for (int r = 0; r < LM; r++) {
            double p = 1;
            for (int j = 0; j < LL; j++) {
                double *e = &lv[r * LL + j];
                *e = r == 1 ? (j % 2 ? 1e30 : 1e-30) : 0.95 + 0.1 * ((j * 37 + r) % 101) / 101.0;
                if (r == 2 && j == 2500) *e = 0;
                if (r == 3 && j == 2999) *e = INFINITY;
                if (r == 4 && j == 1800) *e = NAN;
                optest_round(CLG_F32, e, 1);
                p *= *e;
            }
            lw[r] = p;
        }
        clg_scope_begin(dev);
        clg_tensor *lt = optest_tensor(dev, CLG_F32, CLG_SHAPE(LM, LL), lv, OPTEST_CONTIGUOUS);
        optest_close("prod of long rows", clg_prod(lt, CLG_AXES(1), false), lw, LM, 0, 1e-4);
        clg_scope_end(dev);
    }
    optest_close("empty 2-norm", clg_norm(clg_zeros(dev, CLG_F32, CLG_SHAPE(3, 0)), 2, CLG_AXES(1), false),
                 (double[]){0, 0, 0}, 3, 0, 0);
    CHECK(clg_norm(tz, 3, 0, NULL, false) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_norm") && strstr(clg_device_error(dev), "p = 3"), "%s",
              clg_device_error(dev));
    CHECK(clg_prod(clg_ones(dev, CLG_I32, CLG_SHAPE(3)), 0, NULL, false) == NULL);
    clg_scope_end(dev);
}

/* The 2-norm of a few long rows, in float32 and float64: reduce.c spreads each row over
 * chunks and adds the chunks' sums of squares in a second pass (plain sums, not squares
 * again). Under Oclgrind (item_loops 256) rows of 3000 split too. */
static void norm_long_rows(clg_device *dev)
{
    enum { ROWS = 3, MAXLEN = 50000 };
    static double x[ROWS * MAXLEN];
    const int LEN = optest_small() ? 3000 : MAXLEN;
    double want[ROWS];
    optest_fill(x, ROWS * LEN, -1.5, 1.5, 31);
    optest_round(CLG_F32, x, ROWS * LEN);
    for (int r = 0; r < ROWS; r++) {
        double s = 0;
        for (int i = 0; i < LEN; i++) s += x[r * LEN + i] * x[r * LEN + i];
        want[r] = sqrt(s);
    }
    for (int di = 0; di < 1 + optest_fp64(dev); di++) {
        clg_dtype dt = di ? CLG_F64 : CLG_F32;
        clg_scope_begin(dev);
        clg_tensor *t = optest_tensor(dev, dt, CLG_SHAPE(ROWS, LEN), x, OPTEST_CONTIGUOUS);
        optest_close(di ? "2-norm of long rows, float64" : "2-norm of long rows, float32",
                     clg_norm(t, 2, CLG_AXES(1), false), want, ROWS, 1e-6, 1e-5);
        clg_scope_end(dev);
    }
    /* Every element in one reduction, chunked to fill the device's compute units (150,000
     * in 1,021 chunks of 147 where the table gives 2 groups of 256 items to each of 2
     * units): sum, max, min, mean (float32 sums of 150,000 terms of magnitude 112,000 in
     * all: 0.05 is 4e-7 of it); max of -|x| and min of |x|, where a chunk's 0 in place
     * of -inf or inf would show. */
    double sum = 0, mx = -INFINITY, mn = INFINITY;
    for (int i = 0; i < ROWS * LEN; i++) sum += x[i], mx = fmax(mx, -fabs(x[i])), mn = fmin(mn, fabs(x[i]));
    clg_scope_begin(dev);
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(ROWS, LEN), x, OPTEST_CONTIGUOUS), *a = clg_abs(t);
    optest_close("sum of all of long rows", clg_sum(t, 0, NULL, false), &sum, 1, 0.05, 0);
    optest_close("max of all of long rows", clg_max(clg_neg(a), 0, NULL, false), &mx, 1, 0, 0);
    optest_close("min of all of long rows", clg_min(a, 0, NULL, false), &mn, 1, 0, 0);
    double mean = sum / (ROWS * LEN);
    optest_close("mean of all of long rows", clg_mean(t, 0, NULL, false), &mean, 1, 1e-6, 0);
    clg_scope_end(dev);
    /* max and min of two long rows, the first in [-2, -1], the second in [1, 2]: no chunk
     * of the first row may see the second (an empty chunk's first element was the next
     * row's, in the kernels that start from it: float64 here) */
    enum { TWO_MAX = 40000 };
    static double two[2 * TWO_MAX];
    const int TWO = optest_small() ? 3000 : TWO_MAX;   /* the simulator's item_loops is 256 */
    optest_fill(two, 2 * TWO, 1, 2, 5);
    for (int i = 0; i < TWO; i++) two[i] = -two[i];
    optest_round(CLG_F32, two, 2 * TWO);
    double wmax[2] = {-INFINITY, -INFINITY}, wmin[2] = {INFINITY, INFINITY};
    for (int i = 0; i < 2 * TWO; i++) {
        wmax[i / TWO] = fmax(wmax[i / TWO], two[i]);
        wmin[i / TWO] = fmin(wmin[i / TWO], two[i]);
    }
    for (int di = 0; di < 1 + optest_fp64(dev); di++) {
        clg_scope_begin(dev);
        clg_tensor *t2 = optest_tensor(dev, di ? CLG_F64 : CLG_F32, CLG_SHAPE(2, TWO), two, OPTEST_CONTIGUOUS);
        optest_close(di ? "max of two long rows, float64" : "max of two long rows, float32",
                     clg_max(t2, CLG_AXES(1), false), wmax, 2, 0, 0);
        optest_close(di ? "min of two long rows, float64" : "min of two long rows, float32",
                     clg_min(t2, CLG_AXES(1), false), wmin, 2, 0, 0);
        clg_scope_end(dev);
    }
}

/* Reductions down columns, [B, R, K] over R with K a multiple of 16 (reduce_*_cols16
 * where the device's items are SIMD threads, 16 columns an item; the scalar kernels
 * elsewhere): one pass and chunked (several passes), a NaN in one column only (max and
 * min: that column's result alone is NaN), float32 and 16-bit storage. */
static void column_reductions(clg_device *dev)
{
    /* the simulator (CLG_TEST_SMALL) splits the smaller ones: its item_loops is 256 */
    static const int64_t big[][3] = {{1, 7, 16}, {1, 300, 48}, {1, 5000, 32}, {1, 70, 1040}, {3, 700, 64}};
    static const int64_t small[][3] = {{1, 7, 16}, {1, 300, 48}, {1, 600, 32}, {1, 70, 272}, {3, 300, 64}};
    const int64_t(*shapes)[3] = optest_small() ? small : big;
    for (int s = 0; s < 5; s++) {
        int64_t B = shapes[s][0], R = shapes[s][1], K = shapes[s][2], n = B * R * K;
        double *x = malloc((size_t)n * sizeof *x), *want = malloc((size_t)(5 * B * K) * sizeof *want);
        optest_fill(x, n, -2, 2, (uint64_t)(n + s));
        optest_round(CLG_F32, x, n);
        x[(B - 1) * R * K + (R / 2) * K + 5] = NAN;   /* column 5 of the last slice */
        for (int64_t b = 0; b < B; b++)
            for (int64_t k = 0; k < K; k++) {
                double sum = 0, sq = 0, mx = -INFINITY, mn = INFINITY;
                bool nan = false;
                for (int64_t r = 0; r < R; r++) {
                    double v = x[(b * R + r) * K + k];
                    nan = nan || isnan(v);
                    sum += v, sq += v * v, mx = fmax(mx, v), mn = fmin(mn, v);
                }
                int64_t o = b * K + k;
                want[o] = sum, want[B * K + o] = sum / (double)R, want[2 * B * K + o] = nan ? NAN : mx;
                want[3 * B * K + o] = nan ? NAN : mn, want[4 * B * K + o] = sqrt(sq);
            }
        char what[96];
        clg_scope_begin(dev);
        clg_tensor *t = optest_tensor(dev, CLG_F32, 3, shapes[s], x, OPTEST_CONTIGUOUS);
        clg_tensor *got[5] = {clg_sum(t, CLG_AXES(1), false), clg_mean(t, CLG_AXES(1), false),
                              clg_max(t, CLG_AXES(1), false), clg_min(t, CLG_AXES(1), false),
                              clg_norm(t, 2, CLG_AXES(1), false)};
        static const char *names[5] = {"sum", "mean", "max", "min", "2-norm"};
        for (int i = 0; i < 5; i++) {
            snprintf(what, sizeof what, "%s down the columns of [%lld, %lld, %lld]", names[i], (long long)B,
                     (long long)R, (long long)K);
            optest_close(what, got[i], want + i * B * K, B * K, 1e-4, 1e-5);
        }
        /* 16-bit storage: float32 sums of the rounded values, rounded once */
        for (int h = 0; h < 2; h++) {
            clg_dtype dt = h ? CLG_BF16 : CLG_F16;
            snprintf(what, sizeof what, "sum down the columns of [%lld, %lld, %lld], %s", (long long)B, (long long)R,
                     (long long)K, clg_dtype_name(dt));
            optest_close(what, clg_sum(clg_cast(t, dt), CLG_AXES(1), false), want, B * K, 0.05 * sqrt((double)R),
                         h ? 1e-2 : 2e-3);
        }
        clg_scope_end(dev);
        free(x);
        free(want);
    }
}

/* The same computation twice: the same bits. */
static void deterministic(clg_device *dev)
{
    float r[2][64];
    for (int run = 0; run < 2; run++) {
        clg_scope_begin(dev);
        clg_manual_seed(dev, 42);
        clg_tensor *a = clg_randn(dev, CLG_F32, CLG_SHAPE(64, 300), 0, 1);
        clg_tensor *b = clg_randn(dev, CLG_F32, CLG_SHAPE(300, 64), 0, 1);
        clg_tensor *c = clg_sum(clg_matmul(a, b), CLG_AXES(0), false);
        CHECK_OK(dev, clg_tensor_to_host(c, r[run], sizeof r[run]));
        clg_scope_end(dev);
    }
    CHECK(memcmp(r[0], r[1], sizeof r[0]) == 0);
}

/* Operands broadcast along the row ([M, 1] against [M, N]: the rowsu kernels, whose
 * inputs' row strides are compiled in, common.cl) in every kernel family that takes
 * them: one input (exp of an expanded column), two (mul, pow, eq, either side), three
 * (mse's gradient, the loss's scalar gradient spread), where (mask, a or b
 * broadcast) and its backward with a broadcast gradient, and copy. N is past
 * llvmpipe's rows_min, so rusticl takes these kernels too. */
static void rows_broadcast(clg_device *dev)
{
    enum { M = 5, N = 70 };
    double col[M], full[M * N], full2[M * N], mask[M], want[M * N];
    optest_fill(col, M, 0.5, 2, 61);
    optest_fill(full, M * N, 0.5, 2, 62);
    optest_fill(full2, M * N, 0.5, 2, 63);
    for (int i = 0; i < M; i++) mask[i] = i % 2;
    full[3] = col[0];   /* one equal pair for eq */
    clg_scope_begin(dev);
    clg_tensor *c = optest_tensor(dev, CLG_F32, CLG_SHAPE(M, 1), col, OPTEST_CONTIGUOUS);
    clg_tensor *x = optest_tensor(dev, CLG_F32, CLG_SHAPE(M, N), full, OPTEST_CONTIGUOUS);
    clg_tensor *x2 = optest_tensor(dev, CLG_F32, CLG_SHAPE(M, N), full2, OPTEST_CONTIGUOUS);
    clg_tensor *ce = clg_expand(c, CLG_SHAPE(M, N));
#define EACH(expr) for (int i = 0; i < M; i++) for (int j = 0; j < N; j++) want[i * N + j] = (expr)
    EACH(col[i]);
    optest_close("rows broadcast: copy of an expanded column", clg_contiguous(ce), want, M * N, 1e-7, 1e-6);
    EACH(exp(col[i]));
    optest_close("rows broadcast: exp of an expanded column", clg_exp(ce), want, M * N, 1e-6, 1e-6);
    EACH(full[i * N + j] * col[i]);
    optest_close("rows broadcast: mul, column second", clg_mul(x, c), want, M * N, 1e-6, 1e-6);
    EACH(pow(col[i], full[i * N + j]));
    optest_close("rows broadcast: pow, column first", clg_pow(c, x), want, M * N, 1e-5, 1e-5);
    EACH(full[i * N + j] == col[i]);
    optest_close("rows broadcast: eq", clg_eq(x, c), want, M * N, 0, 0);
    clg_tensor *mc = optest_tensor(dev, CLG_F32, CLG_SHAPE(M, 1), mask, OPTEST_CONTIGUOUS);
    EACH(mask[i] ? full[i * N + j] : full2[i * N + j]);
    optest_close("rows broadcast: where, mask a column", clg_where(mc, x, x2), want, M * N, 1e-7, 1e-6);
    EACH(full[i * N + j] > 1 ? col[i] : full2[i * N + j]);
    clg_tensor *gt1 = clg_gt(x, clg_full(dev, CLG_F32, 0, NULL, 1.0));
    optest_close("rows broadcast: where, a a column", clg_where(gt1, c, x2), want, M * N, 1e-7, 1e-6);
    EACH(full[i * N + j] > 1 ? full2[i * N + j] : col[i]);
    optest_close("rows broadcast: where, b a column", clg_where(gt1, x2, c), want, M * N, 1e-7, 1e-6);
    /* backward passes with the gradient a column spread over the rows */
    clg_tensor *xa = optest_tensor(dev, CLG_F32, CLG_SHAPE(M, N), full, OPTEST_CONTIGUOUS);
    CHECK_OK(dev, clg_tensor_set_requires_grad(xa, true));
    CHECK_OK(dev, clg_backward(clg_where(gt1, xa, x2), ce));
    EACH(full[i * N + j] > 1 ? col[i] : 0);
    optest_close("rows broadcast: where's backward, gradient a column", clg_tensor_grad(xa), want, M * N, 1e-7, 1e-6);
    clg_tensor_clear_grad(xa);
    CHECK_OK(dev, clg_backward(clg_where(mc, xa, x2), x2));
    EACH(mask[i] ? full2[i * N + j] : 0);
    optest_close("rows broadcast: where's backward, mask a column", clg_tensor_grad(xa), want, M * N, 1e-7, 1e-6);
    clg_tensor_clear_grad(xa);
    CHECK_OK(dev, clg_backward(clg_mse(xa, x2, CLG_REDUCE_NONE), ce));
    EACH(2 * (full[i * N + j] - full2[i * N + j]) * col[i]);
    optest_close("rows broadcast: mse's gradient, gradient a column", clg_tensor_grad(xa), want, M * N, 1e-6, 1e-5);
#undef EACH
    clg_scope_end(dev);
}

/* Comparisons and logic on NaN, signed zeros and int32: nonzero is true, NaN too. */
static void logic(clg_device *dev)
{
    clg_scope_begin(dev);
    const double a[6] = {NAN, 0.0, -0.0, 2, -1, 0.5}, b[6] = {NAN, -0.0, 1, 2, 0, NAN};
    clg_tensor *ta = optest_tensor(dev, CLG_F32, CLG_SHAPE(6), a, OPTEST_CONTIGUOUS);
    clg_tensor *tb = optest_tensor(dev, CLG_F32, CLG_SHAPE(6), b, OPTEST_CONTIGUOUS);
    optest_close("ne NaN, signed zeros", clg_ne(ta, tb), (double[]){1, 0, 1, 0, 1, 1}, 6, 0, 0);
    optest_close("le NaN, signed zeros", clg_le(ta, tb), (double[]){0, 1, 1, 1, 1, 0}, 6, 0, 0);
    optest_close("logical_and NaN", clg_logical_and(ta, tb), (double[]){1, 0, 0, 1, 0, 1}, 6, 0, 0);
    optest_close("logical_or NaN", clg_logical_or(ta, tb), (double[]){1, 0, 1, 1, 1, 1}, 6, 0, 0);
    optest_close("logical_not NaN, -0", clg_logical_not(ta), (double[]){0, 1, 1, 0, 0, 0}, 6, 0, 0);
    const double ia[5] = {0, 3, -2, 0, 7}, ib[5] = {0, 0, 5, 9, 7};
    clg_tensor *xa = optest_tensor(dev, CLG_I32, CLG_SHAPE(5), ia, OPTEST_CONTIGUOUS);
    clg_tensor *xb = optest_tensor(dev, CLG_I32, CLG_SHAPE(5), ib, OPTEST_CONTIGUOUS);
    clg_tensor *n = clg_logical_not(xa);
    CHECK_MSG(n && clg_tensor_dtype(n) == CLG_I32, "logical_not int32: %s", clg_device_error(dev));
    optest_close("logical_not int32", n, (double[]){1, 0, 0, 1, 0}, 5, 0, 0);
    optest_close("logical_and int32", clg_logical_and(xa, xb), (double[]){0, 0, 1, 0, 1}, 5, 0, 0);
    optest_close("ne int32", clg_ne(xa, xb), (double[]){0, 1, 1, 1, 0}, 5, 0, 0);
    optest_close("le int32", clg_le(xa, xb), (double[]){1, 0, 1, 1, 1}, 5, 0, 0);
    /* strided: a transposed view */
    const double m[6] = {0, 1, 2, 0, 0, 3};
    clg_tensor *tm = clg_transpose(optest_tensor(dev, CLG_F32, CLG_SHAPE(2, 3), m, OPTEST_CONTIGUOUS), 0, 1);
    optest_close("logical_not transposed", clg_logical_not(tm), (double[]){1, 1, 0, 1, 0, 0}, 6, 0, 0);
    CHECK(clg_logical_not(NULL) == NULL && clg_ne(NULL, tb) == NULL);
    CHECK(clg_le(ta, xa) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_le"), "%s", clg_device_error(dev));
    clg_scope_end(dev);
}

/* The pool's free buffers of n floats filled with NaN: a result's element that a kernel
 * leaves unwritten then shows (a freed result's values would match the other pass's). */
static void poison_pool(clg_device *dev, int64_t n)
{
    clg_scope_begin(dev);
    for (int i = 0; i < 4; i++) CHECK(clg_full(dev, CLG_F32, CLG_SHAPE(n), NAN) != NULL);
    clg_scope_end(dev);
}

/* pow and pow_scalar forward and pow's two gradients in float32 against float64
 * references over the benchmark's ranges, with a tail (n = 1003). */
static void pow_gradients(clg_device *dev)
{
    enum { N = 1003 };
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *w = malloc(N * 3 * sizeof *w);
    optest_fill(a, N, 0.5, 2, 21);
    optest_fill(b, N, -1.5, 2.5, 22);
    clg_scope_begin(dev);
    poison_pool(dev, N);   /* an element a kernel leaves unwritten reads NaN */
    clg_tensor *ta = optest_tensor(dev, CLG_F32, CLG_SHAPE(N), a, OPTEST_CONTIGUOUS);
    clg_tensor *tb = optest_tensor(dev, CLG_F32, CLG_SHAPE(N), b, OPTEST_CONTIGUOUS);
    for (int i = 0; i < N; i++) w[i] = pow(a[i], 1.7);
    optest_close("pow_scalar 1.7", clg_pow_scalar(ta, 1.7), w, N, 1e-6, 1e-5);
    CHECK_OK(dev, clg_tensor_set_requires_grad(ta, true));
    CHECK_OK(dev, clg_tensor_set_requires_grad(tb, true));
    clg_tensor *y = clg_pow(ta, tb);
    for (int i = 0; i < N; i++) {
        w[i] = pow(a[i], b[i]);
        w[N + i] = b[i] * pow(a[i], b[i] - 1);
        w[2 * N + i] = pow(a[i], b[i]) * log(a[i]);
    }
    optest_close("pow", y, w, N, 1e-6, 1e-5);
    CHECK_OK(dev, clg_backward(y, clg_ones(dev, CLG_F32, CLG_SHAPE(N))));
    optest_close("pow da", clg_tensor_grad(ta), w + N, N, 1e-6, 1e-5);
    optest_close("pow db", clg_tensor_grad(tb), w + 2 * N, N, 1e-6, 1e-5);
    clg_scope_end(dev);
    free(a);
    free(b);
    free(w);
}

/* float32 pow's inputs: bases of every exponent and sign (subnormals included),
 * exponents integral (odd and even, up to +-16) and not, C99's specials among both. */
static void pow_inputs(float *x, float *e, int n)
{
    uint32_t s = 5;
    for (int i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        uint32_t bits = (uint32_t)i * 104729u % 0x7f800000u ^ (s & 0xfffu);
        memcpy(&x[i], &bits, 4);
        if (i % 3 == 1) x[i] = -x[i];
        e[i] = i % 4 == 0 ? (float)((int)(s >> 24) - 128) / 8 : (float)(s >> 8) / (float)(1 << 21) - 4;
        if (i % 7 == 3) x[i] = (float)(i % 61) / 16 - 2;   /* near 1, -1 and 0: exact powers */
    }
    enum { S = 12 };
    const float special[S] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 1e-45f, 0.5f, -2.0f, 3.0f, -3.0f};
    for (int i = 0; i < n; i += 29) x[i] = special[(i / 29) % S];
    for (int i = 5; i < n; i += 31) e[i] = special[(i / 31) % S];
    for (int i = 0; i < S * S && i < n; i++) x[i] = special[i / S], e[i] = special[i % S];   /* every pair */
}

/* |a - b| within k ulp of the larger (the subnormals' step below 2^-126), or equal
 * (infinities), or both NaN. */
static bool within_ulps(float a, float b, float k)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (a == b) return true;
    float big = fmaxf(fabsf(a), fabsf(b));
    return isfinite(big) && fabsf(a - b) <= k * (nextafterf(big, INFINITY) - big);
}

/* pow (forward, pow_scalar, both gradients; the device's own float32 pow) against C's
 * powf on the host, element for element: within 1 ulp (C's powf is within 0.82 of the
 * exact value, so two correct results may differ by one), the specials exactly (pow(-2,
 * 3) = -8, pow(-2, 0.5) = NaN, pow(0, 0) = 1, pow(x, +-inf), pow(-0, -3) = -inf, ...).
 * The gradients as the kernels write them in float (z powf(x, z - 1), powf(x, z) logf(x))
 * within 2 and 4 ulp (the product's rounding, logf's); below 2^-100 within 1e-2 of the
 * value or 2^-120: x^(z-1) or x^z may be subnormal there, with a few digits only, before
 * its product, and a device may flush the product's subnormals (llvmpipe does). */
static void pow_libm(clg_device *dev)
{
    const int N = optest_small() ? 2000 : 30000;   /* the simulators: fewer */
    float *x = malloc(N * sizeof *x), *e = malloc(N * sizeof *e), *r[4], *want = malloc(N * sizeof *want);
    for (int q = 0; q < 4; q++) r[q] = malloc(N * sizeof(float));
    pow_inputs(x, e, N);
    clg_scope_begin(dev);
    poison_pool(dev, N);
    clg_tensor *tx = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(N), x);
    clg_tensor *te = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(N), e);
    CHECK_OK(dev, clg_tensor_set_requires_grad(tx, true));
    CHECK_OK(dev, clg_tensor_set_requires_grad(te, true));
    clg_tensor *p = clg_pow(tx, te), *q = clg_pow_scalar(tx, -2.5);
    CHECK_OK(dev, p && q ? clg_tensor_to_host(p, r[0], N * sizeof(float)) : clg_device_last_status(dev));
    CHECK_OK(dev, q ? clg_tensor_to_host(q, r[1], N * sizeof(float)) : clg_device_last_status(dev));
    CHECK_OK(dev, clg_backward(p, clg_ones(dev, CLG_F32, CLG_SHAPE(N))));
    CHECK_OK(dev, clg_tensor_to_host(clg_tensor_grad(tx), r[2], N * sizeof(float)));
    CHECK_OK(dev, clg_tensor_to_host(clg_tensor_grad(te), r[3], N * sizeof(float)));
    clg_scope_end(dev);
    static const char *const what[4] = {"pow", "pow_scalar -2.5", "pow's base gradient", "pow's exponent gradient"};
    static const float ulps[4] = {1, 1, 2, 4};
    for (int k = 0; k < 4; k++) {
        int bad = 0, at = -1;
        for (int i = 0; i < N; i++) {
            float xi = x[i], ei = k == 1 ? -2.5f : e[i];
            want[i] = k < 2 ? powf(xi, ei)
                      : k == 2 ? (ei == 0.0f ? 0.0f : ei * powf(xi, ei - 1.0f))
                               : (xi == 0.0f && ei >= 0.0f ? 0.0f : powf(xi, ei) * logf(xi));
            float big = fmaxf(fabsf(want[i]), fabsf(r[k][i]));
            bool ok = k >= 2 && big < 0x1p-100f ? fabsf(want[i] - r[k][i]) <= 1e-2f * big + 0x1p-120f
                                                : within_ulps(want[i], r[k][i], ulps[k]);
            if (!ok) bad++, at = at < 0 ? i : at;
        }
        CHECK_MSG(bad == 0, "%s: %d of %d differ from the host's powf, first at %.9g ^ %.9g: %.9g, host %.9g", what[k],
                  bad, N, at < 0 ? 0.0 : (double)x[at], k == 1 ? -2.5 : at < 0 ? 0.0 : (double)e[at],
                  at < 0 ? 0.0 : (double)r[k][at], at < 0 ? 0.0 : (double)want[at]);
    }
    free(x);
    free(e);
    free(want);
    for (int q = 0; q < 4; q++) free(r[q]);
}

/* the rowsu kernels on every device (the table chooses them where work-items are
 * SIMD-wide), and the rows kernels they replace there */
static void rows_broadcast_both(clg_device *dev)
{
    const char *cs = clg__device_params(dev)->const_strides ? "on" : "off";
    for (int pass = 0; pass < 2; pass++) {
        CHECK_OK(dev, clg_device_set_param(dev, "const_strides", pass ? "off" : "on"));
        rows_broadcast(dev);
    }
    CHECK_OK(dev, clg_device_set_param(dev, "const_strides", cs));
}

int main(int argc, char **argv)
{
    /* --row-reductions: the cases whose kernels the device table's row_reduce chooses
     * (oclgrind_test_ops_core_items runs them with the other choice). */
    bool rows_only = argc > 1 && !strcmp(argv[1], "--row-reductions");
    clg_device *dev = check_open_device();
    if (!rows_only) {
        binary_sizes(dev);
        pow_gradients(dev);
        pow_libm(dev);
        scalars_and_ieee(dev);
    }
    reductions(dev);
    more_reductions(dev);
    norm_long_rows(dev);
    column_reductions(dev);
    vector_row_reductions(dev);
    if (!rows_only) {
        deterministic(dev);
        logic(dev);
        rows_broadcast_both(dev);
    }
    clg_device_close(dev);
    return check_report("test_ops_core");
}
