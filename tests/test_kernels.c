/* Kernel loading: embedded sources build lazily; CLG_KERNEL_DIR replaces them with
 * files from disk; a kernel that does not compile gives CLG_ERR_BUILD with the build
 * log in the message, and leaves the device usable; zero-size launches do nothing. */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "device_impl.h"

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

int main(void)
{
    setenv("CLG_CACHE_DIR", "off", 1);
    unsetenv("CLG_KERNEL_DIR");
    clg_device *dev = check_open_device();
    CHECK(clg_device_program_stats(dev).built_from_source == 0);
    clg_kernel *k = clg__kernel_get(dev, "axpy", "-DT=float", "axpy");
    CHECK_MSG(k != NULL, "%s", clg_device_error(dev));
    CHECK(clg_device_program_stats(dev).built_from_source == 1);
    /* The same kernel again, and its sibling: no new build. */
    CHECK(clg__kernel_get(dev, "axpy", "-DT=float", "axpy") == k);
    CHECK(clg__kernel_get(dev, "axpy", "-DT=float", "fill") != NULL);
    CHECK(clg_device_program_stats(dev).built_from_source == 1);
    /* Other options are another program. */
    if (clg_device_get_info(dev)->fp64) {
        CHECK(clg__kernel_get(dev, "axpy", "-DT=double", "axpy") != NULL);
        CHECK(clg_device_program_stats(dev).built_from_source == 2);
    }
    /* Unknown program and unknown kernel are errors that name them. */
    CHECK(clg__kernel_get(dev, "nosuchprogram", "", "x") == NULL);
    CHECK(strstr(clg_device_error(dev), "nosuchprogram.cl") != NULL);
    CHECK(clg__kernel_get(dev, "axpy", "-DT=float", "nosuchkernel") == NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "CL_INVALID_KERNEL_NAME") && strstr(clg_device_error(dev), "nosuchkernel"),
              "%s", clg_device_error(dev));
    /* A zero-size launch enqueues nothing and succeeds. */
    clg_arg args[] = {CLG_ARG_I(0), CLG_ARG_F(1), CLG_ARG_B(NULL), CLG_ARG_B(NULL)};
    CHECK_OK(dev, clg__launch_1d(dev, k, args, 4, 0));
    clg_device_close(dev);

    /* Kernels from disk: a directory with a broken axpy.cl. */
    char dir[256];
    snprintf(dir, sizeof dir, "%s/clgrad-kdir-%ld", P_tmpdir, (long)getpid());
    mkdir(dir, 0755);
    char common[300], axpy[300];
    snprintf(common, sizeof common, "%s/common.cl", dir);
    snprintf(axpy, sizeof axpy, "%s/axpy.cl", dir);
    write_file(common, "#define T float\n");
    write_file(axpy, "__kernel void axpy(__global T *y) { y[0] = undefined_symbol_xyz; }\n");
    setenv("CLG_KERNEL_DIR", dir, 1);
    dev = check_open_device();
    clg_device_set_log(dev, NULL, NULL);
    CHECK(clg__kernel_get(dev, "axpy", "-DT=float", "axpy") == NULL);
    CHECK(clg_device_last_status(dev) == CLG_ERR_BUILD);
    const char *e = clg_device_error(dev);
    CHECK_MSG(strstr(e, "CL_BUILD_PROGRAM_FAILURE") && strstr(e, "undefined_symbol_xyz") && strstr(e, "axpy.cl"),
              "%s", e);
    /* Fix the file: the device is still usable and the new source is used. */
    write_file(axpy, "__kernel void axpy(__global T *y) { y[get_global_id(0)] = 42.0f; }\n");
    clg_kernel *k2 = clg__kernel_get(dev, "axpy", "-DT=float", "axpy");
    CHECK_MSG(k2 != NULL, "%s", clg_device_error(dev));
    clg_buffer *b = clg__buffer_alloc(dev, 16);
    float out[4] = {0};
    if (k2 && b) {
        clg_arg a[] = {CLG_ARG_B(b)};
        size_t g = 4;
        CHECK_OK(dev, clg__launch(dev, k2, a, 1, 1, &g, NULL));
        CHECK_OK(dev, clg__read(dev, b, 0, out, sizeof out));
    }
    CHECK(out[0] == 42.0f && out[3] == 42.0f);
    clg__buffer_release(b);
    /* A missing file is an I/O error naming the path. */
    CHECK(clg__kernel_get(dev, "elementwise_missing", "", "x") == NULL);
    CHECK(clg_device_last_status(dev) == CLG_ERR_IO && strstr(clg_device_error(dev), dir));
    clg_device_close(dev);
    unlink(common);
    unlink(axpy);
    rmdir(dir);
    return check_report("test_kernels");
}
