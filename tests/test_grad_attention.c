/* clg_scaled_dot_product_attention: the fused kernels against a plain-C reference (in
 * double) in every layout, against the composed ops (matmul, softmax, dropout, matmul:
 * values and gradients, masks, causal, dropout with the same draw, broadcast batch axes),
 * at lengths that are and are not multiples of the kernels' tiles, long axes split over
 * launches (with the device's loop limit lowered, so that small shapes split too),
 * float16 and bfloat16 storage, finite-difference gradient checks and refusals. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "optest.h"

#define IN(...) ((optest_input[]){__VA_ARGS__})
#define SH(...) CLG_SHAPE(__VA_ARGS__)

/* ---- the plain-C reference ---------------------------------------------------------------- */

/* q [B, L, E], k [B, S, E], v [B, S, Ev], mask [L, S] (additive, may be NULL) -> o [B, L, Ev] */
static void reference(int B, int L, int S, int E, int Ev, const double *q, const double *k, const double *v,
                      const double *mask, bool causal, double scale, double *o)
{
    double *w = malloc(sizeof(double) * (size_t)(S ? S : 1));
    for (int b = 0; b < B; b++)
        for (int i = 0; i < L; i++) {
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < S; j++) {
                double s = 0;
                for (int e = 0; e < E; e++) s += q[((size_t)b * L + i) * E + e] * k[((size_t)b * S + j) * E + e];
                s = s * scale + (mask ? mask[(size_t)i * S + j] : 0);
                if (causal && j > i) s = -INFINITY;
                w[j] = s;
                if (s > mx) mx = s;
            }
            for (int j = 0; j < S; j++) sum += w[j] = w[j] == -INFINITY ? 0 : exp(w[j] - mx);
            for (int d = 0; d < Ev; d++) {
                double acc = 0;
                for (int j = 0; j < S; j++) acc += w[j] * v[((size_t)b * S + j) * Ev + d];
                o[((size_t)b * L + i) * Ev + d] = S ? acc / sum : 0;
            }
        }
    free(w);
}

typedef struct shape_case { int B, L, S, E, Ev; bool mask, causal; } shape_case;

/* Every layout of q, k and v, against the reference. */
static void against_reference(clg_device *dev, clg_dtype dt, const shape_case *c)
{
    int64_t nq = (int64_t)c->B * c->L * c->E, nk = (int64_t)c->B * c->S * c->E, nv = (int64_t)c->B * c->S * c->Ev;
    int64_t nm = (int64_t)c->L * c->S, no = (int64_t)c->B * c->L * c->Ev;
    double *q = malloc(sizeof(double) * (size_t)(nq + nk + nv + nm + no + 5)), *k = q + nq, *v = k + nk;
    double *m = v + nv, *o = m + nm;
    optest_fill(q, nq, -1, 1, 1);
    optest_fill(k, nk, -1, 1, 2);
    optest_fill(v, nv, -1, 1, 3);
    optest_fill(m, nm, -2, 0.5, 4);
    optest_round(dt, q, nq);
    optest_round(dt, k, nk);
    optest_round(dt, v, nv);
    optest_round(dt, m, nm);
    double scale = 0.7;
    reference(c->B, c->L, c->S, c->E, c->Ev, q, k, v, c->mask ? m : NULL, c->causal, scale, o);
    for (int lay = 0; lay < OPTEST_LAYOUT_COUNT; lay++) {
        clg_scope_begin(dev);
        clg_tensor *tq = optest_tensor(dev, dt, SH(c->B, c->L, c->E), q, (optest_layout)lay);
        clg_tensor *tk = optest_tensor(dev, dt, SH(c->B, c->S, c->E), k, (optest_layout)((lay + 1) % OPTEST_LAYOUT_COUNT));
        clg_tensor *tv = optest_tensor(dev, dt, SH(c->B, c->S, c->Ev), v, (optest_layout)((lay + 2) % OPTEST_LAYOUT_COUNT));
        clg_tensor *tm = c->mask ? optest_tensor(dev, dt, SH(c->L, c->S), m, (optest_layout)lay) : NULL;
        char what[160];
        snprintf(what, sizeof what, "%s B%d L%d S%d E%d Ev%d%s%s, q %s", clg_dtype_name(dt), c->B, c->L, c->S, c->E,
                 c->Ev, c->mask ? " mask" : "", c->causal ? " causal" : "", optest_layout_names[lay]);
        clg_tensor *y = clg_scaled_dot_product_attention(tq, tk, tv, tm, c->causal, 0, scale);
        CHECK_MSG(y, "%s: %s", what, clg_device_error(dev));
        if (y) optest_close(what, y, o, no, optest_tol(dt, 1e-12, 2e-5), optest_tol(dt, 1e-10, 2e-4));
        clg_scope_end(dev);
    }
    free(q);
}

