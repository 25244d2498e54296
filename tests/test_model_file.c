/* test_model_file: model files (clgrad/model.h). Every layer type parses, infers the
 * shapes and parameter counts that the built network really has (checked layer by
 * layer on the device), names state as PyTorch would, and round-trips through the
 * canonical text; losses, optimizers, schedules and transforms do what the file says;
 * every error names file:line:column (where the value is), the key and what is allowed. */
#include <math.h>
#include <string.h>

#include "check.h"

static clg_model *parse(const char *text, char *err, size_t errlen)
{
    clg_model *m = NULL;
    clg_status st = clg_model_parse(text, strlen(text), "t.json", &m, err, errlen);
    CHECK_MSG((st == CLG_OK) == (m != NULL), "status %d, model %p", st, (void *)m);
    return m;
}

static const char *EVERY_LAYER =
    "{\"input\": [3, 16, 16],\n"
    " \"layers\": [\n"
    "  {\"type\": \"conv2d\", \"name\": \"conv\", \"out\": 8, \"kernel\": 3, \"padding\": 1},\n"   /* [8,16,16] */
    "  {\"type\": \"batch_norm2d\", \"eps\": 1e-3, \"momentum\": 0.2}, \"relu\",\n"
    "  {\"type\": \"max_pool2d\", \"kernel\": 2},\n"                                               /* [8,8,8] */
    "  {\"type\": \"avg_pool2d\", \"kernel\": 3, \"stride\": 2, \"padding\": 1},\n"                 /* [8,4,4] */
    "  {\"type\": \"leaky_relu\", \"slope\": 0.2},\n"
    "  {\"type\": \"layer_norm\", \"dims\": 3},\n"
    "  {\"type\": \"conv2d\", \"out\": 4, \"kernel\": [3, 1], \"padding\": [1, 0], \"dilation\": [1, 2],\n"
    "   \"stride\": [1, 2], \"groups\": 2, \"bias\": false},\n"                                     /* [4,4,2] */
    "  \"global_avg_pool2d\", \"flatten\",\n"                                                       /* [4] */
    "  {\"type\": \"linear\", \"out\": 6, \"name\": \"fc\"}, \"batch_norm1d\", \"gelu\", \"sigmoid\", \"tanh\",\n"
    "  \"silu\", {\"type\": \"elu\", \"alpha\": 0.5}, \"gelu_tanh\",\n"
    "  {\"type\": \"softplus\", \"beta\": 2, \"threshold\": 10},\n"
    "  {\"type\": \"dropout\", \"p\": 0.25}, {\"type\": \"linear\", \"out\": 5, \"bias\": false}, \"softmax\"\n"
    " ]}";

static const int64_t EXPECT_SHAPES[][3] = {{8, 16, 16}, {8, 16, 16}, {8, 16, 16}, {8, 8, 8}, {8, 4, 4}, {8, 4, 4},
                                           {8, 4, 4}, {4, 4, 2}, {4, 1, 1}, {4}, {6}, {6}, {6}, {6}, {6}, {6}, {6}, {6}, {6},
                                           {6}, {5}, {5}};
static const int64_t EXPECT_PARAMS[] = {8 * 3 * 9 + 8, 16, 0, 0, 0, 0, 2 * 128, 4 * 4 * 3, 0, 0, 4 * 6 + 6, 12, 0, 0, 0,
                                        0, 0, 0, 0, 0, 30, 0};
static const char *const EXPECT_TYPES[] = {"conv2d", "batch_norm2d", "relu", "max_pool2d", "avg_pool2d", "leaky_relu",
                                           "layer_norm", "conv2d", "global_avg_pool2d", "flatten", "linear",
                                           "batch_norm1d", "gelu", "sigmoid", "tanh", "silu", "elu", "gelu_tanh",
                                           "softplus", "dropout", "linear", "softmax"};

/* Each layer's output on the device has the inferred shape, and its parameters the count. */
static void check_built(clg_device *dev, const clg_model *m)
{
    clg_manual_seed(dev, 3);
    clg_module *net = clg_model_build(m, dev);
    CHECK_MSG(net != NULL, "%s", clg_device_error(dev));
    if (!net) return;
    clg_module_train(net, false);
    clg_scope_begin(dev);
    clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(2, 3, 16, 16), 0, 1);
    for (int i = 0; i < clg_module_child_count(net) && x; i++) {
        clg_model_layer_info info;
        CHECK(clg_model_layer(m, i, &info));
        x = clg_module_forward(clg_module_child_at(net, i), x);
        CHECK_MSG(x && clg_tensor_ndim(x) == info.ndim + 1, "layer %d: %s", i, clg_device_error(dev));
        for (int a = 0; x && a < info.ndim && a + 1 < clg_tensor_ndim(x); a++)
            CHECK_MSG(clg_tensor_dim(x, a + 1) == info.shape[a], "layer %d axis %d", i, a);
        CHECK_MSG(clg_module_numel(clg_module_child_at(net, i), false) == info.params, "layer %d params", i);
    }
    clg_scope_end(dev);
    CHECK(clg_module_find(net, "conv.weight") && clg_module_find(net, "1.running_var") && clg_module_find(net, "fc.bias"));
    CHECK(clg_module_find(net, "7.weight") && !clg_module_find(net, "7.bias") && clg_module_find(net, "6.weight"));
    CHECK(clg_module_numel(net, false) == clg_model_param_count(m));
    clg_module_free(net);
}

static void test_every_layer(clg_device *dev)
{
    char err[512];
    clg_model *m = parse(EVERY_LAYER, err, sizeof err);
    CHECK_MSG(m, "%s", err);
    if (!m) return;
    CHECK(clg_model_layer_count(m) == 22 && clg_model_outputs(m) == 5 && clg_model_input_numel(m) == 768);
    for (int i = 0; i < clg_model_layer_count(m); i++) {
        clg_model_layer_info l;
        CHECK(clg_model_layer(m, i, &l));
        CHECK_MSG(!strcmp(l.type, EXPECT_TYPES[i]) && l.params == EXPECT_PARAMS[i], "layer %d: %s %lld", i, l.type,
                  (long long)l.params);
        for (int a = 0; a < l.ndim; a++) CHECK_MSG(l.shape[a] == EXPECT_SHAPES[i][a], "layer %d axis %d", i, a);
    }
    clg_model_layer_info l;
    CHECK(clg_model_layer(m, 7, &l) && strstr(l.settings, "kernel=[3, 1]") && strstr(l.settings, "groups=2") &&
          strstr(l.settings, "bias=false"));
    CHECK(clg_model_layer(m, 4, &l) && strstr(l.settings, "stride=2") && !clg_model_layer(m, 22, &l));
    CHECK(clg_model_layer(m, 16, &l) && strstr(l.settings, "alpha=0.5"));
    CHECK(clg_model_layer(m, 18, &l) && strstr(l.settings, "beta=2") && strstr(l.settings, "threshold=10"));
    CHECK(!strcmp(clg_model_get_loss(m)->type, "cross_entropy") && !strcmp(clg_model_get_optim(m)->type, "sgd"));
    check_built(dev, m);
    clg_model_free(m);
}

