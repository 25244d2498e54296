/* fileio.c: reading whole files, inflating gzip, and the readers' error messages. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "file_read.h"
#include "last_error.h"

#include "data_impl.h"

/* "<name>: <problem>" into the caller's buffer, if any, and the thread's last error
 * (clg_last_error), where every failure without a device is recorded. */
clg_status clg__data_fail(char *err, size_t errlen, clg_status status, const char *name, const char *fmt, ...)
{
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "%s: ", name ? name : "(memory)");
    if (n < 0 || (size_t)n >= sizeof msg) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return clg__last_error_set(status, "%s", msg);
}

clg_status clg__read_file(const char *path, unsigned char **data, size_t *len, char *err, size_t errlen)
{
    /* Regular files only, read to the size they had when opened: /dev/urandom grew the
     * buffer without end, and a FIFO blocked the open itself (file_read.h). */
    char why[256];
    clg_status st = clg__file_read(path, SIZE_MAX - 1, data, len, why, sizeof why);
    if (st == CLG_ERR_IO && !strncmp(why, "No such", 7)) return clg__data_fail(err, errlen, st, path, "cannot open: %s", why);
    return st ? clg__data_fail(err, errlen, st, path ? path : "(null)", "%s", why) : CLG_OK;
}

/* Grow *out to hold at least `need` bytes more than *used (plus a NUL). */
static int grow(unsigned char **out, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1 << 16;
    while (c < need) c *= 2;
    unsigned char *nb = realloc(*out, c + 1);
    if (!nb) return -1;
    *out = nb;
    *cap = c;
    return 0;
}

/* The fast path: libdeflate inflates in one call, 2-3x faster than zlib (Fashion-MNIST's
 * training images: about 0.1 s instead of 0.25 s of every start-up), into a buffer sized
 * by the gzip trailer's ISIZE (the inflated size mod 2^32). It succeeds only when the
 * whole input is one valid member of exactly that size (CRC checked); anything else
 * (a lying or wrapped ISIZE, damage, trailing bytes) goes to zlib, whose diagnostics
 * the readers report. */
static bool gunzip_fast(const unsigned char *in, size_t inlen, size_t max_out, unsigned char **out, size_t *outlen)
{
    if (inlen < 18) return false;   /* a gzip header and trailer */
    const unsigned char *t = in + inlen - 4;
    size_t size = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
    if (size > max_out) return false;
    unsigned char *buf = malloc(size + 1);
    struct libdeflate_decompressor *d = buf ? libdeflate_alloc_decompressor() : NULL;
    size_t used_in = 0, used_out = 0;
    bool ok = d && libdeflate_gzip_decompress_ex(d, in, inlen, buf, size, &used_in, &used_out) == LIBDEFLATE_SUCCESS &&
              used_in == inlen && used_out == size;
    libdeflate_free_decompressor(d);
    if (!ok) {
        free(buf);
        return false;
    }
    buf[size] = 0;
    *out = buf;
    *outlen = size;
    return true;
}

clg_status clg__gunzip(const unsigned char *in, size_t inlen, const char *name, size_t max_out,
                       unsigned char **out, size_t *outlen, char *err, size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    if (gunzip_fast(in, inlen, max_out, out, outlen)) return CLG_OK;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)   /* 16: a gzip wrapper, not zlib */
        return clg__data_fail(err, errlen, CLG_ERR_OUT_OF_MEMORY, name, "cannot start zlib");
    unsigned char *buf = NULL;
    size_t cap = 0, used = 0;
    clg_status st = CLG_OK;
    int zr = Z_OK;
    size_t fed = 0;
    while (zr != Z_STREAM_END) {
        if (zs.avail_in == 0 && fed < inlen) {   /* feed in pieces: avail_in is 32-bit */
            size_t piece = inlen - fed > (1u << 30) ? (1u << 30) : inlen - fed;
            zs.next_in = (unsigned char *)(uintptr_t)(in + fed);
            zs.avail_in = (uInt)piece;
            fed += piece;
        }
        if (used == max_out) {
            st = clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "gzip data inflates past %zu bytes", max_out);
            break;
        }
        if (grow(&buf, &cap, used + 1 > cap ? used + 1 : cap)) {
            st = clg__data_fail(err, errlen, CLG_ERR_OUT_OF_MEMORY, name, "out of memory inflating");
            break;
        }
        size_t room = cap - used;
        if (room > max_out - used) room = max_out - used;
        if (room > (1u << 30)) room = 1u << 30;
        zs.next_out = buf + used;
        zs.avail_out = (uInt)room;
        zr = inflate(&zs, Z_NO_FLUSH);
        used += room - zs.avail_out;
        if (zr == Z_BUF_ERROR && zs.avail_in == 0 && fed == inlen) {
            st = clg__data_fail(err, errlen, CLG_ERR_FORMAT, name,
                                "truncated gzip stream (ends after %zu compressed bytes)", inlen);
            break;
        }
        if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
            st = clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "bad gzip stream: %s",
                                zs.msg ? zs.msg : zError(zr));
            break;
        }
    }
    size_t rest = zs.avail_in + (inlen - fed);
    inflateEnd(&zs);
    if (!st && rest)
        st = clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "%zu bytes after the end of the gzip stream", rest);
    if (st) {
        free(buf);
        return st;
    }
    if (!buf && grow(&buf, &cap, 1))
        return clg__data_fail(err, errlen, CLG_ERR_OUT_OF_MEMORY, name, "out of memory inflating");
    buf[used] = 0;
    *out = buf;
    *outlen = used;
    return CLG_OK;
}

/* The first up to `want` inflated bytes of a gzip stream into head; how many (0 on
 * damage: the full inflate reports it). */
static size_t gunzip_head(const unsigned char *in, size_t inlen, unsigned char *head, size_t want)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return 0;
    zs.next_in = (unsigned char *)(uintptr_t)in;
    zs.avail_in = (uInt)(inlen > (1u << 30) ? (1u << 30) : inlen);
    zs.next_out = head;
    zs.avail_out = (uInt)want;
    int zr = Z_OK;
    while (zs.avail_out && (zr == Z_OK) && zs.avail_in) zr = inflate(&zs, Z_NO_FLUSH);
    size_t got = want - zs.avail_out;
    inflateEnd(&zs);
    return zr == Z_OK || zr == Z_STREAM_END || zr == Z_BUF_ERROR ? got : 0;
}

clg_status clg__read_file_gz(const char *path, clg__gz_promise promised, unsigned char **data, size_t *len, char *err,
                             size_t errlen)
{
    clg_status st = clg__read_file(path, data, len, err, errlen);
    if (st || *len < 2 || (*data)[0] != 0x1f || (*data)[1] != 0x8b) return st;
    unsigned char *raw = *data;
    size_t rawlen = *len;
    size_t max_out = CLG_GUNZIP_MAX;
    if (promised) {
        unsigned char head[CLG_GZ_HEAD];
        size_t n = gunzip_head(raw, rawlen, head, sizeof head), want = n ? promised(head, n) : 0;
        /* One byte past the promise: more is then an error of its own ("inflates past"). */
        if (want && want < CLG_GUNZIP_MAX) max_out = want + 1;
    }
    st = clg__gunzip(raw, rawlen, path, max_out, data, len, err, errlen);
    free(raw);
    return st;
}
