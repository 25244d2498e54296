/* The autograd API beyond clg_backward: retain_grad on non-leaves, gradient hooks
 * (seeing, replacing, failing), clg_grad (torch.autograd.grad: returned, not
 * accumulated; several outputs and inputs; unused inputs refused), gradients that linear
 * and conv2d write straight into .grad, and int32 index tensors from int64 host data. Exact values on tiny graphs: y = sum(w * x), etc. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "optest.h"

static clg_tensor *leaf(clg_device *dev, const double *v, int64_t n)
{
    clg_tensor *t = optest_tensor(dev, CLG_F32, 1, &n, v, OPTEST_CONTIGUOUS);
    CHECK_OK(dev, clg_tensor_set_requires_grad(t, true));
    return t;
}

static void test_retain_grad(clg_device *dev)
{
    clg_scope_begin(dev);
    const double xv[3] = {1, 2, 3};
    clg_tensor *x = leaf(dev, xv, 3);
    clg_tensor *h = clg_mul_scalar(x, 2.0);   /* h = 2x, a non-leaf */
    CHECK_OK(dev, clg_tensor_retain_grad(h));
    clg_tensor *y = clg_sum(clg_mul(h, h), 0, NULL, false);   /* y = sum h^2: dy/dh = 2h = 4x */
    CHECK_OK(dev, clg_backward(y, NULL));
    optest_close("retain_grad: dy/dh", clg_tensor_grad(h), (double[]){4, 8, 12}, 3, 0, 1e-6);
    optest_close("retain_grad: dy/dx", clg_tensor_grad(x), (double[]){8, 16, 24}, 3, 0, 1e-6);
    CHECK_OK(dev, clg_backward(y, NULL));   /* accumulates, as a leaf's does */
    optest_close("retain_grad accumulates", clg_tensor_grad(h), (double[]){8, 16, 24}, 3, 0, 1e-6);
    /* without retain_grad a non-leaf keeps nothing */
    clg_tensor *k = clg_exp(x);
    CHECK_OK(dev, clg_backward(clg_sum(k, 0, NULL, false), NULL));
    CHECK(clg_tensor_grad(k) == NULL);
    CHECK(clg_tensor_retain_grad(clg_ones(dev, CLG_F32, CLG_SHAPE(2))) != CLG_OK);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_tensor_retain_grad"), "%s", clg_device_error(dev));
    clg_scope_end(dev);
}

typedef struct hook_log { int calls; double seen0; double scale; bool fail; } hook_log;

/* Records the first element of the gradient, and scales it when asked. */
static clg_status hook(clg_tensor *t, clg_tensor **grad, void *user)
{
    (void)t;
    hook_log *log = user;
    log->calls++;
    float v;
    clg_tensor *first = clg_narrow(clg_flatten(*grad, 0, -1), 0, 0, 1);
    if (clg_tensor_to_host(first, &v, sizeof v) != CLG_OK) return CLG_ERR_OPENCL;
    log->seen0 = v;
    if (log->fail) return CLG_ERR_INVALID_ARGUMENT;
    if (log->scale != 1) *grad = clg_mul_scalar(*grad, log->scale);
    return CLG_OK;
}

/* Returns a gradient of the wrong shape. */
static clg_status bad_hook(clg_tensor *t, clg_tensor **grad, void *user)
{
    (void)user;
    *grad = clg_zeros(clg_tensor_device(t), CLG_F32, CLG_SHAPE(7));
    return CLG_OK;
}

