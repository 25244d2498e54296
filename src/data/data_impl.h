/* data_impl.h: internals of the data layer shared by src/data/ and the tests and
 * fuzz targets. Not installed.
 *
 * The parsers work on bytes in memory (clg__*_parse), so that the fuzz targets can
 * feed them directly; the public readers load the file (un-gzipping it when it starts
 * with gzip's magic bytes) and call them. `name` is the file name used in messages. */
#ifndef CLGRAD_DATA_IMPL_H
#define CLGRAD_DATA_IMPL_H

#include <stdarg.h>

#include "clgrad/data.h"

/* Write "<name>: <message>" into err (when err is not NULL) and return status. */
clg_status clg__data_fail(char *err, size_t errlen, clg_status status, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The whole file in a malloc'd buffer (*len bytes; a NUL follows, not counted). */
clg_status clg__read_file(const char *path, unsigned char **data, size_t *len, char *err, size_t errlen);
/* Like clg__read_file, and inflated when it is gzip (1f 8b). promised (may be NULL):
 * the size the format's header promises, from the first CLG_GZ_HEAD inflated bytes (n
 * of them; 0: cannot tell); inflating stops one byte past it, so a small compressed
 * file that claims little cannot inflate to gigabytes first. */
#define CLG_GZ_HEAD 64
typedef size_t (*clg__gz_promise)(const unsigned char *head, size_t n);
clg_status clg__read_file_gz(const char *path, clg__gz_promise promised, unsigned char **data, size_t *len, char *err,
                             size_t errlen);
/* Inflate one gzip member from memory, producing at most max_out bytes. */
clg_status clg__gunzip(const unsigned char *in, size_t inlen, const char *name, size_t max_out,
                       unsigned char **out, size_t *outlen, char *err, size_t errlen);
#define CLG_GUNZIP_MAX ((size_t)1 << 32)  /* 4 GiB: past any dataset clgrad reads */

/* Allocate a->data for (type, ndim, shape); fails on overflow or out of memory. */
clg_status clg__host_array_alloc(clg_host_array *a, clg_elem_type type, int ndim, const int64_t *shape,
                                 const char *name, char *err, size_t errlen);
/* numel * size, or -1 on overflow (past SIZE_MAX or 2^62). */
int64_t clg__checked_bytes(int ndim, const int64_t *shape, size_t elem_size);
/* Element i of a as a double. */
double clg__host_array_get(const clg_host_array *a, int64_t i);

clg_status clg__npy_parse(const unsigned char *buf, size_t len, const char *name, clg_host_array *out, char *err,
                          size_t errlen);
/* The .npy bytes (header and data) for a; malloc'd. */
clg_status clg__npy_format(const clg_host_array *a, const char *name, unsigned char **out, size_t *outlen,
                           char *err, size_t errlen);
clg_status clg__idx_parse(const unsigned char *buf, size_t len, const char *name, clg_host_array *out, char *err,
                          size_t errlen);
clg_status clg__cifar10_parse(const unsigned char *buf, size_t len, const char *name, clg_host_array *images,
                              clg_host_array *labels, char *err, size_t errlen);
clg_status clg__csv_parse(const char *buf, size_t len, const char *name, const clg_csv_options *opts,
                          clg_host_array *features, clg_host_array *labels, char *err, size_t errlen);

/* ---- the loader's pure functions (loader_order.c, transform.c) ------------------------- */

/* A stateless bijection of [0, n): position pos of epoch `epoch` under `seed`. */
int64_t clg__shuffle_index(uint64_t seed, uint64_t epoch, int64_t n, int64_t pos);
/* A 64-bit hash of three words (SplitMix64 finaliser chain). */
uint64_t clg__mix3(uint64_t a, uint64_t b, uint64_t c);

typedef struct clg__transform {
    int ndim;
    int64_t shape[CLG_MAX_DIMS];
    int64_t numel;
    int crop_padding;
    bool hflip;
    float scale;
    int norm_channels;
    float mean[64], std[64];   /* up to CLG_NORM_MAX_CHANNELS */
} clg__transform;
#define CLG_NORM_MAX_CHANNELS 64
/* Transform sample x in place (numel floats); scratch holds numel floats. The
 * random choices come from (seed, epoch, index): the same on any thread. */
void clg__transform_apply(const clg__transform *t, float *x, float *scratch, uint64_t seed, uint64_t epoch,
                          int64_t index);

#endif
