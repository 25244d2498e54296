/* Every elementwise op runs one of three kernels (src/tensor/iter.c): NAME_flat when all
 * operands are contiguous, NAME_rows over two axes with long rows, NAME_strided for any
 * other strides; their backward kernels likewise. Each op here, forward and backward,
 * on inputs and incoming gradients laid out to take each variant, must give what it
 * gives on contiguous operands: [4, 70] contiguous (flat), [5, 7] permuted with the
 * device's rows_min at 8 (strided) and at 2 (short rows, what CPU implementations
 * take), [3, 70] sliced (rows). With the oclgrind label this is also
 * what runs every variant of those kernels under the simulator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optest.h"
#include "tensor_impl.h"

#define MAXIN 3

typedef clg_tensor *(*vfn)(clg_tensor **x);

typedef struct vcase {
    const char *name;
    int n;                   /* inputs */
    vfn f;
    double lo[MAXIN], hi[MAXIN];
    bool constant[MAXIN];    /* no gradient (masks, targets) */
} vcase;

static clg_tensor *f_clamp(clg_tensor **x) { return clg_clamp(x[0], -0.5, 0.5); }
static clg_tensor *f_leaky(clg_tensor **x) { return clg_leaky_relu(x[0], 0.1); }
static clg_tensor *f_softplus(clg_tensor **x) { return clg_softplus(x[0], 2.0, 3.0); }
/* every scalar op on the operand itself, so that each runs in the operand's variant */
static clg_tensor *f_scalars(clg_tensor **x)
{
    clg_tensor *a = clg_add(clg_mul_scalar(x[0], 3.0), clg_add_scalar(x[0], 0.5));
    clg_tensor *b = clg_add(clg_sub_scalar(x[0], 1.0), clg_div_scalar(x[0], 2.0));
    return clg_add(clg_add(a, b), clg_add(clg_rsub_scalar(2.0, x[0]), clg_rdiv_scalar(1.5, x[0])));
}
static clg_tensor *f_pow_scalar(clg_tensor **x) { return clg_pow_scalar(x[0], 2.5); }
static clg_tensor *f_not(clg_tensor **x) { return clg_mul(x[0], clg_logical_not(clg_gt(x[0], x[1]))); }
static clg_tensor *f_elu(clg_tensor **x) { return clg_elu(x[0], 0.7); }
static clg_tensor *f_steps(clg_tensor **x)
{
    return clg_add(clg_add(clg_floor(x[0]), clg_ceil(x[0])), clg_add(clg_round(x[0]), clg_sign(x[0])));
}
static clg_tensor *f_where(clg_tensor **x) { return clg_where(x[0], x[1], x[2]); }
static clg_tensor *f_l1(clg_tensor **x) { return clg_l1_loss(x[0], x[1], CLG_REDUCE_NONE); }
static clg_tensor *f_smooth_l1(clg_tensor **x) { return clg_smooth_l1_loss(x[0], x[1], CLG_REDUCE_NONE, 0.5); }
static clg_tensor *f_bce(clg_tensor **x) { return clg_bce_with_logits(x[0], x[1], CLG_REDUCE_NONE); }
static clg_tensor *f_mse(clg_tensor **x) { return clg_mse(x[0], x[1], CLG_REDUCE_NONE); }
static clg_tensor *f_cast(clg_tensor **x) { return clg_mul_scalar(clg_contiguous(x[0]), 2.0); }

/* The rows of src/tensor/unary_ops.def (the flat ones are f_steps) over their gradient
 * checks' range, both signs where the row says so. */
#define VARIANT_FROM_INPUT(name, lo, hi, sign) {#name, 1, f_##name, {(sign) ? -(hi) : (lo)}, {hi}, {false}},
#define VARIANT_FROM_OUTPUT VARIANT_FROM_INPUT
#define VARIANT_SELF VARIANT_FROM_INPUT
#define VARIANT_FLAT(name, lo, hi, sign)
#define VFN_FROM_INPUT(name) static clg_tensor *f_##name(clg_tensor **x) { return clg_##name(x[0]); }
#define VFN_FROM_OUTPUT VFN_FROM_INPUT
#define VFN_SELF VFN_FROM_INPUT
#define VFN_FLAT(name)
#define CLG_UNARY(name, grad, ...) VFN_##grad(name)
#include "unary_ops.def"
#undef CLG_UNARY

/* The rows of binary_ops.def; comparisons and logic have no gradient: they scale an op
 * that has one, x[0] * (x[0] op x[1]), x[1] constant. */
