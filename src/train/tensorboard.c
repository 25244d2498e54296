/* tensorboard.c: the event file of clgrad/tensorboard.h. Each record is one write(2)
 * of its whole framing, with no buffer of ours in between, so what a call returned
 * CLG_OK for is in the file even if the process dies next (TensorBoard's own writers
 * flush on a timer instead, and a crash loses the last seconds). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clgrad/tensorboard.h"
#include "last_error.h"
#include "tb_record.h"

struct clg_tensorboard {
    int fd;
    bool broken;          /* a write failed: the file may end in a torn record */
    char *path;
    char err[1024];
};

static double wall_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Record a failure in the writer and the thread's last error; returns status. */
__attribute__((format(printf, 3, 4))) static clg_status fail(clg_tensorboard *tb, clg_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tb->err, sizeof tb->err, fmt, ap);
    va_end(ap);
    return clg__last_error_set(st, "%s", tb->err);
}

/* mkdir -p: every missing directory of path, parents first. */
static int make_dirs(const char *path)
{
    char *p = strdup(path);
    if (!p) return ENOMEM;
    int rc = 0;
    for (char *s = p + 1; !rc; s++) {
        bool end = *s == '\0';
        if (*s != '/' && !end) continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) rc = errno;
        if (end) break;
        *s = '/';
    }
    struct stat sb;
    if (!rc && (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))) rc = ENOTDIR;
    free(p);
    return rc;
}

/* events.out.tfevents.<seconds>.<host>.<pid>.<n>: TensorBoard lists a directory's files
 * of that prefix in name order; n keeps two writers of one process and second apart. */
static char *event_file_path(const char *dir, int *fd)
{
    static atomic_int counter;
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0] || strchr(host, '/')) snprintf(host, sizeof host, "localhost");
    for (int tries = 0; tries < 100; tries++) {
        int n = atomic_fetch_add(&counter, 1);
        size_t len = strlen(dir) + strlen(host) + 96;
        char *path = malloc(len);
        if (!path) return NULL;
        snprintf(path, len, "%s/events.out.tfevents.%lld.%s.%ld.%d", dir, (long long)time(NULL), host, (long)getpid(), n);
        *fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (*fd >= 0 || errno != EEXIST) return path;
        free(path);
    }
    errno = EEXIST;
    return NULL;
}

