/* Modules: Linear against a C reference, Sequential naming (PyTorch's state_dict), its
 * Linear + ReLU folded into one product,
 * parameter counts, freezing, train/eval propagation, summaries, Embedding, a custom
 * module, and errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/gemm.h"
#include "optest.h"

static void linear_and_names(clg_device *dev)
{
    clg_manual_seed(dev, 1);
    clg_module *m = clg_nn_sequential(dev, 3, (clg_module *[]){clg_nn_linear(dev, 5, 4, true), clg_nn_relu(dev),
                                                                clg_nn_linear(dev, 4, 3, false)});
    CHECK(m != NULL);
    clg_named_tensor st[8];
    int n = clg_module_state(m, st, 8);
    CHECK(n == 3);
    CHECK(n == 3 && !strcmp(st[0].name, "0.weight") && !strcmp(st[1].name, "0.bias") && !strcmp(st[2].name, "2.weight"));
    CHECK(clg_tensor_dim(st[0].tensor, 0) == 4 && clg_tensor_dim(st[0].tensor, 1) == 5);   /* [out, in] */
    CHECK(clg_module_numel(m, false) == 4 * 5 + 4 + 3 * 4);
    CHECK(clg_module_find(m, "0.bias") == st[1].tensor && clg_module_find(m, "1.weight") == NULL);
    CHECK(!strcmp(clg_module_type(clg_module_child(m, "2")), "Linear"));
    /* PyTorch's init: |w| <= 1/sqrt(in) */
    float w[20], b[4], w2[12];
    CHECK_OK(dev, clg_tensor_to_host(st[0].tensor, w, sizeof w));
    CHECK_OK(dev, clg_tensor_to_host(st[1].tensor, b, sizeof b));
    CHECK_OK(dev, clg_tensor_to_host(st[2].tensor, w2, sizeof w2));
    for (int i = 0; i < 20; i++) CHECK(fabsf(w[i]) <= 1 / sqrtf(5.0f));
    /* forward against relu(x W^T + b) W2^T */
    double x[2 * 5], want[2 * 3];
    optest_fill(x, 10, -1, 1, 3);
    for (int r = 0; r < 2; r++)
        for (int o = 0; o < 3; o++) {
            double s = 0;
            for (int h = 0; h < 4; h++) {
                double a = b[h];
                for (int i = 0; i < 5; i++) a += x[r * 5 + i] * w[h * 5 + i];
                s += (a > 0 ? a : 0) * w2[o * 4 + h];
            }
            want[r * 3 + o] = s;
        }
    clg_scope_begin(dev);
    clg_tensor *tx = optest_tensor(dev, CLG_F32, CLG_SHAPE(2, 5), x, OPTEST_PERMUTED);
    optest_close("sequential forward", clg_module_forward(m, tx), want, 6, 1e-5, 1e-5);
    /* Freezing the first layer: no gradient for it, the others get theirs. */
    clg_module_set_trainable(clg_module_child(m, "0"), false);
    CHECK(clg_module_numel(m, true) == 12);
    clg_tensor *loss = clg_sum(clg_module_forward(m, tx), 0, NULL, false);
    CHECK_OK(dev, clg_backward(loss, NULL));
    CHECK(clg_tensor_grad(st[0].tensor) == NULL && clg_tensor_grad(st[1].tensor) == NULL);
    CHECK(clg_tensor_grad(st[2].tensor) != NULL);
    CHECK_OK(dev, clg_module_set_param_trainable(m, "0.bias", true));
    CHECK(clg_module_parameters(m, NULL, 0, true) == 2);
    CHECK(clg_module_set_param_trainable(m, "0.nothing", true) == CLG_ERR_INVALID_ARGUMENT);
    clg_module_set_trainable(m, true);
    /* train / eval reach every child */
    clg_module_train(m, false);
    CHECK(!clg_module_is_training(m) && !clg_module_is_training(clg_module_child(m, "2")));
    clg_module_train(m, true);
    CHECK(clg_module_is_training(clg_module_child(m, "1")));
    clg_scope_end(dev);
    /* the summary runs a forward pass and lists layers, shapes and counts */
    FILE *f = tmpfile();
    CHECK_OK(dev, clg_module_summary(m, CLG_SHAPE(1, 5), f));
    char text[2048];
    rewind(f);
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = 0;
    fclose(f);
    CHECK_MSG(strstr(text, "0 Linear(in_features=5, out_features=4, bias=True)") && strstr(text, "[1, 3]") &&
                  strstr(text, "total parameters: 36"),
              "%s", text);
    clg_module_free(m);
}

