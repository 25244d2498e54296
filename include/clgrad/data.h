/* clgrad/data.h: datasets, file readers (IDX, CIFAR-10, CSV, .npy) and a threaded
 * DataLoader that prepares batches on CPU threads and uploads them while the device
 * computes.
 *
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) return 1;
 *   char err[512];
 *   clg_dataset *train;
 *   if (clg_dataset_fashion_mnist(NULL, true, &train, err, sizeof err) != CLG_OK) {
 *       fprintf(stderr, "%s\n", err);                // apt-get install dataset-fashion-mnist
 *       return 1;
 *   }
 *   clg_loader_config cfg = clg_loader_defaults(128);       // batch 128
 *   cfg.shuffle = true; cfg.seed = 42; cfg.workers = 2; cfg.scale = 1.0f / 255;
 *   clg_loader *loader;
 *   if (clg_loader_new(dev, train, &cfg, &loader) != CLG_OK) return 1;
 *   for (int epoch = 0; epoch < 1; epoch++) {
 *       for (int b = 0; b < 5; b++) {                // a few batches here; an epoch: until !x
 *           clg_scope_begin(dev);
 *           clg_tensor *x, *y;                       // [128, 1, 28, 28] f32, [128] i32
 *           if (clg_loader_next(loader, &x, &y) != CLG_OK) return 1;
 *           bool end = !x;                           // the end of the epoch
 *           clg_scope_end(dev);                      // (forward, backward and step go here)
 *           if (end) break;
 *       }
 *   }
 *   clg_loader_free(loader);
 *   clg_dataset_free(train);
 *   clg_device_close(dev);
 *
 * ERRORS. The readers and datasets work without a device: they return a status and
 * write a message into the caller's `err` buffer (errlen bytes, always NUL-terminated;
 * err may be NULL). Messages name the file and what is wrong with it:
 *   "/x/train-images-idx3-ubyte.gz: truncated: the header promises 60000 x 28 x 28
 *    bytes of data (47040000), the file holds 1000".
 * Calls taking a device or tensor (the loader, tensor .npy) record their error on the
 * device (clg_device_error), as the rest of clgrad does.
 *
 * THREADS. A dataset's get() is called by several loader threads at once, with
 * different indices; the built-in datasets are read-only after creation. The loader
 * itself is used by one thread (the training loop), as the device is.
 */
#ifndef CLGRAD_DATA_H
#define CLGRAD_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- host arrays: what the readers return -------------------------------------------- */

/* What a file or a host array holds, one enum for every format (clg_dtype is what a
 * device tensor holds: float32, float64, int32). The readers of NumPy, IDX and CSV
 * files return the first five; safetensors files may hold any. */
typedef enum clg_elem_type {
    CLG_ELEM_U8 = 0, /* uint8:   NumPy '|u1', IDX 0x08 */
    CLG_ELEM_I32,    /* int32:   '<i4' */
    CLG_ELEM_I64,    /* int64:   '<i8' */
    CLG_ELEM_F32,    /* float32: '<f4' */
    CLG_ELEM_F64,    /* float64: '<f8' */
    CLG_ELEM_BOOL, CLG_ELEM_I8, CLG_ELEM_I16, CLG_ELEM_U16, CLG_ELEM_U32, CLG_ELEM_U64,
    CLG_ELEM_F16, CLG_ELEM_BF16, CLG_ELEM_F8_E5M2, CLG_ELEM_F8_E4M3,
    CLG_ELEM_COUNT
} clg_elem_type;

CLG_API size_t clg_elem_size(clg_elem_type type);        /* bytes; 0 when out of range */
CLG_API const char *clg_elem_name(clg_elem_type type);   /* "uint8", ... */
/* The element type of a device dtype (CLG_F32 -> CLG_ELEM_F32, ...). */
CLG_API clg_elem_type clg_elem_of_dtype(clg_dtype dtype);

/* A row-major array in host memory. The readers allocate `data` (malloc); free it
 * with clg_host_array_free, which also zeroes the struct. */
typedef struct clg_host_array {
    clg_elem_type type;
    int ndim;                       /* 0 (a scalar) to CLG_MAX_DIMS */
    int64_t shape[CLG_MAX_DIMS];
    void *data;
    size_t bytes;                   /* numel * element size */
} clg_host_array;

CLG_API int64_t clg_host_array_numel(const clg_host_array *a);
CLG_API void clg_host_array_free(clg_host_array *a);

