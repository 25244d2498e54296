/* hello_device: the smallest clgrad program. Opens the default device (or the one
 * CLG_DEVICE names), says what it is, and runs a kernel on it.
 *
 *   ./build/examples/hello_device
 *   CLG_DEVICE=cpu CLG_PROFILE=1 ./build/examples/hello_device
 */
#include <clgrad.h>
#include <stdio.h>

int main(void)
{
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) {
        fprintf(stderr, "hello_device: %s\n", clg_device_error(dev));
        clg_device_close(dev);
        return 1;
    }
    const clg_device_info *in = clg_device_get_info(dev);
    printf("device: %s (%s, %s), %u compute units, %.1f GiB\n", in->name, in->platform, in->driver,
           in->compute_units, in->global_mem / (double)(1u << 30));

    /* Compiles a kernel on first use (or loads it from the cache), runs it over a
     * million floats and checks the result on the host. */
    if (clg_device_selftest(dev, 1 << 20) != CLG_OK) {
        fprintf(stderr, "hello_device: %s\n", clg_device_error(dev));
        clg_device_close(dev);
        return 1;
    }
    clg_program_stats ps = clg_device_program_stats(dev);
    printf("ran axpy over 1048576 floats: correct. Kernel %s in %.2f s.\n",
           ps.loaded_from_cache ? "loaded from the cache" : "compiled", ps.compile_seconds);
    if (clg_device_profiling(dev)) clg_device_profile_print(dev, stdout);
    clg_device_close(dev);
    return 0;
}
