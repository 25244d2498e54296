/* test_io_onnx: ONNX export and import (clgrad/onnx.h) against onnxruntime and PyTorch.
 *
 * Export: every example model file (examples/models/, the json files) and a model of the other
 * layers, built with batch-norm statistics of their own, go out as ONNX; onnx.checker
 * must pass them and onnxruntime must give clgrad's evaluation-mode outputs to 1e-5
 * relative (tests/io/onnx_check.py ort). Each export imported back must give the same
 * model file and the same outputs; edited, it must not be taken for clgrad's export.
 *
 * Import: tests/io/onnx_check.py torch exports PyTorch equivalents of the example models
 * (MLP, CNN, batch norm, a ResNet and one with its batch norms (basic_block layers),
 * activations, LSTM, GRU, RNN, nanoGPT's GPT (a gpt layer) with nn.MultiheadAttention
 * and with its own attention, attention on floats and nn.TransformerEncoder
 * (transformer_block layers)) with torch.onnx.export; each imported network must give
 * PyTorch's outputs and onnxruntime's to 1e-5 relative, take an SGD step that changes
 * its weights, and save a checkpoint that rebuilds it exactly. A graph with an op
 * import does not read (LogSoftmax), and attention that is almost clgrad's (a mask that
 * is not causal, a softmax on the wrong axis), or a GPT whose head is not tied, must fail
 * naming the node; mutants of the GPT's attention must import as onnxruntime computes
 * them or fail.
 *
 * Python: $CLG_ONNX_PYTHON, the venv tests/io/onnx_venv.sh makes under the build tree
 * (onnxruntime from PyPI beside Debian's python3-onnx and python3-torch); missing is a
 * failure. */
#include <math.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "io/io_util.h"

extern char **environ;

#ifndef CLGRAD_TEST_SOURCE_DIR
#error "CLGRAD_TEST_SOURCE_DIR: the tests/ directory, set by tests/CMakeLists.txt"
#endif

#define TOL 1e-5

/* onnx_check.py with up to 12 arguments. */
static int python(const char *const *args, int n)
{
    const char *py = getenv("CLG_ONNX_PYTHON");
    if (!py || !*py) {
        fprintf(stderr, "CLG_ONNX_PYTHON is not set (tests/CMakeLists.txt sets it to the venv of onnx_venv.sh)\n");
        return -1;
    }
    char *script = io_path(CLGRAD_TEST_SOURCE_DIR, "io/onnx_check.py");
    char *argv[16] = {(char *)py, script};
    for (int i = 0; i < n && i < 12; i++) argv[2 + i] = (char *)args[i];
    pid_t pid;
    int status = -1;
    if (posix_spawn(&pid, py, NULL, NULL, argv, environ) != 0 || waitpid(pid, &status, 0) != pid) status = -1;
    free(script);
    return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* max |a - b| over max(1, max |b|). */
static double rel_diff(clg_tensor *a, clg_tensor *b)
{
    int64_t n = a && b ? clg_tensor_numel(b) : 0;
    float *h = calloc((size_t)n + 1, 4);
    double scale = 1;
    if (h && n && clg_tensor_to_host(b, h, (size_t)n * 4) == CLG_OK)
        for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(h[i]));
    free(h);
    return io_max_diff(a, b) / scale;
}

static clg_tensor *load(clg_device *dev, const char *dir, const char *name, const char *suffix)
{
    char file[128];
    snprintf(file, sizeof file, "%s%s", name, suffix);
    char *p = io_path(dir, file);
    clg_tensor *t = clg_tensor_load_npy(dev, p);
    CHECK_MSG(t != NULL, "%s: %s", p, clg_device_error(dev));
    free(p);
    return t;
}

/* Batch-norm statistics and affine parameters away from 0 and 1, so that exporting them
 * matters. */
