/* test_nn_resnet: torchvision's residual blocks. Output shapes (stride 1 and 2, odd
 * sizes, with and without a downsample, and the rule that makes one), state_dict names,
 * shapes and parameter counts against torchvision's (written out below), the
 * initialisation (Kaiming-normal fan_out convs, batch norms at 1 and 0), summaries,
 * gradients: a finite-difference check through whole blocks, the values and every
 * gradient against the same block composed from ops, and each path alone (a zeroed last
 * batch norm leaves the shortcut's gradient exactly); refusals. PyTorch itself:
 * test_io_torch_resnet. */
#include <math.h>
#include <string.h>

#include "optest.h"

/* ---- shapes ---------------------------------------------------------------------------------- */

static void shape_case(clg_device *dev, bool bottleneck, int64_t in, int64_t planes, int stride, bool down,
                       int64_t hw, int64_t out_hw, bool has_down)
{
    clg_module *b = bottleneck ? clg_nn_bottleneck(dev, in, planes, stride, down)
                               : clg_nn_basic_block(dev, in, planes, stride, down);
    CHECK_MSG(b != NULL, "%s", clg_device_error(dev));
    if (!b) return;
    int64_t out = planes * (bottleneck ? 4 : 1);
    CHECK_MSG((clg_module_child(b, "downsample") != NULL) == has_down, "%s(%lld, %lld, stride %d, downsample %d)",
              clg_module_type(b), (long long)in, (long long)planes, stride, down);
    clg_scope_begin(dev);
    for (int training = 0; training < 2; training++) {
        clg_module_train(b, training);
        clg_tensor *y = clg_module_forward(b, clg_randn(dev, CLG_F32, CLG_SHAPE(2, in, hw, hw + 1), 0, 1));
        CHECK_MSG(y && clg_tensor_ndim(y) == 4 && clg_tensor_dim(y, 0) == 2 && clg_tensor_dim(y, 1) == out &&
                      clg_tensor_dim(y, 2) == out_hw && clg_tensor_dim(y, 3) == (hw + 1 + stride - 1) / stride,
                  "%s(%lld, %lld, stride %d): %s", clg_module_type(b), (long long)in, (long long)planes, stride,
                  y ? "wrong shape" : clg_device_error(dev));
        /* relu after the sum: nothing negative */
        double *v = optest_read(y);
        double lo = 0;
        for (int64_t i = 0; v && i < clg_tensor_numel(y); i++) lo = fmin(lo, v[i]);
        CHECK(v && lo == 0);
        free(v);
    }
    clg_scope_end(dev);
    clg_module_free(b);
}

static void shapes(clg_device *dev)
{
    clg_manual_seed(dev, 1);
    shape_case(dev, false, 8, 8, 1, false, 6, 6, false);   /* identity shortcut */
    shape_case(dev, false, 8, 8, 1, true, 6, 6, true);     /* asked for */
    shape_case(dev, false, 8, 16, 2, false, 6, 3, true);   /* needed: stride and width */
    shape_case(dev, false, 8, 8, 2, false, 7, 4, true);    /* needed: stride; odd size */
    shape_case(dev, false, 8, 16, 1, false, 5, 5, true);   /* needed: width */
    shape_case(dev, true, 16, 4, 1, false, 6, 6, false);   /* 16 = 4 * 4: identity */
    shape_case(dev, true, 8, 4, 1, false, 6, 6, true);     /* 8 != 16 */
    shape_case(dev, true, 16, 4, 1, true, 5, 5, true);
    shape_case(dev, true, 16, 8, 2, false, 7, 4, true);
}

/* ---- names, shapes and counts: torchvision's ------------------------------------------------ */

typedef struct entry { const char *name; int ndim; int64_t shape[4]; bool param; } entry;

#define BN(p, c)                                                                                          \
    {p ".weight", 1, {c}, true}, {p ".bias", 1, {c}, true}, {p ".running_mean", 1, {c}, false},          \
        {p ".running_var", 1, {c}, false}, {p ".num_batches_tracked", 0, {0}, false}

/* resnet18's layer2[0]: BasicBlock(64, 128, stride 2) with its downsample. */
static const entry basic_64_128[] = {
    {"conv1.weight", 4, {128, 64, 3, 3}, true}, BN("bn1", 128), {"conv2.weight", 4, {128, 128, 3, 3}, true},
    BN("bn2", 128), {"downsample.0.weight", 4, {128, 64, 1, 1}, true}, BN("downsample.1", 128)};
