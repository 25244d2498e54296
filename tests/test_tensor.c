/* Tensors: creation, reading back, views, random numbers, ownership (scopes, keep,
 * leaks over 1,000 steps), autograd bookkeeping, and errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"
#include "optest.h"

/* Philox-4x32-10 on the host, the reference for cl_kernels/random.cl. */
static void philox(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    for (int r = 0; r < 10; r++) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[0] = n0;
        c[1] = (uint32_t)p1;
        c[2] = n2;
        c[3] = (uint32_t)p0;
    }
}

static void random_numbers(clg_device *dev)
{
    clg_manual_seed(dev, 0x123456789abcULL);
    clg_tensor *u = clg_rand(dev, CLG_F32, CLG_SHAPE(1001), 0.0, 1.0);
    float got[1001];
    CHECK_OK(dev, clg_tensor_to_host(u, got, sizeof got));
    int bad = 0;
    for (int j = 0; j * 4 < 1001; j++) {
        uint32_t c[4] = {(uint32_t)j, 0, 0, 0};
        philox(c, 0x56789abcu, 0x1234u);
        for (int k = 0; k < 4 && j * 4 + k < 1001; k++)
            bad += got[j * 4 + k] != (float)(c[k] >> 8) * (1.0f / 16777216.0f);
    }
    CHECK_MSG(bad == 0, "%d uniform numbers differ from the host's Philox", bad);
    uint64_t seed, offset;
    clg_rng_get_state(dev, &seed, &offset);
    CHECK(seed == 0x123456789abcULL && offset == 251);   /* ceil(1001 / 4) blocks */
    /* same seed, same numbers; the stream moves on */
    clg_tensor *n1 = clg_randn(dev, CLG_F32, CLG_SHAPE(4096), 0.0, 1.0);
    clg_rng_set_state(dev, seed, offset);
    clg_tensor *n2 = clg_randn(dev, CLG_F32, CLG_SHAPE(4096), 0.0, 1.0);
    static float a[4096], b[4096];
    CHECK_OK(dev, clg_tensor_to_host(n1, a, sizeof a));
    CHECK_OK(dev, clg_tensor_to_host(n2, b, sizeof b));
    CHECK(memcmp(a, b, sizeof a) == 0);
    double mean = 0, var = 0;
    for (int i = 0; i < 4096; i++) mean += a[i] / 4096.0;
    for (int i = 0; i < 4096; i++) var += (a[i] - mean) * (a[i] - mean) / 4096.0;
    CHECK_MSG(fabs(mean) < 0.06 && fabs(var - 1) < 0.08, "normal: mean %g var %g", mean, var);
    /* another range, in float64 where the device has it */
    double *d = optest_read(clg_rand(dev, optest_precise(dev), CLG_SHAPE(3, 5), -2.0, 3.0));
    CHECK_MSG(d != NULL, "rand: %s", clg_device_error(dev));
    for (int i = 0; d && i < 15; i++) CHECK(d[i] >= -2.0 && d[i] < 3.0);
    free(d);
    CHECK(clg_rand(dev, CLG_I32, CLG_SHAPE(3), 0, 1) == NULL);
}