/* ---- against the composed ops ---------------------------------------------------------------- */

/* softmax(scale q k^T + mask [+ causal -inf]) (dropout) v, from existing ops. */
static clg_tensor *composed(clg_tensor *q, clg_tensor *k, clg_tensor *v, clg_tensor *mask, bool causal, double p,
                            double scale)
{
    clg_device *dev = clg_tensor_device(q);
    int nd = clg_tensor_ndim(k);
    int64_t L = clg_tensor_dim(q, -2), S = clg_tensor_dim(k, -2);
    clg_tensor *s = clg_mul_scalar(clg_matmul(q, clg_transpose(k, nd - 2, nd - 1)), scale);
    if (mask && clg_tensor_dtype(mask) == CLG_I32)
        mask = clg_where(mask, clg_scalar(dev, clg_tensor_dtype(s), 0), clg_scalar(dev, clg_tensor_dtype(s), -INFINITY));
    if (mask) s = clg_add(s, mask);
    if (causal) {
        double *bias = malloc(sizeof(double) * (size_t)(L * S + 1));
        for (int64_t i = 0; i < L; i++)
            for (int64_t j = 0; j < S; j++) bias[i * S + j] = j > i ? -INFINITY : 0;
        s = clg_add(s, optest_tensor(dev, clg_tensor_dtype(s), SH(L, S), bias, OPTEST_CONTIGUOUS));
        free(bias);
    }
    clg_tensor *w = clg_softmax(s, -1);
    if (p > 0) w = clg_dropout(w, p, true);
    return clg_matmul(w, v);
}

/* Whether the cases of whole float32 vectors reach kernels of their own: the vector kernels
 * serve where the device table takes rows; where it takes tiles those cases are tile cases
 * like the others, which the simulators (CLG_TEST_SMALL) leave out (under Oclgrind they
 * were 30 of the test's 90 s; oclgrind_test_grad_attention_rows runs them with rows). */
static bool vector_cases(clg_device *dev)
{
    return !optest_small() || clg__device_params(dev)->attention_rows;
}

/* dense: q, k and v with adjacent columns (offset, contiguous, offset), as the vector
 * kernels take them; else q permuted, k sliced and v offset. */
typedef struct att_ctx { bool causal, int_mask; double p, scale; int seed; bool mask, dense; } att_ctx;

static clg_tensor *f_fused(clg_tensor **x, void *ctx)
{
    att_ctx *c = ctx;
    if (c->p > 0) clg_manual_seed(clg_tensor_device(x[0]), (uint64_t)c->seed);
    return clg_scaled_dot_product_attention(x[0], x[1], x[2], c->mask ? x[3] : NULL, c->causal, c->p, c->scale);
}

static clg_tensor *f_composed(clg_tensor **x, void *ctx)
{
    att_ctx *c = ctx;
    if (c->p > 0) clg_manual_seed(clg_tensor_device(x[0]), (uint64_t)c->seed);
    double scale = c->scale ? c->scale : 1.0 / sqrt((double)clg_tensor_dim(x[0], -1));
    return composed(x[0], x[1], x[2], c->mask ? x[3] : NULL, c->causal, c->p, scale);
}

/* Values and gradients of q, k, v: fused against composed, from the same inputs and the
 * same random output gradient. shapes: q, k, v, mask (mask ndim 0: none). */