/* ---- readers and writers ---------------------------------------------------------------- */

/* NumPy .npy, versions 1.0, 2.0 and 3.0: little-endian (or byte-order free) uint8,
 * int32, int64, float16, float32, float64 of up to CLG_MAX_DIMS axes; Fortran-ordered arrays
 * are reordered to row-major. Headers over 10000 bytes, object arrays (pickles),
 * big-endian data and other types are refused, as are truncated files and trailing bytes. */
CLG_API clg_status clg_npy_read(const char *path, clg_host_array *out, char *err, size_t errlen);
/* Writes version 1.0 with the header padded to a 64-byte boundary, as NumPy does. */
CLG_API clg_status clg_npy_write(const char *path, const clg_host_array *a, char *err, size_t errlen);

/* A tensor to .npy (float32 '<f4', float64 '<f8', int32 '<i4', float16 '<f2'; not
 * bfloat16, which NumPy lacks; reads it back from the device, so it waits), and a .npy
 * file to a new tensor in the current scope. Loading keeps float16, float32, float64
 * and int32; uint8 becomes int32, and int64 too when every
 * value fits (else CLG_ERR_FORMAT). NULL / a status with the message on dev. */
CLG_API clg_status clg_tensor_save_npy(const clg_tensor *t, const char *path);
CLG_API clg_tensor *clg_tensor_load_npy(clg_device *dev, const char *path);

/* IDX (MNIST's format), plain or gzip-compressed (detected by its magic bytes): any
 * of the element types u8 (0x08), i32 (0x0C), f32 (0x0D), f64 (0x0E), big-endian as
 * the format says, converted to host order. 0x09 (int8) and 0x0B (int16) are refused. */
CLG_API clg_status clg_idx_read(const char *path, clg_host_array *out, char *err, size_t errlen);

/* One CIFAR-10 binary batch (data_batch_N.bin / test_batch.bin): records of a label
 * byte (0-9) and 3072 pixel bytes. images: uint8 [N, 3, 32, 32]; labels: uint8 [N]. */
CLG_API clg_status clg_cifar10_read(const char *path, clg_host_array *images, clg_host_array *labels,
                                    char *err, size_t errlen);

/* CSV of numbers with one integer label column (label >= 0). Fields are separated by
 * commas; lines end in LF or CR LF; empty lines are skipped. */
typedef struct clg_csv_options {
    int label_column;   /* 0-based; negative counts from the end (-1: the last column) */
    int header;         /* 1: the first line is a header, 0: it is not, -1: detect (a
                           first line with a field that is not a number is a header) */
} clg_csv_options;
/* The label in the last column, a header detected (-1, -1): what NULL options mean. */
CLG_API clg_csv_options clg_csv_defaults(void);
/* features: float32 [N, columns - 1]; labels: int32 [N]. Every value must be a finite
 * number and every row have the same number of fields. */
CLG_API clg_status clg_csv_read(const char *path, const clg_csv_options *opts, clg_host_array *features,
                                clg_host_array *labels, char *err, size_t errlen);

/* ---- text: bytes for character-level language models ------------------------------------ */
/* A corpus read whole: a file, or every plain file of a directory (regular files, not
 * links, not strfile's ".dat" indexes, not hidden) joined in name order. The vocabulary
 * is the 256 byte values. */
/* A single file is mapped, not copied (a corpus of gigabytes costs only the pages read);
 * a directory's files are joined into memory. */
typedef struct clg_text {
    uint8_t *bytes;
    size_t len;
    int files;
    bool mapped;   /* bytes are a private mapping of the file (clg_text_free unmaps) */
} clg_text;
CLG_API clg_status clg_text_read(const char *path, clg_text *out, char *err, size_t errlen);
CLG_API void clg_text_free(clg_text *t);   /* zeroes it */
/* Windows for truncated backpropagation through time. The len bytes are cut into
 * `streams` equal contiguous streams (the remainder dropped); window w of stream s holds
 * inputs x[s][t] = byte w * window + t of the stream and targets y[s][t], the byte after
 * it, for t < window (the last window shorter when `tail`, else dropped). A model that
 * carries its state from window w to w + 1 reads each stream as one sequence. */
CLG_API int64_t clg_text_windows(size_t len, int streams, int window, bool tail);
/* Window w (counted with tail) as int32 tensors x, y [streams, T] in the current scope,
 * one upload for both. */