/* The layers of the other input shapes: [C, H, W] through a transposed convolution,
 * group norm and upsampling; [C, L] through conv1d. Each built layer's output has the
 * inferred shape and its parameters the count, and the parameters PyTorch's names. */
static void check_layers_on(clg_device *dev, const char *text, int n, const int64_t (*shapes)[3],
                            const int64_t *params)
{
    char err[512];
    clg_model *m = parse(text, err, sizeof err);
    CHECK_MSG(m, "%s", err);
    if (!m) return;
    CHECK(clg_model_layer_count(m) == n);
    clg_module *net = clg_model_build(m, dev);
    CHECK_MSG(net != NULL, "%s", clg_device_error(dev));
    clg_scope_begin(dev);
    int64_t in[4] = {2};
    int nd = 1;
    for (int a = 0; a < 3 && shapes[0][a]; a++) in[nd++] = shapes[0][a];
    clg_tensor *x = clg_randn(dev, CLG_F32, nd, in, 0, 1);
    for (int i = 0; net && i < n && x; i++) {
        clg_model_layer_info info;
        CHECK(clg_model_layer(m, i, &info) && info.params == params[i]);
        for (int a = 0; a < info.ndim; a++) CHECK_MSG(info.shape[a] == shapes[i + 1][a], "layer %d axis %d", i, a);
        x = clg_module_forward(clg_module_child_at(net, i), x);
        CHECK_MSG(x && clg_tensor_ndim(x) == info.ndim + 1, "layer %d: %s", i, clg_device_error(dev));
        for (int a = 0; x && a < info.ndim; a++) CHECK_MSG(clg_tensor_dim(x, a + 1) == info.shape[a], "layer %d", i);
        CHECK_MSG(clg_module_numel(clg_module_child_at(net, i), false) == info.params, "layer %d params", i);
    }
    clg_scope_end(dev);
    if (net) CHECK(clg_module_find(net, "0.weight") && clg_module_find(net, "0.bias"));
    clg_module_free(net);
    clg_model_free(m);
}

static void test_more_layers(clg_device *dev)
{
    const char *image = "{\"input\": [2, 6, 6], \"layers\": [\n"
                        " {\"type\": \"conv_transpose2d\", \"out\": 4, \"kernel\": 3, \"stride\": 2, \"padding\": 1,\n"
                        "  \"output_padding\": 1},\n"
                        " {\"type\": \"group_norm\", \"groups\": 2}, \"silu\",\n"
                        " {\"type\": \"upsample\", \"scale\": 0.5}, {\"type\": \"upsample\", \"scale\": 2, \"bilinear\": true},\n"
                        " \"flatten\", {\"type\": \"linear\", \"out\": 3}]}";
    const int64_t ishape[][3] = {{2, 6, 6}, {4, 12, 12}, {4, 12, 12}, {4, 12, 12}, {4, 6, 6}, {4, 12, 12}, {576}, {3}};
    const int64_t iparams[] = {2 * 4 * 9 + 4, 8, 0, 0, 0, 0, 576 * 3 + 3};
    check_layers_on(dev, image, 7, ishape, iparams);
    const char *seq = "{\"input\": [3, 10], \"layers\": [\n"
                      " {\"type\": \"conv1d\", \"out\": 4, \"kernel\": 3, \"padding\": 1, \"stride\": 2},\n"
                      " {\"type\": \"group_norm\", \"groups\": 4, \"eps\": 1e-3}, \"flatten\", {\"type\": \"linear\", \"out\": 2}]}";
    const int64_t sshape[][3] = {{3, 10}, {4, 5}, {4, 5}, {20}, {2}};
    const int64_t sparams[] = {4 * 3 * 3 + 4, 8, 0, 20 * 2 + 2};
    check_layers_on(dev, seq, 4, sshape, sparams);
    char err[512];
    clg_model *bad = parse("{\"input\": [6, 4, 4], \"layers\": [{\"type\": \"group_norm\", \"groups\": 4}]}", err,
                           sizeof err);
    CHECK_MSG(!bad && strstr(err, "groups 4"), "%s", err);
    clg_model_free(bad);
}

/* A model of tokens: an embedding, recurrent layers and a linear on the last axis.
 * Shapes and parameter counts from inference match the built layers on int32 tokens,
 * and the parameters carry PyTorch's names (nn.Sequential(Embedding, LSTM, ...)). */
static const char *TOKENS =
    "{\"input\": [5],\n"
    " \"layers\": [{\"type\": \"embedding\", \"num\": 256, \"dim\": 8},\n"
    "  {\"type\": \"lstm\", \"hidden\": 16, \"layers\": 2, \"dropout\": 0.1},\n"
    "  {\"type\": \"gru\", \"hidden\": 12, \"bias\": false},\n"
    "  {\"type\": \"rnn\", \"hidden\": 6, \"relu\": true, \"name\": \"simple\"},\n"
    "  {\"type\": \"linear\", \"out\": 256}],\n"
    " \"optimizer\": {\"type\": \"adam\", \"lr\": 0.002, \"clip_grad_norm\": 5},\n"
    " \"data\": {\"text\": \"corpus.txt\", \"holdout\": 0.05}}";