static void against_composed(clg_device *dev, clg_dtype dt, const char *what, const att_ctx *ctx,
                             int64_t shapes[4][5], const int nds[4], double tol)
{
    att_ctx cc = *ctx, *c = &cc;
    cc.mask = nds[3] != 0;
    const optest_layout dense[3] = {OPTEST_OFFSET, OPTEST_CONTIGUOUS, OPTEST_OFFSET};
    clg_scope_begin(dev);
    clg_tensor *x[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4; i++) {
        if (!nds[i]) continue;
        int64_t n = 1;
        for (int a = 0; a < nds[i]; a++) n *= shapes[i][a];
        double *h = malloc(sizeof(double) * (size_t)(n ? n : 1));
        optest_fill(h, n, i == 3 ? -2 : -1.5, i == 3 ? 0.5 : 1.5, 10 + (uint64_t)i);
        if (i == 3 && c->int_mask)
            for (int64_t e = 0; e < n; e++) h[e] = (e % 5 != 2) || e % 7 == 0;
        x[i] = optest_tensor(dev, i == 3 && c->int_mask ? CLG_I32 : dt, nds[i], shapes[i], h,
                             i == 3     ? OPTEST_CONTIGUOUS
                             : c->dense ? dense[i]
                                        : (optest_layout)(i + 1) % OPTEST_LAYOUT_COUNT);
        free(h);
        if (i < 3) clg_tensor_set_requires_grad(x[i], true);
    }
    clg_tensor *yf = f_fused(x, c), *yc = f_composed(x, c);
    CHECK_MSG(yf && yc, "%s: %s", what, clg_device_error(dev));
    if (!yf || !yc) {
        clg_scope_end(dev);
        return;
    }
    double *want = optest_read(yc);
    int64_t n = clg_tensor_numel(yc);
    char w2[200];
    snprintf(w2, sizeof w2, "%s: output", what);
    if (want) optest_close(w2, yf, want, n, tol, tol);
    free(want);
    double *gh = malloc(sizeof(double) * (size_t)(n ? n : 1));
    optest_fill(gh, n, -1, 1, 99);
    clg_tensor *g = optest_tensor(dev, dt, clg_tensor_ndim(yc), clg_tensor_shape(yc), gh, OPTEST_CONTIGUOUS);
    free(gh);
    clg_tensor *gf[3] = {NULL, NULL, NULL}, *gc[3] = {NULL, NULL, NULL};
    CHECK_OK(dev, clg_grad(1, &yf, &g, 3, x, gf));
    CHECK_OK(dev, clg_grad(1, &yc, &g, 3, x, gc));
    static const char *names[3] = {"dq", "dk", "dv"};
    for (int i = 0; i < 3; i++) {
        if (!gf[i] || !gc[i]) continue;
        double *wg = optest_read(gc[i]);
        snprintf(w2, sizeof w2, "%s: %s", what, names[i]);
        if (wg) optest_close(w2, gf[i], wg, clg_tensor_numel(gc[i]), tol, tol);
        free(wg);
    }
    clg_scope_end(dev);
}