static void creation_and_views(clg_device *dev)
{
    double v[24];
    for (int i = 0; i < 24; i++) v[i] = i;
    clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(2, 3, 4), v, OPTEST_CONTIGUOUS);
    CHECK(clg_tensor_ndim(t) == 3 && clg_tensor_numel(t) == 24 && clg_tensor_dim(t, -1) == 4);
    CHECK(clg_tensor_is_contiguous(t));
    /* permute: element [i][j][k] of the view is t[j][k][i] */
    clg_tensor *p = clg_permute(t, CLG_AXES(2, 0, 1));
    CHECK(!clg_tensor_is_contiguous(p) && clg_tensor_dim(p, 0) == 4);
    double want[24];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++) want[i * 6 + j * 3 + k] = j * 12 + k * 4 + i;
    optest_close("permute", p, want, 24, 0, 0);
    optest_close("contiguous(permute)", clg_contiguous(p), want, 24, 0, 0);
    optest_close("reshape(permute) copies", clg_reshape(p, CLG_SHAPE(-1)), want, 24, 0, 0);
    /* slice with a step, narrow, expand, squeeze/unsqueeze */
    clg_tensor *s = clg_slice(t, 2, 1, 100, 2);   /* [2, 3, 2]: k = 1, 3 */
    double ws[12];
    for (int i = 0; i < 6; i++) ws[2 * i] = i * 4 + 1, ws[2 * i + 1] = i * 4 + 3;
    optest_close("slice step 2", s, ws, 12, 0, 0);
    clg_tensor *nw = clg_narrow(t, 1, 1, 2);
    double wn[16];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 8; j++) wn[i * 8 + j] = i * 12 + 4 + j;
    optest_close("narrow", nw, wn, 16, 0, 0);
    clg_tensor *row = clg_arange(dev, CLG_F32, 0, 3, 1);
    clg_tensor *e = clg_expand(clg_unsqueeze(row, 0), CLG_SHAPE(2, -1));
    double we[6] = {0, 1, 2, 0, 1, 2};
    optest_close("expand", e, we, 6, 0, 0);
    CHECK(clg_tensor_strides(e)[0] == 0);
    CHECK(clg_tensor_ndim(clg_squeeze(clg_unsqueeze(row, 1), 1)) == 1);
    optest_close("flatten", clg_flatten(t, 1, 2), v, 24, 0, 0);
    double wa[4] = {5, 3.5, 2, 0.5};
    optest_close("arange negative step", clg_arange(dev, optest_precise(dev), 5, 0, -1.5), wa, 4, 0, 0);
    CHECK(clg_tensor_numel(clg_arange(dev, CLG_F32, 3, 3, 1)) == 0);
    /* casts truncate toward zero, as C */
    double fv[4] = {-1.7, -0.2, 0.9, 2.5}, iv[4] = {-1, 0, 0, 2};
    clg_tensor *ci = clg_cast(optest_tensor(dev, CLG_F32, CLG_SHAPE(4), fv, OPTEST_SLICED), CLG_I32);
    CHECK(clg_tensor_dtype(ci) == CLG_I32);
    optest_close("cast to int32", ci, iv, 4, 0, 0);
    double item = 0;
    CHECK_OK(dev, clg_tensor_item(clg_sum(t, 0, NULL, false), &item));
    CHECK(item == 276);
    CHECK(clg_tensor_item(t, &item) == CLG_ERR_SHAPE);
    /* zero-size tensors: ops launch nothing and do not fail */
    clg_tensor *z = clg_zeros(dev, CLG_F32, CLG_SHAPE(0, 3));
    CHECK(z && clg_tensor_numel(z) == 0);
    CHECK(clg_add(z, clg_ones(dev, CLG_F32, CLG_SHAPE(3))) != NULL);
    double zs[3] = {0, 0, 0};
    optest_close("sum over an empty axis", clg_sum(z, CLG_AXES(0), false), zs, 3, 0, 0);
    CHECK_OK(dev, clg_tensor_to_host(z, NULL, 0));
    /* print */
    FILE *f = tmpfile();
    CHECK_OK(dev, clg_tensor_print(clg_narrow(t, 2, 0, 2), f, "t"));
    char text[512] = "";
    rewind(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    CHECK_MSG(strstr(text, "t = tensor([[[0, 1],") && strstr(text, "shape=[2, 3, 2], dtype=float32"), "%s", text);
}