static void test_tokens(clg_device *dev)
{
    char err[512];
    clg_model *m = parse(TOKENS, err, sizeof err);
    CHECK_MSG(m, "%s", err);
    if (!m) return;
    const int64_t params[] = {256 * 8, 4 * 16 * (8 + 16 + 2) + 4 * 16 * (16 + 16 + 2), 3 * 12 * (16 + 12),
                              6 * (12 + 6 + 2), 6 * 256 + 256};
    const int64_t last[] = {8, 16, 12, 6, 256};
    CHECK(clg_model_takes_tokens(m) && clg_model_outputs(m) == 256 && clg_model_check_text(m, err, sizeof err) == CLG_OK);
    CHECK(clg_model_get_optim(m)->clip_grad_norm == 5 && clg_model_get_data(m)->holdout == 0.05);
    for (int i = 0; i < 5; i++) {
        clg_model_layer_info l;
        CHECK(clg_model_layer(m, i, &l) && l.ndim == 2 && l.shape[0] == 5 && l.shape[1] == last[i]);
        CHECK_MSG(l.params == params[i], "layer %d: %lld parameters, want %lld", i, (long long)l.params,
                  (long long)params[i]);
    }
    clg_model_layer_info l;
    CHECK(clg_model_layer(m, 1, &l) && !strcmp(l.settings, "hidden=16, layers=2, bias=true, dropout=0.1"));
    CHECK(clg_model_layer(m, 3, &l) && strstr(l.settings, "relu=true"));
    clg_module *net = clg_model_build(m, dev);
    CHECK_MSG(net, "%s", clg_device_error(dev));
    if (net) {
        CHECK(clg_module_find(net, "0.weight") && clg_module_find(net, "1.weight_ih_l0") &&
              clg_module_find(net, "1.bias_hh_l1") && clg_module_find(net, "2.weight_hh_l0") &&
              !clg_module_find(net, "2.bias_ih_l0") && clg_module_find(net, "simple.bias_ih_l0") &&
              clg_module_find(net, "4.weight"));
        CHECK(clg_module_numel(net, false) == clg_model_param_count(m));
        clg_module_train(net, false);
        clg_scope_begin(dev);
        clg_tensor *x = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(2, 5), (int32_t[]){1, 2, 3, 255, 0, 9, 8, 7, 6, 5});
        clg_tensor *y = clg_module_forward(net, x);   /* batch-first: [B, T, 256] */
        CHECK_MSG(y && clg_tensor_ndim(y) == 3 && clg_tensor_dim(y, 0) == 2 && clg_tensor_dim(y, 1) == 5 &&
                  clg_tensor_dim(y, 2) == 256, "%s", clg_device_error(dev));
        double loss = NAN;   /* per token: [B, T, C] against [B, T] */
        CHECK_OK(dev, clg_tensor_item(clg_model_loss(m, y, x), &loss));
        CHECK_MSG(loss > 4 && loss < 7, "loss %g", loss);
        clg_scope_end(dev);
    }
    clg_module_free(net);
    clg_model_free(m);
}

/* Canonical text: explicit, stable, and it parses back to itself. */
static void test_canonical(void)
{
    char err[512];
    clg_model *m = parse(EVERY_LAYER, err, sizeof err);
    char *a = m ? clg_model_json(m) : NULL;
    clg_model *m2 = a ? parse(a, err, sizeof err) : NULL;
    char *b = m2 ? clg_model_json(m2) : NULL;
    CHECK_MSG(a && b && !strcmp(a, b), "%s", err);
    CHECK(a && strstr(a, "\"dilation\"") && strstr(a, "\"momentum\": 0.2") && strstr(a, "\"bias\": false"));
    CHECK(a && strstr(a, "\"name\": \"conv\"") && strstr(a, "\"lr\": 0.01,") && strstr(a, "\"schedule\": \"constant\""));
    free(a);
    free(b);
    clg_model_free(m);
    clg_model_free(m2);
    m = parse(TOKENS, err, sizeof err);
    a = m ? clg_model_json(m) : NULL;
    m2 = a ? parse(a, err, sizeof err) : NULL;
    b = m2 ? clg_model_json(m2) : NULL;
    CHECK_MSG(a && b && !strcmp(a, b), "%s", err);
    CHECK(a && strstr(a, "\"type\": \"embedding\",\n      \"num\": 256,\n      \"dim\": 8") &&
          strstr(a, "\"hidden\": 6,\n      \"layers\": 1,\n      \"bias\": true,\n      \"dropout\": 0.0,\n      \"relu\": true"));
    CHECK(a && strstr(a, "\"clip_grad_norm\": 5") && strstr(a, "\"text\": \"corpus.txt\"") && strstr(a, "\"holdout\": 0.05"));
    free(a);
    free(b);
    clg_model_free(m);
    clg_model_free(m2);
}

static clg_model *mini(const char *sections, char *err, size_t errlen)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"input\": [4], \"layers\": [{\"type\": \"linear\", \"out\": 3}]%s%s}",
             *sections ? ", " : "", sections);
    clg_model *m = parse(text, err, errlen);
    CHECK_MSG(m, "%s: %s", sections, err);
    return m;
}

static double loss_of(clg_device *dev, const char *loss)
{
    char err[512], sec[128];
    snprintf(sec, sizeof sec, "\"loss\": %s", loss);
    clg_model *m = mini(sec, err, sizeof err);
    double v = NAN;
    clg_scope_begin(dev);
    clg_tensor *out = clg_tensor_from_host(dev, CLG_F32, CLG_SHAPE(2, 3), (float[]){0, 0, 0, 0, 0, 0});
    clg_tensor *y = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(2), (int32_t[]){0, 2});
    if (m) CHECK_OK(dev, clg_tensor_item(clg_model_loss(m, out, y), &v));
    clg_scope_end(dev);
    clg_model_free(m);
    return v;
}

static void test_losses(clg_device *dev)
{
    CHECK(fabs(loss_of(dev, "\"cross_entropy\"") - log(3.0)) < 1e-5);
    CHECK(fabs(loss_of(dev, "{\"type\": \"cross_entropy\", \"label_smoothing\": 0.1}") - log(3.0)) < 1e-5);
    CHECK(fabs(loss_of(dev, "\"mse\"") - 2.0 / 6) < 1e-6);      /* one-hot targets */
    CHECK(fabs(loss_of(dev, "{\"type\": \"l1\"}") - 2.0 / 6) < 1e-6);
    CHECK(fabs(loss_of(dev, "{\"type\": \"smooth_l1\", \"beta\": 2}") - 0.25 / 6 * 2) < 1e-6);
}