CLG_API clg_status clg_text_window(clg_device *dev, const uint8_t *bytes, size_t len, int streams, int window,
                                   int64_t w, clg_tensor **x, clg_tensor **y);

/* ---- datasets ------------------------------------------------------------------------------ */

/* The dataset interface. A dataset is `length` samples, each a float32 array of the
 * dataset's sample shape and an int32 label. Implement these three functions to feed
 * the loader from anywhere:
 *   length(self)   the number of samples; constant for the dataset's life.
 *   get(self, i, x, label, err, errlen)
 *                  write sample i (0 <= i < length) into x (sample-shape numel floats,
 *                  row-major) and its label into *label. Raw values: the loader's
 *                  transforms scale and normalise. Called from several threads at
 *                  once. On failure return a status and a message in err.
 *   free(self)     release self (may be NULL when there is nothing to free). */
typedef struct clg_dataset_i {
    int64_t (*length)(void *self);
    clg_status (*get)(void *self, int64_t i, float *x, int32_t *label, char *err, size_t errlen);
    void (*free)(void *self);
} clg_dataset_i;

typedef struct clg_dataset clg_dataset;

/* A dataset over `self`, whose samples have shape (ndim, shape) and whose labels lie in
 * [0, num_classes) (0 when unknown; one-hot labels then need it set). Takes `self`
 * either way: on failure iface->free(self) has been called. */
CLG_API clg_status clg_dataset_new(const clg_dataset_i *iface, void *self, int ndim, const int64_t *shape,
                                   int num_classes, clg_dataset **out, char *err, size_t errlen);
CLG_API void clg_dataset_free(clg_dataset *ds);   /* NULL is fine */

CLG_API int64_t clg_dataset_length(const clg_dataset *ds);
/* The sample shape (without the batch axis); *ndim receives its length. */
CLG_API const int64_t *clg_dataset_sample_shape(const clg_dataset *ds, int *ndim);
CLG_API int64_t clg_dataset_sample_numel(const clg_dataset *ds);
CLG_API int clg_dataset_num_classes(const clg_dataset *ds);
/* Sample i through the interface (x: sample-numel floats). */
CLG_API clg_status clg_dataset_get(const clg_dataset *ds, int64_t i, float *x, int32_t *label, char *err,
                                   size_t errlen);

/* In memory: samples x [N, ...] (any element type, converted to float on get) and
 * labels [N] (uint8, int32 or int64, each in [0, 2^31)). Takes both arrays (the caller's
 * structs are zeroed, on failure too). num_classes 0: one more than the largest label. */
CLG_API clg_status clg_dataset_from_arrays(clg_host_array *x, clg_host_array *labels, int num_classes,
                                           clg_dataset **out, char *err, size_t errlen);
/* From files, read whole into memory: */
/* An IDX images file [N, ...] and an IDX labels file [N] (gzip or plain). */
CLG_API clg_status clg_dataset_idx(const char *images_path, const char *labels_path, clg_dataset **out,
                                   char *err, size_t errlen);
/* CIFAR-10 batch files, concatenated in the order given; samples [3, 32, 32], 10 classes. */
CLG_API clg_status clg_dataset_cifar10(const char *const *paths, int npaths, clg_dataset **out, char *err,
                                       size_t errlen);
CLG_API clg_status clg_dataset_csv(const char *path, const clg_csv_options *opts, clg_dataset **out, char *err,
                                   size_t errlen);
/* Two .npy files: samples [N, ...] and labels [N]. */
CLG_API clg_status clg_dataset_npy(const char *x_path, const char *labels_path, clg_dataset **out, char *err,
                                   size_t errlen);

/* Fashion-MNIST (or MNIST: same file names) from `dir`: train-images-idx3-ubyte.gz and
 * train-labels-idx1-ubyte.gz (train) or t10k-* (test), each also accepted without .gz.
 * dir NULL: $CLG_FASHION_MNIST_DIR, else CLG_FASHION_MNIST_DEFAULT_DIR, where Debian's
 * package installs it. Samples [1, 28, 28] with raw pixel values 0-255, 10 classes.
 * Missing files: the error says which package provides them. */
#define CLG_FASHION_MNIST_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define CLG_FASHION_MNIST_PACKAGE "dataset-fashion-mnist"
CLG_API clg_status clg_dataset_fashion_mnist(const char *dir, bool train, clg_dataset **out, char *err,
                                             size_t errlen);