static void shake_batch_norms(clg_device *dev, clg_module *net)
{
    int n = clg_module_state(net, NULL, 0);
    clg_named_tensor *st = calloc((size_t)n + 1, sizeof *st);
    clg_module_state(net, st, n);
    clg_no_grad_begin(dev);
    for (int i = 0; i < n; i++) {
        const char *s = strrchr(st[i].name, '.');
        bool mean = s && !strcmp(s, ".running_mean"), var = s && !strcmp(s, ".running_var");
        if (!mean && !var) continue;
        clg_scope_begin(dev);
        const int64_t *sh = clg_tensor_shape(st[i].tensor);
        CHECK_OK(dev, clg_copy_(st[i].tensor, clg_rand(dev, CLG_F32, 1, sh, mean ? -0.5 : 0.5, mean ? 0.5 : 2)));
        char w[256];   /* and the affine weight of the same norm */
        snprintf(w, sizeof w, "%.*s.weight", (int)(s - st[i].name), st[i].name);
        if (var && clg_module_find(net, w)) CHECK_OK(dev, clg_copy_(clg_module_find(net, w), clg_rand(dev, CLG_F32, 1, sh, 0.5, 1.5)));
        clg_scope_end(dev);
    }
    clg_no_grad_end(dev);
    free(st);
}

/* A batch of 2 inputs for model m: tokens in [0, 256) or floats. */
static clg_tensor *make_input(clg_device *dev, const clg_model *m)
{
    int64_t shape[CLG_MAX_DIMS + 1] = {2};
    int nd = clg_model_input(m, shape + 1) + 1;
    if (!clg_model_takes_tokens(m)) return clg_randn(dev, CLG_F32, nd, shape, 0, 1);
    clg_tensor *u = clg_rand(dev, CLG_F32, nd, shape, 0, 255.99);
    return clg_cast(clg_floor(u), CLG_I32);
}

static clg_tensor *eval_forward(clg_module *net, clg_tensor *x)
{
    clg_module_train(net, false);
    clg_device *dev = clg_module_device(net);
    clg_no_grad_begin(dev);
    clg_tensor *y = clg_module_forward(net, x);
    clg_no_grad_end(dev);
    return y;
}

/* ---- export --------------------------------------------------------------------------------- */

/* Layers the example files do not have, on images and on sequences. */
static const char *const ZOO[][2] = {
    {"zoo_image", "{\"input\": [2, 12, 12], \"layers\": ["
                  "{\"type\": \"conv2d\", \"name\": \"c1\", \"out\": 4, \"kernel\": 3, \"padding\": 1, \"groups\": 2},"
                  "{\"type\": \"group_norm\", \"groups\": 2, \"name\": \"gn\", \"inputs\": [\"c1\"]},"
                  "{\"type\": \"silu\", \"inputs\": [\"c1\"]}, {\"type\": \"avg_pool2d\", \"kernel\": 3, \"stride\": 2, \"padding\": 1},"
                  "{\"type\": \"conv_transpose2d\", \"out\": 3, \"kernel\": 2, \"stride\": 2},"
                  "{\"type\": \"upsample\", \"scale\": 2, \"bilinear\": true}, {\"type\": \"upsample\", \"scale\": 3},"
                  "{\"type\": \"batch_norm2d\", \"name\": \"bn\"}, {\"type\": \"elu\", \"alpha\": 0.5},"
                  "{\"type\": \"max_pool2d\", \"kernel\": 3, \"stride\": 2, \"padding\": 1},"
                  "{\"type\": \"conv2d\", \"name\": \"c2\", \"out\": 3, \"kernel\": 1, \"inputs\": [\"bn\"]},"
                  "{\"type\": \"concat\", \"inputs\": [\"bn\", \"c2\"]}, \"global_avg_pool2d\", \"flatten\","
                  "{\"type\": \"linear\", \"out\": 8}, \"gelu_tanh\", \"softplus\","
                  "{\"type\": \"leaky_relu\", \"slope\": 0.1}, {\"type\": \"layer_norm\"}, \"sigmoid\","
                  "{\"type\": \"linear\", \"out\": 5, \"bias\": false}, \"softmax\"]}"},
    {"zoo_seq", "{\"input\": [7, 6], \"layers\": ["
                "{\"type\": \"conv1d\", \"out\": 7, \"kernel\": 3, \"padding\": 1},"
                "{\"type\": \"batch_norm1d\"}, \"tanh\","
                "{\"type\": \"gru\", \"hidden\": 5, \"layers\": 2},"
                "{\"type\": \"rnn\", \"hidden\": 4, \"relu\": true, \"bias\": false},"
                "{\"type\": \"dropout\", \"p\": 0.2}, \"gelu\", {\"type\": \"linear\", \"out\": 3},"
                "\"flatten\", {\"type\": \"linear\", \"out\": 4}]}"},
    {"zoo_resize", "{\"input\": [2, 8, 8], \"layers\": [{\"type\": \"upsample\", \"scale\": 1.5, \"bilinear\": true},"
                   "{\"type\": \"upsample\", \"scale\": 0.7}, \"flatten\", {\"type\": \"linear\", \"out\": 4},"
                   "{\"type\": \"softplus\", \"beta\": 2, \"threshold\": 1}]}"},
    {"zoo_attn", "{\"input\": [6, 8], \"layers\": ["
                 "{\"type\": \"transformer_block\", \"heads\": 2, \"ff\": 16, \"gelu\": true, \"causal\": true, \"repeat\": 2},"
                 "{\"type\": \"multihead_attention\", \"heads\": 4, \"name\": \"mha\"},"
                 "{\"type\": \"transformer_block\", \"heads\": 4, \"norm_first\": true, \"bias\": false},"
                 "\"flatten\", {\"type\": \"linear\", \"out\": 3}]}"},
};

