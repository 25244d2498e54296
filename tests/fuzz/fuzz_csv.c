/* libFuzzer target: the CSV parser, with the options taken from the first byte. */
#include "data_impl.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1) return 0;
    clg_csv_options o = {.label_column = (data[0] & 7) - 4, .header = (data[0] >> 3) % 3 - 1};
    char err[256];
    clg_host_array f, l;
    if (clg__csv_parse((const char *)data + 1, size - 1, "fuzz.csv", &o, &f, &l, err, sizeof err) == CLG_OK) {
        clg_host_array_free(&f);
        clg_host_array_free(&l);
    }
    return 0;
}
