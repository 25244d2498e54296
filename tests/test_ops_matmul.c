/* matmul and linear forward against a plain-C reference: 2-D at sizes around the
 * work-group and tile sizes, transposed and sliced operands, vectors, broadcast
 * batches, zero sizes and errors; in float32, and in float16 and bfloat16 (float32
 * sums of the 16-bit inputs, each result rounded once: within a unit of its last
 * place, here a relative 1e-3 and 8e-3). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optest.h"

/* c[b][i][j] = sum_k a[b][i][k] * w[b][k][j]; a row-major [batch, m, k], b [batch, k, n] */
static void ref_mm(const double *a, const double *b, double *c, int64_t batch, int64_t m, int64_t k, int64_t n,
                   bool a_shared, bool b_shared)
{
    for (int64_t t = 0; t < batch; t++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++)
                    s += a[(a_shared ? 0 : t) * m * k + i * k + p] * b[(b_shared ? 0 : t) * k * n + p * n + j];
                c[t * m * n + i * n + j] = s;
            }
}

static clg_dtype dt = CLG_F32;   /* of the cases below */

static double tol(void) { return dt == CLG_F16 ? 1e-3 : dt == CLG_BF16 ? 8e-3 : 1e-4; }

static void check_2d(clg_device *dev, int64_t m, int64_t k, int64_t n, optest_layout la, optest_layout lb)
{
    double *a = malloc((size_t)(m * k + 1) * sizeof *a), *b = malloc((size_t)(k * n + 1) * sizeof *b);
    double *c = malloc((size_t)(m * n + 1) * sizeof *c);
    optest_fill(a, m * k, -1, 1, 1);
    optest_fill(b, k * n, -1, 1, 2);
    optest_round(dt, a, m * k);
    optest_round(dt, b, k * n);
    ref_mm(a, b, c, 1, m, k, n, false, false);
    clg_scope_begin(dev);
    clg_tensor *ta = optest_tensor(dev, dt, CLG_SHAPE(m, k), a, la);
    clg_tensor *tb = optest_tensor(dev, dt, CLG_SHAPE(k, n), b, lb);
    char what[128];
    snprintf(what, sizeof what, "matmul %s %lldx%lldx%lld %s/%s", clg_dtype_name(dt), (long long)m, (long long)k,
             (long long)n, optest_layout_names[la], optest_layout_names[lb]);
    optest_close(what, clg_matmul(ta, tb), c, m * n, tol(), tol());
    clg_scope_end(dev);
    free(a);
    free(b);
    free(c);
}

static void check_linear(clg_device *dev, int64_t rows, int64_t in, int64_t out)
{
    double *x = malloc((size_t)(rows * in) * sizeof *x), *w = malloc((size_t)(out * in) * sizeof *w);
    double *b = malloc((size_t)out * sizeof *b), *y = malloc((size_t)(rows * out) * sizeof *y);
    optest_fill(x, rows * in, -1, 1, 3);
    optest_fill(w, out * in, -1, 1, 4);
    optest_fill(b, out, -1, 1, 5);
    optest_round(dt, x, rows * in);
    optest_round(dt, w, out * in);
    optest_round(dt, b, out);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t o = 0; o < out; o++) {
            double s = b[o];
            for (int64_t p = 0; p < in; p++) s += x[i * in + p] * w[o * in + p];
            y[i * out + o] = s;
        }
    clg_scope_begin(dev);
    clg_tensor *tx = optest_tensor(dev, dt, CLG_SHAPE(rows, in), x, OPTEST_CONTIGUOUS);
    clg_tensor *tw = optest_tensor(dev, dt, CLG_SHAPE(out, in), w, OPTEST_CONTIGUOUS);
    clg_tensor *tb = optest_tensor(dev, dt, CLG_SHAPE(out), b, OPTEST_CONTIGUOUS);
    /* 16 bits: the bias is rounded into C, then C + x w^T rounded again */
    optest_close("linear", clg_linear(tx, tw, tb), y, rows * out, 2 * tol(), 2 * tol());
    clg_scope_end(dev);
    free(x);
    free(w);
    free(b);
    free(y);
}

static void check_batched(clg_device *dev)
{
    /* [2, 1, 3, 4] @ [3, 4, 5] -> [2, 3, 3, 5]: a broadcast along axis 1, b along axis 0 */
    double a[2 * 3 * 4], b[3 * 4 * 5], c[2 * 3 * 3 * 5];
    optest_fill(a, 24, -1, 1, 6);
    optest_fill(b, 60, -1, 1, 7);
    optest_round(dt, a, 24);
    optest_round(dt, b, 60);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) ref_mm(a + i * 12, b + j * 20, c + (i * 3 + j) * 15, 1, 3, 4, 5, false, false);
    clg_scope_begin(dev);
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
        clg_tensor *ta = optest_tensor(dev, dt, CLG_SHAPE(2, 1, 3, 4), a, (optest_layout)l);
        clg_tensor *tb = optest_tensor(dev, dt, CLG_SHAPE(3, 4, 5), b, (optest_layout)l);
        clg_tensor *tc = clg_matmul(ta, tb);
        CHECK(tc && clg_tensor_ndim(tc) == 4 && clg_tensor_dim(tc, 1) == 3 && clg_tensor_dim(tc, 3) == 5);
        optest_close("matmul batch broadcast", tc, c, 90, tol(), tol());
    }
    /* vectors */
    double dot = 0;
    for (int i = 0; i < 4; i++) dot += a[i] * b[i];
    clg_tensor *v1 = optest_tensor(dev, dt, CLG_SHAPE(4), a, OPTEST_SLICED);
    clg_tensor *v2 = optest_tensor(dev, dt, CLG_SHAPE(4), b, OPTEST_CONTIGUOUS);
    clg_tensor *d = clg_matmul(v1, v2);
    CHECK(d && clg_tensor_ndim(d) == 0);
    optest_close("matmul dot", d, &dot, 1, tol(), tol());
    clg_scope_end(dev);
}