static void composed_cases(clg_device *dev, clg_dtype dt)
{
    double tol = optest_tol(dt, 1e-11, 3e-5);
    /* q [2, 3, L, E] with k, v [3, S, E] broadcast over the first axis (a GQA-free
     * broadcast), masks [L, S] and [2, 1, 1, S] (padding), causal, tiles and not */
    struct { const char *what; att_ctx c; int64_t s[4][5]; int nd[4]; } cases[] = {
        {"plain 5x7", {false, false, 0, 0, 0}, {{2, 3, 5, 4}, {3, 7, 4}, {3, 7, 6}, {0}}, {4, 3, 3, 0}},
        {"causal 33x33", {true, false, 0, 0.3, 0}, {{2, 33, 8}, {2, 33, 8}, {2, 33, 5}, {0}}, {3, 3, 3, 0}},
        {"causal 9x40 float mask", {true, false, 0, 0, 0}, {{1, 9, 3}, {1, 40, 3}, {1, 40, 2}, {9, 40}}, {3, 3, 3, 2}},
        {"bool padding mask", {false, true, 0, 0, 0}, {{2, 2, 6, 4}, {2, 2, 70, 4}, {2, 2, 70, 3}, {2, 1, 1, 70}},
         {4, 4, 4, 4}},
        {"dropout 0.3", {false, false, 0.3, 0, 7}, {{2, 2, 11, 4}, {2, 2, 13, 4}, {2, 2, 13, 5}, {0}}, {4, 4, 4, 0}},
        {"causal dropout 0.5", {true, false, 0.5, 0, 3}, {{3, 35, 4}, {3, 35, 4}, {3, 35, 4}, {0}}, {3, 3, 3, 0}},
        {"wide value 300", {false, false, 0, 0, 0}, {{1, 3, 5}, {1, 4, 5}, {1, 4, 300}, {0}}, {3, 3, 3, 0}},
        {"wide head 300", {false, false, 0, 0.1, 0}, {{1, 3, 300}, {1, 4, 300}, {1, 4, 2}, {0}}, {3, 3, 3, 0}},
        {"no keys", {false, false, 0, 0, 0}, {{2, 3, 4}, {2, 0, 4}, {2, 0, 5}, {0}}, {3, 3, 3, 0}},
        /* heads of whole float16 vectors (the vector kernels where the table says rows) */
        {"vectors causal dropout", {true, false, 0.2, 0, 9, false, true}, {{2, 25, 32}, {2, 25, 32}, {2, 25, 16}, {0}},
         {3, 3, 3, 0}},
        {"vectors padding mask, broadcast", {false, true, 0, 0, 0, false, true},
         {{2, 2, 5, 16}, {2, 19, 16}, {2, 19, 48}, {2, 1, 1, 19}}, {4, 3, 3, 4}},
        {"vectors 128 float mask", {false, false, 0, 0.2, 0, false, true}, {{1, 4, 128}, {1, 19, 128}, {1, 19, 128}, {4, 19}},
         {3, 3, 3, 2}},
        /* heads of 16, 32 and 64 (keys and values), the kernels of one head size each; rows
         * past a multiple of 16 (the last block's masked lanes) */
        {"vectors head 32 causal dropout", {true, false, 0.25, 0, 5, false, true},
         {{2, 37, 32}, {2, 37, 32}, {2, 37, 32}, {0}}, {3, 3, 3, 0}},
        {"vectors head 64 float mask", {false, false, 0, 0.2, 0, false, true},
         {{2, 21, 64}, {2, 23, 64}, {2, 23, 64}, {21, 23}}, {3, 3, 3, 2}},
        {"vectors head 16 causal padding mask", {true, true, 0, 0, 0, false, true},
         {{2, 2, 19, 16}, {2, 19, 16}, {2, 19, 16}, {2, 1, 1, 19}}, {4, 3, 3, 4}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].c.dense && !vector_cases(dev)) continue;
        char what[120];
        snprintf(what, sizeof what, "%s %s", clg_dtype_name(dt), cases[i].what);
        against_composed(dev, dt, what, &cases[i].c, cases[i].s, cases[i].nd, tol);
    }
}

/* ---- long axes ------------------------------------------------------------------------------ */

/* One head (no mask, no dropout) against the plain-C reference, values and gradients: for
 * long axes, where the composed reference cannot serve on every device (its GEMM over
 * 70,000 keys is one of the long-axis faults of rusticl/llvmpipe). With dO given,
 * P the weights, Dr_i = sum_j P_ij dP_ij:
 *   dV = P^T dO, dP = dO V^T, dS = P (dP - Dr), dQ = scale dS K, dK = scale dS^T Q. */