/* resnet18's layer1[0]: BasicBlock(64, 64), identity shortcut. */
static const entry basic_64_64[] = {
    {"conv1.weight", 4, {64, 64, 3, 3}, true}, BN("bn1", 64), {"conv2.weight", 4, {64, 64, 3, 3}, true}, BN("bn2", 64)};
/* resnet50's layer1[0]: Bottleneck(64, 64) with a downsample to 256 channels. */
static const entry bottle_64_64[] = {
    {"conv1.weight", 4, {64, 64, 1, 1}, true}, BN("bn1", 64), {"conv2.weight", 4, {64, 64, 3, 3}, true}, BN("bn2", 64),
    {"conv3.weight", 4, {256, 64, 1, 1}, true}, BN("bn3", 256), {"downsample.0.weight", 4, {256, 64, 1, 1}, true},
    BN("downsample.1", 256)};
/* resnet50's layer1[1]: Bottleneck(256, 64), identity shortcut. */
static const entry bottle_256_64[] = {
    {"conv1.weight", 4, {64, 256, 1, 1}, true}, BN("bn1", 64), {"conv2.weight", 4, {64, 64, 3, 3}, true}, BN("bn2", 64),
    {"conv3.weight", 4, {256, 64, 1, 1}, true}, BN("bn3", 256)};

static void names_case(const char *what, clg_module *b, const entry *want, int n, int64_t params)
{
    CHECK_MSG(b != NULL, "%s", what);
    if (!b) return;
    clg_named_tensor st[32];
    int got = clg_module_state(b, st, 32);
    CHECK_MSG(got == n, "%s: %d entries, torchvision has %d", what, got, n);
    for (int i = 0; i < n && i < got; i++) {
        bool same = !strcmp(st[i].name, want[i].name) && st[i].is_param == want[i].param &&
                    clg_tensor_ndim(st[i].tensor) == want[i].ndim;
        for (int d = 0; same && d < want[i].ndim; d++) same = clg_tensor_dim(st[i].tensor, d) == want[i].shape[d];
        CHECK_MSG(same, "%s: entry %d is %s, torchvision's is %s", what, i, st[i].name, want[i].name);
    }
    CHECK_MSG(clg_module_numel(b, false) == params, "%s: %lld parameters, torchvision has %lld", what,
              (long long)clg_module_numel(b, false), (long long)params);
    int nparams = 0;
    for (int i = 0; i < n; i++) nparams += want[i].param;
    CHECK_MSG(clg_module_parameters(b, NULL, 0, false) == nparams, "%s: %d parameter tensors, torchvision has %d", what,
              clg_module_parameters(b, NULL, 0, false), nparams);
    clg_module_free(b);
}

static void names(clg_device *dev)
{
    clg_manual_seed(dev, 2);
    /* counts as torchvision prints them: sum(p.numel() for p in block.parameters()) */
    names_case("BasicBlock(64, 128, 2)", clg_nn_basic_block(dev, 64, 128, 2, false), basic_64_128, 18, 230144);
    names_case("BasicBlock(64, 64)", clg_nn_basic_block(dev, 64, 64, 1, false), basic_64_64, 12, 73984);
    names_case("Bottleneck(64, 64)", clg_nn_bottleneck(dev, 64, 64, 1, false), bottle_64_64, 24, 75008);
    names_case("Bottleneck(256, 64)", clg_nn_bottleneck(dev, 256, 64, 1, false), bottle_256_64, 18, 70400);
    /* the children's types, as torchvision prints the block */
    clg_module *b = clg_nn_bottleneck(dev, 64, 64, 1, false);
    CHECK(b && !strcmp(clg_module_type(b), "Bottleneck") && !strcmp(clg_module_type(clg_module_child(b, "conv3")), "Conv2d") &&
          !strcmp(clg_module_type(clg_module_child(b, "bn3")), "BatchNorm2d") &&
          !strcmp(clg_module_type(clg_module_child(clg_module_child(b, "downsample"), "1")), "BatchNorm2d"));
    clg_module_free(b);
}

/* ---- initialisation and summaries ---------------------------------------------------------------- */