/* A module of one's own: y = x * scale, with a parameter. */
static clg_tensor *scale_forward(clg_module *m, clg_tensor *x) { return clg_mul(x, clg_module_param(m, "scale")); }

static void custom_and_errors(clg_device *dev)
{
    static const clg_module_i scale_i = {.type = "Scale", .forward = scale_forward};
    clg_module *m = clg_module_new(dev, &scale_i, NULL);
    CHECK_OK(dev, clg_module_add_param(m, "scale", clg_full(dev, CLG_F32, CLG_SHAPE(1), 3.0)));
    clg_scope_begin(dev);   /* refused tensors stay the caller's: this scope frees them */
    CHECK(clg_module_add_param(m, "scale", clg_ones(dev, CLG_F32, CLG_SHAPE(1))) == CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg_module_add_param(m, "a.b", clg_ones(dev, CLG_F32, CLG_SHAPE(1))) == CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg_module_add_param(m, "ints", clg_ones(dev, CLG_I32, CLG_SHAPE(1))) == CLG_ERR_DTYPE);
    clg_scope_end(dev);
    CHECK_OK(dev, clg_module_add_buffer(m, "count", clg_zeros(dev, CLG_I32, CLG_SHAPE(1))));
    clg_named_tensor st[4];
    CHECK(clg_module_state(m, st, 4) == 2 && st[0].is_param && !st[1].is_param);
    clg_scope_begin(dev);
    double two[2] = {6, 6};
    optest_close("custom module", clg_module_forward(m, clg_full(dev, CLG_F32, CLG_SHAPE(2), 2.0)), two, 2, 0, 0);
    clg_scope_end(dev);
    clg_module_free(m);
    CHECK(clg_module_new(dev, &(clg_module_i){.type = "x"}, NULL) == NULL);
    CHECK(clg_nn_linear(dev, 0, 3, true) == NULL && strstr(clg_device_error(dev), "clg_nn_linear"));
    /* too large for the device: the allocation's own message reaches the caller (it was
     * "clg_module_add_param(weight): no tensor") */
    clg_device_clear_error(dev);
    CHECK_MSG(clg_nn_linear(dev, 1 << 20, 1 << 20, true) == NULL && strstr(clg_device_error(dev), "weight") &&
                  strstr(clg_device_error(dev), "bytes") && !strstr(clg_device_error(dev), "no tensor"),
              "%s", clg_device_error(dev));
    clg_device_clear_error(dev);
    CHECK(clg_nn_sequential(dev, 2, (clg_module *[]){clg_nn_relu(dev), NULL}) == NULL);
    CHECK(clg_module_forward(NULL, NULL) == NULL);
    /* Embedding rows by index, any index shape */
    clg_module *e = clg_nn_embedding(dev, 6, 3);
    float wt[18];
    CHECK_OK(dev, clg_tensor_to_host(clg_module_param(e, "weight"), wt, sizeof wt));
    int32_t idx[4] = {5, 0, 5, 2};
    clg_scope_begin(dev);
    clg_tensor *y = clg_module_forward(e, clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(2, 2), idx));
    CHECK(y && clg_tensor_ndim(y) == 3 && clg_tensor_dim(y, 2) == 3);
    double want[12];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) want[i * 3 + j] = wt[idx[i] * 3 + j];
    optest_close("embedding", y, want, 12, 0, 0);
    clg_scope_end(dev);
    clg_module_free(e);
}

