/* The real Fashion-MNIST from Debian's dataset-fashion-mnist: the loader's first
 * batches equal, byte for byte, a direct read of the gzip files through zlib; shuffled
 * batches with 1 and 4 workers are identical and hold the right samples; the directory
 * comes from the argument, then $CLG_FASHION_MNIST_DIR, then the default, and a missing
 * one names the package. A missing dataset fails this test: it never skips. */
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "data_impl.h"

/* The whole decompressed file, straight from zlib's gzread, or NULL. */
static unsigned char *gz_slurp(const char *path, size_t *len)
{
    gzFile f = gzopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 20, n = 0;
    unsigned char *b = malloc(cap);
    int r;
    while (b && (r = gzread(f, b + n, (unsigned)(cap - n))) > 0) {
        n += (size_t)r;
        if (n == cap) b = realloc(b, cap *= 2);
    }
    gzclose(f);
    *len = n;
    return b;
}

static uint32_t be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]; }

static int64_t check_batches(clg_device *dev, clg_dataset *ds, const unsigned char *img, const unsigned char *lab,
                             int workers, bool shuffle, float *first_x, int32_t *first_y, int nb)
{
    clg_loader_config cfg = clg_loader_defaults(128);
    cfg.workers = workers;
    cfg.prefetch = 2 * workers;
    cfg.shuffle = shuffle;
    cfg.seed = 2024;
    clg_loader *l;
    CHECK_OK(dev, clg_loader_new(dev, ds, &cfg, &l));
    if (!l) return 0;
    int64_t mismatches = 0;
    float *x = malloc(128 * 784 * sizeof *x);
    int32_t y[128];
    for (int b = 0; b < nb; b++) {
        clg_scope_begin(dev);
        clg_tensor *tx, *ty;
        CHECK_OK(dev, clg_loader_next(l, &tx, &ty));
        CHECK(tx && clg_tensor_ndim(tx) == 4 && clg_tensor_dim(tx, 0) == 128 && clg_tensor_dim(tx, 1) == 1 &&
              clg_tensor_dim(tx, 2) == 28 && clg_tensor_dim(tx, 3) == 28);
        CHECK_OK(dev, clg_tensor_to_host(tx, x, 128 * 784 * sizeof *x));
        CHECK_OK(dev, clg_tensor_to_host(ty, y, sizeof y));
        for (int k = 0; k < 128; k++) {
            int64_t i = shuffle ? clg__shuffle_index(2024, 0, 60000, b * 128 + k) : b * 128 + k;
            mismatches += y[k] != lab[8 + i];
            for (int p = 0; p < 784; p++) mismatches += x[k * 784 + p] != (float)img[16 + i * 784 + p];
        }
        if (first_x) {
            memcpy(first_x + (size_t)b * 128 * 784, x, 128 * 784 * sizeof *x);
            memcpy(first_y + b * 128, y, sizeof y);
        }
        clg_scope_end(dev);
    }
    free(x);
    clg_loader_free(l);
    return mismatches;
}

int main(void)
{
    clg_device *dev = check_open_device();
    const char *dir = CLG_FASHION_MNIST_DEFAULT_DIR;
    char err[1024], p1[512], p2[512];
    snprintf(p1, sizeof p1, "%s/train-images-idx3-ubyte.gz", dir);
    snprintf(p2, sizeof p2, "%s/train-labels-idx1-ubyte.gz", dir);
    size_t ilen = 0, llen = 0;
    unsigned char *img = gz_slurp(p1, &ilen), *lab = gz_slurp(p2, &llen);
    CHECK_MSG(img && lab, "cannot read %s and %s: install Debian's %s (apt-get install %s)", p1, p2,
              CLG_FASHION_MNIST_PACKAGE, CLG_FASHION_MNIST_PACKAGE);
    if (!img || !lab) return check_report("test_data_fashion");
    /* The direct read: IDX headers by hand. */
    CHECK(ilen == 16 + 60000 * 784 && be32(img) == 0x803 && be32(img + 4) == 60000 && be32(img + 8) == 28);
    CHECK(llen == 8 + 60000 && be32(lab) == 0x801 && be32(lab + 4) == 60000);

    clg_dataset *ds;
    unsetenv("CLG_FASHION_MNIST_DIR");
    clg_status st = clg_dataset_fashion_mnist(NULL, true, &ds, err, sizeof err);
    CHECK_MSG(st == CLG_OK, "%s", err);
    if (st) return check_report("test_data_fashion");
    int nd;
    const int64_t *shape = clg_dataset_sample_shape(ds, &nd);
    CHECK(clg_dataset_length(ds) == 60000 && nd == 3 && shape[0] == 1 && shape[1] == 28 && shape[2] == 28 &&
          clg_dataset_num_classes(ds) == 10);

    /* In file order, the first 4 batches; shuffled, 1 and 4 workers agree. */
    CHECK(check_batches(dev, ds, img, lab, 2, false, NULL, NULL, 4) == 0);
    enum { NB = 6 };
    float *x1 = malloc(NB * 128 * 784 * sizeof *x1), *x4 = malloc(NB * 128 * 784 * sizeof *x4);
    int32_t y1[NB * 128], y4[NB * 128];
    CHECK(check_batches(dev, ds, img, lab, 1, true, x1, y1, NB) == 0);
    CHECK(check_batches(dev, ds, img, lab, 4, true, x4, y4, NB) == 0);
    CHECK(!memcmp(x1, x4, NB * 128 * 784 * sizeof *x1) && !memcmp(y1, y4, sizeof y1));
    free(x1);
    free(x4);
    clg_dataset_free(ds);

    /* The test set, by explicit directory (winning over the variable). */
    setenv("CLG_FASHION_MNIST_DIR", "/nonexistent/fmnist", 1);
    CHECK_MSG(clg_dataset_fashion_mnist(dir, false, &ds, err, sizeof err) == CLG_OK, "%s", err);
    CHECK(clg_dataset_length(ds) == 10000);
    clg_dataset_free(ds);
    /* The variable wins over the default; a missing directory names the package. */
    CHECK(clg_dataset_fashion_mnist(NULL, true, &ds, err, sizeof err) == CLG_ERR_IO && ds == NULL);
    CHECK_MSG(strstr(err, "/nonexistent/fmnist") && strstr(err, "apt-get install dataset-fashion-mnist"), "%s", err);
    unsetenv("CLG_FASHION_MNIST_DIR");
    free(img);
    free(lab);
    CHECK(clg_tensor_live_count(dev) == 0);
    clg_device_close(dev);
    return check_report("test_data_fashion");
}
