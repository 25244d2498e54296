/* cli_common.c: errors, numbers, devices, checkpoints and the layer table for the clgrad
 * subcommands. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int cli_fail(const char *cmd, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "clgrad %s: ", cmd);
    for (const char *p = msg; *p; p++) {   /* one line: a script reads the first */
        if (*p == '\n') {
            if (p[1]) fputs("; ", stderr);
        } else if ((unsigned char)*p >= 0x20 || *p == '\t') {
            fputc(*p, stderr);
        }
    }
    fputc('\n', stderr);
    return 1;
}

int cli_usage_error(const char *cmd, const char *what)
{
    cli_fail(cmd, "%s (try clgrad %s --help)", what, cmd);
    return 2;
}

int cli_bad_option(const char *cmd, int c, char **argv)
{
    char what[300];
    const char *arg = optind > 0 ? argv[optind - 1] : "?";
    if (c == ':') snprintf(what, sizeof what, "option %.200s needs a value", arg);
    else if (optopt) snprintf(what, sizeof what, "unknown option -%c", optopt);
    else snprintf(what, sizeof what, "unknown option %.200s", arg);
    return cli_usage_error(cmd, what);
}

bool cli_plot_path_ok(const char *path)
{
    return *path && !strpbrk(path, "'\n\r");
}

bool cli_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool cli_real(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = s ? strtod(s, &end) : 0;
    if (!s || !*s || *end || errno || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

clg_device *cli_open_device(const char *cmd, const char *spec, bool announce)
{
    clg_device *dev;
    if (clg_device_open(spec, &dev) != CLG_OK) {
        cli_fail(cmd, "%s", dev ? clg_device_error(dev) : "out of host memory");
        clg_device_close(dev);
        return NULL;
    }
    const clg_device_info *in = clg_device_get_info(dev);
    if (announce) printf("device: %s (%s, driver %s)\n", in->name, in->platform, in->driver);
    return dev;
}

static void print_shape(int ndim, const int64_t *s, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && n < len; i++) n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)s[i]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

void cli_print_layers(const clg_model *m)
{
    int64_t in[CLG_MAX_DIMS];
    char shape[96];
    print_shape(clg_model_input(m, in), in, shape, sizeof shape);
    printf("model: input %s%s, %d layers, %lld parameters\n", shape, clg_model_takes_tokens(m) ? " tokens" : "",
           clg_model_layer_count(m),
           (long long)clg_model_param_count(m));
    printf("  %-12s %-18s %-16s %12s  %s\n", "layer", "type", "output", "parameters", "settings");
    for (int i = 0; i < clg_model_layer_count(m); i++) {
        clg_model_layer_info l;
        clg_model_layer(m, i, &l);
        print_shape(l.ndim, l.shape, shape, sizeof shape);
        printf("  %-12s %-18s %-16s %12lld  %s\n", l.name, l.type, shape, (long long)l.params, l.settings);
    }
}

int cli_checkpoint_model(const char *cmd, const char *path, clg_model **desc, clg_train_state *ts)
{
    char err[1024], name[1100];
    char *json = NULL;
    *desc = NULL;
    if (clg_checkpoint_info(path, ts, &json, err, sizeof err) != CLG_OK)
        return cli_fail(cmd, "%s%s", err, strstr(err, "begins with text")
                                             ? " (a model file? clgrad train MODEL makes a checkpoint of it)" : "");
    if (!json) return cli_fail(cmd, "%s: no model description inside (not a checkpoint of clgrad train)", path);
    snprintf(name, sizeof name, "%s (its model description)", path);
    clg_status st = clg_model_parse(json, strlen(json), name, desc, err, sizeof err);
    free(json);
    return st == CLG_OK ? 0 : cli_fail(cmd, "%s", err);
}

int cli_load_checkpoint(const char *cmd, const char *path, clg_device *dev, clg_model **desc, clg_module **net)
{
    *net = NULL;
    int rc = cli_checkpoint_model(cmd, path, desc, NULL);
    if (rc) return rc;
    *net = clg_model_build(*desc, dev);
    if (!*net || clg_checkpoint_load(*net, NULL, path, NULL, NULL) != CLG_OK) return cli_fail(cmd, "%s", clg_device_error(dev));
    return 0;
}

int cli_check_writable(const char *cmd, const char *opt, const char *path)
{
    if (!path) return 0;
    struct stat sb;
    if (stat(path, &sb) == 0) {   /* it exists: a writable regular file (a FIFO would block the write) */
        if (S_ISDIR(sb.st_mode)) return cli_fail(cmd, "%s %s: is a directory", opt, path);
        if (!S_ISREG(sb.st_mode)) return cli_fail(cmd, "%s %s: not a regular file", opt, path);
        if (access(path, W_OK) != 0) return cli_fail(cmd, "%s %s: cannot write it (%s)", opt, path, strerror(errno));
    }
    /* Files are written beside their final name and renamed into place: the folder
     * must take a new file. */
    char probe[4200];
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) : 1;
    if (snprintf(probe, sizeof probe, "%.*s/.clgrad-probe-XXXXXX", dirlen ? dirlen : 1, slash ? (dirlen ? path : "/") : ".") >=
        (int)sizeof probe)
        return cli_fail(cmd, "%s %s: the path is too long", opt, path);
    int fd = mkstemp(probe);
    if (fd < 0)
        return cli_fail(cmd, "%s %s: cannot write in %.*s (%s)", opt, path, slash ? (dirlen ? dirlen : 1) : 1,
                        slash ? (dirlen ? path : "/") : ".", strerror(errno));
    close(fd);
    unlink(probe);
    return 0;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_eval_progress_fn(int64_t done, int64_t total, void *user)
{
    cli_eval_progress *p = user;
    double t = wall_now();
    if (!p->start) p->start = p->last = t;
    if (t - p->last < 5 || done == total) return;
    clg_device_finish(p->dev);   /* what is done, not what is queued */
    t = wall_now();
    p->last = t;
    printf("  %s: %lld of %lld windows (%.0f%%), %.0f s so far, about %.0f s to go\n", p->what, (long long)done,
           (long long)total, 100.0 * (double)done / (double)total, t - p->start,
           (t - p->start) * (double)(total - done) / (double)done);
    fflush(stdout);
}

int cli_lock_output(const char *cmd, const char *opt, const char *path)
{
    char lock[4200];
    if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock)
        return cli_fail(cmd, "%s %s: the path is too long", opt, path), -1;
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return cli_fail(cmd, "%s %s: cannot make its lock %s (%s)", opt, path, lock, strerror(errno)), -1;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(fd);
        return cli_fail(cmd, "%s %s: another run (process %s) is writing it: give each run its own", opt, path,
                        pid[0] ? pid : "?"), -1;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) { /* the pid is for the message only */ }
    return fd;
}

void cli_unlock_output(int fd, const char *path)
{
    if (fd < 0) return;
    char lock[4200];
    if (snprintf(lock, sizeof lock, "%s.lock", path) < (int)sizeof lock) unlink(lock);
    close(fd);
}