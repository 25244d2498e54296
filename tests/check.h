/* check.h: the few macros the tests share. A failed CHECK prints where and why and
 * makes the test exit non-zero at the end; nothing here skips. */
#ifndef CLGRAD_TESTS_CHECK_H
#define CLGRAD_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clgrad.h>

/* One pair of counters per test program, shared by its files (tests/helpers too). */
__attribute__((weak)) int check_failures;
__attribute__((weak)) int check_count;

#define CHECK(cond)                                                               \
    do {                                                                          \
        check_count++;                                                            \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            check_failures++;                                                     \
        }                                                                         \
    } while (0)

#define CHECK_MSG(cond, ...)                                                      \
    do {                                                                          \
        check_count++;                                                            \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
            check_failures++;                                                     \
        }                                                                         \
    } while (0)

#define CHECK_OK(dev, expr)                                                       \
    do {                                                                          \
        clg_status check_st_ = (expr);                                            \
        CHECK_MSG(check_st_ == CLG_OK, "%s: %s", clg_status_str(check_st_), clg_device_error(dev)); \
    } while (0)

/* Open the device the tests run on ($CLG_DEVICE or the default). No device is a
 * failure, never a skip: a green run where no kernel ran would prove nothing. */
/* The device's per-kernel profile table (CLG_PROFILE at open) as text, for a test that
 * asks which kernels ran; NULL (a failed CHECK) where it cannot be had. free() it. */
static inline char *check_profile_text(clg_device *dev)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    CHECK_MSG(mem != NULL, "open_memstream failed");
    if (!mem) return NULL;
    clg_status st = clg_device_profile_print(dev, mem);
    fclose(mem);
    CHECK_MSG(st == CLG_OK, "clg_device_profile_print: %s", clg_status_str(st));
    if (st != CLG_OK) free(text), text = NULL;
    return text;
}

static inline clg_device *check_open_device(void)
{
    clg_device *dev;
    if (clg_device_open(NULL, &dev) != CLG_OK) {
        fprintf(stderr, "FAIL: no usable OpenCL device: %s\n", clg_device_error(dev));
        clg_device_close(dev);
        exit(1);
    }
    return dev;
}

/* Tests that compare graph replays with eager steps bit for bit need both to run the
 * same kernels. A graph cannot record CLBlast's launches, so products that a device sends
 * to CLBlast (gemm = clblast, or tune when the tuner picks it) run in a graph on clgrad's
 * tiled kernels: such a device's bit-for-bit comparisons pin gemm = tiled (call before
 * the first product). test_graph checks the CLBlast case itself, to float32 rounding. */
static inline void check_same_gemm_in_graphs(clg_device *dev)
{
    char line[256], gemm[32] = "";
    FILE *f = tmpfile();
    if (f && clg_device_params_print(dev, f) == CLG_OK) {
        rewind(f);
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "gemm = %31s", gemm) == 1) break;
    }
    if (f) fclose(f);
    if ((!strcmp(gemm, "tune") || !strcmp(gemm, "clblast")) && clg_device_set_param(dev, "gemm", "tiled") != CLG_OK) {
        fprintf(stderr, "FAIL: gemm = tiled refused: %s\n", clg_device_error(dev));
        exit(1);
    }
}

static inline int check_report(const char *name)
{
    if (check_failures) {
        fprintf(stderr, "%s: %d of %d checks failed\n", name, check_failures, check_count);
        return 1;
    }
    printf("%s: %d checks passed\n", name, check_count);
    return 0;
}

#endif