/* Export net (model m) to DIR/name.onnx with an input batch and its outputs beside it;
 * then import it back: the same outputs. Returns whether the export was written. */
static bool export_one(clg_device *dev, const char *dir, const char *name, clg_model *m)
{
    clg_manual_seed(dev, 7);
    clg_module *net = clg_model_build(m, dev);
    CHECK_MSG(net != NULL, "%s: %s", name, clg_device_error(dev));
    if (!net) return false;
    shake_batch_norms(dev, net);
    char file[128];
    snprintf(file, sizeof file, "%s.onnx", name);
    char *path = io_path(dir, file);
    clg_status st = clg_module_export_onnx(net, m, path);
    if (st == CLG_OK) {
        clg_scope_begin(dev);
        clg_tensor *x = make_input(dev, m), *y = eval_forward(net, x);
        snprintf(file, sizeof file, "%s_x.npy", name);
        char *px = io_path(dir, file);
        snprintf(file, sizeof file, "%s_y.npy", name);
        char *py = io_path(dir, file);
        CHECK_OK(dev, clg_tensor_save_npy(x, px));
        CHECK_OK(dev, clg_tensor_save_npy(y, py));
        clg_model *back = NULL;
        clg_module *net2 = NULL;
        clg_status ist = clg_module_import_onnx(dev, path, &back, &net2);
        /* clgrad's own export comes back whole: the same model file, the same outputs */
        CHECK_MSG(ist == CLG_OK, "%s: import of the export: %s", name, clg_device_error(dev));
        char *j1 = clg_model_json(m), *j2 = back ? clg_model_json(back) : NULL;
        CHECK_MSG(j1 && j2 && !strcmp(j1, j2), "%s: the imported model file differs:\n%s\n%s", name, j1, j2 ? j2 : "");
        free(j1);
        free(j2);
        double d = net2 ? rel_diff(eval_forward(net2, x), y) : INFINITY;
        printf("%s: exported and imported back: max |diff| %.3g relative\n", name, d);
        CHECK_MSG(d == 0, "%s: the imported export differs by %g", name, d);
        clg_module_free(net2);
        clg_model_free(back);
        free(px);
        free(py);
        clg_scope_end(dev);
    } else {
        CHECK_MSG(st == CLG_OK, "%s: %s", name, clg_device_error(dev));
    }
    free(path);
    clg_module_free(net);
    return st == CLG_OK;
}