static void long_case(clg_device *dev, clg_dtype dt, int L, int S, int E, int Ev, optest_layout klay)
{
    size_t n = (size_t)(L * E + S * E + S * Ev + 2 * L * Ev + L * E + S * E + S * Ev + S);
    double *q = calloc(n, sizeof(double)), *k = q + L * E, *v = k + S * E, *g = v + S * Ev, *o = g + L * Ev;
    double *dq = o + L * Ev, *dk = dq + L * E, *dv = dk + S * E, *w = dv + S * Ev;
    optest_fill(q, L * E, -1, 1, 21);
    optest_fill(k, S * E, -1, 1, 22);
    optest_fill(v, S * Ev, -1, 1, 23);
    optest_fill(g, L * Ev, -1, 1, 24);
    optest_round(dt, q, L * E);
    optest_round(dt, k, S * E);
    optest_round(dt, v, S * Ev);
    optest_round(dt, g, L * Ev);
    double scale = 1 / sqrt((double)E);
    reference(1, L, S, E, Ev, q, k, v, NULL, false, scale, o);
    for (int i = 0; i < L; i++) {
        double mx = -INFINITY, sum = 0, dr = 0;
        for (int j = 0; j < S; j++) {
            double s = 0;
            for (int e = 0; e < E; e++) s += q[i * E + e] * k[j * E + e];
            w[j] = s * scale;
            mx = w[j] > mx ? w[j] : mx;
        }
        for (int j = 0; j < S; j++) sum += w[j] = exp(w[j] - mx);
        for (int d = 0; d < Ev; d++) dr += g[i * Ev + d] * o[i * Ev + d];
        for (int j = 0; j < S; j++) {
            double p = w[j] / sum, dp = 0;
            for (int d = 0; d < Ev; d++) {
                dp += g[i * Ev + d] * v[j * Ev + d];
                dv[j * Ev + d] += p * g[i * Ev + d];
            }
            double ds = p * (dp - dr) * scale;
            for (int e = 0; e < E; e++) {
                dq[i * E + e] += ds * k[j * E + e];
                dk[j * E + e] += ds * q[i * E + e];
            }
        }
    }
    clg_scope_begin(dev);
    clg_tensor *x[3] = {optest_tensor(dev, dt, SH(1, L, E), q, OPTEST_CONTIGUOUS),
                        optest_tensor(dev, dt, SH(1, S, E), k, klay),
                        optest_tensor(dev, dt, SH(1, S, Ev), v, OPTEST_CONTIGUOUS)};
    for (int i = 0; i < 3; i++) clg_tensor_set_requires_grad(x[i], true);
    clg_tensor *y = clg_scaled_dot_product_attention(x[0], x[1], x[2], NULL, false, 0, 0);
    clg_tensor *gt = optest_tensor(dev, dt, SH(1, L, Ev), g, OPTEST_CONTIGUOUS), *d[3] = {NULL, NULL, NULL};
    char what[64];
    snprintf(what, sizeof what, "L %d, S %d: output", L, S);
    CHECK_MSG(y, "%s: %s", what, clg_device_error(dev));
    double atol = optest_tol(dt, 1e-10, 2e-5), rtol = optest_tol(dt, 1e-8, 2e-3);
    if (y && optest_close(what, y, o, L * Ev, atol, rtol) && clg_grad(1, &y, &gt, 3, x, d) == CLG_OK) {
        const double *want[3] = {dq, dk, dv};
        const int64_t cnt[3] = {L * E, S * E, S * Ev};
        for (int i = 0; i < 3; i++) {
            /* dK and dV sum over every query: in float32, 70,000 terms that cancel leave an
             * error of ~1e-4 of the largest element (the sum's scale), not of each element */
            double big = 0;
            for (int64_t e = 0; e < cnt[i]; e++) big = fmax(big, fabs(want[i][e]));
            snprintf(what, sizeof what, "L %d, S %d: gradient %d", L, S, i);
            optest_close(what, d[i], want[i], cnt[i], fmax(atol, optest_tol(dt, 0, 3e-4) * big), rtol);
        }
    }
    clg_scope_end(dev);
    free(q);
}

/* Keys and queries beyond one launch's share: with item_loops lowered to 256 a launch takes
 * a tile or two, so small shapes split as 70,000 keys do at the default; then 70,000 keys
 * (and queries) at the default limit, against the composed ops. */
