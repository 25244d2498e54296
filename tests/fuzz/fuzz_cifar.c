/* libFuzzer target: the CIFAR-10 batch parser. */
#include "data_impl.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char err[256];
    clg_host_array x, y;
    if (clg__cifar10_parse(data, size, "fuzz.bin", &x, &y, err, sizeof err) == CLG_OK) {
        clg_host_array_free(&x);
        clg_host_array_free(&y);
    }
    return 0;
}