static void errors(clg_device *dev)
{
    /* A chain with a bad op in the middle: NULL at the end, the message names the op. */
    clg_tensor *a = clg_ones(dev, CLG_F32, CLG_SHAPE(2, 3));
    clg_tensor *y = clg_sum(clg_mul_scalar(clg_add(a, clg_ones(dev, CLG_F32, CLG_SHAPE(4))), 2.0), 0, NULL, false);
    CHECK(y == NULL && clg_device_last_status(dev) == CLG_ERR_SHAPE);
    CHECK_MSG(strstr(clg_device_error(dev), "clg_add") && strstr(clg_device_error(dev), "[2, 3]") &&
                  strstr(clg_device_error(dev), "[4]"),
              "%s", clg_device_error(dev));
    clg_device_clear_error(dev);
    CHECK(clg_add(a, clg_ones(dev, CLG_I32, CLG_SHAPE(2, 3))) == NULL && clg_device_last_status(dev) == CLG_ERR_DTYPE);
    if (optest_fp64(dev)) {
        clg_device_clear_error(dev);
        CHECK(clg_add(a, clg_ones(dev, CLG_F64, CLG_SHAPE(2, 3))) == NULL && clg_device_last_status(dev) == CLG_ERR_DTYPE);
    } else if (!clg_device_get_info(dev)->fp64) {
        /* no cl_khr_fp64: float64 tensors are refused, with a message that says why */
        CHECK(clg_ones(dev, CLG_F64, CLG_SHAPE(2, 3)) == NULL && clg_device_last_status(dev) == CLG_ERR_DTYPE);
        CHECK_MSG(strstr(clg_device_error(dev), "cl_khr_fp64"), "%s", clg_device_error(dev));
    }
    CHECK(clg_div(clg_ones(dev, CLG_I32, CLG_SHAPE(2)), clg_ones(dev, CLG_I32, CLG_SHAPE(2))) == NULL);
    CHECK(clg_reshape(a, CLG_SHAPE(4, 2)) == NULL && strstr(clg_device_error(dev), "clg_reshape"));
    CHECK(clg_permute(a, CLG_AXES(0, 0)) == NULL);
    CHECK(clg_transpose(a, 0, 5) == NULL && strstr(clg_device_error(dev), "axis 5"));
    CHECK(clg_narrow(a, 1, 2, 2) == NULL);
    CHECK(clg_expand(a, CLG_SHAPE(3, 3)) == NULL);
    CHECK(clg_squeeze(a, 0) == NULL);
    CHECK(clg_sum(a, CLG_AXES(2), false) == NULL);
    CHECK(clg_zeros(dev, CLG_F32, CLG_SHAPE(2, -1)) == NULL);
    CHECK(clg_zeros(dev, CLG_F32, 9, (const int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}) == NULL);
    CHECK(clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(2), NULL) == NULL);
    CHECK(clg_zeros(dev, CLG_F32, CLG_SHAPE(1LL << 40)) == NULL && clg_device_last_status(dev) == CLG_ERR_OUT_OF_MEMORY);
    CHECK(clg_add(NULL, a) == NULL && clg_matmul(a, NULL) == NULL);
    float buf[6];
    CHECK(clg_tensor_to_host(a, buf, 5) == CLG_ERR_INVALID_ARGUMENT);
    /* a NULL destination is named as such (it read "needs 24 bytes, got 24") */
    CHECK_MSG(clg_tensor_to_host(a, NULL, sizeof buf) == CLG_ERR_INVALID_ARGUMENT &&
                  strstr(clg_device_error(dev), "destination is NULL"), "%s", clg_device_error(dev));
    /* a reduction axis given twice (1 and -1 of a 2-D tensor) is refused */
    CHECK_MSG(clg_mean(a, CLG_AXES(1, -1), false) == NULL && clg_device_last_status(dev) == CLG_ERR_SHAPE &&
                  strstr(clg_device_error(dev), "given twice"), "%s", clg_device_error(dev));
    CHECK(clg_sum(a, CLG_AXES(0, 0), true) == NULL && clg_var(a, CLG_AXES(-2, 0), 1, false) == NULL);
    /* in-place writes into an expanded view would write each shared element twice */
    clg_tensor *ex = clg_expand(clg_ones(dev, CLG_F32, CLG_SHAPE(1, 3)), CLG_SHAPE(4, 3));
    CHECK_MSG(clg_fill_(ex, 2.0) == CLG_ERR_INVALID_ARGUMENT && strstr(clg_device_error(dev), "expanded view") &&
                  strstr(clg_device_error(dev), "fill_"), "%s", clg_device_error(dev));
    CHECK(clg_axpy_(ex, 1.0, ex) == CLG_ERR_INVALID_ARGUMENT && clg_scale_(ex, 2.0) == CLG_ERR_INVALID_ARGUMENT &&
          clg_copy_(ex, a) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_OK(dev, (clg_device_clear_error(dev), clg_fill_(clg_expand(clg_ones(dev, CLG_F32, CLG_SHAPE(1, 3)), CLG_SHAPE(1, 3)), 2.0)));
    /* an empty list has no device to carry the error: the thread's last error does */
    CHECK_MSG(clg_concat(0, NULL, 0) == NULL && clg_last_status() == CLG_ERR_INVALID_ARGUMENT &&
                  strstr(clg_last_error(), "clg_concat"), "%s", clg_last_error());
    CHECK(clg_stack(0, (clg_tensor *const[]){a}, 0) == NULL && strstr(clg_last_error(), "clg_stack: no tensors"));
    CHECK(clg_backward(NULL, NULL) == CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg_backward(a, NULL) == CLG_ERR_INVALID_ARGUMENT);   /* needs no gradient */
    CHECK(clg_tensor_set_requires_grad(clg_ones(dev, CLG_I32, CLG_SHAPE(2)), true) == CLG_ERR_DTYPE);
    /* the device still works */
    clg_device_clear_error(dev);
    double two[6] = {2, 2, 2, 2, 2, 2};
    optest_close("after errors", clg_add(a, a), two, 6, 0, 0);
}

