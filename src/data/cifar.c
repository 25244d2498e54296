/* cifar.c: CIFAR-10 binary batches (https://www.cs.toronto.edu/~kriz/cifar.html):
 * 10000 records per file of <1 label byte, 0-9><3072 pixel bytes: 1024 red, 1024
 * green, 1024 blue, each 32 x 32 row-major>. */
#include <stdlib.h>
#include <string.h>

#include "data_impl.h"

#define CIFAR_PIXELS 3072
#define CIFAR_RECORD (1 + CIFAR_PIXELS)

clg_status clg__cifar10_parse(const unsigned char *buf, size_t len, const char *name, clg_host_array *images,
                              clg_host_array *labels, char *err, size_t errlen)
{
    memset(images, 0, sizeof *images);
    memset(labels, 0, sizeof *labels);
    if (len == 0) return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "empty file, no CIFAR-10 records");
    if (len % CIFAR_RECORD)
        return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name,
                              "%zu bytes is not a whole number of %d-byte CIFAR-10 records (truncated?)", len,
                              CIFAR_RECORD);
    int64_t n = (int64_t)(len / CIFAR_RECORD);
    for (int64_t i = 0; i < n; i++)
        if (buf[(size_t)i * CIFAR_RECORD] > 9)
            return clg__data_fail(err, errlen, CLG_ERR_FORMAT, name, "record %lld has label %d (CIFAR-10 has 0-9)",
                                  (long long)i, buf[(size_t)i * CIFAR_RECORD]);
    clg_status st = clg__host_array_alloc(images, CLG_ELEM_U8, 4, (const int64_t[]){n, 3, 32, 32}, name, err, errlen);
    if (!st) st = clg__host_array_alloc(labels, CLG_ELEM_U8, 1, &n, name, err, errlen);
    if (st) {
        clg_host_array_free(images);
        return st;
    }
    unsigned char *img = images->data, *lab = labels->data;
    for (int64_t i = 0; i < n; i++) {
        lab[i] = buf[(size_t)i * CIFAR_RECORD];
        memcpy(img + (size_t)i * CIFAR_PIXELS, buf + (size_t)i * CIFAR_RECORD + 1, CIFAR_PIXELS);
    }
    return CLG_OK;
}

clg_status clg_cifar10_read(const char *path, clg_host_array *images, clg_host_array *labels, char *err,
                            size_t errlen)
{
    if (!images || !labels) return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, path, "no output arrays");
    memset(images, 0, sizeof *images);
    memset(labels, 0, sizeof *labels);
    unsigned char *buf;
    size_t len;
    clg_status st = clg__read_file(path, &buf, &len, err, errlen);
    if (st) return st;
    st = clg__cifar10_parse(buf, len, path, images, labels, err, errlen);
    free(buf);
    return st;
}