static void test_optimizers(clg_device *dev)
{
    const char *opts[] = {"\"sgd\"", "{\"type\": \"sgd\", \"lr\": 0.1, \"momentum\": 0.9, \"nesterov\": true}",
                          "{\"type\": \"adam\", \"beta2\": 0.99}", "\"adamw\"",
                          "{\"type\": \"rmsprop\", \"centered\": true, \"momentum\": 0.5}",
                          "{\"type\": \"adagrad\", \"lr_decay\": 0.01, \"schedule\": \"step:2:0.5\"}"};
    const char *names[] = {"sgd", "sgd", "adam", "adamw", "rmsprop", "adagrad"};
    for (int i = 0; i < 6; i++) {
        char err[512], sec[256];
        snprintf(sec, sizeof sec, "\"optimizer\": %s", opts[i]);
        clg_model *m = mini(sec, err, sizeof err);
        clg_module *net = m ? clg_model_build(m, dev) : NULL;
        clg_optimizer *o = net ? clg_model_build_optimizer(m, net) : NULL;
        CHECK_MSG(o && !strcmp(clg_optimizer_name(o), names[i]), "%s: %s", opts[i], clg_device_error(dev));
        CHECK(!o || clg_optimizer_lr(o) == clg_model_get_optim(m)->lr);
        clg_optimizer_free(o);
        clg_module_free(net);
        clg_model_free(m);
    }
    char err[512];
    clg_model *m = mini("\"optimizer\": {\"type\": \"adamw\", \"lr\": 0.1, \"schedule\": \"step:2:0.5\"}", err, sizeof err);
    CHECK(m && clg_model_get_optim(m)->weight_decay == 1e-2 && clg_model_get_optim(m)->beta1 == 0.9);
    CHECK(m && clg_model_lr_at(m, 1) == 0.1 && clg_model_lr_at(m, 2) == 0.05 && clg_model_lr_at(m, 5) == 0.025);
    CHECK(m && clg_model_set_lr(m, 0, err, sizeof err) != CLG_OK && clg_model_set_lr(m, 0.2, err, sizeof err) == CLG_OK);
    CHECK(m && clg_model_lr_at(m, 2) == 0.1);
    clg_model_free(m);
}

static void test_settings(void)
{
    char err[512];
    clg_model *m = parse("{\"input\": [2, 1, 2], \"classes\": [\"a\", \"b\"],\n"
                         " \"layers\": [\"flatten\", {\"type\": \"linear\", \"out\": 2}],\n"
                         " \"train\": {\"batch\": 7, \"epochs\": 3, \"seed\": 9, \"workers\": 2, \"precision\": \"mixed-bf16\"},\n"
                         " \"data\": {\"dataset\": \"x.csv\", \"label_column\": -1, \"scale\": 0.5, \"hflip\": true,\n"
                         "  \"crop_padding\": 1, \"normalize\": {\"mean\": [1, 2], \"std\": [2, 4]}}}",
                         err, sizeof err);
    CHECK_MSG(m, "%s", err);
    if (!m) return;
    CHECK(!strcmp(clg_model_class_name(m, 1), "b") && !clg_model_class_name(m, 2));
    clg_loader_config tc = clg_model_loader_config(m, true), ec = clg_model_loader_config(m, false);
    CHECK(tc.batch_size == 7 && tc.seed == 9 && tc.workers == 2 && tc.shuffle && tc.hflip && tc.crop_padding == 1);
    CHECK(clg_model_get_train(m)->precision == CLG_BF16);
    char *pj = clg_model_json(m);
    CHECK(pj && strstr(pj, "\"precision\": \"mixed-bf16\""));
    free(pj);
    clg_dtype pd = CLG_F32;
    CHECK(clg_precision_parse("mixed", &pd) && pd == CLG_F16 && !clg_precision_parse("half", &pd) &&
          !strcmp(clg_precision_name(CLG_F32), "float32"));
    CHECK(!ec.shuffle && !ec.hflip && !ec.crop_padding && ec.norm_channels == 2 && ec.mean[1] == 2 && ec.std[1] == 4);
    float x[4] = {2, 2, 4, 4};   /* channel 0: (2*0.5 - 1) / 2 = 0; channel 1: (4*0.5 - 2) / 4 = 0 */
    clg_model_transform(m, x, 1);
    CHECK(x[0] == 0 && x[1] == 0 && x[2] == 0 && x[3] == 0);
    clg_model_train t = {0, 1, 1, 1};
    CHECK(clg_model_set_train(m, &t, err, sizeof err) != CLG_OK && strstr(err, "batch"));
    t.batch = 5;
    CHECK(clg_model_set_train(m, &t, err, sizeof err) == CLG_OK && clg_model_get_train(m)->batch == 5);
    CHECK(clg_model_set_data(m, "fashion-mnist", NULL, err, sizeof err) == CLG_OK);
    CHECK(!strcmp(clg_model_get_data(m)->dataset, "fashion-mnist") && clg_model_get_data(m)->label_column == -1);
    char *j = clg_model_json(m);
    CHECK(j && strstr(j, "\"dataset\": \"fashion-mnist\"") && strstr(j, "\"batch\": 5") && strstr(j, "\"b\"") &&
          !strstr(j, "precision"));   /* float32, the default, is not written */
    free(j);
    clg_model_free(m);
}

/* The example files parse, with the reference settings of the example trainers. */
static void test_examples(void)
{
    const char *files[] = {"fashion_mlp.json", "fashion_cnn.json", "fashion_cnn_best.json"};
    const int64_t params[] = {535818, 215370, 215546};
    for (int i = 0; i < 3; i++) {
        char path[1024], err[512];
        snprintf(path, sizeof path, "%s/../examples/models/%s", CLGRAD_TEST_SOURCE_DIR, files[i]);
        clg_model *m = NULL;
        CHECK_MSG(clg_model_read(path, &m, err, sizeof err) == CLG_OK, "%s", err);
        CHECK_MSG(m && clg_model_param_count(m) == params[i], "%s: %lld", files[i],
                  (long long)(m ? clg_model_param_count(m) : 0));
        CHECK(m && clg_model_get_optim(m)->lr == 0.05 && clg_model_get_optim(m)->momentum == 0.9 &&
              clg_model_get_train(m)->batch == 128 && clg_model_outputs(m) == 10 && strstr(clg_model_comment(m), "%"));
        clg_model_free(m);
    }
    char err[512], path[1024];
    clg_model *m = NULL;
    snprintf(path, sizeof path, "%s/../examples/models/char_lstm.json", CLGRAD_TEST_SOURCE_DIR);
    CHECK_MSG(clg_model_read(path, &m, err, sizeof err) == CLG_OK, "%s", err);
    CHECK_MSG(m && clg_model_param_count(m) == 938240, "char_lstm: %lld", (long long)(m ? clg_model_param_count(m) : 0));
    CHECK(m && clg_model_takes_tokens(m) && clg_model_check_text(m, err, sizeof err) == CLG_OK &&
          clg_model_get_optim(m)->clip_grad_norm == 5 && clg_model_get_train(m)->batch == 32 &&
          clg_model_get_data(m)->holdout == 0.05 && strstr(clg_model_comment(m), "LSTM"));
    clg_model_free(m);
    CHECK(clg_model_read("/nonexistent/m.json", &m, err, sizeof err) == CLG_ERR_IO && strstr(err, "/nonexistent/m.json"));
    /* text for a model that does not take tokens, and a model of tokens that cannot read bytes */
    m = mini("", err, sizeof err);
    CHECK(m && clg_model_set_text(m, "x.txt", err, sizeof err) != CLG_OK && strstr(err, "does not take tokens"));
    clg_model_free(m);
    m = parse("{\"input\": [4], \"layers\": [{\"type\": \"embedding\", \"num\": 100, \"dim\": 3},\n"
              " {\"type\": \"linear\", \"out\": 256}]}", err, sizeof err);
    CHECK(m && clg_model_check_text(m, err, sizeof err) != CLG_OK && strstr(err, "layers[0] (embedding): num 100"));
    CHECK(m && clg_model_set_data(m, "fashion-mnist", NULL, err, sizeof err) == CLG_OK);
    clg_model_free(m);
}