static void long_axes(clg_device *dev, clg_dtype dt)
{
    double tol = optest_tol(dt, 1e-10, 1e-4);
    CHECK_OK(dev, clg_device_set_param(dev, "item_loops", "256"));
    att_ctx plain = {false, false, 0, 0, 0}, causal = {true, false, 0, 0, 0}, drop = {true, false, 0.2, 0, 5};
    int64_t n = optest_small() ? 140 : 300;   /* three launches or more at 256 iterations */
    against_composed(dev, dt, "split keys", &plain, (int64_t[4][5]){{2, 5, 4}, {2, n, 4}, {2, n, 3}}, (int[]){3, 3, 3, 0}, tol);
    against_composed(dev, dt, "split queries, causal", &causal, (int64_t[4][5]){{1, n, 4}, {1, n / 2, 4}, {1, n / 2, 6}},
                     (int[]){3, 3, 3, 0}, tol);
    against_composed(dev, dt, "split, dropout", &drop, (int64_t[4][5]){{1, n / 2, 4}, {1, n / 2, 4}, {1, n / 2, 3}},
                     (int[]){3, 3, 3, 0}, tol);
    CHECK(clg_device_set_param(dev, "item_loops", "64") == CLG_OK);
    clg_scope_begin(dev);
    clg_tensor *q = clg_ones(dev, dt, SH(1, 2, 300)), *kv = clg_ones(dev, dt, SH(1, 3, 300));
    CHECK_MSG(!clg_scaled_dot_product_attention(q, kv, kv, NULL, false, 0, 0) &&
                  strstr(clg_device_error(dev), "item_loops = 64"),
              "a head too wide for the loop limit is refused naming it: %s", clg_device_error(dev));
    clg_scope_end(dev);
    CHECK_OK(dev, clg_device_set_param(dev, "item_loops", "32768"));
    if (optest_small()) return;
    long_case(dev, dt, 2, 70000, 4, 3, OPTEST_PERMUTED);   /* 70,000 keys */
    long_case(dev, dt, 70000, 3, 2, 2, OPTEST_PERMUTED);   /* 70,000 queries */
}

/* The same splits through the vector kernels (float32, heads of whole vectors, adjacent
 * columns), where the device table takes rows. */
static void long_axes_vectors(clg_device *dev)
{
    if (!vector_cases(dev)) return;
    double tol = optest_tol(CLG_F32, 1e-10, 1e-4);
    CHECK_OK(dev, clg_device_set_param(dev, "item_loops", "256"));
    att_ctx plain = {false, false, 0, 0, 0, false, true}, causal = {true, false, 0, 0, 0, false, true};
    att_ctx drop = {true, false, 0.2, 0, 5, false, true};
    int64_t n = optest_small() ? 140 : 300;
    against_composed(dev, CLG_F32, "vectors, split keys", &plain, (int64_t[4][5]){{2, 5, 32}, {2, n, 32}, {2, n, 16}},
                     (int[]){3, 3, 3, 0}, tol);
    against_composed(dev, CLG_F32, "vectors, split queries, causal", &causal,
                     (int64_t[4][5]){{1, n, 16}, {1, n / 2, 16}, {1, n / 2, 32}}, (int[]){3, 3, 3, 0}, tol);
    against_composed(dev, CLG_F32, "vectors, split, dropout", &drop,
                     (int64_t[4][5]){{1, n / 2, 16}, {1, n / 2, 16}, {1, n / 2, 16}}, (int[]){3, 3, 3, 0}, tol);
    CHECK_OK(dev, clg_device_set_param(dev, "item_loops", "32768"));
    if (optest_small()) return;
    long_case(dev, CLG_F32, 2, 70000, 16, 32, OPTEST_CONTIGUOUS);   /* 70,000 keys */
    long_case(dev, CLG_F32, 70000, 3, 32, 16, OPTEST_CONTIGUOUS);   /* 70,000 queries */
}

/* ---- 16-bit storage ---------------------------------------------------------------------- */

/* float16 / bfloat16 inputs: the float32 kernel on the widened inputs, rounded once, bit for
 * bit (the same kernel computes in float32); gradients within 16-bit rounding. Heads of
 * E = 8, and of 16, which a device with attention = rows (POCL) computes on float32
 * casts with the vector kernels (clg_scaled_dot_product_attention: widened_heads). */
