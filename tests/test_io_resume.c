/* test_io_resume: resuming is exact. N steps in one run, and k steps, a checkpoint,
 * then N - k steps in a NEW PROCESS (this binary run again with "resume ...") give
 * bit-identical parameters, for Adam, for SGD with momentum, and for SGD in mixed
 * precision (float16 autocast with a loss scaler whose scale backs off from 2^20 and
 * grows every 3 clean steps, so that its state matters too). The training uses the
 * device generator (dropout, input noise), a learning-rate schedule, a frozen parameter
 * and batches made from the step index, so that every part of the checkpoint (weights,
 * optimizer state and per-parameter steps, lr, RNG, step) is needed: the controls show
 * that leaving out the optimizer state or the RNG changes the result. */
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "io/io_util.h"

extern char **environ;

enum { N_STEPS = 12, K_STEPS = 5, DATA_SEED = 1234 };
static const char *const SCHEDULE = "cosine:20,warmup:3";
static const double BASE_LR = 0.02;

typedef struct run {
    clg_module *model;
    clg_optimizer *opt;
    clg_grad_scaler *scaler;   /* "mixed" */
} run;

static run setup(clg_device *dev, const char *kind, uint64_t seed)
{
    clg_manual_seed(dev, seed);
    run r = {clg_nn_sequential(dev, 6, (clg_module *[]){
                 clg_nn_linear(dev, 6, 16, true), clg_nn_relu(dev), clg_nn_dropout(dev, 0.2),
                 clg_nn_linear(dev, 16, 16, true), clg_nn_tanh(dev), clg_nn_linear(dev, 16, 3, true)}),
             NULL, NULL};
    if (!strcmp(kind, "mixed"))
        r.scaler = clg_grad_scaler_new(dev, &(clg_grad_scaler_options){.init_scale = 0x1p20, .growth_interval = 3});
    clg_module_set_param_trainable(r.model, "3.bias", false);
    clg_tensor *p[8];
    int n = clg_module_parameters(r.model, p, 8, true);
    if (!strcmp(kind, "adam"))
        r.opt = clg_adam_new(n, p, &(clg_adam_options){.lr = BASE_LR, .weight_decay = 1e-3});
    else
        r.opt = clg_sgd_new(n, p, &(clg_sgd_options){.lr = BASE_LR, .momentum = 0.9, .dampening = 0.1,
                                                      .weight_decay = 1e-4});
    if (!r.model || !r.opt || (!strcmp(kind, "mixed") && !r.scaler)) {
        fprintf(stderr, "setup: %s\n", clg_device_error(dev));
        exit(1);
    }
    return r;
}

static void teardown(run *r)
{
    clg_grad_scaler_free(r->scaler);
    clg_optimizer_free(r->opt);
    clg_module_free(r->model);
}

/* Step s: its batch from the step index alone (a generator position of its own), then
 * noise and dropout from the device generator, which carries over between steps. */
static void train_step(clg_device *dev, run *r, int64_t s)
{
    clg_lr_schedule sched;
    char err[128];
    if (!clg_lr_schedule_parse(SCHEDULE, &sched, err, sizeof err)) exit(1);
    clg_optimizer_set_lr(r->opt, clg_lr_schedule_at(&sched, BASE_LR, s));
    clg_scope_begin(dev);
    uint64_t seed, offset;
    clg_rng_get_state(dev, &seed, &offset);
    clg_rng_set_state(dev, DATA_SEED, (uint64_t)s * 4096);
    clg_tensor *x = clg_randn(dev, CLG_F32, CLG_SHAPE(8, 6), 0, 1);
    clg_tensor *y = clg_randn(dev, CLG_F32, CLG_SHAPE(8, 3), 0, 1);
    clg_rng_set_state(dev, seed, offset);
    clg_tensor *noisy = clg_add(x, clg_randn(dev, CLG_F32, CLG_SHAPE(8, 6), 0, 0.05));
    clg_optimizer_zero_grad(r->opt);
    if (r->scaler) CHECK_OK(dev, clg_autocast_begin(dev, CLG_F16));
    clg_tensor *loss = clg_mse(clg_module_forward(r->model, noisy), y, CLG_REDUCE_MEAN);
    if (r->scaler) clg_autocast_end(dev);
    CHECK_OK(dev, clg_backward(r->scaler ? clg_grad_scaler_scale(r->scaler, loss) : loss, NULL));
    CHECK_OK(dev, r->scaler ? clg_grad_scaler_step(r->scaler, r->opt, NULL) : clg_optimizer_step(r->opt));
    if (r->scaler) CHECK_OK(dev, clg_grad_scaler_update(r->scaler));
    clg_scope_end(dev);
}

/* ---- the second process ------------------------------------------------------------------------- */

static int resume_main(const char *kind, const char *ckpt, const char *out)
{
    clg_device *dev = check_open_device();
    run r = setup(dev, kind, 999);   /* another seed: everything must come from the file */
    clg_train_state ts;
    CHECK_OK(dev, clg_checkpoint_load(r.model, r.opt, ckpt, &ts, NULL));
    CHECK(ts.step == K_STEPS && !strcmp(ts.lr_schedule, SCHEDULE) && ts.base_lr == BASE_LR);
    CHECK(!r.scaler == !(ts.loss_scale > 0));
    if (r.scaler) CHECK_OK(dev, clg_grad_scaler_set_state(r.scaler, ts.loss_scale, ts.loss_scale_growth));
    for (int64_t s = ts.step; s < N_STEPS; s++) train_step(dev, &r, s);
    CHECK_OK(dev, clg_module_save(r.model, out, 0, NULL));
    teardown(&r);
    clg_device_close(dev);
    return check_report("test_io_resume (resumed process)");
}