/* A small CNN: its state_dict names and shapes are PyTorch's. */
static void cnn_names(clg_device *dev)
{
    clg_module *m = clg_nn_sequential(dev, 8, (clg_module *[]){
        clg_nn_conv2d(dev, 1, 4, 3, 3, &(clg_conv2d_params){.padding = {1, 1}}, true), clg_nn_batch_norm2d(dev, 4, 0, 0),
        clg_nn_relu(dev), clg_nn_max_pool2d(dev, 2, 0, 0), clg_nn_dropout(dev, 0.5), clg_nn_flatten(dev),
        clg_nn_linear(dev, 4 * 4 * 4, 10, true), clg_nn_layer_norm(dev, CLG_SHAPE(10), 0)});
    CHECK(m != NULL);
    if (!m) return;
    const char *names[] = {"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                           "1.num_batches_tracked", "6.weight", "6.bias", "7.weight", "7.bias"};
    const int64_t numels[] = {36, 4, 4, 4, 4, 4, 1, 640, 10, 10, 10};
    clg_named_tensor st[16];
    int n = clg_module_state(m, st, 16);
    CHECK_MSG(n == 11, "%d entries", n);
    for (int i = 0; i < n && i < 11; i++) {
        CHECK_MSG(!strcmp(st[i].name, names[i]), "entry %d is %s, expected %s", i, st[i].name, names[i]);
        CHECK(clg_tensor_numel(st[i].tensor) == numels[i]);
        CHECK(st[i].is_param == (i < 4 || i > 6));
    }
    CHECK(clg_tensor_ndim(clg_module_find(m, "0.weight")) == 4 && clg_tensor_dim(clg_module_find(m, "0.weight"), 1) == 1);
    CHECK(clg_tensor_dtype(clg_module_find(m, "1.num_batches_tracked")) == CLG_I32);
    /* train versus eval: batch statistics and dropout only while training */
    clg_scope_begin(dev);
    clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(3, 1, 8, 8), 0.5, 2.0);
    float a[30], b[30], c[30];
    CHECK_OK(dev, clg_tensor_to_host(clg_module_forward(m, x), a, sizeof a));
    double tracked = 0;
    CHECK_OK(dev, clg_tensor_item(clg_module_find(m, "1.num_batches_tracked"), &tracked));
    CHECK(tracked == 1);
    float rm[4];
    CHECK_OK(dev, clg_tensor_to_host(clg_module_find(m, "1.running_mean"), rm, sizeof rm));
    CHECK(rm[0] != 0 && rm[3] != 0);   /* updated from the batch */
    clg_module_train(m, false);
    CHECK_OK(dev, clg_tensor_to_host(clg_module_forward(m, x), b, sizeof b));
    CHECK_OK(dev, clg_tensor_to_host(clg_module_forward(m, x), c, sizeof c));
    CHECK(memcmp(b, c, sizeof b) == 0);    /* eval is deterministic: no dropout */
    CHECK(memcmp(a, b, sizeof a) != 0);    /* and differs from training */
    CHECK_OK(dev, clg_tensor_item(clg_module_find(m, "1.num_batches_tracked"), &tracked));
    CHECK(tracked == 1);
    clg_scope_end(dev);
    FILE *f = tmpfile();
    CHECK_OK(dev, clg_module_summary(m, CLG_SHAPE(1, 1, 8, 8), f));
    fclose(f);
    clg_module_free(m);
}

