/* test_io_torch_resnet: residual networks cross between clgrad and PyTorch. clgrad
 * saves a small network (a stem, BasicBlock(8, 16, stride 2) with its downsample,
 * Bottleneck(16, 4), Bottleneck(16, 8, stride 2) with its downsample, pooling, linear),
 * an input batch, its training-mode outputs, the gradients of a weighted sum of them,
 * the state after that pass and the evaluation-mode outputs; tests/io/torch_resnet.py
 * builds the same network from torchvision's block structure, loads the weights with
 * load_state_dict(strict=True) and must reproduce all of it (outputs to 1e-5). Then
 * PyTorch saves its own torchvision-initialised weights, clgrad loads them strictly and
 * must give PyTorch's outputs to 1e-5. Python: $CLG_TEST_PYTHON, else Debian's
 * /usr/bin/python3 with python3-torch and python3-numpy; missing is a failure. */
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

/* tests/io/torch_resnet.py's net() */
static clg_module *make_net(clg_device *dev)
{
    const clg_conv2d_params pad1 = {.padding = {1, 1}};
    return clg_nn_sequential(dev, 9, (clg_module *[]){
        clg_nn_conv2d(dev, 3, 8, 3, 3, &pad1, false), clg_nn_batch_norm2d(dev, 8, 1e-5, 0.1), clg_nn_relu(dev),
        clg_nn_basic_block(dev, 8, 16, 2, false), clg_nn_bottleneck(dev, 16, 4, 1, false),
        clg_nn_bottleneck(dev, 16, 8, 2, false), clg_nn_global_avg_pool2d(dev), clg_nn_flatten(dev),
        clg_nn_linear(dev, 32, 5, true)});
}

static int python(const char *cmd, const char *dir)
{
    const char *py = getenv("CLG_TEST_PYTHON");
    if (!py || !*py) py = "/usr/bin/python3";
    char *script = io_path(CLGRAD_TEST_SOURCE_DIR, "io/torch_resnet.py");
    char *args[] = {(char *)py, script, (char *)cmd, (char *)dir, NULL};
    pid_t pid;
    int status = -1;
    if (posix_spawn(&pid, py, NULL, NULL, args, environ) != 0 || waitpid(pid, &status, 0) != pid) status = -1;
    free(script);
    return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void save_npy(clg_device *dev, clg_tensor *t, const char *dir, const char *name)
{
    char *p = io_path(dir, name);
    CHECK_MSG(t && clg_tensor_save_npy(t, p) == CLG_OK, "%s: %s", p, clg_device_error(dev));
    free(p);
}

/* Batch-norm (and linear) weights and biases away from 1 and 0: every affine step then
 * shows in the outputs and the gradients. */
static void shake_affine(clg_device *dev, clg_module *m)
{
    clg_named_tensor st[128];
    int n = clg_module_state(m, st, 128);
    for (int i = 0; i < n; i++)
        if (st[i].is_param && clg_tensor_ndim(st[i].tensor) == 1) {
            bool weight = strstr(st[i].name, ".weight") != NULL;
            CHECK_OK(dev, clg_init_uniform(st[i].tensor, weight ? 0.5 : -0.3, weight ? 1.5 : 0.3));
        }
}

/* The gradients of every parameter, by their state_dict names, to DIR/grads.safetensors. */
static void save_grads(clg_device *dev, clg_module *m, const char *dir)
{
    clg_named_tensor st[128], g[128];
    int n = clg_module_state(m, st, 128), ng = 0;
    for (int i = 0; i < n; i++)
        if (st[i].is_param) {
            g[ng] = (clg_named_tensor){st[i].name, clg_tensor_grad(st[i].tensor), true};
            CHECK_MSG(g[ng].tensor != NULL, "%s has no gradient", st[i].name);
            if (g[ng].tensor) ng++;
        }
    char *p = io_path(dir, "grads.safetensors");
    CHECK_OK(dev, clg_safetensors_write(dev, p, ng, g, 0, NULL));
    free(p);
}

/* clgrad -> PyTorch */
static void clgrad_to_torch(clg_device *dev, const char *dir)
{
    clg_manual_seed(dev, 31);
    clg_module *m = make_net(dev);
    CHECK_MSG(m != NULL, "%s", clg_device_error(dev));
    if (!m) return;
    shake_affine(dev, m);
    char *p = io_path(dir, "net.safetensors");
    CHECK_OK(dev, clg_module_save(m, p, 0, NULL));
    free(p);
    clg_scope_begin(dev);
    clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(4, 3, 8, 8), 0, 1);
    clg_tensor *r = clg_randn(dev, CLG_F32, CLG_SHAPE(4, 5), 0, 1);
    save_npy(dev, x, dir, "x.npy");
    save_npy(dev, r, dir, "r.npy");
    clg_tensor *y = clg_module_forward(m, x);   /* training mode: batch statistics */
    save_npy(dev, y, dir, "y_train.npy");
    CHECK_OK(dev, clg_backward(clg_sum(clg_mul(y, r), 0, NULL, false), NULL));
    save_grads(dev, m, dir);
    p = io_path(dir, "net_after.safetensors");
    CHECK_OK(dev, clg_module_save(m, p, 0, NULL));
    free(p);
    clg_module_train(m, false);
    save_npy(dev, clg_module_forward(m, x), dir, "y_eval.npy");
    clg_scope_end(dev);
    clg_module_free(m);
    CHECK_MSG(python("check", dir) == 0, "PyTorch did not reproduce clgrad's residual network");
}

