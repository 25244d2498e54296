/* The per-device parameter table (src/device/params.c): defaults that follow the
 * device's properties, overrides from CLG_PARAMS and CLG_PARAMS_FILE with errors that
 * name the key, and launches that honour the table and the device's limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "device_impl.h"

/* Whether /proc/cpuinfo's first "flags" line lists `flag`: 1 or 0; -1 where there is none. */
static int cpu_flag(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return -1;
    char line[8192];
    int found = -1;
    while (found < 0 && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5)) continue;
        found = 0;
        for (char *t = strtok(strchr(line, ':') ? strchr(line, ':') + 1 : line, " \t\n"); t; t = strtok(NULL, " \t\n"))
            if (!strcmp(t, flag)) found = 1;
    }
    fclose(f);
    return found;
}

static clg_device *open_with(const char *params, const char *file)
{
    if (params) setenv("CLG_PARAMS", params, 1);
    else unsetenv("CLG_PARAMS");
    if (file) setenv("CLG_PARAMS_FILE", file, 1);
    else unsetenv("CLG_PARAMS_FILE");
    clg_device *dev = NULL;
    clg_device_open(NULL, &dev);
    return dev;
}

static void test_defaults(void)
{
    clg_device *dev = open_with(NULL, NULL);
    CHECK_MSG(clg_device_last_status(dev) == CLG_OK, "open: %s", clg_device_error(dev));
    const clg_device_params *p = clg__device_params(dev);
    const clg_device_info *in = clg_device_get_info(dev);
    CHECK_MSG(p->max_group == in->max_work_group, "max_group %zu, device %zu", p->max_group, in->max_work_group);
    CHECK_MSG(p->local_mem == in->local_mem, "local_mem");
    CHECK_MSG(p->group_1d >= 1 && p->group_1d <= p->max_group && p->group_1d <= p->max_item[0], "group_1d %zu",
          p->group_1d);
    CHECK_MSG(p->group_1d_min >= 1 && p->group_1d_min <= p->group_1d, "group_1d_min %zu", p->group_1d_min);
    CHECK_MSG(p->group_reduce >= 1 && p->group_reduce <= p->max_group, "group_reduce %zu", p->group_reduce);
    /* Which engine follows from how work-items run, never from the device's type. */
    const char *want = p->vector_float > 1 ? "host" : "tune";
    CHECK_MSG(!strcmp(p->gemm, want), "gemm %s with vector width %d, want %s", p->gemm, p->vector_float, want);
    /* clgrad stores binaries unless the driver caches compiled kernels itself (POCL). */
    bool pocl = strstr(in->platform, "Portable Computing Language") != NULL;
    const char *kc = getenv("POCL_KERNEL_CACHE");
    bool want_store = !pocl || (kc && !strcmp(kc, "0"));
    CHECK_MSG(p->binary_cache == want_store, "binary_cache %d on %s", p->binary_cache, in->platform);
    char buf[1024];
    clg__params_format(p, buf, sizeof buf);
    CHECK_MSG(strstr(buf, "gemm = ") && strstr(buf, "group_1d = ") && strstr(buf, "binary_cache = "), "format: %s",
              buf);
    /* Set after open, through the public call. */
    CHECK_MSG(clg_device_set_param(dev, "binary_cache", want_store ? "off" : "on") == CLG_OK &&
                  p->binary_cache == !want_store, "set binary_cache");
    CHECK_MSG(clg_device_set_param(dev, "binary_cache", "maybe") == CLG_ERR_INVALID_ARGUMENT &&
                  strstr(clg_device_error(dev), "binary_cache = \"maybe\"") &&
                  strstr(clg_device_error(dev), "clg_device_set_param"), "bad value: %s", clg_device_error(dev));
    /* conv2d's input gradient per plane where work-items are SIMD threads. */
    CHECK_MSG(p->col2im_planes == (p->vector_float > 1) && strstr(buf, p->col2im_planes ? "col2im = planes" : "col2im = gather"),
              "col2im %d with vector width %d: %s", p->col2im_planes, p->vector_float, buf);
    CHECK_MSG(clg_device_set_param(dev, "col2im", "gather") == CLG_OK && !p->col2im_planes, "set col2im");
    CHECK_MSG(p->gemm_dot && strstr(buf, "gemm_dot = on"), "gemm_dot: %s", buf);
    CHECK_MSG(clg_device_set_param(dev, "gemm_dot", "off") == CLG_OK && !p->gemm_dot, "set gemm_dot");
    CHECK_MSG(clg_device_set_param(dev, "gemm_dot", "auto") == CLG_ERR_INVALID_ARGUMENT &&
                  strstr(clg_device_error(dev), "gemm_dot = \"auto\""), "bad gemm_dot: %s", clg_device_error(dev));
    /* The packed engine's one-launch small products: on (2^26) where float vectors are 16 wide. */
    CHECK_MSG(p->gemm_small == (p->vector_float >= 16 ? (size_t)1 << 26 : 0) && strstr(buf, "gemm_small = "),
              "gemm_small %zu with vector width %d: %s", p->gemm_small, p->vector_float, buf);
    CHECK_MSG(clg_device_set_param(dev, "gemm_small", "0") == CLG_OK && p->gemm_small == 0, "set gemm_small");
    CHECK_MSG(clg_device_set_param(dev, "gemm_small", "some") == CLG_ERR_INVALID_ARGUMENT &&
                  strstr(clg_device_error(dev), "gemm_small = \"some\""), "bad gemm_small: %s", clg_device_error(dev));
    CHECK_MSG(clg_device_set_param(dev, "col2im", "rows") == CLG_ERR_INVALID_ARGUMENT &&
                  strstr(clg_device_error(dev), "col2im = \"rows\""), "bad col2im: %s", clg_device_error(dev));
    /* conv2d keeps its columns for the weight gradient unless told to rebuild them. */
    CHECK_MSG(p->item_loops == 32768 && strstr(buf, "item_loops = 32768"), "item_loops: %s", buf);
    CHECK(clg_device_set_param(dev, "item_loops", "65536") == CLG_ERR_INVALID_ARGUMENT);   /* over llvmpipe's limit */
    /* The pool keeps up to half the device's memory of freed buffers; none on Oclgrind. */
    bool oclgrind = strstr(in->platform, "Oclgrind") != NULL;
    CHECK_MSG(p->pool_keep == (oclgrind ? 0 : in->global_mem / 2) && strstr(buf, "pool_keep = "),
              "pool_keep %zu: %s", p->pool_keep, buf);
    CHECK_MSG(strstr(buf, p->attention_rows ? "attention = rows" : "attention = tiles"), "attention: %s", buf);
    CHECK(clg_device_set_param(dev, "attention", "tiles") == CLG_OK && !p->attention_rows);
    CHECK(clg_device_set_param(dev, "attention", "rows") == CLG_OK && p->attention_rows);
    CHECK(clg_device_set_param(dev, "attention", "blocks") == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(p->conv_keep_columns && strstr(buf, "conv_columns = keep"), "conv_columns: %s", buf);
    /* The emulated matrix-unit kernel unoptimized where POCL compiles it. */
    CHECK_MSG(p->mma_opt == !pocl && strstr(buf, pocl ? "mma_opt = off" : "mma_opt = on"), "mma_opt: %s", buf);
    CHECK(clg_device_set_param(dev, "mma_opt", "on") == CLG_OK && p->mma_opt);
    CHECK(clg_device_set_param(dev, "mma_opt", "fast") == CLG_ERR_INVALID_ARGUMENT);
    /* Intel's sub-group instruction: the suite's CPU devices report no
     * cl_intel_subgroup_matrix_multiply_accumulate, so neither xmx nor a width of 16 from
     * the device; the kinds by name, widths 8 and 16 alone. */
    clg_mma_kind own_mma = p->mma;
    int own_lanes = p->mma_lanes;
    char want_lanes[24];
    snprintf(want_lanes, sizeof want_lanes, "mma_lanes = %d\n", own_lanes);
    CHECK_MSG((own_lanes == 8 || own_lanes == 16) && strstr(buf, want_lanes), "mma_lanes: %s", buf);
    if (pocl || strstr(in->name, "llvmpipe") || strstr(in->platform, "Oclgrind"))
        CHECK_MSG(own_mma == CLG_MMA_NONE && own_lanes == 8, "mma on %s: %s", in->name, buf);
    CHECK(clg_device_set_param(dev, "mma", "emulate-xmx") == CLG_OK && p->mma == CLG_MMA_EMULATE_XMX);
    CHECK(clg_device_set_param(dev, "mma", "xmx") == CLG_OK && p->mma == CLG_MMA_XMX);
    CHECK_MSG(clg_device_set_param(dev, "mma", "wmma") == CLG_ERR_INVALID_ARGUMENT &&
                  strstr(clg_device_error(dev), "none, ptx, emulate, xmx or emulate-xmx"), "%s", clg_device_error(dev));
    CHECK(clg_device_set_param(dev, "mma_lanes", "16") == CLG_OK && p->mma_lanes == 16);
    CHECK(clg_device_set_param(dev, "mma_lanes", "32") == CLG_ERR_INVALID_ARGUMENT && p->mma_lanes == 16);
    CHECK(clg_device_set_param(dev, "mma_lanes", own_lanes == 8 ? "8" : "16") == CLG_OK &&
          clg_device_set_param(dev, "mma", clg__mma_kind_name(own_mma)) == CLG_OK);
    /* fma() in the GEMM and attention kernels where the device fuses in hardware: POCL
     * where the host CPU has FMA (its flags in /proc/cpuinfo); llvmpipe and Oclgrind
     * report no float fused multiply-add. */
    bool llvmpipe = strstr(in->name, "llvmpipe") != NULL;
    int host_fma = cpu_flag("fma");
    if ((pocl && host_fma >= 0) || llvmpipe || oclgrind) {
        bool want = pocl && host_fma == 1;
        CHECK_MSG(p->fma == want && strstr(buf, want ? "fma = on" : "fma = off"), "fma on %s: %s", in->name, buf);
    }
    CHECK(clg_device_set_param(dev, "fma", "off") == CLG_OK && !p->fma);
    CHECK(clg_device_set_param(dev, "fma", "on") == CLG_OK && p->fma);
    CHECK(clg_device_set_param(dev, "fma", "fused") == CLG_ERR_INVALID_ARGUMENT);
    CHECK_MSG(clg_device_set_param(dev, "conv_columns", "rebuild") == CLG_OK && !p->conv_keep_columns,
              "set conv_columns");
    CHECK_MSG(clg_device_set_param(dev, "conv_columns", "drop") == CLG_ERR_INVALID_ARGUMENT &&
                  strstr(clg_device_error(dev), "conv_columns = \"drop\""), "bad conv_columns: %s",
              clg_device_error(dev));
    clg_device_close(dev);
}

static void test_overrides(void)
{
    clg_device *dev = open_with("gemm=tiled, group_1d = 64,group_reduce=8", NULL);
    CHECK_MSG(clg_device_last_status(dev) == CLG_OK, "open: %s", clg_device_error(dev));
    const clg_device_params *p = clg__device_params(dev);
    CHECK_MSG(!strcmp(p->gemm, "tiled"), "gemm %s", p->gemm);
    CHECK_MSG(p->group_1d == 64 && p->group_reduce == 8, "group_1d %zu group_reduce %zu", p->group_1d, p->group_reduce);
    clg_device_close(dev);

    /* A file first, then the environment on top of it. */
    char path[] = "/tmp/clg_params_XXXXXX";
    int fd = mkstemp(path);
    CHECK_MSG(fd >= 0, "mkstemp");
    FILE *f = fdopen(fd, "w");
    fprintf(f, "# tuned by hand\ngemm = clblast\n\ngroup_1d = 32\n");
    fclose(f);
    dev = open_with("group_1d=16", path);
    CHECK_MSG(clg_device_last_status(dev) == CLG_OK, "open: %s", clg_device_error(dev));
    p = clg__device_params(dev);
    CHECK_MSG(!strcmp(p->gemm, "clblast") && p->group_1d == 16, "gemm %s group_1d %zu", p->gemm, p->group_1d);
    clg_device_close(dev);

    /* Errors name the key, the value and where they came from. */
    struct { const char *env, *want; } bad[] = {
        {"gemm=fast", "gemm = \"fast\""},
        {"group_1d=0", "group_1d = \"0\""},
        {"group_1d=12x", "group_1d = \"12x\""},
        {"group_1d=999999999", "group_1d"},
        {"colour=blue", "unknown key \"colour\""},
        {"gemm", "want key=value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        dev = open_with(bad[i].env, NULL);
        CHECK_MSG(clg_device_last_status(dev) == CLG_ERR_INVALID_ARGUMENT, "%s: status %s", bad[i].env,
              clg_status_str(clg_device_last_status(dev)));
        CHECK_MSG(strstr(clg_device_error(dev), bad[i].want) && strstr(clg_device_error(dev), "CLG_PARAMS"),
              "%s: %s", bad[i].env, clg_device_error(dev));
        clg_device_close(dev);
    }
    f = fopen(path, "w");
    fprintf(f, "gemm = packed\nmax_group = banana\n");
    fclose(f);
    dev = open_with(NULL, path);
    CHECK_MSG(clg_device_last_status(dev) == CLG_ERR_INVALID_ARGUMENT && strstr(clg_device_error(dev), ":2)"),
          "file error names the line: %s", clg_device_error(dev));
    clg_device_close(dev);
    remove(path);
    dev = open_with(NULL, "/nonexistent/params");
    CHECK_MSG(clg_device_last_status(dev) == CLG_ERR_IO, "missing file: %s", clg_device_error(dev));
    clg_device_close(dev);
    /* a folder, an endless device, a FIFO (whose open must not block) and a NUL byte are
     * each refused, saying so (they were skipped, or hung) */
    const char *dir = P_tmpdir;
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/clgrad-params-fifo-%ld", P_tmpdir, (long)getpid());
    CHECK(mkfifo(fifo, 0600) == 0);
    const struct { const char *file, *want; } refused[] = {
        {dir, "is a directory"}, {"/dev/zero", "not a regular file"}, {fifo, "not a regular file (a FIFO)"}};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        dev = open_with(NULL, refused[i].file);
        CHECK_MSG(clg_device_last_status(dev) == CLG_ERR_IO && strstr(clg_device_error(dev), refused[i].want) &&
                      strstr(clg_device_error(dev), "CLG_PARAMS_FILE"),
                  "CLG_PARAMS_FILE %s: %s", refused[i].file, clg_device_error(dev));
        clg_device_close(dev);
    }
    unlink(fifo);
    /* kernel sources under CLG_KERNEL_DIR that are FIFOs: an error, not a blocked open */
    char kdir[256], kfile[300];
    snprintf(kdir, sizeof kdir, "%s/clgrad-kdir-%ld", P_tmpdir, (long)getpid());
    CHECK(mkdir(kdir, 0700) == 0);
    const char *names[] = {"common", "axpy"};
    for (int i = 0; i < 2; i++) {
        snprintf(kfile, sizeof kfile, "%s/%s.cl", kdir, names[i]);
        CHECK(mkfifo(kfile, 0600) == 0);
    }
    const char *cache = getenv("CLG_CACHE_DIR");
    char *cache_was = cache ? strdup(cache) : NULL;
    setenv("CLG_KERNEL_DIR", kdir, 1);
    setenv("CLG_CACHE_DIR", "off", 1);
    dev = open_with(NULL, NULL);
    clg_kernel *k = clg__kernel_get(dev, "axpy", "-DT=float", "fill");
    CHECK_MSG(!k && strstr(clg_device_error(dev), "not a regular file (a FIFO)"), "FIFO kernel source: %s",
              clg_device_error(dev));
    clg_device_close(dev);
    unsetenv("CLG_KERNEL_DIR");
    if (cache_was) setenv("CLG_CACHE_DIR", cache_was, 1);
    else unsetenv("CLG_CACHE_DIR");
    free(cache_was);
    for (int i = 0; i < 2; i++) {
        snprintf(kfile, sizeof kfile, "%s/%s.cl", kdir, names[i]);
        unlink(kfile);
    }
    rmdir(kdir);
    f = fopen(path, "wb");
    fwrite("gemm = packed\n\0item_loops = 64\n", 1, 31, f);
    fclose(f);
    dev = open_with(NULL, path);
    CHECK_MSG(clg_device_last_status(dev) == CLG_ERR_INVALID_ARGUMENT && strstr(clg_device_error(dev), "a NUL byte"),
              "a NUL byte: %s", clg_device_error(dev));
    clg_device_close(dev);
    remove(path);
}

/* fill over n floats through clg__launch_1d, read back, all equal to v. */
static void fill_and_check(clg_device *dev, size_t n, const char *what)
{
    clg_kernel *k = clg__kernel_get(dev, "axpy", "-DT=float", "fill");
    CHECK_MSG(k != NULL, "%s: kernel: %s", what, clg_device_error(dev));
    if (!k) return;
    clg_buffer *b = clg__buffer_alloc(dev, (n + 64) * sizeof(float));
    float *h = calloc(n + 64, sizeof(float));
    for (size_t i = 0; i < n + 64; i++) h[i] = -1;
    clg_status st = clg__write(dev, b, 0, h, (n + 64) * sizeof(float));
    clg_arg a[] = {CLG_ARG_I(n), CLG_ARG_F(3.0f), CLG_ARG_B(b)};
    if (!st) st = clg__launch_1d(dev, k, a, 3, n);
    if (!st) st = clg__read(dev, b, 0, h, (n + 64) * sizeof(float));
    CHECK_MSG(st == CLG_OK, "%s: %s", what, clg_device_error(dev));
    size_t bad = 0;
    for (size_t i = 0; i < n + 64; i++) bad += h[i] != (i < n ? 3.0f : -1.0f);
    CHECK_MSG(bad == 0, "%s: %zu wrong elements of %zu", what, bad, n);
    free(h);
    clg__buffer_release(b);
}

static void test_launches(void)
{
    /* Every split the table allows covers exactly n items: whole groups and a tail, or
     * one launch with a group that divides n. */
    const char *settings[] = {"group_1d=256,group_1d_min=256", "group_1d=64,group_1d_min=8", "group_1d=7,group_1d_min=1",
                              "max_group=32"};
    size_t sizes[] = {1, 7, 63, 64, 65, 250, 1000, 4099};
    for (size_t s = 0; s < sizeof settings / sizeof *settings; s++) {
        clg_device *dev = open_with(settings[s], NULL);
        CHECK_MSG(clg_device_last_status(dev) == CLG_OK, "%s: %s", settings[s], clg_device_error(dev));
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            char what[96];
            snprintf(what, sizeof what, "%s, n = %zu", settings[s], sizes[i]);
            fill_and_check(dev, sizes[i], what);
        }
        clg_device_close(dev);
    }

    /* A group beyond the device's (here the table's) limit, or more local memory than
     * it has, is an error naming the kernel, never a launch. */
    clg_device *dev = open_with("max_group=32,local_mem=1024", NULL);
    clg_kernel *k = clg__kernel_get(dev, "axpy", "-DT=float", "fill");
    CHECK_MSG(k != NULL, "kernel: %s", clg_device_error(dev));
    clg_buffer *b = clg__buffer_alloc(dev, 64 * sizeof(float));
    clg_arg a[] = {CLG_ARG_I(64), CLG_ARG_F(1.0f), CLG_ARG_B(b)};
    size_t global = 64, local = 64;
    CHECK_MSG(clg__launch(dev, k, a, 3, 1, &global, &local) == CLG_ERR_INVALID_ARGUMENT &&
              strstr(clg_device_error(dev), "fill") && strstr(clg_device_error(dev), "64 items"),
          "oversized group: %s", clg_device_error(dev));
    clg_device_clear_error(dev);
    local = 32;
    CHECK_MSG(clg__launch(dev, k, a, 3, 1, &global, &local) == CLG_OK, "group of 32: %s", clg_device_error(dev));
    clg_arg la[] = {CLG_ARG_I(64), CLG_ARG_F(1.0f), CLG_ARG_B(b), CLG_ARG_LOCAL(2048)};
    CHECK_MSG(clg__launch(dev, k, la, 4, 1, &global, &local) == CLG_ERR_INVALID_ARGUMENT &&
              strstr(clg_device_error(dev), "local memory"),
          "local memory: %s", clg_device_error(dev));
    clg__buffer_release(b);
    clg_device_close(dev);
    unsetenv("CLG_PARAMS");
}

int main(void)
{
    test_defaults();
    test_overrides();
    test_launches();
    return check_report("test_device_params");
}