static int run_child(const char *kind, const char *ckpt, const char *out)
{
    char *args[] = {"test_io_resume", "resume", (char *)kind, (char *)ckpt, (char *)out, NULL};
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ) != 0) return -1;
    int status;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---- the first process ------------------------------------------------------------------------------ */

static bool file_matches(const char *path, const unsigned char *want, size_t len)
{
    char err[512];
    clg_safetensors *st;
    if (clg_safetensors_open(path, &st, err, sizeof err) != CLG_OK) {
        fprintf(stderr, "%s\n", err);
        return false;
    }
    size_t at = 0;
    bool same = true;
    for (int i = 0; i < clg_safetensors_count(st); i++) {
        const clg_safetensors_entry *t = clg_safetensors_at(st, i);
        same = same && at + t->bytes <= len && !memcmp(want + at, t->data, t->bytes);
        at += t->bytes;
    }
    clg_safetensors_close(st);
    return same && at == len;
}

static bool model_matches(const clg_module *m, const unsigned char *want, size_t len)
{
    size_t n;
    unsigned char *b = io_model_bytes(m, &n);
    bool same = n == len && !memcmp(b, want, len);
    free(b);
    return same;
}

static void test_resume(clg_device *dev, const char *kind, const char *dir)
{
    /* straight through */
    run a = setup(dev, kind, 11);
    for (int s = 0; s < N_STEPS; s++) train_step(dev, &a, s);
    size_t len;
    unsigned char *straight = io_model_bytes(a.model, &len);
    teardown(&a);

    /* k steps and a checkpoint */
    run b = setup(dev, kind, 11);
    for (int s = 0; s < K_STEPS; s++) train_step(dev, &b, s);
    char *ckpt = io_path(dir, "resume.ckpt"), *out = io_path(dir, "resumed.safetensors");
    clg_train_state ts = {.step = K_STEPS, .base_lr = BASE_LR};
    strcpy(ts.lr_schedule, SCHEDULE);
    if (b.scaler) {
        ts.loss_scale = clg_grad_scaler_get_scale(b.scaler);
        ts.loss_scale_growth = clg_grad_scaler_growth_tracker(b.scaler);
        CHECK_MSG(ts.loss_scale < 0x1p20, "%s: the scale never backed off (%g)", kind, ts.loss_scale);
    }
    CHECK_OK(dev, clg_checkpoint_save(b.model, b.opt, &ts, NULL, ckpt));
    CHECK_MSG(!model_matches(b.model, straight, len), "%s: k steps already equal N steps", kind);
    teardown(&b);

    /* the rest in a new process */
    int rc = run_child(kind, ckpt, out);
    CHECK_MSG(rc == 0, "%s: the resumed process failed (%d)", kind, rc);
    CHECK_MSG(rc == 0 && file_matches(out, straight, len), "%s: resumed parameters differ from the straight run",
              kind);

    /* controls, in this process: the same resume in-process is exact too... */
    run c = setup(dev, kind, 5);
    clg_train_state got;
    CHECK_OK(dev, clg_checkpoint_load(c.model, c.opt, ckpt, &got, NULL));
    CHECK(got.loss_scale == ts.loss_scale && got.loss_scale_growth == ts.loss_scale_growth);
    if (c.scaler) CHECK_OK(dev, clg_grad_scaler_set_state(c.scaler, got.loss_scale, got.loss_scale_growth));
    for (int s = K_STEPS; s < N_STEPS; s++) train_step(dev, &c, s);
    CHECK_MSG(model_matches(c.model, straight, len), "%s: in-process resume differs", kind);
    teardown(&c);
    /* ...but without the generator's state it is not... */
    c = setup(dev, kind, 5);
    CHECK_OK(dev, clg_checkpoint_load(c.model, c.opt, ckpt, NULL, NULL));
    clg_manual_seed(dev, 11);
    for (int s = K_STEPS; s < N_STEPS; s++) train_step(dev, &c, s);
    CHECK_MSG(!model_matches(c.model, straight, len), "%s: the RNG state made no difference", kind);
    teardown(&c);
    /* ...nor with the weights and RNG but a fresh optimizer */
    c = setup(dev, kind, 5);
    CHECK_OK(dev, clg_checkpoint_load(c.model, NULL, ckpt, NULL, NULL));
    for (int s = K_STEPS; s < N_STEPS; s++) train_step(dev, &c, s);
    CHECK_MSG(!model_matches(c.model, straight, len), "%s: the optimizer state made no difference", kind);
    teardown(&c);
    /* ...nor, in mixed precision, with a fresh loss scaler */
    if (!strcmp(kind, "mixed")) {
        c = setup(dev, kind, 5);
        CHECK_OK(dev, clg_checkpoint_load(c.model, c.opt, ckpt, NULL, NULL));
        for (int s = K_STEPS; s < N_STEPS; s++) train_step(dev, &c, s);
        CHECK_MSG(!model_matches(c.model, straight, len), "mixed: the loss scaler's state made no difference");
        teardown(&c);
    }
    free(straight);
    free(ckpt);
    free(out);
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "resume")) return resume_main(argv[2], argv[3], argv[4]);
    clg_device *dev = check_open_device();
    char *dir = io_tmpdir("resume");
    test_resume(dev, "adam", dir);
    test_resume(dev, "sgd", dir);
    test_resume(dev, "mixed", dir);
    io_rmdir(dir);
    clg_device_close(dev);
    return check_report("test_io_resume");
}
