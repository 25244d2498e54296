/* test_io_kill: a process killed at any moment while saving leaves the previous
 * checkpoint loadable. A child process (this binary run again with "saver ...") saves
 * a 24 MB training checkpoint over and over, each generation g with every value equal
 * to g; the parent SIGKILLs it after 20 different delays, and after each kill the file
 * must open, validate, hold one whole generation (never a mix, never older than the
 * last one seen) and load into a model and optimizer. The delays span about two and a
 * half saves as timed here (at least 250 ms), so that kills land in every phase of a
 * save and some saves complete on a slow device as on a fast one. */
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "io/io_util.h"

extern char **environ;

enum { KILLS = 20, IN = 1024, OUT = 2048 };

typedef struct run {
    clg_module *model;
    clg_optimizer *opt;
} run;

static run setup(clg_device *dev)
{
    run r = {clg_nn_sequential(dev, 1, (clg_module *[]){clg_nn_linear(dev, IN, OUT, true)}), NULL};
    clg_tensor *p[2];
    int n = clg_module_parameters(r.model, p, 2, true);
    r.opt = clg_adam_new(n, p, &(clg_adam_options){.lr = 0.1});
    if (!r.model || !r.opt || clg_optimizer_init_state(r.opt) != CLG_OK) {
        fprintf(stderr, "setup: %s\n", clg_device_error(dev));
        exit(1);
    }
    return r;
}

/* Generation g: every parameter and state value g, step g. */
static clg_status save_generation(clg_device *dev, run *r, int64_t g, const char *path)
{
    clg_tensor *p[2], *s[3];
    int n = clg_module_parameters(r->model, p, 2, false);
    clg_no_grad_begin(dev);
    for (int i = 0; i < n; i++) {
        clg_fill_(p[i], (double)g);
        int ns = clg_optimizer_state(r->opt, i, NULL, s, 3);
        for (int j = 0; j < ns; j++) clg_fill_(s[j], (double)g);
    }
    clg_no_grad_end(dev);
    clg_optimizer_set_steps(r->opt, g);
    clg_train_state ts = {.step = g, .epoch = g};
    return clg_checkpoint_save(r->model, r->opt, &ts, "{\"model\": \"kill test\"}", path);
}

static int saver_main(const char *path, const char *ready, int64_t first)
{
    clg_device *dev = check_open_device();
    run r = setup(dev);
    io_write_file(ready, "", 0);   /* the parent's clock starts here */
    for (int64_t g = first;; g++)
        if (save_generation(dev, &r, g, path) != CLG_OK) {
            fprintf(stderr, "saver: %s\n", clg_device_error(dev));
            return 1;
        }
}

/* ---- the parent ------------------------------------------------------------------------------------ */

/* The file is whole: it validates, every value of every tensor is its generation. */
static bool check_whole(const char *path, int64_t *gen)
{
    char err[512];
    clg_train_state ts;
    if (clg_checkpoint_info(path, &ts, NULL, err, sizeof err) != CLG_OK) {
        fprintf(stderr, "after a kill: %s\n", err);
        return false;
    }
    clg_safetensors *st;
    if (clg_safetensors_open(path, &st, err, sizeof err) != CLG_OK) return false;
    bool ok = clg_safetensors_count(st) == 2 + 2 * 3;   /* weight, bias; exp_avg, exp_avg_sq, step of each */
    for (int i = 0; ok && i < clg_safetensors_count(st); i++) {
        const clg_safetensors_entry *t = clg_safetensors_at(st, i);
        for (int64_t k = 0; ok && k < t->numel; k++) {
            double v;
            if (t->dtype == CLG_ELEM_I64) {
                int64_t x;
                memcpy(&x, (const unsigned char *)t->data + 8 * k, 8);
                v = (double)x;
            } else {
                float x;
                memcpy(&x, (const unsigned char *)t->data + 4 * k, 4);
                v = x;
            }
            ok = v == (double)ts.step;
        }
        if (!ok) fprintf(stderr, "after a kill: %s mixes generations (step %lld)\n", t->name, (long long)ts.step);
    }
    clg_safetensors_close(st);
    *gen = ts.step;
    return ok;
}

