/* cumsum, sort and topk (src/tensor/sort.c) against plain-C references in every dtype
 * and layout: sums in order, stable sorts with ties, NaN placed as PyTorch places it,
 * axes other than the last, and refusals. Gradients: test_grad_core. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "optest.h"

enum { A = 3, B = 7, C = 5, N = A * B * C };

static clg_dtype dtypes[3];
static int ndtypes;

static void test_cumsum(clg_device *dev)
{
    double x[N], want[N];
    optest_fill(x, N, -20, 20, 9);
    for (int i = 0; i < N; i++) x[i] = floor(x[i]);   /* integer sums: exact everywhere */
    const int64_t dims[3] = {A, B, C};
    for (int ax = 0; ax < 3; ax++) {
        int64_t stride = ax == 0 ? B * C : ax == 1 ? C : 1;
        for (int i = 0; i < N; i++) {
            int64_t pos = i / stride % dims[ax];
            want[i] = x[i] + (pos ? want[i - stride] : 0);
        }
        for (int di = 0; di < ndtypes; di++)
            for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
                clg_scope_begin(dev);
                char w[96];
                snprintf(w, sizeof w, "cumsum axis %d %s %s", ax, clg_dtype_name(dtypes[di]), optest_layout_names[l]);
                clg_tensor *t = optest_tensor(dev, dtypes[di], CLG_SHAPE(A, B, C), x, (optest_layout)l);
                optest_close(w, clg_cumsum(t, ax == 2 ? -1 : ax), want, N, 0, 0);
                clg_scope_end(dev);
            }
    }
    clg_scope_begin(dev);
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(A, B, C), x, OPTEST_CONTIGUOUS);
    CHECK(clg_cumsum(t, 3) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_cumsum"), "%s", clg_device_error(dev));
    clg_tensor *e = clg_cumsum(clg_zeros(dev, CLG_F32, CLG_SHAPE(2, 0)), 1);
    CHECK_MSG(e && clg_tensor_numel(e) == 0, "cumsum empty: %s", clg_device_error(dev));
    clg_scope_end(dev);
}

/* Rows side by side (the last axis, float32): whole vectors of 16 and a tail, in one
 * piece and in several (item_loops 64: pieces of 32), the kernels for items
 * (row_reduce = items: in vectors) and for groups; backward is the reverse scan. */
static void test_cumsum_rows(clg_device *dev)
{
    enum { ROWS = 5, LEN = 77, NR = ROWS * LEN };
    double x[NR], w[NR], up[NR], down[NR];
    optest_fill(x, NR, -20, 20, 3);
    optest_fill(w, NR, -20, 20, 4);
    for (int i = 0; i < NR; i++) x[i] = floor(x[i]), w[i] = floor(w[i]);
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < LEN; j++) {
            int i = r * LEN + j, e = r * LEN + LEN - 1 - j;
            up[i] = x[i] + (j ? up[i - 1] : 0);
            down[e] = w[e] + (j ? down[e + 1] : 0);
        }
    char loops[32];
    snprintf(loops, sizeof loops, "%zu", clg__device_params(dev)->item_loops);
    bool was_items = clg__device_params(dev)->row_items;
    for (int items = 0; items < 2; items++)
        for (int few = 0; few < 2; few++) {
            CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", items ? "items" : "groups"));
            CHECK_OK(dev, clg_device_set_param(dev, "item_loops", few ? "64" : loops));
            clg_scope_begin(dev);
            char what[96];
            snprintf(what, sizeof what, "cumsum rows [%d, %d] %s%s", ROWS, LEN, items ? "items" : "groups",
                     few ? ", pieces of 32" : "");
            clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(ROWS, LEN), x, OPTEST_CONTIGUOUS);
            CHECK_OK(dev, clg_tensor_set_requires_grad(t, true));
            clg_tensor *y = clg_cumsum(t, 1);
            optest_close(what, y, up, NR, 0, 0);
            clg_tensor *wt = optest_tensor(dev, CLG_F32, CLG_SHAPE(ROWS, LEN), w, OPTEST_CONTIGUOUS);
            CHECK_OK(dev, clg_backward(clg_sum(clg_mul(y, wt), 0, NULL, false), NULL));
            strcat(what, " backward");
            optest_close(what, clg_tensor_grad(t), down, NR, 0, 0);
            clg_scope_end(dev);
        }
    CHECK_OK(dev, clg_device_set_param(dev, "row_reduce", was_items ? "items" : "groups"));
    CHECK_OK(dev, clg_device_set_param(dev, "item_loops", loops));
}