static void init_and_summary(clg_device *dev)
{
    clg_manual_seed(dev, 3);
    clg_module *b = clg_nn_basic_block(dev, 64, 128, 2, false);
    if (!b) {
        CHECK_MSG(false, "%s", clg_device_error(dev));
        return;
    }
    /* Kaiming-normal, fan_out: std sqrt(2 / (out * kh * kw)) */
    const char *convs[] = {"conv1.weight", "conv2.weight", "downsample.0.weight"};
    const double fan_out[] = {128 * 9, 128 * 9, 128};
    for (int i = 0; i < 3; i++) {
        clg_tensor *w = clg_module_find(b, convs[i]);
        double *v = optest_read(w), s = 0, s2 = 0;
        int64_t n = clg_tensor_numel(w);
        for (int64_t k = 0; v && k < n; k++) s += v[k], s2 += v[k] * v[k];
        free(v);
        double mean = s / (double)n, std = sqrt(s2 / (double)n - mean * mean), want = sqrt(2 / fan_out[i]);
        CHECK_MSG(v && fabs(std - want) < 5 * want / sqrt((double)n) + 1e-3 * want && fabs(mean) < 5 * want / sqrt((double)n),
                  "%s: mean %g, std %g, want 0 and %g", convs[i], mean, std, want);
    }
    const char *ones[] = {"bn1.weight", "bn2.weight", "downsample.1.weight"};
    const char *zeros[] = {"bn1.bias", "bn2.bias", "downsample.1.bias"};
    for (int i = 0; i < 3; i++) {
        double *o = optest_read(clg_module_find(b, ones[i])), *z = optest_read(clg_module_find(b, zeros[i]));
        bool ok = o && z;
        for (int k = 0; ok && k < 128; k++) ok = o[k] == 1 && z[k] == 0;
        CHECK_MSG(ok, "%s and %s: 1 and 0", ones[i], zeros[i]);
        free(o);
        free(z);
    }
    /* a summary: the block's type, its settings and its output shape */
    char buf[1024] = "";
    FILE *out = fmemopen(buf, sizeof buf - 1, "w");
    CHECK_OK(dev, clg_module_summary(b, CLG_SHAPE(1, 64, 8, 8), out));
    fclose(out);
    CHECK_MSG(strstr(buf, "BasicBlock(64, 128, stride=2, out=128, downsample)") && strstr(buf, "[1, 128, 4, 4]") &&
                  strstr(buf, "230144"),
              "%s", buf);
    clg_module_free(b);
}

/* ---- gradients ----------------------------------------------------------------------------------- */

/* Batch-norm weights and biases away from 1 and 0, so that each layer does something. */
static void shake_norms(clg_module *b)
{
    clg_named_tensor st[32];
    int n = clg_module_state(b, st, 32);
    for (int i = 0; i < n; i++)
        if (st[i].is_param && clg_tensor_ndim(st[i].tensor) == 1) {
            bool weight = strstr(st[i].name, ".weight") != NULL;
            CHECK(clg_init_uniform(st[i].tensor, weight ? 0.5 : -0.3, weight ? 1.5 : 0.3) == CLG_OK);
        }
}

static clg_tensor *block_fn(clg_tensor **in, void *ctx) { return clg_module_forward(ctx, in[0]); }

/* Central differences through whole blocks (evaluation mode: the statistics are the
 * running ones, so each output depends on its own sample only), in float32: the
 * module's parameters are float32. Tiny inputs: every element is a forward pass per
 * layout. */
static void gradcheck(clg_device *dev)
{
    clg_manual_seed(dev, 4);
    struct { clg_module *b; int64_t c, hw; const char *what; } cases[] = {
        {clg_nn_basic_block(dev, 2, 2, 1, false), 2, 3, "BasicBlock(2, 2) identity"},
        {clg_nn_basic_block(dev, 2, 3, 2, false), 2, 3, "BasicBlock(2, 3, 2) downsample"},
        {clg_nn_bottleneck(dev, 2, 1, 2, false), 2, 3, "Bottleneck(2, 1, 2) downsample"},
        {clg_nn_bottleneck(dev, 4, 1, 1, false), 4, 2, "Bottleneck(4, 1) identity"},
    };
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(cases[i].b != NULL, "%s: %s", cases[i].what, clg_device_error(dev));
        if (!cases[i].b) continue;
        shake_norms(cases[i].b);
        clg_module_train(cases[i].b, false);
        optest_gradcheck_as(dev, CLG_F32, cases[i].what, block_fn, cases[i].b, 1,
                            (optest_input[]){{CLG_SHAPE(1, cases[i].c, cases[i].hw, cases[i].hw)}});
        clg_module_free(cases[i].b);
    }
}

/* The block written out in ops, with its own tensors: batch norms on the batch's
 * statistics (training) without running buffers. */
static clg_tensor *cbn(clg_module *b, const char *name, clg_tensor *x)
{
    char w[64], bias[64];
    snprintf(w, sizeof w, "%s.weight", name);
    snprintf(bias, sizeof bias, "%s.bias", name);
    return clg_batch_norm(x, NULL, NULL, clg_module_find(b, w), clg_module_find(b, bias), true, 0.1, 1e-5);
}

