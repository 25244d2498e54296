/* test_io_torch: weights move between clgrad and PyTorch. clgrad saves an MLP, a CNN
 * and an embedding model (every layer type) with an input batch and its outputs;
 * tests/io/torch_check.py loads them into the same torch.nn models with
 * load_state_dict(strict=True) and must get the same outputs to 1e-5. Then PyTorch
 * exports its weights (int64 num_batches_tracked included), clgrad loads them strictly
 * and must get PyTorch's outputs to 1e-5. Python: $CLG_TEST_PYTHON (as the other
 * tests), else Debian's /usr/bin/python3 with python3-torch and python3-numpy; missing
 * is a failure. */
#include <math.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "io/io_models.h"
#include "io/io_util.h"

extern char **environ;

#ifndef CLGRAD_TEST_SOURCE_DIR
#error "CLGRAD_TEST_SOURCE_DIR: the tests/ directory, set by tests/CMakeLists.txt"
#endif

static const char *const names[] = {"mlp", "cnn", "embed", "lstm", "gru", "rnn"};
#define NMODELS 6

static clg_module *make(clg_device *dev, int i)
{
    switch (i) {
    case 0: return io_mlp(dev, 10);
    case 1: return io_cnn(dev, 5);
    case 2: return io_embed(dev);
    case 3: return io_lstm(dev);
    case 4: return io_gru(dev);
    default: return io_rnn(dev);
    }
}

static int python(const char *cmd, const char *dir)
{
    const char *py = getenv("CLG_TEST_PYTHON");
    if (!py || !*py) py = "/usr/bin/python3";
    char *script = io_path(CLGRAD_TEST_SOURCE_DIR, "io/torch_check.py");
    char *args[] = {(char *)py, script, (char *)cmd, (char *)dir, NULL};
    pid_t pid;
    int status = -1;
    if (posix_spawn(&pid, py, NULL, NULL, args, environ) != 0 || waitpid(pid, &status, 0) != pid) status = -1;
    free(script);
    return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void save_output(clg_device *dev, clg_module *m, clg_tensor *x, const char *path)
{
    clg_scope_begin(dev);
    clg_tensor *y = clg_module_forward(m, x);
    CHECK_MSG(y && clg_tensor_save_npy(y, path) == CLG_OK, "%s: %s", path, clg_device_error(dev));
    clg_scope_end(dev);
}

/* clgrad -> PyTorch */
static void clgrad_to_torch(clg_device *dev, const char *dir)
{
    for (int i = 0; i < NMODELS; i++) {
        clg_manual_seed(dev, 40 + (uint64_t)i);
        clg_module *m = make(dev, i);
        clg_tensor *x;
        if (i == 2 || i == 3) {
            int32_t ids[8] = {1, 19, 0, 7, 7, 3, 12, 5};
            x = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(2, 4), ids);
        } else if (i > 3) {   /* [T, N, 3], time first */
            x = clg_randn(dev, CLG_F32, CLG_SHAPE(6, 2, 3), 0, 1);
        } else {
            x = i == 1 ? clg_randn(dev, CLG_F32, CLG_SHAPE(6, 3, 8, 8), 0, 1) : clg_randn(dev, CLG_F32, CLG_SHAPE(6, 12), 0, 1);
            clg_scope_begin(dev);   /* a training pass moves the batch-norm statistics */
            clg_tensor *shifted = clg_add_scalar(clg_mul_scalar(x, 2), 1);
            CHECK(clg_module_forward(m, shifted) != NULL);
            clg_scope_end(dev);
        }
        clg_module_train(m, false);
        char file[64];
        snprintf(file, sizeof file, "%s.safetensors", names[i]);
        char *p = io_path(dir, file);
        CHECK_OK(dev, clg_module_save(m, p, 0, NULL));
        free(p);
        snprintf(file, sizeof file, "%s_x.npy", names[i]);
        p = io_path(dir, file);
        CHECK_OK(dev, clg_tensor_save_npy(x, p));
        free(p);
        snprintf(file, sizeof file, "%s_y.npy", names[i]);
        p = io_path(dir, file);
        save_output(dev, m, x, p);
        free(p);
        clg_tensor_free(x);
        clg_module_free(m);
    }
    CHECK_MSG(python("check", dir) == 0, "PyTorch did not reproduce clgrad's outputs from clgrad's weights");
}

/* Model i loaded (strictly) from DIR/<name>_torch<tag>.safetensors gives PyTorch's
 * outputs DIR/<name>_torch<tag>_y.npy on DIR/<name>_torch_x.npy to 1e-5; tag "" is
 * PyTorch's float32 weights, "_f16" and "_bf16" its model.half() and .bfloat16() ones,
 * widened on load (the outputs are PyTorch's float32 model's with those weights). */
static void torch_weights(clg_device *dev, const char *dir, int i, const char *tag)
{
    clg_manual_seed(dev, 50);
    clg_module *m = make(dev, i);
    char file[64];
    snprintf(file, sizeof file, "%s_torch%s.safetensors", names[i], tag);
    char *p = io_path(dir, file);
    clg_load_report rep;
    CHECK_MSG(clg_module_load(m, p, true, &rep) == CLG_OK, "%s%s: %s", names[i], tag, clg_device_error(dev));
    CHECK(rep.loaded == clg_module_state(m, NULL, 0));
    clg_load_report_free(&rep);
    free(p);
    clg_module_train(m, false);
    clg_scope_begin(dev);
    snprintf(file, sizeof file, "%s_torch_x.npy", names[i]);
    p = io_path(dir, file);
    clg_tensor *x = clg_tensor_load_npy(dev, p);
    free(p);
    snprintf(file, sizeof file, "%s_torch%s_y.npy", names[i], tag);
    p = io_path(dir, file);
    clg_tensor *want = clg_tensor_load_npy(dev, p);
    free(p);
    double diff = io_max_diff(clg_module_forward(m, x), want);
    printf("%s: torch%s weights in clgrad: max |clgrad - torch| = %.3g\n", names[i], tag, diff);
    CHECK_MSG(diff <= 1e-5, "%s%s: clgrad's outputs from torch's weights differ by %g (%s)", names[i], tag, diff,
              clg_device_error(dev));
    clg_scope_end(dev);
    clg_module_free(m);
}

/* PyTorch -> clgrad */
static void torch_to_clgrad(clg_device *dev, const char *dir)
{
    CHECK_MSG(python("export", dir) == 0, "PyTorch could not export its weights");
    for (int i = 0; i < NMODELS; i++) torch_weights(dev, dir, i, "");
    for (int i = 0; i < 2; i++) {   /* the MLP and the CNN */
        torch_weights(dev, dir, i, "_f16");
        torch_weights(dev, dir, i, "_bf16");
    }
    /* the int64 counter arrived as int32, with its value */
    clg_module *m = make(dev, 1);
    char *p = io_path(dir, "cnn_torch.safetensors");
    CHECK_OK(dev, clg_module_load(m, p, true, NULL));
    int32_t nbt = -1;
    CHECK(clg_tensor_to_host(clg_module_find(m, "1.num_batches_tracked"), &nbt, 4) == CLG_OK && nbt == 1);
    free(p);
    clg_module_free(m);
}

int main(void)
{
    clg_device *dev = check_open_device();
    char *dir = io_tmpdir("torch");
    clgrad_to_torch(dev, dir);
    torch_to_clgrad(dev, dir);
    io_rmdir(dir);
    clg_device_close(dev);
    return check_report("test_io_torch");
}