/* zoo_attn.onnx saved again by python3-onnx imports whole; with a layer norm's epsilon
 * changed, or its embedded model file changed (4 heads for 2), it is not clgrad's export
 * of that model any more, and the general reader takes it as any graph: attention,
 * transformer blocks and all. With the model file edited, the graph is the export's and
 * must give its outputs; with the epsilon edited, the model must have that epsilon. */
static void edited(clg_device *dev, const char *dir)
{
    const char *args[3] = {"edit", dir, "zoo_attn"};
    CHECK_MSG(python(args, 3) == 0, "onnx_check.py edit failed");
    static const char *const files[3] = {"zoo_attn_same.onnx", "zoo_attn_eps.onnx", "zoo_attn_meta.onnx"};
    for (int i = 0; i < 3; i++) {
        char *p = io_path(dir, files[i]);
        clg_model *m = NULL;
        clg_module *net = NULL;
        clg_status st = clg_module_import_onnx(dev, p, &m, &net);
        CHECK_MSG(st == CLG_OK && net, "%s: %s", files[i], clg_device_error(dev));
        char *json = m ? clg_model_json(m) : NULL;
        bool general = json && strstr(json, "imported from");   /* the comment of the general reader */
        CHECK_MSG(general == (i > 0), "%s: read %s", files[i], general ? "as any graph" : "as clgrad's export");
        if (i == 1) CHECK_MSG(json && strstr(json, "\"eps\": 0.001"), "%s: the edited epsilon is not read:\n%s", files[i], json);
        if (i == 2 && net) {
            clg_scope_begin(dev);
            clg_tensor *x = load(dev, dir, "zoo_attn", "_x.npy"), *want = load(dev, dir, "zoo_attn", "_y.npy");
            double d = rel_diff(eval_forward(net, x), want);
            printf("%s: read as any graph: max |diff| %.3g relative\n", files[i], d);
            CHECK_MSG(d <= TOL, "%s: differs from the export's outputs by %g", files[i], d);
            clg_scope_end(dev);
        }
        free(json);
        clg_module_free(net);
        clg_model_free(m);
        free(p);
    }
}

static void test_export(clg_device *dev, const char *dir)
{
    static const char *const files[] = {"fashion_mlp", "fashion_cnn", "fashion_cnn_best", "resnet_fashion", "char_lstm",
                                        "gpt_fortunes"};
    const char *names[12];
    int n = 0;
    char err[1024];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "../examples/models/%s.json", files[i]);
        char *p = io_path(CLGRAD_TEST_SOURCE_DIR, rel);
        clg_model *m;
        CHECK_MSG(clg_model_read(p, &m, err, sizeof err) == CLG_OK, "%s", err);
        if (m && export_one(dev, dir, files[i], m)) names[n++] = files[i];
        clg_model_free(m);
        free(p);
    }
    for (size_t i = 0; i < sizeof ZOO / sizeof *ZOO; i++) {
        clg_model *m;
        CHECK_MSG(clg_model_parse(ZOO[i][1], strlen(ZOO[i][1]), ZOO[i][0], &m, err, sizeof err) == CLG_OK, "%s", err);
        if (m && export_one(dev, dir, ZOO[i][0], m)) names[n++] = ZOO[i][0];
        clg_model_free(m);
    }
    const char *args[14] = {"ort", dir};
    for (int i = 0; i < n; i++) args[2 + i] = names[i];
    CHECK_MSG(python(args, 2 + n) == 0, "onnx.checker or onnxruntime disagreed with clgrad's export (see above)");
    edited(dev, dir);
    /* a network that is not the model's: one error naming what is missing, no file */
    clg_model *m;
    const char *text = "{\"input\": [4], \"layers\": [{\"type\": \"linear\", \"out\": 3, \"name\": \"fc\"}]}";
    CHECK_MSG(clg_model_parse(text, strlen(text), "other", &m, err, sizeof err) == CLG_OK, "%s", err);
    clg_module *net = clg_nn_sequential(dev, 1, (clg_module *[]){clg_nn_linear(dev, 4, 3, true)});
    char *out = io_path(dir, "other.onnx");
    CHECK(net && m && clg_module_export_onnx(net, m, out) == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(clg_device_error(dev), "the network has no tensor \"fc.weight\""), "%s", clg_device_error(dev));
    CHECK(access(out, F_OK) != 0);
    clg_module_free(net);
    clg_model_free(m);
    free(out);
}