static void autograd_bookkeeping(clg_device *dev)
{
    clg_tensor *w = clg_ones(dev, CLG_F32, CLG_SHAPE(3));
    CHECK_OK(dev, clg_tensor_set_requires_grad(w, true));
    clg_scope_begin(dev);
    clg_tensor *loss = clg_sum(clg_mul(w, w), 0, NULL, false);   /* d/dw = 2w */
    CHECK(clg_tensor_has_history(loss) && clg_tensor_requires_grad(loss));
    CHECK_OK(dev, clg_backward(loss, NULL));
    CHECK_OK(dev, clg_backward(loss, NULL));                    /* accumulates */
    double four[3] = {4, 4, 4}, zero[3] = {0, 0, 0};
    optest_close("two backward passes add", clg_tensor_grad(w), four, 3, 0, 0);
    clg_tensor_zero_grad(w);
    optest_close("zero_grad", clg_tensor_grad(w), zero, 3, 0, 0);
    /* not a scalar: needs an explicit gradient */
    clg_tensor *v = clg_mul_scalar(w, 3.0);
    CHECK(clg_backward(v, NULL) == CLG_ERR_SHAPE);
    CHECK_OK(dev, clg_backward(v, clg_full(dev, CLG_F32, CLG_SHAPE(3), 2.0)));
    double six[3] = {6, 6, 6};
    optest_close("explicit output gradient", clg_tensor_grad(w), six, 3, 0, 0);
    /* no-grad regions and detach record nothing */
    clg_no_grad_begin(dev);
    CHECK(!clg_grad_enabled(dev));
    CHECK(!clg_tensor_requires_grad(clg_mul(w, w)));
    /* in-place updates of a parameter are allowed only here */
    CHECK_OK(dev, clg_axpy_(w, -0.5, clg_tensor_grad(w)));
    clg_no_grad_end(dev);
    CHECK(clg_grad_enabled(dev));
    double upd[3] = {-2, -2, -2};
    optest_close("axpy_ update", w, upd, 3, 0, 0);
    CHECK(clg_axpy_(w, 1.0, w) == CLG_ERR_INVALID_ARGUMENT);    /* refused while recording */
    clg_tensor *d = clg_detach(w);
    CHECK(!clg_tensor_requires_grad(d) && !clg_tensor_requires_grad(clg_mul(d, d)));
    /* a kept tensor survives its scope, without history */
    clg_tensor *kept = clg_tensor_keep(clg_mul_scalar(w, 2.0));
    clg_scope_end(dev);
    CHECK(!clg_tensor_has_history(kept));
    CHECK_MSG(!clg_tensor_requires_grad(kept), "a kept tensor made by ops is detached: it requires no gradient");
    CHECK(clg_tensor_requires_grad(w));   /* a leaf keeps requires_grad through keep */
    double kv[3] = {-4, -4, -4};
    optest_close("kept tensor", kept, kv, 3, 0, 0);
    clg_tensor_free(kept);
    clg_tensor_free(w);
}

/* A tensor the backward reads, written in place between the forward and the backward:
 * the gradient would silently use the new values (4 instead of 2 here). clg_backward
 * refuses, naming the op and the tensor, as PyTorch does. */