static clg_status write_event(clg_tensorboard *tb, const char *what, const clg__tb_event *e)
{
    if (tb->broken) return fail(tb, CLG_ERR_IO, "%s: %s: an earlier write failed; no more records", what, tb->path);
    clg__tb_buf b = {0};
    if (!clg__tb_record(e, &b)) {
        clg__tb_buf_free(&b);
        return fail(tb, CLG_ERR_OUT_OF_MEMORY, "%s: %s: out of host memory", what, tb->path);
    }
    size_t done = 0;
    while (done < b.len) {
        ssize_t n = write(tb->fd, b.p + done, b.len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += (size_t)n;
    }
    int e_no = errno;
    bool whole = done == b.len;
    clg__tb_buf_free(&b);
    if (whole) return CLG_OK;
    tb->broken = true;
    return fail(tb, CLG_ERR_IO, "%s: %s: write failed (%s)", what, tb->path, strerror(e_no));
}

clg_status clg_tensorboard_open(const char *logdir, clg_tensorboard **out, char *err, size_t errlen)
{
    if (out) *out = NULL;
    if (!logdir || !logdir[0] || !out)
        return clg__report(err, errlen, CLG_ERR_INVALID_ARGUMENT, "clg_tensorboard_open: %s", !out ? "out is NULL" : "no directory given");
    int rc = make_dirs(logdir);
    if (rc)
        return clg__report(err, errlen, CLG_ERR_IO, "clg_tensorboard_open: %s: cannot create the directory (%s)", logdir,
                           strerror(rc));
    clg_tensorboard *tb = calloc(1, sizeof *tb);
    if (!tb) return clg__report(err, errlen, CLG_ERR_OUT_OF_MEMORY, "clg_tensorboard_open: out of host memory");
    tb->fd = -1;
    tb->path = event_file_path(logdir, &tb->fd);
    if (!tb->path || tb->fd < 0) {
        int e = errno;
        clg_status st = clg__report(err, errlen, tb->path ? CLG_ERR_IO : CLG_ERR_OUT_OF_MEMORY,
                                    "clg_tensorboard_open: %s: cannot create the event file (%s)", tb->path ? tb->path : logdir,
                                    strerror(e));
        free(tb->path);
        free(tb);
        return st;
    }
    clg_status st = write_event(tb, "clg_tensorboard_open", &(clg__tb_event){.wall_time = wall_time(), .file_version = "brain.Event:2"});
    if (st != CLG_OK) {   /* no event file rather than one without its version record */
        char msg[sizeof tb->err];
        snprintf(msg, sizeof msg, "%s", tb->err);
        unlink(tb->path);
        clg_tensorboard_close(tb);
        return clg__report(err, errlen, st, "%s", msg);
    }
    *out = tb;
    return CLG_OK;
}

clg_status clg_tensorboard_scalars(clg_tensorboard *tb, int64_t step, int n, const char *const *tags, const double *values)
{
    if (!tb) return clg__last_error_set(CLG_ERR_INVALID_ARGUMENT, "clg_tensorboard_scalars: the writer is NULL");
    if (n < 1 || !tags || !values) return fail(tb, CLG_ERR_INVALID_ARGUMENT, "clg_tensorboard_scalars: no values (n = %d)", n);
    float *f = malloc((size_t)n * sizeof *f);
    if (!f) return fail(tb, CLG_ERR_OUT_OF_MEMORY, "clg_tensorboard_scalars: out of host memory");
    clg_status st = CLG_OK;
    for (int i = 0; i < n && st == CLG_OK; i++) {
        if (!tags[i] || !tags[i][0]) st = fail(tb, CLG_ERR_INVALID_ARGUMENT, "clg_tensorboard_scalars: value %d has no tag", i);
        f[i] = (float)values[i];
    }
    if (st == CLG_OK)
        st = write_event(tb, "clg_tensorboard_scalars",
                         &(clg__tb_event){.wall_time = wall_time(), .step = step, .n = n, .tags = tags, .values = f});
    free(f);
    return st;
}

clg_status clg_tensorboard_scalar(clg_tensorboard *tb, const char *tag, int64_t step, double value)
{
    return clg_tensorboard_scalars(tb, step, 1, &tag, &value);
}

clg_status clg_tensorboard_metrics(clg_tensorboard *tb, const clg_metrics_row *row)
{
    if (!row) return tb ? fail(tb, CLG_ERR_INVALID_ARGUMENT, "clg_tensorboard_metrics: the row is NULL")
                        : clg__last_error_set(CLG_ERR_INVALID_ARGUMENT, "clg_tensorboard_metrics: the row is NULL");
    const char *names[] = {"epoch/epoch", "epoch/train_loss", "epoch/train_acc", "epoch/test_loss",
                           "epoch/test_acc", "epoch/images_per_sec", "epoch/lr"};
    double all[] = {row->epoch, row->train_loss, row->train_acc, row->test_loss, row->test_acc, row->images_per_sec, row->lr};
    const char *tags[7];
    double values[7];
    int n = 0;
    for (int i = 0; i < 7; i++)
        if (!isnan(all[i])) tags[n] = names[i], values[n++] = all[i];
    return clg_tensorboard_scalars(tb, row->step, n, tags, values);
}

clg_status clg_tensorboard_restart(clg_tensorboard *tb, int64_t step)
{
    if (!tb) return clg__last_error_set(CLG_ERR_INVALID_ARGUMENT, "clg_tensorboard_restart: the writer is NULL");
    return write_event(tb, "clg_tensorboard_restart",
                       &(clg__tb_event){.wall_time = wall_time(), .step = step, .session_start = true});
}

const char *clg_tensorboard_path(const clg_tensorboard *tb) { return tb ? tb->path : ""; }

const char *clg_tensorboard_error(const clg_tensorboard *tb) { return tb ? tb->err : ""; }

clg_status clg_tensorboard_close(clg_tensorboard *tb)
{
    if (!tb) return CLG_OK;
    clg_status st = CLG_OK;
    if (tb->fd >= 0 && close(tb->fd) != 0)
        st = clg__last_error_set(CLG_ERR_IO, "clg_tensorboard_close: %s: %s", tb->path, strerror(errno));
    free(tb->path);
    free(tb);
    return st;
}