static void test_hooks(clg_device *dev)
{
    clg_scope_begin(dev);
    const double xv[3] = {1, 2, 3};
    clg_tensor *x = leaf(dev, xv, 3);
    clg_tensor *h = clg_mul_scalar(x, 3.0);
    hook_log on_h = {0, 0, 10, false}, on_x = {0, 0, 1, false};
    CHECK_OK(dev, clg_tensor_register_hook(h, hook, &on_h));   /* dy/dh = 1, then x10 */
    CHECK_OK(dev, clg_tensor_register_hook(x, hook, &on_x));   /* sees 3 * 10 */
    CHECK_OK(dev, clg_backward(clg_sum(h, 0, NULL, false), NULL));
    CHECK_MSG(on_h.calls == 1 && on_h.seen0 == 1 && on_x.calls == 1 && on_x.seen0 == 30, "hooks: %d %g, %d %g",
              on_h.calls, on_h.seen0, on_x.calls, on_x.seen0);
    optest_close("hook replaced the gradient", clg_tensor_grad(x), (double[]){30, 30, 30}, 3, 0, 0);
    /* a failing hook stops the pass with its status; a misshapen replacement is refused */
    on_h.fail = true;
    clg_tensor_zero_grad(x);
    CHECK(clg_backward(clg_sum(h, 0, NULL, false), NULL) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(clg_device_error(dev), "hook"), "%s", clg_device_error(dev));
    clg_tensor *z = clg_exp(x);
    CHECK_OK(dev, clg_tensor_register_hook(z, bad_hook, NULL));
    CHECK(clg_backward(clg_sum(z, 0, NULL, false), NULL) == CLG_ERR_SHAPE);
    CHECK_MSG(strstr(clg_device_error(dev), "hook") && strstr(clg_device_error(dev), "shape"), "%s",
              clg_device_error(dev));
    CHECK(clg_tensor_register_hook(x, NULL, NULL) != CLG_OK);
    clg_scope_end(dev);
}

static void test_grad(clg_device *dev)
{
    clg_scope_begin(dev);
    const double av[2] = {1, 2}, bv[2] = {3, 5};
    clg_tensor *a = leaf(dev, av, 2), *b = leaf(dev, bv, 2);
    clg_tensor *p = clg_sum(clg_mul(a, b), 0, NULL, false);            /* p = a.b */
    clg_tensor *q = clg_sum(clg_mul(a, a), 0, NULL, false);            /* q = |a|^2 */
    clg_tensor *g[2];
    CHECK_OK(dev, clg_grad(1, &p, NULL, 2, (clg_tensor *const[]){a, b}, g));
    optest_close("clg_grad dp/da", g[0], bv, 2, 0, 0);
    optest_close("clg_grad dp/db", g[1], av, 2, 0, 0);
    CHECK(clg_tensor_grad(a) == NULL && clg_tensor_grad(b) == NULL);   /* nothing accumulated */
    /* two outputs, seeded 1 and 2: d(p + 2q)/da = b + 4a */
    clg_tensor *two = clg_full(dev, CLG_F32, 0, NULL, 2.0);
    CHECK_OK(dev, clg_grad(2, (clg_tensor *const[]){p, q}, (clg_tensor *const[]){NULL, two}, 1, &a, g));
    optest_close("clg_grad of two outputs", g[0], (double[]){7, 13}, 2, 0, 0);
    /* with respect to an intermediate: dp/d(a*b) = ones */
    clg_tensor *ab = clg_mul(a, b), *s = clg_sum(ab, 0, NULL, false);
    CHECK_OK(dev, clg_grad(1, &s, NULL, 1, &ab, g));
    optest_close("clg_grad at a non-leaf", g[0], (double[]){1, 1}, 2, 0, 0);
    /* an input the output does not use */
    clg_tensor *c = leaf(dev, av, 2);
    CHECK(clg_grad(1, &p, NULL, 1, &c, g) == CLG_ERR_INVALID_ARGUMENT && g[0] == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_grad") && strstr(clg_device_error(dev), "not used"), "%s",
              clg_device_error(dev));
    CHECK(clg_grad(1, &ab, NULL, 1, &a, g) == CLG_ERR_SHAPE);   /* two elements need a seed */
    CHECK(clg_grad(0, &p, NULL, 1, &a, g) == CLG_ERR_INVALID_ARGUMENT);
    clg_scope_end(dev);
}

/* zero_grad is lazy: the next backward writes the gradient (no fill, no add), and a
 * read before any backward sees zeros. */
