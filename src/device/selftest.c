/* selftest.c: one small real kernel through the whole device path, for
 * `clgrad selftest`, the quick-start demo and CI: a run where no kernel compiled or
 * ran must not look green. */
#include <math.h>
#include <stdlib.h>

#include "device_impl.h"

static clg_status run(clg_device *dev, size_t n, float *hx, float *hy, float *out)
{
    clg_kernel *fill = clg__kernel_get(dev, "axpy", "-DT=float", "fill");
    clg_kernel *axpy = fill ? clg__kernel_get(dev, "axpy", "-DT=float", "axpy") : NULL;
    if (!axpy) return dev->status;
    clg_buffer *x = clg__buffer_alloc(dev, n * sizeof(float));
    clg_buffer *y = x ? clg__buffer_alloc(dev, n * sizeof(float)) : NULL;
    clg_status st = y ? CLG_OK : dev->status;
    if (!st) st = clg__write(dev, x, 0, hx, n * sizeof(float));
    if (!st) {
        clg_arg a[] = {CLG_ARG_I(n), CLG_ARG_F(0.25f), CLG_ARG_B(y)};
        st = clg__launch_1d(dev, fill, a, 3, n);
    }
    if (!st) {
        clg_arg a[] = {CLG_ARG_I(n), CLG_ARG_F(2.0f), CLG_ARG_B(x), CLG_ARG_B(y)};
        st = clg__launch_1d(dev, axpy, a, 4, n);
    }
    if (!st) st = clg__read(dev, y, 0, out, n * sizeof(float));
    for (size_t i = 0; !st && i < n; i++) {
        hy[i] = 2.0f * hx[i] + 0.25f;
        if (out[i] != hy[i])
            st = clg__fail(dev, CLG_ERR_OPENCL, "selftest on %s: y[%zu] = %g, expected %g",
                           dev->info.name, i, out[i], hy[i]);
    }
    clg__buffer_release(x);
    clg__buffer_release(y);
    return st;
}

clg_status clg_device_selftest(clg_device *dev, size_t n)
{
    if (!clg__device_is_open(dev)) return dev ? clg__fail(dev, CLG_ERR_NO_DEVICE, "selftest: device not open")
                                        : CLG_ERR_INVALID_ARGUMENT;
    if (n == 0 || n > (1u << 28)) return clg__fail(dev, CLG_ERR_INVALID_ARGUMENT, "selftest: n = %zu", n);
    float *hx = malloc(n * sizeof(float)), *hy = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    clg_status st = (hx && hy && out) ? CLG_OK : clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "selftest: host memory");
    for (size_t i = 0; !st && i < n; i++) hx[i] = (float)(i % 1000) * 0.5f - 7.0f;
    if (!st) st = run(dev, n, hx, hy, out);
    free(hx);
    free(hy);
    free(out);
    return st;
}