/* ---- the loader ------------------------------------------------------------------------------ */

typedef struct clg_loader_config {
    int64_t batch_size;
    bool shuffle;          /* a new order every epoch, from (seed, epoch) alone */
    uint64_t seed;         /* shuffling and the random transforms */
    bool drop_last;        /* drop the last batch when it is short */
    int workers;           /* threads preparing batches, >= 1 */
    int prefetch;          /* batches prepared ahead (staging buffers), >= 1 */
    /* Transforms, applied per sample in this order (all off in clg_loader_defaults): */
    int crop_padding;      /* > 0: pad the last two axes by this many zeros on each side,
                              then crop back to the sample size at a random place */
    bool hflip;            /* flip the last axis with probability 1/2 */
    float scale;           /* multiply every value (1.0f / 255 maps bytes to [0, 1]) */
    int norm_channels;     /* 0: no normalisation; 1: x = (x - mean[0]) / std[0];
                              C: per channel, C = sample shape[0] ([C, H, W] samples) */
    const float *mean, *std;  /* norm_channels values each; copied by clg_loader_new */
    bool one_hot;          /* y as float32 [B, num_classes] instead of int32 [B] */
    /* Data-parallel training (clgrad/dist.h): shard_count > 1 makes every batch this
     * shard's part of the global batch of batch_size, clg_shard_range(count, shard_index,
     * shard_count): the same order and transforms as one loader, each sample in exactly
     * one shard. A shard of a short last batch may be empty: a batch of 0 samples. */
    int shard_index, shard_count;
} clg_loader_config;

/* The part [*first, *first + *n) of count items that shard `index` of `parts` takes:
 * contiguous, in order, sizes differing by at most one (the first count % parts
 * shards take one more). */
CLG_API void clg_shard_range(int64_t count, int index, int parts, int64_t *first, int64_t *n);

/* Batch size B, no shuffling, seed 0, keep the last batch, 1 worker, prefetch 2,
 * scale 1, no other transforms, int32 labels. */
CLG_API clg_loader_config clg_loader_defaults(int64_t batch_size);

typedef struct clg_loader clg_loader;

/* A loader over ds (which must outlive it) on dev; starts its worker threads, which
 * begin preparing epoch 0 at once. */
CLG_API clg_status clg_loader_new(clg_device *dev, clg_dataset *ds, const clg_loader_config *cfg,
                                  clg_loader **out);
/* Stops the threads (mid-epoch is fine) and frees every buffer. NULL is fine. */
CLG_API void clg_loader_free(clg_loader *l);

/* The next batch of the current epoch as new tensors in the current scope:
 * x float32 [B, sample shape...], y int32 [B] or float32 [B, classes] (one_hot).
 * The last batch may be shorter (unless drop_last). After the last batch of an epoch
 * the next call returns CLG_OK with *x = *y = NULL and moves to the next epoch.
 * Exactly the bytes of x and y count as host-to-device transfers. Ops enqueued after
 * this call see the batch; its upload runs on a second queue while the device still
 * works on earlier steps. */
CLG_API clg_status clg_loader_next(clg_loader *l, clg_tensor **x, clg_tensor **y);

/* Batches per epoch. */
CLG_API int64_t clg_loader_num_batches(const clg_loader *l);

/* Where the loader is: the batch the next call returns (batch == num_batches: the
 * epoch's end is next). For checkpoints: set_position(epoch, batch) on a loader with
 * the same dataset and config resumes with exactly the same batches. */
typedef struct clg_loader_position {
    uint64_t epoch;
    int64_t batch;
    uint64_t seed;
} clg_loader_position;
CLG_API clg_loader_position clg_loader_get_position(const clg_loader *l);
/* Discards the batches prepared ahead. pos.seed replaces the seed. */
CLG_API clg_status clg_loader_set_position(clg_loader *l, clg_loader_position pos);

/* How long clg_loader_next waited for workers to finish batches. */
typedef struct clg_loader_stats {
    uint64_t batches;        /* handed out */
    double wait_seconds;     /* total time clg_loader_next waited for data */
    double last_wait;        /* the wait of the last call */
    double max_wait;
} clg_loader_stats;
CLG_API clg_loader_stats clg_loader_get_stats(const clg_loader *l);

#ifdef __cplusplus
}
#endif
#endif