#define BFN_DIFF_INT(name) static clg_tensor *f_##name(clg_tensor **x) { return clg_##name(x[0], x[1]); }
#define BFN_DIFF BFN_DIFF_INT
#define BFN_COMPARE(name) static clg_tensor *f_##name(clg_tensor **x) { return clg_mul(x[0], clg_##name(x[0], x[1])); }
#define BFN_LOGIC BFN_COMPARE
#define CLG_BINARY(name, kind, ...) BFN_##kind(name)
#include "binary_ops.def"
#undef CLG_BINARY
#define BCONST_DIFF_INT false
#define BCONST_DIFF false
#define BCONST_COMPARE true
#define BCONST_LOGIC true

static const vcase cases[] = {
#define CLG_BINARY(name, kind, lo, hi, alo, ahi, blo, bhi, ...) \
    {#name, 2, f_##name, {alo, blo}, {ahi, bhi}, {false, BCONST_##kind}},
#include "binary_ops.def"
#undef CLG_BINARY
#define CLG_UNARY(name, grad, lo, hi, glo, ghi, gsign, ...) VARIANT_##grad(name, glo, ghi, gsign)
#include "unary_ops.def"
#undef CLG_UNARY
    {"clamp", 1, f_clamp, {-1}, {1}, {false}},
    {"leaky_relu", 1, f_leaky, {-2}, {2}, {false}},
    {"softplus", 1, f_softplus, {-3}, {3}, {false}},
    {"scalar ops", 1, f_scalars, {0.5}, {2}, {false}},
    {"pow_scalar", 1, f_pow_scalar, {0.5}, {2}, {false}},
    {"logical_not", 2, f_not, {-1, -1}, {1, 1}, {false, true}},
    {"elu", 1, f_elu, {-2}, {2}, {false}},
    {"floor, ceil, round, sign", 1, f_steps, {-3}, {3}, {false}},
    {"where", 3, f_where, {-1, -2, -2}, {1, 2, 2}, {true, false, false}},
    {"l1_loss", 2, f_l1, {-2, -2}, {2, 2}, {false, false}},
    {"smooth_l1_loss", 2, f_smooth_l1, {-1, -1}, {1, 1}, {false, false}},
    {"bce_with_logits", 2, f_bce, {-4, 0}, {4, 1}, {false, false}},
    {"mse", 2, f_mse, {-2, -2}, {2, 2}, {false, false}},
    {"contiguous", 1, f_cast, {-2}, {2}, {false}},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

typedef struct regime {
    const char *name;
    int64_t r, c;
    optest_layout layout;
    const char *rows_min;    /* the device parameter while the regime runs (NULL: the table's) */
} regime;
static const regime regimes[] = {
    {"flat [4, 70]", 4, 70, OPTEST_CONTIGUOUS, NULL},
    {"strided [5, 7] permuted", 5, 7, OPTEST_PERMUTED, "8"},
    {"short rows [5, 7] permuted", 5, 7, OPTEST_PERMUTED, "2"},
    {"rows [3, 70] sliced", 3, 70, OPTEST_SLICED, NULL},
};

/* y and the inputs' gradients (values, in that order) with operands and the incoming
 * gradient in `layout`. NULL on failure. */
static double *run(clg_device *dev, const vcase *c, const regime *g, double *const *vals, const double *gv,
                   optest_layout layout, int64_t *count)
{
    int64_t n = g->r * g->c;
    clg_scope_begin(dev);
    clg_tensor *x[MAXIN];
    for (int i = 0; i < c->n; i++) {
        x[i] = optest_tensor(dev, CLG_F32, CLG_SHAPE(g->r, g->c), vals[i], layout);
        if (x[i] && !c->constant[i]) clg_tensor_set_requires_grad(x[i], true);
    }
    clg_tensor *y = c->f(x);
    clg_tensor *gy = optest_tensor(dev, CLG_F32, CLG_SHAPE(g->r, g->c), gv, layout);
    clg_status st = y && gy ? clg_backward(y, gy) : CLG_ERR_INVALID_ARGUMENT;
    CHECK_MSG(st == CLG_OK, "%s %s %s: %s", c->name, g->name, optest_layout_names[layout], clg_device_error(dev));
    double *out = malloc((size_t)(n * (1 + MAXIN)) * sizeof *out);
    *count = 0;
    double *v = st == CLG_OK ? optest_read(y) : NULL;
    bool ok = v != NULL;
    if (v) memcpy(out, v, (size_t)n * sizeof *v), *count += n;
    free(v);
    for (int i = 0; ok && i < c->n; i++) {
        if (c->constant[i]) continue;
        v = optest_read(clg_tensor_grad(x[i]));
        ok = v != NULL;
        if (v) memcpy(out + *count, v, (size_t)n * sizeof *v), *count += n;
        free(v);
    }
    clg_scope_end(dev);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

static void check_case(clg_device *dev, const vcase *c, const regime *g)
{
    int64_t n = g->r * g->c, nref = 0, ngot = 0;
    double *vals[MAXIN], *gv = malloc((size_t)n * sizeof *gv);
    for (int i = 0; i < c->n; i++) {
        vals[i] = malloc((size_t)n * sizeof *vals[i]);
        optest_fill(vals[i], n, c->lo[i], c->hi[i], 17 + (uint64_t)i);
        if (c->f == f_where && i == 0)   /* the mask: ones and zeros */
            for (int64_t k = 0; k < n; k++) vals[i][k] = k % 3 == 0 ? 0 : 1;
    }
    if (c->n == 2 && c->constant[1])   /* comparisons: some ties */
        for (int64_t k = 0; k < n; k += 4) vals[1][k] = vals[0][k];
    optest_fill(gv, n, -1, 1, 29);
    double *want = run(dev, c, g, vals, gv, OPTEST_CONTIGUOUS, &nref);
    double *got = run(dev, c, g, vals, gv, g->layout, &ngot);
    char what[160];
    snprintf(what, sizeof what, "%s %s, forward and backward, as on contiguous operands", c->name, g->name);
    CHECK_MSG(want && got && nref == ngot, "%s: %s", what, clg_device_error(dev));
    if (want && got && nref == ngot) {
        int bad = 0;
        for (int64_t k = 0; k < nref; k++) {
            double a = got[k], e = want[k];
            bool same = (isnan(a) && isnan(e)) || a == e || fabs(a - e) <= 1e-6 * fabs(e) + 1e-7;
            if (!same && bad++ < 5) fprintf(stderr, "  %s: [%lld] = %.9g, expected %.9g\n", what, (long long)k, a, e);
        }
        CHECK_MSG(bad == 0, "%s: %d of %lld values differ", what, bad, (long long)nref);
    }
    free(want);
    free(got);
    free(gv);
    for (int i = 0; i < c->n; i++) free(vals[i]);
}

/* In-place updates on views: fill_ and axpy_ over a strided view and over long rows. */
static void in_place(clg_device *dev)
{
    enum { R = 3, C = 70 };
    static double base[R * (2 * C + 1)], want[R * (2 * C + 1)];
    optest_fill(base, R * (2 * C + 1), -1, 1, 41);
    optest_round(CLG_F32, base, R * (2 * C + 1));
    clg_scope_begin(dev);
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(R, 2 * C + 1), base, OPTEST_CONTIGUOUS);
    /* every other column from 1: a view with long rows, then a [3, 5] strided corner */
    clg_tensor *rows = clg_slice(t, 1, 1, 2 * C + 1, 2), *corner = clg_narrow(clg_transpose(rows, 0, 1), 0, 0, 5);
    clg_no_grad_begin(dev);
    CHECK_OK(dev, clg_axpy_(rows, 0.5, clg_ones(dev, CLG_F32, CLG_SHAPE(R, C))));
    CHECK_OK(dev, clg_fill_(corner, -7));
    clg_no_grad_end(dev);
    memcpy(want, base, sizeof want);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            double *w = &want[i * (2 * C + 1) + 1 + 2 * j];
            *w = j < 5 ? -7 : (double)(float)(*w + 0.5);
        }
    optest_close("axpy_ over long rows, fill_ over a strided view", t, want, R * (2 * C + 1), 0, 1e-7);
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    char table_rows_min[32];
    snprintf(table_rows_min, sizeof table_rows_min, "%zu", clg__device_params(dev)->rows_min);
    for (int i = 0; i < NCASES; i++)
        for (size_t r = 0; r < sizeof regimes / sizeof *regimes; r++) {
            const char *rows_min = regimes[r].rows_min ? regimes[r].rows_min : table_rows_min;
            CHECK(clg_device_set_param(dev, "rows_min", rows_min) == CLG_OK);
            check_case(dev, &cases[i], &regimes[r]);
        }
    CHECK(clg_device_set_param(dev, "rows_min", table_rows_min) == CLG_OK);
    in_place(dev);
    CHECK_MSG(clg_tensor_live_count(dev) == 0, "%lld tensors left", (long long)clg_tensor_live_count(dev));
    clg_device_close(dev);
    return check_report("test_kernel_variants");
}