/* An error case: the file, the text at which the message must point (its first
 * occurrence; NULL: the start of the file), and what the message must say. */
typedef struct bad_case {
    const char *text, *at, *says, *allowed;
} bad_case;

#define L2 "{\"input\": [1, 8, 8],\n \"layers\": [\n  "
#define TK "{\"input\": [6],\n \"layers\": [\n  "
#define EMB "{\"type\": \"embedding\", \"num\": 256, \"dim\": 4}"
#define END "\n ]}"
static const bad_case BAD[] = {
    {"{\"input\": [1, 2,]}", "]}", "", NULL},                                     /* jansson: syntax */
    {"{\"input\": [8], \"layers\": [{\"type\": \"embedding\", \"num\": 9, \"dim\": 4},\n {\"type\": \"gpt\", \"context\": 8, "
     "\"layers\": 1, \"heads\": 1, \"dim\": 4}]}", "{\"type\": \"gpt\"", "gpt must be the first layer", NULL},
    {"{\"input\": [9], \"layers\": [{\"type\": \"gpt\", \"context\": 8, \"layers\": 1, \"heads\": 1, \"dim\": 4}]}", "{\"type\"",
     "more than the context 8", NULL},
    {"{\"input\": [8], \"layers\": [{\"type\": \"gpt\", \"context\": 8, \"layers\": 1, \"heads\": 3, \"dim\": 4}]}", "{\"type\"",
     "heads 3 must divide dim 4", NULL},
    {"{\"input\": [5, 6], \"layers\": [{\"type\": \"transformer_block\", \"heads\": 4}]}", "{\"type\"",
     "heads 4 must divide the input's 6 features", NULL},
    {"{\"input\": [5, 6, 2], \"layers\": [{\"type\": \"multihead_attention\", \"heads\": 2}]}", "{\"type\"",
     "takes a sequence [T, C]", NULL},
    {"{\"input\": [4], \"layers\": [\"relu\"],\n \"optimizer\": {\"type\": \"adam\", \"schedule_unit\": \"batch\"}}",
     "\"batch\"", "counts \"epoch\"s or \"step\"s", NULL},
    {"{\"input\": [1],\n \"input\": [2], \"layers\": [\"relu\"]}", "\": [2]", "duplicate object key", NULL},
    {"[1, 2]", NULL, "a model file is one JSON object", NULL},
    {"{\"layers\": [\"relu\"]}", NULL, "missing \"input\"", NULL},
    {"{\"input\": [1]}", NULL, "missing \"layers\"", NULL},
    {"{\"input\": [1],\n \"layers\": [\"flatten\"],\n \"bogus\": 1}", "\"bogus\"", "bogus: unknown key \"bogus\"",
     "allowed: comment, input, classes, layers, loss, optimizer, train, data"},
    {"{\"input\": [1, 0],\n \"layers\": []}", "[1, 0]", "input: must be the sample shape", "integers in [1, 16777216]"},
    {"{\"input\": [3],\n \"layers\": []}", "[]", "layers: must be an array of 1 to 1024 layers", NULL},
    {L2 "{\"type\": \"conv\"}" END, "\"conv\"", "layers[0].type: unknown layer type \"conv\"",
     "allowed: linear, conv2d, max_pool2d, avg_pool2d, global_avg_pool2d, batch_norm1d, batch_norm2d, layer_norm, "
     "dropout, flatten, relu, leaky_relu, sigmoid, tanh, gelu, softmax, gelu_tanh, silu, elu, softplus, conv1d, "
     "conv_transpose2d, upsample, group_norm"},
    {L2 "\"flatten\", {\"out\": 3}" END, "{\"out\"", "layers[1]: missing \"type\"", "one of: linear, conv2d"},
    {L2 "\"flatten\",\n  7" END, "7", "layers[1]: a layer is an object", NULL},
    {L2 "{\"type\": \"conv2d\", \"out\": 4, \"kernel\": 0}" END, "0}", "layers[0].kernel: must be an integer in "
     "[1, 1024] or a pair [h, w] of them, got 0", NULL},
    {L2 "{\"type\": \"conv2d\", \"out\": 4, \"kernel\": [3, 3, 3]}" END, "[3, 3, 3]", "layers[0].kernel: must be", NULL},
    {L2 "{\"type\": \"conv2d\", \"out\": 4}" END, "{\"type\": \"conv2d\"", "layers[0]: missing \"kernel\" (conv2d needs it)",
     NULL},
    {L2 "\"flatten\", \"linear\"" END, "\"linear\"", "layers[1]: missing \"out\" (linear needs it)", NULL},
    {L2 "{\"type\": \"relu\", \"slope\": 0.1}" END, "\"slope\"", "layers[0].slope: unknown key \"slope\"",
     "allowed: type, name"},
    {L2 "{\"type\": \"conv2d\", \"out\": 4, \"kernel\": 3, \"bias\": \"yes\"}" END, "\"yes\"",
     "layers[0].bias: must be true or false, got \"yes\"", NULL},
    {L2 "{\"type\": \"dropout\", \"p\": 1}" END, "1}", "layers[0].p: must be a number in [0, 0.99], got 1", NULL},
    {L2 "{\"type\": \"linear\", \"out\": 2.5}" END, "2.5", "layers[0].out: must be an integer in [1, 16777216]", NULL},
    {L2 "\"flatten\", {\"type\": \"conv2d\", \"out\": 2, \"kernel\": 3}" END, "{\"type\": \"conv2d\"",
     "layers[1]: conv2d takes [C, H, W] inputs, got an input of shape [64]", NULL},
    {L2 "{\"type\": \"max_pool2d\", \"kernel\": 9}" END, "{\"type\"", "layers[0]: a height window of 9", "does not fit"},
    {L2 "{\"type\": \"max_pool2d\", \"kernel\": 2, \"padding\": 2}" END, "{\"type\"",
     "layers[0]: padding 2 is more than half the kernel 2", NULL},
    {L2 "{\"type\": \"conv2d\", \"out\": 4, \"kernel\": 3, \"groups\": 2}" END, "{\"type\"",
     "layers[0]: groups 2 must divide the input's 1 channels and out 4", NULL},
    {L2 "\"flatten\", {\"type\": \"layer_norm\", \"dims\": 2}" END, "{\"type\": \"layer_norm\"",
     "layers[1]: layer_norm takes at least `dims` axes, got an input of shape [64]", NULL},
    {L2 "\"flatten\", {\"type\": \"batch_norm2d\"}" END, "{\"type\": \"batch_norm2d\"", "layers[1]: batch_norm2d takes", NULL},
    {L2 "{\"type\": \"relu\", \"name\": \"1x\"}" END, "\"1x\"", "layers[0].name: must be a letter or '_'", NULL},
    {L2 "{\"type\": \"flatten\", \"name\": \"a\"},\n  {\"type\": \"relu\", \"name\": \"a\"}" END, "{\"type\": \"relu\"",
     "layers[1]: name \"a\" is already layer 0's", NULL},
    {L2 "\"relu\"" END, "\"relu\"", "layers[0]: the last layer must give one score per class", NULL},
    {L2 "\"flatten\", {\"type\": \"linear\", \"out\": 3}],\n \"classes\": [\"a\", \"b\"" END, "[\"a\"",
     "classes: must be 3 strings", NULL},
    {L2 "\"flatten\"],\n \"loss\": \"hinge\"\n}", "\"hinge\"", "loss: must be one of: cross_entropy, mse, l1, smooth_l1",
     NULL},
    {L2 "\"flatten\"],\n \"loss\": {\"type\": \"mse\", \"label_smoothing\": 0.1}\n}", "\"label_smoothing\"",
     "loss.label_smoothing: unknown key", "allowed: type"},
    {L2 "\"flatten\"],\n \"optimizer\": {\"type\": \"adam\", \"momentum\": 0.9}\n}", "\"momentum\"",
     "optimizer.momentum: unknown key \"momentum\"", "allowed: type, lr, beta1, beta2, eps, weight_decay, schedule"},
    {L2 "\"flatten\"],\n \"optimizer\": {\"type\": \"sgdd\"}\n}", "\"sgdd\"",
     "optimizer.type: must be one of: sgd, adam, adamw, rmsprop, adagrad", NULL},
    {L2 "\"flatten\"],\n \"optimizer\": {\"type\": \"sgd\", \"lr\": -1}\n}", "-1", "optimizer.lr: must be a number in", NULL},
    {L2 "\"flatten\"],\n \"optimizer\": {\"type\": \"sgd\", \"nesterov\": true}\n}", "true",
     "optimizer.nesterov: nesterov needs momentum > 0 and dampening 0", NULL},
    {L2 "\"flatten\"],\n \"optimizer\": {\"schedule\": \"cosine:0\"}\n}", "\"cosine:0\"", "optimizer.schedule: ",
     "allowed: constant, step:SIZE:GAMMA"},
    {L2 "\"flatten\"],\n \"train\": {\"batch\": 0}\n}", "0}", "train.batch: must be an integer in [1, 1048576], got 0",
     NULL},
    {L2 "\"flatten\"],\n \"train\": {\"epoch\": 2}\n}", "\"epoch\"", "train.epoch: unknown key",
     "allowed: batch, epochs, seed, workers"},
    {L2 "\"flatten\"],\n \"train\": {\"precision\": \"half\"}\n}", "\"half\"",
     "train.precision: \"half\" (allowed: float32, mixed, mixed-bf16)", NULL},
    {L2 "\"flatten\"],\n \"data\": {\"dataset\": 3}\n}", "3}", "data.dataset: must be a string, got 3", NULL},
    {L2 "\"flatten\"],\n \"data\": {\"normalize\": {\"mean\": [0.5], \"std\": [0]}}\n}", "[0]",
     "data.normalize.std: must be an array of 1 to 16 numbers in [1e-12, 1e+06], got [0]", NULL},
    {L2 "\"flatten\"],\n \"data\": {\"normalize\": {\"mean\": [0.5, 1], \"std\": [1, 2]}}\n}", "[1, 2]",
     "data.normalize.std: mean and std need the same length, 1 or the input's 1 channels", NULL},
    {L2 "\"flatten\"],\n \"data\": {\"hflip\": 1}\n}", "1}", "data.hflip: must be true or false", NULL},
    {L2 "\"flatten\"],\n \"optimizer\": {\"type\": \"adam\", \"clip_grad_norm\": -1}\n}", "-1",
     "optimizer.clip_grad_norm: must be a number in [0, 1e+06], got -1", NULL},
    {L2 "\"flatten\",\n  {\"type\": \"embedding\", \"num\": 256, \"dim\": 4}" END, "{\"type\": \"embedding\"",
     "layers[1]: embedding must be the first layer", NULL},
    {TK "{\"type\": \"embedding\", \"dim\": 4}" END, "{\"type\"", "layers[0]: missing \"num\" (embedding needs it)",
     NULL},
    {TK "{\"type\": \"embedding\", \"num\": 0, \"dim\": 4}" END, "0,", "layers[0].num: must be an integer in [1, ",
     NULL},
    {L2 "{\"type\": \"lstm\", \"hidden\": 4}" END, "{\"type\"",
     "layers[0]: lstm takes [T, features] inputs (a sequence), got an input of shape [1, 8, 8]", NULL},
    {TK EMB ",\n  {\"type\": \"gru\"}" END, "{\"type\": \"gru\"}", "layers[1]: missing \"hidden\" (gru needs it)",
     NULL},
    {TK EMB ",\n  {\"type\": \"lstm\", \"hidden\": 8, \"dropout\": 0.2}" END, "{\"type\": \"lstm\"",
     "layers[1]: dropout 0.2 acts between stacked layers: it needs layers >= 2", NULL},
    {TK EMB ",\n  {\"type\": \"rnn\", \"hidden\": 8, \"layers\": 65}" END, "65",
     "layers[1].layers: must be an integer in [1, 64], got 65", NULL},
    {TK EMB ",\n  {\"type\": \"lstm\", \"hidden\": 8, \"relu\": true}" END, "\"relu\"",
     "layers[1].relu: unknown key \"relu\"", "allowed: type, name, inputs, hidden, layers, bias, dropout"},
    {TK EMB ", \"flatten\", {\"type\": \"linear\", \"out\": 256}" END, "{\"type\": \"linear\"",
     "layers[2]: the last layer of a model of tokens must give scores per token", NULL},
    {TK EMB "],\n \"data\": {\"dataset\": \"fashion-mnist\"}\n}", "\"fashion-mnist\"",
     "data.dataset: a model of tokens (its first layer is an embedding) learns from \"text\"", NULL},
    {TK EMB "],\n \"data\": {\"text\": \"a.txt\", \"dataset\": \"b.csv\"}\n}", "\"a.txt\"",
     "data.text: give \"dataset\" or \"text\", not both", NULL},
    {TK EMB "],\n \"data\": {\"text\": \"a.txt\"}\n}", "\"a.txt\"",
     "data.text: layers[0] (embedding): 4 scores per position; the next byte takes 256", NULL},
    {L2 "\"flatten\"],\n \"data\": {\"text\": \"a.txt\"}\n}", "\"a.txt\"",
     "data.text: the model does not take tokens", NULL},
    {TK EMB "],\n \"data\": {\"holdout\": 0.95}\n}", "0.95", "data.holdout: must be a number in [0, 0.9]", NULL},
};