static clg_tensor *composed(clg_module *b, bool bottleneck, int stride, clg_tensor *x)
{
    clg_conv2d_params s1 = {{1, 1}, {1, 1}, {1, 1}, 1}, ss = {{stride, stride}, {1, 1}, {1, 1}, 1},
                      p0 = {{1, 1}, {0, 0}, {1, 1}, 1}, d = {{stride, stride}, {0, 0}, {1, 1}, 1};
    clg_tensor *y;
    if (!bottleneck) {
        y = clg_relu(cbn(b, "bn1", clg_conv2d(x, clg_module_find(b, "conv1.weight"), NULL, &ss)));
        y = cbn(b, "bn2", clg_conv2d(y, clg_module_find(b, "conv2.weight"), NULL, &s1));
    } else {
        y = clg_relu(cbn(b, "bn1", clg_conv2d(x, clg_module_find(b, "conv1.weight"), NULL, &p0)));
        y = clg_relu(cbn(b, "bn2", clg_conv2d(y, clg_module_find(b, "conv2.weight"), NULL, &ss)));
        y = cbn(b, "bn3", clg_conv2d(y, clg_module_find(b, "conv3.weight"), NULL, &p0));
    }
    clg_tensor *shortcut = clg_module_find(b, "downsample.0.weight")
                               ? cbn(b, "downsample.1", clg_conv2d(x, clg_module_find(b, "downsample.0.weight"), NULL, &d))
                               : x;
    return clg_relu(clg_add(y, shortcut));
}

/* Values and the gradients of x and of every parameter, against the composed block. */
static void against_ops(clg_device *dev, bool bottleneck, int64_t in, int64_t planes, int stride)
{
    clg_manual_seed(dev, 5);
    clg_module *b = bottleneck ? clg_nn_bottleneck(dev, in, planes, stride, false)
                               : clg_nn_basic_block(dev, in, planes, stride, false);
    if (!b) {
        CHECK_MSG(false, "%s", clg_device_error(dev));
        return;
    }
    shake_norms(b);
    clg_tensor *inputs[32];
    int np = clg_module_parameters(b, inputs + 1, 31, false);
    clg_scope_begin(dev);
    clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(3, in, 6, 6), 0, 1);
    CHECK_OK(dev, clg_tensor_set_requires_grad(x, true));
    inputs[0] = x;
    clg_tensor *ys[2] = {clg_module_forward(b, x), composed(b, bottleneck, stride, x)};
    clg_tensor *w = clg_randn(dev, CLG_F32, clg_tensor_ndim(ys[1]), clg_tensor_shape(ys[1]), 0, 1);
    clg_tensor *g[2][32];
    for (int k = 0; k < 2; k++) {
        clg_tensor *loss = clg_sum(clg_mul(ys[k], w), 0, NULL, false);
        CHECK_OK(dev, clg_grad(1, &loss, NULL, np + 1, inputs, g[k]));
    }
    double *a = optest_read(ys[0]);
    char what[96];
    snprintf(what, sizeof what, "%s(%lld, %lld, %d) forward", clg_module_type(b), (long long)in, (long long)planes, stride);
    if (a) optest_close(what, ys[1], a, clg_tensor_numel(ys[1]), 1e-6, 1e-5);
    free(a);
    clg_named_tensor st[32];
    int ns = clg_module_state(b, st, 32);
    for (int i = 0; i <= np; i++) {
        const char *name = "x";   /* the parameters come in state order, buffers left out */
        for (int s = 0, p = 0; i > 0 && s < ns; s++)
            if (st[s].is_param && ++p == i) name = st[s].name;
        double *ga = optest_read(g[0][i]);
        snprintf(what, sizeof what, "%s(%lld, %lld, %d) d/d%s", clg_module_type(b), (long long)in, (long long)planes,
                 stride, name);
        CHECK_MSG(ga != NULL, "%s", what);
        if (ga) optest_close(what, g[1][i], ga, clg_tensor_numel(g[1][i]), 1e-5, 1e-4);
        free(ga);
    }
    clg_scope_end(dev);
    clg_module_free(b);
}

/* Each path alone: with the last batch norm's weight and bias 0 the main path adds
 * nothing, so y = relu(shortcut) and the gradient reaches x through the shortcut only
 * (exactly x > 0 for an identity), the main path's convs get none; with the shortcut's
 * batch norm zeroed instead, the downsample gets none and the main path all of it. */
