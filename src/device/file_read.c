/* file_read.c: reading a regular file whole, without blocking (file_read.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_read.h"

static clg_status why_fail(char *why, size_t whylen, clg_status st, const char *msg)
{
    if (why && whylen) snprintf(why, whylen, "%s", msg);
    return st;
}

clg_status clg__file_read(const char *path, size_t max, unsigned char **data, size_t *len, char *why, size_t whylen)
{
    *data = NULL;
    *len = 0;
    if (!path) return why_fail(why, whylen, CLG_ERR_INVALID_ARGUMENT, "no file name given");
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);   /* a FIFO must not block the open */
    if (fd < 0) {
        /* a symlink loop is not "no such file" */
        return why_fail(why, whylen, CLG_ERR_IO, errno == ELOOP ? "a loop of symbolic links" : strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        bool dir = S_ISDIR(sb.st_mode), fifo = S_ISFIFO(sb.st_mode);
        close(fd);
        return why_fail(why, whylen, CLG_ERR_IO, dir ? "is a directory" : fifo ? "not a regular file (a FIFO)"
                                                                                : "not a regular file");
    }
    if ((uint64_t)sb.st_size > max) {
        close(fd);
        char msg[96];
        snprintf(msg, sizeof msg, "%lld bytes, over the %zu-byte limit", (long long)sb.st_size, max);
        return why_fail(why, whylen, CLG_ERR_IO, msg);
    }
    size_t cap = (size_t)sb.st_size, n = 0;
    unsigned char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return why_fail(why, whylen, CLG_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    bool failed = false;
    while (n < cap) {   /* up to the size it had when opened: a growing file cannot make this endless */
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            failed = r < 0;
            break;
        }
        n += (size_t)r;
    }
    close(fd);
    if (failed) {
        free(buf);
        return why_fail(why, whylen, CLG_ERR_IO, "read error");
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return CLG_OK;
}