static void where(const char *text, const char *at, int *line, int *col)
{
    const char *p = at ? strstr(text, at) : text;
    *line = 1, *col = 1;
    for (const char *q = text; p && q < p; q++)
        if (*q == '\n') (*line)++, *col = 1;
        else (*col)++;
}

static void test_errors(void)
{
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        char err[1024] = "", want[64];
        clg_model *m = parse(BAD[i].text, err, sizeof err);
        int line, col;
        where(BAD[i].text, BAD[i].at, &line, &col);
        snprintf(want, sizeof want, "t.json:%d:%d: ", line, col);
        CHECK_MSG(!m && !strncmp(err, want, strlen(want)), "case %zu: want %s, got %s", i, want, err);
        CHECK_MSG(strstr(err, BAD[i].says), "case %zu: want \"%s\" in %s", i, BAD[i].says, err);
        CHECK_MSG(!BAD[i].allowed || strstr(err, BAD[i].allowed), "case %zu: want \"%s\" in %s", i, BAD[i].allowed, err);
        CHECK_MSG(!strchr(err, '\n'), "case %zu: one line: %s", i, err);
        clg_model_free(m);
    }
}

/* gpt, transformer_block (repeated, causal) and multihead_attention: shapes, parameter
 * counts equal to the built modules', PyTorch's state names, a forward; the example GPT. */