static void test_lazy_zero_grad(clg_device *dev)
{
    clg_scope_begin(dev);
    const double xv[3] = {1, 2, 3};
    clg_tensor *x = leaf(dev, xv, 3);
    CHECK_OK(dev, clg_backward(clg_sum(clg_mul_scalar(x, 5.0), 0, NULL, false), NULL));
    clg_tensor_zero_grad(x);
    CHECK_OK(dev, clg_backward(clg_sum(clg_mul_scalar(x, 2.0), 0, NULL, false), NULL));
    optest_close("the pass after zero_grad writes, not adds", clg_tensor_grad(x), (double[]){2, 2, 2}, 3, 0, 0);
    clg_tensor_zero_grad(x);
    optest_close("zero_grad then a read: zeros", clg_tensor_grad(x), (double[]){0, 0, 0}, 3, 0, 0);
    CHECK_OK(dev, clg_backward(clg_sum(clg_mul_scalar(x, 3.0), 0, NULL, false), NULL));
    optest_close("after the read, passes add again", clg_tensor_grad(x), (double[]){3, 3, 3}, 3, 0, 0);
    CHECK_OK(dev, clg_backward(clg_sum(clg_mul_scalar(x, 3.0), 0, NULL, false), NULL));
    optest_close("two passes add", clg_tensor_grad(x), (double[]){6, 6, 6}, 3, 0, 0);
    clg_scope_end(dev);
}

/* A linear layer's weight gradient is written by its product straight into .grad (beta
 * 0 after a zero_grad, 1 to add), and its bias's by the rows' sum on a first
 * contribution, not returned and copied: the same values as the returned path in every
 * case the engine meets. x [2, 3], w [2, 3], y = x w^T:
 * d sum(y) / dw[o, i] = sum_r x[r, i]. */
