/* libFuzzer target: the IDX parser, through the gzip path when the input starts with
 * gzip's magic bytes (as clg_idx_read does), with a small inflate limit. */
#include <stdlib.h>

#include "data_impl.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char err[256];
    clg_host_array a;
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
        unsigned char *raw;
        size_t len;
        if (clg__gunzip(data, size, "fuzz.gz", (size_t)1 << 24, &raw, &len, err, sizeof err) != CLG_OK) return 0;
        if (clg__idx_parse(raw, len, "fuzz.gz", &a, err, sizeof err) == CLG_OK) clg_host_array_free(&a);
        free(raw);
        return 0;
    }
    if (clg__idx_parse(data, size, "fuzz.idx", &a, err, sizeof err) == CLG_OK) clg_host_array_free(&a);
    return 0;
}
