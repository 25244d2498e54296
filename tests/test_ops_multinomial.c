/* clg_multinomial (src/tensor/multinomial.c) with a fixed seed: the counts of many draws
 * against the weights (a chi-square bound), and what must hold exactly: no zero weight
 * ever drawn, no index twice without replacement, the same draws for the same seed, a
 * captured graph drawing anew on replay. Rows in every layout, broadcast, and 70,000
 * wide (Mesa's llvmpipe ends a work-item's loops after 65,535 iterations: no
 * work-item may walk a row). Bad weights are reported at the next read. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clgrad/graph.h"
#include "optest.h"

/* The draws of multinomial(t, S, repl) as host ints ([R * S]), NULL on failure. */
static int32_t *draw(clg_device *dev, clg_tensor *t, int64_t S, bool repl, int64_t R)
{
    clg_tensor *y = clg_multinomial(t, S, repl);
    int32_t *v = malloc(sizeof *v * (size_t)(R * S));
    if (!y || !v || clg_tensor_to_host(y, v, sizeof *v * (size_t)(R * S)) != CLG_OK) {
        CHECK_MSG(0, "multinomial %lld samples: %s", (long long)S, clg_device_error(dev));
        free(v);
        v = NULL;
    }
    clg_tensor_free(y);
    return v;
}

/* Pearson's chi-square of counts[C] (n draws) against probabilities p (p_i > 0 only;
 * a count where p_i == 0 is a failure of its own), with its degrees of freedom. */
static double chi_square(const int64_t *counts, const double *p, int C, int64_t n, int *df)
{
    double x2 = 0;
    *df = -1;
    for (int i = 0; i < C; i++) {
        if (p[i] == 0) continue;
        double e = p[i] * (double)n;
        x2 += (counts[i] - e) * (counts[i] - e) / e;
        ++*df;
    }
    return x2;
}

/* The chi-square bound: far in the tail (p ~ 1e-6 for these df), so only a wrong
 * distribution fails; the seed is fixed, so the test gives the same answer each run. */
static double chi_bound(int df) { return df + 7 * sqrt(2.0 * df) + 10; }

/* Check one row's draws: in range, none of a zero weight, counts near n p. */
static void check_row(const char *what, const int32_t *v, int64_t n, int64_t stride, const double *w, int C)
{
    double sum = 0, *p = malloc(sizeof *p * (size_t)C);
    int64_t *counts = calloc((size_t)C, sizeof *counts);
    for (int i = 0; i < C; i++) sum += w[i];
    for (int i = 0; i < C; i++) p[i] = w[i] / sum;
    int64_t bad = 0;
    for (int64_t s = 0; s < n; s++) {
        int32_t k = v[s * stride];
        if (k < 0 || k >= C || w[k] == 0) bad++;
        else counts[k]++;
    }
    CHECK_MSG(bad == 0, "%s: %lld draws out of range or of a zero weight", what, (long long)bad);
    int df;
    double x2 = chi_square(counts, p, C, n, &df);
    CHECK_MSG(df <= 0 || x2 < chi_bound(df), "%s: chi-square %.1f over %d degrees of freedom (bound %.1f)", what, x2,
              df, chi_bound(df));
    free(p);
    free(counts);
}

enum { R = 3, C = 8 };
/* three rows of weights, not normalised, with zeros in several places */
static const double W[R * C] = {1, 0, 2, 3, 0.5, 0, 4, 1.5, 0, 0, 0, 7, 0, 0, 1, 0, 2, 2, 2, 2, 2, 2, 2, 9};

static void test_with_replacement(clg_device *dev)
{
    int64_t S = optest_small() ? 2000 : 100000;
    clg_dtype dts[4] = {CLG_F16, CLG_BF16};
    int ndt = 2 + optest_float_dtypes(dev, dts + 2);
    for (int di = 0; di < ndt; di++)
        for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
            if (optest_small() && di > 0 && l > 0) continue;
            clg_scope_begin(dev);
            clg_manual_seed(dev, 1234);
            int32_t *v = draw(dev, optest_tensor(dev, dts[di], CLG_SHAPE(R, C), W, (optest_layout)l), S, true, R);
            for (int r = 0; v && r < R; r++) {
                char what[96];
                snprintf(what, sizeof what, "with replacement, row %d %s %s", r, clg_dtype_name(dts[di]),
                         optest_layout_names[l]);
                check_row(what, v + r * S, S, 1, W + r * C, C);
            }
            free(v);
            clg_scope_end(dev);
        }
    /* one row ([C] -> [S]), the same seed twice, another seed */
    clg_scope_begin(dev);
    clg_tensor *row = optest_tensor(dev, CLG_F32, CLG_SHAPE(C), W, OPTEST_CONTIGUOUS);
    clg_manual_seed(dev, 5);
    int32_t *a = draw(dev, row, 64, true, 1);
    clg_manual_seed(dev, 5);
    int32_t *b = draw(dev, row, 64, true, 1), *c = draw(dev, row, 64, true, 1);
    CHECK(a && b && c && !memcmp(a, b, 64 * sizeof *a) && memcmp(a, c, 64 * sizeof *a));
    clg_tensor *y = clg_multinomial(row, 5, true);
    CHECK(y && clg_tensor_ndim(y) == 1 && clg_tensor_dim(y, 0) == 5 && clg_tensor_dtype(y) == CLG_I32);
    free(a);
    free(b);
    free(c);
    clg_scope_end(dev);
}