static void test_linear_grad_direct(clg_device *dev)
{
    clg_scope_begin(dev);
    const double xv[6] = {1, 2, 3, 4, 5, 6}, wv[6] = {0.5, -1, 2, 1, 0, -0.5};
    clg_tensor *x = optest_tensor(dev, CLG_F32, 2, (int64_t[]){2, 3}, xv, OPTEST_CONTIGUOUS);
    clg_tensor *w = optest_tensor(dev, CLG_F32, 2, (int64_t[]){2, 3}, wv, OPTEST_CONTIGUOUS);
    CHECK_OK(dev, clg_tensor_set_requires_grad(w, true));
    const double once[6] = {5, 7, 9, 5, 7, 9};
    CHECK_OK(dev, clg_backward(clg_sum(clg_linear(x, w, NULL), 0, NULL, false), NULL));
    optest_close("linear dw, the first pass", clg_tensor_grad(w), once, 6, 0, 0);
    CHECK_OK(dev, clg_backward(clg_sum(clg_linear(x, w, NULL), 0, NULL, false), NULL));
    optest_close("linear dw, a second pass adds", clg_tensor_grad(w), (double[]){10, 14, 18, 10, 14, 18}, 6, 0, 0);
    clg_tensor_zero_grad(w);
    CHECK_OK(dev, clg_backward(clg_sum(clg_linear(x, w, NULL), 0, NULL, false), NULL));
    optest_close("linear dw after zero_grad writes", clg_tensor_grad(w), once, 6, 0, 0);
    /* w used by two linear layers and by an elementwise op: every contribution adds,
     * whichever comes first (d sum(w*w)/dw = 2w) */
    clg_tensor_zero_grad(w);
    clg_tensor *y = clg_add(clg_sum(clg_linear(x, w, NULL), 0, NULL, false),
                            clg_sum(clg_mul(w, w), 0, NULL, false));
    y = clg_add(y, clg_sum(clg_linear(clg_mul_scalar(x, 2.0), w, NULL), 0, NULL, false));
    CHECK_OK(dev, clg_backward(y, NULL));
    double want[6];
    for (int i = 0; i < 6; i++) want[i] = 3 * once[i] + 2 * wv[i];
    optest_close("linear dw with w used three times", clg_tensor_grad(w), want, 6, 0, 0);
    /* clg_grad returns the gradient and leaves .grad as it was */
    clg_tensor *g;
    CHECK_OK(dev, clg_grad(1, (clg_tensor *const[]){clg_sum(clg_linear(x, w, NULL), 0, NULL, false)}, NULL, 1, &w, &g));
    optest_close("clg_grad of a linear layer", g, once, 6, 0, 0);
    optest_close("clg_grad left .grad alone", clg_tensor_grad(w), want, 6, 0, 0);
    /* a hook on w sees the gradient (returned, not written) */
    hook_log on_w = {0, 0, 1, false};
    CHECK_OK(dev, clg_tensor_register_hook(w, hook, &on_w));
    clg_tensor_zero_grad(w);
    CHECK_OK(dev, clg_backward(clg_sum(clg_linear(x, w, NULL), 0, NULL, false), NULL));
    CHECK_MSG(on_w.calls == 1 && on_w.seen0 == 5, "the hook on w: %d calls, saw %g", on_w.calls, on_w.seen0);
    optest_close("linear dw with a hook", clg_tensor_grad(w), once, 6, 0, 0);
    /* the bias's gradient (rows summed) written on a first contribution, added after */
    const double bv[2] = {0.25, -0.5};
    clg_tensor *b = optest_tensor(dev, CLG_F32, 1, (int64_t[]){2}, bv, OPTEST_CONTIGUOUS);
    CHECK_OK(dev, clg_tensor_set_requires_grad(b, true));
    clg_tensor *gy = optest_tensor(dev, CLG_F32, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4}, OPTEST_CONTIGUOUS);
    CHECK_OK(dev, clg_backward(clg_linear(x, w, b), gy));
    optest_close("linear db, the first pass", clg_tensor_grad(b), (double[]){4, 6}, 2, 0, 0);
    CHECK_OK(dev, clg_backward(clg_linear(x, w, b), gy));
    optest_close("linear db, a second pass adds", clg_tensor_grad(b), (double[]){8, 12}, 2, 0, 0);
    clg_tensor_zero_grad(b);
    CHECK_OK(dev, clg_backward(clg_add(clg_sum(clg_linear(x, w, b), 0, NULL, false), clg_sum(b, 0, NULL, false)), NULL));
    optest_close("linear db after zero_grad, b used twice", clg_tensor_grad(b), (double[]){3, 3}, 2, 0, 0);
    /* a long batch (70,001 rows: past llvmpipe's 65,535 loop trips): dw and db summed
     * over every row, written straight into .grad */
    clg_tensor *xl = clg_ones(dev, CLG_F32, 2, (int64_t[]){70001, 3});
    clg_tensor *wl = optest_tensor(dev, CLG_F32, 2, (int64_t[]){2, 3}, wv, OPTEST_CONTIGUOUS);   /* no hook */
    CHECK_OK(dev, clg_tensor_set_requires_grad(wl, true));
    clg_tensor_zero_grad(b);
    CHECK_OK(dev, clg_backward(clg_sum(clg_linear(xl, wl, b), 0, NULL, false), NULL));
    optest_close("linear dw over 70,001 rows", clg_tensor_grad(wl), (double[]){70001, 70001, 70001, 70001, 70001, 70001},
                 6, 1e-5, 0);
    optest_close("linear db over 70,001 rows", clg_tensor_grad(b), (double[]){70001, 70001}, 2, 1e-5, 0);
    clg_scope_end(dev);

    /* the direct write is what runs: a fresh pass launches no copy into .grad */
    setenv("CLG_PROFILE", "1", 1);
    clg_device *pd = check_open_device();
    unsetenv("CLG_PROFILE");
    clg_scope_begin(pd);
    clg_tensor *px = optest_tensor(pd, CLG_F32, 2, (int64_t[]){2, 3}, xv, OPTEST_CONTIGUOUS);
    clg_tensor *pw = optest_tensor(pd, CLG_F32, 2, (int64_t[]){2, 3}, wv, OPTEST_CONTIGUOUS);
    clg_tensor *pb = optest_tensor(pd, CLG_F32, 1, (int64_t[]){2}, (double[]){1, 2}, OPTEST_CONTIGUOUS);
    CHECK_OK(pd, clg_tensor_set_requires_grad(pw, true));
    CHECK_OK(pd, clg_tensor_set_requires_grad(pb, true));
    clg_tensor *py = clg_linear(px, pw, pb);
    CHECK_OK(pd, clg_device_finish(pd));
    clg_device_profile_reset(pd);
    CHECK_OK(pd, clg_backward(py, clg_ones(pd, CLG_F32, 2, (int64_t[]){2, 2})));
    optest_close("linear dw (profiled)", clg_tensor_grad(pw), once, 6, 0, 0);
    optest_close("linear db (profiled)", clg_tensor_grad(pb), (double[]){2, 2}, 2, 0, 0);
    char *text = check_profile_text(pd);
    if (text)
        CHECK_MSG(!strstr(text, "copy_flat") && !strstr(text, "axpy"), "the weight or bias gradient was copied or "
                  "added into .grad:\n%s", text);
    free(text);
    clg_scope_end(pd);
    clg_device_close(pd);
}