static void inplace_after_forward(clg_device *dev)
{
    clg_tensor *w = clg_ones(dev, CLG_F32, CLG_SHAPE(3));
    CHECK_OK(dev, clg_tensor_set_requires_grad(w, true));
    clg_scope_begin(dev);
    clg_tensor *loss = clg_sum(clg_mul(w, w), 0, NULL, false);
    clg_no_grad_begin(dev);
    CHECK_OK(dev, clg_scale_(w, 2.0));
    clg_no_grad_end(dev);
    CHECK_MSG(clg_backward(loss, NULL) == CLG_ERR_INVALID_ARGUMENT &&
                  strstr(clg_device_error(dev), "modified by an in-place operation") &&
                  strstr(clg_device_error(dev), "mul") && strstr(clg_device_error(dev), "[3]"),
              "%s", clg_device_error(dev));
    CHECK(clg_tensor_grad(w) == NULL);   /* nothing accumulated */
    clg_device_clear_error(dev);
    /* an optimizer step in between is such a write too */
    clg_tensor *loss2 = clg_sum(clg_mul_scalar(clg_exp(w), 1.0), 0, NULL, false);
    CHECK_OK(dev, clg_backward(loss2, NULL));
    clg_optimizer *opt = clg_sgd_new(1, &w, &(clg_sgd_options){.lr = 0.1});
    clg_tensor *loss3 = clg_sum(clg_exp(w), 0, NULL, false);   /* exp's backward reads its output */
    CHECK_OK(dev, clg_optimizer_step(opt));
    CHECK_MSG(clg_backward(loss3, NULL) == CLG_ERR_INVALID_ARGUMENT &&
                  strstr(clg_device_error(dev), "exp"), "%s", clg_device_error(dev));
    clg_device_clear_error(dev);
    /* the usual order (forward, backward, step) is untouched, and so are writes to
     * tensors no recorded op read */
    clg_tensor *other = clg_zeros(dev, CLG_F32, CLG_SHAPE(3));
    clg_tensor *loss4 = clg_sum(clg_mul(w, w), 0, NULL, false);
    CHECK_OK(dev, clg_fill_(other, 1.0));
    CHECK_OK(dev, clg_backward(loss4, NULL));
    CHECK_OK(dev, clg_optimizer_step(opt));
    clg_optimizer_free(opt);
    clg_scope_end(dev);
    clg_tensor_free(w);
}

/* A training-like step 1,000 times (50 with CLG_TEST_SMALL): live tensors and pool
 * memory stay flat, and no op reads from the device (only the explicit item() at the
 * end of a step does). */
static void no_leaks(clg_device *dev)
{
    const int steps = optest_small() ? 50 : 1000;
    clg_tensor *w = clg_randn(dev, CLG_F32, CLG_SHAPE(16, 8), 0, 0.1);
    clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(32, 8), 0, 1);
    clg_tensor_set_requires_grad(w, true);
    int64_t live0 = 0;
    uint64_t in_use0 = 0;
    for (int step = 0; step < steps; step++) {
        clg_scope_begin(dev);
        clg_tensor *h = clg_matmul(x, clg_transpose(w, 0, 1));
        clg_tensor *loss = clg_mean(clg_mul(h, h), 0, NULL, false);
        clg_device_transfers_reset(dev);
        clg_backward(loss, NULL);
        clg_no_grad_begin(dev);
        clg_axpy_(w, -0.01, clg_tensor_grad(w));
        clg_no_grad_end(dev);
        clg_tensor_zero_grad(w);
        clg_transfer_stats ts = clg_device_transfers(dev);
        if (step == 0) CHECK_MSG(ts.h2d_count == 0 && ts.d2h_count == 0, "step moved data: %llu up, %llu down",
                                 (unsigned long long)ts.h2d_count, (unsigned long long)ts.d2h_count);
        double l;
        if (step % (steps / 4) == 0) CHECK_OK(dev, clg_tensor_item(loss, &l));
        clg_scope_end(dev);
        if (step == 1) {
            live0 = clg_tensor_live_count(dev);
            in_use0 = clg_device_pool_stats(dev).in_use_bytes;
        }
    }
    CHECK_MSG(clg_tensor_live_count(dev) == live0, "live tensors %lld, after the first steps %lld",
              (long long)clg_tensor_live_count(dev), (long long)live0);
    CHECK(clg_device_pool_stats(dev).in_use_bytes == in_use0);
    /* Freed buffers come back from the pool, where the device table keeps any
     * (pool_keep: none on Oclgrind). */
    clg_pool_stats ps = clg_device_pool_stats(dev);
    if (clg__device_params(dev)->pool_keep)
        CHECK_MSG(ps.hits > (uint64_t)steps, "%llu pool hits in %d steps", (unsigned long long)ps.hits, steps);
    else
        CHECK_MSG(ps.hits == 0 && ps.cached_bytes == 0, "pool_keep = 0, yet %llu hits, %llu bytes kept",
                  (unsigned long long)ps.hits, (unsigned long long)ps.cached_bytes);
    clg_tensor_free(w);
    clg_tensor_free(x);
}