static int remove_temporaries(const char *dir)
{
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "n=$(ls '%s' | grep -c '\\.tmp\\.'); rm -f '%s'/*.tmp.*; exit $n", dir, dir);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {}
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "saver")) return saver_main(argv[2], argv[3], atoll(argv[4]));
    clg_device *dev = check_open_device();
    char *dir = io_tmpdir("kill");
    char *path = io_path(dir, "run.ckpt"), *ready = io_path(dir, "ready");
    run r = setup(dev);
    CHECK_OK(dev, save_generation(dev, &r, 0, path));
    double t0 = now_ms();
    CHECK_OK(dev, save_generation(dev, &r, 0, path));   /* warm: as the saver's saves after its first */
    double save_ms = now_ms() - t0, span = 2.5 * save_ms > 250 ? 2.5 * save_ms : 250;
    int64_t last = 0;
    int interrupted = 0;
    /* After KILLS kills, a few more with the longest delay while no save has completed:
     * the device may be slower now than when the save was timed (a loaded machine). */
    for (int k = 0; k < KILLS || (last == 0 && k < KILLS + 5); k++) {
        remove(ready);
        char first[32];
        snprintf(first, sizeof first, "%lld", (long long)last + 1);
        char *args[] = {"test_io_kill", "saver", path, ready, first, NULL};
        pid_t pid;
        if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ) != 0) {
            CHECK_MSG(0, "cannot start the saver");
            break;
        }
        struct stat sb;
        for (int w = 0; w < 60000 && stat(ready, &sb) != 0; w++) sleep_ms(1);
        /* 0 to span, spread over the phases of a save (header, data, fsync, rename) */
        sleep_ms(k < KILLS ? (long)(span * (k * 37 % 251) / 250) : (long)(2 * span));
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        CHECK_MSG(WIFSIGNALED(status), "kill %d: the saver had already stopped (%d)", k, status);
        int64_t gen = -1;
        CHECK_MSG(check_whole(path, &gen), "kill %d: the checkpoint is not whole", k);
        CHECK_MSG(gen >= last, "kill %d: generation %lld after %lld", k, (long long)gen, (long long)last);
        CHECK_MSG(clg_checkpoint_load(r.model, r.opt, path, NULL, NULL) == CLG_OK, "kill %d: %s", k,
                  clg_device_error(dev));
        last = gen;
        interrupted += remove_temporaries(dir) > 0;
    }
    printf("kills over 0..%.0f ms (a save took %.0f ms): %d of them mid-save; the last whole generation was %lld\n",
           span, save_ms, interrupted, (long long)last);
    /* the test proved something only if kills landed in saves, and saves completed */
    CHECK_MSG(interrupted > 0, "no kill landed during a save");
    CHECK_MSG(last > 0, "no save of the saver ever completed");
    /* The next save removes what killed saves left (temporaries of a process that is
     * gone), not a live writer's. */
    pid_t gone = fork();
    if (gone == 0) _exit(0);
    waitpid(gone, NULL, 0);
    char stale[4200], live[4200];
    snprintf(stale, sizeof stale, "%s.tmp.%ld.deadbeef0", path, (long)gone);
    snprintf(live, sizeof live, "%s.tmp.%ld.cafe0", path, (long)getppid());   /* a process that is alive */
    io_write_file(stale, "x", 1);
    io_write_file(live, "x", 1);
    CHECK_OK(dev, save_generation(dev, &r, last + 1, path));
    struct stat sb;
    CHECK_MSG(stat(stale, &sb) != 0, "a dead writer's temporary %s was left", stale);
    CHECK_MSG(stat(live, &sb) == 0, "a live writer's temporary %s was removed", live);
    unlink(live);
    clg_optimizer_free(r.opt);
    clg_module_free(r.model);
    free(path);
    free(ready);
    io_rmdir(dir);
    clg_device_close(dev);
    return check_report("test_io_kill");
}