/* P(second draw = j) without replacement: sum over i != j of p_i p_j / (1 - p_i). */
static void second_draw(const double *p, double *q, int n)
{
    for (int j = 0; j < n; j++) {
        q[j] = 0;
        for (int i = 0; i < n && p[j] > 0; i++)
            if (i != j) q[j] += p[i] * p[j] / (1 - p[i]);
    }
}

static void test_without_replacement(clg_device *dev)
{
    /* every row drawn to its nonzero count: a permutation of its nonzero indices */
    const int nonzero[R] = {6, 2, 8};
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
        clg_scope_begin(dev);
        clg_manual_seed(dev, 99);
        clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(R, C), W, (optest_layout)l);
        int32_t *v = draw(dev, t, 2, false, R);
        for (int r = 0; v && r < R; r++) CHECK_MSG(v[2 * r] != v[2 * r + 1], "row %d drew %d twice", r, v[2 * r]);
        free(v);
        for (int r = 0; r < R; r++) {
            int32_t *all = draw(dev, clg_narrow(t, 0, r, 1), nonzero[r], false, 1);
            int seen[C] = {0};
            for (int s = 0; all && s < nonzero[r]; s++) {
                int k = all[s];
                CHECK_MSG(k >= 0 && k < C && W[r * C + k] > 0 && !seen[k]++, "row %d %s: draw %d is %d", r,
                          optest_layout_names[l], s, k);
            }
            free(all);
        }
        clg_scope_end(dev);
    }
    /* the order of the draws: first and second against their exact probabilities,
     * over many copies of one row (a broadcast input) */
    int64_t N = optest_small() ? 2000 : 50000;
    clg_dtype dts[2];
    int ndt = optest_float_dtypes(dev, dts);
    for (int di = 0; di < ndt; di++) {
        clg_scope_begin(dev);
        clg_manual_seed(dev, 31);
        clg_tensor *one = optest_tensor(dev, dts[di], CLG_SHAPE(1, C), W, OPTEST_CONTIGUOUS);
        int32_t *v = draw(dev, clg_expand(one, CLG_SHAPE(N, C)), 2, false, N);
        double sum = 0, p[C], q[C];
        for (int i = 0; i < C; i++) sum += W[i];
        for (int i = 0; i < C; i++) p[i] = W[i] / sum;
        second_draw(p, q, C);
        char what[64];
        snprintf(what, sizeof what, "without replacement, first draw %s", clg_dtype_name(dts[di]));
        if (v) check_row(what, v, N, 2, W, C);
        snprintf(what, sizeof what, "without replacement, second draw %s", clg_dtype_name(dts[di]));
        if (v) check_row(what, v + 1, N, 2, q, C);
        for (int64_t s = 0; v && s < N; s++) CHECK_MSG(v[2 * s] != v[2 * s + 1], "copy %lld drew twice", (long long)s);
        free(v);
        clg_scope_end(dev);
    }
}

/* A row of 70,000: weights on a sparse set of categories across the whole row (the
 * sum tree's block edges, the last category), zeros elsewhere. */
static void test_long_row(clg_device *dev)
{
    int L = optest_small() ? 3000 : 70000;
    double *w = calloc((size_t)L, sizeof *w);
    const int hot[] = {0, 255, 256, 511, 65535, 65536, 69998, 69999, 1000, 4097};
    int nhot = 0;
    for (size_t i = 0; i < sizeof hot / sizeof *hot; i++)
        if (hot[i] < L) w[hot[i]] = 1 + (double)(nhot++ % 4);
    w[L - 1] = 3;   /* the row's last */
    int64_t S = optest_small() ? 2000 : 100000;
    clg_scope_begin(dev);
    clg_manual_seed(dev, 77);
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(1, L), w, OPTEST_SLICED);
    int32_t *v = draw(dev, t, S, true, 1);
    if (v) check_row("70,000 wide, with replacement", v, S, 1, w, L);
    free(v);
    /* without replacement: every nonzero weight once, then a dense row's first 500 */
    int nz = 0;
    for (int i = 0; i < L; i++) nz += w[i] > 0;
    v = draw(dev, t, nz, false, 1);
    char *seen = calloc((size_t)L, 1);
    for (int s = 0; v && s < nz; s++)
        CHECK_MSG(v[s] >= 0 && v[s] < L && w[v[s]] > 0 && !seen[v[s]]++, "long row: draw %d is %d", s, v[s]);
    free(v);
    for (int i = 0; i < L; i++) w[i] = i % 3 ? 1 + i % 7 : 0;   /* a third of them zero */
    clg_tensor *d1 = optest_tensor(dev, CLG_F32, CLG_SHAPE(L), w, OPTEST_CONTIGUOUS);
    clg_tensor *rows = clg_expand(d1, CLG_SHAPE(2, L));
    v = draw(dev, rows, 500, false, 2);
    memset(seen, 0, (size_t)L);
    for (int s = 0; v && s < 500; s++)
        CHECK_MSG(w[v[s]] > 0 && !seen[v[s]]++, "dense long row: draw %d is %d", s, v[s]);
    CHECK(v && memcmp(v, v + 500, 500 * sizeof *v));   /* two rows, two draws */
    free(v);
    free(seen);
    clg_scope_end(dev);
    free(w);
}