static void half_storage(clg_device *dev, clg_dtype h, int64_t E)
{
    clg_scope_begin(dev);
    double vals[3][2 * 9 * 16];
    int64_t shapes[3][3] = {{2, 9, E}, {2, 9, E}, {2, 9, E}};
    clg_tensor *x16[3], *x32[3];
    for (int i = 0; i < 3; i++) {
        optest_fill(vals[i], 2 * 9 * E, -2, 2, 40 + (uint64_t)i);
        x16[i] = clg_cast(optest_tensor(dev, CLG_F32, 3, shapes[i], vals[i], OPTEST_PERMUTED), h);
        x32[i] = clg_cast(x16[i], CLG_F32);
        clg_tensor_set_requires_grad(x16[i], true);
        clg_tensor_set_requires_grad(x32[i], true);
    }
    clg_tensor *y16 = clg_scaled_dot_product_attention(x16[0], x16[1], x16[2], NULL, true, 0, 0);
    clg_tensor *y32 = clg_scaled_dot_product_attention(x32[0], x32[1], x32[2], NULL, true, 0, 0);
    CHECK_MSG(y16 && clg_tensor_dtype(y16) == h, "%s attention: %s", clg_dtype_name(h), clg_device_error(dev));
    if (y16 && y32) {
        double *a = optest_read(y16), *b = optest_read(clg_cast(y32, h));
        int bad = 0;
        for (int i = 0; a && b && i < 2 * 9 * E; i++) bad += a[i] != b[i];
        CHECK_MSG(a && b && !bad, "%s attention: %d values differ from float32's rounded", clg_dtype_name(h), bad);
        free(a);
        free(b);
        clg_tensor *g16 = clg_cast(clg_ones(dev, CLG_F32, 3, shapes[0]), h), *g32 = clg_ones(dev, CLG_F32, 3, shapes[0]);
        clg_tensor *d16[3], *d32[3];
        CHECK_OK(dev, clg_grad(1, &y16, &g16, 3, x16, d16));
        CHECK_OK(dev, clg_grad(1, &y32, &g32, 3, x32, d32));
        for (int i = 0; i < 3; i++) {
            double *w = optest_read(d32[i]);
            CHECK(clg_tensor_dtype(d16[i]) == h);
            char what[64];
            snprintf(what, sizeof what, "%s attention gradient %d", clg_dtype_name(h), i);
            if (w) optest_close(what, d16[i], w, 2 * 9 * E, h == CLG_BF16 ? 4e-2 : 6e-3, h == CLG_BF16 ? 2e-2 : 4e-3);
            free(w);
        }
    }
    clg_scope_end(dev);
}

/* ---- gradient checks and refusals --------------------------------------------------------- */

static void gradchecks(clg_device *dev)
{
    att_ctx plain = {false, false, 0, 0, 0, false}, causal = {true, false, 0, 0.5, 0, false};
    att_ctx masked = {false, false, 0, 0, 0, true}, drop = {false, false, 0.25, 0, 11, false};
    optest_gradcheck(dev, "attention", f_fused, &plain, 3, IN({SH(2, 2, 3)}, {SH(2, 3, 3)}, {SH(2, 3, 2)}));
    optest_gradcheck(dev, "attention causal", f_fused, &causal, 3, IN({SH(1, 3, 2)}, {SH(1, 4, 2)}, {SH(1, 4, 2)}));
    optest_gradcheck(dev, "attention float mask, broadcast batch", f_fused, &masked, 4,
                     IN({SH(2, 1, 2, 2)}, {SH(1, 3, 2)}, {SH(1, 3, 2)}, {SH(2, 3), -1, 0, true}));
    optest_gradcheck(dev, "attention dropout", f_fused, &drop, 3, IN({SH(1, 2, 2)}, {SH(1, 3, 2)}, {SH(1, 3, 2)}));
}