static void errors(clg_device *dev)
{
    clg_scope_begin(dev);
    clg_tensor *a = clg_zeros(dev, CLG_F32, CLG_SHAPE(2, 3));
    clg_tensor *b = clg_zeros(dev, CLG_F32, CLG_SHAPE(4, 2));
    CHECK(clg_matmul(a, b) == NULL && strstr(clg_device_error(dev), "clg_matmul") &&
          strstr(clg_device_error(dev), "[2, 3]") && strstr(clg_device_error(dev), "[4, 2]"));
    CHECK(clg_matmul(a, NULL) == NULL && clg_matmul(NULL, b) == NULL);
    clg_tensor *i = clg_zeros(dev, CLG_I32, CLG_SHAPE(3, 2));
    CHECK(clg_matmul(clg_zeros(dev, CLG_I32, CLG_SHAPE(2, 3)), i) == NULL &&
          strstr(clg_device_error(dev), "float"));
    if (optest_fp64(dev))   /* the one other float type, where the device has it */
        CHECK(clg_matmul(a, clg_zeros(dev, CLG_F64, CLG_SHAPE(3, 2))) == NULL &&
              strstr(clg_device_error(dev), "dtypes differ"));
    CHECK(clg_matmul(clg_zeros(dev, CLG_F32, CLG_SHAPE(2, 2, 3)), clg_zeros(dev, CLG_F32, CLG_SHAPE(3, 3, 4))) ==
          NULL);
    CHECK(clg_linear(a, clg_zeros(dev, CLG_F32, CLG_SHAPE(5, 2)), NULL) == NULL &&
          strstr(clg_device_error(dev), "clg_linear"));
    CHECK(clg_linear(a, clg_zeros(dev, CLG_F32, CLG_SHAPE(5, 3)), clg_zeros(dev, CLG_F32, CLG_SHAPE(4))) == NULL);
    /* zero sizes: k = 0 gives zeros, m = 0 an empty result */
    clg_tensor *z = clg_matmul(clg_zeros(dev, CLG_F32, CLG_SHAPE(2, 0)), clg_zeros(dev, CLG_F32, CLG_SHAPE(0, 3)));
    double zeros[6] = {0};
    optest_close("matmul k=0", z, zeros, 6, 0, 0);
    clg_tensor *e = clg_matmul(clg_zeros(dev, CLG_F32, CLG_SHAPE(0, 4)), clg_zeros(dev, CLG_F32, CLG_SHAPE(4, 3)));
    CHECK(e && clg_tensor_numel(e) == 0);
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    /* CLG_TEST_SMALL: the same cases (partial tiles, every layout, long and short
     * sides) at sizes a simulator gets through */
    bool small = optest_small();
    const int64_t sizes[] = {1, 7, 33, small ? 65 : 257};
    for (int i = 0; i < 4; i++) check_2d(dev, sizes[i], sizes[(i + 1) % 4], sizes[(i + 2) % 4], 0, 0);
    for (int la = 0; la < OPTEST_LAYOUT_COUNT; la++)
        for (int lb = 0; lb < OPTEST_LAYOUT_COUNT; lb++) check_2d(dev, 13, 33, 17, la, lb);
    check_2d(dev, small ? 64 : 128, small ? 100 : 784, small ? 32 : 64, OPTEST_CONTIGUOUS, OPTEST_PERMUTED);
    check_2d(dev, small ? 300 : 1000, 3, 5, OPTEST_CONTIGUOUS, OPTEST_CONTIGUOUS);
    check_linear(dev, 1, 1, 1);
    check_linear(dev, 33, 7, small ? 300 : 1000);
    check_linear(dev, small ? 65 : 129, small ? 100 : 784, 10);
    check_batched(dev);
    /* 16-bit storage: every layout, partial tiles, A . B^T (linear) and batches (float16
     * alone on a simulator: the kernels address bfloat16 alike) */
    for (dt = CLG_F16; dt <= (small ? CLG_F16 : CLG_BF16); dt++) {
        for (int i = 0; i < 4; i++) check_2d(dev, sizes[i], sizes[(i + 1) % 4], sizes[(i + 2) % 4], 0, 0);
        for (int la = 0; la < OPTEST_LAYOUT_COUNT; la++)
            for (int lb = 0; lb < OPTEST_LAYOUT_COUNT; lb++) check_2d(dev, 13, 33, 17, la, lb);
        check_linear(dev, 33, 7, small ? 300 : 1000);
        check_linear(dev, small ? 65 : 129, small ? 100 : 784, 10);
        check_batched(dev);
    }
    errors(dev);
    clg_device_close(dev);
    return check_report("test_ops_matmul");
}
