/* safetensors_write.c: header and data out. The header (safetensors_header.c) is
 * complete and checked before the file is created; tensors are read back from the device one at a time, so that
 * saving needs host memory for the largest tensor only. */
#include <stdlib.h>
#include <string.h>

#include "io_impl.h"

clg__st_item clg__st_item_tensor(const char *name, const clg_tensor *t)
{
    clg__st_item it = {.name = name, .tensor = t};
    if (t) {
        it.dtype = clg_elem_of_dtype(t->dtype);
        it.ndim = t->ndim;
        memcpy(it.shape, t->shape, sizeof it.shape);
    }
    return it;
}

static bool host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* The format is little-endian whatever the host. */
static void to_little_endian(unsigned char *p, size_t bytes, size_t size)
{
    if (size < 2 || host_is_little_endian()) return;
    for (size_t i = 0; i + size <= bytes; i += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char tmp = p[i + a];
            p[i + a] = p[i + b];
            p[i + b] = tmp;
        }
}

/* The items' data into the file, device tensors through one host buffer. */
static clg_status write_data(clg__atomic_file *af, int n, const clg__st_item *items, const clg__io_err *e)
{
    unsigned char *scratch = NULL;
    size_t cap = 0;
    clg_status st = CLG_OK;
    for (int i = 0; !st && i < n && !af->failed; i++) {
        size_t bytes = clg__st_item_bytes(&items[i]), size = clg_elem_size(items[i].dtype);
        if (bytes == 0) continue;
        if (!items[i].tensor && host_is_little_endian()) {
            clg__atomic_write(af, items[i].host, bytes);
            continue;
        }
        if (bytes > cap) {
            unsigned char *nb = realloc(scratch, bytes);
            if (!nb) {
                st = clg__io_fail(e, CLG_ERR_OUT_OF_MEMORY, "out of host memory for tensor \"%s\" (%zu bytes)",
                                  items[i].name, bytes);
                break;
            }
            scratch = nb;
            cap = bytes;
        }
        if (items[i].tensor) {
            st = clg_tensor_to_host(items[i].tensor, scratch, bytes);
            if (st) st = clg__io_fail(e, st, "reading tensor \"%s\" from the device: %s", items[i].name,
                                      clg_device_error(items[i].tensor->dev));
        } else {
            memcpy(scratch, items[i].host, bytes);
        }
        if (!st) {
            to_little_endian(scratch, bytes, size);
            clg__atomic_write(af, scratch, bytes);
        }
    }
    free(scratch);
    return st;
}

clg_status clg__st_write(const char *path, int n, const clg__st_item *items, int nmeta, const clg_safetensors_pair *meta,
                         const clg__io_err *e)
{
    if (!path || n < 0 || (n > 0 && !items) || nmeta < 0 || (nmeta > 0 && !meta))
        return clg__io_fail(e, CLG_ERR_INVALID_ARGUMENT, "bad arguments (path, %d tensors, %d metadata pairs)", n,
                            nmeta);
    char *header = NULL, why[512];
    size_t hlen = 0;
    clg_status st = clg__st_header(n, items, nmeta, meta, &header, &hlen, why, sizeof why);
    if (st) return clg__io_fail(e, st, "%s", why);
    clg__atomic_file af;
    st = clg__atomic_open(&af, path, e);
    if (!st) {
        unsigned char len8[8];
        for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
        clg__atomic_write(&af, len8, 8);
        clg__atomic_write(&af, header, hlen);
        st = write_data(&af, n, items, e);
        if (st) clg__atomic_abort(&af);
        else st = clg__atomic_commit(&af, e);
    }
    free(header);
    return st;
}

clg_status clg_safetensors_write(clg_device *dev, const char *path, int n, const clg_named_tensor *tensors,
                                 int nmeta, const clg_safetensors_pair *meta)
{
    if (!dev) return CLG_ERR_INVALID_ARGUMENT;
    clg__io_err e = {dev, NULL, 0, path ? path : "(null)"};
    if (n < 0 || (n > 0 && !tensors)) return clg__io_fail(&e, CLG_ERR_INVALID_ARGUMENT, "no tensors given");
    clg__st_item *items = malloc((size_t)(n ? n : 1) * sizeof *items);
    if (!items) return clg__io_fail(&e, CLG_ERR_OUT_OF_MEMORY, "out of host memory");
    clg_status st = CLG_OK;
    for (int i = 0; i < n && !st; i++) {
        if (!tensors[i].tensor)
            st = clg__io_fail(&e, CLG_ERR_INVALID_ARGUMENT, "tensor %d (\"%s\") is NULL", i,
                              tensors[i].name ? tensors[i].name : "");
        else if (tensors[i].tensor->dev != dev)
            st = clg__io_fail(&e, CLG_ERR_INVALID_ARGUMENT, "tensor \"%s\" is on another device",
                              tensors[i].name ? tensors[i].name : "");
        items[i] = clg__st_item_tensor(tensors[i].name, tensors[i].tensor);
    }
    if (!st) st = clg__st_write(path, n, items, nmeta, meta, &e);
    free(items);
    return st;
}
