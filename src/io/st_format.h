/* st_format.h: the parts of safetensors that need no device: the validating parser and
 * the header writer. They depend on libc and jansson alone, so that the fuzz target
 * builds from safetensors_read.c and safetensors_header.c without the rest of clgrad.
 * Not installed. */
#ifndef CLGRAD_ST_FORMAT_H
#define CLGRAD_ST_FORMAT_H

#include "clgrad/io.h"

/* One tensor to write: from a device tensor (read back when written), or host bytes
 * (little-endian already). dtype and shape describe it either way. */
typedef struct clg__st_item {
    const char *name;
    clg_elem_type dtype;
    int ndim;
    int64_t shape[CLG_MAX_DIMS];
    const clg_tensor *tensor;
    const void *host;
} clg__st_item;

/* Bytes of an item's data, or SIZE_MAX on overflow. */
size_t clg__st_item_bytes(const clg__st_item *it);

/* The header of a file holding the items in order (data offsets consecutive) and the
 * metadata, padded with spaces to a multiple of 8 as the reference writer pads it, so
 * that the data starts aligned: malloc'd, *outlen bytes (a NUL follows). Checks names
 * and keys (present, unique, UTF-8, not "__metadata__"). Errors, without a file name,
 * into err. */
clg_status clg__st_header(int n, const clg__st_item *items, int nmeta, const clg_safetensors_pair *meta, char **out,
                          size_t *outlen, char *err, size_t errlen);

/* Parse and validate buf, taking ownership of it when owned (freed by close, and on
 * failure too). */
clg_status clg__st_parse(unsigned char *buf, size_t len, bool owned, const char *name, clg_safetensors **out,
                         char *err, size_t errlen);

/* The file name a handle was opened with ("(memory)" for parsed bytes). */
const char *clg__st_name(const clg_safetensors *st);

#endif