/* w's and b's gradients from clg_grad (returned, never written into .grad), as host values. */
static void returned_grads(clg_device *dev, clg_tensor *x, clg_tensor *w, clg_tensor *b, const clg_conv2d_params *p,
                           clg_tensor *gy, double *gw, double *gb)
{
    clg_tensor *y = clg_conv2d(x, w, b, p), *g[2] = {NULL, NULL};
    CHECK_OK(dev, clg_grad(1, (clg_tensor *const[]){y}, (clg_tensor *const[]){gy}, 2, (clg_tensor *const[]){w, b}, g));
    float *f = malloc((size_t)clg_tensor_numel(w) * sizeof *f);
    CHECK_OK(dev, clg_tensor_to_host(g[0], f, (size_t)clg_tensor_numel(w) * sizeof *f));
    for (int64_t i = 0; i < clg_tensor_numel(w); i++) gw[i] = f[i];
    CHECK_OK(dev, clg_tensor_to_host(g[1], f, (size_t)clg_tensor_numel(b) * sizeof *f));
    for (int64_t i = 0; i < clg_tensor_numel(b); i++) gb[i] = f[i];
    free(f);
}

/* A conv2d's weight and bias gradients written straight into .grad on whichever path the
 * device's settings take (conv_shift.c's products; the columns' products summed over the
 * images, or per image and then summed): the values clg_grad returns, the first pass
 * writing, a second adding (the weight's; the bias's sum writes only, so its second
 * contribution is returned and added), zero_grad then writing again. */
static void conv_direct_case(clg_device *dev, const char *how, int64_t N, int64_t C, int64_t H, int64_t W, int64_t O,
                             int64_t kh, int64_t kw, int64_t pad, int64_t groups)
{
    clg_scope_begin(dev);
    clg_manual_seed(dev, 11);
    int64_t OH = H + 2 * pad - kh + 1, OW = W + 2 * pad - kw + 1, nw = O * (C / groups) * kh * kw;
    clg_tensor *x = clg_rand(dev, CLG_F32, CLG_SHAPE(N, C, H, W), -1, 1);
    clg_tensor *w = clg_rand(dev, CLG_F32, CLG_SHAPE(O, C / groups, kh, kw), -1, 1);
    clg_tensor *b = clg_rand(dev, CLG_F32, CLG_SHAPE(O), -1, 1);
    clg_tensor *gy = clg_rand(dev, CLG_F32, CLG_SHAPE(N, O, OH, OW), -1, 1);
    CHECK_OK(dev, clg_tensor_set_requires_grad(w, true));
    CHECK_OK(dev, clg_tensor_set_requires_grad(b, true));
    clg_conv2d_params p = {{1, 1}, {pad, pad}, {1, 1}, groups};
    double *gw = malloc((size_t)(2 * nw) * sizeof *gw), *gb = malloc((size_t)(2 * O) * sizeof *gb);
    returned_grads(dev, x, w, b, &p, gy, gw, gb);
    for (int64_t i = 0; i < nw; i++) gw[nw + i] = 2 * gw[i];
    for (int64_t i = 0; i < O; i++) gb[O + i] = 2 * gb[i];
    char what[160];
    const char *step[3] = {"the first pass", "a second pass adds", "after zero_grad"};
    for (int s = 0; s < 3; s++) {
        if (s == 2) clg_tensor_zero_grad(w), clg_tensor_zero_grad(b);
        CHECK_OK(dev, clg_backward(clg_conv2d(x, w, b, &p), gy));
        snprintf(what, sizeof what, "conv2d dW (%s, %s)", how, step[s]);
        optest_close(what, clg_tensor_grad(w), gw + (s == 1 ? nw : 0), nw, 1e-5, 1e-5);
        snprintf(what, sizeof what, "conv2d db (%s, %s)", how, step[s]);
        optest_close(what, clg_tensor_grad(b), gb + (s == 1 ? O : 0), O, 1e-5, 1e-5);
    }
    free(gw);
    free(gb);
    clg_scope_end(dev);
}