/* Copies, fills and where's gradient over two axes with long rows (the _rows kernels):
 * every layout, a broadcast row, a dtype change (to float64, or int32 on a device
 * without it: the values are whole numbers), a row length with a partial group. */
static void long_rows(clg_device *dev)
{
    clg_dtype wide = optest_fp64(dev) ? CLG_F64 : CLG_I32;
    enum { R = 5, C = 300 };
    static double v[R * C], want[R * C], mask[C];
    for (int i = 0; i < R * C; i++) v[i] = i;
    for (int j = 0; j < C; j++) mask[j] = j % 3 == 0;
    clg_scope_begin(dev);
    for (int l = 0; l < OPTEST_LAYOUT_COUNT; l++) {
        char what[96];
        clg_tensor *t = optest_tensor(dev, CLG_F32, CLG_SHAPE(R, C), v, (optest_layout)l);
        snprintf(what, sizeof what, "contiguous of a %s [%d, %d]", optest_layout_names[l], R, C);
        optest_close(what, clg_contiguous(t), v, R * C, 0, 0);
        clg_tensor *d = clg_zeros(dev, wide, CLG_SHAPE(R, C));
        CHECK_OK(dev, clg_copy_(d, t));
        snprintf(what, sizeof what, "copy_ float32 %s into %s", optest_layout_names[l], clg_dtype_name(wide));
        optest_close(what, d, v, R * C, 0, 0);
        /* a row broadcast over the rows (a bias), then a fill of a column band */
        CHECK_OK(dev, clg_copy_(d, clg_narrow(t, 0, 1, 1)));
        CHECK_OK(dev, clg_fill_(clg_narrow(d, 1, 10, 280), -1));
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) want[i * C + j] = j >= 10 && j < 290 ? -1 : C + j;
        snprintf(what, sizeof what, "broadcast copy_ and fill_ (%s source)", optest_layout_names[l]);
        optest_close(what, d, want, R * C, 0, 0);
        /* where's backward: the gradient reaches a only where the mask picks it */
        clg_tensor *a = clg_contiguous(t);
        clg_tensor_set_requires_grad(a, true);
        clg_tensor *m = optest_tensor(dev, CLG_F32, CLG_SHAPE(C), mask, OPTEST_CONTIGUOUS);
        clg_tensor *picked = clg_where(m, a, clg_zeros(dev, CLG_F32, CLG_SHAPE(R, C)));
        CHECK_OK(dev, clg_backward(clg_sum(picked, 0, NULL, false), NULL));
        for (int i = 0; i < R * C; i++) want[i] = mask[i % C];
        snprintf(what, sizeof what, "where's gradient, mask broadcast (%s)", optest_layout_names[l]);
        optest_close(what, clg_tensor_grad(a), want, R * C, 0, 0);
    }
    clg_scope_end(dev);
}

int main(void)
{
    clg_device *dev = check_open_device();
    clg_scope_begin(dev);
    random_numbers(dev);
    creation_and_views(dev);
    long_rows(dev);
    errors(dev);
    clg_scope_end(dev);
    CHECK_MSG(clg_tensor_live_count(dev) == 0, "%lld tensors left", (long long)clg_tensor_live_count(dev));
    autograd_bookkeeping(dev);
    inplace_after_forward(dev);
    CHECK_MSG(clg_tensor_live_count(dev) == 0, "%lld tensors left", (long long)clg_tensor_live_count(dev));
    no_leaks(dev);
    CHECK(clg_tensor_live_count(dev) == 0 && clg_device_pool_stats(dev).in_use_bytes == 0);
    clg_device_close(dev);
    return check_report("test_tensor");
}
