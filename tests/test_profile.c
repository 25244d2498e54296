/* CLG_PROFILE=1: per-kernel counts and device times, builds apart, a Chrome trace. */
#include <string.h>
#include <unistd.h>

#include "device_impl.h"
#include "optest.h"

int main(void)
{
    setenv("CLG_PROFILE", "1", 1);
    clg_device *dev = check_open_device();
    CHECK(clg_device_profiling(dev));
    /* Three self-tests of 4096 items: a fill and an axpy each, each kernel launched
     * as the device's table splits 4096 items (once where whole groups cover them). */
    for (int i = 0; i < 3; i++) CHECK_OK(dev, clg_device_selftest(dev, 4096));
    CHECK_OK(dev, clg_device_finish(dev));
    clg_kernel *kfill = clg__kernel_get(dev, "axpy", "-DT=float", "fill");
    clg_kernel *kaxpy = clg__kernel_get(dev, "axpy", "-DT=float", "axpy");
    CHECK_MSG(kfill && kaxpy, "%s", clg_device_error(dev));
    uint64_t nfill = kfill ? optest_launches_1d(dev, kfill, 4096) : 1;
    uint64_t naxpy = kaxpy ? optest_launches_1d(dev, kaxpy, 4096) : 1;
    clg_profiler *p = &dev->prof;
    int axpy = -1, fill = -1;
    for (int i = 0; i < p->nkernels; i++) {
        if (!strcmp(p->kernels[i].name, "axpy")) axpy = i;
        if (!strcmp(p->kernels[i].name, "fill")) fill = i;
    }
    CHECK(axpy >= 0 && fill >= 0);
    if (axpy >= 0 && fill >= 0) {
        CHECK_MSG(p->kernels[axpy].count == 3 * naxpy && p->kernels[fill].count == 3 * nfill,
                  "axpy launched %llu times, fill %llu; the table says %llu and %llu",
                  (unsigned long long)p->kernels[axpy].count, (unsigned long long)p->kernels[fill].count,
                  (unsigned long long)(3 * naxpy), (unsigned long long)(3 * nfill));
        CHECK(p->kernels[axpy].ns > 0 && p->kernels[axpy].min_ns <= p->kernels[axpy].max_ns);
    }
    CHECK_MSG(p->nbuilds == 1 && p->nspans == (size_t)(3 * (naxpy + nfill)), "%d builds, %zu spans", p->nbuilds,
              p->nspans);

    char path[256], text[1 << 16];
    snprintf(path, sizeof path, "%s/clgrad-trace-%ld.json", P_tmpdir, (long)getpid());
    CHECK_OK(dev, clg_device_profile_write_trace(dev, path));
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f) fclose(f);
    CHECK(n > 0 && text[0] == '{' && strstr(text, "\"traceEvents\""));
    CHECK(strstr(text, "\"name\":\"axpy\"") && strstr(text, "\"name\":\"build axpy\""));
    unlink(path);

    FILE *tbl = tmpfile();
    CHECK_OK(dev, clg_device_profile_print(dev, tbl));
    rewind(tbl);
    n = fread(text, 1, sizeof text - 1, tbl);
    text[n] = 0;
    fclose(tbl);
    CHECK_MSG(strstr(text, "axpy") && strstr(text, "program builds"), "%s", text);

    clg_device_profile_reset(dev);
    CHECK(p->nspans == 0 && p->nbuilds == 0);

    /* The times must be real ones. An axpy over 4M floats moves 48 MB: at least 4 us on
     * any device today (12 TB/s; an H100's memory moved them in 23 us). rusticl 22.3 stamps events 0, 1, 2, ...: there the profiler
     * must see that its clock does not tick and time kernels on the host instead. */
    CHECK_OK(dev, clg_device_selftest(dev, 1u << 22));
    CHECK_OK(dev, clg_device_finish(dev));
    for (int i = 0; i < p->nkernels; i++)
        if (!strcmp(p->kernels[i].name, "axpy"))
            CHECK_MSG(p->kernels[i].ns >= 4000, "axpy over 4M floats took %llu ns (%s)",
                      (unsigned long long)p->kernels[i].ns, p->host_timed ? "host-timed" : "device clock");

    /* Rows of two vectors or more that no whole group divides (a ResNet's 14 x 14 and
     * 7 x 7 planes) run as groups of whole rows where the device compiles per group
     * shape (group_tail): one launch each, not whole groups and a tail of groups one
     * item wide (src/device/launch.c, launch_exact). */
    const clg_device_params *dp = clg__device_params(dev);
    size_t tg = dp->group_tail;
    if (tg && 49 >= 2 * tg) {
        clg_device_profile_reset(dev);
        clg_scope_begin(dev);
        CHECK(clg_batch_norm(clg_ones(dev, CLG_F32, CLG_SHAPE(8, 3, 14, 14)), NULL, NULL, NULL, NULL, true, 0.1, 1e-5) &&
              clg_batch_norm(clg_ones(dev, CLG_F32, CLG_SHAPE(8, 3, 7, 7)), NULL, NULL, NULL, NULL, true, 0.1, 1e-5));
        CHECK_OK(dev, clg_device_finish(dev));
        clg_scope_end(dev);
        for (int i = 0; i < p->nkernels; i++)
            if (!strcmp(p->kernels[i].name, "bn_apply_rows"))
                CHECK_MSG(p->kernels[i].count == 2, "bn_apply_rows over rows of 196 and 49: %llu launches, not 2",
                          (unsigned long long)p->kernels[i].count);
    }
    clg_device_close(dev);

    /* Without CLG_PROFILE no events are kept. */
    unsetenv("CLG_PROFILE");
    dev = check_open_device();
    CHECK(!clg_device_profiling(dev));
    CHECK_OK(dev, clg_device_selftest(dev, 100));
    CHECK(dev->prof.npending == 0 && dev->prof.nkernels == 0);
    clg_device_close(dev);
    return check_report("test_profile");
}
