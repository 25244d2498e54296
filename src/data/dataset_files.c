/* dataset_files.c: datasets read from files into memory (IDX, CIFAR-10, CSV, .npy,
 * Fashion-MNIST by name). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data_impl.h"

clg_status clg_dataset_idx(const char *images_path, const char *labels_path, clg_dataset **out, char *err,
                           size_t errlen)
{
    if (out) *out = NULL;
    clg_host_array x, y = {0};
    clg_status st = clg_idx_read(images_path, &x, err, errlen);
    if (!st) st = clg_idx_read(labels_path, &y, err, errlen);
    if (!st && (y.ndim != 1 || y.shape[0] != x.shape[0]))
        st = clg__data_fail(err, errlen, CLG_ERR_FORMAT, labels_path, "%s labels for the %lld images of %s",
                            y.ndim == 1 ? "a different number of" : "not a 1-axis array of", (long long)x.shape[0],
                            images_path);
    if (st) {
        clg_host_array_free(&x);
        clg_host_array_free(&y);
        return st;
    }
    return clg_dataset_from_arrays(&x, &y, 0, out, err, errlen);
}

/* Append b's bytes to a (same type; leading axes add up). */
static clg_status concat(clg_host_array *a, clg_host_array *b, char *err, size_t errlen)
{
    if (!a->data) {
        *a = *b;
        memset(b, 0, sizeof *b);
        return CLG_OK;
    }
    unsigned char *d = realloc(a->data, a->bytes + b->bytes);
    if (!d) return clg__data_fail(err, errlen, CLG_ERR_OUT_OF_MEMORY, "cifar10", "out of memory");
    memcpy(d + a->bytes, b->data, b->bytes);
    a->data = d;
    a->bytes += b->bytes;
    a->shape[0] += b->shape[0];
    clg_host_array_free(b);
    return CLG_OK;
}

clg_status clg_dataset_cifar10(const char *const *paths, int npaths, clg_dataset **out, char *err, size_t errlen)
{
    if (out) *out = NULL;
    if (!paths || npaths < 1)
        return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "cifar10", "no batch files given");
    clg_host_array x = {0}, y = {0}, bx, by;
    clg_status st = CLG_OK;
    for (int i = 0; i < npaths && !st; i++) {
        st = clg_cifar10_read(paths[i], &bx, &by, err, errlen);
        if (!st) st = concat(&x, &bx, err, errlen);
        if (!st) st = concat(&y, &by, err, errlen);
        clg_host_array_free(&bx);
        clg_host_array_free(&by);
    }
    if (st) {
        clg_host_array_free(&x);
        clg_host_array_free(&y);
        return st;
    }
    return clg_dataset_from_arrays(&x, &y, 10, out, err, errlen);
}

clg_status clg_dataset_csv(const char *path, const clg_csv_options *opts, clg_dataset **out, char *err, size_t errlen)
{
    if (out) *out = NULL;
    clg_host_array x, y;
    clg_status st = clg_csv_read(path, opts, &x, &y, err, errlen);
    if (st) return st;
    return clg_dataset_from_arrays(&x, &y, 0, out, err, errlen);
}

clg_status clg_dataset_npy(const char *x_path, const char *labels_path, clg_dataset **out, char *err, size_t errlen)
{
    if (out) *out = NULL;
    clg_host_array x, y = {0};
    clg_status st = clg_npy_read(x_path, &x, err, errlen);
    if (!st) st = clg_npy_read(labels_path, &y, err, errlen);
    if (!st && (x.ndim < 1 || y.ndim != 1 || y.shape[0] != x.shape[0]))
        st = clg__data_fail(err, errlen, CLG_ERR_FORMAT, labels_path, "labels do not match the samples of %s "
                            "(need [N] labels for [N, ...] samples)", x_path);
    if (st) {
        clg_host_array_free(&x);
        clg_host_array_free(&y);
        return st;
    }
    return clg_dataset_from_arrays(&x, &y, 0, out, err, errlen);
}

/* dir/base.gz, else dir/base; false (with path set to the .gz name) when neither exists. */
static bool find_file(const char *dir, const char *base, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, base);
    if (access(path, R_OK) == 0) return true;
    snprintf(path, cap, "%s/%s.gz", dir, base);
    return access(path, R_OK) == 0;
}

clg_status clg_dataset_fashion_mnist(const char *dir, bool train, clg_dataset **out, char *err, size_t errlen)
{
    if (out) *out = NULL;
    if (!out) return clg__data_fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "fashion-mnist", "out is NULL");
    const char *env = getenv("CLG_FASHION_MNIST_DIR");
    if (!dir || !*dir) dir = env && *env ? env : CLG_FASHION_MNIST_DEFAULT_DIR;
    const char *pre = train ? "train" : "t10k";
    char base[64], xpath[4096], ypath[4096];
    snprintf(base, sizeof base, "%s-images-idx3-ubyte", pre);
    bool have_x = find_file(dir, base, xpath, sizeof xpath);
    snprintf(base, sizeof base, "%s-labels-idx1-ubyte", pre);
    bool have_y = find_file(dir, base, ypath, sizeof ypath);
    if (!have_x || !have_y)
        return clg__data_fail(err, errlen, CLG_ERR_IO, have_x ? ypath : xpath,
                              "Fashion-MNIST not found in %s; Debian's package %s provides it "
                              "(apt-get install %s), or set CLG_FASHION_MNIST_DIR to its directory",
                              dir, CLG_FASHION_MNIST_PACKAGE, CLG_FASHION_MNIST_PACKAGE);
    clg_host_array x, y = {0};
    clg_status st = clg_idx_read(xpath, &x, err, errlen);
    if (!st && (x.type != CLG_ELEM_U8 || x.ndim != 3 || x.shape[1] != 28 || x.shape[2] != 28))
        st = clg__data_fail(err, errlen, CLG_ERR_FORMAT, xpath, "not Fashion-MNIST images (uint8 [N, 28, 28])");
    if (!st) st = clg_idx_read(ypath, &y, err, errlen);
    if (!st && (y.type != CLG_ELEM_U8 || y.ndim != 1 || y.shape[0] != x.shape[0]))
        st = clg__data_fail(err, errlen, CLG_ERR_FORMAT, ypath, "not %lld Fashion-MNIST labels (uint8 [N])",
                            (long long)x.shape[0]);
    if (st) {
        clg_host_array_free(&x);
        clg_host_array_free(&y);
        return st;
    }
    x.ndim = 4;   /* [N, 28, 28] -> [N, 1, 28, 28]: one channel, for convolutions */
    x.shape[3] = 28;
    x.shape[2] = 28;
    x.shape[1] = 1;
    return clg_dataset_from_arrays(&x, &y, 10, out, err, errlen);
}