/* Freezing with an optimizer: frozen weights stay bit for bit, the rest move. */
static void freeze_with_optimizer(clg_device *dev)
{
    clg_module *m = clg_nn_sequential(dev, 3, (clg_module *[]){clg_nn_linear(dev, 6, 5, true), clg_nn_tanh(dev),
                                                                clg_nn_linear(dev, 5, 3, true)});
    clg_module_set_trainable(clg_module_child(m, "0"), false);
    clg_tensor *params[4];
    int n = clg_module_parameters(m, params, 4, false);
    CHECK(n == 4);
    clg_optimizer *opt = clg_sgd_new(n, params, &(clg_sgd_options){.lr = 0.1, .momentum = 0.9});
    float before[4][30], after[4][30];
    for (int i = 0; i < 4; i++)
        CHECK_OK(dev, clg_tensor_to_host(params[i], before[i], (size_t)clg_tensor_numel(params[i]) * 4));
    for (int step = 0; step < 3; step++) {
        clg_scope_begin(dev);
        clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(4, 6), 0, 1);
        clg_optimizer_zero_grad(opt);
        CHECK_OK(dev, clg_backward(clg_mean(clg_module_forward(m, x), 0, NULL, false), NULL));
        CHECK_OK(dev, clg_optimizer_step(opt));
        clg_scope_end(dev);
    }
    for (int i = 0; i < 4; i++) {
        CHECK_OK(dev, clg_tensor_to_host(params[i], after[i], (size_t)clg_tensor_numel(params[i]) * 4));
        bool same = !memcmp(before[i], after[i], (size_t)clg_tensor_numel(params[i]) * 4);
        CHECK_MSG(same == (i < 2), "parameter %d %s", i, same ? "unchanged" : "changed");
    }
    clg_optimizer_free(opt);
    clg_module_free(m);
}

/* Host values of a float32 tensor (n of them). */
static void to_host(clg_device *dev, clg_tensor *t, float *out, size_t n)
{
    CHECK_MSG(t != NULL, "%s", clg_device_error(dev));
    if (t) CHECK_OK(dev, clg_tensor_to_host(t, out, n * sizeof *out));
}

/* The output, the input's gradient (leaf's: x or what x is a view of) and every
 * parameter's, side by side in out. */
static void run_mlp(clg_device *dev, clg_module *m, clg_tensor *x, clg_tensor *leaf, clg_tensor *gy, bool layers,
                    float *out, size_t ny, size_t nx, const size_t *np)
{
    clg_module *l0 = clg_module_child(m, "0"), *l2 = clg_module_child(m, "2");
    clg_tensor *p[4] = {clg_module_param(l0, "weight"), clg_module_param(l0, "bias"), clg_module_param(l2, "weight"),
                        clg_module_param(l2, "bias")};
    for (int i = 0; i < 4; i++) clg_tensor_zero_grad(p[i]);
    clg_tensor_zero_grad(leaf);   /* x, or the leaf x is a view of */
    /* the layers one by one (ReLU its own op), or Sequential's forward */
    clg_tensor *y = layers ? clg_linear(clg_relu(clg_linear(x, clg_module_param(l0, "weight"), clg_module_param(l0, "bias"))),
                                        clg_module_param(l2, "weight"), clg_module_param(l2, "bias"))
                           : clg_module_forward(m, x);
    CHECK_OK(dev, clg_backward(y, gy));
    to_host(dev, y, out, ny);
    out += ny;
    to_host(dev, clg_tensor_grad(leaf), out, nx);
    out += nx;
    for (int i = 0; i < 4; i++) {
        to_host(dev, clg_tensor_grad(p[i]), out, np[i]);
        out += np[i];
    }
}

/* Sequential's Linear + ReLU as one product whose write-out applies the ReLU, where the
 * GEMM engine does that (clg__linear_relu): the output and every gradient bit for bit as
 * with the layers one by one; and then no ReLU launch of its own (a profiled device). */
