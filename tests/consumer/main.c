/* Uses only the installed headers and library: open a device, run a kernel. */
#include <clgrad.h>
#include <stdio.h>

int main(void)
{
    clg_device *dev;
    clg_status st = clg_device_open(NULL, &dev);
    if (st == CLG_OK) st = clg_device_selftest(dev, 1000);
    if (st != CLG_OK) {
        fprintf(stderr, "consumer: %s: %s\n", clg_status_str(st), clg_device_error(dev));
        clg_device_close(dev);
        return 1;
    }
    /* install_consumer.sh compares both versions with CMake's project version. */
    printf("consumer: clgrad %s (headers %s) ran a kernel on %s\n", clg_version(), CLG_VERSION,
           clg_device_get_info(dev)->name);
    clg_device_close(dev);
    return 0;
}
