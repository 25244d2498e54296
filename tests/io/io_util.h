/* io_util.h: what the checkpoint tests share: a scratch directory, safetensors bytes
 * made by hand, and host copies of a model's values. */
#ifndef CLGRAD_TESTS_IO_UTIL_H
#define CLGRAD_TESTS_IO_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

/* A fresh directory under $TMPDIR (or /tmp) for this test's files; removed by
 * io_rmdir. */
static inline char *io_tmpdir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char *dir = malloc(4096);
    if (!dir) exit(1);
    snprintf(dir, 4096, "%s/clgrad-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    return dir;
}

static inline void io_rmdir(char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    free(dir);
}

/* The largest |got - want| of two float32 tensors of one size; infinity if they cannot
 * be compared. */
static inline double io_max_diff(clg_tensor *got, clg_tensor *want)
{
    int64_t n = got && want ? clg_tensor_numel(got) : 0;
    float *g = calloc((size_t)n + 1, 4), *w = calloc((size_t)n + 1, 4);
    double diff = INFINITY;
    if (g && w && n == clg_tensor_numel(want) && clg_tensor_to_host(got, g, (size_t)n * 4) == CLG_OK &&
        clg_tensor_to_host(want, w, (size_t)n * 4) == CLG_OK) {
        diff = 0;
        for (int64_t k = 0; k < n; k++) diff = fmax(diff, fabs((double)g[k] - w[k]));
    }
    free(g);
    free(w);
    return diff;
}

static inline char *io_path(const char *dir, const char *name)
{
    char *p = malloc(4096);
    if (!p) exit(1);
    snprintf(p, 4096, "%s/%s", dir, name);
    return p;
}

/* The bytes of a safetensors file: the 8-byte length (hlen, or the header's real
 * length when hlen is UINT64_MAX), the header, then datalen bytes of data (a pattern
 * when data is NULL). malloc'd, *len bytes. */
static inline unsigned char *io_st_bytes(uint64_t hlen, const char *header, size_t header_len, const void *data,
                                         size_t datalen, size_t *len)
{
    if (hlen == UINT64_MAX) hlen = header_len;
    *len = 8 + header_len + datalen;
    unsigned char *b = malloc(*len ? *len : 1);
    if (!b) exit(1);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(hlen >> (8 * i));
    memcpy(b + 8, header, header_len);
    for (size_t i = 0; i < datalen; i++)
        b[8 + header_len + i] = data ? ((const unsigned char *)data)[i] : (unsigned char)(i * 7 + 1);
    return b;
}

static inline void io_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* Every parameter and buffer of m, read to the host, in state order: malloc'd bytes. */
static inline unsigned char *io_model_bytes(const clg_module *m, size_t *total)
{
    clg_named_tensor s[64];
    int n = clg_module_state(m, s, 64);
    size_t bytes = 0;
    for (int i = 0; i < n; i++) bytes += (size_t)clg_tensor_numel(s[i].tensor) * clg_dtype_size(clg_tensor_dtype(s[i].tensor));
    unsigned char *b = malloc(bytes ? bytes : 1), *at = b;
    if (!b) exit(1);
    for (int i = 0; i < n; i++) {
        size_t k = (size_t)clg_tensor_numel(s[i].tensor) * clg_dtype_size(clg_tensor_dtype(s[i].tensor));
        if (clg_tensor_to_host(s[i].tensor, at, k) != CLG_OK) memset(at, 0xff, k);
        at += k;
    }
    *total = bytes;
    return b;
}

#endif