static void test_attention_layers(clg_device *dev)
{
    const char *text = "{\"input\": [6], \"layers\": [{\"type\": \"embedding\", \"num\": 256, \"dim\": 8},"
                       " {\"type\": \"transformer_block\", \"name\": \"enc\", \"heads\": 2, \"ff\": 16, \"dropout\": 0,"
                       " \"causal\": true, \"norm_first\": true, \"gelu\": true, \"repeat\": 2},"
                       " {\"type\": \"multihead_attention\", \"heads\": 4, \"causal\": true},"
                       " {\"type\": \"layer_norm\"}, {\"type\": \"linear\", \"out\": 256}]}";
    char err[512];
    clg_model *m = parse(text, err, sizeof err);
    CHECK_MSG(m, "%s", err);
    clg_module *net = m ? clg_model_build(m, dev) : NULL;
    CHECK_MSG(!m || net, "%s", clg_device_error(dev));
    if (net) {
        CHECK_MSG(clg_module_numel(net, false) == clg_model_param_count(m), "built %lld, inferred %lld",
                  (long long)clg_module_numel(net, false), (long long)clg_model_param_count(m));
        CHECK(clg_module_find(net, "enc.0.self_attn.in_proj_weight") && clg_module_find(net, "enc.1.linear2.bias") &&
              clg_module_find(net, "2.out_proj.weight") && clg_module_find(net, "enc.1.norm2.weight"));
        clg_scope_begin(dev);
        clg_tensor *x = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(2, 6), (int32_t[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
        clg_tensor *y = clg_module_forward(net, x);
        CHECK_MSG(y && clg_tensor_dim(y, 0) == 2 && clg_tensor_dim(y, 1) == 6 && clg_tensor_dim(y, 2) == 256, "%s",
                  clg_device_error(dev));
        clg_scope_end(dev);
    }
    clg_module_free(net);
    clg_model_free(m);
    char path[1024];
    snprintf(path, sizeof path, "%s/../examples/models/gpt_fortunes.json", CLGRAD_TEST_SOURCE_DIR);
    m = NULL;
    CHECK_MSG(clg_model_read(path, &m, err, sizeof err) == CLG_OK, "%s", err);
    CHECK_MSG(m && clg_model_param_count(m) == 842496 && clg_model_takes_tokens(m) &&
              clg_model_get_optim(m)->schedule_steps, "gpt_fortunes: %lld", (long long)(m ? clg_model_param_count(m) : 0));
    net = m ? clg_model_build(m, dev) : NULL;
    CHECK(net && clg_module_numel(net, false) == 842496 && clg_module_find(net, "0.lm_head.weight") ==
                                                              clg_module_find(net, "0.transformer.wte.weight"));
    char *json = m ? clg_model_json(m) : NULL;
    CHECK(json && strstr(json, "\"schedule_unit\": \"step\""));
    free(json);
    clg_module_free(net);
    clg_model_free(m);
}

/* basic_block and bottleneck (repeated, strided): shapes, parameter counts equal to the built
 * modules', torchvision's names; the example ResNet. */
static void test_residual_layers(clg_device *dev)
{
    const char *text = "{\"input\": [3, 9, 9], \"layers\": [{\"type\": \"basic_block\", \"name\": \"layer1\", \"out\": 4,"
                       " \"stride\": 2, \"repeat\": 2}, {\"type\": \"bottleneck\", \"out\": 2},"
                       " {\"type\": \"bottleneck\", \"out\": 2, \"stride\": 2, \"repeat\": 2}, \"flatten\","
                       " {\"type\": \"linear\", \"out\": 3}]}";
    char err[512];
    clg_model *m = parse(text, err, sizeof err);
    CHECK_MSG(m, "%s", err);
    clg_model_layer_info l;
    CHECK(m && clg_model_layer(m, 0, &l) && l.shape[0] == 4 && l.shape[1] == 5 && l.shape[2] == 5);
    CHECK(m && clg_model_layer(m, 2, &l) && l.shape[0] == 8 && l.shape[1] == 3 && l.shape[2] == 3);
    clg_module *net = m ? clg_model_build(m, dev) : NULL;
    CHECK_MSG(!m || net, "%s", clg_device_error(dev));
    if (net) {
        CHECK_MSG(clg_module_numel(net, false) == clg_model_param_count(m), "built %lld, inferred %lld",
                  (long long)clg_module_numel(net, false), (long long)clg_model_param_count(m));
        CHECK(clg_module_find(net, "layer1.0.downsample.0.weight") && !clg_module_find(net, "layer1.1.downsample.0.weight") &&
              clg_module_find(net, "1.conv3.weight") && clg_module_find(net, "1.downsample.1.running_var") &&
              clg_module_find(net, "2.0.downsample.0.weight") && !clg_module_find(net, "2.1.downsample.0.weight"));
        clg_scope_begin(dev);
        clg_tensor *y = clg_module_forward(net, clg_randn(dev, CLG_F32, CLG_SHAPE(2, 3, 9, 9), 0, 1));
        CHECK_MSG(y && clg_tensor_dim(y, 0) == 2 && clg_tensor_dim(y, 1) == 3, "%s", clg_device_error(dev));
        clg_scope_end(dev);
    }
    clg_module_free(net);
    clg_model_free(m);
    char path[1024];
    snprintf(path, sizeof path, "%s/../examples/models/resnet_fashion.json", CLGRAD_TEST_SOURCE_DIR);
    m = NULL;
    CHECK_MSG(clg_model_read(path, &m, err, sizeof err) == CLG_OK, "%s", err);
    net = m ? clg_model_build(m, dev) : NULL;
    CHECK_MSG(m && net && clg_model_param_count(m) == 272186 && clg_module_numel(net, false) == 272186,
              "resnet_fashion: %lld", (long long)(m ? clg_model_param_count(m) : 0));
    clg_module_free(net);
    clg_model_free(m);
}

/* Layers that name their inputs: a residual add around two convolutions, a concat of two
 * branches read from the input; the wiring survives the canonical text; the values equal
 * the same arithmetic written with ops. */
static void test_graph(clg_device *dev)
{
    const char *text = "{\"input\": [2, 4, 4], \"layers\": ["
                       "{\"type\": \"conv2d\", \"name\": \"a\", \"out\": 3, \"kernel\": 3, \"padding\": 1},"
                       " \"relu\","
                       " {\"type\": \"conv2d\", \"name\": \"b\", \"out\": 3, \"kernel\": 1},"
                       " {\"type\": \"add\", \"name\": \"sum\", \"inputs\": [\"a\", \"b\"]},"
                       " {\"type\": \"conv2d\", \"name\": \"side\", \"out\": 5, \"kernel\": 1, \"inputs\": [\"input\"]},"
                       " {\"type\": \"concat\", \"inputs\": [\"sum\", \"side\"]},"
                       " \"flatten\", {\"type\": \"linear\", \"out\": 2}]}";
    char err[512];
    clg_model *m = parse(text, err, sizeof err);
    CHECK_MSG(m, "%s", err);
    if (!m) return;
    clg_model_layer_info l;
    CHECK(clg_model_layer(m, 5, &l) && l.ndim == 3 && l.shape[0] == 8 && l.shape[1] == 4);
    char *json = clg_model_json(m);
    clg_model *again = json ? parse(json, err, sizeof err) : NULL;
    clg_model_layer_info l2;
    CHECK_MSG(again && strstr(json, "\"inputs\"") && clg_model_param_count(again) == clg_model_param_count(m) &&
              clg_model_layer(again, 5, &l2) && l2.shape[0] == 8, "%s", err);
    free(json);
    clg_model_free(again);
    clg_module *net = clg_model_build(m, dev);
    CHECK_MSG(net && !strcmp(clg_module_type(net), "Graph") && clg_module_numel(net, false) == clg_model_param_count(m),
              "%s", clg_device_error(dev));
    if (net) {
        clg_scope_begin(dev);
        clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(3, 2, 4, 4), 0, 1);
        clg_tensor *a = clg_module_forward(clg_module_child(net, "a"), x);
        clg_tensor *b = clg_module_forward(clg_module_child(net, "b"), clg_relu(a));
        clg_tensor *side = clg_module_forward(clg_module_child(net, "side"), x);
        clg_tensor *cat = clg_concat(2, (clg_tensor *const[]){clg_add(a, b), side}, 1);
        clg_tensor *want = clg_module_forward(clg_module_child(net, "7"), clg_flatten(cat, 1, -1));
        clg_tensor *got = clg_module_forward(net, x);
        float g[6], w[6];
        CHECK_MSG(got && want && clg_tensor_to_host(got, g, sizeof g) == CLG_OK &&
                  clg_tensor_to_host(want, w, sizeof w) == CLG_OK && !memcmp(g, w, sizeof g), "%s", clg_device_error(dev));
        clg_scope_end(dev);
    }
    clg_module_free(net);
    clg_model_free(m);
    const char *bad[][2] = {
        {"{\"input\": [3], \"layers\": [\"relu\", {\"type\": \"add\", \"inputs\": [\"0\"]}]}", "needs \"inputs\""},
        {"{\"input\": [3], \"layers\": [\"relu\", {\"type\": \"relu\", \"inputs\": [\"0\", \"input\"]}]}", "takes one input"},
        {"{\"input\": [3], \"layers\": [{\"type\": \"relu\", \"inputs\": [\"later\"]}, {\"type\": \"relu\", \"name\": \"later\"}]}",
         "is not an earlier layer's name"},
        {"{\"input\": [3], \"layers\": [{\"type\": \"linear\", \"out\": 2}, {\"type\": \"add\", \"inputs\": [\"0\", \"input\"]}]}",
         "input 1 is [3], input 0 is [2]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        clg_model *b = parse(bad[i][0], err, sizeof err);
        CHECK_MSG(!b && strstr(err, bad[i][1]), "graph case %zu: want \"%s\" in %s", i, bad[i][1], err);
        clg_model_free(b);
    }
}

int main(void)
{
    clg_device *dev = check_open_device();
    test_graph(dev);
    test_attention_layers(dev);
    test_residual_layers(dev);
    test_every_layer(dev);
    test_more_layers(dev);
    test_tokens(dev);
    test_canonical();
    test_losses(dev);
    test_optimizers(dev);
    test_settings();
    test_examples();
    test_errors();
    clg_device_close(dev);
    return check_report("test_model_file");
}