static void refusals(clg_device *dev)
{
    clg_scope_begin(dev);
    clg_tensor *q = clg_zeros(dev, CLG_F32, SH(2, 3, 4)), *k = clg_zeros(dev, CLG_F32, SH(2, 5, 4));
    clg_tensor *v = clg_zeros(dev, CLG_F32, SH(2, 5, 6)), *k3 = clg_zeros(dev, CLG_F32, SH(2, 5, 3));
    CHECK(!clg_scaled_dot_product_attention(q, k3, v, NULL, false, 0, 0) &&
          strstr(clg_device_error(dev), "clg_scaled_dot_product_attention") && strstr(clg_device_error(dev), "[2, 5, 3]"));
    CHECK(!clg_scaled_dot_product_attention(q, k, clg_zeros(dev, CLG_F32, SH(2, 4, 6)), NULL, false, 0, 0));
    CHECK(!clg_scaled_dot_product_attention(q, k, clg_zeros(dev, CLG_F32, SH(3, 5, 6)), NULL, false, 0, 0));
    CHECK(!clg_scaled_dot_product_attention(q, k, v, clg_zeros(dev, CLG_F32, SH(3, 4)), false, 0, 0));
    CHECK(!clg_scaled_dot_product_attention(q, k, v, clg_zeros(dev, CLG_F32, SH(4, 3, 5)), false, 0, 0));
    CHECK(!clg_scaled_dot_product_attention(q, k, v, NULL, false, 1.5, 0) && strstr(clg_device_error(dev), "dropout_p"));
    CHECK(!clg_scaled_dot_product_attention(q, k, v, NULL, false, 0, NAN));
    CHECK(!clg_scaled_dot_product_attention(clg_zeros(dev, CLG_F32, SH(4)), k, v, NULL, false, 0, 0));
    CHECK(!clg_scaled_dot_product_attention(clg_zeros(dev, CLG_I32, SH(2, 3, 4)), k, v, NULL, false, 0, 0));
    if (optest_fp64(dev)) CHECK(!clg_scaled_dot_product_attention(q, clg_zeros(dev, CLG_F64, SH(2, 5, 4)), v, NULL, false, 0, 0));
    clg_tensor *m = clg_zeros(dev, CLG_F32, SH(3, 5));
    clg_tensor_set_requires_grad(q, true);
    clg_tensor_set_requires_grad(m, true);
    CHECK(!clg_scaled_dot_product_attention(q, k, v, m, false, 0, 0) && strstr(clg_device_error(dev), "requires a gradient"));
    /* a fully masked row is NaN, as softmax over -inf gives; the others are right */
    double hm[15] = {1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    clg_tensor *bm = optest_tensor(dev, CLG_I32, SH(3, 5), hm, OPTEST_CONTIGUOUS);
    clg_tensor *y = clg_scaled_dot_product_attention(clg_ones(dev, CLG_F32, SH(2, 3, 4)), k, clg_ones(dev, CLG_F32, SH(2, 5, 6)),
                                                     bm, false, 0, 0);
    double *h = y ? optest_read(y) : NULL;
    CHECK_MSG(h && h[0] == 1 && isnan(h[6]) && h[12] == 1 && h[35] == 1, "masked rows: %s", clg_device_error(dev));
    free(h);
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    clg_dtype dts[2];
    int ndt = optest_float_dtypes(dev, dts);
    const shape_case shapes[] = {
        {1, 1, 1, 1, 1, false, false}, {2, 5, 7, 3, 4, false, false}, {2, 5, 7, 3, 4, true, true},
        {3, 33, 70, 16, 20, true, false}, {1, 64, 64, 8, 8, false, true}, {1, 40, 3, 2, 130, false, false},
    };
    /* The simulators (CLG_TEST_SMALL) run every kernel in one float type, on fewer shapes. */
    if (optest_small()) ndt = 1;
    size_t nshapes = optest_small() ? 3 : sizeof shapes / sizeof *shapes;
    for (int d = 0; d < ndt; d++) {
        for (size_t i = 0; i < nshapes; i++) against_reference(dev, dts[d], &shapes[i]);
        composed_cases(dev, dts[d]);
    }
    long_axes(dev, optest_precise(dev));
    long_axes_vectors(dev);
    for (int64_t E = 8; E <= 16; E += 8) {
        half_storage(dev, CLG_F16, E);
        half_storage(dev, CLG_BF16, E);
    }
    gradchecks(dev);
    refusals(dev);
    clg_device_close(dev);
    return check_report("test_grad_attention");
}