/* A fresh backward of a conv2d launches no copy or addition into w's and b's .grad. */
static void conv_direct_profiled(const char *conv_shift)
{
    setenv("CLG_PROFILE", "1", 1);
    clg_device *pd = check_open_device();
    unsetenv("CLG_PROFILE");
    CHECK_OK(pd, clg_device_set_param(pd, "conv_shift", conv_shift));
    clg_scope_begin(pd);
    clg_tensor *x = clg_rand(pd, CLG_F32, CLG_SHAPE(2, 3, 5, 5), -1, 1);
    clg_tensor *w = clg_rand(pd, CLG_F32, CLG_SHAPE(4, 3, 3, 3), -1, 1);
    clg_tensor *b = clg_rand(pd, CLG_F32, CLG_SHAPE(4), -1, 1);
    CHECK_OK(pd, clg_tensor_set_requires_grad(w, true));
    CHECK_OK(pd, clg_tensor_set_requires_grad(b, true));
    clg_tensor *y = clg_conv2d(x, w, b, &(clg_conv2d_params){{1, 1}, {1, 1}, {1, 1}, 1});
    clg_tensor *gy = clg_ones(pd, CLG_F32, CLG_SHAPE(2, 4, 5, 5));
    CHECK_OK(pd, clg_device_finish(pd));
    clg_device_profile_reset(pd);
    CHECK_OK(pd, clg_backward(y, gy));
    CHECK(clg_tensor_grad(w) && clg_tensor_grad(b));
    char *text = check_profile_text(pd);
    if (text)
        CHECK_MSG(!strstr(text, "copy_flat") && !strstr(text, "axpy"), "conv_shift %s: the weight or bias gradient "
                  "was copied or added into .grad:\n%s", conv_shift, text);
    free(text);
    clg_scope_end(pd);
    clg_device_close(pd);
}

static void test_conv_grad_direct(clg_device *dev)
{
    const clg_device_params *pr = clg__device_params(dev);
    bool shift = pr->conv_shift, dot = pr->gemm_dot;
    for (int v = 0; v < 3; v++) {
        /* without columns; the columns summed by the engine (the packed engine's dot
         * products: gemm_dot) or per image, then summed (an engine that sums none) */
        const char *how = v == 0 ? "conv_shift on" : v == 1 ? "conv_shift off, gemm_dot on" : "conv_shift off, gemm_dot off";
        CHECK_OK(dev, clg_device_set_param(dev, "conv_shift", v == 0 ? "on" : "off"));
        CHECK_OK(dev, clg_device_set_param(dev, "gemm_dot", v == 2 ? "off" : "on"));
        conv_direct_case(dev, how, 3, 4, 6, 5, 6, 3, 3, 1, 1);
        conv_direct_case(dev, how, 2, 4, 5, 5, 6, 3, 3, 1, 2);
        /* one long row (70,001: past llvmpipe's loop limit): dW over every pixel */
        conv_direct_case(dev, how, 1, 1, 1, 70001, 2, 1, 3, 0, 1);
    }
    CHECK_OK(dev, clg_device_set_param(dev, "conv_shift", shift ? "on" : "off"));
    CHECK_OK(dev, clg_device_set_param(dev, "gemm_dot", dot ? "on" : "off"));
    conv_direct_profiled("on");
    conv_direct_profiled("off");
}

static void test_int64_indices(clg_device *dev)
{
    clg_scope_begin(dev);
    const int64_t v[4] = {3, 0, 2, 3};
    clg_tensor *i = clg_indices_from_int64(dev, CLG_SHAPE(4), v);
    CHECK_MSG(i && clg_tensor_dtype(i) == CLG_I32, "%s", clg_device_error(dev));
    const double rows[8] = {0, 1, 10, 11, 20, 21, 30, 31};
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(4, 2), rows, OPTEST_CONTIGUOUS);
    optest_close("index_select with int64 indices", clg_index_select(t, 0, i), (double[]){30, 31, 0, 1, 20, 21, 30, 31},
                 8, 0, 0);
    const int64_t big[2] = {1, (int64_t)1 << 40};
    CHECK(clg_indices_from_int64(dev, CLG_SHAPE(2), big) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_indices_from_int64") && strstr(clg_device_error(dev), "1099511627776"),
              "%s", clg_device_error(dev));
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    test_retain_grad(dev);
    test_hooks(dev);
    test_grad(dev);
    test_lazy_zero_grad(dev);
    test_linear_grad_direct(dev);
    test_conv_grad_direct(dev);
    test_int64_indices(dev);
    CHECK_MSG(clg_tensor_live_count(dev) == 0, "%lld tensors leaked", (long long)clg_tensor_live_count(dev));
    clg_device_close(dev);
    return check_report("test_autograd");
}