/* PyTorch -> clgrad */
static void torch_to_clgrad(clg_device *dev, const char *dir)
{
    CHECK_MSG(python("export", dir) == 0, "PyTorch could not export its residual network");
    clg_manual_seed(dev, 32);
    clg_module *m = make_net(dev);
    if (!m) return;
    char *p = io_path(dir, "net_torch.safetensors");
    clg_load_report rep;
    CHECK_MSG(clg_module_load(m, p, true, &rep) == CLG_OK, "%s", clg_device_error(dev));
    CHECK(rep.loaded == clg_module_state(m, NULL, 0));
    clg_load_report_free(&rep);
    free(p);
    clg_module_train(m, false);
    clg_scope_begin(dev);
    p = io_path(dir, "net_torch_x.npy");
    clg_tensor *x = clg_tensor_load_npy(dev, p);
    free(p);
    p = io_path(dir, "net_torch_y.npy");
    clg_tensor *want = clg_tensor_load_npy(dev, p);
    free(p);
    double diff = io_max_diff(clg_module_forward(m, x), want);
    printf("torch weights in clgrad: max |clgrad - torch| = %.3g\n", diff);
    CHECK_MSG(diff <= 1e-5, "clgrad's outputs from torch's weights differ by %g (%s)", diff, clg_device_error(dev));
    /* the counters arrived (int64 there, int32 here) with their value */
    int32_t nbt = -1;
    CHECK(clg_tensor_to_host(clg_module_find(m, "5.downsample.1.num_batches_tracked"), &nbt, 4) == CLG_OK && nbt == 1);
    clg_scope_end(dev);
    clg_module_free(m);
}

/* examples/models/resnet_fashion.json built from the file: torch's ResNet-20 with the same
 * layer names loads into it strictly and gives torch's outputs. */
static void model_file(clg_device *dev, const char *dir)
{
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/../examples/models/resnet_fashion.json", CLGRAD_TEST_SOURCE_DIR);
    clg_model *mf = NULL;
    CHECK_MSG(clg_model_read(path, &mf, err, sizeof err) == CLG_OK, "%s", err);
    clg_module *net = mf ? clg_model_build(mf, dev) : NULL;
    char *p = io_path(dir, "r20_torch.safetensors");
    CHECK_MSG(net && clg_module_load(net, p, true, NULL) == CLG_OK, "resnet_fashion.json: %s", clg_device_error(dev));
    free(p);
    if (net) {
        clg_module_train(net, false);
        clg_scope_begin(dev);
        p = io_path(dir, "r20_torch_x.npy");
        clg_tensor *x = clg_tensor_load_npy(dev, p);
        free(p);
        p = io_path(dir, "r20_torch_y.npy");
        double diff = io_max_diff(clg_module_forward(net, x), clg_tensor_load_npy(dev, p));
        free(p);
        printf("resnet_fashion.json with torch's ResNet-20: max |clgrad - torch| = %.3g\n", diff);
        CHECK_MSG(diff <= 1e-5, "resnet_fashion.json differs from torch's ResNet-20 by %g (%s)", diff,
                  clg_device_error(dev));
        clg_scope_end(dev);
    }
    clg_module_free(net);
    clg_model_free(mf);
}

int main(void)
{
    clg_device *dev = check_open_device();
    char *dir = io_tmpdir("torch-resnet");
    clgrad_to_torch(dev, dir);
    torch_to_clgrad(dev, dir);
    model_file(dev, dir);
    io_rmdir(dir);
    clg_device_close(dev);
    return check_report("test_io_torch_resnet");
}
