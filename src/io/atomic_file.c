/* atomic_file.c: replacing a file so that, whenever the process dies, the path holds
 * either the old contents or the new, whole: write a temporary in the same directory
 * (rename is atomic only within one file system), fsync it (else the rename can reach
 * the disk before the data), rename it over the target, fsync the directory (else the
 * rename itself can be lost on power failure). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io_impl.h"

/* "<path>.tmp.<pid>.<nanoseconds>": unique among processes and among attempts, so
 * that two writers never share a temporary, with no counter kept anywhere. */
static char *temp_name(const char *path, unsigned attempt)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    size_t n = strlen(path) + 64;
    char *tmp = malloc(n);
    if (tmp)
        snprintf(tmp, n, "%s.tmp.%ld.%lx%x", path, (long)getpid(),
                 (unsigned long)ts.tv_sec * 1000000000ul + (unsigned long)ts.tv_nsec, attempt);
    return tmp;
}

/* Temporaries of earlier saves of `path` whose process is gone (killed before its
 * rename) are removed: "<path>.tmp.<pid>.<...>" with no process <pid>. Another live
 * writer's are left alone. Best effort: a failure here fails nothing. */
static void remove_stale(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    char *dir = malloc(dlen + 2), prefix[1100];
    if (!dir) return;
    if (slash) memcpy(dir, path, dlen ? dlen : 1), dir[dlen ? dlen : 1] = 0;
    else strcpy(dir, ".");
    int pl = snprintf(prefix, sizeof prefix, "%s.tmp.", base);
    DIR *d = pl > 0 && (size_t)pl < sizeof prefix ? opendir(dir) : NULL;
    for (struct dirent *ent; d && (ent = readdir(d)) != NULL;) {
        if (strncmp(ent->d_name, prefix, (size_t)pl)) continue;
        char *end;
        long pid = strtol(ent->d_name + pl, &end, 10);
        if (end == ent->d_name + pl || *end != '.' || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;   /* alive, or not ours to judge */
        size_t n = strlen(dir) + strlen(ent->d_name) + 2;
        char *stale = malloc(n);
        if (stale) {
            snprintf(stale, n, "%s/%s", dir, ent->d_name);
            unlink(stale);
            free(stale);
        }
    }
    if (d) closedir(d);
    free(dir);
}

clg_status clg__atomic_open(clg__atomic_file *af, const char *path, const clg__io_err *e)
{
    memset(af, 0, sizeof *af);
    af->path = path;
    remove_stale(path);
    for (unsigned attempt = 0; attempt < 16; attempt++) {
        af->tmp = temp_name(path, attempt);
        if (!af->tmp) return clg__io_fail(e, CLG_ERR_OUT_OF_MEMORY, "out of host memory");
        /* 0666: the umask applies, as for any file the program creates */
        int fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            af->f = fdopen(fd, "wb");
            if (af->f) return CLG_OK;
            int saved = errno;
            close(fd);
            unlink(af->tmp);
            free(af->tmp);
            af->tmp = NULL;
            return clg__io_fail(e, CLG_ERR_IO, "cannot open a stream: %s", strerror(saved));
        }
        int saved = errno;
        free(af->tmp);
        af->tmp = NULL;
        if (saved != EEXIST)
            return clg__io_fail(e, CLG_ERR_IO, "cannot create a temporary file beside it: %s", strerror(saved));
    }
    return clg__io_fail(e, CLG_ERR_IO, "cannot create a temporary file beside it: every name tried exists");
}

void clg__atomic_write(clg__atomic_file *af, const void *data, size_t len)
{
    if (af->failed || len == 0) return;
    if (fwrite(data, 1, len, af->f) != len) {
        af->failed = true;
        af->saved_errno = errno;
    }
}

void clg__atomic_abort(clg__atomic_file *af)
{
    if (af->f) fclose(af->f);
    if (af->tmp) {
        unlink(af->tmp);
        free(af->tmp);
    }
    af->f = NULL;
    af->tmp = NULL;
}

/* fsync the directory holding path, so that the rename is on disk. File systems that
 * cannot sync a directory (EINVAL) make the rename durable by themselves. */
static int sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir) return ENOMEM;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0) return errno;
    int rc = fsync(fd) == 0 || errno == EINVAL ? 0 : errno;
    close(fd);
    return rc;
}

clg_status clg__atomic_commit(clg__atomic_file *af, const clg__io_err *e)
{
    const char *step = "write";
    int err = af->failed ? (af->saved_errno ? af->saved_errno : -1) : 0;   /* -1: short write, no errno */
    if (!err && fflush(af->f) != 0) { step = "flush"; err = errno; }
    if (!err && fsync(fileno(af->f)) != 0) { step = "fsync"; err = errno; }
    int closed = fclose(af->f);
    af->f = NULL;
    if (!err && closed != 0) { step = "close"; err = errno; }
    if (!err && rename(af->tmp, af->path) != 0) { step = "rename"; err = errno; }
    if (err) {
        unlink(af->tmp);
        free(af->tmp);
        af->tmp = NULL;
        return clg__io_fail(e, CLG_ERR_IO, "%s failed: %s (the previous file, if any, is unchanged)", step,
                            err > 0 ? strerror(err) : "short write");
    }
    free(af->tmp);
    af->tmp = NULL;
    err = sync_dir(af->path);
    if (err) return clg__io_fail(e, CLG_ERR_IO, "written, but syncing its directory failed: %s", strerror(err));
    return CLG_OK;
}
