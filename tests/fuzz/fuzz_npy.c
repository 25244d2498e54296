/* libFuzzer target: the .npy parser, and the writer on whatever parsed (its output
 * must parse back to the same array). */
#include <stdlib.h>
#include <string.h>

#include "data_impl.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char err[256];
    clg_host_array a, b;
    if (clg__npy_parse(data, size, "fuzz.npy", &a, err, sizeof err) != CLG_OK) return 0;
    unsigned char *out;
    size_t len;
    if (clg__npy_format(&a, "fuzz.npy", &out, &len, err, sizeof err) == CLG_OK) {
        if (clg__npy_parse(out, len, "again.npy", &b, err, sizeof err) != CLG_OK || b.bytes != a.bytes ||
            memcmp(a.data, b.data, a.bytes) != 0)
            abort();   /* what clgrad writes, clgrad must read back */
        clg_host_array_free(&b);
        free(out);
    }
    clg_host_array_free(&a);
    return 0;
}
