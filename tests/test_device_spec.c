/* Device discovery and every form of device spec, good and bad: first against a
 * made-up list (so GPU rules are tested on a CPU-only machine), then for real. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static clg_device_info fake(int i, int p, int d, clg_device_type t, const char *name, const char *vendor,
                            const char *platform)
{
    clg_device_info in;
    memset(&in, 0, sizeof in);
    in.index = i;
    in.platform_index = p;
    in.device_index = d;
    in.type = t;
    snprintf(in.name, sizeof in.name, "%s", name);
    snprintf(in.vendor, sizeof in.vendor, "%s", vendor);
    snprintf(in.platform, sizeof in.platform, "%s", platform);
    snprintf(in.c_version, sizeof in.c_version, "OpenCL C 1.2");
    return in;
}

static int find(const char *spec, const clg_device_info *in, int n)
{
    int idx = -2;
    char err[2048];
    clg_status st = clg_device_find(spec, in, n, &idx, err, sizeof err);
    if (st != CLG_OK) {
        /* A miss names the spec and lists what exists. */
        CHECK_MSG(strstr(err, "no OpenCL device matches") != NULL, "%s", err);
        CHECK_MSG(n == 0 || strstr(err, in[0].name) != NULL, "%s", err);
        CHECK(st == CLG_ERR_NO_DEVICE && idx == -1);
        return -1;
    }
    return idx;
}

static void fake_list(void)
{
    clg_device_info in[4] = {
        fake(0, 0, 0, CLG_DEVICE_CPU, "pthread-haswell-AMD EPYC 7B13", "AuthenticAMD", "Portable Computing Language"),
        fake(1, 1, 0, CLG_DEVICE_GPU, "NVIDIA H100 80GB HBM3", "NVIDIA Corporation", "NVIDIA CUDA"),
        fake(2, 2, 0, CLG_DEVICE_GPU, "gfx1100", "Advanced Micro Devices, Inc.", "AMD Accelerated Parallel Processing"),
        fake(3, 2, 1, CLG_DEVICE_CPU, "Intel(R) Xeon(R)", "Intel(R) Corporation", "Intel(R) OpenCL"),
    };
    snprintf(in[0].c_version, sizeof in[0].c_version, "OpenCL C 1.2 PoCL");
    CHECK(clg_device_default(in, 4) == 1);      /* first GPU */
    CHECK(clg_device_default(in, 1) == 0);      /* no GPU: first CPU */
    CHECK(clg_device_default(in, 0) == -1);
    CHECK(find(NULL, in, 4) == 1);
    CHECK(find("", in, 4) == 1);
    CHECK(find("default", in, 4) == 1);
    CHECK(find("gpu", in, 4) == 1);
    CHECK(find("GPU", in, 4) == 1);
    CHECK(find("cpu", in, 4) == 0);
    CHECK(find("0", in, 4) == 0);
    CHECK(find("3", in, 4) == 3);
    CHECK(find(" 2 ", in, 4) == 2);
    CHECK(find("2:1", in, 4) == 3);
    CHECK(find("1:0", in, 4) == 1);
    CHECK(find("nvidia", in, 4) == 1);
    CHECK(find("H100", in, 4) == 1);
    CHECK(find("amd", in, 4) == 2);             /* the Radeon, not the EPYC CPU */
    CHECK(find("epyc", in, 4) == 0);
    CHECK(find("pocl", in, 4) == 0);            /* from the OpenCL C version string */
    CHECK(find("intel", in, 4) == 3);
    CHECK(find("Intel(R) OpenCL", in, 4) == 3);
    /* misses */
    CHECK(find("4", in, 4) == -1);
    CHECK(find("99", in, 4) == -1);
    CHECK(find("9:9", in, 4) == -1);
    CHECK(find("0:5", in, 4) == -1);
    CHECK(find("tpu", in, 4) == -1);
    CHECK(find("-1", in, 4) == -1);
    CHECK(find("gpu", in, 1) == -1);            /* a CPU-only machine */
    CHECK(find("cpu", in + 1, 2) == -1);
    /* bad arguments */
    int idx;
    CHECK(clg_device_find("0", NULL, 2, &idx, NULL, 0) == CLG_ERR_INVALID_ARGUMENT);
    CHECK(clg_device_find("0", in, 4, NULL, NULL, 0) == CLG_ERR_INVALID_ARGUMENT);
}

static void real_devices(void)
{
    int n = 0;
    char err[1024];
    CHECK_MSG(clg_device_list(NULL, 0, &n, err, sizeof err) == CLG_OK, "%s", err);
    CHECK_MSG(n >= 1, "no OpenCL device at all");
    if (n < 1) return;
    clg_device_info *in = calloc((size_t)n, sizeof *in);
    int m = 0;
    CHECK(clg_device_list(in, n, &m, err, sizeof err) == CLG_OK && m == n);
    for (int i = 0; i < n; i++) {
        CHECK(in[i].index == i && in[i].name[0] && in[i].platform[0] && in[i].driver[0]);
        CHECK(in[i].c_version[0] && in[i].compute_units > 0 && in[i].global_mem > 0);
        CHECK(in[i].max_alloc > 0 && in[i].max_alloc <= in[i].global_mem);
        CHECK(in[i].max_work_group > 0 && in[i].local_mem > 0 && in[i].base_align > 0);
    }
    CHECK(clg_device_list(NULL, 1, &m, NULL, 0) == CLG_ERR_INVALID_ARGUMENT);

    /* Open by every form that names device 0, then a miss. */
    char pd[32], idx[16];
    snprintf(pd, sizeof pd, "%d:%d", in[0].platform_index, in[0].device_index);
    snprintf(idx, sizeof idx, "%d", in[0].index);
    const char *specs[] = {NULL, idx, pd, in[0].name, in[0].platform};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        clg_device *dev;
        clg_status st = clg_device_open(specs[i], &dev);
        CHECK_MSG(st == CLG_OK, "spec %s: %s", specs[i] ? specs[i] : "(null)", clg_device_error(dev));
        if (st == CLG_OK) CHECK(clg_device_get_info(dev)->name[0]);
        clg_device_close(dev);
    }
    clg_device *dev;
    clg_status st = clg_device_open("no-such-device-anywhere", &dev);
    CHECK(st == CLG_ERR_NO_DEVICE && dev != NULL);
    CHECK_MSG(strstr(clg_device_error(dev), "no-such-device-anywhere") && strstr(clg_device_error(dev), in[0].name),
              "%s", clg_device_error(dev));
    clg_device_close(dev);

    /* CLG_DEVICE is read when the spec is NULL; an explicit spec wins. */
    setenv("CLG_DEVICE", "no-such-device-anywhere", 1);
    CHECK(clg_device_open(NULL, &dev) == CLG_ERR_NO_DEVICE);
    clg_device_close(dev);
    CHECK(clg_device_open(idx, &dev) == CLG_OK);
    clg_device_close(dev);
    setenv("CLG_DEVICE", pd, 1);
    CHECK(clg_device_open(NULL, &dev) == CLG_OK);
    clg_device_close(dev);
    unsetenv("CLG_DEVICE");
    CHECK(clg_device_open(NULL, NULL) == CLG_ERR_INVALID_ARGUMENT);
    free(in);
}

int main(void)
{
    const char *keep = getenv("CLG_DEVICE");
    char saved[256] = "";
    if (keep) snprintf(saved, sizeof saved, "%s", keep);
    unsetenv("CLG_DEVICE");
    fake_list();
    real_devices();
    if (saved[0]) setenv("CLG_DEVICE", saved, 1);
    return check_report("test_device_spec");
}