/* The reference: each row (along axis ax of [A, B, C]) sorted stably by clg_before's order. */
static bool before(double a, int i, double b, int j, bool desc)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? i < j : desc ? isnan(a) : isnan(b);
    if (a == b) return i < j;
    return desc ? a > b : a < b;
}

static void ref_sort(const double *x, int ax, bool desc, int64_t k, double *vals, double *idx)
{
    const int64_t dims[3] = {A, B, C};
    int64_t stride = ax == 0 ? B * C : ax == 1 ? C : 1, R = dims[ax];
    int64_t od[3] = {A, B, C};
    od[ax] = k;
    for (int64_t i = 0; i < A; i++)
        for (int64_t j = 0; j < B; j++)
            for (int64_t c = 0; c < C; c++) {
                int64_t co[3] = {i, j, c};
                if (co[ax] != 0) continue;   /* one row per position with 0 along ax */
                int64_t base = (i * B + j) * C + c;
                for (int64_t r = 0; r < R; r++) {
                    int64_t rank = 0;
                    for (int64_t q = 0; q < R; q++)
                        rank += before(x[base + q * stride], (int)q, x[base + r * stride], (int)r, desc);
                    if (rank >= k) continue;
                    int64_t oc[3] = {i, j, c};
                    oc[ax] = rank;
                    int64_t o = (oc[0] * od[1] + oc[1]) * od[2] + oc[2];
                    vals[o] = x[base + r * stride];
                    idx[o] = (double)r;
                }
            }
}

static void test_sort(clg_device *dev)
{
    static double x[N], vals[N], idx[N];
    optest_fill(x, N, -5, 5, 4);
    for (int i = 0; i < N; i++) x[i] = floor(x[i]);   /* many ties */
    x[3] = NAN, x[17] = NAN, x[40] = NAN, x[41] = NAN;
    const int64_t dims[3] = {A, B, C};
    for (int ax = 0; ax < 3; ax++)
        for (int desc = 0; desc < 2; desc++)
            for (int topk = 0; topk < 2; topk++) {
                int64_t k = topk ? 2 : dims[ax], on = N / dims[ax] * k;
                ref_sort(x, ax, desc, k, vals, idx);
                for (int di = 0; di < ndtypes; di++)
                    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
                        if (dtypes[di] == CLG_I32 && l == 0) continue;   /* below, without NaN */
                        clg_scope_begin(dev);
                        char w[128];
                        snprintf(w, sizeof w, "%s axis %d %s %s %s", topk ? "topk 2" : "sort", ax,
                                 desc ? "descending" : "ascending", clg_dtype_name(dtypes[di]), optest_layout_names[l]);
                        clg_tensor *t = optest_tensor(dev, dtypes[di], CLG_SHAPE(A, B, C), x, (optest_layout)l);
                        clg_tensor *v = NULL, *ix = NULL;
                        clg_status st = topk ? clg_topk(t, k, ax, desc, &v, &ix) : clg_sort(t, ax, desc, &v, &ix);
                        CHECK_MSG(st == CLG_OK && v && ix && clg_tensor_dtype(ix) == CLG_I32 &&
                                      clg_tensor_dim(v, ax) == k,
                                  "%s: %s", w, clg_device_error(dev));
                        if (dtypes[di] != CLG_I32) optest_close(w, v, vals, on, 0, 0);
                        if (dtypes[di] != CLG_I32) optest_close(w, ix, idx, on, 0, 0);
                        clg_scope_end(dev);
                    }
            }
    /* int32, no NaN */
    double xi[N];
    for (int i = 0; i < N; i++) xi[i] = isnan(x[i]) ? 9 : x[i];
    ref_sort(xi, 1, true, B, vals, idx);
    clg_scope_begin(dev);
    clg_tensor *v, *ix;
    CHECK_OK(dev, clg_sort(optest_tensor(dev, CLG_I32, CLG_SHAPE(A, B, C), xi, OPTEST_PERMUTED), 1, true, &v, &ix));
    optest_close("sort int32 descending axis 1", v, vals, N, 0, 0);
    optest_close("sort int32 indices", ix, idx, N, 0, 0);
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(A, B, C), x, OPTEST_CONTIGUOUS);
    CHECK(clg_topk(t, C + 1, -1, true, &v, &ix) != CLG_OK && v == NULL && ix == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_topk") && strstr(clg_device_error(dev), "k = 6"), "%s",
              clg_device_error(dev));
    CHECK(clg_topk(t, -1, 0, true, &v, &ix) != CLG_OK);
    CHECK(clg_sort(t, 3, false, &v, &ix) != CLG_OK);
    CHECK(clg_sort(t, 0, false, NULL, &ix) != CLG_OK);
    CHECK(clg_sort(NULL, 0, false, &v, &ix) != CLG_OK);
    CHECK_OK(dev, clg_topk(t, 0, 1, true, &v, &ix));
    CHECK(v && clg_tensor_numel(v) == 0 && clg_tensor_dim(v, 1) == 0);
    clg_scope_end(dev);
}

