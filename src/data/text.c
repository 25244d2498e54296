/* text.c: byte-level text for character language models: a corpus read whole (a file,
 * or a directory's plain files joined), and its windows for truncated backpropagation
 * through time: `streams` parallel contiguous streams, each cut into windows of the
 * model's sequence length, so that window w + 1 of a stream continues window w and a
 * recurrent model's state can be carried from one to the next. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_impl.h"
#include "tensor_impl.h"

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A directory's plain files: regular (not links), not strfile's ".dat" indexes. */
static bool plain_file(const char *dir, const char *name, char *path, size_t len)
{
    if (name[0] == '.') return false;
    size_t n = strlen(name);
    if (n > 4 && !strcmp(name + n - 4, ".dat")) return false;
    if ((size_t)snprintf(path, len, "%s/%s", dir, name) >= len) return false;
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Names of dir's plain files, sorted; *n of them. */
static char **list_dir(const char *dir, int *n, char *err, size_t errlen)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        clg__data_fail(err, errlen, CLG_ERR_IO, dir, "cannot open the directory");
        return NULL;
    }
    char **names = NULL, path[4096];
    int cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!plain_file(dir, e->d_name, path, sizeof path)) continue;
        if (*n == cap) {
            char **more = realloc(names, sizeof *names * (size_t)(cap = cap ? 2 * cap : 64));
            if (!more) break;
            names = more;
        }
        if (!(names[*n] = strdup(e->d_name))) break;
        (*n)++;
    }
    closedir(d);
    if (names) qsort(names, (size_t)*n, sizeof *names, by_name);
    return names;
}

static clg_status append(clg_text *t, const char *path, size_t *cap, char *err, size_t errlen)
{
    unsigned char *data;
    size_t len;
    clg_status st = clg__read_file(path, &data, &len, err, errlen);
    if (st != CLG_OK) return st;
    if (t->len + len > *cap) {
        size_t want = (t->len + len) * 2;
        uint8_t *more = realloc(t->bytes, want ? want : 1);
        if (!more) {
            free(data);
            return clg__data_fail(err, errlen, CLG_ERR_OUT_OF_MEMORY, path, "out of host memory");
        }
        t->bytes = more;
        *cap = want;
    }
    if (len) memcpy(t->bytes + t->len, data, len);
    t->len += len;
    t->files++;
    free(data);
    return CLG_OK;
}

/* One file mapped privately (copy on write): its pages are read as the windows reach
 * them, so a corpus larger than memory trains and evaluates. Regular files only (a FIFO
 * must not block the open). */
static clg_status map_file(clg_text *t, const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return clg__data_fail(err, errlen, CLG_ERR_IO, path, "cannot open: %s", strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return clg__data_fail(err, errlen, CLG_ERR_IO, path, "not a regular file");
    }
    t->files = 1;
    t->len = (size_t)sb.st_size;
    if (t->len > 0) {
        void *p = mmap(NULL, t->len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            *t = (clg_text){0};
            return clg__data_fail(err, errlen, CLG_ERR_IO, path, "cannot map it: %s", strerror(errno));
        }
        posix_madvise(p, t->len, POSIX_MADV_SEQUENTIAL);
        t->bytes = p;
        t->mapped = true;
    }
    close(fd);
    return CLG_OK;
}

clg_status clg_text_read(const char *path, clg_text *out, char *err, size_t errlen)
{
    if (!out) return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, path, "no clg_text to fill");
    *out = (clg_text){0};
    struct stat st;
    if (!path || stat(path, &st) != 0)
        return clg__data_fail(err, errlen, CLG_ERR_IO, path ? path : "(null)", "%s",
                              !path || errno == ENOENT ? "no such file or directory"
                              : errno == ELOOP         ? "a loop of symbolic links"
                                                       : strerror(errno));
    size_t cap = 0;
    if (!S_ISDIR(st.st_mode)) return map_file(out, path, err, errlen);
    int n;
    char **names = list_dir(path, &n, err, errlen), file[4096];
    clg_status s = names || n == 0 ? CLG_OK : CLG_ERR_IO;
    for (int i = 0; s == CLG_OK && i < n; i++) {
        snprintf(file, sizeof file, "%s/%s", path, names[i]);
        s = append(out, file, &cap, err, errlen);
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (s == CLG_OK && out->len < 2)
        s = clg__data_fail(err, errlen, CLG_ERR_FORMAT, path, "%d plain files with %zu bytes: no text to learn from",
                           out->files, out->len);
    if (s != CLG_OK) clg_text_free(out);
    return s;
}

void clg_text_free(clg_text *t)
{
    if (!t) return;
    if (t->mapped) munmap(t->bytes, t->len);
    else free(t->bytes);
    *t = (clg_text){0};
}

/* Each stream's length: the bytes split evenly, the remainder dropped. */
static int64_t part_of(size_t len, int streams) { return streams > 0 ? (int64_t)(len / (size_t)streams) : 0; }

int64_t clg_text_windows(size_t len, int streams, int window, bool tail)
{
    int64_t part = part_of(len, streams);
    if (window <= 0 || part < 2) return 0;
    return tail ? (part - 1 + window - 1) / window : (part - 1) / window;
}

clg_status clg_text_window(clg_device *dev, const uint8_t *bytes, size_t len, int streams, int window, int64_t w,
                           clg_tensor **x, clg_tensor **y)
{
    if (!dev) return CLG_ERR_INVALID_ARGUMENT;
    *x = *y = NULL;
    int64_t part = part_of(len, streams), n = clg_text_windows(len, streams, window, true);
    if (!bytes || w < 0 || w >= n)
        return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "clg_text_window: window %lld of %lld (%zu bytes, %d streams "
                         "of windows of %d)", (long long)w, (long long)n, len, streams, window);
    int64_t start = w * window, T = part - 1 - start < window ? part - 1 - start : window;
    /* inputs and targets in one upload: [2, streams, T] */
    int32_t *host = malloc(sizeof *host * (size_t)(2 * streams * T));
    if (!host) return clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_text_window: out of host memory");
    for (int s = 0; s < streams; s++)
        for (int64_t t = 0; t < T; t++) {
            const uint8_t *p = bytes + s * part + start + t;
            host[s * T + t] = p[0];
            host[(streams + s) * T + t] = p[1];
        }
    clg_tensor *both = clg_tensor_from_host(dev, CLG_I32, CLG_SHAPE(2, streams, T), host);
    free(host);
    if (!both) return dev->status;
    *x = clg_squeeze(clg_narrow(both, 0, 0, 1), 0);
    *y = clg_squeeze(clg_narrow(both, 0, 1, 1), 0);
    return *x && *y ? CLG_OK : dev->status;
}