/* ---- import ---------------------------------------------------------------------------------- */

/* One SGD step on random labels must change the outputs; the checkpoint of the stepped
 * network must rebuild it exactly. */
static void train_and_save(clg_device *dev, const char *dir, const char *name, clg_model *m, clg_module *net,
                           clg_tensor *x)
{
    clg_scope_begin(dev);
    clg_tensor *y0 = eval_forward(net, x);
    clg_module_train(net, true);
    clg_optimizer *opt = clg_model_build_optimizer(m, net);
    CHECK_MSG(opt != NULL, "%s: %s", name, clg_device_error(dev));
    clg_tensor *out = clg_module_forward(net, x);
    int64_t shape[CLG_MAX_DIMS];
    int nd = out ? clg_tensor_ndim(out) - 1 : 0;
    if (out) memcpy(shape, clg_tensor_shape(out), (size_t)nd * sizeof *shape);
    double classes = out ? (double)clg_tensor_dim(out, -1) : 1;
    clg_tensor *labels = clg_cast(clg_floor(clg_rand(dev, CLG_F32, nd, shape, 0, classes - 0.01)), CLG_I32);
    clg_optimizer_zero_grad(opt);
    CHECK_OK(dev, clg_backward(clg_model_loss(m, out, labels), NULL));
    CHECK_OK(dev, clg_optimizer_step(opt));
    clg_tensor *y1 = eval_forward(net, x);
    double moved = rel_diff(y1, y0);
    CHECK_MSG(moved > 1e-7, "%s: an SGD step left the outputs as they were (%g)", name, moved);
    char file[128];
    snprintf(file, sizeof file, "%s.ckpt", name);
    char *path = io_path(dir, file), *json = clg_model_json(m), *inside = NULL, err[1024];
    CHECK_OK(dev, clg_checkpoint_save(net, opt, &(clg_train_state){.step = 1}, json, path));
    CHECK_MSG(clg_checkpoint_info(path, NULL, &inside, err, sizeof err) == CLG_OK && inside, "%s", err);
    clg_model *m2 = NULL;
    CHECK_MSG(inside && clg_model_parse(inside, strlen(inside), path, &m2, err, sizeof err) == CLG_OK, "%s", err);
    clg_module *net2 = m2 ? clg_model_build(m2, dev) : NULL;
    CHECK_OK(dev, net2 ? clg_checkpoint_load(net2, NULL, path, NULL, NULL) : CLG_ERR_INVALID_ARGUMENT);
    double d = net2 ? rel_diff(eval_forward(net2, x), y1) : INFINITY;
    CHECK_MSG(d == 0, "%s: the saved checkpoint gives other outputs (%g)", name, d);
    clg_module_free(net2);
    clg_model_free(m2);
    free(inside);
    free(json);
    free(path);
    clg_optimizer_free(opt);
    clg_scope_end(dev);
}