/* topk of long rows, where it selects in passes of chunks (sort.c select_rows): k from
 * 1 to past the selection's 32 (the whole sort then), both orders, ties and NaN, with
 * the device's item_loops as it is and lowered so that the chunks shrink and a pass
 * more runs; int32 without NaN. Against the stable order's first k. */
static void test_topk_long(clg_device *dev)
{
    enum { ROWS = 3 };
    int64_t R = optest_small() ? 600 : 3000;
    double *x = malloc((size_t)(ROWS * R) * sizeof *x), *vals = malloc(ROWS * 40 * sizeof *vals);
    double *idx = malloc(ROWS * 40 * sizeof *idx);
    optest_fill(x, ROWS * R, -50, 50, 12);
    for (int64_t i = 0; i < ROWS * R; i++) x[i] = i % 97 == 5 ? NAN : floor(x[i]);   /* ties, NaN */
    const int64_t ks[] = {1, 7, 32, 33};
    char loops[32];
    snprintf(loops, sizeof loops, "%zu", clg__device_params(dev)->item_loops);
    for (int lowered = 0; lowered < 2; lowered++) {
        if (lowered) CHECK_OK(dev, clg_device_set_param(dev, "item_loops", "1024"));
        for (int dt = 0; dt < 2; dt++)
            for (int ki = 0; ki < 4; ki++)
                for (int desc = 0; desc < 2; desc++) {
                    int64_t k = ks[ki];
                    for (int64_t r = 0; r < ROWS; r++)
                        for (int64_t i = 0; i < R; i++) {
                            double v = x[r * R + i];
                            if (dt && isnan(v)) continue;
                            int64_t rank = 0;
                            for (int64_t j = 0; j < R; j++)
                                if (!(dt && isnan(x[r * R + j]))) rank += before(x[r * R + j], (int)j, v, (int)i, desc);
                            if (rank < k) vals[r * k + rank] = v, idx[r * k + rank] = (double)i;
                        }
                    clg_scope_begin(dev);
                    char w[128];
                    snprintf(w, sizeof w, "topk %lld of rows of %lld %s %s, item_loops %s", (long long)k,
                             (long long)R, desc ? "descending" : "ascending", dt ? "int32" : "float32",
                             lowered ? "1024" : "as the device's");
                    clg_tensor *t = optest_tensor(dev, dt ? CLG_I32 : CLG_F32, CLG_SHAPE(ROWS, R), x, OPTEST_CONTIGUOUS);
                    if (dt) {   /* NaN as an int no top k reaches */
                        clg_tensor_free(t);
                        double *xi = malloc((size_t)(ROWS * R) * sizeof *xi);
                        for (int64_t i = 0; i < ROWS * R; i++) xi[i] = isnan(x[i]) ? (desc ? -1000 : 1000) : x[i];
                        t = optest_tensor(dev, CLG_I32, CLG_SHAPE(ROWS, R), xi, OPTEST_CONTIGUOUS);
                        free(xi);
                    }
                    clg_tensor *v = NULL, *ix = NULL;
                    CHECK_MSG(clg_topk(t, k, 1, desc, &v, &ix) == CLG_OK && clg_tensor_dim(v, 1) == k &&
                                  clg_tensor_dim(ix, 1) == k, "%s: %s", w, clg_device_error(dev));
                    optest_close(w, v, vals, ROWS * k, 0, 0);
                    optest_close(w, ix, idx, ROWS * k, 0, 0);
                    clg_scope_end(dev);
                }
    }
    CHECK_OK(dev, clg_device_set_param(dev, "item_loops", loops));
    free(x), free(vals), free(idx);
}

int main(void)
{
    clg_device *dev = check_open_device();
    dtypes[ndtypes++] = CLG_F32;
    if (optest_fp64(dev)) dtypes[ndtypes++] = CLG_F64;
    dtypes[ndtypes++] = CLG_I32;
    test_cumsum(dev);
    test_cumsum_rows(dev);
    test_sort(dev);
    test_topk_long(dev);
    clg_device_close(dev);
    return check_report("test_ops_sort");
}