static void paths(clg_device *dev)
{
    clg_manual_seed(dev, 6);
    clg_module *b = clg_nn_basic_block(dev, 3, 3, 1, false);
    clg_scope_begin(dev);
    clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(2, 3, 4, 4), 0, 1);
    CHECK_OK(dev, clg_tensor_set_requires_grad(x, true));
    CHECK_OK(dev, clg_init_zeros(clg_module_find(b, "bn2.weight")));
    CHECK_OK(dev, clg_init_zeros(clg_module_find(b, "bn2.bias")));
    clg_tensor *ins[2] = {x, clg_module_find(b, "conv1.weight")}, *g[2];
    clg_tensor *loss = clg_sum(clg_module_forward(b, x), 0, NULL, false);
    CHECK_OK(dev, clg_grad(1, &loss, NULL, 2, ins, g));
    double *xv = optest_read(x), *gx = optest_read(g[0]), *gw = optest_read(g[1]);
    bool exact = xv && gx && gw;
    for (int i = 0; exact && i < 96; i++) exact = gx[i] == (xv[i] > 0 ? 1 : 0);
    for (int i = 0; exact && i < 81; i++) exact = gw[i] == 0;
    CHECK_MSG(exact, "identity path: the gradient of x is not exactly x > 0, or conv1 got one");
    free(xv);
    free(gx);
    free(gw);
    clg_scope_end(dev);
    clg_module_free(b);

    b = clg_nn_basic_block(dev, 3, 6, 2, false);
    clg_scope_begin(dev);
    x = clg_randn(dev, CLG_F32, CLG_SHAPE(2, 3, 4, 4), 0, 1);
    shake_norms(b);
    clg_tensor *convs[3] = {clg_module_find(b, "conv1.weight"), clg_module_find(b, "conv2.weight"),
                            clg_module_find(b, "downsample.0.weight")};
    for (int zero_main = 0; zero_main < 2; zero_main++) {
        const char *bn = zero_main ? "bn2" : "downsample.1";
        char w[64], bias[64];
        snprintf(w, sizeof w, "%s.weight", bn);
        snprintf(bias, sizeof bias, "%s.bias", bn);
        shake_norms(b);
        CHECK_OK(dev, clg_init_zeros(clg_module_find(b, w)));
        CHECK_OK(dev, clg_init_zeros(clg_module_find(b, bias)));
        clg_tensor *gw3[3];
        loss = clg_sum(clg_module_forward(b, x), 0, NULL, false);
        CHECK_OK(dev, clg_grad(1, &loss, NULL, 3, convs, gw3));
        for (int k = 0; k < 3; k++) {
            double *v = optest_read(gw3[k]), mx = 0;
            for (int64_t i = 0; v && i < clg_tensor_numel(gw3[k]); i++) mx = fmax(mx, fabs(v[i]));
            free(v);
            bool want_zero = zero_main ? k < 2 : k == 2;
            CHECK_MSG(v && (want_zero ? mx == 0 : mx > 1e-3), "%s zeroed: gradient %d largest %g", bn, k, mx);
        }
    }
    clg_scope_end(dev);
    clg_module_free(b);
}

/* ---- refusals -------------------------------------------------------------------------------------- */

static void refusals(clg_device *dev)
{
    CHECK(clg_nn_basic_block(dev, 0, 8, 1, false) == NULL && strstr(clg_device_error(dev), "clg_nn_basic_block"));
    CHECK(clg_nn_bottleneck(dev, 8, -1, 1, false) == NULL && strstr(clg_device_error(dev), "clg_nn_bottleneck"));
    CHECK(clg_nn_bottleneck(dev, 8, 4, 0, false) == NULL && strstr(clg_device_error(dev), "stride 0"));
    CHECK(clg_nn_basic_block(NULL, 8, 8, 1, false) == NULL);
    clg_module *b = clg_nn_basic_block(dev, 4, 4, 1, false);
    clg_scope_begin(dev);
    CHECK(clg_module_forward(b, clg_zeros(dev, CLG_F32, CLG_SHAPE(1, 3, 4, 4))) == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "BasicBlock") && strstr(clg_device_error(dev), "[1, 3, 4, 4]"), "%s",
              clg_device_error(dev));
    CHECK(clg_module_forward(b, clg_zeros(dev, CLG_F32, CLG_SHAPE(4, 4))) == NULL);
    clg_scope_end(dev);
    clg_module_free(b);
}

int main(void)
{
    clg_device *dev = check_open_device();
    shapes(dev);
    names(dev);
    init_and_summary(dev);
    gradcheck(dev);
    against_ops(dev, false, 4, 8, 2);
    against_ops(dev, false, 4, 4, 1);
    against_ops(dev, true, 4, 2, 2);
    against_ops(dev, true, 8, 2, 1);
    paths(dev);
    refusals(dev);
    clg_device_close(dev);
    return check_report("test_nn_resnet");
}