/* A captured graph draws at the generator's position on each replay, as eager calls do. */
static void test_graph(clg_device *dev)
{
    clg_scope_begin(dev);
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(R, C), W, OPTEST_CONTIGUOUS);
    int32_t eager[2][3][R * 16];
    for (int repl = 0; repl < 2; repl++) {
        clg_manual_seed(dev, 3);
        for (int i = 0; i < 3; i++) {
            int32_t *v = draw(dev, t, repl ? 16 : 2, repl, R);
            if (v) memcpy(eager[repl][i], v, sizeof(int32_t) * R * (repl ? 16 : 2));
            free(v);
        }
        clg_manual_seed(dev, 3);
        int32_t *v = draw(dev, t, repl ? 16 : 2, repl, R);   /* an eager step first */
        free(v);
        clg_graph *g = NULL;
        CHECK_OK(dev, clg_graph_begin(dev));
        clg_tensor *y = clg_multinomial(t, repl ? 16 : 2, repl);
        CHECK_OK(dev, clg_graph_end(dev, &g));
        CHECK_OK(dev, clg_graph_output(g, "y", y));
        CHECK_OK(dev, clg_graph_replay(g));
        int32_t got[R * 16];
        size_t bytes = sizeof(int32_t) * R * (repl ? 16 : 2);
        CHECK_OK(dev, clg_tensor_to_host(clg_graph_get(g, "y"), got, bytes));
        CHECK_MSG(!memcmp(got, eager[repl][2], bytes), "replacement %d: the replay drew other numbers than the "
                  "third eager call", repl);
        clg_graph_free(g);
        clg_tensor_free(y);
    }
    clg_scope_end(dev);
}

static void expect_fail(clg_device *dev, const char *what, clg_tensor *y, const char *needle)
{
    int32_t v[64];
    bool failed = !y || clg_tensor_to_host(y, v, sizeof(int32_t) * (size_t)clg_tensor_numel(y)) != CLG_OK;
    CHECK_MSG(failed && strstr(clg_device_error(dev), "clg_multinomial") && strstr(clg_device_error(dev), needle),
              "%s: %s", what, failed ? clg_device_error(dev) : "no error");
}

static void test_errors(clg_device *dev)
{
    clg_scope_begin(dev);
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(R, C), W, OPTEST_CONTIGUOUS);
    expect_fail(dev, "3 axes", clg_multinomial(clg_reshape(t, CLG_SHAPE(1, R, C)), 1, true), "[1, 3, 8]");
    expect_fail(dev, "too many", clg_multinomial(t, C + 1, false), "9 samples without replacement from 8");
    expect_fail(dev, "no samples", clg_multinomial(t, 0, true), "0 samples");
    expect_fail(dev, "int32", clg_multinomial(clg_cast(t, CLG_I32), 1, true), "int32");
    CHECK(clg_multinomial(NULL, 1, true) == NULL);
    expect_fail(dev, "fewer nonzero", clg_multinomial(t, 3, false), "row 1 has fewer nonzero weights than the 3");
    double neg[C] = {1, 2, -1, 3, 0, 0, 0, 0};
    clg_tensor *tn = optest_tensor(dev, CLG_F32, CLG_SHAPE(C), neg, OPTEST_CONTIGUOUS);
    expect_fail(dev, "negative", clg_multinomial(tn, 4, true), "row 0 holds a negative");
    expect_fail(dev, "negative, without", clg_multinomial(tn, 2, false), "row 0 holds a negative");
    expect_fail(dev, "zero row", clg_multinomial(clg_zeros(dev, CLG_F32, CLG_SHAPE(2, C)), 1, true), "sums to 0");
    /* after a reported error the next draw is fine */
    int32_t *v = draw(dev, t, 4, true, R);
    free(v);
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    test_with_replacement(dev);
    test_without_replacement(dev);
    test_long_row(dev);
    test_graph(dev);
    test_errors(dev);
    clg_device_close(dev);
    return check_report("test_ops_multinomial");
}
