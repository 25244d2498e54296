/* safetensors_header.c: the JSON header of a file to write, built with jansson so that
 * names and metadata are escaped as JSON requires. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "last_error.h"
#include "st_format.h"

size_t clg__st_item_bytes(const clg__st_item *it)
{
    size_t n = clg_elem_size(it->dtype);
    for (int d = 0; d < it->ndim; d++) {
        if (it->shape[d] < 0) return SIZE_MAX;
        size_t s = (size_t)it->shape[d];
        if (s && n > SIZE_MAX / s) return SIZE_MAX;
        n *= s;
    }
    return n;
}

#define fail clg__report   /* the caller's buffer and the thread's last error */

static json_t *tensor_entry(const clg__st_item *it, uint64_t begin, uint64_t end)
{
    json_t *shape = json_array();
    for (int d = 0; shape && d < it->ndim; d++)
        if (json_array_append_new(shape, json_integer(it->shape[d]))) {
            json_decref(shape);
            return NULL;
        }
    if (!shape) return NULL;
    return json_pack("{s:s, s:o, s:[I, I]}", "dtype", clg_safetensors_dtype_name(it->dtype), "shape", shape, "data_offsets",
                     (json_int_t)begin, (json_int_t)end);
}

static clg_status add_metadata(json_t *root, int nmeta, const clg_safetensors_pair *meta, char *err, size_t errlen)
{
    json_t *m = json_object();
    if (json_object_set_new(root, "__metadata__", m)) return fail(err, errlen, CLG_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < nmeta; i++) {
        if (!meta[i].key || !meta[i].value)
            return fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "metadata entry %d has no key or no value", i);
        if (json_object_get(m, meta[i].key))
            return fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "metadata key \"%s\" given twice", meta[i].key);
        if (json_object_set_new(m, meta[i].key, json_string(meta[i].value)))
            return fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "metadata \"%s\" is not UTF-8 text", meta[i].key);
    }
    return CLG_OK;
}

static clg_status add_tensors(json_t *root, int n, const clg__st_item *items, char *err, size_t errlen)
{
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        const clg__st_item *it = &items[i];
        size_t bytes = clg__st_item_bytes(it);
        if (!it->name || !strcmp(it->name, "__metadata__"))
            return fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "tensor %d has no name, or the reserved \"__metadata__\"",
                        i);
        if ((unsigned)it->dtype >= CLG_ELEM_COUNT || it->ndim < 0 || it->ndim > CLG_MAX_DIMS ||
            bytes == SIZE_MAX || bytes > INT64_MAX - at)
            return fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "tensor \"%s\" has a bad dtype or shape", it->name);
        if (!it->tensor && !it->host && bytes > 0)
            return fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "tensor \"%s\" has no data", it->name);
        if (json_object_get(root, it->name))
            return fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "tensor name \"%s\" given twice", it->name);
        json_t *entry = tensor_entry(it, at, at + bytes);
        if (!entry || json_object_set_new(root, it->name, entry))
            return fail(err, errlen, CLG_ERR_INVALID_ARGUMENT, "tensor name \"%s\" is not UTF-8 text", it->name);
        at += bytes;
    }
    return CLG_OK;
}

clg_status clg__st_header(int n, const clg__st_item *items, int nmeta, const clg_safetensors_pair *meta, char **out,
                          size_t *outlen, char *err, size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    json_t *root = json_object();
    if (!root) return fail(err, errlen, CLG_ERR_OUT_OF_MEMORY, "out of memory");
    /* metadata first, as the reference writer puts it */
    clg_status st = nmeta > 0 ? add_metadata(root, nmeta, meta, err, errlen) : CLG_OK;
    if (!st) st = add_tensors(root, n, items, err, errlen);
    char *text = st ? NULL : json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (st) return st;
    if (!text) return fail(err, errlen, CLG_ERR_OUT_OF_MEMORY, "out of memory for the header");
    size_t len = strlen(text), padded = (len + 7) / 8 * 8;
    char *buf = realloc(text, padded + 1);
    if (!buf) {
        free(text);
        return fail(err, errlen, CLG_ERR_OUT_OF_MEMORY, "out of memory for the header");
    }
    memset(buf + len, ' ', padded - len);
    buf[padded] = '\0';
    *out = buf;
    *outlen = padded;
    return CLG_OK;
}