static void linear_relu_folded(clg_device *dev)
{
    static const int64_t shapes[][3] = {{64, 256, 192}, {3, 5, 4}};   /* batch, in, hidden */
    for (int s = 0; s < 2; s++) {
        int64_t B = shapes[s][0], in = shapes[s][1], h = shapes[s][2];
        clg_manual_seed(dev, 3);
        clg_module *m = clg_nn_sequential(dev, 3, (clg_module *[]){clg_nn_linear(dev, in, h, true), clg_nn_relu(dev),
                                                                    clg_nn_linear(dev, h, 10, true)});
        clg_scope_begin(dev);
        clg_tensor *x = clg_rand(dev, CLG_F32, CLG_SHAPE(B, in), -1, 1);
        clg_tensor *gy = clg_rand(dev, CLG_F32, CLG_SHAPE(B, 10), -1, 1);
        CHECK_OK(dev, clg_tensor_set_requires_grad(x, true));
        size_t ny = (size_t)(B * 10), nx = (size_t)(B * in), np[4] = {(size_t)(h * in), (size_t)h, (size_t)(10 * h), 10};
        size_t n = ny + nx + np[0] + np[1] + np[2] + np[3];
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        run_mlp(dev, m, x, x, gy, false, a, ny, nx, np);
        run_mlp(dev, m, x, x, gy, true, b, ny, nx, np);
        size_t diff = 0;
        for (size_t i = 0; i < n; i++) diff += memcmp(&a[i], &b[i], sizeof *a) != 0;
        CHECK_MSG(diff == 0, "Linear + ReLU %lldx%lldx%lld: %zu of %zu values differ from the layers one by one",
                  (long long)B, (long long)in, (long long)h, diff, n);
        if (B % 4 == 0) {   /* the batch as [4, B / 4] rows: the same values (Sequential's forward) */
            clg_tensor *x3 = clg_reshape(x, CLG_SHAPE(4, B / 4, in)), *gy3 = clg_reshape(gy, CLG_SHAPE(4, B / 4, 10));
            run_mlp(dev, m, x3, x, gy3, false, b, ny, nx, np);
            diff = 0;
            for (size_t i = 0; i < n; i++) diff += memcmp(&a[i], &b[i], sizeof *a) != 0;
            CHECK_MSG(diff == 0, "Linear + ReLU over [4, %lld, %lld]: %zu of %zu values differ", (long long)(B / 4),
                      (long long)in, diff, n);
        }
        free(a);
        free(b);
        clg_scope_end(dev);
        clg_module_free(m);
    }
    /* whether it folds: the product's engine applies a ReLU as it stores */
    clg_gemm_args g = {.type = CLG_GEMM_F32, .trans_b = true, .m = 64, .n = 192, .k = 256, .batch = 1, .alpha = 1,
                       .lda = 256, .ldb = 256, .ldc = 192, .relu = true};
    setenv("CLG_PROFILE", "1", 1);
    clg_device *pd = check_open_device();
    unsetenv("CLG_PROFILE");
    bool folds = clg__gemm_stores_relu(pd, &g);
    clg_module *m = clg_nn_sequential(pd, 2, (clg_module *[]){clg_nn_linear(pd, 256, 192, true), clg_nn_relu(pd)});
    clg_scope_begin(pd);
    clg_tensor *x = clg_rand(pd, CLG_F32, CLG_SHAPE(64, 256), -1, 1);
    CHECK_OK(pd, clg_device_finish(pd));
    clg_device_profile_reset(pd);
    CHECK(clg_module_forward(m, x) != NULL);
    char *text = check_profile_text(pd);
    if (text)
        CHECK_MSG((strstr(text, "relu_flat") == NULL) == folds, "Linear + ReLU on an engine that %s a ReLU as it "
                  "stores: %s ReLU launch\n%s", folds ? "applies" : "does not apply", folds ? "a" : "no", text);
    printf("Linear + ReLU 64x256x192: %s\n", folds ? "one product, the ReLU in its write-out" : "the product, then the ReLU");
    free(text);
    clg_scope_end(pd);
    clg_module_free(m);
    clg_device_close(pd);
}

int main(void)
{
    clg_device *dev = check_open_device();
    linear_and_names(dev);
    linear_relu_folded(dev);
    custom_and_errors(dev);
    cnn_names(dev);
    freeze_with_optimizer(dev);
    CHECK_MSG(clg_tensor_live_count(dev) == 0, "%lld tensors left", (long long)clg_tensor_live_count(dev));
    clg_device_close(dev);
    return check_report("test_nn");
}