static void test_import(clg_device *dev, const char *dir)
{
    const char *args[2] = {"torch", dir};
    CHECK_MSG(python(args, 2) == 0, "PyTorch's exports did not run in onnxruntime as in PyTorch (see above)");
    static const char *const names[] = {"mlp", "cnn", "cnn_bn", "resnet", "resnet_bn", "act", "more", "lstm", "gru", "rnn",
                                        "gpt", "gpt_hand", "mha", "encoder"};
    /* the layers some must become: clgrad's blocks, not their parts */
    static const char *const want[][2] = {{"resnet_bn", "\"basic_block\""}, {"resnet_bn", "\"layer2\""},
                                          {"gpt", "\"type\": \"gpt\""}, {"gpt_hand", "\"type\": \"gpt\""},
                                          {"mha", "\"transformer_block\""}, {"mha", "\"heads\": 1"},
                                          {"encoder", "\"transformer_block\""}, {"encoder", "\"repeat\": 2"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char file[128];
        snprintf(file, sizeof file, "t_%s.onnx", names[i]);
        char *path = io_path(dir, file);
        clg_model *m = NULL;
        clg_module *net = NULL;
        CHECK_MSG(clg_module_import_onnx(dev, path, &m, &net) == CLG_OK, "%s: %s", names[i], clg_device_error(dev));
        free(path);
        if (!net) continue;
        char *json = clg_model_json(m);
        for (size_t k = 0; k < sizeof want / sizeof *want; k++)
            if (!strcmp(want[k][0], names[i]))
                CHECK_MSG(json && strstr(json, want[k][1]), "%s: no %s in the model file:\n%s", names[i], want[k][1],
                          json ? json : "(none)");
        free(json);
        clg_scope_begin(dev);
        snprintf(file, sizeof file, "t_%s", names[i]);
        clg_tensor *x = load(dev, dir, file, "_x.npy"), *want = load(dev, dir, file, "_y.npy");
        clg_tensor *y = eval_forward(net, x);
        double d = rel_diff(y, want), o = rel_diff(y, load(dev, dir, file, "_ort.npy"));
        printf("%s: PyTorch's export imported: max |clgrad - torch| %.3g, |clgrad - onnxruntime| %.3g relative\n",
               names[i], d, o);
        CHECK_MSG(d <= TOL && o <= TOL, "%s: the imported network differs from PyTorch by %g, from onnxruntime by %g",
                  names[i], d, o);
        train_and_save(dev, dir, names[i], m, net, x);
        clg_scope_end(dev);
        clg_module_free(net);
        clg_model_free(m);
    }
    /* an op import does not read: one error naming it and its node, nothing made */
    char *bad = io_path(dir, "t_bad.onnx");
    clg_model *m = (clg_model *)1;
    clg_module *net = (clg_module *)1;
    CHECK(clg_module_import_onnx(dev, bad, &m, &net) == CLG_ERR_UNSUPPORTED && !m && !net);
    CHECK_MSG(strstr(clg_device_error(dev), "node \"/2/LogSoftmax\" (LogSoftmax): op LogSoftmax is not supported"), "%s",
              clg_device_error(dev));
    free(bad);
    /* almost attention: a mask that is not causal, a Softmax on the queries' axis; almost
     * nanoGPT: its head not tied to the token embedding */
    static const char *const almost[][3] = {
        {"t_attn_mask.onnx", ": node \"/block/attn/mha/", "(Add): a mask other than the causal one"},
        {"t_attn_axis.onnx", ": node \"/block/attn/mha/", "(Softmax): Softmax on axis 1, not on the keys' time"},
        {"t_gpt_untied.onnx", ": node \"/Add\" (Add): a position embedding is read only as part of nanoGPT's whole model",
         "the head's weight is not the token embedding's"}};
    for (int i = 0; i < 3; i++) {
        bad = io_path(dir, almost[i][0]);
        CHECK(clg_module_import_onnx(dev, bad, &m, &net) == CLG_ERR_UNSUPPORTED && !m && !net);
        CHECK_MSG(strstr(clg_device_error(dev), almost[i][1]) && strstr(clg_device_error(dev), almost[i][2]), "%s: %s",
                  almost[i][0], clg_device_error(dev));
        free(bad);
    }
    /* not an ONNX file */
    char *junk = io_path(dir, "t_mlp_x.npy");
    CHECK(clg_module_import_onnx(dev, junk, &m, &net) != CLG_OK && !m && !net);
    CHECK_MSG(strstr(clg_device_error(dev), "not an ONNX model"), "%s", clg_device_error(dev));
    free(junk);
}

/* Mutants of PyTorch's GPT, each changed once within its attention (onnx_check.py
 * mutate): one that imports must compute what onnxruntime computes from it (never a
 * different model); the rest fail with a message, and none crashes, those onnxruntime
 * refuses included. */
static void mutants(clg_device *dev, const char *dir)
{
    const char *args[4] = {"mutate", dir, "t_gpt", "30"};
    CHECK_MSG(python(args, 4) == 0, "onnx_check.py mutate failed");
    clg_scope_begin(dev);
    clg_tensor *x = load(dev, dir, "t_gpt", "_x.npy");
    int imported = 0, refused = 0;
    for (int k = 0; k < 200; k++) {
        for (int bad = 0; bad < 2; bad++) {
            char file[64];
            snprintf(file, sizeof file, bad ? "mut_bad_%d.onnx" : "mut_%d.onnx", k);
            char *p = io_path(dir, file);
            clg_model *m = NULL;
            clg_module *net = NULL;
            if (access(p, F_OK) == 0 && clg_module_import_onnx(dev, p, &m, &net) == CLG_OK) {
                imported++;
                if (!bad) {
                    snprintf(file, sizeof file, "mut_%d", k);
                    double d = rel_diff(eval_forward(net, x), load(dev, dir, file, "_y.npy"));
                    CHECK_MSG(d <= TOL, "%s: imported, and differs from onnxruntime by %g", file, d);
                }
            } else if (access(p, F_OK) == 0) {
                refused++;
                CHECK_MSG(!m && !net && strstr(clg_device_error(dev), "clg_module_import_onnx: "), "%s: %s", file,
                          clg_device_error(dev));
            }
            clg_module_free(net);
            clg_model_free(m);
            free(p);
        }
    }
    printf("GPT's mutants: %d imported (as onnxruntime computes them), %d refused\n", imported, refused);
    CHECK(imported + refused >= 15);
    clg_scope_end(dev);
}

/* Damaged files (cut short, bytes changed) import or fail with a message: never a crash
 * (the sanitizer build checks the reads). */
static void damaged(clg_device *dev, const char *dir)
{
    char *path = io_path(dir, "t_act.onnx"), *bad = io_path(dir, "damaged.onnx");
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) {
        free(path), free(bad);
        return;
    }
    static unsigned char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    CHECK(len > 1000 && len < sizeof buf);
    uint32_t seed = 12345;
    int failed = 0;
    for (int t = 0; t < 60; t++) {
        static unsigned char copy[1 << 16];
        memcpy(copy, buf, len);
        size_t n = len;
        if (t < 20) n = len * (size_t)t / 20;   /* cut short */
        else
            for (int k = 0; k < 1 + t % 4; k++) {   /* some bytes changed */
                seed = seed * 1664525u + 1013904223u;
                copy[(seed >> 8) % len] = (unsigned char)(seed >> 24);
            }
        FILE *o = fopen(bad, "wb");
        CHECK(o && fwrite(copy, 1, n, o) == n);
        if (o) fclose(o);
        clg_model *m = NULL;
        clg_module *net = NULL;
        if (clg_module_import_onnx(dev, bad, &m, &net) != CLG_OK) {
            failed++;
            CHECK_MSG(!m && !net && strstr(clg_device_error(dev), "clg_module_import_onnx: "), "%s", clg_device_error(dev));
        }
        clg_module_free(net);
        clg_model_free(m);
    }
    printf("damaged files: %d of 60 refused with a message, the rest imported\n", failed);
    CHECK(failed >= 20);
    free(path);
    free(bad);
}

int main(void)
{
    clg_device *dev = check_open_device();
    CHECK(clg_onnx_available());
    char *dir = io_tmpdir("onnx");
    test_export(dev, dir);
    test_import(dev, dir);
    damaged(dev, dir);
    mutants(dev, dir);
    io_rmdir(dir);
    clg_device_close(dev);
    return check_report("test_io_onnx");
}
